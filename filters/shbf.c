/*
 * shbf.c — Shifting Bloom filter for membership, ShBF_M (Yang et al.,
 * PVLDB 2016, its §3), as a slot kind, with the linear generalisation to
 * t shifts (the paper's §3.6; docs/filters.md, "ShBF with t shifts").
 *
 * Each key sets k bits as k/(t+1) groups: one hashed position
 * p_i = (h.hi + i·(h.lo|1)) reduced to [0, m) plus t shifted copies
 * p_i + o_1 .. p_i + o_t. The t offsets are one per key, shared by all its
 * groups, taken from hash bits the positions do not use (key_mask), and
 * distinct: o_j is drawn from the j-th of t equal sub-ranges of [1, w̄-1],
 * each L = ⌊(w̄-1)/t⌋ wide (o_j ∈ [(j-1)·L + 1, j·L]). With w̄ = 57 every
 * group lies in one 64-bit window (bits.h akvi_win64), so a query reads at
 * most k/(t+1) words instead of k: one load and one mask compare per group.
 * The array holds m + w̄ - 1 bits (offsets never wrap) plus load padding.
 *
 * t = 1 (the default) is the paper's ShBF_M: pairs (p_i, p_i + o). t is
 * asked for in params->flags (shbf.h, AKV_SHBF_SHIFTS).
 *
 * k: params->num_hashes, or by default the multiple of t+1 minimising eq.
 * 11 at this many bits per key (for t = 1 the even k minimising eq. 1,
 * ≈ 0.70·bits/key). For t ≥ 2, k must be a multiple of t+1. For t = 1 an odd
 * k (only when asked for) is (k-1)/2 pairs plus one single probe: the paper
 * covers only even k, and this keeps every bit of the budget while costing
 * one more word read.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "shbf.h"
#include "util/bits.h"
#include "util/codec.h"

#define WBAR       57u /* w - 7 for 64-bit windows: offsets 1..56 */
#define MAX_K      64u
#define MAX_SHIFTS 7u

typedef struct shbf {
    akv_filter base;
    uint64_t m;      /* hashed range; the array has m + wbar - 1 bits */
    uint32_t k;      /* bits set per key */
    uint32_t wbar;   /* offsets lie in [1, wbar-1] */
    uint32_t t;      /* shifted copies per group (1 = ShBF_M pairs) */
    uint32_t span;   /* L = (wbar-1)/t: width of each offset sub-range */
    uint32_t groups; /* k/(t+1) full groups, one window each */
    uint32_t single; /* 0 or 1: t = 1 with odd k, one unpaired probe */
    uint8_t *bits;
} shbf;

extern const akv_filter_kind akvi_kind_shbf;

/* The offsets come from the low 32 bits of h.lo, read as a fraction in
 * [0, 1) whose successive base-L digits are the t offsets' places in their
 * sub-ranges: multiply by L, the high half is the digit, the low half the
 * rest. L^t ≤ 2^21, so the digits are uniform and independent up to a bias
 * below 2^-11. For t = 1 this is ((lo32·(w̄-1)) >> 32) + 1, ShBF_M's offset
 * (payloads written before t existed load unchanged). Positions use the top
 * bits of h.hi + i·h.lo, which these low bits reach only through a rare
 * carry, so the offsets are independent of the positions for every
 * practical purpose; taking the bits raw instead of remixing them keeps the
 * query short (about 15% faster on absent keys at 10M keys). Returns the
 * group's mask in its window (bit 0 is the hashed position); `off`, if not
 * NULL, receives the t offsets. */
static inline uint64_t key_mask(const shbf *s, akv_hash h, uint32_t *off)
{
    uint64_t x = h.lo & 0xffffffffULL, mask = 1;
    for (uint32_t j = 0; j < s->t; j++) {
        x *= s->span;
        uint32_t o = (uint32_t)(x >> 32) + 1 + j * s->span;
        if (off)
            off[j] = o;
        mask |= 1ULL << o;
        x &= 0xffffffffULL;
    }
    return mask;
}

/* The paper's eqs. 11–12: (1-p')^(k/(t+1)) · f_group^(k/(t+1)) with
 *   f_group = (1/t)(1-p')² · Σ_{i<t} (1-p')^i a^(t-1-i) + p'·a^t,
 *   a = 1 - ((w-1-t)/(w-1))·p',
 * the sum being eq. 12's quotient [(1-p')^t - a^t] / [(1-p') - a] written
 * without the division (it is 0/0 at p' = 0). w - 1 = t·L is the offset
 * range actually used (w̄ - 1 = 56 when t divides 56, e.g. 54 for t = 3).
 * For t = 1, f_group = (1-p')² + p' - ((w̄-2)/(w̄-1))p'² = 1 - p' + p'²/(w̄-1)
 * and this is eq. 1. `single` adds one unpaired probe (t = 1, odd k): one
 * more factor 1 - p'. */
