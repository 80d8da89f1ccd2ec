/*
 * bg.h — background work (bg.c): one thread flushes, one compacts (neither
 * waits for the other), and their shared state under `mu`.
 */
#ifndef AKVI_BG_H
#define AKVI_BG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

/* Where the last compaction of a level ended (its round-robin). */
typedef struct compact_cursor {
    uint8_t *key;
    size_t len;
} compact_cursor;

/* Background work's part of akv_db. Both threads publish under the
 * version set's pubmu; neither holds `mu` while doing work. */
typedef struct akvi_bg {
    pthread_t flusher, compactor;
    bool started;
    compact_cursor cursor[AKV_MAX_LEVELS]; /* compaction thread only */
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    bool shutdown;
    uint64_t compact_req, compact_done;
    /* L0 merges (compact.c), under mu: the compaction thread is inside a
     * step, holding the L0 runs with ids below l0_held_below (0: none);
     * the flush thread is merging the newest L0 runs among themselves. */
    bool compacting, l0_merging;
    uint64_t l0_held_below;
    /* Compaction at rest's budget (compact.c): the credit saved at the last
     * close, and the raw bytes its pushes have rewritten since the open. */
    uint64_t rest_credit_saved;
    _Atomic uint64_t rest_spent;
    _Atomic int error;            /* sticky: first background failure (set under mu; read without it) */
    uint64_t save_req, save_done; /* under mu: akv_flush's requests that the flusher save adapted slots */
    pthread_mutex_t savemu;       /* one saver of adapted slots at a time */
    double saved_at;              /* under savemu: when adapted slots were last saved */
} akvi_bg;

int akvi_bg_start(akv_db *db);
void akvi_bg_stop(akv_db *db);
void akvi_bg_wake(akv_db *db);
/* Rewrite the files of slots adapted since they were written. */
/* Under wr.mu: akvi_rotate; while no family of the pool is free yet (one is
 * being emptied), wait as a stalled writer does, counted as a stall. */
int akvi_rotate_when_free(akv_db *db);
int akvi_save_adapted_slots(akv_db *db);

/* Background work's fields and locks; destroy after akvi_bg_stop. */
void akvi_bg_init(akvi_bg *bg);
void akvi_bg_destroy(akvi_bg *bg);

#endif
