/*
 * filterbench — every filter kind alone in memory: FPR against its formula,
 * ns per insert and query, bits/key, words touched per query, adaptivity
 * (--adapt), cost-weighted FPR (--negatives/--costs) and churn (--churn).
 *
 * Keys: members are keys 0..N-1 of one key space; absent keys come from a
 * disjoint space. Queries are drawn from a universe of U absent keys
 * (uniform or Zipfian over it); without --universe every query is a fresh
 * absent key. All randomness is seeded (--seed). With --baseline a second
 * kind is built over the same keys and both are timed on the same queries
 * in alternating rounds, so the speed ratio comes from one run.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adaptkv/filter.h"
#include "filters/shbf.h"
#include "filters/sscf.h"
#include "revmap/revmap.h"
#include "tools/filterbench/bench.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: filterbench --filter KIND [options]\n"
                 "  --filter KIND          filter kind (--list shows them)\n"
                 "  --keys N               members (default 1000000)\n"
                 "  --bits-per-key B       memory budget (default 10)\n"
                 "  --queries Q            absent-key queries (default 1000000)\n"
                 "  --query-dist D         uniform | zipf:S (default uniform)\n"
                 "  --universe U           absent keys the queries are drawn from (default: all distinct)\n"
                 "  --seed S               random seed (default 1)\n"
                 "  --remainder-bits R     quotient filters: remainder bits\n"
                 "  --load-factor L        quotient filters: slot fill (0..1)\n"
                 "  --num-hashes K         override k\n"
                 "  --shifts T             shbf: t shifted copies per group (1..7, default 1)\n"
                 "  --adapt                replay the queries, adapting on every false positive\n"
                 "  --cpu-time             time with the process CPU clock instead of the wall clock\n"
                 "  --negatives M          M known negative keys with costs, given to the build\n"
                 "  --costs C              uniform | zipf:S (costs of the negatives)\n"
                 "  --dataset NAME         keys and negatives from a generated dataset (shalla, ycsb)\n"
                 "  --churn R              R rounds removing and re-inserting 10%% of the keys\n"
                 "  --static               sscf: the paper's plain SSCF (5-bit counters, no runtime\n"
                 "                         learning) instead of the default ada-SSCF\n"
                 "  --wide                 sscf: ada-SSCF in the paper's counter layout (6 bits a\n"
                 "                         counter) instead of the default packed 4-bit codes\n"
                 "  --baseline KIND        also build KIND over the same keys and time both on the\n"
                 "                         same queries, alternating, in --rounds rounds; reports\n"
                 "                         medians and the speed-up (baseline ns / this filter's ns)\n"
                 "  --rounds R             timing rounds with --baseline (default 5)\n"
                 "  --json                 one JSON object on stdout\n"
                 "  --list                 list the filter kinds\n");
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (errno || end == s)
        return -1;
    /* Accept 1e6 and 10M-style suffixes. */
    if (*end == 'K' || *end == 'k')
        d *= 1e3, end++;
    else if (*end == 'M' || *end == 'm')
        d *= 1e6, end++;
    else if (*end == 'G' || *end == 'g')
        d *= 1e9, end++;
    if (*end || d < 0 || d > 1e15)
        return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_dist(const char *s, fb_dist *d)
{
    if (strcmp(s, "uniform") == 0) {
        d->zipf = false;
        return 0;
    }
    if (strncmp(s, "zipf:", 5) == 0) {
        char *end;
        d->s = strtod(s + 5, &end);
        d->zipf = true;
        return (*end || !(d->s > 0) || d->s > 10) ? -1 : 0;
    }
    return -1;
}

static void list_kinds(void)
{
    const akv_filter_kind *k;
    for (size_t i = 0; (k = akv_filter_kind_at(i)); i++)
        printf("%-8s %s\n", k->name, k->summary ? k->summary : "");
}

