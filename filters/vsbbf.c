/*
 * vsbbf.c — Variably-Sized Block Bloom filter (Walther, Mansour, Werner 2024).
 *
 * m = bits/key · n bits, any value. The plan (vsbbf.h) splits it into one
 * power-of-two block per set bit of m; every key is inserted into every
 * block as into a Rational Bloom filter with k_j = (m_j/n)·ln 2 probes.
 * Indices inside a block are (h1_j + i·h2_j) & (m_j - 1): masks only.
 *
 * Resolutions of the paper's open points (docs/filters.md, "How they are
 * built", `vsbbf`):
 *  - each block has its own (h1_j, h2_j), re-mixed from the key's hash and
 *    the block's size, so small blocks do not reuse the low bits of the
 *    large blocks' probes (erratum 3; AKV_VSBBF_LITERAL restores the
 *    paper's shared indexing for measurements);
 *  - h2_j is odd, so a probe sequence never collapses (erratum 4);
 *  - the extra (activated) probe of block j is decided by an independent
 *    64-bit hash per block against an integer threshold (erratum 5, A3).
 *
 * fpr_theory = Π_j q_j^a_j · (1 - f_j·p0_j) with the actual fill p0_j of
 * each block (the paper's Theorem 4.10 product, with the activation-corrected
 * RBF formula per block and its actual fill rather than p0 = 1/2).
 */
#include "vsbbf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "rbf.h"
#include "util/bits.h"
#include "util/codec.h"

#define ACT_NTH     0x56534241u /* "VSBA": base index of the activation hashes */
#define KNOWN_FLAGS AKV_VSBBF_LITERAL

typedef struct vsbbf {
    akv_filter base;
    uint64_t m;      /* total bits */
    uint64_t n_plan; /* n the probe counts were planned for */
    uint32_t flags;
    int J;
    akvi_vsbbf_block blk[AKV_VSBBF_MAX_BLOCKS];
    uint64_t n_act[AKV_VSBBF_MAX_BLOCKS]; /* keys that took block j's extra probe */
    uint8_t *bits;
} vsbbf;

extern const akv_filter_kind akvi_kind_vsbbf;

int akvi_vsbbf_plan(uint64_t m, uint64_t n, akvi_vsbbf_block out[AKV_VSBBF_MAX_BLOCKS])
{
    int J = 0;
    for (int b = 63; b >= 0; b--) {
        uint64_t size = 1ULL << b;
        if (!(m & size))
            continue;
        out[J].size = size;
        /* Larger blocks come first, so this block starts after the bits of
         * m above b: m with bits b and below cleared. */
        out[J].offset = b == 63 ? 0 : m & ~((size << 1) - 1);
        akvi_rbf_kstar(size, n, &out[J].k_int, &out[J].act_thr);
        J++;
    }
    return J;
}

/* Per-block probe hashes: the block is identified by log2 of its size, so
 * the hashing of a block does not depend on which other blocks exist. */
typedef struct probe_seq {
    uint64_t h1, h2;
} probe_seq;

static inline probe_seq block_seq(const vsbbf *v, akv_hash h, const akvi_vsbbf_block *b)
{
    if (v->flags & AKV_VSBBF_LITERAL)
        return (probe_seq){h.hi, h.lo | 1};
    uint64_t id = (uint64_t)__builtin_ctzll(b->size) + 1;
    return (probe_seq){akv_mix64(h.hi + id * 0x9e3779b97f4a7c15ULL),
                       akv_mix64(h.lo ^ (id * 0xd6e8feb86659fd93ULL)) | 1};
}

static inline bool block_activated(akv_hash h, const akvi_vsbbf_block *b)
{
    return b->act_thr && akv_hash_nth(h, ACT_NTH + (uint64_t)__builtin_ctzll(b->size)) < b->act_thr;
}

static inline uint64_t block_pos(const akvi_vsbbf_block *b, probe_seq s, uint32_t i)
{
    return ((s.h1 + (uint64_t)i * s.h2) & (b->size - 1)) + b->offset;
}

