/*
 * aqf.c — kind `aqf` (id 11): the Adaptive Quotient Filter (Wen et al.,
 * SIGMOD 2024) on the shared core (filters/qf_core.c), and the extra
 * operations of filters/aqf.h for both quotient-filter kinds.
 *
 * Concurrency (docs/design.md, "Concurrency"; the AQF paper, §3.12). Queries must stay cheap and may run
 * while another thread adapts or inserts. Writers take a mutex and bump a
 * sequence counter to odd before touching the table and back to even after;
 * a query reads the counter, runs the lookup on relaxed atomic loads, and
 * retries if the counter was odd or changed. A query's answer therefore
 * always comes from a table state between two complete mutations, each of
 * which has no false negative (qf_core.c), so no interleaving can produce
 * one. The lookup itself bounds every walk, so a torn read can only make it
 * retry, never run away. Readers take no lock and write no shared memory.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/aqf.h"
#include "filters/qf_core.h"
#include "filters/qf_rewrite.h"

typedef struct aqf {
    akvi_qf_head h;
    akvi_qf_build b;
    double lf;
    bool sealed;
    pthread_mutex_t wlock;
    uint64_t seq; /* odd while a writer changes the table */
    akv_negative *neg;
    size_t nneg;
    uint64_t unfixable; /* negatives equal to a stored hash */
} aqf;

extern const akv_filter_kind akvi_kind_aqf;
extern const akv_filter_kind akvi_kind_qf;
akv_filter *akvi_qf_kind_wrap(akvi_qf *core, double lf);

static akv_filter *aqf_wrap(akvi_qf *core, double lf)
{
    aqf *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->h.base.kind = &akvi_kind_aqf;
    a->h.base.n_keys = core->nitems;
    a->h.qf = *core;
    a->lf = lf;
    a->sealed = true;
    pthread_mutex_init(&a->wlock, NULL);
    return &a->h.base;
}

static bool is_qf_kind(const akv_filter *f)
{
    return f && (f->kind == &akvi_kind_aqf || f->kind == &akvi_kind_qf);
}

/* ---- sequence lock ----------------------------------------------------------- */

#if defined(__SANITIZE_THREAD__)
#define AQF_NO_FENCES 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define AQF_NO_FENCES 1
#endif
#endif

/* The classic seqlock orders the table accesses with fences. ThreadSanitizer
 * does not model fences, so its builds use the fence-free form (Boehm,
 * "Can seqlocks get along with programming language memory models?"): the
 * writer's increment is an acquire RMW and the reader's re-check a release
 * RMW. Same protocol, costlier re-check; only sanitizer builds use it. */
