/*
 * blocked.c — cache-line blocked Bloom filter (the layout of RocksDB's
 * FastLocalBloom / Putze et al.): the filter is an array of 512-bit blocks,
 * one 64-byte cache line each. A key picks one block from mix64(h.hi)
 * (multiply-shift reduction, so any number of blocks works) and sets k bits
 * inside it, at
 * positions taken as consecutive 9-bit fields of h.lo (re-mixed after every
 * seven fields). A query therefore costs one cache miss instead of up to k.
 *
 * The price is a higher FPR than a plain Bloom filter of the same size,
 * because block loads vary (Poisson). fpr_theory is the exact mixture over
 * block loads, and the default k is the one minimising that mixture.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "blocked.h"
#include "util/bits.h"
#include "util/codec.h"

#define BLOCK_BITS  512u
#define BLOCK_BYTES 64u
#define MAX_K       64u

typedef struct blocked {
    akv_filter base;
    uint64_t nb; /* blocks */
    uint32_t k;  /* probes per key, all inside one block */
    bool simd;   /* AVX2 query path (same answers as the scalar one) */
    bool mixed;  /* block from mix64(h.hi); false: from h.hi (payload version 1) */
    bool (*query)(const struct blocked *, akv_hash);
    uint8_t *bits;
} blocked;

extern const akv_filter_kind akvi_kind_blocked;

/*
 * Probe positions (0..511 inside the block): consecutive 9-bit fields of a
 * 64-bit word, seven per word (63 bits); the first word is h.lo and each
 * further word is a fresh mix of the previous one. Given a uniform hash the
 * positions are independent and uniform, which is what fpr_theory assumes.
 */
#define FIELDS_PER_WORD 7u
#define NEXT_WORD_SALT  0x2545f4914f6cdd1dULL

static inline uint64_t next_word(uint64_t w)
{
    return akv_mix64(w ^ NEXT_WORD_SALT);
}

/*
 * The block: from the whole of h.hi, re-mixed. The top bits of h.hi are the
 * data's order in the hash layout, and a slot of a run that covers part of
 * the hash range (a compaction of one run into the next level) sees keys
 * that share more top bits than its shard prefix: reduced from h.hi
 * directly they filled a fraction of the blocks, which measured 13-58 %
 * false positives at 1M records. Version-1 payloads were built that way
 * and are still queried that way.
 */
static inline uint64_t block_index(const blocked *b, akv_hash h)
{
    return akv_reduce(b->mixed ? akv_mix64(h.hi) : h.hi, b->nb);
}

static inline const uint8_t *block_of(const blocked *b, akv_hash h)
{
    return b->bits + block_index(b, h) * BLOCK_BYTES;
}

/* Portable query: stops at the first zero bit (a mispredicted exit costs
 * less than testing every probe when each test is a dependent load). */
static bool query_scalar(const blocked *b, akv_hash h)
{
    const uint8_t *blk = block_of(b, h);
    uint64_t w = h.lo;
    for (uint32_t left = b->k;; w = next_word(w)) {
        uint32_t c = left < FIELDS_PER_WORD ? left : FIELDS_PER_WORD;
        uint64_t x = w;
        for (uint32_t i = 0; i < c; i++, x >>= 9)
            if (!akvi_bit_get(blk, x & (BLOCK_BITS - 1)))
                return false;
        left -= c;
        if (!left)
            return true;
    }
}

/* ln Γ(x) without touching the C library's global signgam, which lgamma()
 * writes: filters are built on several threads at once. */
