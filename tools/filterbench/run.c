/* run.c — filterbench's measurement passes: build, false negatives, FPR and
 * query time on absent keys, adaptation replay, cost-weighted FPR, churn. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "revmap/revmap.h"
#include "tools/filterbench/bench.h"

#if __has_include("tools/filterbench/datasets.h")
#include "tools/filterbench/datasets.h"
#include "util/order.h"
#define FB_HAVE_DATASETS 1
#endif

/* Disjoint key spaces per role, so members, absent keys, negatives and
 * churn inserts never coincide. */
enum { SPACE_MEMBER = 1, SPACE_ABSENT, SPACE_NEGATIVE, SPACE_CHURN, SPACE_AFTER };

static akv_hash key_of(uint64_t seed, uint64_t space, uint64_t i)
{
    uint64_t k[2] = {seed * 16 + space, i};
    return akv_hash_key(k, sizeof k, 0x5eed);
}

/* Wall time, or with --cpu-time the process's CPU time (one thread: the
 * time it actually ran, which a host shared with other work inflates
 * far less than the wall clock). */
static bool fb_cpu_clock;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(fb_cpu_clock ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The absent-key query stream: Q draws from the universe (or all fresh). */
static akv_hash *query_stream(const fb_config *c, uint64_t space, uint64_t rng)
{
    akv_hash *q = malloc(c->queries * sizeof *q + 1);
    if (!q)
        return NULL;
    fb_zipf *z = c->qdist.zipf ? fb_zipf_create(c->universe, c->qdist.s) : NULL;
    if (c->qdist.zipf && !z)
        return free(q), NULL;
    for (uint64_t i = 0; i < c->queries; i++) {
        uint64_t item = i;
        if (z)
            item = fb_zipf_sample(z, &rng);
        else if (c->universe)
            item = fb_rand(&rng) % c->universe;
        /* Universe items are shared between streams; fresh draws are not. */
        q[i] = key_of(c->seed, c->universe ? SPACE_ABSENT : space, item);
    }
    fb_zipf_destroy(z);
    return q;
}

static uint64_t count_fp(const akv_filter *f, const akv_hash *q, uint64_t n, double *ns)
{
    uint64_t fp = 0;
    double t = now_ns();
    for (uint64_t i = 0; i < n; i++)
        fp += akv_filter_may_contain(f, q[i]);
    if (ns)
        *ns = n ? (now_ns() - t) / (double)n : 0;
    return fp;
}

/* The same stream answered through the batch call (prefetching kinds overlap
 * their cache misses); the count must match the one-at-a-time pass. */
#define BATCH 1024

static uint64_t count_fp_batched(const akv_filter *f, const akv_hash *q, uint64_t n, double *ns)
{
    bool out[BATCH];
    uint64_t fp = 0;
    double t = now_ns();
    for (uint64_t i = 0; i < n; i += BATCH)
        fp += akv_filter_may_contain_many(f, q + i, n - i < BATCH ? n - i : BATCH, out);
    *ns = n ? (now_ns() - t) / (double)n : 0;
    return fp;
}

static uint64_t count_fn(const akv_filter *f, const akv_hash *keys, uint64_t n)
{
    uint64_t fn = 0;
    for (uint64_t i = 0; i < n; i++)
        fn += !akv_filter_may_contain(f, keys[i]);
    return fn;
}

/* Costs for the negatives: all 1 (uniform) or Zipf weights over a shuffle. */
static void assign_costs(const fb_config *c, akv_negative *neg, uint64_t n)
{
    uint64_t rng = c->seed * 7 + 3;
    for (uint64_t i = 0; i < n; i++)
        neg[i].cost = c->costs.zipf ? pow((double)(i + 1), -c->costs.s) : 1.0;
    for (uint64_t i = n; i > 1; i--) { /* Fisher–Yates over the costs */
        uint64_t j = fb_rand(&rng) % i;
        double t = neg[i - 1].cost;
        neg[i - 1].cost = neg[j].cost;
        neg[j].cost = t;
    }
}

typedef struct inputs {
    akv_hash *keys;
    uint64_t n;
    akv_negative *neg;
    uint64_t nneg;
} inputs;

static int make_inputs(const fb_config *c, inputs *in, fb_result *r)
{
    akv_hash *dneg = NULL;
    size_t dnn = 0;
    if (c->dataset) {
#ifdef FB_HAVE_DATASETS
        size_t dn = 0;
        int rc = akv_dataset_generate(c->dataset, c->seed, &in->keys, &dn, &dneg, &dnn);
        if (rc != AKV_OK) {
            snprintf(r->error, sizeof r->error, "unknown or failed dataset '%s'", c->dataset);
            return rc;
        }
        in->n = dn;
#else
        snprintf(r->error, sizeof r->error, "datasets are not built into this filterbench");
        return AKV_ENOTSUP;
#endif
    } else {
        in->n = c->keys;
        in->keys = malloc(in->n * sizeof *in->keys + 1);
        if (!in->keys)
            return AKV_ENOMEM;
        for (uint64_t i = 0; i < in->n; i++)
            in->keys[i] = key_of(c->seed, SPACE_MEMBER, i);
    }
    in->nneg = c->negatives ? c->negatives : dnn;
    if (dneg && in->nneg > dnn)
        in->nneg = dnn;
    in->neg = malloc(in->nneg * sizeof *in->neg + 1);
    if (!in->neg)
        return free(dneg), AKV_ENOMEM;
    for (uint64_t i = 0; i < in->nneg; i++)
        in->neg[i].h = dneg ? dneg[i] : key_of(c->seed, SPACE_NEGATIVE, i);
    free(dneg);
    assign_costs(c, in->neg, in->nneg);
    return AKV_OK;
}

static int build(const fb_config *c, const inputs *in, akv_filter **f, fb_result *r)
{
    akv_filter_params p = c->params;
    p.expected_keys = in->n;
    p.seed = c->seed;
    double t0 = now_ns();
    int rc = akv_filter_create(c->kind, &p, in->neg, in->nneg, f);
    if (rc != AKV_OK)
        return rc;
    double t1 = now_ns();
    for (uint64_t i = 0; i < in->n && rc == AKV_OK; i++)
        rc = akv_filter_add(*f, in->keys[i]);
    double t2 = now_ns();
    if (rc == AKV_OK)
        rc = akv_filter_finish(*f);
    double t3 = now_ns();
    double n = in->n ? (double)in->n : 1;
    r->add_ns = r->insert_ns = (t2 - t1) / n;
    r->build_ns = (t3 - t0) / n;
    return rc;
}

/* Real inserts: a second filter, sized for the keys and finished empty,
 * takes them one akv_filter_insert at a time (dynamic kinds). */
static int time_inserts(const fb_config *c, const inputs *in, fb_result *r)
{
    if (!c->kind->insert || !in->n)
        return AKV_OK;
    akv_filter_params p = c->params;
    p.expected_keys = in->n;
    p.seed = c->seed;
    akv_filter *f = NULL;
    int rc = akv_filter_create(c->kind, &p, NULL, 0, &f);
    if (rc == AKV_OK)
        rc = akv_filter_finish(f);
    double t = now_ns();
    for (uint64_t i = 0; i < in->n && rc == AKV_OK; i++)
        rc = akv_filter_insert(f, in->keys[i]);
    r->insert_ns = (now_ns() - t) / (double)in->n;
    if (rc != AKV_OK)
        snprintf(r->error, sizeof r->error, "insert failed: %s", akv_strerror(rc));
    akv_filter_destroy(f);
    return rc;
}

/* 64-bit words touched per query over the first million (NAN if the kind
 * does not count them). */
static double measure_words(const akv_filter *f, const akv_hash *q, uint64_t n)
{
    if (!f->kind->words_touched || !n)
        return NAN;
    uint64_t lim = n < 1000000 ? n : 1000000, w = 0;
    for (uint64_t i = 0; i < lim; i++)
        w += f->kind->words_touched(f, q[i]);
    return (double)w / (double)lim;
}

/* Replay the stream; on every false positive adapt (or absorb). */
static void adapt_pass(const fb_config *c, akv_filter *f, akv_revmap *rm, const akv_hash *q, fb_result *r)
{
    uint64_t fp = 0;
    double t = now_ns();
    for (uint64_t i = 0; i < c->queries; i++) {
        if (!akv_filter_may_contain(f, q[i]))
            continue;
        fp++;
        int rc = f->kind->adapt ? akv_filter_adapt(f, q[i], rm) : akv_filter_absorb(f, q[i]);
        if (rc < 0)
            r->adapt_errors++;
    }
    r->adapt_query_ns = c->queries ? (now_ns() - t) / (double)c->queries : 0;
    r->fpr_during = c->queries ? (double)fp / (double)c->queries : 0;
}

static void weighted(const akv_filter *f, const inputs *in, fb_result *r)
{
    double total = 0, bad = 0;
    uint64_t fp = 0;
    for (uint64_t i = 0; i < in->nneg; i++) {
        total += in->neg[i].cost;
        if (akv_filter_may_contain(f, in->neg[i].h)) {
            bad += in->neg[i].cost;
            fp++;
        }
    }
    r->negatives = in->nneg;
    r->weighted_fpr = total > 0 ? bad / total : 0;
    r->neg_fpr = in->nneg ? (double)fp / (double)in->nneg : 0;
}

/* R rounds: remove 10% of the live keys at random, insert 10% new ones,
 * then check every live key and the FPR on fresh absent keys. */
static int churn(const fb_config *c, akv_filter *f, akvi_memrevmap *mrm, inputs *in, fb_result *r)
{
    uint64_t rng = c->seed * 31 + 7, next = 0, tenth = in->n / 10;
    double fpr_sum = 0;
    for (uint64_t round = 0; round < c->churn; round++) {
        for (uint64_t j = 0; j < tenth && in->n; j++) {
            uint64_t i = fb_rand(&rng) % in->n;
            int rc = akv_filter_remove(f, in->keys[i]);
            if (rc != AKV_OK)
                return snprintf(r->error, sizeof r->error, "remove failed: %s", akv_strerror(rc)), rc;
            if (mrm)
                akvi_memrevmap_remove(mrm, in->keys[i]);
            in->keys[i] = in->keys[--in->n];
        }
        for (uint64_t j = 0; j < tenth; j++) {
            akv_hash h = key_of(c->seed, SPACE_CHURN, next++);
            int rc = akv_filter_insert(f, h);
            if (rc != AKV_OK)
                return snprintf(r->error, sizeof r->error, "insert failed: %s", akv_strerror(rc)), rc;
            if (mrm)
                akvi_memrevmap_insert(mrm, h);
            in->keys[in->n++] = h;
        }
        r->false_negatives += count_fn(f, in->keys, in->n);
        uint64_t nq = c->queries < 200000 ? c->queries : 200000, fp = 0;
        for (uint64_t i = 0; i < nq; i++)
            fp += akv_filter_may_contain(f, key_of(c->seed, SPACE_AFTER, round * nq + i));
        fpr_sum += nq ? (double)fp / (double)nq : 0;
        r->churn_rounds++;
    }
    r->churn_fpr = c->churn ? fpr_sum / (double)c->churn : 0;
    return AKV_OK;
}

static int measure(const fb_config *c, inputs *in, akv_filter *f, fb_result *r)
{
    r->keys = in->n;
    r->memory_bytes = akv_filter_memory(f);
    r->bits_per_key = in->n ? (double)r->memory_bytes * 8.0 / (double)in->n : 0;
    double t = now_ns();
    r->false_negatives = count_fn(f, in->keys, in->n);
    r->member_query_ns = in->n ? (now_ns() - t) / (double)in->n : 0;
    r->fpr_theory = f->kind->fpr_theory ? f->kind->fpr_theory(f) : NAN;
    akv_hash *q = query_stream(c, SPACE_ABSENT, c->seed * 101);
    if (!q)
        return AKV_ENOMEM;
    r->queries = c->queries;
    double qns, bns;
    uint64_t fp = count_fp(f, q, c->queries, &qns);
    if (count_fp_batched(f, q, c->queries, &bns) != fp) {
        free(q);
        snprintf(r->error, sizeof r->error, "batched queries answered differently from single ones");
        return AKV_EINVAL;
    }
    if (!r->rounds) /* else the paired rounds' medians stand */
        r->query_ns = qns, r->batch_query_ns = bns;
    r->fpr = c->queries ? (double)fp / (double)c->queries : 0;
    r->fpr_before = r->fpr_after = r->fpr;
    r->words_per_query = measure_words(f, q, c->queries);
    if (in->nneg)
        weighted(f, in, r);

    akvi_memrevmap *mrm = NULL;
    int rc = AKV_OK;
    if (c->adapt || (c->churn && f->kind->adapt))
        rc = akvi_memrevmap_create(in->keys, in->n, &mrm);
    if (rc == AKV_OK && c->adapt) {
        adapt_pass(c, f, akvi_memrevmap_revmap(mrm), q, r);
        free(q);
        q = query_stream(c, SPACE_AFTER, c->seed * 977 + 1);
        if (!q)
            rc = AKV_ENOMEM;
        else
            r->fpr_after = c->queries ? (double)count_fp(f, q, c->queries, NULL) / (double)c->queries : 0;
        r->false_negatives += count_fn(f, in->keys, in->n);
        if (in->nneg)
            weighted(f, in, r);
    }
    free(q);
    akv_filter_stats st;
    akv_filter_get_stats(f, &st);
    r->adaptations = st.adaptations + st.absorbed;
    r->extra_bits_per_key = in->n ? (double)st.adapt_bits / (double)in->n : 0;
    if (rc == AKV_OK && c->churn)
        rc = churn(c, f, mrm, in, r);
    akvi_memrevmap_destroy(mrm);
    if (f->kind->describe)
        f->kind->describe(f, r->describe, sizeof r->describe);
    return rc;
}

/* ---- --baseline: two filters timed side by side ------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, uint64_t n)
{
    akvi_sort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef struct timings {
    double single[2], batch[2]; /* [0] this filter, [1] the baseline */
} timings;

