/*
 * ablocked.c — kind `ablocked` (id 6): a cache-line blocked Bloom filter
 * (kind `blocked`, filters/blocked.c) plus a verified list of the false
 * positives it was told about. An alternative to the AQF at small budgets,
 * where the AQF's 3.125 metadata bits a slot cost more fresh-key FPR than
 * a Bloom filter's 1.44 factor (docs/filters.md, "AQF or blocked + list").
 *
 * may_contain(h) = blocked(h) && the list does not reject h. The list,
 * its proof that no stored key is ever rejected, its CLOCK replacement,
 * exact table, lock-free queries and pre-adaptation to the negatives
 * create() was given are filters/fplist.c's, shared with kind `afuse`.
 *
 * Memory: the budget bits_per_key · n pays for both parts. The list gets
 * max(16, n/256) 32-bit cells in whole buckets of 16 (0.125 bits/key),
 * the Bloom filter the rest, but never less than 3/4 of the budget (below
 * ~200 keys a slot exceeds its budget by its one bucket rather than
 * starve its Bloom filter).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "adaptkv/filter.h"
#include "fplist.h"
#include "util/codec.h"

extern const akv_filter_kind akvi_kind_blocked;
extern const akv_filter_kind akvi_kind_ablocked;

typedef struct ablocked {
    akv_filter base;
    akv_filter *bloom; /* a `blocked` filter */
    akvi_fplist list;
} ablocked;

static int ab_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    double bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    /* The Bloom part keeps at least 3/4 of the budget: a slot of fewer
     * than ~200 keys, whose one bucket would cost more, exceeds its budget
     * by that bucket (64 bytes) rather than lose its fresh-key FPR. */
    double inner = bpk - akvi_fplist_bits_for(n) / (double)n;
    akv_filter_params q = *p;
    q.bits_per_key = inner < 0.75 * bpk ? 0.75 * bpk : inner;
    akv_filter *b = NULL;
    int rc = akvi_kind_blocked.create(&q, NULL, 0, &b);
    if (rc != AKV_OK)
        return rc;
    ablocked *a = calloc(1, sizeof *a);
    if (!a || akvi_fplist_init(&a->list, akvi_fplist_buckets_for(n)) != AKV_OK) {
        free(a);
        akvi_kind_blocked.destroy(b);
        return AKV_ENOMEM;
    }
    a->base.kind = &akvi_kind_ablocked;
    a->bloom = b;
    if (akvi_fplist_expect(&a->list, neg, n_neg) != AKV_OK) {
        akv_filter_destroy(&a->base);
        return AKV_ENOMEM;
    }
    *out = &a->base;
    return AKV_OK;
}

static int ab_add(akv_filter *f, akv_hash h)
{
    ablocked *a = (ablocked *)f;
    int rc = akvi_kind_blocked.add(a->bloom, h);
    f->n_keys = a->bloom->n_keys;
    return rc == AKV_OK ? akvi_fplist_add_key(&a->list, h) : rc;
}

static int ab_finish(akv_filter *f)
{
    ablocked *a = (ablocked *)f;
    int rc = akvi_kind_blocked.finish(a->bloom);
    if (rc == AKV_OK)
        akvi_fplist_preadapt(&a->list, akvi_kind_blocked.may_contain, a->bloom);
    return rc;
}

static bool ab_may_contain(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    return akvi_kind_blocked.may_contain(a->bloom, h) && !akvi_fplist_rejects(&a->list, h);
}

static void ab_prefetch(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    if (akvi_kind_blocked.prefetch)
        akvi_kind_blocked.prefetch(a->bloom, h);
}

static size_t ab_memory(const akv_filter *f)
{
    const ablocked *a = (const ablocked *)f;
    return akvi_kind_blocked.memory_bytes(a->bloom) + akvi_fplist_memory(&a->list);
}

static int ab_adapt(akv_filter *f, akv_hash y, akv_revmap *rm)
{
    ablocked *a = (ablocked *)f;
    if (!rm)
        return AKV_EINVAL;
    if (!ab_may_contain(f, y))
        return AKV_NOTFOUND;
    return akvi_fplist_adapt(&a->list, y, rm);
}

