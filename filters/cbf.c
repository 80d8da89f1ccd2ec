/*
 * cbf.c — counting Bloom filter (kind `cbf`), the SSCF baseline: 4-bit
 * counters packed two per byte, bits_per_key/4 counters per key,
 * k = ⌊ln2 · counters per key⌋ (docs/filters.md, "Measured against the
 * papers"), probes by double
 * hashing as the Bloom kind. Saturation is sticky: a counter at 15 never
 * moves again, which can only add false positives, never false negatives.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "filters/sscf.h"
#include "util/codec.h"

#define CBF_MAX   15
#define CBF_MAX_K 32

typedef struct cbf {
    akv_filter base;
    uint64_t m; /* counters */
    uint32_t k;
    uint64_t saturations;
    uint8_t *c; /* nibbles: counter j in byte j/2, low nibble when j is even */
} cbf;

extern const akv_filter_kind akvi_kind_cbf;

static inline uint64_t probe(const cbf *b, akv_hash h, uint32_t i)
{
    return akv_reduce(h.hi + (uint64_t)i * (h.lo | 1), b->m);
}
static inline unsigned get(const cbf *b, uint64_t j)
{
    return (b->c[j >> 1] >> ((j & 1) * 4)) & 15u;
}
static inline void set(cbf *b, uint64_t j, unsigned v)
{
    unsigned sh = (unsigned)(j & 1) * 4;
    b->c[j >> 1] = (uint8_t)((b->c[j >> 1] & ~(15u << sh)) | (v << sh));
}
static uint64_t cbf_bytes(uint64_t m)
{
    return (m + 1) / 2;
}

static cbf *cbf_alloc(uint64_t m, uint32_t k)
{
    cbf *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->c = calloc(1, (size_t)cbf_bytes(m) + 1);
    if (!b->c) {
        free(b);
        return NULL;
    }
    b->base.kind = &akvi_kind_cbf;
    b->m = m;
    b->k = k;
    return b;
}

static int cbf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    double n = p->expected_keys ? (double)p->expected_keys : 1.0;
    /* k follows the requested budget, not the 64-counter minimum */
    double counters = floor(p->bits_per_key * n / 4.0);
    uint64_t m = counters < 64 ? 64 : (uint64_t)counters;
    long k = p->num_hashes ? (long)p->num_hashes : (long)floor(M_LN2 * p->bits_per_key / 4.0);
    if (k > CBF_MAX_K)
        return AKV_EINVAL;
    cbf *b = cbf_alloc(m, (uint32_t)(k < 1 ? 1 : k));
    if (!b)
        return AKV_ENOMEM;
    *out = &b->base;
    return AKV_OK;
}

static int cbf_insert(akv_filter *f, akv_hash h)
{
    cbf *b = (cbf *)f;
    for (uint32_t i = 0; i < b->k; i++) {
        uint64_t j = probe(b, h, i);
        unsigned v = get(b, j);
        if (v < CBF_MAX) {
            set(b, j, v + 1);
            b->saturations += v + 1 == CBF_MAX;
        }
    }
    f->n_keys++;
    return AKV_OK;
}

/* A key is removable only if each counter it maps to (with multiplicity)
 * still holds a count or is saturated; otherwise AKV_NOTFOUND, untouched. */
static int cbf_remove(akv_filter *f, akv_hash h)
{
    cbf *b = (cbf *)f;
    uint64_t pos[CBF_MAX_K];
    for (uint32_t i = 0; i < b->k; i++)
        pos[i] = probe(b, h, i);
    for (uint32_t i = 0; i < b->k; i++) {
        unsigned need = 0, v = get(b, pos[i]);
        for (uint32_t j = 0; j < b->k; j++)
            need += pos[j] == pos[i];
        if (v != CBF_MAX && v < need)
            return AKV_NOTFOUND;
    }
    for (uint32_t i = 0; i < b->k; i++) {
        unsigned v = get(b, pos[i]);
        if (v != CBF_MAX)
            set(b, pos[i], v - 1);
    }
    if (f->n_keys)
        f->n_keys--;
    return AKV_OK;
}