static inline void seq_open(uint64_t *seq)
{
#ifdef AQF_NO_FENCES
    __atomic_fetch_add(seq, 1, __ATOMIC_ACQ_REL);
#else
    __atomic_store_n(seq, __atomic_load_n(seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
#endif
}

static inline uint64_t seq_recheck(const uint64_t *seq)
{
#ifdef AQF_NO_FENCES
    return __atomic_fetch_add((uint64_t *)seq, 0, __ATOMIC_RELEASE);
#else
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return __atomic_load_n(seq, __ATOMIC_RELAXED);
#endif
}

/* ---- writer section ------------------------------------------------------- */

static void w_begin(aqf *a)
{
    pthread_mutex_lock(&a->wlock);
    seq_open(&a->seq);
}

static void w_end(aqf *a)
{
    __atomic_store_n(&a->seq, __atomic_load_n(&a->seq, __ATOMIC_RELAXED) + 1, __ATOMIC_RELEASE);
    /* n_keys is a plain field others may read: write it only when it changes */
    if (a->h.base.n_keys != a->h.qf.nitems)
        a->h.base.n_keys = a->h.qf.nitems;
    pthread_mutex_unlock(&a->wlock);
}

/* Read-only access for the multi-filter operations: excludes writers. */
static void ro_lock(const akv_filter *f)
{
    if (f->kind == &akvi_kind_aqf)
        pthread_mutex_lock(&((aqf *)f)->wlock);
}
static void ro_unlock(const akv_filter *f)
{
    if (f->kind == &akvi_kind_aqf)
        pthread_mutex_unlock(&((aqf *)f)->wlock);
}

/* ---- kind functions -------------------------------------------------------- */

static int aqf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    double lf = p->load_factor > 0 && p->load_factor <= 1 ? p->load_factor : 0.9;
    uint64_t ns;
    uint32_t r;
    akvi_qf_geometry(p, p->expected_keys, true, &ns, &r);
    akvi_qf core;
    int rc = akvi_qf_init_n(&core, ns, r, p->prefix_bits, true);
    if (rc != AKV_OK)
        return rc;
    akv_filter *f = aqf_wrap(&core, lf);
    if (!f) {
        akvi_qf_free(&core);
        return AKV_ENOMEM;
    }
    aqf *a = (aqf *)f;
    a->sealed = false;
    if (n_neg) {
        a->neg = malloc(n_neg * sizeof *a->neg);
        if (!a->neg) {
            f->kind->destroy(f);
            return AKV_ENOMEM;
        }
        memcpy(a->neg, neg, n_neg * sizeof *neg);
        a->nneg = n_neg;
    }
    *out = f;
    return AKV_OK;
}

static int aqf_add(akv_filter *f, akv_hash h)
{
    aqf *a = (aqf *)f;
    if (a->sealed)
        return AKV_EINVAL;
    return akvi_qf_build_push(&a->b, h);
}

/* Static YES/NO step: adapt q to every negative that is a false positive
 * against the sorted keys q was built from, in order, until q uses `stop`
 * slots (the rest is left out). */
static int preadapt(akvi_qf *q, const akv_hash *keys, size_t n, const akv_negative *neg, size_t n_neg,
                    uint64_t stop, uint64_t *unfixable)
{
    akvi_memrevmap *m = NULL;
    int rc = akvi_memrevmap_create(keys, n, &m);
    for (size_t i = 0; rc == AKV_OK && i < n_neg && q->used < stop; i++) {
        if (akvi_qf_lookup(q, neg[i].h) == 0)
            continue;
        rc = akvi_qf_adapt(q, neg[i].h, akvi_memrevmap_revmap(m));
        if (rc == AKV_NOTFOUND) { /* equal to a stored hash: cannot be filtered */
            (*unfixable)++;
            rc = AKV_OK;
        }
    }
    akvi_memrevmap_destroy(m);
    return rc;
}

static int aqf_finish(akv_filter *f)
{
    aqf *a = (aqf *)f;
    if (a->sealed)
        return AKV_OK;
    int rc = akvi_qf_build_finish(&a->h.qf, &a->b, a->lf);
    if (rc == AKV_OK && a->nneg)
        rc = preadapt(&a->h.qf, a->b.v, a->b.n, a->neg, a->nneg, UINT64_MAX, &a->unfixable);
    free(a->b.v);
    a->b = (akvi_qf_build){0};
    free(a->neg);
    a->neg = NULL;
    a->nneg = 0;
    a->sealed = true;
    f->n_keys = a->h.qf.nitems;
    return rc;
}

/* Slow path: a writer was active; wait it out (yielding after a while). */
static bool retry_query(const aqf *a, akv_hash h)
{
    for (unsigned spins = 0;; spins++) {
        uint64_t s1 = __atomic_load_n(&a->seq, __ATOMIC_ACQUIRE);
        if (!(s1 & 1)) {
            int r = akvi_qf_lookup(&a->h.qf, h);
            if (seq_recheck(&a->seq) == s1)
                return r != 0;
        }
        if (spins > 64)
            sched_yield();
    }
}

static bool aqf_may_contain(const akv_filter *f, akv_hash h)
{
    const aqf *a = (const aqf *)f;
    uint64_t s1 = __atomic_load_n(&a->seq, __ATOMIC_ACQUIRE);
    if (__builtin_expect(!(s1 & 1), 1)) {
        int r = akvi_qf_lookup(&a->h.qf, h);
        if (__builtin_expect(seq_recheck(&a->seq) == s1, 1))
            return r != 0; /* r < 0 on a stable table cannot happen; "maybe" is safe */
    }
    return retry_query(a, h);
}

static size_t aqf_memory(const akv_filter *f)
{
    return akvi_qf_memory(&((const aqf *)f)->h.qf);
}

static int aqf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    aqf *a = (aqf *)f;
    pthread_mutex_lock(&a->wlock);
    int rc = akvi_qf_save(&a->h.qf, buf, len);
    pthread_mutex_unlock(&a->wlock);
    return rc;
}