static double log_gamma(double x)
{
    int sign;
    return lgamma_r(x, &sign);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define HAVE_AVX2_PATH 1

/*
 * AVX2 query, branch-free: the cache line is loaded as sixteen 32-bit words
 * in two registers; the seven 9-bit fields of a word go to seven lanes
 * (field f → lane order 0,4,1,5,2,6,3 after the blend), each lane fetches
 * its 32-bit word with a permute and tests its bit. Few instructions per
 * query let the core keep many independent queries' cache misses in
 * flight, which is where a blocked filter wins over k scattered probes.
 * Lanes beyond the key's remaining probes are masked off.
 */
/* Lanes of `miss` get the bits among the first c fields of w that are not
 * set in the line (lo, hi). */
__attribute__((target("avx2"), always_inline)) static inline __m256i miss_avx2(__m256i lo, __m256i hi,
                                                                               uint64_t w, uint32_t c)
{
    const __m256i sh_a = _mm256_setr_epi64x(0, 9, 18, 27), sh_b = _mm256_setr_epi64x(36, 45, 54, 64);
    const __m256i field = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    __m256i x = _mm256_set1_epi64x((long long)w);
    /* Lane i holds a field in its low 9 bits; higher bits are ignored. */
    __m256i pos = _mm256_blend_epi32(_mm256_srlv_epi64(x, sh_a),
                                     _mm256_slli_epi64(_mm256_srlv_epi64(x, sh_b), 32), 0xAA);
    __m256i active = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)c), field);
    __m256i word = _mm256_srli_epi32(pos, 5); /* bits 0-2: word in half, bit 3: which half */
    __m256i got =
        _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_permutevar8x32_epi32(lo, word)),
                                             _mm256_castsi256_ps(_mm256_permutevar8x32_epi32(hi, word)),
                                             _mm256_castsi256_ps(_mm256_slli_epi32(word, 28))));
    __m256i bit = _mm256_sllv_epi32(_mm256_set1_epi32(1), _mm256_and_si256(pos, _mm256_set1_epi32(31)));
    return _mm256_andnot_si256(got, _mm256_and_si256(bit, active));
}

/* k ≤ 7, the common case (up to ~11.7 bits/key): one word, no loop. */
__attribute__((target("avx2"))) static bool query_avx2_short(const blocked *b, akv_hash h)
{
    const uint8_t *blk = block_of(b, h);
    __m256i lo = _mm256_load_si256((const __m256i *)blk), hi = _mm256_load_si256((const __m256i *)(blk + 32));
    __m256i miss = miss_avx2(lo, hi, h.lo, b->k);
    return _mm256_testz_si256(miss, miss);
}

__attribute__((target("avx2"))) static bool query_avx2_long(const blocked *b, akv_hash h)
{
    const uint8_t *blk = block_of(b, h);
    __m256i lo = _mm256_load_si256((const __m256i *)blk), hi = _mm256_load_si256((const __m256i *)(blk + 32));
    __m256i miss = _mm256_setzero_si256();
    uint64_t w = h.lo;
    for (uint32_t left = b->k;; w = next_word(w)) {
        uint32_t c = left < FIELDS_PER_WORD ? left : FIELDS_PER_WORD;
        miss = _mm256_or_si256(miss, miss_avx2(lo, hi, w, c));
        left -= c;
        if (!left)
            return _mm256_testz_si256(miss, miss);
    }
}

static bool cpu_has_avx2(void)
{
    return __builtin_cpu_supports("avx2");
}
#endif

/* ---- theory -------------------------------------------------------------- */

/* FPR of one block holding j keys: every probe of the query must hit a set bit. */
static double block_fpr(uint32_t k, double j)
{
    double zero = exp((double)k * j * log1p(-1.0 / BLOCK_BITS));
    return pow(1.0 - zero, k);
}

/*
 * Both mixtures sum over block loads j within 14 standard deviations of the
 * mean. The range is walked in at most MAX_TERMS steps: exact term by term
 * for every realistic filter (at 512/bits-per-key keys per block, a few
 * hundred terms), a Riemann sum of the smooth pmf for absurd ones (a huge
 * key count read from a damaged payload), so the cost stays bounded.
 */
#define MAX_TERMS 20000.0

typedef struct load_range {
    double lo, hi, step;
} load_range;

static load_range range_around(double mean, double sd, double max)
{
    load_range r = {floor(mean - 14 * sd - 10), ceil(mean + 14 * sd + 10), 1};
    if (r.lo < 0)
        r.lo = 0;
    if (r.hi > max)
        r.hi = max;
    if (r.hi - r.lo > MAX_TERMS)
        r.step = ceil((r.hi - r.lo) / MAX_TERMS);
    return r;
}

/* Σ_j P(load = j) · block_fpr(k, j); load ~ Poisson(lambda). */
static double poisson_mixture(uint32_t k, double lambda)
{
    load_range r = range_around(lambda, sqrt(lambda), INFINITY);
    double sum = 0;
    for (int t = 0; t <= (int)MAX_TERMS; t++) {
        double j = r.lo + t * r.step;
        if (j > r.hi)
            break;
        sum += r.step * exp(j * log(lambda) - lambda - log_gamma(j + 1)) * block_fpr(k, j);
    }
    return sum;
}

