/*
 * aqfbench — the quotient-filter kinds side by side (qf vs aqf) on the
 * operations the AQF paper measures in Table 2/5 and Fig. 3: space, random
 * inserts, sort + bulk load, merge of two half-size filters (with and
 * without the keys), and query throughput. Hashes are random 128-bit values
 * (the engine hashes keys once, so hashing is not part of any timing).
 *
 *   aqfbench [--keys N] [--remainder-bits R] [--queries Q] [--trials T] [--json]
 *
 * Every timing is the best of T trials; qf and aqf alternate within a trial
 * so both see the same machine state.
 *
 *   aqfbench --micro Q [--remainder-bits R] [--queries N] [--zipf authors|exact]
 *            [--seed S] [--mode core|api|both] [--json]
 *
 * The AQF authors' filter micro-benchmark protocol (their test/test_micro.c;
 * docs/filters.md, "Measured against the authors' code"): random hashes are
 * inserted into an empty AQF of 2^Q home slots until 90 % of them are used
 * (timed), then that same filter, cold, answers N queries drawn from Zipf 1.5
 * over 10^7 items and adapts on every false positive (timed). `--zipf
 * authors` draws ranks with the authors' generator (an approximate inverse
 * CDF; it puts ~60 % of the draws on rank 1), `exact` with the exact
 * distribution (~38 %). `core` drives the filter core directly, without
 * locks, as the authors' code runs; `api` drives the concurrent filter API
 * (a mutex and a sequence counter per insert, a sequence-counter check per
 * query). Both report wall and CPU time, FPR during the pass, bits/key, and
 * check afterwards that every inserted key is still found.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "filters/aqf.h"
#include "filters/qf_core.h"
#include "revmap/revmap.h"

typedef struct cfg {
    uint64_t keys, queries;
    uint32_t r;
    int trials;
    int json;
} cfg;

typedef struct res {
    double insert_ns, sort_ns, bulk_ns, merge_ns, merge_exact_ns, query_neg_ns, query_pos_ns;
    double bits_per_key, fpr;
    size_t bytes;
} res;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static akv_hash *random_hashes(uint64_t n, uint64_t seed)
{
    akv_hash *v = malloc(n * sizeof *v + 1);
    if (!v)
        exit(2);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (akv_hash){splitmix(&seed), splitmix(&seed)};
    return v;
}

static double mind(double a, double b)
{
    return a < b ? a : b;
}

static akv_filter_params params(uint64_t n, uint32_t r)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = n;
    p.remainder_bits = r;
    return p;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "aqfbench: %s: %s\n", what, akv_strerror(rc));
    exit(1);
}

/* Random inserts into an empty sealed filter sized for n. */
static akv_filter *time_inserts(const akv_filter_kind *k, const cfg *c, const akv_hash *keys, double *ns)
{
    akv_filter_params p = params(c->keys, c->r);
    akv_filter *f = NULL;
    int rc = akv_filter_create(k, &p, NULL, 0, &f);
    if (rc == AKV_OK)
        rc = akv_filter_finish(f);
    double t = now_ns();
    for (uint64_t i = 0; i < c->keys && rc == AKV_OK; i++)
        rc = akv_filter_insert(f, keys[i]);
    *ns = (now_ns() - t) / (double)c->keys;
    if (rc != AKV_OK)
        die("insert", rc);
    return f;
}

static void time_bulk(const akv_filter_kind *k, const cfg *c, const akv_hash *keys, res *r)
{
    akv_hash *v = malloc(c->keys * sizeof *v + 1);
    memcpy(v, keys, c->keys * sizeof *v);
    double t0 = now_ns();
    akvi_qf_sort(v, c->keys);
    double t1 = now_ns();
    akv_filter_params p = params(c->keys, c->r);
    akv_filter *f = NULL;
    int rc = akvi_aqf_bulk_load(k, &p, v, c->keys, &f);
    double t2 = now_ns();
    if (rc != AKV_OK)
        die("bulk load", rc);
    r->sort_ns = mind(r->sort_ns, (t1 - t0) / (double)c->keys);
    r->bulk_ns = mind(r->bulk_ns, (t2 - t1) / (double)c->keys);
    akv_filter_destroy(f);
    free(v);
}

/* Two half-size filters (one quotient bit fewer, one remainder bit more)
 * merged into the full geometry: the output equals a direct build. */
