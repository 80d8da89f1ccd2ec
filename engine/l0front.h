/*
 * l0front.h — the L0 front (l0front.c): one filter in front of the L0 runs
 * flushed since the last compaction of L0, and its part of akv_db.
 */
#ifndef AKVI_L0FRONT_H
#define AKVI_L0FRONT_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/hash.h"

typedef struct akvi_front akvi_front;
typedef struct akvi_run akvi_run;
typedef struct akvi_mem akvi_mem;
typedef struct akvi_version akvi_version;

/* The fronts' part of akv_db: the one new flushes go into, under mu. */
typedef struct akvi_fronts {
    pthread_mutex_t mu;
    akvi_front *cur;
    bool rotate; /* a compaction picked L0 runs: the next flush starts a new one */
} akvi_fronts;

void akvi_fronts_init(akv_db *db);
void akvi_fronts_free(akv_db *db);
/* A compaction picked L0 runs: the next flush starts a new front. */
void akvi_fronts_rotate(akv_db *db);
/* The bits per key of capacity a front is built with. */
double akvi_front_bits(const akv_db *db);
/* The false-positive rate of a full front built at these bits per key. */
double akvi_front_rate(double bits_per_key);
/* A flush's runs, before they are published: m's hashes into the current
 * front (a new one when it is full, or mostly stale in `now`, the current
 * version), and the runs pointed to it. Nothing when m's hashes are not
 * all known. */
void akvi_front_cover_flush(akv_db *db, const akvi_version *now, const akvi_mem *m, akvi_run **runs,
                            size_t n);
/* An L0 merge's outputs, before they are published: its inputs' front, if
 * they all point to the same one. */
void akvi_front_cover_merge(akvi_run *const *in, size_t n_in, akvi_run **out, size_t n_out);
/* What fronts query for h: computed once per get, for every front. */
uint64_t akvi_front_key(akv_hash h);
/* False only when no key of a run pointing to f has this front key. */
bool akvi_front_may_contain(const akvi_front *f, uint64_t x);
void akvi_front_ref(akvi_front *f);
void akvi_front_unref(akvi_front *f);
size_t akvi_front_memory(const akvi_front *f);
/* The fronts v's L0 runs point to, each counted once (bytes), leaving out
 * the runs in except[0..n_except) (a compaction's inputs). */
size_t akvi_fronts_memory(const akvi_version *v, const akvi_run *const *except, size_t n_except);

#endif
