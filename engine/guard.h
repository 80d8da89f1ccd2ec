/*
 * guard.h — the memtable guard (guard.c): one dynamic filter over the keys
 * of all live memtables, and its part of akv_db.
 */
#ifndef AKVI_GUARD_H
#define AKVI_GUARD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "engine/slot.h"

typedef struct akvi_mem akvi_mem;

/* The guard's part of akv_db. A get pinned by hazard queries a concurrent
 * guard without `lock`: `gen` is odd while a rebuild swaps the filter and
 * clears `broken`, and a replaced guard is freed only once the pins have
 * passed (`retired`, under the write path's lock). */
typedef struct akvi_guard {
    pthread_rwlock_t lock;
    _Atomic(akv_filter *) f; /* NULL: memtables always probed */
    _Atomic uint64_t gen;
    struct akvi_guard_retired *retired;
    akvi_slot stats;
    _Atomic bool broken;
    uint64_t cap;              /* keys the current guard was sized for (under the write lock) */
    double avg, avg_since;     /* its memory averaged over time, as of then (lock) */
    uint64_t keys;             /* hashes the guard holds for memtables (under the write lock) */
    _Atomic uint64_t mem_keys; /* hashes of the last memtable flushed (written under the write lock) */
    akvi_mem *draining;        /* flushed, leaving the version, hashes still in the guard (write lock) */
} akvi_guard;

/* Writer side, under wr.mu: insert into the guard and remember the hash; a
 * guard past its capacity is rebuilt at twice the keys. */
int akvi_guard_insert(akv_db *db, akvi_mem *m, akv_hash h);
/* Open, re-reading memtable m (in no version yet): the same, but a guard
 * past its capacity is marked broken; akvi_guard_refit follows. */
void akvi_guard_recover_insert(akv_db *db, akvi_mem *m, akv_hash h);
/* Open, once the memtables are in the first version: rebuild a guard that
 * is broken or past its capacity. */
void akvi_guard_refit(akv_db *db);
/* Reader side: false only when the key is certainly not in memtable m.
 * `pinned`: the caller holds a hazard pin (akvi_pin), so a concurrent
 * kind is queried without guard.lock. */
bool akvi_guard_may_contain(akv_db *db, const akvi_mem *m, akv_hash h, bool pinned);
/* A lookup the guard let through found nothing in any memtable: let an
 * absorbing kind (ada-SSCF) learn the negative. */
void akvi_guard_absorb(akv_db *db, akv_hash h);
/* Before m leaves the version (its run is being installed): guard rebuilds
 * keep m's hashes until akvi_guard_remove_mem takes them out. NULL: none. */
void akvi_guard_draining(akv_db *db, akvi_mem *m);
/* After m's run is installed: take m's keys out of the guard. */
void akvi_guard_remove_mem(akv_db *db, akvi_mem *m);
int akvi_guard_init(akv_db *db);
/* Close: the guard and every replaced one (no reader is left). */
void akvi_guard_free(akv_db *db);
size_t akvi_guard_memory(akv_db *db);
/* The smallest guard: for this many keys (15 KiB at 10 bits/key). */
#define AKVI_GUARD_MIN 4096
/* The guard's memory now, averaged over the last minute or so, what a
 * guard of its minimum size (4096 keys) takes, and what it takes at the
 * size it keeps while a memtable fills (5/4 of the keys the last flushed
 * one held); bytes, all 0 without a guard. */
typedef struct akvi_guard_mem {
    size_t now;
    double avg, floor, planned;
} akvi_guard_mem;
void akvi_guard_memory_parts(akv_db *db, akvi_guard_mem *out);
/* Test knob: the period that average is taken over (60 s). */
extern _Atomic double akvi_guard_avg_seconds;

#endif
