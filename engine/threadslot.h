/*
 * threadslot.h — a small index per thread (threadslot.c), and the cache-line
 * layouts that let readers write only lines of their own: a slot's
 * counter stripes and a version pin (docs/design.md, "Concurrency").
 */
#ifndef AKVI_THREADSLOT_H
#define AKVI_THREADSLOT_H

#include <stdatomic.h>
#include <stdint.h>

/* Readers write only cache lines of their own: each thread gets an index
 * below AKVI_THREAD_SLOTS, unique among live threads, or -1 once all are
 * taken (it then shares a stripe, with atomic additions, and pins versions
 * by refcount). */
#define AKVI_THREAD_SLOTS 64
#define AKVI_LINE         64 /* cache line bytes: the stride of striped counters */
int akvi_thread_slot(void);

/* A slot's counters, striped by thread slot over AKVI_SLOT_STRIPES lines. */
typedef struct akvi_slot_ctr {
    _Atomic uint64_t queries, filtered, probes, fps, adaptations;
} akvi_slot_ctr;
typedef union akvi_slot_ctr_line {
    akvi_slot_ctr c;
    char pad[AKVI_LINE];
} akvi_slot_ctr_line;
#define AKVI_SLOT_STRIPES 8

/* A version pin of one thread slot (version.c), on its own line: the
 * version it names (NULL: none) and how many pins it has ended. */
struct akvi_version;
typedef union akvi_pin_line {
    struct {
        _Atomic(struct akvi_version *) v;
        _Atomic uint64_t ended;
    } p;
    char pad[AKVI_LINE];
} akvi_pin_line;

static inline void akvi_ctr_add(_Atomic uint64_t *c, uint64_t n)
{
    if (n)
        atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

#endif