/* Same with the exact Binomial(n, 1/nb) load; equals the Poisson mixture as
 * nb grows, and stays exact for a handful of blocks. */
static double binomial_mixture(uint32_t k, uint64_t n, uint64_t nb)
{
    if (n == 0)
        return 0.0;
    if (nb == 1)
        return block_fpr(k, (double)n);
    double p = 1.0 / (double)nb, dn = (double)n;
    load_range r = range_around(dn * p, sqrt(dn * p * (1 - p)), dn);
    double sum = 0, lcn = log_gamma(dn + 1);
    for (int t = 0; t <= (int)MAX_TERMS; t++) {
        double j = r.lo + t * r.step;
        if (j > r.hi)
            break;
        double lp = lcn - log_gamma(j + 1) - log_gamma(dn - j + 1) + j * log(p) + (dn - j) * log1p(-p);
        sum += r.step * exp(lp) * block_fpr(k, j);
    }
    return sum;
}

/* k minimising the blocked FPR at this many bits per key. */
static uint32_t best_k(double bits_per_key)
{
    double lambda = BLOCK_BITS / bits_per_key, best = 2;
    uint32_t kb = 1;
    for (uint32_t k = 1; k <= 24; k++) {
        double f = poisson_mixture(k, lambda);
        if (f < best) {
            best = f;
            kb = k;
        }
    }
    return kb;
}

/* ---- construction ------------------------------------------------------- */

static blocked *blocked_alloc(uint64_t nb, uint32_t k, bool allow_simd)
{
    blocked *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    /* Cache-line aligned, so that a block is exactly one line. */
    b->bits = aligned_alloc(BLOCK_BYTES, (size_t)nb * BLOCK_BYTES);
    if (!b->bits) {
        free(b);
        return NULL;
    }
    memset(b->bits, 0, (size_t)nb * BLOCK_BYTES);
    b->base.kind = &akvi_kind_blocked;
    b->nb = nb;
    b->k = k;
    b->mixed = true;
    b->simd = false;
    b->query = query_scalar;
    (void)allow_simd;
#ifdef HAVE_AVX2_PATH
    if (allow_simd && cpu_has_avx2()) {
        b->simd = true;
        b->query = k <= FIELDS_PER_WORD ? query_avx2_short : query_avx2_long;
    }
#endif
    return b;
}

/* nb = ceil(bits/key · n / 512) blocks, at least one; k from best_k unless
 * params->num_hashes overrides it. */
static int blocked_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    double n = p->expected_keys ? (double)p->expected_keys : 1.0;
    double nbd = ceil(p->bits_per_key * n / BLOCK_BITS);
    if (nbd > (double)(SIZE_MAX / BLOCK_BYTES / 2))
        return AKV_EINVAL;
    uint64_t nb = nbd < 1 ? 1 : (uint64_t)nbd;
    uint32_t k = p->num_hashes ? p->num_hashes : best_k(p->bits_per_key);
    if (k > MAX_K)
        return AKV_EINVAL;
    blocked *b = blocked_alloc(nb, k, !(p->flags & AKV_BLOCKED_SCALAR));
    if (!b)
        return AKV_ENOMEM;
    *out = &b->base;
    return AKV_OK;
}

static int blocked_add(akv_filter *f, akv_hash h)
{
    blocked *b = (blocked *)f;
    uint8_t *blk = b->bits + block_index(b, h) * BLOCK_BYTES;
    uint64_t w = h.lo;
    for (uint32_t left = b->k;; w = next_word(w)) {
        uint32_t c = left < FIELDS_PER_WORD ? left : FIELDS_PER_WORD;
        uint64_t x = w;
        for (uint32_t i = 0; i < c; i++, x >>= 9)
            akvi_bit_set(blk, x & (BLOCK_BITS - 1));
        left -= c;
        if (!left)
            break;
    }
    f->n_keys++;
    return AKV_OK;
}

static int blocked_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

static bool blocked_may_contain(const akv_filter *f, akv_hash h)
{
    const blocked *b = (const blocked *)f;
    return b->query(b, h);
}

