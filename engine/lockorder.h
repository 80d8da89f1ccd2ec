/*
 * lockorder.h — the engine's locks, their one order, and the check of it.
 *
 * Every lock of the engine has a rank, and a thread takes locks only in
 * rising rank (docs/design.md, "Concurrency", gives the order and why). In
 * a build with AKVI_LOCK_ORDER defined (`make asan`, `make tsan`, and
 * `make DEBUG=1`) each thread keeps the ranks it holds, and taking a lock
 * whose rank is not above every held one prints both locks and aborts:
 * an order that could deadlock fails the first test that takes it, not
 * the rare run where two threads meet. A try-lock never waits, so it may
 * break the order; it is recorded, not checked. Many locks share a rank
 * where there is one per slot or per shard; a thread holds at most one of
 * a rank, except the miss log's shards, a class it takes several of at
 * once in a fixed order of its own (misslog.c takes them by index).
 *
 * Without AKVI_LOCK_ORDER these are the plain pthread calls.
 *
 * The filters' own locks (a dynamic filter's writer lock, a list's lock)
 * sit below the engine in the stack and take nothing inside, so they are
 * leaves after every rank here and are not tracked.
 */
#ifndef AKVI_LOCKORDER_H
#define AKVI_LOCKORDER_H

#include <pthread.h>
#include <stdbool.h>

/* In the order they are taken: a lock may be taken while holding only
 * locks of lower rank. */
typedef enum akvi_rank {
    AKVI_RANK_SAVE = 1,  /* bg.savemu: one saver of adapted slots */
    AKVI_RANK_PUB,       /* vs.pubmu: publishing a flush or compaction */
    AKVI_RANK_CAT,       /* cat.mu: catalog and miss-log encoding and writes */
    AKVI_RANK_WRITE,     /* wr.mu: writers, rotation, the guard's inserts */
    AKVI_RANK_BG,        /* bg.mu: background work's state */
    AKVI_RANK_GRAVE,     /* grave.mu: the grave's lists */
    AKVI_RANK_POOL,      /* pool.mu: the memtable pool's states */
    AKVI_RANK_FRONT,     /* fronts.mu: the current L0 front */
    AKVI_RANK_GUARD,     /* guard.lock: the memtable guard */
    AKVI_RANK_VERSION,   /* vs.mu: the current version pointer */
    AKVI_RANK_RETIRED,   /* vs.retmu: the retired versions' list */
    AKVI_RANK_SLOT_GROW, /* a slot's grow_mu (one at a time) */
    AKVI_RANK_SLOT,      /* a slot's filter lock (one at a time) */
    AKVI_RANK_MISSLOG,   /* a miss-log shard's lock (class) */
    AKVI_RANK_COUNT
} akvi_rank;

/* The check itself, in every build (test_lockorder.c calls it directly):
 * whether this thread may wait for a lock of rank r now; false after
 * printing the lock wanted and the one held above it. */
bool akvi_rank_ok(akvi_rank r);
/* After taking, and before releasing, a lock of rank r. */
void akvi_rank_taken(akvi_rank r);
void akvi_rank_dropped(akvi_rank r);

/* Aborts: an order was broken. */
void akvi_rank_violated(void) __attribute__((noreturn));

#ifdef AKVI_LOCK_ORDER
static inline void akvi_rank_check(akvi_rank r)
{
    if (!akvi_rank_ok(r))
        akvi_rank_violated();
}
static inline void akvi_rank_take(akvi_rank r)
{
    akvi_rank_taken(r);
}
static inline void akvi_rank_drop(akvi_rank r)
{
    akvi_rank_dropped(r);
}
#else
static inline void akvi_rank_check(akvi_rank r)
{
    (void)r;
}
static inline void akvi_rank_take(akvi_rank r)
{
    (void)r;
}
static inline void akvi_rank_drop(akvi_rank r)
{
    (void)r;
}
#endif

static inline void akvi_mutex_lock(pthread_mutex_t *m, akvi_rank r)
{
    akvi_rank_check(r);
    pthread_mutex_lock(m);
    akvi_rank_take(r);
}

/* true: taken. */
static inline bool akvi_mutex_trylock(pthread_mutex_t *m, akvi_rank r)
{
    if (pthread_mutex_trylock(m) != 0)
        return false;
    akvi_rank_take(r);
    return true;
}

static inline void akvi_mutex_unlock(pthread_mutex_t *m, akvi_rank r)
{
    akvi_rank_drop(r);
    pthread_mutex_unlock(m);
}

static inline void akvi_rw_rdlock(pthread_rwlock_t *l, akvi_rank r)
{
    akvi_rank_check(r);
    pthread_rwlock_rdlock(l);
    akvi_rank_take(r);
}

static inline void akvi_rw_wrlock(pthread_rwlock_t *l, akvi_rank r)
{
    akvi_rank_check(r);
    pthread_rwlock_wrlock(l);
    akvi_rank_take(r);
}

static inline void akvi_rw_unlock(pthread_rwlock_t *l, akvi_rank r)
{
    akvi_rank_drop(r);
    pthread_rwlock_unlock(l);
}

#endif