static vsbbf *vsbbf_alloc(uint64_t m, uint64_t n_plan, uint32_t flags)
{
    vsbbf *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->bits = calloc(1, akvi_bits_bytes(m));
    if (!v->bits) {
        free(v);
        return NULL;
    }
    v->base.kind = &akvi_kind_vsbbf;
    v->m = m;
    v->n_plan = n_plan;
    v->flags = flags;
    v->J = akvi_vsbbf_plan(m, n_plan, v->blk);
    return v;
}

/* m = ceil(bits/key · n), at least 64, deliberately not rounded to a power
 * of two: that is the point of the structure. */
static int vsbbf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    if (p->flags & ~KNOWN_FLAGS)
        return AKV_EINVAL;
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    double mbits = ceil(p->bits_per_key * (double)n);
    if (mbits > 0x1p60)
        return AKV_EINVAL;
    uint64_t m = mbits < 64 ? 64 : (uint64_t)mbits;
    vsbbf *v = vsbbf_alloc(m, n, p->flags);
    if (!v)
        return AKV_ENOMEM;
    *out = &v->base;
    return AKV_OK;
}

static int vsbbf_add(akv_filter *f, akv_hash h)
{
    vsbbf *v = (vsbbf *)f;
    for (int j = 0; j < v->J; j++) {
        const akvi_vsbbf_block *b = &v->blk[j];
        probe_seq s = block_seq(v, h, b);
        uint32_t cnt = b->k_int;
        if (block_activated(h, b)) {
            cnt++;
            v->n_act[j]++;
        }
        for (uint32_t i = 0; i < cnt; i++)
            akvi_bit_set(v->bits, block_pos(b, s, i));
    }
    f->n_keys++;
    return AKV_OK;
}

static int vsbbf_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

/* Probes block by block, largest (most probes) first; returns the number of
 * bits read and sets *hit to the answer. Shared by the query and the
 * instrumentation hook so they cannot drift apart. */
static unsigned vsbbf_probe(const vsbbf *v, akv_hash h, bool *hit)
{
    unsigned reads = 0;
    for (int j = 0; j < v->J; j++) {
        const akvi_vsbbf_block *b = &v->blk[j];
        probe_seq s = block_seq(v, h, b);
        uint32_t cnt = b->k_int + (block_activated(h, b) ? 1u : 0u);
        for (uint32_t i = 0; i < cnt; i++) {
            reads++;
            if (!akvi_bit_get(v->bits, block_pos(b, s, i))) {
                *hit = false;
                return reads;
            }
        }
    }
    *hit = true;
    return reads;
}

static bool vsbbf_may_contain(const akv_filter *f, akv_hash h)
{
    bool hit;
    vsbbf_probe((const vsbbf *)f, h, &hit);
    return hit;
}

static unsigned vsbbf_words_touched(const akv_filter *f, akv_hash h)
{
    bool hit;
    return vsbbf_probe((const vsbbf *)f, h, &hit);
}

static size_t vsbbf_memory(const akv_filter *f)
{
    const vsbbf *v = (const vsbbf *)f;
    return (size_t)((v->m + 7) / 8);
}

/* Probability that a bit of a block of `size` bits is still 0 after
 * `probes` uniform probes into it. */
static double zero_prob(uint64_t size, double probes)
{
    if (probes == 0)
        return 1.0;
    return size == 1 ? 0.0 : exp(probes * log1p(-1.0 / (double)size));
}

static double vsbbf_fpr_theory(const akv_filter *f)
{
    const vsbbf *v = (const vsbbf *)f;
    double fpr = 1.0;
    for (int j = 0; j < v->J; j++) {
        const akvi_vsbbf_block *b = &v->blk[j];
        double p0 = zero_prob(b->size, (double)f->n_keys * b->k_int + (double)v->n_act[j]);
        fpr *= pow(1.0 - p0, b->k_int) * (1.0 - akvi_rbf_frac(b->act_thr) * p0);
    }
    return fpr;
}

