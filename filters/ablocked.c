/*
 * ablocked.c — kind `ablocked` (id 6): a cache-line blocked Bloom filter
 * (kind `blocked`, filters/blocked.c) plus a verified list of the false
 * positives it was told about. An alternative to the AQF at small budgets,
 * where the AQF's 3.125 metadata bits a slot cost more fresh-key FPR than
 * a Bloom filter's 1.44 factor (docs/filters.md, "AQF or blocked + list").
 *
 * may_contain(h) = blocked(h) && top32(h.hi) is not listed.
 *
 * adapt(y) lists top32(y.hi) only after the reverse map showed that no
 * stored key has those 32 bits (scan(y.hi, 32) reports nothing), so no key
 * of the set can ever be answered "no": a listed value is the fingerprint
 * of absent keys only. If a stored key shares them the false positive is
 * counted as unfixable and left alone. The kind is static (no insert), so
 * no later key can join a listed fingerprint.
 *
 * Memory: the budget bits_per_key · n pays for both parts. The list gets
 * max(64, n/256) 32-bit cells (0.125 bits/key; up to 80 % of them hold
 * fixed false positives, 0.31 % of n), the Bloom filter the rest. A full
 * list makes adapt return AKV_EFULL (the engine then rebuilds the slot
 * larger). The list is open addressing with linear probing; cells are
 * written once (0 → value) with relaxed atomic stores under a mutex and
 * read with relaxed atomic loads, so queries run lock-free alongside an
 * adaptation and see each cell either empty or set, both safe.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "util/codec.h"

extern const akv_filter_kind akv_kind_blocked;
extern const akv_filter_kind akv_kind_ablocked;

#define LIST_MAX_FILL 0.8
#define LIST_MIN      64

typedef struct ablocked {
    akv_filter base;
    akv_filter *bloom; /* a `blocked` filter */
    uint32_t *cells;
    uint64_t ncells, count, unfixable, adaptations;
    pthread_mutex_t mu;
} ablocked;

static uint64_t list_cells_for(uint64_t n)
{
    uint64_t c = n / 256;
    return c < LIST_MIN ? LIST_MIN : c;
}

static inline uint32_t fp32(akv_hash h)
{
    return (uint32_t)(h.hi >> 32);
}

static inline uint64_t cell_of(const ablocked *a, uint32_t g)
{
    return akv_reduce(akv_mix64(g), a->ncells);
}

static bool listed(const ablocked *a, uint32_t g)
{
    if (g == 0)
        return false;
    for (uint64_t i = cell_of(a, g), t = 0; t < a->ncells; t++, i = i + 1 == a->ncells ? 0 : i + 1) {
        uint32_t v = __atomic_load_n(&a->cells[i], __ATOMIC_RELAXED);
        if (v == g)
            return true;
        if (v == 0)
            return false;
    }
    return false;
}

static ablocked *ab_alloc(akv_filter *bloom, uint64_t ncells)
{
    ablocked *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cells = calloc(ncells, sizeof *a->cells);
    if (!a->cells) {
        free(a);
        return NULL;
    }
    a->base.kind = &akv_kind_ablocked;
    a->bloom = bloom;
    a->ncells = ncells;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

static int ab_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    uint64_t ncells = list_cells_for(n);
    double bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    double inner = bpk - 32.0 * (double)ncells / (double)n;
    akv_filter_params q = *p;
    q.bits_per_key = inner < 1 ? 1 : inner;
    akv_filter *b = NULL;
    int rc = akv_kind_blocked.create(&q, neg, n_neg, &b);
    if (rc != AKV_OK)
        return rc;
    ablocked *a = ab_alloc(b, ncells);
    if (!a) {
        akv_kind_blocked.destroy(b);
        return AKV_ENOMEM;
    }
    *out = &a->base;
    return AKV_OK;
}