/* Returns 0 on success, 2 on a usage error (message printed). */
static int parse_args(int argc, char **argv, fb_config *c)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, takes = 1;
        if (!strcmp(a, "--filter") && v)
            c->filter = v;
        else if (!strcmp(a, "--keys") && v)
            bad = parse_u64(v, &c->keys);
        else if (!strcmp(a, "--queries") && v)
            bad = parse_u64(v, &c->queries);
        else if (!strcmp(a, "--universe") && v)
            bad = parse_u64(v, &c->universe);
        else if (!strcmp(a, "--seed") && v)
            bad = parse_u64(v, &c->seed);
        else if (!strcmp(a, "--negatives") && v)
            bad = parse_u64(v, &c->negatives);
        else if (!strcmp(a, "--churn") && v)
            bad = parse_u64(v, &c->churn);
        else if (!strcmp(a, "--bits-per-key") && v)
            bad = !((c->params.bits_per_key = strtod(v, NULL)) > 0);
        else if (!strcmp(a, "--remainder-bits") && v)
            bad = (c->params.remainder_bits = (uint32_t)atoi(v)) < 1;
        else if (!strcmp(a, "--num-hashes") && v)
            bad = (c->params.num_hashes = (uint32_t)atoi(v)) < 1;
        else if (!strcmp(a, "--shifts") && v) {
            int t = atoi(v);
            bad = t < 1 || t > 7;
            c->params.flags = AKV_SHBF_SHIFTS(t);
        } else if (!strcmp(a, "--load-factor") && v)
            bad = !((c->params.load_factor = strtod(v, NULL)) > 0 && c->params.load_factor <= 1);
        else if (!strcmp(a, "--query-dist") && v)
            bad = parse_dist(v, &c->qdist);
        else if (!strcmp(a, "--costs") && v)
            bad = parse_dist(v, &c->costs);
        else if (!strcmp(a, "--baseline") && v)
            c->baseline = v;
        else if (!strcmp(a, "--rounds") && v)
            bad = parse_u64(v, &c->rounds) || c->rounds < 1 || c->rounds > 1000;
        else if (!strcmp(a, "--dataset") && v)
            c->dataset = v;
        else if (!strcmp(a, "--cpu-time"))
            c->cpu_time = true, takes = 0;
        else if (!strcmp(a, "--adapt"))
            c->adapt = true, takes = 0;
        else if (!strcmp(a, "--static"))
            c->sscf_static = true, takes = 0;
        else if (!strcmp(a, "--wide"))
            c->sscf_wide = true, takes = 0;
        else if (!strcmp(a, "--json"))
            c->json = true, takes = 0;
        else if (!strcmp(a, "--list"))
            return list_kinds(), 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return usage(stdout), 1;
        else {
            fprintf(stderr, "filterbench: unknown option or missing value: %s\n", a);
            usage(stderr);
            return 2;
        }
        if (bad) {
            fprintf(stderr, "filterbench: bad value for %s: %s\n", a, v);
            return 2;
        }
        i += takes;
    }
    if (!c->filter) {
        fprintf(stderr, "filterbench: --filter is required (--list shows the kinds)\n");
        return 2;
    }
    c->kind = akv_filter_kind_by_name(c->filter);
    if (!c->kind) {
        fprintf(stderr, "filterbench: unknown filter kind '%s' (--list shows the kinds)\n", c->filter);
        return 2;
    }
    if (c->baseline && !(c->baseline_kind = akv_filter_kind_by_name(c->baseline))) {
        fprintf(stderr, "filterbench: unknown baseline kind '%s' (--list shows the kinds)\n", c->baseline);
        return 2;
    }
    if (c->rounds && !c->baseline) {
        fprintf(stderr, "filterbench: --rounds needs --baseline\n");
        return 2;
    }
    if (c->baseline && !c->rounds)
        c->rounds = 5;
    if ((c->params.flags & AKV_SHBF_SHIFTS_MASK) && strcmp(c->kind->name, "shbf") != 0) {
        fprintf(stderr, "filterbench: --shifts applies to shbf only\n");
        return 2;
    }
    if (c->sscf_static || c->sscf_wide) {
        if (strcmp(c->kind->name, "sscf") != 0) {
            fprintf(stderr, "filterbench: --static and --wide apply to sscf only\n");
            return 2;
        }
        c->params.flags |= AKV_SSCF_WIDE | (c->sscf_static ? AKV_SSCF_STATIC : 0);
    }
    if (c->qdist.zipf && !c->universe) {
        fprintf(stderr, "filterbench: --query-dist zipf needs --universe\n");
        return 2;
    }
    if (c->churn && !(c->kind->insert && c->kind->remove)) {
        fprintf(stderr, "filterbench: --churn needs a dynamic kind; '%s' has no insert/remove\n", c->filter);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("filterbench (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
            return 0;
        }
    fb_config c;
    memset(&c, 0, sizeof c);
    akv_filter_params_init(&c.params);
    c.keys = 1000000;
    c.queries = 1000000;
    c.seed = 1;
    int rc = parse_args(argc, argv, &c);
    if (rc)
        return rc == 1 ? 0 : 2;
    fb_result r;
    memset(&r, 0, sizeof r);
    rc = fb_run(&c, &r);
    if (rc != AKV_OK) {
        fprintf(stderr, "filterbench: %s: %s\n", c.filter, r.error[0] ? r.error : akv_strerror(rc));
        return 1;
    }
    if (c.json)
        fb_print_json(&c, &r, stdout);
    else
        fb_print_table(&c, &r, stdout);
    return r.false_negatives || r.base.false_negatives ? 1 : 0;
}