static void time_merge(const akv_filter_kind *k, const cfg *c, const akv_hash *keys, res *r)
{
    uint64_t h = c->keys / 2;
    akv_filter_params p = params(h, c->r + 1);
    akv_filter *a = NULL, *b = NULL, *m = NULL;
    int rc = akv_filter_build(k, &p, keys, h, NULL, 0, &a);
    if (rc == AKV_OK)
        rc = akv_filter_build(k, &p, keys + h, c->keys - h, NULL, 0, &b);
    if (rc != AKV_OK)
        die("half build", rc);
    akvi_aqf_info ia;
    akvi_aqf_info_get(a, &ia);
    double t = now_ns();
    rc = akvi_aqf_merge(a, b, ia.q + 1, &m);
    r->merge_ns = mind(r->merge_ns, (now_ns() - t) / (double)c->keys);
    if (rc != AKV_OK)
        die("merge", rc);
    akv_filter_destroy(m);
    akvi_memrevmap *ra = NULL, *rb = NULL;
    akvi_memrevmap_create(keys, h, &ra);
    akvi_memrevmap_create(keys + h, c->keys - h, &rb);
    t = now_ns();
    rc = akvi_aqf_merge_exact(a, akvi_memrevmap_revmap(ra), b, akvi_memrevmap_revmap(rb), ia.q + 1, c->r, &m);
    r->merge_exact_ns = mind(r->merge_exact_ns, (now_ns() - t) / (double)c->keys);
    if (rc != AKV_OK)
        die("exact merge", rc);
    akv_filter_destroy(m);
    akvi_memrevmap_destroy(ra), akvi_memrevmap_destroy(rb);
    akv_filter_destroy(a), akv_filter_destroy(b);
}

/* Queries of both kinds alternate in slices, so a busy machine slows both alike. */
static void time_queries(akv_filter *const *f, const cfg *c, const akv_hash *keys, const akv_hash *neg,
                         res **r)
{
    enum { SLICE = 100000 };
    double tn[2] = {0, 0}, tp[2] = {0, 0};
    uint64_t hits[2] = {0, 0}, fp[2] = {0, 0};
    uint64_t nq = c->queries < c->keys ? c->queries : c->keys;
    for (uint64_t s = 0; s < c->queries; s += SLICE)
        for (int k = 0; k < 2; k++) {
            uint64_t e = s + SLICE < c->queries ? s + SLICE : c->queries;
            double t = now_ns();
            for (uint64_t i = s; i < e; i++)
                fp[k] += akv_filter_may_contain(f[k], neg[i]);
            tn[k] += now_ns() - t;
        }
    for (uint64_t s = 0; s < nq; s += SLICE)
        for (int k = 0; k < 2; k++) {
            uint64_t e = s + SLICE < nq ? s + SLICE : nq;
            double t = now_ns();
            for (uint64_t i = s; i < e; i++)
                hits[k] += akv_filter_may_contain(f[k], keys[(i * 0x9e3779b97f4a7c15ULL) % c->keys]);
            tp[k] += now_ns() - t;
        }
    for (int k = 0; k < 2; k++) {
        r[k]->query_neg_ns = mind(r[k]->query_neg_ns, tn[k] / (double)c->queries);
        r[k]->query_pos_ns = mind(r[k]->query_pos_ns, tp[k] / (double)nq);
        r[k]->fpr = (double)fp[k] / (double)c->queries;
        if (hits[k] != nq)
            fprintf(stderr, "aqfbench: false negatives!\n");
    }
}

static void trial(const akv_filter_kind *const *k, const cfg *c, const akv_hash *keys, const akv_hash *neg,
                  res **r)
{
    akv_filter *f[2];
    for (int i = 0; i < 2; i++) {
        double ins;
        f[i] = time_inserts(k[i], c, keys, &ins);
        r[i]->insert_ns = mind(r[i]->insert_ns, ins);
        r[i]->bytes = akv_filter_memory(f[i]);
        r[i]->bits_per_key = (double)r[i]->bytes * 8.0 / (double)c->keys;
    }
    time_queries(f, c, keys, neg, r);
    for (int i = 0; i < 2; i++) {
        akv_filter_destroy(f[i]);
        time_bulk(k[i], c, keys, r[i]);
        time_merge(k[i], c, keys, r[i]);
    }
}