static double eq11(uint32_t groups, uint32_t single, uint32_t t, uint32_t span, double zero)
{
    double q = 1.0 - zero, w1 = (double)t * span;
    double a = 1.0 - (w1 - t) / w1 * zero, sum = 0, qi = 1, at = 1;
    for (uint32_t i = 0; i < t; i++) {
        sum += qi * pow(a, (double)(t - 1 - i));
        qi *= q;
        at *= a;
    }
    double group = q * q * sum / t + zero * at;
    return pow(q, (double)groups + single) * pow(group, (double)groups);
}

/* Multiple of t+1 minimising eq. 11 with p' = e^(-k/bits_per_key). */
static uint32_t best_k(double bits_per_key, uint32_t t, uint32_t span)
{
    uint32_t kb = t + 1;
    double best = 2;
    for (uint32_t k = t + 1; k <= MAX_K; k += t + 1) {
        double f = eq11(k / (t + 1), 0, t, span, exp(-(double)k / bits_per_key));
        if (f < best) {
            best = f;
            kb = k;
        }
    }
    return kb;
}

/* t ∈ [1, 7], wbar ∈ [t+1, 57], k ∈ [1, 64]; k a multiple of t+1 unless t = 1. */
static bool shape_ok(uint32_t k, uint32_t wbar, uint32_t t)
{
    return t >= 1 && t <= MAX_SHIFTS && wbar >= t + 1 && wbar <= WBAR && k >= 1 && k <= MAX_K &&
           (t == 1 || k % (t + 1) == 0);
}

static shbf *shbf_alloc(uint64_t m, uint32_t k, uint32_t wbar, uint32_t t)
{
    shbf *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->bits = calloc(1, akvi_bits_bytes(m + wbar - 1));
    if (!s->bits) {
        free(s);
        return NULL;
    }
    s->base.kind = &akvi_kind_shbf;
    s->m = m;
    s->k = k;
    s->wbar = wbar;
    s->t = t;
    s->span = (wbar - 1) / t;
    s->groups = k / (t + 1);
    s->single = k % (t + 1);
    return s;
}

/* m = bits/key · n (at least 64), as for `bloom`; the w̄ - 1 = 56 extension
 * bits come on top. */
static int shbf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    if (p->flags & ~(uint32_t)AKV_SHBF_SHIFTS_MASK)
        return AKV_EINVAL;
    uint32_t t = (p->flags & AKV_SHBF_SHIFTS_MASK) >> AKV_SHBF_SHIFTS_SHIFT;
    if (t == 0)
        t = 1;
    if (t > MAX_SHIFTS)
        return AKV_EINVAL;
    double n = p->expected_keys ? (double)p->expected_keys : 1.0;
    double mbits = ceil(p->bits_per_key * n);
    if (mbits > 0x1p60)
        return AKV_EINVAL;
    uint64_t m = mbits < 64 ? 64 : (uint64_t)mbits;
    uint32_t k = p->num_hashes ? p->num_hashes : best_k(p->bits_per_key, t, (WBAR - 1) / t);
    if (!shape_ok(k, WBAR, t))
        return AKV_EINVAL;
    shbf *s = shbf_alloc(m, k, WBAR, t);
    if (!s)
        return AKV_ENOMEM;
    *out = &s->base;
    return AKV_OK;
}

static int shbf_add(akv_filter *f, akv_hash h)
{
    shbf *s = (shbf *)f;
    uint32_t off[MAX_SHIFTS];
    key_mask(s, h, off);
    uint64_t x = h.hi, step = h.lo | 1;
    for (uint32_t i = 0; i < s->groups; i++, x += step) {
        uint64_t p = akv_reduce(x, s->m);
        akvi_bit_set(s->bits, p);
        for (uint32_t j = 0; j < s->t; j++)
            akvi_bit_set(s->bits, p + off[j]);
    }
    if (s->single)
        akvi_bit_set(s->bits, akv_reduce(x, s->m));
    f->n_keys++;
    return AKV_OK;
}

static int shbf_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

/* Reads windows until one lacks a bit of its group; returns the number of
 * windows read (one 64-bit load each) and sets *hit to the answer. */