static int cbf_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

static bool cbf_may_contain(const akv_filter *f, akv_hash h)
{
    const cbf *b = (const cbf *)f;
    for (uint32_t i = 0; i < b->k; i++)
        if (!get(b, probe(b, h, i)))
            return false;
    return true;
}

static size_t cbf_memory(const akv_filter *f)
{
    return (size_t)cbf_bytes(((const cbf *)f)->m);
}

static double cbf_fpr_theory(const akv_filter *f)
{
    const cbf *b = (const cbf *)f;
    double zero = exp((double)b->k * (double)f->n_keys * log1p(-1.0 / (double)b->m));
    return pow(1.0 - zero, b->k);
}

int akvi_cbf_nonzero(const akv_filter *f, uint64_t *nonzero)
{
    if (!f || f->kind != &akvi_kind_cbf)
        return AKV_EINVAL;
    const cbf *b = (const cbf *)f;
    uint64_t n = 0;
    for (uint64_t j = 0; j < b->m; j++)
        n += get(b, j) != 0;
    *nonzero = n;
    return AKV_OK;
}

static int cbf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const cbf *b = (const cbf *)f;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, b->m);
    akvi_w_u32(&w, b->k);
    akvi_w_u64(&w, f->n_keys);
    akvi_w_u64(&w, b->saturations);
    akvi_w_bytes(&w, b->c, (size_t)cbf_bytes(b->m));
    *len = w.len;
    return AKV_OK;
}

static int cbf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    (void)ver;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t m = akvi_r_u64(&r);
    uint32_t k = akvi_r_u32(&r);
    uint64_t n = akvi_r_u64(&r), sat = akvi_r_u64(&r);
    /* m / 2 + (m & 1), not (m + 1) / 2: that wraps to 0 for m = 2^64 - 1. */
    if (r.err || m < 64 || k < 1 || k > CBF_MAX_K || m / 2 + (m & 1) != akvi_r_left(&r) || sat > m)
        return AKV_ECORRUPT;
    cbf *b = cbf_alloc(m, k);
    if (!b)
        return AKV_ENOMEM;
    akvi_r_bytes(&r, b->c, (size_t)cbf_bytes(m));
    if ((m & 1) && (b->c[m >> 1] >> 4)) { /* padding nibble must be zero */
        free(b->c);
        free(b);
        return AKV_ECORRUPT;
    }
    b->base.n_keys = n;
    b->saturations = sat;
    *out = &b->base;
    return AKV_OK;
}

static void cbf_destroy(akv_filter *f)
{
    cbf *b = (cbf *)f;
    free(b->c);
    free(b);
}

static int cbf_describe(const akv_filter *f, char *buf, size_t cap)
{
    const cbf *b = (const cbf *)f;
    return snprintf(buf, cap, "\"m\":%llu,\"k\":%u,\"saturations\":%llu", (unsigned long long)b->m, b->k,
                    (unsigned long long)b->saturations);
}

const akv_filter_kind akvi_kind_cbf = {
    .name = "cbf",
    .id = 31,
    .payload_version = 1,
    .flags = AKV_FK_DYNAMIC,
    .summary = "counting Bloom filter, 4-bit sticky-saturating counters, insert/remove",
    .create = cbf_create,
    .add = cbf_insert,
    .finish = cbf_finish,
    .may_contain = cbf_may_contain,
    .memory_bytes = cbf_memory,
    .save = cbf_save,
    .load = cbf_load,
    .destroy = cbf_destroy,
    .insert = cbf_insert,
    .remove = cbf_remove,
    .describe = cbf_describe,
    .stats = NULL,
    .fpr_theory = cbf_fpr_theory,
};
