/*
 * sscf.h — extras of the `sscf` (Seesaw Counting Filter, ada-SSCF) and
 * `cbf` (counting Bloom filter) kinds beyond the slot interface.
 *
 * sscf params.flags:
 *   AKV_SSCF_STATIC   plain SSCF: absorb() is AKV_ENOTSUP (with
 *                     AKV_SSCF_WIDE, counters cost 5 bits instead of 6)
 *   AKV_SSCF_WIDE     the paper's counter layout: a 4-bit count plus a
 *                     sealed bit (and an adaptive bit unless STATIC) per
 *                     counter. Default: one 4-bit state code per counter,
 *                     so 5/4 or 6/4 as many counters in the same memory
 *                     (sscf.c explains the codes)
 *   bits 8..15        vulnerable ratio in percent: this share of
 *                     expected_keys of the costliest create-time negatives
 *                     is encoded. 0 = default: every given negative (up to
 *                     expected_keys) while fewer than 10% of the counters
 *                     are sealed, costliest first
 */
#ifndef AKV_SSCF_H
#define AKV_SSCF_H

#include <stdint.h>

#include "adaptkv/filter.h"

enum { AKV_SSCF_STATIC = 1u << 0, AKV_SSCF_WIDE = 1u << 1 };
#define AKV_SSCF_RATIO_FLAGS(pct) (((uint32_t)(pct)&0xffu) << 8)

/* Counters not back at zero: positive cells (pc) and HashModulator locks
 * (mc), not counting sticky-saturated ones, which are reported in
 * *saturated (pc at 15 plus mc at 7). After every inserted key was removed
 * pc and mc are both 0. AKV_EINVAL if f is not an sscf. */
int akvi_sscf_nonzero(const akv_filter *f, uint64_t *pc_nonzero, uint64_t *mc_nonzero, uint64_t *saturated);

/* Non-zero counters of a cbf (AKV_EINVAL if f is not a cbf). */
int akvi_cbf_nonzero(const akv_filter *f, uint64_t *nonzero);

#endif
