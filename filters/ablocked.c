/*
 * ablocked.c — kind `ablocked` (id 6): a cache-line blocked Bloom filter
 * (kind `blocked`, filters/blocked.c) plus a verified list of the false
 * positives it was told about. An alternative to the AQF at small budgets,
 * where the AQF's 3.125 metadata bits a slot cost more fresh-key FPR than
 * a Bloom filter's 1.44 factor (docs/filters.md, "AQF or blocked + list").
 *
 * may_contain(h) = blocked(h) && top31(h.hi) is not listed.
 *
 * A value is listed only after the stored keys were shown to have no key
 * with those 31 bits: by the reverse map when adapting (scan(y.hi, 31)
 * reports nothing), or by the build's own keys when pre-adapting to the
 * negatives create() was given. So no key of the set can ever be answered
 * "no": a listed value is the fingerprint of absent keys only. If a stored
 * key shares them, the absent key's whole 128-bit hash goes into a small
 * exact table instead (the scan showed no stored key has that hash), up to
 * EXACT_MAX of them; past that the false positive is counted as unfixable
 * and left alone. Without the table an attacker that keeps what stays slow
 * ends up replaying exactly those keys (docs/filters.md). The kind is
 * static (no insert), so no later key can join a listed fingerprint or an
 * exact hash.
 *
 * Memory: the budget bits_per_key · n pays for both parts. The list gets
 * max(16, n/256) 32-bit cells rounded up to whole buckets of 16 (one cache
 * line each, 0.125 bits/key), the Bloom filter the rest, but never less
 * than 3/4 of the budget (below ~200 keys a slot exceeds its budget by its
 * one bucket rather than starve its Bloom filter). A cell holds a
 * 31-bit value and a reference bit, which a query that the value answers
 * "no" sets. The list never grows: a value lives in the bucket its hash
 * names, and an adaptation whose bucket is full replaces a value by CLOCK:
 * from a random cell on, referenced values lose their bit and the first
 * one without is replaced. So every false positive is fixed when it
 * happens, and the values that keep saving probes stay while one-off
 * false positives take turns in the rest of the bucket. Forgetting
 * a fixed false positive only lets it be a false positive again, never a
 * false negative, and a hot one is fixed again at its next probe; the slot
 * stays within its budget however long the stream of new false positives.
 * Cells are written under a mutex with relaxed atomic stores and read with
 * relaxed atomic loads, so queries run lock-free alongside an adaptation
 * and see each cell as its old or its new value, both safe; a query sets a
 * reference bit with an atomic OR, which never changes a value.
 *
 * Pre-adaptation (the engine passes the miss log's negatives in the SST's
 * range to create): add() keeps the keys' 31-bit fingerprints while
 * negatives are pending, and finish() lists each negative, heaviest first,
 * that the Bloom filter passes and no key's fingerprint equals, into a free
 * cell of its bucket, referenced (the miss log saw it often). A
 * compaction's output slot thus starts out adapted to the negatives its
 * inputs were fixed for, as far as the miss log saw them.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "util/codec.h"
#include "util/grow.h"
#include "util/order.h"

extern const akv_filter_kind akvi_kind_blocked;
extern const akv_filter_kind akvi_kind_ablocked;

#define BUCKET      16 /* cells of a bucket: 64 bytes, one cache line */
#define LIST_MIN    16 /* cells: one bucket */
#define V1_LIST_MIN 64 /* what version 1 payloads hold at least */
/* Absent keys whose 31-bit value a stored key shares, remembered by their
 * whole hash. In memory only (not saved: after a reload they are false
 * positives again, never false negatives). */
#define EXACT_MAX 16

typedef struct ablocked {
    akv_filter base;
    akv_filter *bloom; /* a `blocked` filter */
    uint32_t *cells;   /* nbuckets × BUCKET, cache-line aligned */
    uint64_t nbuckets, count, unfixable, adaptations, evictions, preadapted;
    uint64_t tick; /* in memory only: where CLOCK starts */
    /* The exact table: allocated at its first entry; entries below n_exact
     * are complete (each written before n_exact is raised, with release;
     * queries load n_exact with acquire and never see a half-written one). */
    akv_hash *exact;
    unsigned n_exact;
    pthread_mutex_t mu;
    /* build only: the negatives given to create and the keys' fingerprints */
    akv_negative *neg;
    size_t n_neg;
    uint32_t *kfp;
    size_t n_kfp, cap_kfp;
} ablocked;

static uint64_t buckets_for(uint64_t n)
{
    uint64_t c = n / 256;
    if (c < LIST_MIN)
        c = LIST_MIN;
    return (c + BUCKET - 1) / BUCKET;
}

