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
 */
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
    akv_qf_sort(v, c->keys);
    double t1 = now_ns();
    akv_filter_params p = params(c->keys, c->r);
    akv_filter *f = NULL;
    int rc = akv_aqf_bulk_load(k, &p, v, c->keys, &f);
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
    akv_aqf_info ia;
    akv_aqf_info_get(a, &ia);
    double t = now_ns();
    rc = akv_aqf_merge(a, b, ia.q + 1, &m);
    r->merge_ns = mind(r->merge_ns, (now_ns() - t) / (double)c->keys);
    if (rc != AKV_OK)
        die("merge", rc);
    akv_filter_destroy(m);
    akv_memrevmap *ra = NULL, *rb = NULL;
    akv_memrevmap_create(keys, h, &ra);
    akv_memrevmap_create(keys + h, c->keys - h, &rb);
    t = now_ns();
    rc = akv_aqf_merge_exact(a, akv_memrevmap_revmap(ra), b, akv_memrevmap_revmap(rb), ia.q + 1, c->r, &m);
    r->merge_exact_ns = mind(r->merge_exact_ns, (now_ns() - t) / (double)c->keys);
    if (rc != AKV_OK)
        die("exact merge", rc);
    akv_filter_destroy(m);
    akv_memrevmap_destroy(ra), akv_memrevmap_destroy(rb);
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

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("aqfbench (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
            return 0;
        }
    cfg c;
    if (parse(argc, argv, &c) != 0) {
        fprintf(
            stderr,
            "usage: aqfbench [--keys N>=1000] [--remainder-bits R] [--queries Q] [--trials T] [--json]\n");
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
