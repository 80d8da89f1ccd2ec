/*
 * fplist.c — the verified list of fixed false positives that kinds
 * `ablocked` (filters/ablocked.c) and `afuse` (filters/afuse.c) put in
 * front of a static filter: may_contain(h) = inner(h) && !rejects(h).
 *
 * A value is listed only after the stored keys were shown to have no key
 * with those 31 bits (the top 31 of h.hi): by the reverse map when adapting
 * (scan(y.hi, 31) reports nothing), or by the build's own keys when
 * pre-adapting to the negatives create() was given. So no key of the set
 * can ever be answered "no": a listed value is the fingerprint of absent
 * keys only. If a stored key shares them, the absent key's whole 128-bit
 * hash goes into a small exact table instead (the scan showed no stored
 * key has that hash), up to EXACT_MAX of them; past that the false
 * positive is counted as unfixable and left alone. Without the table an
 * attacker that keeps what stays slow ends up replaying exactly those keys
 * (docs/filters.md). The kinds using the list are static (no insert), so
 * no later key can join a listed fingerprint or an exact hash.
 *
 * Memory: max(16, n/256) 32-bit cells rounded up to whole buckets of 16
 * (one cache line each, 0.125 bits/key), taken out of the kind's budget.
 * A cell holds a 31-bit value and a reference bit, which a query that the
 * value answers "no" sets. The list never grows: a value lives in the
 * bucket its hash names, and an adaptation whose bucket is full replaces
 * a value by CLOCK: from a random cell on, referenced values lose their
 * bit and the first one without is replaced. So every false positive is
 * fixed when it happens, and the values that keep saving probes stay
 * while one-off false positives take turns in the rest of the bucket.
 * Forgetting a fixed false positive only lets it be a false positive
 * again, never a false negative, and a hot one is fixed again at its next
 * probe; the slot stays within its budget however long the stream of new
 * false positives. Cells are written under a mutex with relaxed atomic
 * stores and read with relaxed atomic loads, so queries run lock-free
 * alongside an adaptation and see each cell as its old or its new value,
 * both safe; a query sets a reference bit with an atomic OR, which never
 * changes a value.
 *
 * Pre-adaptation (the engine passes the miss log's negatives in the SST's
 * range to create): the keys' 31-bit fingerprints are kept while
 * negatives are pending, and at finish each negative, heaviest first,
 * that the inner filter passes and no key's fingerprint equals goes into
 * a free cell of its bucket, referenced (the miss log saw it often). A
 * compaction's output slot thus starts out adapted to the negatives its
 * inputs were fixed for, as far as the miss log saw them.
 */
#include "fplist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/order.h"

#define BUCKET      AKVI_FPLIST_BUCKET
#define LIST_MIN    16 /* cells: one bucket */
#define V1_LIST_MIN 64 /* what ablocked's version-1 payloads hold at least */
/* Absent keys whose 31-bit value a stored key shares, remembered by their
 * whole hash. In memory only (not saved: after a reload they are false
 * positives again, never false negatives). */
#define EXACT_MAX 16
#define FP_BITS   31 /* a listed value: the top 31 bits of h.hi; never 0 */
#define REF       1u /* a cell is value << 1 | REF */

uint64_t akvi_fplist_buckets_for(uint64_t n)
{
    uint64_t c = n / 256;
    if (c < LIST_MIN)
        c = LIST_MIN;
    return (c + BUCKET - 1) / BUCKET;
}

double akvi_fplist_bits_for(uint64_t n)
{
    return 32.0 * (double)(akvi_fplist_buckets_for(n) * BUCKET);
}

static inline uint32_t fp31(akv_hash h)
{
    return (uint32_t)(h.hi >> (64 - FP_BITS));
}

static inline uint32_t *bucket_of(const akvi_fplist *l, uint32_t g)
{
    return l->cells + akv_reduce(akv_mix64(g), l->nbuckets) * BUCKET;
}

