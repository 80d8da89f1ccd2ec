/*
 * slot.h — one filter slot (slot.c): the filter of one SST, its counters,
 * its lock and its file.
 */
#ifndef AKVI_SLOT_H
#define AKVI_SLOT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "engine/catalog.h"
#include "engine/threadslot.h"

typedef struct akvi_slot {
    _Atomic(akv_filter *) f; /* NULL: always probe; replaced when it grows */
    bool locked;             /* mutable non-concurrent kind: use `lock` */
    pthread_rwlock_t lock;   /* readers share, adapt/insert/remove exclusive */
    /* Queries, probes, false positives, adaptations: AKVI_SLOT_STRIPES
     * cache lines (NULL when out of memory: `one` then holds them). */
    akvi_slot_ctr_line *ctr;
    akvi_slot_ctr one;
    _Atomic uint64_t grows, refills;
    _Atomic bool dirty;         /* adapted since its file was written */
    _Atomic unsigned scan_bits; /* reverse-map prefix its kind's adapt last asked for; 0 unknown */
    pthread_mutex_t grow_mu;    /* serialises swaps; guards `retired` */
    akv_filter **retired;       /* outgrown filters a reader may still hold */
    size_t n_retired;
    _Atomic size_t grown_bytes; /* memory of the filters it grew into (adapt.c) */
    _Atomic bool refilling;     /* a thread is refilling its filter (adapt.c) */
    /* The SST its file is bound to: ssts[sst] of run (akvi_slot_bind). */
    const akvi_cat_run *run;
    size_t sst;
} akvi_slot;

void akvi_slot_init(akvi_slot *s, akv_filter *f);
/* Bind the slot to SST j of run (its file records that catalog entry). */
void akvi_slot_bind(akvi_slot *s, const akvi_cat_run *run, size_t j);
void akvi_slot_destroy(akvi_slot *s);
/* The one lock helper: shared access to the slot's filter for queries and
 * snapshots, exclusive for mutations. A no-op for kinds that need no lock
 * (static, or locking internally). */
void akvi_slot_lock(akvi_slot *s, bool exclusive);
void akvi_slot_unlock(akvi_slot *s);
/* This thread's stripe of the slot's counters. */
static inline akvi_slot_ctr *akvi_slot_ctr_of(akvi_slot *s)
{
    if (!s->ctr)
        return &s->one;
    int t = akvi_thread_slot();
    return &s->ctr[t < 0 ? 0 : (unsigned)t % AKVI_SLOT_STRIPES].c;
}
/* The slot's counters summed over its stripes: exact once the threads that
 * counted are done with it. */
typedef struct akvi_slot_counts {
    uint64_t queries, filtered, probes, fps, adaptations;
} akvi_slot_counts;
void akvi_slot_sum(const akvi_slot *s, akvi_slot_counts *out);
/* Query the slot's filter (counted in `c`, the caller's stripe). */
bool akvi_slot_may_contain(akvi_slot *s, akvi_slot_ctr *c, akv_hash h);
/* Adapt filter f (the slot's current one) to the false positive h under the
 * exclusive lock; rm must answer from memory (no I/O under the lock). */
int akvi_slot_adapt(akvi_slot *s, akv_filter *f, akv_hash h, akv_revmap *rm);
/* Replace the slot's filter `expected` with g (AKV_NOTFOUND, nothing done,
 * if it is no longer the current one); the old one is kept until the slot
 * is destroyed, since a reader may still hold it. */
int akvi_slot_swap(akvi_slot *s, const akv_filter *expected, akv_filter *g);
/* The filter's memory, and that of the outgrown filters it still holds. */
size_t akvi_slot_memory(akvi_slot *s);
/* Write the slot's filter to its bound file if it changed since the last
 * save: serialized under the shared lock, written after it is released
 * (akvi_file_replace: the caller syncs fdir). 1 if written, AKV_OK if the
 * slot was clean, or an error. */
int akvi_slot_save(akvi_slot *s, const char *fdir, uint64_t run, uint64_t sst);
/* Write the filter file of SST j of run r (akvi_file_replace: the caller
 * syncs fdir before a catalog names it), bound to that catalog entry
 * (docs/format.md §8). */
int akvi_slot_write_file(const char *fdir, const akvi_cat_run *r, size_t j, const akv_filter *f);
/* The filter of SST j of run r from its file: AKV_OK, or AKV_NOTFOUND /
 * AKV_ECORRUPT (damaged, another kind, or bound to another SST) /
 * AKV_ENOTSUP. *unbound: a version-1 file, which names no SST; the caller
 * must check it against the SST's keys before trusting it. */
int akvi_slot_read_file(const char *fdir, const akvi_cat_run *r, size_t j, bool *unbound, akv_filter **out);
/* The binding recorded in a version-2 filter file: a run with one SST
 * (free with akvi_cat_run_free). AKV_ENOTSUP for a version-1 file. */
int akvi_slot_describe(const char *path, akvi_cat_run *desc);
/* The filter in a filter file of either version, its binding unchecked
 * (tools and tests). */
int akvi_slot_file_filter(const char *path, akv_filter **out);

#endif