/* Payload: u64 m, u64 n_plan, u32 flags, u64 keys, u8 J, J × (u32 k_int,
 * u64 act_thr, u64 activated keys), bits. The plan is stored for the
 * format's self-description and checked against the recomputed one. */
static int vsbbf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const vsbbf *v = (const vsbbf *)f;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, v->m);
    akvi_w_u64(&w, v->n_plan);
    akvi_w_u32(&w, v->flags);
    akvi_w_u64(&w, f->n_keys);
    akvi_w_u8(&w, (uint8_t)v->J);
    for (int j = 0; j < v->J; j++) {
        akvi_w_u32(&w, v->blk[j].k_int);
        akvi_w_u64(&w, v->blk[j].act_thr);
        akvi_w_u64(&w, v->n_act[j]);
    }
    akvi_w_bytes(&w, v->bits, (size_t)((v->m + 7) / 8));
    *len = w.len;
    return AKV_OK;
}

static bool load_blocks(akvi_rbuf *r, vsbbf *v)
{
    if (akvi_r_u8(r) != v->J)
        return false;
    for (int j = 0; j < v->J; j++) {
        uint32_t k_int = akvi_r_u32(r);
        uint64_t thr = akvi_r_u64(r);
        v->n_act[j] = akvi_r_u64(r);
        if (r->err || k_int != v->blk[j].k_int || thr != v->blk[j].act_thr || v->n_act[j] > v->base.n_keys ||
            (thr == 0 && v->n_act[j]))
            return false;
    }
    return true;
}

static int vsbbf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    (void)ver;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t m = akvi_r_u64(&r);
    uint64_t n_plan = akvi_r_u64(&r);
    uint32_t flags = akvi_r_u32(&r);
    uint64_t n = akvi_r_u64(&r);
    /* The bit array is the tail: its length bounds m before allocating. */
    if (r.err || m < 1 || n_plan < 1 || (flags & ~KNOWN_FLAGS) || akvi_bytes_of_bits(m) > akvi_r_left(&r))
        return AKV_ECORRUPT;
    vsbbf *v = vsbbf_alloc(m, n_plan, flags);
    if (!v)
        return AKV_ENOMEM;
    v->base.n_keys = n;
    if (!load_blocks(&r, v) || akvi_bytes_of_bits(m) != akvi_r_left(&r)) {
        akv_filter_destroy(&v->base);
        return AKV_ECORRUPT;
    }
    akvi_r_bytes(&r, v->bits, (size_t)((m + 7) / 8));
    *out = &v->base;
    return AKV_OK;
}

static void vsbbf_destroy(akv_filter *f)
{
    vsbbf *v = (vsbbf *)f;
    free(v->bits);
    free(v);
}

static int vsbbf_describe(const akv_filter *f, char *buf, size_t cap)
{
    const vsbbf *v = (const vsbbf *)f;
    double ksum = 0;
    for (int j = 0; j < v->J; j++)
        ksum += v->blk[j].k_int + akvi_rbf_frac(v->blk[j].act_thr);
    return snprintf(buf, cap, "\"m\":%llu,\"blocks\":%d,\"k_total\":%.6f,\"literal\":%s",
                    (unsigned long long)v->m, v->J, ksum, (v->flags & AKV_VSBBF_LITERAL) ? "true" : "false");
}

const akv_filter_kind akvi_kind_vsbbf = {
    .name = "vsbbf",
    .id = 4,
    .payload_version = 1,
    .flags = 0,
    .summary = "Variably-Sized Block Bloom filter: any m as power-of-two blocks, rational k per block",
    .create = vsbbf_create,
    .add = vsbbf_add,
    .finish = vsbbf_finish,
    .may_contain = vsbbf_may_contain,
    .memory_bytes = vsbbf_memory,
    .save = vsbbf_save,
    .load = vsbbf_load,
    .destroy = vsbbf_destroy,
    .words_touched = vsbbf_words_touched,
    .describe = vsbbf_describe,
    .fpr_theory = vsbbf_fpr_theory,
};