/* One round: both filters, single then batched passes, in the given order.
 * Every pass must count the same false positives as the first one did. */
static int time_round(akv_filter *const fs[2], const akv_hash *q, uint64_t n, const uint64_t fp[2], int first,
                      timings *t)
{
    for (int j = 0; j < 2; j++) {
        int i = j ? 1 - first : first;
        if (count_fp(fs[i], q, n, &t->single[i]) != fp[i] ||
            count_fp_batched(fs[i], q, n, &t->batch[i]) != fp[i])
            return AKV_EINVAL;
    }
    return AKV_OK;
}

static void fill_baseline(const akv_filter *b, const inputs *in, const akv_hash *q, uint64_t fp,
                          const fb_config *c, fb_result *r)
{
    r->base.memory_bytes = akv_filter_memory(b);
    r->base.bits_per_key = in->n ? (double)r->base.memory_bytes * 8.0 / (double)in->n : 0;
    r->base.false_negatives = count_fn(b, in->keys, in->n);
    r->base.fpr = c->queries ? (double)fp / (double)c->queries : 0;
    r->base.fpr_theory = b->kind->fpr_theory ? b->kind->fpr_theory(b) : NAN;
    r->base.words_per_query = measure_words(b, q, c->queries);
}

/* R rounds over the same absent-key stream, alternating which filter goes
 * first, so that drift in the host's load falls on both alike. */
