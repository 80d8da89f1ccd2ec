/*
 * sscf.h — extras of the `sscf` (Seesaw Counting Filter, ada-SSCF) and
 * `cbf` (counting Bloom filter) kinds beyond the slot interface.
 *
 * sscf params.flags:
 *   AKV_SSCF_STATIC   plain SSCF: no adaptive bits, absorb() is AKV_ENOTSUP,
 *                     counters cost 5 bits instead of 6 (the paper's SSCF)
 *   bits 8..15        vulnerable ratio in percent: this share of
 *                     expected_keys of the costliest create-time negatives
 *                     is encoded. 0 = default: every given negative (up to
 *                     expected_keys) while fewer than 10% of the counters
 *                     are sealed, costliest first
 */
#ifndef AKV_SSCF_H
#define AKV_SSCF_H

#include <stdint.h>

#include "filters/filter.h"

enum { AKV_SSCF_STATIC = 1u << 0 };
#define AKV_SSCF_RATIO_FLAGS(pct) (((uint32_t)(pct)&0xffu) << 8)

/* Counters not back at zero: positive cells (pc) and HashModulator locks
 * (mc), not counting sticky-saturated ones, which are reported in
 * *saturated (pc at 15 plus mc at 7). After every inserted key was removed
 * pc and mc are both 0. AKV_EINVAL if f is not an sscf. */
int akv_sscf_nonzero(const akv_filter *f, uint64_t *pc_nonzero, uint64_t *mc_nonzero, uint64_t *saturated);

/* Non-zero counters of a cbf (AKV_EINVAL if f is not a cbf). */
int akv_cbf_nonzero(const akv_filter *f, uint64_t *nonzero);

#endif
