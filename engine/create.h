/*
 * create.h — creating a database (create.c).
 */
#ifndef AKVI_CREATE_H
#define AKVI_CREATE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/internal.h"

/* What a create made, to be removed if it fails. */
typedef struct akvi_created {
    bool dir, rocksdb, filters, tmp, catalog, identity;
} akvi_created;

/* Create the database of db in its directory (locked by the caller):
 * directories, RocksDB with the memtable pool's families (an interrupted
 * create's are reused, empty), the catalog in both slots, the active
 * memtable (*mems, *n_mem: allocated here), then DIR/IDENTITY. cfs: the
 * families RocksDB opened with. *m records what was made. Errors: those
 * of RocksDB's open and of the files written (AKV_EIO), AKV_ENOMEM, or a
 * create-step hook's. */
int akvi_create(akv_db *db, akvi_cf_set *cfs, akvi_mem ***mems, size_t *n_mem, akvi_created *m);
/* Remove what a failed create made (RocksDB closed first). */
void akvi_uncreate(akv_db *db, const akvi_created *m);
/* Make directory p (*made: it did not exist); one that exists is fine.
 * Errors: AKV_EIO naming the directory. */
int akvi_make_dir(const char *p, bool *made);

#endif
