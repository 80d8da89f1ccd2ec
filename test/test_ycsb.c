/*
 * test_ycsb.c — kvbench's pieces behave like YCSB's: FNV values and key
 * names, Zipfian frequencies against theory, scrambling that spreads the
 * popular items, latest/hotspot/uniform/sequential choices, property files
 * (and errors that name file and line, -p over -P), how recordcount,
 * insertstart and insertcount combine, field length histogram files, YCSB's
 * client properties, latency histogram percentiles and the workload's
 * operation mix. Distributions against YCSB's algorithms: test_ycsb_dist.c;
 * traces: test_ycsb_trace.c; the binary: test_ycsb_cli.c. The tool's sources
 * are included directly: test binaries link only libadaptkv.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/clientopts.c"
#include "tools/kvbench/generators.c"
#include "tools/kvbench/rng.c"
#include "tools/kvbench/histogram.c"
#include "tools/kvbench/lenhist.c"
#include "tools/kvbench/props.c"
#include "tools/kvbench/workload.c"

/* ---- FNV and keys ---------------------------------------------------------- */

Test(ycsb, fnv_matches_ycsb_values)
{
    /* Values of YCSB's Utils.fnvhash64; "user6284781860667377211" is the
     * first key YCSB's load phase inserts. */
    cr_expect_eq(akv_kb_fnv64(0), 6284781860667377211ull);
    cr_expect_eq(akv_kb_fnv64(1), 8517097267634966620ull);
    cr_expect_eq(akv_kb_fnv64(42), 55488592825689361ull);
    cr_expect_eq(akv_kb_fnv64(999999), 2744965632448235251ull);
    char k[48];
    akv_kb_key(k, sizeof k, 0, true, 1);
    cr_expect_str_eq(k, "user6284781860667377211");
    akv_kb_key(k, sizeof k, 7, false, 1);
    cr_expect_str_eq(k, "user7");
    akv_kb_key(k, sizeof k, 7, false, 5);
    cr_expect_str_eq(k, "user00007");
}

/* ---- Zipfian ----------------------------------------------------------------- */

Test(ycsb, zeta_of_ten_billion_matches_ycsb_constant)
{
    double z = akv_kb_zeta(0, AKV_KB_SCRAMBLED_ITEMS, 0.99, 0);
    cr_expect(fabs(z - AKV_KB_ZETAN_1E10_099) < 1e-6, "zeta(1e10) = %.12f", z);
    /* The incremental form equals the one-shot sum. */
    double a = akv_kb_zeta(0, 1000, 0.99, 0), b = akv_kb_zeta(1000, 5000, 0.99, a);
    cr_expect(fabs(b - akv_kb_zeta(0, 5000, 0.99, 0)) < 1e-9);
}

Test(ycsb, zipfian_rank_frequencies_match_theory)
{
    akv_kb_zipf z;
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 7);
    const uint64_t n = 1000, draws = 2000000;
    akv_kb_zipf_init(&z, 0, n, 0.99);
    uint64_t c[3] = {0}, in_range = 0;
    for (uint64_t i = 0; i < draws; i++) {
        uint64_t v = akv_kb_zipf_next(&z, &r);
        in_range += v < n;
        if (v < 3)
            c[v]++;
    }
    cr_expect_eq(in_range, draws);
    double zeta = akv_kb_zeta(0, n, 0.99, 0);
    for (int k = 0; k < 2; k++) { /* ranks 1 and 2 are exact in Gray's method */
        double want = 1.0 / pow(k + 1, 0.99) / zeta, got = (double)c[k] / (double)draws;
        cr_expect(fabs(got - want) / want < 0.02, "rank %d: %.5f vs theory %.5f", k + 1, got, want);
    }
    cr_expect(c[0] > c[1] && c[1] > c[2]);
}

