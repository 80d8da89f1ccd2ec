/*
 * shbf.h — Shifting Bloom filter library APIs (Yang et al., PVLDB 2016, its
 * §4–§5; docs/filters.md, "Bloom family").
 *
 * The membership variant ShBF_M is the `shbf` slot kind (filters/shbf.c);
 * its one option, the number of shifts t, is requested through the flags
 * defined below. The two other variants answer other questions than "may contain", so
 * they are plain library objects, not slot kinds:
 *
 *  - ShBF_A (association): built from two sets S1, S2 of key hashes; says
 *    whether a key is in S1 only, in both, or in S2 only, from one bit array
 *    whose k probes each read one 64-bit window.
 *  - ShBF_X (multiplicity): built from (hash, count) pairs with counts in
 *    1..c; returns the largest candidate count, which is never below the
 *    true count. Optionally updatable without false negatives (exact table
 *    of counts plus counters, the paper's §5.3.2 path).
 *
 * Positions follow the project's convention: one 128-bit hash per key,
 * probe i at (h.hi + i·(h.lo|1)) reduced to [0, m), offsets from
 * independent mixes of the hash. Arrays are LSB-first with window padding
 * (bits.h), so every probe is one akvi_win64 load.
 */
#ifndef AKV_SHBF_H
#define AKV_SHBF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/hash.h"

/* ---- ShBF_M: the `shbf` slot kind -------------------------------------- */

/*
 * Shifts t (the paper's §3.6; docs/filters.md, "ShBF with t shifts"): each key sets its
 * k bits as k/(t+1) groups of one hashed position plus t shifted copies,
 * all in one 64-bit window, so a query reads at most k/(t+1) words. The t
 * offsets are distinct, one from each of t equal sub-ranges of [1, 56].
 * Asked for in akv_filter_params.flags, bits 8..11:
 *
 *     p.flags = AKV_SHBF_SHIFTS(3);
 *
 * t ∈ 1..7; 0 (no flag) means t = 1, the paper's ShBF_M with bit pairs.
 * Any other flag bit, or t > 7, is AKV_EINVAL. For t ≥ 2, num_hashes must be
 * a multiple of t+1 (else AKV_EINVAL); by default k is the multiple of t+1
 * minimising the paper's eq. 11 (at 10 bits/key: 8 for t = 1, 6 for t = 2,
 * 8 for t = 3). fpr_theory is eqs. 10–12 (eq. 1 for t = 1). t is stored in
 * the payload (payload version 2; version-1 payloads load as t = 1).
 */
#define AKV_SHBF_SHIFTS_SHIFT 8
#define AKV_SHBF_SHIFTS_MASK  (0xfu << AKV_SHBF_SHIFTS_SHIFT)
#define AKV_SHBF_SHIFTS(t)    (((uint32_t)(t)&0xfu) << AKV_SHBF_SHIFTS_SHIFT)

/* ---- ShBF_A: association ---------------------------------------------- */

typedef struct akvi_shbfa akvi_shbfa;

/* Answers of akvi_shbfa_query. 1–3 are clear answers; 4–6 partial; 7 none.
 * For a key in S1 ∪ S2 no answer is ever wrong. For any other key,
 * NEITHER is certain and every other answer is a false positive. */
typedef enum akvi_shbfa_answer {
    AKV_SHBFA_NEITHER = 0,     /* in neither set (certain) */
    AKV_SHBFA_S1_ONLY = 1,     /* S1 − S2 */
    AKV_SHBFA_BOTH = 2,        /* S1 ∩ S2 */
    AKV_SHBFA_S2_ONLY = 3,     /* S2 − S1 */
    AKV_SHBFA_S1_MAYBE_S2 = 4, /* in S1, unsure about S2 */
    AKV_SHBFA_S2_MAYBE_S1 = 5, /* in S2, unsure about S1 */
    AKV_SHBFA_EXACTLY_ONE = 6, /* in exactly one of them */
    AKV_SHBFA_UNKNOWN = 7,     /* in S1 ∪ S2, no more information */
} akvi_shbfa_answer;

