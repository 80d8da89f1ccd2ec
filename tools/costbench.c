/*
 * costbench — the SSCF paper's experiments on a generated dataset, next to
 * a CBF given the same memory:
 *
 *   --experiment static  (§4.2) every negative is given to create (which
 *                        encodes the costliest, see --ratio), then every positive is
 *                        inserted; one line with the weighted FPR over all
 *                        negatives, the encoded ones and the others.
 *   --experiment time    build, query (1,000,000 absent keys), and for
 *                        dynamic kinds remove + insert of 1,000,000 keys, in
 *                        ns per key, best of --rounds runs interleaved over
 *                        the kinds in --filter (comma-separated), costs
 *                        given to every build.
 *   --experiment ada     (§4.5, default) the filter starts with positives
 *                        only, absorbs the costliest negatives at runtime,
 *                        then rounds of churn delete r% of the live keys and
 *                        insert r% new ones; one line per round.
 *
 *   costbench [--experiment static|ada|time]
 *             [--filter sscf|sscf-wide|sscf-static|sscf-packed-static]
 *             [--dataset shalla|ycsb] [--bits-per-key B] [--costs uniform|zipf:S]
 *             [--ratio F] [--rounds R] [--churn-pct P] [--seed S]
 *
 * sscf is the default (ada-SSCF, 4-bit packed counters); sscf-wide is
 * ada-SSCF in the paper's layout (6-bit counters); sscf-static is the
 * paper's plain SSCF (5-bit counters, no absorb). With
 * --ratio the filter encodes that share of |positives| (the paper's 0.05);
 * without it the filter's default applies (every given negative while
 * fewer than 10% of its counters are sealed) and the static experiment's
 * "vulnerable" split is the set the filter reports as encoded. The ada
 * experiment absorbs --ratio × |positives| negatives (default 0.05).
 * The dataset generators are filterbench's (the Makefile links
 * tools/filterbench/datasets.c into this tool too).
 * Costs are assigned as filterbench does (Zipf weights of ranks 1..M over a
 * seeded shuffle), so the two tools agree on a dataset and seed. Output: one
 * JSON object per round on stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adaptkv/filter.h"
#include "filters/sscf.h"
#include "tools/filterbench/datasets.h"
#include "util/order.h"

typedef struct opts {
    const char *dataset, *filter, *experiment;
    double bpk, skew, ratio, churn_pct;
    unsigned rounds;
    uint64_t seed;
} opts;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void assign_costs(const opts *o, akv_negative *neg, size_t n)
{
    uint64_t rng = o->seed * 7 + 3;
    for (size_t i = 0; i < n; i++)
        neg[i].cost = o->skew > 0 ? pow((double)(i + 1), -o->skew) : 1.0;
    for (size_t i = n; i > 1; i--) {
        size_t j = splitmix(&rng) % i;
        double t = neg[i - 1].cost;
        neg[i - 1].cost = neg[j].cost;
        neg[j].cost = t;
    }
}

static int by_cost_desc(const void *a, const void *b)
{
    double x = ((const akv_negative *)a)->cost, y = ((const akv_negative *)b)->cost;
    return (x < y) - (x > y);
}

/* False positives among neg[from, to): their cost and their count. */
typedef struct fp_sums {
    double bad, total;
    size_t fp, n;
} fp_sums;

static fp_sums sums(const akv_filter *f, const akv_negative *neg, size_t from, size_t to)
{
    fp_sums s = {0, 0, 0, to - from};
    for (size_t i = from; i < to; i++) {
        s.total += neg[i].cost;
        if (akv_filter_may_contain(f, neg[i].h)) {
            s.bad += neg[i].cost;
            s.fp++;
        }
    }
    return s;
}

static fp_sums sums_add(fp_sums a, fp_sums b)
{
    return (fp_sums){a.bad + b.bad, a.total + b.total, a.fp + b.fp, a.n + b.n};
}