Test(ycsb, scrambled_zipfian_spreads_popular_items)
{
    akv_kb_scrambled s;
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 3);
    const uint64_t n = 100000, draws = 500000;
    akv_kb_scrambled_init(&s, 0, n - 1, 0.99);
    uint32_t *cnt = calloc(n, sizeof *cnt);
    for (uint64_t i = 0; i < draws; i++) {
        uint64_t v = akv_kb_scrambled_next(&s, &r);
        cr_assert(v < n);
        cnt[v]++;
    }
    /* The most popular item is where FNV puts item 0, not at the start. */
    uint64_t top = 0;
    for (uint64_t i = 1; i < n; i++)
        if (cnt[i] > cnt[top])
            top = i;
    cr_expect_eq(top, akv_kb_fnv64(0) % n);
    /* Popular items land in every tenth of the key space. */
    int deciles[10] = {0};
    for (uint64_t i = 0; i < n; i++)
        if (cnt[i] >= 20)
            deciles[i * 10 / n]++;
    for (int d = 0; d < 10; d++)
        cr_expect(deciles[d] > 0, "no popular item in decile %d", d);
    free(cnt);
}

Test(ycsb, latest_prefers_the_newest_items)
{
    akv_kb_gen g;
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 5);
    akv_kb_gen_latest(&g, 9999, 0.99);
    uint64_t newest = 0, last = 9999;
    for (int i = 0; i < 100000; i++) {
        if (i == 50000)
            last = 14999; /* inserts happened: zeta grows incrementally */
        uint64_t v = akv_kb_gen_next(&g, &r, last);
        cr_assert(v >= 1 && v <= last, "%llu", (unsigned long long)v); /* YCSB never draws key 0 */
        newest += v == last;
    }
    cr_expect(newest > 5000, "newest item drawn %llu times", (unsigned long long)newest);
    cr_expect_eq(g.z.count_for_zeta, 14999);
    /* eta keeps the item count the generator was built for (9999). */
    double eta = (1 - pow(2.0 / 9999, 0.01)) / (1 - g.z.zeta2 / g.z.zetan);
    cr_expect(fabs(g.z.eta - eta) < 1e-12, "eta %.15f, want %.15f", g.z.eta, eta);
}

Test(ycsb, latest_and_zipfian_of_one_item)
{
    akv_kb_gen g;
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 9);
    akv_kb_gen_latest(&g, 0, 0.99); /* recordcount=1: only key 0 exists */
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(akv_kb_gen_next(&g, &r, 0), 0);
    for (int i = 0; i < 1000; i++) { /* one insert later: keys 0 and 1 */
        uint64_t v = akv_kb_gen_next(&g, &r, 1);
        cr_assert(v <= 1);
    }
}

Test(ycsb, hotspot_uniform_and_sequential)
{
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 11);
    akv_kb_gen h, u, s;
    akv_kb_gen_hotspot(&h, 1000, 1999, 0.2, 0.8); /* 20% of items get 80% of ops */
    akv_kb_gen_uniform(&u, 0, 99);
    akv_kb_gen_sequential(&s, 5, 7, NULL);
    int hot = 0;
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t v = akv_kb_gen_next(&h, &r, 0);
        cr_assert(v >= 1000 && v <= 1999);
        hot += v < 1200;
        sum += (double)akv_kb_gen_next(&u, &r, 0);
    }
    cr_expect(fabs(hot / 100000.0 - 0.8) < 0.01, "hot fraction %.3f", hot / 100000.0);
    cr_expect(fabs(sum / 100000 - 49.5) < 0.5);
    uint64_t seq[5];
    for (int i = 0; i < 5; i++)
        seq[i] = akv_kb_gen_next(&s, &r, 0);
    cr_expect(seq[0] == 5 && seq[1] == 6 && seq[2] == 7 && seq[3] == 5 && seq[4] == 6);
}

/* ---- property files ------------------------------------------------------------ */

static int parse(akv_kb_props *p, const char *text)
{
    memset(p, 0, sizeof *p);
    return akv_kb_props_parse(p, "wl", text, strlen(text));
}

