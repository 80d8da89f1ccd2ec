/*
 * revmap.h — the reverse map an adaptive filter uses to fix a false positive.
 *
 * When a query hash y matches a stored fingerprint, the filter needs the full
 * hash of the stored key(s) that own that fingerprint, to extend them with
 * bits where they differ from y. A fingerprint's leading part (quotient and
 * remainder) is a prefix of h.hi below the filter's shard prefix, so "the
 * keys of this minirun" are exactly "the keys of this filter's set whose
 * h.hi starts with these nbits bits".
 *
 * Implementations:
 *   - in-memory (revmap/memrevmap.c): a sorted array of hashes; tests and filterbench;
 *   - merged (engine, hash layout): a seek in the run's column family, whose
 *     keys are BE64(h.hi) ‖ user key, bounded by the SST's range;
 *   - split (engine, ordered layout): a seek in the run's rmap.<id> family.
 *
 * Contract:
 *   - `scan` calls `fn(arg, h)` for every key of the filter's set (and only
 *     those — a key outside the set must never be reported, or the filter
 *     would adapt to a key it does not hold and later answer "no" for a key it
 *     does) whose top `nbits` bits of h.hi equal those of `hi`, in ascending
 *     (hi, lo) order. 1 ≤ nbits ≤ 64.
 *   - If fn returns non-zero, the scan stops and returns that value.
 *   - Returns AKV_OK, or a negative AKV_E* code on I/O failure; the filter
 *     then leaves itself unchanged (adaptation is best effort, never unsafe).
 */
#ifndef AKV_REVMAP_H
#define AKV_REVMAP_H

#include <stddef.h>
#include <stdint.h>

#include "filters/filter.h"

typedef int (*akv_revmap_fn)(void *arg, akv_hash h);

struct akv_revmap {
    int (*scan)(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg);
    void *ctx;
};

/* ---- in-memory reverse map (tests, filterbench) ------------------------ */

typedef struct akv_memrevmap akv_memrevmap;

/* Create from n hashes (copied, sorted); exposes `akv_memrevmap_revmap()`. */
int akv_memrevmap_create(const akv_hash *keys, size_t n, akv_memrevmap **out);
int akv_memrevmap_insert(akv_memrevmap *m, akv_hash h);
int akv_memrevmap_remove(akv_memrevmap *m, akv_hash h); /* AKV_NOTFOUND if absent */
akv_revmap *akv_memrevmap_revmap(akv_memrevmap *m);
void akv_memrevmap_destroy(akv_memrevmap *m);

#endif