static int aqf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    akvi_qf core;
    int rc = akvi_qf_load(&core, buf, len, true, ver);
    if (rc != AKV_OK)
        return rc;
    akv_filter *f = aqf_wrap(&core, 0.9);
    if (!f) {
        akvi_qf_free(&core);
        return AKV_ENOMEM;
    }
    *out = f;
    return AKV_OK;
}

static void aqf_destroy(akv_filter *f)
{
    aqf *a = (aqf *)f;
    akvi_qf_free(&a->h.qf);
    free(a->b.v);
    free(a->neg);
    pthread_mutex_destroy(&a->wlock);
    free(a);
}

static int aqf_insert(akv_filter *f, akv_hash h)
{
    aqf *a = (aqf *)f;
    int rc = a->sealed ? AKV_OK : aqf_finish(f);
    if (rc != AKV_OK)
        return rc;
    w_begin(a);
    rc = akvi_qf_insert(&a->h.qf, h);
    w_end(a);
    return rc;
}

static int aqf_remove(akv_filter *f, akv_hash h)
{
    aqf *a = (aqf *)f;
    int rc = a->sealed ? AKV_OK : aqf_finish(f);
    if (rc != AKV_OK)
        return rc;
    w_begin(a);
    rc = akvi_qf_remove(&a->h.qf, h);
    w_end(a);
    return rc;
}

static int aqf_adapt(akv_filter *f, akv_hash h, akv_revmap *rm)
{
    aqf *a = (aqf *)f;
    if (!rm || !a->sealed)
        return AKV_EINVAL;
    /* Cheap pre-check without the lock: most callers only adapt real FPs. */
    if (!aqf_may_contain(f, h))
        return AKV_NOTFOUND;
    w_begin(a);
    int rc = akvi_qf_adapt(&a->h.qf, h, rm);
    w_end(a);
    return rc;
}

/*
 * Refill in place (docs/design.md, "A full adaptive filter grows"): the
 * table is rebuilt from the keys at its own size in a private copy, pre-
 * adapted to `neg` until half the room the keys leave is used, and copied
 * over the live table in one writer section. Every other adaptation is
 * forgotten; the memory does not change. A query that overlaps the copy
 * retries (sequence lock) and so answers from the old table or the new,
 * both of which hold every key.
 */