static double weighted(fp_sums s)
{
    return s.total > 0 ? s.bad / s.total : 0;
}

/* Unweighted FPR. For a filter that ignores costs (the CBF) this is the
 * expectation of its weighted FPR, which one seed's weighted figure
 * estimates poorly under skewed costs: under Zipf 1.0 the costliest negative
 * alone carries ~7% of the cost, so that figure jumps by 7 points with one
 * false positive. */
static double unweighted(fp_sums s)
{
    return s.n ? (double)s.fp / (double)s.n : 0;
}

static uint64_t false_negatives(const akv_filter *f, const akv_hash *live, size_t n)
{
    uint64_t fn = 0;
    for (size_t i = 0; i < n; i++)
        fn += !akv_filter_may_contain(f, live[i]);
    return fn;
}

/* Build `kind` over the positives. "sscf-wide" is ada-SSCF in the paper's
 * counter layout (6 bits a counter), "sscf-static" the paper's plain SSCF
 * (wide layout, no adaptive bit: 5 bits), "sscf-packed-static" the default
 * 4-bit layout without absorb. Negatives (if any) are given to create. */
static akv_filter *make(const char *kind, const opts *o, size_t n, const akv_hash *keys,
                        const akv_negative *neg, size_t nn)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = o->bpk;
    p.expected_keys = n;
    static const struct {
        const char *name;
        uint32_t flags;
    } variants[] = {{"sscf-wide", AKV_SSCF_WIDE},
                    {"sscf-static", AKV_SSCF_WIDE | AKV_SSCF_STATIC},
                    {"sscf-packed-static", AKV_SSCF_STATIC}};
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++)
        if (!strcmp(kind, variants[i].name)) {
            kind = "sscf";
            p.flags |= variants[i].flags;
        }
    if (!strcmp(kind, "sscf") && o->ratio > 0)
        p.flags |= AKV_SSCF_RATIO_FLAGS((unsigned)lround(o->ratio * 100));
    akv_filter *f = NULL;
    if (akv_filter_build(akv_filter_kind_by_name(kind), &p, keys, n, neg, nn, &f) != AKV_OK) {
        fprintf(stderr, "costbench: cannot build %s\n", kind);
        exit(1);
    }
    return f;
}

/* The negatives the filter encoded at create (its "encoded" statistic). */
static size_t encoded_count(const akv_filter *f)
{
    char buf[1024] = "";
    if (f->kind->describe)
        f->kind->describe(f, buf, sizeof buf);
    const char *e = strstr(buf, "\"encoded\":");
    return e ? (size_t)strtoull(e + 10, NULL, 10) : 0;
}

static void report(unsigned round, const akv_filter *f, const akv_filter *cbf, const akv_negative *neg,
                   size_t nn, size_t top, uint64_t fn)
{
    fp_sums vul = sums(f, neg, 0, top), rest = sums(f, neg, top, nn), c = sums(cbf, neg, 0, nn);
    printf("{\"round\":%u,\"wfpr\":%.6g,\"wfpr_vulnerable\":%.6g,\"wfpr_others\":%.6g,\"cbf_wfpr\":%.6g,"
           "\"cbf_fpr\":%.6g,\"false_negatives\":%llu}\n",
           round, weighted(sums_add(vul, rest)), weighted(vul), weighted(rest), weighted(c), unweighted(c),
           (unsigned long long)fn);
    fflush(stdout);
}

/* Remove r% random live keys from both filters, then insert r% new keys
 * (fresh strings of the same generator, past the dataset's ids). */