/* Payload version 2: the list (filters/fplist.h: u64 buckets, u64 count,
 * u64 unfixable, u64 adaptations, u64 evictions, u64 preadapted, buckets ×
 * 16 × u32 cells), u16 blocked payload version, u64 blocked payload
 * length, the blocked payload. Version 1 (read only): u64 cells, u64
 * count, u64 unfixable, u64 adaptations, the 32-bit values of a
 * linear-probing table (dropped on load: the list starts empty), then the
 * blocked part as in version 2. */
static int ab_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    ablocked *a = (ablocked *)f;
    size_t blen = 0;
    int rc = akvi_kind_blocked.save(a->bloom, NULL, &blen);
    if (rc != AKV_OK)
        return rc;
    akvi_wbuf w = {buf, 0};
    akvi_fplist_save(&a->list, &w);
    akvi_w_u16(&w, akvi_kind_blocked.payload_version);
    akvi_w_u64(&w, blen);
    if (buf) {
        size_t got = blen;
        rc = akvi_kind_blocked.save(a->bloom, buf + w.len, &got);
        if (rc == AKV_OK && got != blen)
            rc = AKV_ECORRUPT;
    }
    w.len += blen;
    *len = w.len;
    return rc;
}

static int ab_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1 && ver != 2)
        return AKV_ENOTSUP;
    ablocked *a = calloc(1, sizeof *a);
    if (!a)
        return AKV_ENOMEM;
    a->base.kind = &akvi_kind_ablocked;
    akvi_rbuf r = {buf, len, 0, false};
    int rc = akvi_fplist_load(&a->list, &r, ver == 1);
    if (rc != AKV_OK) {
        free(a);
        return rc;
    }
    uint16_t bver = akvi_r_u16(&r);
    uint64_t blen = akvi_r_u64(&r);
    rc = r.err || blen != len - r.off ? AKV_ECORRUPT
                                      : akvi_kind_blocked.load(r.p + r.off, (size_t)blen, bver, &a->bloom);
    if (rc != AKV_OK) {
        akvi_fplist_free(&a->list);
        free(a);
        return rc;
    }
    a->base.n_keys = a->bloom->n_keys;
    *out = &a->base;
    return AKV_OK;
}

static void ab_destroy(akv_filter *f)
{
    ablocked *a = (ablocked *)f;
    if (a->bloom)
        akvi_kind_blocked.destroy(a->bloom);
    akvi_fplist_free(&a->list);
    free(a);
}

static unsigned ab_words(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    unsigned w = akvi_kind_blocked.words_touched ? akvi_kind_blocked.words_touched(a->bloom, h) : 8;
    return w + (akvi_kind_blocked.may_contain(a->bloom, h) ? 1 : 0);
}

static int ab_describe(const akv_filter *f, char *buf, size_t cap)
{
    ablocked *a = (ablocked *)f;
    int n = akvi_fplist_describe(&a->list, buf, cap);
    if (n < 0)
        return n;
    int m = snprintf((size_t)n < cap ? buf + n : NULL, (size_t)n < cap ? cap - (size_t)n : 0,
                     ",\"bloom_bytes\":%llu", (unsigned long long)akvi_kind_blocked.memory_bytes(a->bloom));
    return m < 0 ? m : n + m;
}

static void ab_stats(const akv_filter *f, akv_filter_stats *out)
{
    akvi_fplist_stats(&((ablocked *)f)->list, out);
}

/* Before any adaptation: the Bloom part's FPR (listed values only lower it). */
static double ab_fpr(const akv_filter *f)
{
    const ablocked *a = (const ablocked *)f;
    return akvi_kind_blocked.fpr_theory ? akvi_kind_blocked.fpr_theory(a->bloom) : NAN;
}

const akv_filter_kind akvi_kind_ablocked = {
    .name = "ablocked",
    .id = 6,
    .payload_version = 2,
    .flags = AKV_FK_ADAPTIVE | AKV_FK_CONCURRENT,
    .summary = "blocked Bloom filter + a verified list of fixed false positives (adaptive)",
    .create = ab_create,
    .add = ab_add,
    .finish = ab_finish,
    .may_contain = ab_may_contain,
    .memory_bytes = ab_memory,
    .save = ab_save,
    .load = ab_load,
    .destroy = ab_destroy,
    .adapt = ab_adapt,
    .words_touched = ab_words,
    .describe = ab_describe,
    .stats = ab_stats,
    .fpr_theory = ab_fpr,
    .prefetch = ab_prefetch,
};