/* Is g listed? A query (touch) marks the value referenced. */
static bool listed(const akvi_fplist *l, uint32_t g, bool touch)
{
    if (g == 0)
        return false;
    uint32_t *b = bucket_of(l, g);
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

/* Under l->mu: g into a free cell of its bucket; false when it is full. */
static bool list_free_cell(akvi_fplist *l, uint32_t g, uint32_t ref)
{
    uint32_t *b = bucket_of(l, g);
    for (int i = 0; i < BUCKET; i++)
        if (__atomic_load_n(&b[i], __ATOMIC_RELAXED) == 0) {
            __atomic_store_n(&b[i], g << 1 | ref, __ATOMIC_RELAXED);
            l->count++;
            return true;
        }
    return false;
}

/* Under l->mu, g's bucket full: CLOCK from cell `from`, clearing reference
 * bits until a cell without one, which g replaces (at most 17 steps). */
static void list_replace(akvi_fplist *l, uint32_t g, unsigned from)
{
    uint32_t *b = bucket_of(l, g);
    for (unsigned i = from;; i = (i + 1) % BUCKET) {
        uint32_t v = __atomic_load_n(&b[i], __ATOMIC_RELAXED);
        if (!(v & REF)) {
            __atomic_store_n(&b[i], g << 1, __ATOMIC_RELAXED);
            return;
        }
        __atomic_fetch_and(&b[i], ~REF, __ATOMIC_RELAXED);
    }
}

int akvi_fplist_init(akvi_fplist *l, uint64_t nbuckets)
{
    memset(l, 0, sizeof *l);
    l->cells = aligned_alloc(64, (size_t)nbuckets * BUCKET * sizeof *l->cells);
    if (!l->cells)
        return AKV_ENOMEM;
    memset(l->cells, 0, (size_t)nbuckets * BUCKET * sizeof *l->cells);
    l->nbuckets = nbuckets;
    pthread_mutex_init(&l->mu, NULL);
    return AKV_OK;
}

void akvi_fplist_free(akvi_fplist *l)
{
    if (!l->cells)
        return;
    free(l->cells);
    free(l->exact);
    free(l->neg);
    free(l->kfp);
    pthread_mutex_destroy(&l->mu);
    memset(l, 0, sizeof *l);
}

int akvi_fplist_expect(akvi_fplist *l, const akv_negative *neg, size_t n_neg)
{
    if (!n_neg)
        return AKV_OK;
    l->neg = malloc(n_neg * sizeof *neg);
    if (!l->neg)
        return AKV_ENOMEM;
    memcpy(l->neg, neg, n_neg * sizeof *neg);
    l->n_neg = n_neg;
    return AKV_OK;
}

int akvi_fplist_add_key(akvi_fplist *l, akv_hash h)
{
    if (!l->n_neg)
        return AKV_OK;
    uint32_t *v = akvi_grow(l->kfp, &l->cap_kfp, l->n_kfp + 1, sizeof *v, 1024);
    if (!v)
        return AKV_ENOMEM;
    l->kfp = v;
    l->kfp[l->n_kfp++] = fp31(h);
    return AKV_OK;
}

static int u32_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

void akvi_fplist_preadapt(akvi_fplist *l, bool (*passes)(const akv_filter *, akv_hash),
                          const akv_filter *inner)
{
    if (l->n_neg) {
        akvi_sort(l->kfp, l->n_kfp, sizeof *l->kfp, u32_cmp);
        pthread_mutex_lock(&l->mu);
        for (size_t i = 0; i < l->n_neg; i++) {
            uint32_t g = fp31(l->neg[i].h);
            if (g == 0 || !passes(inner, l->neg[i].h) || listed(l, g, false))
                continue;
            if (l->n_kfp && bsearch(&g, l->kfp, l->n_kfp, sizeof g, u32_cmp))
                continue; /* a key has these 31 bits: never listed */
            l->preadapted += list_free_cell(l, g, REF);
        }
        pthread_mutex_unlock(&l->mu);
    }
    free(l->neg);
    free(l->kfp);
    l->neg = NULL;
    l->kfp = NULL;
    l->n_neg = l->n_kfp = l->cap_kfp = 0;
}

/* h is one of the exact table's absent keys. */
static bool exact_absent(const akvi_fplist *l, akv_hash h)
{
    unsigned n = __atomic_load_n(&l->n_exact, __ATOMIC_ACQUIRE);
    const akv_hash *e = n ? __atomic_load_n(&l->exact, __ATOMIC_ACQUIRE) : NULL;
    for (unsigned i = 0; i < n; i++)
        if (e[i].hi == h.hi && e[i].lo == h.lo)
            return true;
    return false;
}

bool akvi_fplist_rejects(const akvi_fplist *l, akv_hash h)
{
    return listed(l, fp31(h), true) || exact_absent(l, h);
}

/* Under l->mu: y into the exact table; false when it is full (or out of
 * memory). */
static bool exact_add(akvi_fplist *l, akv_hash y)
{
    if (l->n_exact == EXACT_MAX)
        return false;
    akv_hash *e = l->exact;
    if (!e) {
        e = calloc(EXACT_MAX, sizeof *e);
        if (!e)
            return false;
        __atomic_store_n(&l->exact, e, __ATOMIC_RELEASE);
    }
    e[l->n_exact] = y;
    __atomic_store_n(&l->n_exact, l->n_exact + 1, __ATOMIC_RELEASE);
    return true;
}

size_t akvi_fplist_memory(const akvi_fplist *l)
{
    size_t exact = __atomic_load_n(&l->exact, __ATOMIC_ACQUIRE) ? EXACT_MAX * sizeof(akv_hash) : 0;
    return (size_t)(l->nbuckets * BUCKET) * sizeof *l->cells + exact;
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

int akvi_fplist_adapt(akvi_fplist *l, akv_hash y, akv_revmap *rm)
{
    if (!rm)
        return AKV_EINVAL;
    verify v = {y, false, false};
    int rc = rm->scan(rm, y.hi, FP_BITS, verify_fn, &v);
    if (rc != AKV_OK)
        return rc < 0 ? rc : AKV_EIO;
    if (v.same_hash)
        return AKV_NOTFOUND; /* a stored key, not a false positive */
    uint32_t g = fp31(y);
    pthread_mutex_lock(&l->mu);
    if (v.same_fp || g == 0) {
        /* Not a stored key (same_hash was checked): its whole hash is safe
         * to answer "no" for. */
        if (exact_absent(l, y)) {
            rc = AKV_NOTFOUND;
        } else if (exact_add(l, y)) {
            l->adaptations++;
            rc = AKV_OK;
        } else {
            l->unfixable++;
            rc = AKV_NOTFOUND;
        }
    } else if (listed(l, g, false)) {
        rc = AKV_NOTFOUND;
    } else {
        if (!list_free_cell(l, g, 0)) {
            /* Full bucket: g replaces an unreferenced value (CLOCK from a
             * cell chosen at random). */
            list_replace(l, g, (unsigned)(akv_mix64(++l->tick ^ y.lo) % BUCKET));
            l->evictions++;
        }
        l->adaptations++;
        rc = AKV_OK;
    }
    pthread_mutex_unlock(&l->mu);
    return rc;
}

void akvi_fplist_save(akvi_fplist *l, akvi_wbuf *w)
{
    uint64_t ncells = l->nbuckets * BUCKET;
    pthread_mutex_lock(&l->mu);
    akvi_w_u64(w, l->nbuckets);
    akvi_w_u64(w, l->count);
    akvi_w_u64(w, l->unfixable);
    akvi_w_u64(w, l->adaptations);
    akvi_w_u64(w, l->evictions);
    akvi_w_u64(w, l->preadapted);
    for (uint64_t i = 0; i < ncells; i++)
        akvi_w_u32(w, w->p ? __atomic_load_n(&l->cells[i], __ATOMIC_RELAXED) : 0);
    pthread_mutex_unlock(&l->mu);
}

/* Version 1 (ablocked's, read only): u64 cells, u64 count, u64 unfixable,
 * u64 adaptations, the 32-bit values of a linear-probing table. Its values
 * were checked against 32 bits of the keys, not the 31 a value covers now,
 * so they are dropped: the list starts empty (a forgotten false positive,
 * never a false negative), with as many cells in whole buckets. */
int akvi_fplist_load(akvi_fplist *l, akvi_rbuf *r, bool v1)
{
    uint64_t h0 = akvi_r_u64(r), count = akvi_r_u64(r), unfix = akvi_r_u64(r), adapts = akvi_r_u64(r);
    uint64_t evict = v1 ? 0 : akvi_r_u64(r), pre = v1 ? 0 : akvi_r_u64(r);
    /* bounded before any arithmetic: the cells must fit in what is left */
    uint64_t left = r->err ? 0 : akvi_r_left(r) / 4, ncells = 0;
    if (!v1 && h0 >= 1 && h0 <= left / BUCKET)
        ncells = h0 * BUCKET;
    else if (v1 && h0 >= V1_LIST_MIN && h0 <= left)
        ncells = h0;
    if (r->err || !ncells || count > ncells)
        return AKV_ECORRUPT;
    const uint8_t *cells_at = akvi_r_take(r, (size_t)ncells * 4);
    int rc = akvi_fplist_init(l, v1 ? (h0 + BUCKET - 1) / BUCKET : h0);
    if (rc != AKV_OK)
        return rc;
    l->unfixable = unfix;
    l->adaptations = adapts;
    l->evictions = evict;
    l->preadapted = pre;
    uint64_t nz = 0;
    bool bad = false;
    akvi_rbuf c = {cells_at, ncells * 4, 0, false};
    for (uint64_t i = 0; i < ncells; i++) {
        uint32_t g = akvi_r_u32(&c);
        if (!g)
            continue;
        nz++;
        if (v1)
            continue;
        if (g >> 1 == 0 || bucket_of(l, g >> 1) != l->cells + (i / BUCKET) * BUCKET ||
            listed(l, g >> 1, false)) {
            bad = true; /* no value, outside its own bucket, or twice */
        } else {
            l->cells[i] = g;
            l->count++;
        }
    }
    if (bad || nz != count) {
        akvi_fplist_free(l);
        return AKV_ECORRUPT;
    }
    return AKV_OK;
}

int akvi_fplist_describe(akvi_fplist *l, char *buf, size_t cap)
{
    pthread_mutex_lock(&l->mu);
    int n = snprintf(buf, cap,
                     "\"list_cells\":%llu,\"listed\":%llu,\"preadapted\":%llu,\"evictions\":%llu,"
                     "\"exact\":%u,\"unfixable\":%llu",
                     (unsigned long long)(l->nbuckets * BUCKET), (unsigned long long)l->count,
                     (unsigned long long)l->preadapted, (unsigned long long)l->evictions, l->n_exact,
                     (unsigned long long)l->unfixable);
    pthread_mutex_unlock(&l->mu);
    return n;
}

void akvi_fplist_stats(akvi_fplist *l, akv_filter_stats *out)
{
    pthread_mutex_lock(&l->mu);
    out->adaptations = l->adaptations;
    out->adapt_bits = l->count * 32;
    pthread_mutex_unlock(&l->mu);
}