static void print_text(const cfg *c, const res *q, const res *a)
{
    printf("keys %llu, r = %u, queries %llu, best of %d\n", (unsigned long long)c->keys, c->r,
           (unsigned long long)c->queries, c->trials);
    printf("%-30s %12s %12s %8s\n", "", "qf", "aqf", "aqf/qf");
    const char *names[] = {
        "bytes",        "bits/key",           "random insert ns/key", "sort ns/key",      "bulk load ns/key",
        "merge ns/key", "exact merge ns/key", "query absent ns",      "query present ns", "fpr (absent)"};
    double qv[] = {(double)q->bytes, q->bits_per_key,   q->insert_ns,    q->sort_ns,      q->bulk_ns,
                   q->merge_ns,      q->merge_exact_ns, q->query_neg_ns, q->query_pos_ns, q->fpr};
    double av[] = {(double)a->bytes, a->bits_per_key,   a->insert_ns,    a->sort_ns,      a->bulk_ns,
                   a->merge_ns,      a->merge_exact_ns, a->query_neg_ns, a->query_pos_ns, a->fpr};
    for (int i = 0; i < 10; i++)
        printf("%-30s %12.4g %12.4g %8.3f\n", names[i], qv[i], av[i], qv[i] ? av[i] / qv[i] : 0);
    printf("aqf: merge is %.1fx faster than random inserts; sort+bulk load takes %.2fx their time\n",
           a->insert_ns / a->merge_ns, (a->sort_ns + a->bulk_ns) / a->insert_ns);
}

static void print_json_one(const char *name, const res *r)
{
    printf("\"%s\":{\"bytes\":%zu,\"bits_per_key\":%.4f,\"insert_ns\":%.2f,\"sort_ns\":%.2f,\"bulk_ns\":%.2f,"
           "\"merge_ns\":%.2f,\"merge_exact_ns\":%.2f,\"query_absent_ns\":%.2f,\"query_present_ns\":%.2f,"
           "\"fpr\":%.6f}",
           name, r->bytes, r->bits_per_key, r->insert_ns, r->sort_ns, r->bulk_ns, r->merge_ns,
           r->merge_exact_ns, r->query_neg_ns, r->query_pos_ns, r->fpr);
}

/* ---- the authors' filter micro-benchmark (--micro) ------------------------ */

typedef struct micro_cfg {
    uint32_t qlog, r;
    uint64_t queries, universe, seed;
    int authors_zipf; /* 1: the authors' rank generator, 0: the exact distribution */
    int core, api, json;
} micro_cfg;

typedef struct micro_res {
    double ins_wall, ins_cpu, q_wall, q_cpu; /* ns per insert / per query */
    uint64_t inserted, fps, adapt_errors, false_negatives;
    size_t bytes;
} micro_res;

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Zipf rank as the authors' generator draws it: for u in [0, 1) it solves
 * F(x) = u·T by Newton's method from x = U/2 (x kept >= 1) and stops at the
 * first step shorter than 1, rank floor(x). F is 12 times the Euler-Maclaurin
 * estimate of the generalised harmonic number H(x, s), 12(x^(1-s) - 1)/(1 - s)
 * + 6 + 6x^-s + s - s·x^(-s-1); their target T has s·U^(1-s) for the last
 * term. The approximations put ~60 % of the draws at s = 1.5 on rank 1 (the
 * exact distribution: 38 %). */
static uint64_t zipf_authors(double u, double s, double U)
{
    double t = u * (12 * (pow(U, 1 - s) - 1) / (1 - s) + 6 + 6 * pow(U, -s) + s - s * pow(U, 1 - s));
    double x = U / 2;
    for (int it = 0; it < 1000; it++) {
        double f = 12 * (pow(x, 1 - s) - 1) / (1 - s) + 6 + 6 * pow(x, -s) + s - s * pow(x, -s - 1) - t;
        double df = 12 * pow(x, -s) - 6 * s * pow(x, -s - 1) + s * (s + 1) * pow(x, -s - 2);
        double nx = x - f / df > 1 ? x - f / df : 1;
        if (fabs(nx - x) < 1)
            return (uint64_t)nx;
        x = nx;
    }
    return (uint64_t)x;
}