static unsigned shbf_probe(const shbf *s, akv_hash h, bool *hit)
{
    uint64_t mask = key_mask(s, h, NULL), x = h.hi, step = h.lo | 1;
    unsigned i;
    for (i = 0; i < s->groups; i++, x += step) {
        if ((akvi_win64(s->bits, akv_reduce(x, s->m)) & mask) != mask) {
            *hit = false;
            return i + 1;
        }
    }
    *hit = !s->single || akvi_bit_get(s->bits, akv_reduce(x, s->m));
    return i + s->single;
}

static bool shbf_may_contain(const akv_filter *f, akv_hash h)
{
    const shbf *s = (const shbf *)f;
    uint64_t mask = key_mask(s, h, NULL), x = h.hi, step = h.lo | 1;
    for (uint32_t i = 0; i < s->groups; i++, x += step)
        if ((akvi_win64(s->bits, akv_reduce(x, s->m)) & mask) != mask)
            return false;
    return !s->single || akvi_bit_get(s->bits, akv_reduce(x, s->m));
}

static unsigned shbf_words_touched(const akv_filter *f, akv_hash h)
{
    bool hit;
    return shbf_probe((const shbf *)f, h, &hit);
}

static size_t shbf_memory(const akv_filter *f)
{
    const shbf *s = (const shbf *)f;
    return (size_t)((s->m + s->wbar - 1 + 7) / 8);
}

/* p' = (1 - (t+1)/m)^(kn/(t+1)) (eq. 10): each group sets t+1 (nearly)
 * uniform bits; for t = 1, (1 - 2/m)^(kn/2). */
static double shbf_fpr_theory(const akv_filter *f)
{
    const shbf *s = (const shbf *)f;
    if (f->n_keys == 0)
        return 0.0;
    double g = s->t + 1.0;
    double zero =
        (double)s->m <= g ? 0.0 : exp((double)s->k * (double)f->n_keys / g * log1p(-g / (double)s->m));
    return eq11(s->groups, s->single, s->t, s->span, zero);
}

/* Payload version 2: u64 m, u32 k, u32 wbar, u32 t, u64 keys,
 * (m + wbar - 1) bits. Version 1 (before t existed) is the same without the
 * t field and loads as t = 1. */
static int shbf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const shbf *s = (const shbf *)f;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, s->m);
    akvi_w_u32(&w, s->k);
    akvi_w_u32(&w, s->wbar);
    akvi_w_u32(&w, s->t);
    akvi_w_u64(&w, f->n_keys);
    akvi_w_bytes(&w, s->bits, (size_t)((s->m + s->wbar - 1 + 7) / 8));
    *len = w.len;
    return AKV_OK;
}

static int shbf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t m = akvi_r_u64(&r);
    uint32_t k = akvi_r_u32(&r);
    uint32_t wbar = akvi_r_u32(&r);
    uint32_t t = ver >= 2 ? akvi_r_u32(&r) : 1;
    uint64_t n = akvi_r_u64(&r);
    /* wbar ≤ 57 keeps a whole group inside one 64-bit window. */
    if (r.err || ver < 1 || m < 1 || m > (1ULL << 62) || !shape_ok(k, wbar, t) ||
        akvi_bytes_of_bits(m + wbar - 1) != akvi_r_left(&r))
        return AKV_ECORRUPT;
    shbf *s = shbf_alloc(m, k, wbar, t);
    if (!s)
        return AKV_ENOMEM;
    akvi_r_bytes(&r, s->bits, (size_t)((m + wbar - 1 + 7) / 8));
    s->base.n_keys = n;
    *out = &s->base;
    return AKV_OK;
}

static void shbf_destroy(akv_filter *f)
{
    shbf *s = (shbf *)f;
    free(s->bits);
    free(s);
}

static int shbf_describe(const akv_filter *f, char *buf, size_t cap)
{
    const shbf *s = (const shbf *)f;
    return snprintf(buf, cap, "\"m\":%llu,\"k\":%u,\"wbar\":%u,\"t\":%u", (unsigned long long)s->m, s->k,
                    s->wbar, s->t);
}

const akv_filter_kind akvi_kind_shbf = {
    .name = "shbf",
    .id = 5,
    .payload_version = 2,
    .flags = 0,
    .summary =
        "Shifting Bloom filter (ShBF_M): k bits in groups of t+1 (default pairs), one word read per group",
    .create = shbf_create,
    .add = shbf_add,
    .finish = shbf_finish,
    .may_contain = shbf_may_contain,
    .memory_bytes = shbf_memory,
    .save = shbf_save,
    .load = shbf_load,
    .destroy = shbf_destroy,
    .words_touched = shbf_words_touched,
    .describe = shbf_describe,
    .fpr_theory = shbf_fpr_theory,
};
