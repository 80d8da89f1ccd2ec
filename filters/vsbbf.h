/*
 * vsbbf.h — block plan of the Variably-Sized Block Bloom filter (Walther,
 * Mansour, Werner 2024; docs/filters.md, "Bloom family"), exposed so that
 * tests and tools can check it.
 *
 * A filter of m bits (any m) is cut into J = popcount(m) contiguous blocks,
 * one per set bit of m, largest first: block sizes are powers of two, so a
 * probe inside a block reduces with a mask, never a general modulo. Every
 * key goes into every block, with that block's own rational probe count
 * k_j = (m_j/n)·ln 2 (Σ k_j = (m/n)·ln 2).
 */
#ifndef AKV_VSBBF_H
#define AKV_VSBBF_H

#include <stdint.h>

#define AKV_VSBBF_MAX_BLOCKS 64

/*
 * `vsbbf` params->flags: AKV_VSBBF_LITERAL indexes every block with the same
 * (h1, h2), as the paper's Algorithm 2 literally does (its (i + m_j)·h2 term
 * vanishes modulo m_j). Small blocks then reuse the low bits of the large
 * blocks' probes and the FPR rises (docs/filters.md, "Findings"); kept only to
 * reproduce that measurement. The default decorrelates the blocks.
 */
#define AKV_VSBBF_LITERAL (1u << 0)

typedef struct akvi_vsbbf_block {
    uint64_t size;    /* m_j, a power of two */
    uint64_t offset;  /* first bit of the block: sum of the larger blocks */
    uint32_t k_int;   /* always-applied probes in this block */
    uint64_t act_thr; /* extra probe iff the block's activation hash < act_thr */
} akvi_vsbbf_block;

/* Fills out[0..J-1] for m ≥ 1 bits and n keys (n = 0 is taken as 1) and
 * returns J; returns 0 for m = 0. */
int akvi_vsbbf_plan(uint64_t m, uint64_t n, akvi_vsbbf_block out[AKV_VSBBF_MAX_BLOCKS]);

#endif