typedef struct akvi_shbf_info {
    uint64_t m;    /* hashed range in bits (the array is m + span - 1 bits) */
    uint32_t k;    /* probes (windows) per key */
    uint32_t span; /* ShBF_A: w̄ = 57; ShBF_X: c, the maximum count */
    uint64_t n;    /* distinct keys stored */
    size_t bytes;  /* the bit array (what queries read) */
} akvi_shbf_info;

/*
 * Build from S1 (n1 hashes) and S2 (n2 hashes); duplicates are allowed.
 * k probes per key; m = bits_per_key · |S1 ∪ S2| (at least 64), or, when
 * bits_per_key is 0, the paper's optimum m = |S1 ∪ S2|·k/ln 2. k = 0 means
 * round(bits_per_key · ln 2). AKV_EINVAL if both are 0 or k > 64.
 */
int akvi_shbfa_build(const akv_hash *s1, size_t n1, const akv_hash *s2, size_t n2, uint32_t k,
                     double bits_per_key, akvi_shbfa **out);
/* `words` (optional) receives the number of 64-bit windows read. */
akvi_shbfa_answer akvi_shbfa_query(const akvi_shbfa *f, akv_hash h, unsigned *words);
void akvi_shbfa_info(const akvi_shbfa *f, akvi_shbf_info *out);
/* Serialized form: "AKSA", u16 version, u16 0, u64 payload length, payload
 * (u64 m, u32 k, u64 n, bits), u64 xxh64 of all preceding bytes. The buffer
 * is malloc'd (caller frees). Load returns AKV_ECORRUPT on any damage. */
int akvi_shbfa_serialize(const akvi_shbfa *f, uint8_t **buf, size_t *len);
int akvi_shbfa_deserialize(const uint8_t *buf, size_t len, akvi_shbfa **out);
void akvi_shbfa_destroy(akvi_shbfa *f);

/* ---- ShBF_X: multiplicity --------------------------------------------- */

typedef struct akvi_shbfx akvi_shbfx;

typedef struct akvi_shbfx_item {
    akv_hash h;
    uint32_t count; /* ≥ 1; repeated hashes add up */
} akvi_shbfx_item;

typedef struct akvi_shbfx_params {
    uint32_t k;          /* probes per key (required, 1..64) */
    double bits_per_key; /* m = bits_per_key · distinct keys; 0: the optimum n·k/ln 2 */
    uint32_t c;          /* maximum count, 1..57 (one window per probe); 0: 57 */
    bool updatable;      /* keep the exact count table and counters for insert/remove */
} akvi_shbfx_params;

/* AKV_EINVAL for a count of 0 or a total above c. */
int akvi_shbfx_build(const akvi_shbfx_item *items, size_t n, const akvi_shbfx_params *p, akvi_shbfx **out);
/* Largest candidate count in 0..c: 0 means certainly absent; otherwise never
 * below the true count (a larger value is a false positive). */
uint32_t akvi_shbfx_query(const akvi_shbfx *f, akv_hash h, unsigned *words);
/* One more / one fewer occurrence of h (updatable filters only, else
 * AKV_ENOTSUP). insert: AKV_EFULL when h is already at c (unchanged).
 * remove: AKV_NOTFOUND when h is not stored. Exact: no false negatives. */
int akvi_shbfx_insert(akvi_shbfx *f, akv_hash h);
int akvi_shbfx_remove(akvi_shbfx *f, akv_hash h);
/* Per-offset false-match probability f0 = (1 - e^(-kn/m))^k (the paper's eq. 17);
 * a non-member is reported 0 with probability (1 - f0)^c. */
double akvi_shbfx_f0(const akvi_shbfx *f);
void akvi_shbfx_info(const akvi_shbfx *f, akvi_shbf_info *out);
/* Serialized form as for ShBF_A with magic "AKSX" and payload (u64 m, u32 k,
 * u32 c, u64 n, bits). Only the bits are kept: a loaded filter answers
 * queries but is not updatable (insert/remove return AKV_ENOTSUP). */
int akvi_shbfx_serialize(const akvi_shbfx *f, uint8_t **buf, size_t *len);
int akvi_shbfx_deserialize(const uint8_t *buf, size_t len, akvi_shbfx **out);
void akvi_shbfx_destroy(akvi_shbfx *f);

#endif
