/*
 * write.h — the write path (write.c): writers, memtable rotation and
 * stalls, and their part of akv_db under `mu`.
 */
#ifndef AKVI_WRITE_H
#define AKVI_WRITE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

/* The write path's part of akv_db: `mu` serialises writers, rotation and
 * the guard's inserts and rebuilds; stalled writers wait on stall_cv.
 * A mutex lets the writer that just let go take it again before a waiting
 * one wakes, which kept a writer waiting 28-77 ms while the other wrote on
 * (10M x 100 B load, docs/benchmarks.md); a writer that has waited
 * WRITER_PATIENCE_US counts itself in `starving`, and the others let it
 * have `mu` first (writer_lock, write.c). */
typedef struct akvi_writer {
    pthread_mutex_t mu;
    pthread_cond_t stall_cv;
    uint64_t next_mem_gen; /* under mu */
    _Atomic unsigned starving;
} akvi_writer;

typedef struct akvi_op {
    uint8_t tag; /* AKVI_TAG_PUT or AKVI_TAG_DEL */
    const uint8_t *key, *val;
    size_t klen, vlen;
} akvi_op;

/* Apply ops atomically to the active memtable (one RocksDB write batch). */
int akvi_write_ops(akv_db *db, const akvi_op *ops, size_t n, bool sync);

void akvi_writer_init(akvi_writer *wr);
void akvi_writer_destroy(akvi_writer *wr);

#endif