#define FP_BITS 31 /* a listed value: the top 31 bits of h.hi; never 0 */
#define REF     1u /* a cell is value << 1 | REF */

static inline uint32_t fp31(akv_hash h)
{
    return (uint32_t)(h.hi >> (64 - FP_BITS));
}

static inline uint32_t *bucket_of(const ablocked *a, uint32_t g)
{
    return a->cells + akv_reduce(akv_mix64(g), a->nbuckets) * BUCKET;
}

/* Is g listed? A query (touch) marks the value referenced. */
static bool listed(const ablocked *a, uint32_t g, bool touch)
{
    if (g == 0)
        return false;
    uint32_t *b = bucket_of(a, g);
    for (int i = 0; i < BUCKET; i++) {
        uint32_t v = __atomic_load_n(&b[i], __ATOMIC_RELAXED);
        if (v >> 1 == g) {
            if (touch && !(v & REF))
                __atomic_fetch_or(&b[i], REF, __ATOMIC_RELAXED);
            return true;
        }
    }
    return false;
}

/* Under a->mu: g into a free cell of its bucket; false when it is full. */
static bool list_free_cell(ablocked *a, uint32_t g, uint32_t ref)
{
    uint32_t *b = bucket_of(a, g);
    for (int i = 0; i < BUCKET; i++)
        if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == 0) {
            __atomic_store_n(&b[i], g << 1 | ref, __ATOMIC_RELAXED);
            a->count++;
            return true;
        }
    return false;
}

/* Under a->mu, g's bucket full: CLOCK from cell `from`, clearing reference
 * bits until a cell without one, which g replaces (at most 17 steps). */
static void list_replace(ablocked *a, uint32_t g, unsigned from)
{
    uint32_t *b = bucket_of(a, g);
    for (unsigned i = from;; i = (i + 1) % BUCKET) {
        uint32_t v = __atomic_load_n(&b[i], __ATOMIC_RELAXED);
        if (!(v & REF)) {
            __atomic_store_n(&b[i], g << 1, __ATOMIC_RELAXED);
            return;
        }
        __atomic_fetch_and(&b[i], ~REF, __ATOMIC_RELAXED);
    }
}

static uint32_t *cells_alloc(uint64_t nbuckets)
{
    uint32_t *c = aligned_alloc(64, (size_t)nbuckets * BUCKET * sizeof *c);
    if (c)
        memset(c, 0, (size_t)nbuckets * BUCKET * sizeof *c);
    return c;
}

static ablocked *ab_alloc(akv_filter *bloom, uint64_t nbuckets)
{
    ablocked *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->cells = cells_alloc(nbuckets);
    if (!a->cells) {
        free(a);
        return NULL;
    }
    a->base.kind = &akvi_kind_ablocked;
    a->base.n_keys = bloom->n_keys;
    a->bloom = bloom;
    a->nbuckets = nbuckets;
    pthread_mutex_init(&a->mu, NULL);
    return a;
}

static int ab_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    uint64_t n = p->expected_keys ? p->expected_keys : 1;
    uint64_t nbuckets = buckets_for(n);
    double bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    /* The Bloom part keeps at least 3/4 of the budget: a slot of fewer
     * than ~200 keys, whose one bucket would cost more, exceeds its budget
     * by that bucket (64 bytes) rather than lose its fresh-key FPR. */
    double inner = bpk - 32.0 * (double)(nbuckets * BUCKET) / (double)n;
    akv_filter_params q = *p;
    q.bits_per_key = inner < 0.75 * bpk ? 0.75 * bpk : inner;
    akv_filter *b = NULL;
    int rc = akvi_kind_blocked.create(&q, NULL, 0, &b);
    if (rc != AKV_OK)
        return rc;
    ablocked *a = ab_alloc(b, nbuckets);
    if (a && n_neg) {
        a->neg = malloc(n_neg * sizeof *neg);
        if (a->neg) {
            memcpy(a->neg, neg, n_neg * sizeof *neg);
            a->n_neg = n_neg;
        } else {
            free(a->cells);
            pthread_mutex_destroy(&a->mu);
            free(a);
            a = NULL;
        }
    }
    if (!a) {
        akvi_kind_blocked.destroy(b);
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
    if (rc == AKV_OK && a->n_neg) {
        uint32_t *v = akvi_grow(a->kfp, &a->cap_kfp, a->n_kfp + 1, sizeof *v, 1024);
        if (!v)
            return AKV_ENOMEM;
        a->kfp = v;
        a->kfp[a->n_kfp++] = fp31(h);
    }
    return rc;
}

static int u32_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