static int aqf_refill(akv_filter *f, const akv_hash *keys, size_t n, const akv_negative *neg, size_t n_neg)
{
    aqf *a = (aqf *)f;
    if (!a->sealed || (n && !keys) || (n_neg && !neg))
        return AKV_EINVAL;
    akvi_qf tmp;
    int rc = akvi_qf_init_like(&tmp, &a->h.qf);
    if (rc != AKV_OK)
        return rc;
    tmp.prefix = a->h.qf.prefix;
    akvi_qf_build b = {0};
    /* more keys than the table holds: it would have to be regrown */
    if (n > tmp.insert_limit)
        rc = AKV_EFULL;
    for (size_t i = 0; rc == AKV_OK && i < n; i++)
        rc = akvi_qf_build_push(&b, keys[i]);
    if (rc == AKV_OK)
        rc = akvi_qf_build_finish(&tmp, &b, a->lf);
    uint64_t unfixable = 0;
    if (rc == AKV_OK && n_neg)
        rc = preadapt(&tmp, b.v, b.n, neg, n_neg, tmp.used + (tmp.adapt_limit - tmp.used) / 2, &unfixable);
    if (rc == AKV_OK) {
        w_begin(a);
        akvi_qf_assign(&a->h.qf, &tmp);
        a->unfixable = unfixable;
        w_end(a);
    }
    free(b.v);
    akvi_qf_free(&tmp);
    return rc;
}

static unsigned aqf_words(const akv_filter *f, akv_hash h)
{
    return akvi_qf_words_touched(&((const aqf *)f)->h.qf, h);
}

static int aqf_describe(const akv_filter *f, char *buf, size_t cap)
{
    aqf *a = (aqf *)f;
    pthread_mutex_lock(&a->wlock);
    const akvi_qf *q = &a->h.qf;
    int n = snprintf(buf, cap,
                     "\"q\":%u,\"r\":%u,\"slots\":%llu,\"used\":%llu,\"load\":%.4f,\"ext_slots\":%llu,"
                     "\"unfixable_negatives\":%llu",
                     q->q, q->r, (unsigned long long)q->nslots, (unsigned long long)q->used,
                     (double)q->used / (double)q->nslots, (unsigned long long)q->ext_slots,
                     (unsigned long long)a->unfixable);
    pthread_mutex_unlock(&a->wlock);
    return n;
}

static void aqf_stats(const akv_filter *f, akv_filter_stats *out)
{
    aqf *a = (aqf *)f;
    pthread_mutex_lock(&a->wlock);
    out->adaptations = a->h.qf.adaptations;
    out->adapt_bits = a->h.qf.ext_slots * a->h.qf.r;
    out->capacity = a->h.qf.insert_limit;
    pthread_mutex_unlock(&a->wlock);
}

static double aqf_fpr(const akv_filter *f)
{
    aqf *a = (aqf *)f;
    pthread_mutex_lock(&a->wlock);
    double p = akvi_qf_fpr(&a->h.qf);
    pthread_mutex_unlock(&a->wlock);
    return p;
}

const akv_filter_kind akvi_kind_aqf = {
    .name = "aqf",
    .id = 11,
    .payload_version = 2,
    .flags = AKV_FK_DYNAMIC | AKV_FK_ADAPTIVE | AKV_FK_SORTED | AKV_FK_CONCURRENT,
    .summary = "Adaptive Quotient Filter: extends the fingerprints of every false positive",
    .create = aqf_create,
    .add = aqf_add,
    .finish = aqf_finish,
    .may_contain = aqf_may_contain,
    .memory_bytes = aqf_memory,
    .save = aqf_save,
    .load = aqf_load,
    .destroy = aqf_destroy,
    .insert = aqf_insert,
    .remove = aqf_remove,
    .adapt = aqf_adapt,
    .refill = aqf_refill,
    .words_touched = aqf_words,
    .describe = aqf_describe,
    .stats = aqf_stats,
    .fpr_theory = aqf_fpr,
};

/* ---- extra operations (aqf.h) ---------------------------------------------- */

static akv_filter *wrap_as(const akv_filter_kind *k, akvi_qf *core, double lf)
{
    return k == &akvi_kind_aqf ? aqf_wrap(core, lf) : akvi_qf_kind_wrap(core, lf);
}

static double lf_of(const akv_filter *f)
{
    return f->kind == &akvi_kind_aqf ? ((const aqf *)f)->lf : 0.9;
}