/* Exact Zipf(s) ranks 1..U by inverse CDF (a table of U doubles). */
typedef struct zipf_exact {
    double *cdf;
    uint64_t n;
} zipf_exact;

static int zipf_exact_init(zipf_exact *z, uint64_t n, double s)
{
    z->n = n;
    z->cdf = malloc(n * sizeof *z->cdf);
    if (!z->cdf)
        return -1;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] = (sum += pow((double)(i + 1), -s));
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] /= sum;
    return 0;
}

static uint64_t zipf_exact_draw(const zipf_exact *z, double u)
{
    uint64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] <= u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo + 1;
}

/* The query stream: ranks drawn as named, each hashed (the hash is computed
 * before timing, as the authors' driver does). Reports rank 1's share. */
static akv_hash *micro_queries(const micro_cfg *c, double *rank1)
{
    akv_hash *q = malloc(c->queries * sizeof *q + 1);
    zipf_exact z = {0};
    if (!q || (!c->authors_zipf && zipf_exact_init(&z, c->universe, 1.5) != 0)) {
        fprintf(stderr, "aqfbench: out of memory\n");
        exit(2);
    }
    uint64_t rng = c->seed * 0x100000001b3ULL + 7, ones = 0;
    for (uint64_t i = 0; i < c->queries; i++) {
        double u = (double)(splitmix(&rng) >> 11) * 0x1.0p-53;
        uint64_t rank = c->authors_zipf ? zipf_authors(u, 1.5, (double)c->universe) : zipf_exact_draw(&z, u);
        ones += rank == 1;
        uint64_t k[2] = {c->seed, rank};
        q[i] = akv_hash_key(k, sizeof k, 0x9e3779b97f4a7c15ULL);
    }
    free(z.cdf);
    *rank1 = (double)ones / (double)c->queries;
    return q;
}

/* Adapt passes report whether adapting failed other than "not a false
 * positive" (AKV_NOTFOUND: a stored key, impossible here). */
static void count_adapt(micro_res *r, int rc)
{
    if (rc != AKV_OK)
        r->adapt_errors++;
}

/* The core alone, no locks: inserts, then the cold adaptive pass. */
/* The reverse map of the inserted keys, which adapting reads (the authors'
 * micro-benchmark adapts without one). Built after the timed inserts, so
 * the inserts run with the memory the authors' driver has. */
static akv_revmap *revmap_for(const akv_hash *keys, uint64_t n, akvi_memrevmap **m)
{
    if (!*m) {
        int rc = akvi_memrevmap_create(keys, n, m);
        if (rc != AKV_OK)
            die("reverse map", rc);
    }
    return akvi_memrevmap_revmap(*m);
}

static void micro_core(const micro_cfg *c, const akv_hash *keys, uint64_t n, const akv_hash *q,
                       akvi_memrevmap **m, micro_res *r)
{
    akvi_qf f;
    int rc = akvi_qf_init(&f, c->qlog, c->r, 0, true);
    if (rc != AKV_OK)
        die("core init", rc);
    double w = now_ns(), t = cpu_ns();
    uint64_t i = 0;
    for (; i < n && rc == AKV_OK; i++)
        rc = akvi_qf_insert(&f, keys[i]);
    r->ins_cpu = (cpu_ns() - t) / (double)n;
    r->ins_wall = (now_ns() - w) / (double)n;
    if (rc != AKV_OK)
        die("core insert", rc);
    r->inserted = i;
    akv_revmap *rm = revmap_for(keys, n, m);
    w = now_ns(), t = cpu_ns();
    for (uint64_t j = 0; j < c->queries; j++)
        if (akvi_qf_lookup(&f, q[j]) != 0) {
            r->fps++;
            count_adapt(r, akvi_qf_adapt(&f, q[j], rm));
        }
    r->q_cpu = (cpu_ns() - t) / (double)c->queries;
    r->q_wall = (now_ns() - w) / (double)c->queries;
    for (uint64_t j = 0; j < n; j++)
        r->false_negatives += akvi_qf_lookup(&f, keys[j]) != 1;
    r->bytes = akvi_qf_memory(&f);
    akvi_qf_free(&f);
}