static int ab_finish(akv_filter *f)
{
    ablocked *a = (ablocked *)f;
    int rc = akvi_kind_blocked.finish(a->bloom);
    if (rc == AKV_OK && a->n_neg) {
        akvi_sort(a->kfp, a->n_kfp, sizeof *a->kfp, u32_cmp);
        pthread_mutex_lock(&a->mu);
        for (size_t i = 0; i < a->n_neg; i++) {
            uint32_t g = fp31(a->neg[i].h);
            if (g == 0 || !akvi_kind_blocked.may_contain(a->bloom, a->neg[i].h) || listed(a, g, false))
                continue;
            if (a->n_kfp && bsearch(&g, a->kfp, a->n_kfp, sizeof g, u32_cmp))
                continue; /* a key has these 31 bits: never listed */
            a->preadapted += list_free_cell(a, g, REF);
        }
        pthread_mutex_unlock(&a->mu);
    }
    free(a->neg);
    free(a->kfp);
    a->neg = NULL;
    a->kfp = NULL;
    a->n_neg = a->n_kfp = a->cap_kfp = 0;
    return rc;
}

/* h is one of the exact table's absent keys. */
static bool exact_absent(const ablocked *a, akv_hash h)
{
    unsigned n = __atomic_load_n(&a->n_exact, __ATOMIC_ACQUIRE);
    const akv_hash *e = n ? __atomic_load_n(&a->exact, __ATOMIC_ACQUIRE) : NULL;
    for (unsigned i = 0; i < n; i++)
        if (e[i].hi == h.hi && e[i].lo == h.lo)
            return true;
    return false;
}

static bool ab_may_contain(const akv_filter *f, akv_hash h)
{
    const ablocked *a = (const ablocked *)f;
    return akvi_kind_blocked.may_contain(a->bloom, h) && !listed(a, fp31(h), true) && !exact_absent(a, h);
}

/* Under a->mu: y into the exact table; false when it is full (or out of
 * memory). */
static bool exact_add(ablocked *a, akv_hash y)
{
    if (a->n_exact == EXACT_MAX)
        return false;
    akv_hash *e = a->exact;
    if (!e) {
        e = calloc(EXACT_MAX, sizeof *e);
        if (!e)
            return false;
        __atomic_store_n(&a->exact, e, __ATOMIC_RELEASE);
    }
    e[a->n_exact] = y;
    __atomic_store_n(&a->n_exact, a->n_exact + 1, __ATOMIC_RELEASE);
    return true;
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
    size_t exact = __atomic_load_n(&a->exact, __ATOMIC_ACQUIRE) ? EXACT_MAX * sizeof(akv_hash) : 0;
    return akvi_kind_blocked.memory_bytes(a->bloom) + (size_t)(a->nbuckets * BUCKET) * sizeof *a->cells +
           exact;
}

typedef struct verify {
    akv_hash y;
    bool same_hash, same_fp;
} verify;