static int paired_rounds(const fb_config *c, const inputs *in, akv_filter *f, akv_filter *b, fb_result *r)
{
    uint64_t n = c->rounds;
    akv_hash *q = query_stream(c, SPACE_ABSENT, c->seed * 101);
    double *v = malloc(6 * n * sizeof *v); /* six series of n values */
    if (!q || !v)
        return free(q), free(v), AKV_ENOMEM;
    double *ns = v, *bns = v + n, *base = v + 2 * n, *bbase = v + 3 * n, *ratio = v + 4 * n,
           *bratio = v + 5 * n;
    akv_filter *const fs[2] = {f, b};
    uint64_t fp[2] = {count_fp(f, q, c->queries, NULL), count_fp(b, q, c->queries, NULL)};
    int rc = AKV_OK;
    for (uint64_t i = 0; rc == AKV_OK && i < n; i++) {
        timings t;
        rc = time_round(fs, q, c->queries, fp, (int)(i % 2), &t);
        ns[i] = t.single[0], bns[i] = t.batch[0], base[i] = t.single[1], bbase[i] = t.batch[1];
        ratio[i] = t.single[1] / t.single[0], bratio[i] = t.batch[1] / t.batch[0];
    }
    if (rc == AKV_OK) {
        r->rounds = n;
        r->query_ns = median(ns, n), r->batch_query_ns = median(bns, n);
        r->base.query_ns = median(base, n), r->base.batch_query_ns = median(bbase, n);
        r->query_speedup = median(ratio, n), r->batch_speedup = median(bratio, n);
        fill_baseline(b, in, q, fp[1], c, r);
    } else {
        snprintf(r->error, sizeof r->error, "a timing pass answered differently from the first pass");
    }
    free(v);
    free(q);
    return rc;
}