Test(ycsb, properties_java_syntax)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "# comment\n! also\n\nrecordcount=5\n  fieldcount : 3\nzeropadding 4\n"
                           "requestdistribution=zip\\\n   fian\nweird\\=name=x\\ty\n"),
                 0, "%s", p.err);
    uint64_t v;
    const char *s;
    cr_expect(akv_kb_props_u64(&p, "recordcount", 0, &v) == 0 && v == 5);
    cr_expect(akv_kb_props_u64(&p, "fieldcount", 0, &v) == 0 && v == 3);
    cr_expect(akv_kb_props_u64(&p, "zeropadding", 0, &v) == 0 && v == 4);
    akv_kb_props_str(&p, "requestdistribution", NULL, &s);
    cr_expect_str_eq(s, "zipfian");
    akv_kb_props_str(&p, "weird=name", NULL, &s);
    cr_expect_str_eq(s, "x\ty");
    cr_expect_eq(akv_kb_props_find(&p, "requestdistribution")->line, 7);
    /* -p overrides the file. */
    cr_assert_eq(akv_kb_props_set_arg(&p, "recordcount=9", 3), 0);
    cr_expect(akv_kb_props_u64(&p, "recordcount", 0, &v) == 0 && v == 9);
    cr_expect_neq(akv_kb_props_set_arg(&p, "novalue", 4), 0);
    akv_kb_props_free(&p);
}

Test(ycsb, property_errors_name_file_and_line)
{
    akv_kb_props p;
    cr_expect_neq(parse(&p, "a=1\n=5\n"), 0);
    cr_expect(strstr(p.err, "wl:2:") && strstr(p.err, "name=value"), "%s", p.err);
    akv_kb_props_free(&p);
    cr_expect_neq(parse(&p, "a=1\nb=2\\"), 0);
    cr_expect(strstr(p.err, "wl:2:") && strstr(p.err, "continuation"), "%s", p.err);
    akv_kb_props_free(&p);

    cr_assert_eq(parse(&p, "recordcount=10\nreadproportion=abc\n"), 0);
    akv_kb_workload w;
    cr_expect_neq(akv_kb_workload_load(&w, &p), 0);
    cr_expect(strstr(p.err, "wl:2: readproportion: 'abc' is not a number"), "%s", p.err);
    akv_kb_props_free(&p);

    cr_assert_eq(parse(&p, "\n\nrequestdistribution=zipf\n"), 0);
    cr_expect_neq(akv_kb_workload_load(&w, &p), 0);
    cr_expect(strstr(p.err, "wl:3: requestdistribution: 'zipf' is not one of") != NULL, "%s", p.err);
    akv_kb_props_free(&p);

    cr_assert_eq(parse(&p, "recordcount=-4\n"), 0);
    cr_expect_neq(akv_kb_workload_load(&w, &p), 0);
    cr_expect(strstr(p.err, "wl:1: recordcount") != NULL, "%s", p.err);
    akv_kb_props_free(&p);

    memset(&p, 0, sizeof p);
    cr_expect_neq(akv_kb_props_load(&p, "/nonexistent/workloadq"), 0);
    cr_expect(strstr(p.err, "/nonexistent/workloadq: cannot open") != NULL, "%s", p.err);
}

Test(ycsb, workload_files_load_with_ycsb_defaults)
{
    const char *files[] = {"workloads/workloada", "workloads/workloadb", "workloads/workloadc",
                           "workloads/workloadd", "workloads/workloade", "workloads/workloadf",
                           "workloads/workloadn", "workloads/workloadx"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        akv_kb_props p = {0};
        cr_assert_eq(akv_kb_props_load(&p, files[i]), 0, "%s", p.err);
        akv_kb_workload w;
        cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
        cr_expect_eq(w.fieldcount, 10);
        cr_expect_eq(w.fieldlength, 100);
        cr_expect(w.theta == 0.99);
        akv_kb_props_free(&p);
    }
}

