/*
 * hash_expressor.h — HABF's hash family and HashExpressor (the HABF paper
 * and its authors' code; docs/filters.md, "How they are built").
 *
 * Hash family. Function i (i = 1..|H|) of a key is a 64-bit value derived
 * from the key's 128-bit hash; index 0 is the HashExpressor entry function
 * f. The Bloom bit of function i is the value reduced to [0, m) by its high
 * bits; its HashExpressor cell is the value rotated by 32 and reduced to
 * [0, ω), so a key's bit and cell for one function are not correlated (two
 * keys sharing a bit do not thereby share a cell). HABF mixes the hash for
 * every index (akv_hash_nth); f-HABF uses double hashing hi + i·lo, as the
 * paper's fast variant does. A per-filter salt is folded into hi.
 *
 * HashExpressor. ω cells of α bits: value = (hash index << 1) | endbit,
 * 0 = empty. A key's stored function sequence (s_1..s_k) occupies the chain
 * f(e) → h_{s_1}(e) → … → h_{s_{k−1}}(e) (cells mod ω), cell j holding s_j,
 * the last cell's endbit set. Cells are written only from empty or with the
 * value they already hold, and endbits only go 0 → 1, so every stored chain
 * stays readable (no false negatives).
 */
#ifndef AKV_HASH_EXPRESSOR_H
#define AKV_HASH_EXPRESSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "util/bits.h"
#include "adaptkv/hash.h"

#define AKV_HE_MAX_K 8 /* functions per key the expressor can chain */

typedef struct akvi_hfam {
    uint64_t seed; /* per-filter salt */
    bool fast;     /* f-HABF double hashing instead of per-index mixing */
} akvi_hfam;

/* 64-bit value of function i for key h (i = 0 is the expressor entry f). */
static inline uint64_t akvi_hfam_value(akvi_hfam fam, akv_hash h, unsigned i)
{
    uint64_t a = h.hi ^ fam.seed;
    if (fam.fast)
        return a + (uint64_t)i * (h.lo | 1);
    return akv_hash_nth((akv_hash){a, h.lo}, i);
}

static inline uint64_t akvi_hfam_bit(akvi_hfam fam, akv_hash h, unsigned i, uint64_t m)
{
    return akv_reduce(akvi_hfam_value(fam, h, i), m);
}

static inline uint64_t akvi_hfam_cell(akvi_hfam fam, akv_hash h, unsigned i, uint64_t omega)
{
    uint64_t v = akvi_hfam_value(fam, h, i);
    return akv_reduce((v << 32) | (v >> 32), omega);
}

typedef struct akvi_he {
    uint64_t omega; /* cells; 0 = no expressor */
    unsigned alpha; /* bits per cell: 1 endbit + (α−1) index bits */
    uint8_t *bits;  /* akvi_bits_bytes(ω·α) bytes */
} akvi_he;

/* Allocate an empty expressor (omega may be 0). AKV_OK or AKV_ENOMEM. */
int akvi_he_init(akvi_he *he, uint64_t omega, unsigned alpha);
void akvi_he_free(akvi_he *he);
static inline uint64_t akvi_he_bytes(const akvi_he *he)
{
    return (he->omega * he->alpha + 7) / 8;
}

static inline unsigned akvi_he_get(const akvi_he *he, uint64_t c)
{
    return (unsigned)(akvi_win64(he->bits, c * he->alpha) & ((1u << he->alpha) - 1));
}

/* Find an order s of the k functions in phi whose chain fits the current
 * cells (HE_FIND_SEQ, exhaustive over orders by backtracking). Fails when
 * the k+1 candidate cells are not distinct (the chain could overwrite
 * itself). Returns true and fills seq[0..k) on success. */
bool akvi_he_find_seq(const akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *phi, unsigned k,
                      uint8_t *seq);

/* Cells of the chain of seq that are already written (and so need no new
 * cell): the paper's overlap tie-break. */
unsigned akvi_he_overlap(const akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *seq, unsigned k);

/* Store a sequence found by akvi_he_find_seq (HE_WRITE). */
void akvi_he_write(akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *seq, unsigned k);

/* Walk the chain of h (HE_QUERY): true and out[0..k) when a complete chain
 * ending on an endbit is found, false when the key has no stored chain.
 * Stored chains are k distinct functions, so a walk that repeats one is an
 * expressor false positive and is rejected here (fewer round-2 probes and
 * fewer false positives; never a false negative). */
static inline bool akvi_he_query(const akvi_he *he, akvi_hfam fam, akv_hash h, unsigned k, uint8_t *out)
{
    uint64_t c = akvi_hfam_cell(fam, h, 0, he->omega);
    for (unsigned i = 0; i < k; i++) {
        unsigned v = akvi_he_get(he, c);
        if (v < 2 || (i + 1 == k && !(v & 1)))
            return false;
        out[i] = (uint8_t)(v >> 1);
        for (unsigned j = 0; j < i; j++)
            if (out[j] == out[i])
                return false; /* a stored chain never repeats a function */
        c = akvi_hfam_cell(fam, h, out[i], he->omega);
    }
    return true;
}

#endif
