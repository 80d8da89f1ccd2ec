/*
 * salvage.h — reading what still reads of a damaged run (salvage.c).
 */
#ifndef AKVI_SALVAGE_H
#define AKVI_SALVAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "engine/runstore.h"

/* Takes each entry read; a code other than AKV_OK stops the reading. */
typedef int (*akvi_emit_fn)(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl);

/* Every readable entry of run file `file` in [lo, hi], in key order, to emit; *count of them. After an
 * unreadable block (the iterator stops short of hi), the first readable entry beyond it is found by 64 probes
 * across the rest of the range, then bisection back towards the gap. *whole: the entries came without a gap
 * up to hi itself. Errors: AKV_ENOMEM, or what emit returned. */
int akvi_salvage_range(akvi_rs_sst *file, const uint8_t *lo, size_t lo_len, const uint8_t *hi, size_t hi_len,
                       akvi_emit_fn emit, void *arg, uint64_t *count, bool *whole);

#endif
