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

#include <rocksdb/c.h>
#include <stdbool.h>

#include "adaptkv/filter.h"

/* ---- in-memory reverse map (tests, filterbench) ------------------------ */

typedef struct akvi_memrevmap akvi_memrevmap;

/* Create from n hashes (copied, sorted); exposes `akvi_memrevmap_revmap()`. */
int akvi_memrevmap_create(const akv_hash *keys, size_t n, akvi_memrevmap **out);
int akvi_memrevmap_insert(akvi_memrevmap *m, akv_hash h);
int akvi_memrevmap_remove(akvi_memrevmap *m, akv_hash h); /* AKV_NOTFOUND if absent */
akv_revmap *akvi_memrevmap_revmap(akvi_memrevmap *m);
void akvi_memrevmap_destroy(akvi_memrevmap *m);

/*
 * Declare that the map holds only part of its set: exactly the set's keys
 * whose top `nbits` bits of h.hi equal hi's (0 <= nbits <= 64), or none of
 * it (nbits = AKV_MEMREVMAP_NOTHING). A scan that part cannot answer returns
 * AKV_EBUSY, and akvi_memrevmap_missed() then tells what it asked for.
 */
#define AKV_MEMREVMAP_NOTHING 65u
int akvi_memrevmap_restrict(akvi_memrevmap *m, uint64_t hi, unsigned nbits);
bool akvi_memrevmap_missed(const akvi_memrevmap *m, uint64_t *hi, unsigned *nbits);
/* A partial map also holds every key of the set with hi's top nbits (the
 * caller has inserted the ones not covered before): at most
 * AKV_MEMREVMAP_MAX_PARTS prefixes (AKV_EFULL past that). */
#define AKV_MEMREVMAP_MAX_PARTS 8
int akvi_memrevmap_cover_more(akvi_memrevmap *m, uint64_t hi, unsigned nbits);
/* Does it hold every key of the set whose top nbits equal hi's? */
bool akvi_memrevmap_covers(const akvi_memrevmap *m, uint64_t hi, unsigned nbits);

/* ---- reverse maps on RocksDB (engine) ---------------------------------- */

/*
 * The keys of one SST read back from RocksDB. Both layouts store them under
 * BE64(h.hi) ‖ user key: the hash layout in the run's own family (the
 * "merged" reverse map: the data is the map), the ordered layout in the
 * run's rmap.<id> family (the "split" one). Scans take and report *slot*
 * hashes (util/shard.h): the shard prefix `prefix_bits` is shifted out of
 * them, and added back to seek. A stored key's full hash is recomputed
 * from its user key with `seed`. `in_sst` keeps exactly the SST's own keys
 * (a run holds many SSTs); the engine passes its one SST-range test.
 */
typedef bool (*akvi_rocksrevmap_in_sst)(void *arg, akv_hash h, const void *ukey, size_t klen);

/* The keys read through something other than a family (the engine's run
 * files): seek to the first key >= k, then next; each returns AKV_OK or a
 * negative error, after which the scan fails with it. */
typedef struct akvi_revmap_cursor {
    void *ctx;
    int (*seek)(void *ctx, const uint8_t *k, size_t len);
    int (*next)(void *ctx);
    bool (*valid)(void *ctx);
    const uint8_t *(*key)(void *ctx, size_t *len);
} akvi_revmap_cursor;

typedef struct akvi_rocksrevmap {
    akv_revmap rm;
    rocksdb_t *db;
    const rocksdb_readoptions_t *ro;
    rocksdb_column_family_handle_t *cf;
    const akvi_revmap_cursor *cursor; /* when set, read instead of cf */
    uint64_t seed;
    uint32_t prefix_bits; /* hash layout: the run's shard bits; 0 otherwise */
    uint64_t prefix;      /* the SST's shard */
    akvi_rocksrevmap_in_sst in_sst;
    void *in_sst_arg;
} akvi_rocksrevmap;

/* Fill *m (all fields above except rm) and return its akv_revmap. */
akv_revmap *akvi_rocksrevmap_init(akvi_rocksrevmap *m);

#endif