/* The concurrent filter API (mutex + sequence counter): the same steps. */
static void micro_api(const micro_cfg *c, const akv_hash *keys, uint64_t n, const akv_hash *q,
                      akvi_memrevmap **m, micro_res *r)
{
    akv_filter_params p = params(n, c->r);
    akv_filter *f = NULL;
    int rc = akv_filter_create(akv_filter_kind_by_name("aqf"), &p, NULL, 0, &f);
    if (rc == AKV_OK)
        rc = akv_filter_finish(f);
    if (rc != AKV_OK)
        die("api create", rc);
    akvi_aqf_info info;
    akvi_aqf_info_get(f, &info);
    if (info.slots != 1ULL << c->qlog)
        die("api geometry", AKV_EINVAL);
    double w = now_ns(), t = cpu_ns();
    uint64_t i = 0;
    for (; i < n && rc == AKV_OK; i++)
        rc = akv_filter_insert(f, keys[i]);
    r->ins_cpu = (cpu_ns() - t) / (double)n;
    r->ins_wall = (now_ns() - w) / (double)n;
    if (rc != AKV_OK)
        die("api insert", rc);
    r->inserted = i;
    akv_revmap *rm = revmap_for(keys, n, m);
    w = now_ns(), t = cpu_ns();
    for (uint64_t j = 0; j < c->queries; j++)
        if (akv_filter_may_contain(f, q[j])) {
            r->fps++;
            count_adapt(r, akv_filter_adapt(f, q[j], rm));
        }
    r->q_cpu = (cpu_ns() - t) / (double)c->queries;
    r->q_wall = (now_ns() - w) / (double)c->queries;
    for (uint64_t j = 0; j < n; j++)
        r->false_negatives += !akv_filter_may_contain(f, keys[j]);
    r->bytes = akv_filter_memory(f);
    akv_filter_destroy(f);
}

static void micro_print(const micro_cfg *c, const char *name, const micro_res *r, int *first)
{
    double fpr = (double)r->fps / (double)c->queries, bpk = (double)r->bytes * 8.0 / (double)r->inserted;
    if (c->json) {
        printf("%s\"%s\":{\"inserts\":%llu,\"insert_ns_wall\":%.2f,\"insert_ns_cpu\":%.2f,"
               "\"query_ns_wall\":%.2f,\"query_ns_cpu\":%.2f,\"false_positives\":%llu,\"fpr\":%.8f,"
               "\"adapt_errors\":%llu,\"false_negatives\":%llu,\"bytes\":%zu,\"bits_per_key\":%.4f}",
               *first ? "" : ",", name, (unsigned long long)r->inserted, r->ins_wall, r->ins_cpu, r->q_wall,
               r->q_cpu, (unsigned long long)r->fps, fpr, (unsigned long long)r->adapt_errors,
               (unsigned long long)r->false_negatives, r->bytes, bpk);
    } else {
        printf("%-5s inserts %llu: %.1f ns wall, %.1f ns cpu; adaptive queries: %.2f ns wall, %.2f ns cpu; "
               "false positives %llu (fpr %.3g), adapt errors %llu, false negatives %llu, %.3f bits/key\n",
               name, (unsigned long long)r->inserted, r->ins_wall, r->ins_cpu, r->q_wall, r->q_cpu,
               (unsigned long long)r->fps, fpr, (unsigned long long)r->adapt_errors,
               (unsigned long long)r->false_negatives, bpk);
    }
    *first = 0;
}

static int micro_run(const micro_cfg *c)
{
    /* 90 % of the slots, computed as the authors' driver does (in float) */
    uint64_t n = (uint64_t)((float)(1ULL << c->qlog) * 0.9f);
    akv_hash *keys = random_hashes(n, c->seed * 2 + 1);
    double rank1;
    akv_hash *q = micro_queries(c, &rank1);
    akvi_memrevmap *m = NULL;
    micro_res rc_core = {0}, rc_api = {0};
    if (c->core)
        micro_core(c, keys, n, q, &m, &rc_core);
    if (c->api)
        micro_api(c, keys, n, q, &m, &rc_api);
    int first = 1;
    if (c->json)
        printf("{\"slots_log2\":%u,\"remainder_bits\":%u,\"queries\":%llu,\"universe\":%llu,\"seed\":%llu,"
               "\"zipf\":\"%s\",\"rank1_share\":%.4f,\"hw_select\":%s,",
               c->qlog, c->r, (unsigned long long)c->queries, (unsigned long long)c->universe,
               (unsigned long long)c->seed, c->authors_zipf ? "authors" : "exact", rank1,
               akvi_qf_hw_select() ? "true" : "false");
    else
        printf("2^%u slots, r = %u, %llu queries, Zipf 1.5 over %llu (%s generator, rank 1: %.1f %%), seed "
               "%llu, "
               "%s select\n",
               c->qlog, c->r, (unsigned long long)c->queries, (unsigned long long)c->universe,
               c->authors_zipf ? "authors'" : "exact", 100 * rank1, (unsigned long long)c->seed,
               akvi_qf_hw_select() ? "POPCNT/BMI2" : "portable");
    if (c->core)
        micro_print(c, "core", &rc_core, &first);
    if (c->api)
        micro_print(c, "api", &rc_api, &first);
    if (c->json)
        printf("}\n");
    akvi_memrevmap_destroy(m);
    free(keys), free(q);
    return rc_core.false_negatives || rc_api.false_negatives ? 1 : 0;
}