/* ---- histogram ------------------------------------------------------------------------- */

Test(ycsb, histogram_percentiles_within_bucket_error)
{
    static akv_kb_hist h;
    akv_kb_hist_reset(&h);
    for (uint64_t v = 1; v <= 1000000; v++)
        akv_kb_hist_add(&h, v);
    const double pcts[] = {50, 95, 99, 99.9};
    for (int i = 0; i < 4; i++) {
        double want = pcts[i] * 10000, got = (double)akv_kb_hist_pct(&h, pcts[i]);
        cr_expect(fabs(got - want) / want < 1.0 / 32, "p%g = %.0f, want %.0f", pcts[i], got, want);
    }
    cr_expect_eq(akv_kb_hist_pct(&h, 100), 1000000);
    cr_expect_eq(h.min_ns, 1);
    for (size_t i = 1; i < AKV_KB_HIST_BUCKETS; i++) {
        cr_assert(akv_kb_hist_lower(i) > akv_kb_hist_lower(i - 1));
        cr_assert_eq(akv_kb_hist_index(akv_kb_hist_lower(i)), i);
    }
    cr_expect_eq(akv_kb_hist_index(UINT64_MAX), AKV_KB_HIST_BUCKETS - 1);
    static akv_kb_hist m;
    akv_kb_hist_reset(&m);
    akv_kb_hist_add(&m, 5);
    akv_kb_hist_merge(&m, &h);
    cr_expect_eq(m.count, 1000001);
}

/* ---- the workload's operation mix --------------------------------------------------------- */

Test(ycsb, operation_mix_negatives_and_attacker)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "recordcount=1000\noperationcount=100000\nreadproportion=0.9\n"
                           "updateproportion=0.1\nrequestdistribution=zipfian\nnegativeproportion=0.5\n"
                           "adversaryproportion=0.2\n"),
                 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    akv_kb_shared sh;
    cr_assert_eq(akv_kb_shared_init(&sh, &w, false), 0);
    akv_kb_client c;
    akv_kb_client_init(&c, &w, &sh, 1, 0);
    int ops[AKV_KB_NOPS] = {0}, neg = 0, adv = 0;
    uint8_t seen_neg[1000] = {0};
    int distinct_neg = 0;
    for (int i = 0; i < 100000; i++) {
        akv_kb_req r;
        akv_kb_client_next(&c, &r);
        ops[r.op]++;
        if (r.kind == AKV_KB_REQ_NEGATIVE) {
            neg++;
            cr_assert(r.keynum >= AKV_KB_NEG_BASE && r.keynum < AKV_KB_NEG_BASE + 1000);
            if (!seen_neg[r.keynum - AKV_KB_NEG_BASE]) {
                seen_neg[r.keynum - AKV_KB_NEG_BASE] = 1;
                distinct_neg++;
            }
        } else if (r.kind == AKV_KB_REQ_NORMAL) {
            cr_assert(r.keynum < 1000, "record key %llu", (unsigned long long)r.keynum);
        } else {
            adv++;
            /* Every explored key "costs a probe": the attacker keeps it. */
            akv_kb_cost cost = {.probes = 1, .wasted = r.kind == AKV_KB_REQ_EXPLORE};
            akv_kb_client_done(&c, &r, AKV_KB_NOTFOUND, &cost);
        }
    }
    cr_expect(fabs(ops[AKV_KB_READ] / 100000.0 - 0.9) < 0.01);
    cr_expect(fabs(neg / 90000.0 - 0.5) < 0.02);
    /* Negatives are Zipfian over their own 1000 keys: skewed, yet most appear. */
    cr_expect(distinct_neg > 500, "%d distinct negative keys", distinct_neg);
    cr_expect(fabs(adv / 90000.0 - 0.2) < 0.02);
    cr_expect(sh.pool_n > 0 && sh.pool_n <= w.adv_pool);
    akv_kb_shared_free(&sh);
    akv_kb_props_free(&p);
}