/* Give a finished core to a new filter of kind k (frees the core on failure). */
static int adopt(const akv_filter_kind *k, akvi_qf *core, double lf, int rc, akv_filter **out)
{
    *out = NULL;
    if (rc != AKV_OK) {
        akvi_qf_free(core);
        return rc;
    }
    *out = wrap_as(k, core, lf);
    if (!*out) {
        akvi_qf_free(core);
        return AKV_ENOMEM;
    }
    return AKV_OK;
}

int akvi_aqf_bulk_load(const akv_filter_kind *kind, const akv_filter_params *p, const akv_hash *sorted,
                       size_t n, akv_filter **out)
{
    if (!out || !p || (n && !sorted) || (kind != &akvi_kind_aqf && kind != &akvi_kind_qf))
        return AKV_EINVAL;
    double lf = p->load_factor > 0 && p->load_factor <= 1 ? p->load_factor : 0.9;
    uint64_t want = p->expected_keys > n ? p->expected_keys : n;
    bool ext = kind == &akvi_kind_aqf;
    uint64_t ns;
    uint32_t r;
    akvi_qf_geometry(p, want, ext, &ns, &r);
    if ((double)n > 0.95 * (double)ns)
        ns = (uint64_t)((double)n / 0.95) + 2;
    akvi_qf core;
    int rc = akvi_qf_init_n(&core, ns, r, p->prefix_bits, ext);
    if (rc != AKV_OK)
        return rc;
    for (size_t i = 0; i < n && rc == AKV_OK; i++)
        rc = akvi_qf_bulk_add(&core, sorted[i]);
    core.bl_ok = false;
    return adopt(kind, &core, lf, rc, out);
}

int akvi_aqf_build_yesno(const akv_filter_params *p, const akv_hash *yes, size_t n_yes, const akv_hash *no,
                         size_t n_no, akv_filter **out, size_t *unfixable)
{
    if (!p || !out || (n_yes && !yes) || (n_no && !no))
        return AKV_EINVAL;
    akv_filter_params q = *p;
    if (q.expected_keys < n_yes)
        q.expected_keys = n_yes;
    akv_negative *neg = malloc((n_no + 1) * sizeof *neg);
    if (!neg)
        return AKV_ENOMEM;
    for (size_t i = 0; i < n_no; i++)
        neg[i] = (akv_negative){no[i], 1.0};
    /* Fixing the NO list takes extension slots beyond the YES keys' share
     * of the budget: grow until they fit. */
    int rc = AKV_EFULL;
    for (int t = 0; t < 8 && rc == AKV_EFULL; t++, q.expected_keys += q.expected_keys / 2 + 64)
        rc = akv_filter_build(&akvi_kind_aqf, &q, yes, n_yes, neg, n_no, out);
    free(neg);
    if (rc == AKV_OK && unfixable)
        *unfixable = (size_t)((aqf *)*out)->unfixable;
    return rc;
}

int akvi_aqf_merge(const akv_filter *a, const akv_filter *b, uint32_t out_q, akv_filter **out)
{
    if (!out || !is_qf_kind(a) || !is_qf_kind(b) || a->kind != b->kind)
        return AKV_EINVAL;
    const akvi_qf *qa = &((const akvi_qf_head *)a)->qf, *qb = &((const akvi_qf_head *)b)->qf;
    if (!out_q)
        out_q = qa->q;
    if (out_q < qa->q || out_q - qa->q >= qa->r || out_q - qa->q > 24 || qa->nslots != qb->nslots)
        return AKV_EINVAL;
    akvi_qf core;
    int rc = akvi_qf_init_n(&core, qa->nslots << (out_q - qa->q), qa->r - (out_q - qa->q), qa->pbits,
                            qa->mwords == 3);
    if (rc != AKV_OK)
        return rc;
    const akv_filter *first = a < b ? a : b, *second = a < b ? b : a;
    ro_lock(first);
    if (second != first)
        ro_lock(second);
    rc = akvi_qf_merge(qa, qb, &core);
    if (second != first)
        ro_unlock(second);
    ro_unlock(first);
    return adopt(a->kind, &core, lf_of(a), rc, out);
}