static int parse_micro(int argc, char **argv, micro_cfg *m)
{
    *m = (micro_cfg){0, 9, 10000000, 10000000, 1, 1, 1, 1, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json"))
            m->json = 1;
        else if (!strcmp(a, "--micro") && v)
            m->qlog = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--queries") && v)
            m->queries = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--remainder-bits") && v)
            m->r = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--seed") && v)
            m->seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--zipf") && v && (!strcmp(v, "authors") || !strcmp(v, "exact")))
            m->authors_zipf = !strcmp(v, "authors"), i++;
        else if (!strcmp(a, "--mode") && v && (!strcmp(v, "core") || !strcmp(v, "api") || !strcmp(v, "both")))
            m->core = strcmp(v, "api") != 0, m->api = strcmp(v, "core") != 0, i++;
        else
            return -1;
    }
    return m->qlog >= 6 && m->qlog <= 30 && m->queries > 0 && m->r >= 2 && m->r <= 32 && m->qlog + m->r <= 64
               ? 0
               : -1;
}

static int parse(int argc, char **argv, cfg *c)
{
    *c = (cfg){10000000, 10000000, 9, 3, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json"))
            c->json = 1;
        else if (!strcmp(a, "--keys") && v)
            c->keys = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--queries") && v)
            c->queries = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--remainder-bits") && v)
            c->r = (uint32_t)atoi(v), i++;
        else if (!strcmp(a, "--trials") && v)
            c->trials = atoi(v), i++;
        else
            return -1;
    }
    return c->keys >= 1000 && c->queries > 0 && c->r >= 2 && c->r < 31 && c->trials > 0 ? 0 : -1;
}

static const char usage_text[] =
    "usage: aqfbench [--keys N>=1000] [--remainder-bits R] [--queries Q] [--trials T] [--json]\n"
    "       aqfbench --micro LOG2_SLOTS (6..30) [--remainder-bits R] [--queries Q] [--seed S]\n"
    "                [--zipf authors|exact] [--mode core|api|both] [--json]\n";

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("aqfbench (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
            return 0;
        }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--micro")) {
            micro_cfg m;
            if (parse_micro(argc, argv, &m) != 0) {
                fputs(usage_text, stderr);
                return 2;
            }
            return micro_run(&m);
        }
    cfg c;
    if (parse(argc, argv, &c) != 0) {
        fputs(usage_text, stderr);
        return 2;
    }
    akv_hash *keys = random_hashes(c.keys, 1), *neg = random_hashes(c.queries, 2);
    const akv_filter_kind *kinds[2] = {akv_filter_kind_by_name("qf"), akv_filter_kind_by_name("aqf")};
    res rq = {1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 1e30, 0, 0, 0}, ra = rq;
    res *rs[2] = {&rq, &ra};
    for (int t = 0; t < c.trials; t++)
        trial(kinds, &c, keys, neg, rs);
    if (c.json) {
        printf("{\"keys\":%llu,\"remainder_bits\":%u,\"queries\":%llu,\"trials\":%d,",
               (unsigned long long)c.keys, c.r, (unsigned long long)c.queries, c.trials);
        print_json_one("qf", &rq);
        printf(",");
        print_json_one("aqf", &ra);
        printf("}\n");
    } else {
        print_text(&c, &rq, &ra);
    }
    free(keys), free(neg);
    return 0;
}
