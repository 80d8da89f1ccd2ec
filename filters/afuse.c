/*
 * afuse.c — kind `afuse` (id 8): a binary fuse filter (kind `fuse`,
 * filters/fuse.c) plus the verified list of fixed false positives that
 * kind `ablocked` keeps (filters/fplist.c). The fuse part gives fresh
 * absent keys a false-positive rate of 2^-f at ~1.13·f bits a key, where
 * a blocked Bloom filter needs ~1.5·log2(1/ε); the list fixes the absent
 * keys that keep coming back (docs/filters.md, "Binary fuse filter").
 *
 * may_contain(h) = fuse(h) && the list does not reject h. A value is
 * listed only when no stored key shares it, so no stored key is ever
 * answered "no" (filters/fplist.c has the proof, the CLOCK replacement,
 * the exact table, the lock-free queries and the pre-adaptation to the
 * negatives create() was given).
 *
 * Memory: as for ablocked, the budget bits_per_key · n pays for both
 * parts: the list's max(16, n/256) 32-bit cells (0.125 bits/key) first,
 * the fuse filter the rest but never less than 3/4 of the budget (a slot
 * of fewer than ~200 keys exceeds its budget by its one 64-byte bucket).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "fplist.h"
#include "fuse.h"
#include "util/codec.h"

extern const akv_filter_kind akvi_kind_afuse;

typedef struct afuse {
    akv_filter base;
    akv_filter *fuse; /* a `fuse` filter */
    akvi_fplist list;
} afuse;

static int af_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    double bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    double inner = bpk - akvi_fplist_bits_for(n) / (double)n;
    akv_filter_params q = *p;
    q.bits_per_key = inner < 0.75 * bpk ? 0.75 * bpk : inner;
    akv_filter *u = NULL;
    int rc = akvi_kind_fuse.create(&q, NULL, 0, &u);
    if (rc != AKV_OK)
        return rc;
    afuse *a = calloc(1, sizeof *a);
    if (!a || akvi_fplist_init(&a->list, akvi_fplist_buckets_for(n)) != AKV_OK) {
        free(a);
        akvi_kind_fuse.destroy(u);
        return AKV_ENOMEM;
    }
    a->base.kind = &akvi_kind_afuse;
    a->fuse = u;
    if (akvi_fplist_expect(&a->list, neg, n_neg) != AKV_OK) {
        akv_filter_destroy(&a->base);
        return AKV_ENOMEM;
    }
    *out = &a->base;
    return AKV_OK;
}

static int af_add(akv_filter *f, akv_hash h)
{
    afuse *a = (afuse *)f;
    int rc = akvi_kind_fuse.add(a->fuse, h);
    f->n_keys = a->fuse->n_keys;
    return rc == AKV_OK ? akvi_fplist_add_key(&a->list, h) : rc;
}

static int af_finish(akv_filter *f)
{
    afuse *a = (afuse *)f;
    int rc = akvi_kind_fuse.finish(a->fuse);
    if (rc == AKV_OK)
        akvi_fplist_preadapt(&a->list, akvi_kind_fuse.may_contain, a->fuse);
    return rc;
}

static bool af_may_contain(const akv_filter *f, akv_hash h)
{
    const afuse *a = (const afuse *)f;
    return akvi_kind_fuse.may_contain(a->fuse, h) && !akvi_fplist_rejects(&a->list, h);
}

static void af_prefetch(const akv_filter *f, akv_hash h)
{
    akvi_kind_fuse.prefetch(((const afuse *)f)->fuse, h);
}

static size_t af_memory(const akv_filter *f)
{
    const afuse *a = (const afuse *)f;
    return akvi_kind_fuse.memory_bytes(a->fuse) + akvi_fplist_memory(&a->list);
}

static int af_adapt(akv_filter *f, akv_hash y, akv_revmap *rm)
{
    afuse *a = (afuse *)f;
    if (!rm)
        return AKV_EINVAL;
    if (!af_may_contain(f, y))
        return AKV_NOTFOUND;
    return akvi_fplist_adapt(&a->list, y, rm);
}

/* Payload version 1: the list (filters/fplist.h: u64 buckets, u64 count,
 * u64 unfixable, u64 adaptations, u64 evictions, u64 preadapted, buckets ×
 * 16 × u32 cells), u16 fuse payload version, u64 fuse payload length, the
 * fuse payload. */