/* YCSB: the load inserts insertcount records if given, else recordcount,
 * from insertstart on; reads choose among insertstart .. insertstart +
 * insertcount - 1; the run's inserts continue from recordcount. */
static void load_keys(const char *props, uint64_t first, uint64_t n)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, props), 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    akv_kb_shared sh;
    cr_assert_eq(akv_kb_shared_init(&sh, &w, true), 0);
    akv_kb_client c;
    akv_kb_client_init(&c, &w, &sh, 1, 0);
    akv_kb_req r;
    uint64_t got = 0, next = first;
    while (akv_kb_client_load_next(&c, &r)) {
        cr_assert_eq(r.keynum, next++);
        cr_assert_eq(r.vlen, 1000);
        got++;
    }
    cr_expect_eq(got, n, "%s: %llu records loaded", props, (unsigned long long)got);
    akv_kb_shared_free(&sh);
    akv_kb_props_free(&p);
}

Test(ycsb, load_phase_inserts_as_ycsb)
{
    load_keys("recordcount=500\n", 0, 500);
    load_keys("recordcount=500\ninsertstart=100\n", 100, 500); /* recordcount records from 100 */
    load_keys("recordcount=500\ninsertstart=100\ninsertcount=250\n", 100, 250);
}

Test(ycsb, run_phase_keys_and_inserts)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "recordcount=500\ninsertstart=100\ninsertcount=300\nreadproportion=0.5\n"
                           "updateproportion=0\ninsertproportion=0.5\n"),
                 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    akv_kb_shared sh;
    cr_assert_eq(akv_kb_shared_init(&sh, &w, false), 0);
    cr_expect_eq(akv_kb_last_acked(&sh), 499);
    akv_kb_client c;
    akv_kb_client_init(&c, &w, &sh, 1, 0);
    uint64_t next_insert = 500, lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < 20000; i++) {
        akv_kb_req r;
        akv_kb_client_next(&c, &r);
        if (r.op == AKV_KB_INSERT) {
            cr_assert_eq(r.keynum, next_insert++); /* AcknowledgedCounterGenerator(recordcount) */
        } else {
            lo = r.keynum < lo ? r.keynum : lo;
            hi = r.keynum > hi ? r.keynum : hi;
        }
    }
    cr_expect(lo == 100 && hi == 399, "uniform reads over [%llu, %llu]", (unsigned long long)lo,
              (unsigned long long)hi);
    akv_kb_shared_free(&sh);
    akv_kb_props_free(&p);
}

static void expect_refused(const char *props, const char *msg)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, props), 0);
    akv_kb_workload w;
    cr_expect_neq(akv_kb_workload_load(&w, &p), 0, "%s", props);
    cr_expect(strstr(p.err, msg) != NULL, "%s: %s", props, p.err);
    akv_kb_props_free(&p);
}

Test(ycsb, counts_ycsb_refuses)
{
    expect_refused("recordcount=500\ninsertstart=100\ninsertcount=401\n",
                   "insertstart + insertcount (100 + 401) must be between 1 and recordcount (500)");
    expect_refused("recordcount=500\ninsertstart=500\n", "insertstart (500) must be below recordcount (500)");
    expect_refused("recordcount=500\ninsertcount=0\n", "insertstart + insertcount (0 + 0)");
    /* A sum that would wrap past 2^64 to 1 is refused, not accepted. */
    expect_refused("recordcount=1000\ninsertstart=18446744073709551615\ninsertcount=2\n",
                   "insertstart + insertcount (18446744073709551615 + 2) must be between 1 and recordcount");
    expect_refused("recordcount=500\nrequestdistribution=hotspot\nhotspotdatafraction=0.001\n",
                   "makes 0 hot keys, but hotspotopnfraction=0.8 sends operations to the hot ones");
    expect_refused("recordcount=500\nrequestdistribution=hotspot\nhotspotdatafraction=1\n",
                   "sends operations to the cold ones");
    expect_refused("fieldlengthdistribution=histogram\nfieldlengthhistogram=/nonexistent/h.txt\n",
                   "/nonexistent/h.txt: cannot open field length histogram");
    expect_refused("requestdistribution=constant\n", "requestdistribution: 'constant' is not one of");
}