static int verify_fn(void *arg, akv_hash h)
{
    verify *v = arg;
    if (fp31(h) == fp31(v->y)) {
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
    int rc = rm->scan(rm, y.hi, FP_BITS, verify_fn, &v);
    if (rc != AKV_OK)
        return rc < 0 ? rc : AKV_EIO;
    if (v.same_hash)
        return AKV_NOTFOUND; /* a stored key, not a false positive */
    uint32_t g = fp31(y);
    pthread_mutex_lock(&a->mu);
    if (v.same_fp || g == 0) {
        /* Not a stored key (same_hash was checked): its whole hash is safe
         * to answer "no" for. */
        if (exact_absent(a, y)) {
            rc = AKV_NOTFOUND;
        } else if (exact_add(a, y)) {
            a->adaptations++;
            rc = AKV_OK;
        } else {
            a->unfixable++;
            rc = AKV_NOTFOUND;
        }
    } else if (listed(a, g, false)) {
        rc = AKV_NOTFOUND;
    } else {
        if (!list_free_cell(a, g, 0)) {
            /* Full bucket: g replaces an unreferenced value (CLOCK from a
             * cell chosen at random). */
            list_replace(a, g, (unsigned)(akv_mix64(++a->tick ^ y.lo) % BUCKET));
            a->evictions++;
        }
        a->adaptations++;
        rc = AKV_OK;
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* Payload version 2: u64 buckets, u64 count, u64 unfixable, u64
 * adaptations, u64 evictions, u64 preadapted, buckets × 16 × u32 cells
 * (value << 1 | reference bit), u16 blocked payload version, u64 blocked
 * payload length, the blocked payload. Version 1 (read only): u64 cells,
 * u64 count, u64 unfixable, u64 adaptations, the 32-bit values of a
 * linear-probing table, then the blocked part as in version 2. Its values
 * were checked against 32 bits of the keys, not the 31 a value covers now,
 * so they are dropped on load: the slot starts with an empty list (a
 * forgotten false positive, never a false negative). */
static int ab_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    ablocked *a = (ablocked *)f;
    size_t blen = 0;
    int rc = akvi_kind_blocked.save(a->bloom, NULL, &blen);
    if (rc != AKV_OK)
        return rc;
    uint64_t ncells = a->nbuckets * BUCKET;
    pthread_mutex_lock(&a->mu);
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, a->nbuckets);
    akvi_w_u64(&w, a->count);
    akvi_w_u64(&w, a->unfixable);
    akvi_w_u64(&w, a->adaptations);
    akvi_w_u64(&w, a->evictions);
    akvi_w_u64(&w, a->preadapted);
    for (uint64_t i = 0; i < ncells; i++)
        akvi_w_u32(&w, buf ? __atomic_load_n(&a->cells[i], __ATOMIC_RELAXED) : 0);
    pthread_mutex_unlock(&a->mu);
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

/* The blocked part that ends both payload versions. */
static int load_bloom(akvi_rbuf *r, size_t len, akv_filter **b)
{
    uint16_t bver = akvi_r_u16(r);
    uint64_t blen = akvi_r_u64(r);
    if (r->err || blen != len - r->off)
        return AKV_ECORRUPT;
    return akvi_kind_blocked.load(r->p + r->off, (size_t)blen, bver, b);
}

static int ab_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1 && ver != 2)
        return AKV_ENOTSUP;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t h0 = akvi_r_u64(&r), count = akvi_r_u64(&r), unfix = akvi_r_u64(&r), adapts = akvi_r_u64(&r);
    uint64_t evict = ver == 2 ? akvi_r_u64(&r) : 0, pre = ver == 2 ? akvi_r_u64(&r) : 0;
    /* bounded before any arithmetic: the cells must fit in what is left */
    uint64_t left = r.err ? 0 : (len - r.off) / 4, ncells = 0;
    if (ver == 2 && h0 >= 1 && h0 <= left / BUCKET)
        ncells = h0 * BUCKET;
    else if (ver == 1 && h0 >= V1_LIST_MIN && h0 <= left)
        ncells = h0;
    if (r.err || !ncells || count > ncells)
        return AKV_ECORRUPT;
    const uint8_t *cells_at = buf + r.off;
    r.off += ncells * 4;
    akv_filter *b = NULL;
    int rc = load_bloom(&r, len, &b);
    if (rc != AKV_OK)
        return rc;
    /* version 1 kept max(64, n/256) cells: as many, in whole buckets */
    ablocked *a = ab_alloc(b, ver == 2 ? h0 : (h0 + BUCKET - 1) / BUCKET);
    if (!a) {
        akvi_kind_blocked.destroy(b);
        return AKV_ENOMEM;
    }
    a->unfixable = unfix;
    a->adaptations = adapts;
    a->evictions = evict;
    a->preadapted = pre;
    uint64_t nz = 0;
    bool bad = false;
    akvi_rbuf c = {cells_at, ncells * 4, 0, false};
    for (uint64_t i = 0; i < ncells; i++) {
        uint32_t g = akvi_r_u32(&c);
        if (!g)
            continue;
        nz++;
        if (ver == 1)
            continue;
        if (g >> 1 == 0 || bucket_of(a, g >> 1) != a->cells + (i / BUCKET) * BUCKET || listed(a, g >> 1, false)) {
            bad = true; /* no value, outside its own bucket, or twice */
        } else {
            a->cells[i] = g;
            a->count++;
        }
    }
    if (bad || nz != count) {
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
        akvi_kind_blocked.destroy(a->bloom);
    free(a->cells);
    free(a->exact);
    free(a->neg);
    free(a->kfp);
    pthread_mutex_destroy(&a->mu);
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
    pthread_mutex_lock(&a->mu);
    int n = snprintf(buf, cap,
                     "\"list_cells\":%llu,\"listed\":%llu,\"preadapted\":%llu,\"evictions\":%llu,"
                     "\"exact\":%u,\"unfixable\":%llu,\"bloom_bytes\":%llu",
                     (unsigned long long)(a->nbuckets * BUCKET), (unsigned long long)a->count,
                     (unsigned long long)a->preadapted, (unsigned long long)a->evictions, a->n_exact,
                     (unsigned long long)a->unfixable,
                     (unsigned long long)akvi_kind_blocked.memory_bytes(a->bloom));
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