static int af_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    afuse *a = (afuse *)f;
    size_t ulen = 0;
    int rc = akvi_kind_fuse.save(a->fuse, NULL, &ulen);
    if (rc != AKV_OK)
        return rc;
    akvi_wbuf w = {buf, 0};
    akvi_fplist_save(&a->list, &w);
    akvi_w_u16(&w, akvi_kind_fuse.payload_version);
    akvi_w_u64(&w, ulen);
    if (buf) {
        size_t got = ulen;
        rc = akvi_kind_fuse.save(a->fuse, buf + w.len, &got);
        if (rc == AKV_OK && got != ulen)
            rc = AKV_ECORRUPT;
    }
    w.len += ulen;
    *len = w.len;
    return rc;
}

static int af_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1)
        return AKV_ENOTSUP;
    afuse *a = calloc(1, sizeof *a);
    if (!a)
        return AKV_ENOMEM;
    a->base.kind = &akvi_kind_afuse;
    akvi_rbuf r = {buf, len, 0, false};
    int rc = akvi_fplist_load(&a->list, &r, false);
    if (rc != AKV_OK) {
        free(a);
        return rc;
    }
    uint16_t uver = akvi_r_u16(&r);
    uint64_t ulen = akvi_r_u64(&r);
    rc = r.err || ulen != len - r.off ? AKV_ECORRUPT
                                      : akvi_kind_fuse.load(r.p + r.off, (size_t)ulen, uver, &a->fuse);
    if (rc == AKV_ENOTSUP)
        rc = AKV_ECORRUPT; /* an afuse v1 payload holds a fuse v1 or v2 payload */
    if (rc != AKV_OK) {
        akvi_fplist_free(&a->list);
        free(a);
        return rc;
    }
    a->base.n_keys = a->fuse->n_keys;
    *out = &a->base;
    return AKV_OK;
}

static void af_destroy(akv_filter *f)
{
    afuse *a = (afuse *)f;
    if (a->fuse)
        akvi_kind_fuse.destroy(a->fuse);
    akvi_fplist_free(&a->list);
    free(a);
}

static unsigned af_words(const akv_filter *f, akv_hash h)
{
    const afuse *a = (const afuse *)f;
    return akvi_kind_fuse.words_touched(a->fuse, h) + (akvi_kind_fuse.may_contain(a->fuse, h) ? 1 : 0);
}

static int af_describe(const akv_filter *f, char *buf, size_t cap)
{
    afuse *a = (afuse *)f;
    int n = akvi_fplist_describe(&a->list, buf, cap);
    if (n < 0)
        return n;
    size_t at = (size_t)n < cap ? (size_t)n : cap;
    int m = snprintf(cap > at ? buf + at : NULL, cap - at, ",\"fuse_bytes\":%llu,",
                     (unsigned long long)akvi_kind_fuse.memory_bytes(a->fuse));
    if (m < 0)
        return m;
    at = (size_t)(n + m) < cap ? (size_t)(n + m) : cap;
    int k = akvi_kind_fuse.describe(a->fuse, cap > at ? buf + at : NULL, cap - at);
    return k < 0 ? k : n + m + k;
}

static void af_stats(const akv_filter *f, akv_filter_stats *out)
{
    akvi_fplist_stats(&((afuse *)f)->list, out);
}

/* Before any adaptation: the fuse part's 2^-f (listed values only lower it). */
static double af_fpr(const akv_filter *f)
{
    return akvi_kind_fuse.fpr_theory(((const afuse *)f)->fuse);
}

const akv_filter_kind akvi_kind_afuse = {
    .name = "afuse",
    .id = 8,
    .payload_version = 1,
    .flags = AKV_FK_ADAPTIVE | AKV_FK_CONCURRENT,
    .summary = "binary fuse filter + a verified list of fixed false positives (adaptive)",
    .create = af_create,
    .add = af_add,
    .finish = af_finish,
    .may_contain = af_may_contain,
    .memory_bytes = af_memory,
    .save = af_save,
    .load = af_load,
    .destroy = af_destroy,
    .adapt = af_adapt,
    .words_touched = af_words,
    .describe = af_describe,
    .stats = af_stats,
    .fpr_theory = af_fpr,
    .prefetch = af_prefetch,
};