Test(ycsb, operationcount_zero_means_no_limit)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "operationcount=0\nrequestdistribution=zipfian\ninsertproportion=0.5\n"), 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    cr_expect_eq(w.operationcount, 0);
    cr_expect_eq(w.expectednewkeys, 0); /* (int)(0 * 0.5 * 2) */
    akv_kb_props_free(&p);
}

Test(ycsb, sequential_is_one_sequence_for_all_threads)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "recordcount=10\ninsertstart=2\ninsertcount=5\nrequestdistribution=sequential\n"
                           "readproportion=1\nupdateproportion=0\n"),
                 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    akv_kb_shared sh;
    cr_assert_eq(akv_kb_shared_init(&sh, &w, false), 0);
    akv_kb_client a, b;
    akv_kb_client_init(&a, &w, &sh, 1, 0);
    akv_kb_client_init(&b, &w, &sh, 1, 1);
    const uint64_t want[] = {2, 3, 4, 5, 6, 2, 3, 4};
    for (int i = 0; i < 8; i++) {
        akv_kb_req r;
        akv_kb_client_next(i % 2 ? &b : &a, &r);
        cr_expect_eq(r.keynum, want[i], "draw %d: %llu", i, (unsigned long long)r.keynum);
    }
    akv_kb_shared_free(&sh);
    akv_kb_props_free(&p);
}

