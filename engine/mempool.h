/*
 * mempool.h — the pool of memtable families (mempool.c), its state and its
 * lock.
 */
#ifndef AKVI_MEMPOOL_H
#define AKVI_MEMPOOL_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

/* Immutable memtables a writer lets wait for their flush before it stops
 * (write.c); the pool holds them, the active one, and two more while
 * flushed ones are emptied. */
#define AKVI_MEM_WAITING_MAX 3
#define AKVI_POOL_SIZE       (AKVI_MEM_WAITING_MAX + 3)
/* Readers holding flushed memtables grow the pool up to this. */
#define AKVI_POOL_MAX 64
/* akvi_pool_take: none free, one being emptied; wait as for a stall. */
#define AKVI_POOL_WAIT 1
enum {
    AKVI_POOL_FREE,     /* empty, takes the next rotation */
    AKVI_POOL_BUSY,     /* holds a memtable (live, or flushed and still pinned) */
    AKVI_POOL_EMPTYING, /* its flushed memtable is gone: being emptied */
    AKVI_POOL_STALE,    /* open: holds a flushed memtable's data, emptied in phase 2 */
    AKVI_POOL_BROKEN    /* emptying failed, or the database stopped: emptied at reopen */
};
typedef struct akvi_pool {
    pthread_mutex_t mu; /* state and handles; nothing is locked or written under it */
    size_t n;           /* families pool.1 .. pool.<n> (a slot may be NULL: missing) */
    rocksdb_column_family_handle_t *cf[AKVI_POOL_MAX];
    uint8_t state[AKVI_POOL_MAX];
} akvi_pool;

/* "pool.<i+1>": the name of family i. */
void akvi_pool_name(size_t i, char *buf, size_t cap);
/* The memtable generation family cf holds: its record under the empty key
 * (8 bytes little-endian); 0 when it has none. */
int akvi_pool_marker(akv_db *db, rocksdb_column_family_handle_t *cf, uint64_t *gen);
void akvi_pool_init(akv_db *db);
/* Open: family i's handle (owned by the pool from now on) and state. */
void akvi_pool_set(akv_db *db, size_t i, rocksdb_column_family_handle_t *cf, int state);
/* Create the families of the pool that do not exist (create, open). */
int akvi_pool_fill(akv_db *db);
/* Under wr.mu: a free family for memtable `gen`, its record written; a new
 * family when none is free or being emptied (readers pin the rest);
 * AKVI_POOL_WAIT when one is being emptied. */
int akvi_pool_take(akv_db *db, uint64_t gen, size_t *idx);
/* Open: a copy of an older format's memtable family src (generation gen)
 * in a free family of the pool, written in one synced batch. */
int akvi_pool_adopt(akv_db *db, rocksdb_column_family_handle_t *src, uint64_t gen, size_t *idx);
/* A taken family that no memtable used after all. */
void akvi_pool_put_back(akv_db *db, size_t i);
/* Its flushed memtable's last reference is gone: it is to be emptied. */
void akvi_pool_retire(akv_db *db, size_t i);
/* Empty family i and make it free (a background thread, or open). */
int akvi_pool_empty(akv_db *db, size_t i);
/* Open, phase 2: empty the families that hold flushed memtables' data. */
int akvi_pool_empty_stale(akv_db *db);
/* Close: the handles, before RocksDB closes (the lock stays, for reuse). */
void akvi_pool_free(akv_db *db);

#endif