/*
 * 64-bit words of the block that may_contain reads. The AVX2 path loads the
 * whole cache line (8 words, two loads); the scalar path reads the word of
 * each probe up to the first zero. Either way it is one cache line, which
 * is the cost that matters.
 */
static void blocked_prefetch(const akv_filter *f, akv_hash h)
{
    __builtin_prefetch(block_of((const blocked *)f, h));
}

static unsigned blocked_words_touched(const akv_filter *f, akv_hash h)
{
    const blocked *b = (const blocked *)f;
    if (b->simd)
        return BLOCK_BYTES / 8;
    const uint8_t *blk = block_of(b, h);
    unsigned words = 0;
    uint64_t w = h.lo;
    for (uint32_t left = b->k;; w = next_word(w)) {
        uint32_t c = left < FIELDS_PER_WORD ? left : FIELDS_PER_WORD;
        uint64_t x = w;
        for (uint32_t i = 0; i < c; i++, x >>= 9) {
            uint64_t pos = x & (BLOCK_BITS - 1);
            words |= 1u << (pos >> 6);
            if (!akvi_bit_get(blk, pos))
                return (unsigned)__builtin_popcount(words);
        }
        left -= c;
        if (!left)
            return (unsigned)__builtin_popcount(words);
    }
}

static size_t blocked_memory(const akv_filter *f)
{
    const blocked *b = (const blocked *)f;
    return (size_t)b->nb * BLOCK_BYTES;
}

static double blocked_fpr_theory(const akv_filter *f)
{
    const blocked *b = (const blocked *)f;
    return binomial_mixture(b->k, f->n_keys, b->nb);
}

/* ---- serialization ------------------------------------------------------ */

/* Payload (versions 1 and 2): u64 blocks, u32 k, u64 keys, blocks × 64
 * bytes. Version 2 picks a key's block from mix64(h.hi), version 1 from
 * h.hi (block_index). */
static int blocked_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const blocked *b = (const blocked *)f;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, b->nb);
    akvi_w_u32(&w, b->k);
    akvi_w_u64(&w, f->n_keys);
    akvi_w_bytes(&w, b->bits, (size_t)b->nb * BLOCK_BYTES);
    *len = w.len;
    return AKV_OK;
}

static int blocked_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1 && ver != 2)
        return AKV_ENOTSUP;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t nb = akvi_r_u64(&r);
    uint32_t k = akvi_r_u32(&r);
    uint64_t n = akvi_r_u64(&r);
    /* nb * 64 wraps for nb >= 2^58: bound nb by division first. */
    if (r.err || nb < 1 || k < 1 || k > MAX_K || nb > akvi_r_left(&r) / BLOCK_BYTES ||
        nb * BLOCK_BYTES != akvi_r_left(&r))
        return AKV_ECORRUPT;
    blocked *b = blocked_alloc(nb, k, true);
    if (!b)
        return AKV_ENOMEM;
    akvi_r_bytes(&r, b->bits, (size_t)nb * BLOCK_BYTES);
    b->base.n_keys = n;
    b->mixed = ver >= 2;
    *out = &b->base;
    return AKV_OK;
}

static void blocked_destroy(akv_filter *f)
{
    blocked *b = (blocked *)f;
    free(b->bits);
    free(b);
}

static int blocked_describe(const akv_filter *f, char *buf, size_t cap)
{
    const blocked *b = (const blocked *)f;
    return snprintf(buf, cap, "\"blocks\":%llu,\"block_bits\":%u,\"k\":%u", (unsigned long long)b->nb,
                    BLOCK_BITS, b->k);
}

const akv_filter_kind akvi_kind_blocked = {
    .name = "blocked",
    .id = 2,
    .payload_version = 2,
    .flags = 0,
    .summary = "cache-line blocked Bloom filter (512-bit blocks, one cache miss per query)",
    .create = blocked_create,
    .add = blocked_add,
    .finish = blocked_finish,
    .may_contain = blocked_may_contain,
    .memory_bytes = blocked_memory,
    .save = blocked_save,
    .load = blocked_load,
    .destroy = blocked_destroy,
    .words_touched = blocked_words_touched,
    .prefetch = blocked_prefetch,
    .describe = blocked_describe,
    .fpr_theory = blocked_fpr_theory,
};
