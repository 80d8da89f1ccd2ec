/*
 * rbf.c — Rational Bloom filter (Walther, Mansour, Werner 2024): a standard
 * Bloom filter whose number of probes k may be any positive rational.
 * Every key takes k_int always-applied probes; a fraction frac(k) of keys,
 * chosen by an independent 64-bit hash compared with the integer threshold
 * act_thr (rbf.h), takes one more. Probe positions are exactly those of the
 * `bloom` kind (h.hi + i·(h.lo|1), multiply-shift reduced to any m), so with
 * an integer k an RBF is bit-for-bit the Bloom filter with that k.
 *
 * Default k is the optimum k* = (m/n)·ln 2, kept rational. Requesting a
 * specific k: params->num_hashes (integer), or with AKV_RBF_MILLI_K in
 * params->flags, num_hashes in thousandths.
 *
 * fpr_theory is the expected FPR of this construction, q^a·(1 - f·p0)
 * (derived in docs/filters.md, "Findings"), not the paper's (1-p0)^k, which
 * underestimates it.
 */
#include "rbf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "util/bits.h"
#include "util/codec.h"

/* Index into akv_hash_nth's family for the activation hash ("RBFA"). */
#define ACT_NTH 0x52424641u

typedef struct rbf {
    akv_filter base;
    uint64_t m;       /* bits */
    uint32_t k_int;   /* always-applied probes */
    uint64_t act_thr; /* extra probe iff activation hash < act_thr */
    uint64_t n_act;   /* keys that took the extra probe (for the exact fill) */
    uint8_t *bits;
} rbf;

extern const akv_filter_kind akvi_kind_rbf;

static inline uint64_t probe(const rbf *r, akv_hash h, uint32_t i)
{
    return akv_reduce(h.hi + (uint64_t)i * (h.lo | 1), r->m);
}

static inline bool activated(const rbf *r, akv_hash h)
{
    return akv_hash_nth(h, ACT_NTH) < r->act_thr;
}

static rbf *rbf_alloc(uint64_t m, uint32_t k_int, uint64_t act_thr)
{
    rbf *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->bits = calloc(1, akvi_bits_bytes(m));
    if (!r->bits) {
        free(r);
        return NULL;
    }
    r->base.kind = &akvi_kind_rbf;
    r->m = m;
    r->k_int = k_int;
    r->act_thr = act_thr;
    return r;
}

/* m as the `bloom` kind sizes it (bits/key · n, at least 64); k as above. */
static int rbf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    double mbits = ceil(p->bits_per_key * (double)n);
    if (mbits > 0x1p60)
        return AKV_EINVAL;
    uint64_t m = mbits < 64 ? 64 : (uint64_t)mbits;
    uint32_t k_int;
    uint64_t thr;
    if (p->flags & AKV_RBF_MILLI_K)
        akvi_rbf_kmilli(p->num_hashes, &k_int, &thr);
    else if (p->num_hashes)
        k_int = p->num_hashes, thr = 0;
    else
        akvi_rbf_kstar(m, n, &k_int, &thr);
    if ((k_int == 0 && thr == 0) || k_int > AKV_RBF_MAX_K || (k_int == AKV_RBF_MAX_K && thr))
        return AKV_EINVAL;
    rbf *r = rbf_alloc(m, k_int, thr);
    if (!r)
        return AKV_ENOMEM;
    *out = &r->base;
    return AKV_OK;
}

static int rbf_add(akv_filter *f, akv_hash h)
{
    rbf *r = (rbf *)f;
    for (uint32_t i = 0; i < r->k_int; i++)
        akvi_bit_set(r->bits, probe(r, h, i));
    if (activated(r, h)) {
        akvi_bit_set(r->bits, probe(r, h, r->k_int));
        r->n_act++;
    }
    f->n_keys++;
    return AKV_OK;
}

static int rbf_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

/* The activation hash is computed only once the always-applied probes have
 * all passed, so most negative queries never pay for it. */
static bool rbf_may_contain(const akv_filter *f, akv_hash h)
{
    const rbf *r = (const rbf *)f;
    for (uint32_t i = 0; i < r->k_int; i++)
        if (!akvi_bit_get(r->bits, probe(r, h, i)))
            return false;
    return !activated(r, h) || akvi_bit_get(r->bits, probe(r, h, r->k_int));
}