static int churn_round(const opts *o, akv_filter *f, akv_filter *cbf, akv_hash *live, size_t *n,
                       uint64_t *next, uint64_t *rng)
{
    size_t r = (size_t)((double)*n * o->churn_pct / 100.0);
    for (size_t j = 0; j < r; j++) {
        size_t i = splitmix(rng) % *n;
        if (akv_filter_remove(f, live[i]) != AKV_OK || akv_filter_remove(cbf, live[i]) != AKV_OK)
            return -1;
        live[i] = live[--*n];
    }
    char buf[256];
    for (size_t j = 0; j < r; j++) {
        int len = akv_dataset_key(o->dataset, o->seed, (*next)++, buf, sizeof buf);
        akv_hash h = akv_hash_key(buf, (size_t)len, o->seed);
        akv_filter_insert(f, h);
        akv_filter_insert(cbf, h);
        live[(*n)++] = h;
    }
    return 0;
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile size_t g_sink;

typedef struct timing {
    double build, query, insert, remove;
} timing;

/* One timed pass of `kind`; keeps the minimum of each figure in *t. */
static void time_once(const char *kind, const opts *o, const akv_hash *pos, size_t np,
                      const akv_negative *neg, size_t nn, const akv_hash *q, size_t nq, timing *t)
{
    double t0 = now_ns();
    akv_filter *f = make(kind, o, np, pos, neg, nn);
    double t1 = now_ns();
    size_t yes = 0;
    for (size_t i = 0; i < nq; i++)
        yes += akv_filter_may_contain(f, q[i]);
    double t2 = now_ns();
    t->build = fmin(t->build, (t1 - t0) / (double)np);
    t->query = fmin(t->query, (t2 - t1) / (double)nq);
    g_sink += yes; /* keeps the query loop from being optimised away */
    if (f->kind->remove) {
        size_t n = np < nq ? np : nq;
        for (size_t i = 0; i < n; i++)
            akv_filter_remove(f, pos[i]);
        double t3 = now_ns();
        for (size_t i = 0; i < n; i++)
            akv_filter_insert(f, pos[i]);
        double t4 = now_ns();
        t->remove = fmin(t->remove, (t3 - t2) / (double)n);
        t->insert = fmin(t->insert, (t4 - t3) / (double)n);
    }
    akv_filter_destroy(f);
}

static int run_time(const opts *o, const akv_hash *pos, size_t np, const akv_negative *neg, size_t nn)
{
    char list[256];
    snprintf(list, sizeof list, "%s", o->filter);
    const char *kinds[16];
    size_t nk = 0;
    for (char *save = NULL, *k = strtok_r(list, ",", &save); k && nk < 16; k = strtok_r(NULL, ",", &save))
        kinds[nk++] = k;
    size_t nq = 1000000;
    akv_hash *q = malloc(nq * sizeof *q);
    for (size_t i = 0; i < nq; i++) {
        uint64_t k[2] = {o->seed ^ 0xab5e47ULL, i};
        q[i] = akv_hash_key(k, sizeof k, o->seed);
    }
    timing t[16];
    for (size_t i = 0; i < nk; i++)
        t[i] = (timing){INFINITY, INFINITY, INFINITY, INFINITY};
    for (unsigned r = 0; r < (o->rounds ? o->rounds : 1); r++)
        for (size_t i = 0; i < nk; i++)
            time_once(kinds[i], o, pos, np, neg, nn, q, nq, &t[i]);
    for (size_t i = 0; i < nk; i++)
        printf(
            "{\"filter\":\"%s\",\"bits_per_key\":%g,\"build_ns\":%.1f,\"query_ns\":%.1f,\"insert_ns\":%.1f,"
            "\"remove_ns\":%.1f}\n",
            kinds[i], o->bpk, t[i].build, t[i].query, isinf(t[i].insert) ? 0 : t[i].insert,
            isinf(t[i].remove) ? 0 : t[i].remove);
    free(q);
    return 0;
}

static int run(const opts *o)
{
    akv_hash *pos, *negh;
    size_t np, nn;
    if (akv_dataset_generate(o->dataset, o->seed, &pos, &np, &negh, &nn) != AKV_OK)
        return fprintf(stderr, "costbench: unknown dataset %s\n", o->dataset), 1;
    akv_negative *neg = malloc(nn * sizeof *neg);
    for (size_t i = 0; i < nn; i++)
        neg[i].h = negh[i];
    free(negh);
    assign_costs(o, neg, nn);
    akvi_sort(neg, nn, sizeof *neg, by_cost_desc); /* the costliest come first */
    size_t top = (size_t)ceil((o->ratio > 0 ? o->ratio : 0.05) * (double)np);
    top = top > nn ? nn : top;

    if (!strcmp(o->experiment, "time")) {
        int rc = run_time(o, pos, np, neg, nn);
        free(pos);
        free(neg);
        return rc;
    }
    bool stat = !strcmp(o->experiment, "static");
    akv_filter *f = make(o->filter, o, np, pos, neg, stat ? nn : 0), *cbf = make("cbf", o, np, pos, NULL, 0);
    if (stat && o->ratio <= 0)
        top = encoded_count(f);
    printf("{\"experiment\":\"%s\",\"filter\":\"%s\",\"dataset\":\"%s\",\"keys\":%zu,\"negatives\":%zu,"
           "\"vulnerable\":%zu,\"bits_per_key\":%.3f,\"cbf_bits_per_key\":%.3f,\"churn_pct\":%g}\n",
           o->experiment, o->filter, o->dataset, np, nn, top, 8.0 * (double)akv_filter_memory(f) / (double)np,
           8.0 * (double)akv_filter_memory(cbf) / (double)np, o->churn_pct);
    report(0, f, cbf, neg, nn, top, false_negatives(f, pos, np));
    if (stat) {
        akv_filter_destroy(f);
        akv_filter_destroy(cbf);
        free(pos);
        free(neg);
        return 0;
    }
    for (size_t i = 0; i < top; i++)
        if (akv_filter_absorb(f, neg[i].h) != AKV_OK)
            return fprintf(stderr, "costbench: %s cannot absorb\n", o->filter), 1;
    akv_hash *live = realloc(pos, (np + 1) * sizeof *live);
    size_t n = np;
    uint64_t next = np + nn, rng = o->seed * 31 + 7;
    report(0, f, cbf, neg, nn, top, false_negatives(f, live, n));
    for (unsigned round = 1; round <= o->rounds; round++) {
        if (churn_round(o, f, cbf, live, &n, &next, &rng) != 0)
            return fprintf(stderr, "costbench: remove refused in round %u\n", round), 1;
        report(round, f, cbf, neg, nn, top, false_negatives(f, live, n));
    }
    akv_filter_destroy(f);
    akv_filter_destroy(cbf);
    free(live);
    free(neg);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("costbench (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
            return 0;
        }
    opts o = {"shalla", "sscf", "ada", 20, 1.0, -1, 2, 40, 1};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--dataset"))
            o.dataset = v;
        else if (!strcmp(a, "--experiment"))
            o.experiment = v;
        else if (!strcmp(a, "--filter"))
            o.filter = v;
        else if (!strcmp(a, "--bits-per-key"))
            o.bpk = atof(v);
        else if (!strcmp(a, "--costs"))
            o.skew = strncmp(v, "zipf:", 5) == 0 ? atof(v + 5) : 0;
        else if (!strcmp(a, "--ratio"))
            o.ratio = atof(v);
        else if (!strcmp(a, "--rounds"))
            o.rounds = (unsigned)atoi(v);
        else if (!strcmp(a, "--churn-pct"))
            o.churn_pct = atof(v);
        else if (!strcmp(a, "--seed"))
            o.seed = strtoull(v, NULL, 10);
        else
            return fprintf(stderr, "usage: see the comment at the top of costbench.c (bad option %s)\n", a),
                   2;
    }
    if (argc % 2 == 0 || !(o.bpk > 0) || o.ratio > 1 || o.churn_pct < 0 || o.churn_pct > 100 ||
        (strcmp(o.experiment, "static") && strcmp(o.experiment, "ada") && strcmp(o.experiment, "time")))
        return fprintf(stderr, "costbench: bad arguments\n"), 2;
    return run(&o);
}
