/*
 * rbf.h — Rational Bloom filter helpers shared by the `rbf` and `vsbbf`
 * kinds (Walther, Mansour, Werner 2024; docs/filters.md, "Bloom family").
 *
 * A rational number of probes k = k_int + frac is stored as two integers:
 * k_int and act_thr = floor(frac * 2^64). A key takes the extra probe when an
 * independent 64-bit hash of it is below act_thr. Both numbers are computed
 * once, in fixed point, and written into the payload, so the activation
 * decision never depends on floating point at query time: a filter built on
 * one machine answers identically on another (a disagreement would be a
 * false negative).
 */
#ifndef AKV_RBF_H
#define AKV_RBF_H

#include <stdint.h>

/* ln 2 · 2^64, rounded down. */
#define AKV_LN2_Q64 0xB17217F7D1CF79ABULL

/* Probe counts above this are clamped (and made integer): beyond ~92 bits
 * per key the FPR is below 2^-64 anyway. */
#define AKV_RBF_MAX_K 64

/*
 * `rbf` params->flags: with AKV_RBF_MILLI_K set, params->num_hashes is k in
 * thousandths (1514 requests k = 1.514). Without it num_hashes is an integer
 * k, and 0 means the optimum k* = (m/n)·ln 2, kept rational.
 */
#define AKV_RBF_MILLI_K (1u << 0)

/* k = (m/n)·ln 2 in 64.64 fixed point, split into (k_int, act_thr). */
static inline void akvi_rbf_kstar(uint64_t m, uint64_t n, uint32_t *k_int, uint64_t *act_thr)
{
    unsigned __int128 K = ((unsigned __int128)m * AKV_LN2_Q64) / (n ? n : 1);
    if ((K >> 64) >= AKV_RBF_MAX_K) {
        *k_int = AKV_RBF_MAX_K;
        *act_thr = 0;
        return;
    }
    *k_int = (uint32_t)(K >> 64);
    *act_thr = (uint64_t)K;
}

/* k = milli/1000 exactly, split the same way. */
static inline void akvi_rbf_kmilli(uint32_t milli, uint32_t *k_int, uint64_t *act_thr)
{
    *k_int = milli / 1000;
    *act_thr = (uint64_t)(((unsigned __int128)(milli % 1000) << 64) / 1000);
}

/* The activation fraction act_thr / 2^64 as a double (for formulas only). */
static inline double akvi_rbf_frac(uint64_t act_thr)
{
    return (double)act_thr * 0x1p-64;
}

#endif
