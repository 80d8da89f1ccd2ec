/*
 * revmap.h — reverse maps: the implementations of akv_revmap (the interface
 * and its contract are in adaptkv/filter.h, beside the adapt operation that
 * uses them).
 *
 *   - in-memory (memrevmap.c): a sorted array of hashes; pre-adaptation at
 *     build, tests, filterbench, and the engine's prefetched minirun owners;
 *   - on RocksDB (rocksrevmap.c): merged (hash layout: the run's own column
 *     family, keys BE64(h.hi) ‖ user key) and split (ordered layout: the
 *     run's rmap.<id> family, same keys), restricted to one SST's keys.
 */
#ifndef AKV_REVMAP_H
#define AKV_REVMAP_H

#include <stddef.h>
#include <stdint.h>

#include "adaptkv/filter.h"

/* ---- in-memory reverse map (tests, filterbench) ------------------------ */

typedef struct akv_memrevmap akv_memrevmap;

/* Create from n hashes (copied, sorted); exposes `akv_memrevmap_revmap()`. */
int akv_memrevmap_create(const akv_hash *keys, size_t n, akv_memrevmap **out);
int akv_memrevmap_insert(akv_memrevmap *m, akv_hash h);
int akv_memrevmap_remove(akv_memrevmap *m, akv_hash h); /* AKV_NOTFOUND if absent */
akv_revmap *akv_memrevmap_revmap(akv_memrevmap *m);
void akv_memrevmap_destroy(akv_memrevmap *m);

#endif