static int ab_add(akv_filter *f, akv_hash h)
{
    ablocked *a = (ablocked *)f;
    int rc = akv_kind_blocked.add(a->bloom, h);
    f->n_keys = a->bloom->n_keys;
    return rc;
}

static int ab_finish(akv_filter *f)
{
    return akv_kind_blocked.finish(((ablocked *)f)->bloom);
}

static bool ab_may_contain(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    return akv_kind_blocked.may_contain(a->bloom, h) && !listed(a, fp32(h));
}

static void ab_prefetch(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    if (akv_kind_blocked.prefetch)
        akv_kind_blocked.prefetch(a->bloom, h);
}

static size_t ab_memory(const akv_filter *f)
{
    const ablocked *a = (const ablocked *)f;
    return akv_kind_blocked.memory_bytes(a->bloom) + (size_t)a->ncells * sizeof *a->cells;
}

typedef struct verify {
    akv_hash y;
    bool same_hash, same_fp;
} verify;

static int verify_fn(void *arg, akv_hash h)
{
    verify *v = arg;
    if (fp32(h) == fp32(v->y)) {
        v->same_fp = true;
        if (h.hi == v->y.hi && h.lo == v->y.lo)
            v->same_hash = true;
    }
    return 0;
}

static int ab_adapt(akv_filter *f, akv_hash y, akv_revmap *rm)
{
    ablocked *a = (ablocked *)f;
    if (!rm)
        return AKV_EINVAL;
    if (!ab_may_contain(f, y))
        return AKV_NOTFOUND;
    verify v = {y, false, false};
    int rc = rm->scan(rm, y.hi, 32, verify_fn, &v);
    if (rc != AKV_OK)
        return rc < 0 ? rc : AKV_EIO;
    if (v.same_hash)
        return AKV_NOTFOUND; /* a stored key, not a false positive */
    uint32_t g = fp32(y);
    pthread_mutex_lock(&a->mu);
    if (v.same_fp || g == 0) {
        a->unfixable++;
        rc = AKV_NOTFOUND;
    } else if (listed(a, g)) {
        rc = AKV_NOTFOUND;
    } else if ((double)(a->count + 1) > LIST_MAX_FILL * (double)a->ncells) {
        rc = AKV_EFULL;
    } else {
        uint64_t i = cell_of(a, g);
        while (a->cells[i] != 0)
            i = i + 1 == a->ncells ? 0 : i + 1;
        __atomic_store_n(&a->cells[i], g, __ATOMIC_RELAXED);
        a->count++;
        a->adaptations++;
        rc = AKV_OK;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* Payload version 1: u64 ncells, u64 count, u64 unfixable, u64
 * adaptations, ncells × u32 cells, u16 blocked payload version, u64 blocked
 * payload length, the blocked payload. */
static int ab_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    ablocked *a = (ablocked *)f;
    size_t blen = 0;
    int rc = akv_kind_blocked.save(a->bloom, NULL, &blen);
    if (rc != AKV_OK)
        return rc;
    pthread_mutex_lock(&a->mu);
    akv_wbuf w = {buf, 0};
    akv_w_u64(&w, a->ncells);
    akv_w_u64(&w, a->count);
    akv_w_u64(&w, a->unfixable);
    akv_w_u64(&w, a->adaptations);
    for (uint64_t i = 0; i < a->ncells; i++)
        akv_w_u32(&w, buf ? a->cells[i] : 0);
    pthread_mutex_unlock(&a->mu);
    akv_w_u16(&w, akv_kind_blocked.payload_version);
    akv_w_u64(&w, blen);
    if (buf) {
        size_t got = blen;
        rc = akv_kind_blocked.save(a->bloom, buf + w.len, &got);
        if (rc == AKV_OK && got != blen)
            rc = AKV_ECORRUPT;
    }
    w.len += blen;
    *len = w.len;
    return rc;
}

static int ab_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1)
        return AKV_ENOTSUP;
    akv_rbuf r = {buf, len, 0, false};
    uint64_t ncells = akv_r_u64(&r), count = akv_r_u64(&r), unfix = akv_r_u64(&r), adapts = akv_r_u64(&r);
    /* bounded before any arithmetic: the cells must fit in what is left */
    if (r.err || ncells < LIST_MIN || ncells > (len - r.off) / 4 || count > ncells)
        return AKV_ECORRUPT;
    uint32_t *cells = malloc(ncells * sizeof *cells);
    if (!cells)
        return AKV_ENOMEM;
    uint64_t nz = 0;
    for (uint64_t i = 0; i < ncells; i++) {
        cells[i] = akv_r_u32(&r);
        nz += cells[i] != 0;
    }
    uint16_t bver = akv_r_u16(&r);
    uint64_t blen = akv_r_u64(&r);
    if (r.err || nz != count || (double)count > LIST_MAX_FILL * (double)ncells || blen != len - r.off) {
        free(cells);
        return AKV_ECORRUPT;
    }
    akv_filter *b = NULL;
    int rc = akv_kind_blocked.load(buf + r.off, (size_t)blen, bver, &b);
    if (rc != AKV_OK) {
        free(cells);
        return rc;
    }
    ablocked *a = calloc(1, sizeof *a);
    if (!a) {
        free(cells);
        akv_kind_blocked.destroy(b);
        return AKV_ENOMEM;
    }
    a->base.kind = &akv_kind_ablocked;
    a->base.n_keys = b->n_keys;
    a->bloom = b;
    a->cells = cells;
    a->ncells = ncells;
    a->count = count;
    a->unfixable = unfix;
    a->adaptations = adapts;
    pthread_mutex_init(&a->mu, NULL);
    /* every listed value must be reachable from its own cell */
    for (uint64_t i = 0; i < ncells; i++)
        if (cells[i] && !listed(a, cells[i])) {
            akv_filter_destroy(&a->base);
            return AKV_ECORRUPT;
        }
    *out = &a->base;
    return AKV_OK;
}