static unsigned rbf_words_touched(const akv_filter *f, akv_hash h)
{
    const rbf *r = (const rbf *)f;
    unsigned w = 0;
    for (uint32_t i = 0; i < r->k_int; i++) {
        w++;
        if (!akvi_bit_get(r->bits, probe(r, h, i)))
            return w;
    }
    return w + (activated(r, h) ? 1u : 0u);
}

static size_t rbf_memory(const akv_filter *f)
{
    const rbf *r = (const rbf *)f;
    return (size_t)((r->m + 7) / 8);
}

/* q^a·(1 - f·p0) with a = k_int, f = act_thr/2^64, and p0 the probability
 * that a bit is still zero after the probes actually placed. */
static double rbf_fpr_theory(const akv_filter *f)
{
    const rbf *r = (const rbf *)f;
    double probes = (double)f->n_keys * r->k_int + (double)r->n_act;
    double p0 = exp(probes * log1p(-1.0 / (double)r->m));
    return pow(1.0 - p0, r->k_int) * (1.0 - akvi_rbf_frac(r->act_thr) * p0);
}

/* Payload: u64 m, u32 k_int, u64 act_thr, u64 keys, u64 activated keys, bits. */
static int rbf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const rbf *r = (const rbf *)f;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, r->m);
    akvi_w_u32(&w, r->k_int);
    akvi_w_u64(&w, r->act_thr);
    akvi_w_u64(&w, f->n_keys);
    akvi_w_u64(&w, r->n_act);
    akvi_w_bytes(&w, r->bits, (size_t)((r->m + 7) / 8));
    *len = w.len;
    return AKV_OK;
}

static int rbf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    (void)ver;
    akvi_rbuf rd = {buf, len, 0, false};
    uint64_t m = akvi_r_u64(&rd);
    uint32_t k_int = akvi_r_u32(&rd);
    uint64_t thr = akvi_r_u64(&rd);
    uint64_t n = akvi_r_u64(&rd);
    uint64_t n_act = akvi_r_u64(&rd);
    if (rd.err || m < 1 || akvi_bytes_of_bits(m) != akvi_r_left(&rd))
        return AKV_ECORRUPT;
    if ((k_int == 0 && thr == 0) || k_int > AKV_RBF_MAX_K || (k_int == AKV_RBF_MAX_K && thr) || n_act > n ||
        (thr == 0 && n_act))
        return AKV_ECORRUPT;
    rbf *r = rbf_alloc(m, k_int, thr);
    if (!r)
        return AKV_ENOMEM;
    akvi_r_bytes(&rd, r->bits, (size_t)((m + 7) / 8));
    r->base.n_keys = n;
    r->n_act = n_act;
    *out = &r->base;
    return AKV_OK;
}

static void rbf_destroy(akv_filter *f)
{
    rbf *r = (rbf *)f;
    free(r->bits);
    free(r);
}

static int rbf_describe(const akv_filter *f, char *buf, size_t cap)
{
    const rbf *r = (const rbf *)f;
    return snprintf(buf, cap, "\"m\":%llu,\"k\":%.6f,\"k_int\":%u,\"act_thr\":%llu,\"activated\":%llu",
                    (unsigned long long)r->m, r->k_int + akvi_rbf_frac(r->act_thr), r->k_int,
                    (unsigned long long)r->act_thr, (unsigned long long)r->n_act);
}

const akv_filter_kind akvi_kind_rbf = {
    .name = "rbf",
    .id = 3,
    .payload_version = 1,
    .flags = 0,
    .summary = "Rational Bloom filter: rational k = (m/n)·ln2 by hashed probe activation",
    .create = rbf_create,
    .add = rbf_add,
    .finish = rbf_finish,
    .may_contain = rbf_may_contain,
    .memory_bytes = rbf_memory,
    .save = rbf_save,
    .load = rbf_load,
    .destroy = rbf_destroy,
    .words_touched = rbf_words_touched,
    .describe = rbf_describe,
    .fpr_theory = rbf_fpr_theory,
};