/* The baseline gets the same keys, bits/key, seed and negatives, and its
 * kind's defaults for everything else. */
static int run_baseline(const fb_config *c, const inputs *in, akv_filter *f, fb_result *r)
{
    fb_config bc = *c;
    fb_result br;
    memset(&br, 0, sizeof br);
    bc.kind = c->baseline_kind;
    akv_filter_params_init(&bc.params);
    bc.params.bits_per_key = c->params.bits_per_key;
    /* quotient-filter geometry, so that --baseline qf compares like with like */
    bc.params.remainder_bits = c->params.remainder_bits;
    bc.params.load_factor = c->params.load_factor;
    akv_filter *b = NULL;
    int rc = build(&bc, in, &b, &br);
    if (rc != AKV_OK)
        snprintf(r->error, sizeof r->error, "baseline %.32s: %.200s", c->baseline,
                 br.error[0] ? br.error : akv_strerror(rc));
    else
        rc = paired_rounds(c, in, f, b, r);
    akv_filter_destroy(b);
    return rc;
}

int fb_run(const fb_config *c, fb_result *r)
{
    fb_cpu_clock = c->cpu_time;
    inputs in = {0};
    int rc = make_inputs(c, &in, r);
    akv_filter *f = NULL;
    if (rc == AKV_OK)
        rc = build(c, &in, &f, r);
    if (rc == AKV_OK)
        rc = time_inserts(c, &in, r);
    if (rc == AKV_OK && c->baseline_kind) /* before adapt/churn change f or the keys */
        rc = run_baseline(c, &in, f, r);
    if (rc == AKV_OK) {
        /* churn grows the key array by at most 10% per round: room for it */
        akv_hash *grown = realloc(in.keys, (in.n + in.n / 10 + 1) * sizeof *in.keys);
        if (!grown)
            rc = AKV_ENOMEM;
        else
            in.keys = grown, rc = measure(c, &in, f, r);
    }
    akv_filter_destroy(f);
    free(in.keys);
    free(in.neg);
    return rc;
}