static void ab_destroy(akv_filter *f)
{
    ablocked *a = (ablocked *)f;
    if (a->bloom)
        akv_kind_blocked.destroy(a->bloom);
    free(a->cells);
    pthread_mutex_destroy(&a->mu);
    free(a);
}

static unsigned ab_words(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    unsigned w = akv_kind_blocked.words_touched ? akv_kind_blocked.words_touched(a->bloom, h) : 8;
    return w + (akv_kind_blocked.may_contain(a->bloom, h) ? 1 : 0);
}

static int ab_describe(const akv_filter *f, char *buf, size_t cap)
{
    ablocked *a = (ablocked *)f;
    pthread_mutex_lock(&a->mu);
    int n = snprintf(buf, cap, "\"list_cells\":%llu,\"listed\":%llu,\"unfixable\":%llu,\"bloom_bytes\":%llu",
                     (unsigned long long)a->ncells, (unsigned long long)a->count,
                     (unsigned long long)a->unfixable,
                     (unsigned long long)akv_kind_blocked.memory_bytes(a->bloom));
    pthread_mutex_unlock(&a->mu);
    return n;
}

static void ab_stats(const akv_filter *f, akv_filter_stats *out)
{
    ablocked *a = (ablocked *)f;
    pthread_mutex_lock(&a->mu);
    out->adaptations = a->adaptations;
    out->adapt_bits = a->count * 32;
    pthread_mutex_unlock(&a->mu);
}

/* Before any adaptation: the Bloom part's FPR (listed values only lower it). */
static double ab_fpr(const akv_filter *f)
{
    const ablocked *a = (const ablocked *)f;
    return akv_kind_blocked.fpr_theory ? akv_kind_blocked.fpr_theory(a->bloom) : NAN;
}

const akv_filter_kind akv_kind_ablocked = {
    .name = "ablocked",
    .id = 6,
    .payload_version = 1,
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