Test(ycsb, field_length_histogram_file)
{
    akv_kb_lenhist h;
    char err[AKV_KB_ERRLEN];
    cr_assert_eq(akv_kb_lenhist_load(&h, "test/data/ycsb/fieldlengths.hist", err, sizeof err), 0, "%s", err);
    cr_expect_eq(h.block, 16);
    cr_expect_eq(h.n, 5);
    cr_expect_eq(h.area, 16);
    cr_expect_eq(akv_kb_lenhist_max(&h), 64);
    akv_kb_lenhist_free(&h);
    const char *const bad[][2] = {
        {"Blocksize\t16\n0\t1\n", "h:1: the first line must be 'BlockSize<TAB>size'"},
        {"BlockSize\t0\n0\t1\n", "h:1: BlockSize '0' is not a positive integer"},
        {"BlockSize\t8\n0\t1\n2\t1\n", "h:3: bucket '2': expected bucket 1"},
        {"BlockSize\t8\n0\t1\n1 1\n", "h:3: expected two tab-separated fields"},
        {"BlockSize\t8\n0\t1\n\n", "h:3: expected two tab-separated fields"},
        {"BlockSize\t8\n0\t-1\n", "h:2: bucket 0: count '-1' is not a non-negative integer"},
        {"BlockSize\t8\n0\t0\n", "h: no bucket has a count above zero"},
        {"", "h: empty histogram file"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_expect_neq(akv_kb_lenhist_parse(&h, "h", bad[i][0], strlen(bad[i][0]), err, sizeof err), 0, "%s",
                      bad[i][0]);
        cr_expect(strstr(err, bad[i][1]) != NULL, "%s", err);
    }
    /* CRLF and a last line without a newline are fine. */
    const char *crlf = "BlockSize\t8\r\n0\t3\r\n1\t1";
    cr_expect_eq(akv_kb_lenhist_parse(&h, "h", crlf, strlen(crlf), err, sizeof err), 0, "%s", err);
    cr_expect(h.n == 2 && h.area == 4);
    akv_kb_lenhist_free(&h);
}

/* ---- YCSB's client properties ------------------------------------------------------- */

Test(ycsb, dash_p_wins_over_every_dash_P_file)
{
    akv_kb_props p;
    memset(&p, 0, sizeof p);
    /* -p recordcount=9 -P wl1 -P wl2: the -p comes first, yet wins; the
     * later file wins over the earlier one. */
    cr_assert_eq(akv_kb_props_set_arg(&p, "recordcount=9", 2), 0);
    cr_assert_eq(akv_kb_props_parse(&p, "wl1", "recordcount=5\nfieldcount=3\n", 26), 0);
    cr_assert_eq(akv_kb_props_parse(&p, "wl2", "recordcount=7\nfieldcount=4\n", 26), 0);
    uint64_t v;
    cr_expect(akv_kb_props_u64(&p, "recordcount", 0, &v) == 0 && v == 9, "%llu", (unsigned long long)v);
    cr_expect(akv_kb_props_u64(&p, "fieldcount", 0, &v) == 0 && v == 4, "%llu", (unsigned long long)v);
    cr_assert_eq(akv_kb_props_set_arg(&p, "recordcount=11", 6), 0); /* the last -p wins among -p */
    cr_expect(akv_kb_props_u64(&p, "recordcount", 0, &v) == 0 && v == 11);
    akv_kb_props_free(&p);
}

Test(ycsb, client_properties)
{
    akv_kb_props p;
    akv_kb_clientopts o;
    cr_assert_eq(parse(&p, "threadcount=4\ntarget=1000\nexportfile=out.txt\nmeasurement.interval=both\n"
                           "hdrhistogram.percentiles=50, 99.9,1 ,12,22,99.99,0.0001\n"
                           "core_workload_insertion_keep_going_on_error=true\n"
                           "core_workload_insertion_retry_limit=2\n"),
                 0);
    cr_assert_eq(akv_kb_clientopts_load(&o, &p), 0, "%s", p.err);
    cr_expect_eq(o.threadcount, 4);
    cr_expect(o.target == 1000);
    cr_expect_str_eq(o.exportfile, "out.txt");
    cr_expect_eq(o.interval, AKV_KB_MEASURE_BOTH);
    cr_expect(o.keep_going);
    cr_expect(o.retry_limit == 2 && o.retry_interval == 3);
    cr_assert_eq(o.npcts, 7);
    /* Named as YCSB's OneMeasurementHdrHistogram.ordinal names them. */
    const char *names[] = {"50th", "99.9", "1st", "12th", "22nd", "99.99", "1.0E-4"};
    for (size_t i = 0; i < o.npcts; i++) {
        char n[48];
        akv_kb_pct_name(n, sizeof n, o.pcts[i]);
        cr_expect_str_eq(n, names[i]);
    }
    akv_kb_props_free(&p);

    cr_assert_eq(parse(&p, ""), 0);
    cr_assert_eq(akv_kb_clientopts_load(&o, &p), 0, "%s", p.err);
    cr_expect(o.npcts == 3 && o.pcts[0] == 50 && o.pcts[1] == 95 && o.pcts[2] == 99); /* YCSB's default */
    cr_expect(o.interval == AKV_KB_MEASURE_OP && !o.keep_going && o.threadcount == 0 && !o.exportfile);
    akv_kb_props_free(&p);

    const char *const bad[][2] = {
        {"hdrhistogram.percentiles=50,x\n", "wl: hdrhistogram.percentiles: '50,x'"},
        {"hdrhistogram.percentiles=101\n", "is not a list of numbers in [0, 100]"},
        {"measurement.interval=sometimes\n", "wl:1: measurement.interval: 'sometimes'"},
        {"threadcount=1000\n", "threadcount: 1000 is above kvbench's limit"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(parse(&p, bad[i][0]), 0);
        cr_expect_neq(akv_kb_clientopts_load(&o, &p), 0, "%s", bad[i][0]);
        cr_expect(strstr(p.err, bad[i][1]) != NULL, "%s", p.err);
        akv_kb_props_free(&p);
    }
}
