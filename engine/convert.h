/*
 * convert.h — an older format's run, kept in column families, named as a
 * run of files (convert.c; docs/design.md, "Run files"). Open converts
 * such runs at their first open, repair before it reads any run.
 */
#ifndef AKV_ENGINE_CONVERT_H
#define AKV_ENGINE_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/internal.h"
#include "engine/rocks.h"

/* Names in DIR/runs the SST files RocksDB records (l[0..nl), from
 * akvi_live_ssts) for run `id`'s family run.<id> and, in the ordered
 * layout, its reverse map's rmap.<id>: each file as the SST of `desc`
 * that starts at its smallest key, the reverse map's one file as
 * AKVI_RMAP_SST (akvi_run_link_file: a name that is the file already is
 * left as it is).
 *
 * strict (open): the family must hold exactly desc's SSTs, in order, and
 * the reverse map one file, and every file must be there; else
 * AKV_ECORRUPT saying how they differ, and the run stays in its families.
 * Not strict (repair): a file no SST of desc starts at is named by a fresh SST id
 * above desc's, a file RocksDB records but that is gone is skipped (its
 * entries are lost already), and a reverse map of several files is not
 * named (the run is then rewritten, its reverse map with it).
 *
 * Errors: AKV_ECORRUPT (strict), AKV_EIO naming the file that could not be
 * linked, AKV_ENOMEM. */
int akvi_convert_run(akv_db *db, const akvi_live_sst *l, size_t nl, uint64_t id, const akvi_cat_run *desc,
                     bool strict);

#endif