int akvi_aqf_merge_exact(const akv_filter *a, akv_revmap *rm_a, const akv_filter *b, akv_revmap *rm_b,
                         uint32_t out_q, uint32_t out_r, akv_filter **out)
{
    if (!out || !is_qf_kind(a) || !is_qf_kind(b) || a->kind != b->kind || !rm_a || !rm_b)
        return AKV_EINVAL;
    const akvi_qf *in[2] = {&((const akvi_qf_head *)a)->qf, &((const akvi_qf_head *)b)->qf};
    akv_revmap *rms[2] = {rm_a, rm_b};
    if (in[0]->pbits != in[1]->pbits)
        return AKV_EINVAL;
    uint64_t ns = out_q ? (out_q <= 40 ? 1ULL << out_q : 0)
                        : akvi_qf_slots_for(in[0]->nitems + in[1]->nitems, lf_of(a));
    if (!out_q && (double)(in[0]->used + in[1]->used) > 0.95 * (double)ns)
        ns = (uint64_t)((double)(in[0]->used + in[1]->used) / 0.95) + 2;
    akvi_qf core;
    int rc = akvi_qf_init_n(&core, ns, out_r ? out_r : in[0]->r, in[0]->pbits, in[0]->mwords == 3);
    if (rc != AKV_OK)
        return rc;
    const akv_filter *first = a < b ? a : b, *second = a < b ? b : a;
    ro_lock(first);
    if (second != first)
        ro_lock(second);
    rc = akvi_qf_rebuild2(in, rms, 2, &core);
    if (second != first)
        ro_unlock(second);
    ro_unlock(first);
    return adopt(a->kind, &core, lf_of(a), rc, out);
}

int akvi_aqf_resize(const akv_filter *f, uint32_t new_q, uint32_t new_r, akv_revmap *rm, akv_filter **out)
{
    if (!out || !is_qf_kind(f) || !rm)
        return AKV_EINVAL;
    const akvi_qf *in = &((const akvi_qf_head *)f)->qf;
    akvi_qf core;
    int rc = akvi_qf_init(&core, new_q, new_r ? new_r : in->r, in->pbits, in->mwords == 3);
    if (rc != AKV_OK)
        return rc;
    ro_lock(f);
    rc = akvi_qf_rebuild(in, rm, &core);
    ro_unlock(f);
    return adopt(f->kind, &core, lf_of(f), rc, out);
}

int akvi_aqf_remove_exact(akv_filter *f, akv_hash h, akv_revmap *rm, bool shorten)
{
    if (!f || f->kind != &akvi_kind_aqf || !rm)
        return AKV_EINVAL;
    aqf *a = (aqf *)f;
    int rc = a->sealed ? AKV_OK : aqf_finish(f);
    if (rc != AKV_OK)
        return rc;
    w_begin(a);
    rc = akvi_qf_remove_exact(&a->h.qf, h, rm, shorten);
    w_end(a);
    return rc;
}

int akvi_aqf_validate(const akv_filter *f)
{
    if (!is_qf_kind(f))
        return AKV_EINVAL;
    ro_lock(f);
    int rc = akvi_qf_validate(&((const akvi_qf_head *)f)->qf);
    ro_unlock(f);
    return rc;
}

int akvi_aqf_info_get(const akv_filter *f, akvi_aqf_info *out)
{
    if (!is_qf_kind(f) || !out)
        return AKV_EINVAL;
    ro_lock(f);
    const akvi_qf *q = &((const akvi_qf_head *)f)->qf;
    *out = (akvi_aqf_info){q->q, q->r, q->pbits, q->nslots, q->used, q->nitems, q->ext_slots, q->adaptations};
    ro_unlock(f);
    return AKV_OK;
}
