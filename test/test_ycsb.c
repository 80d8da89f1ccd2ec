/*
 * test_ycsb.c — kvbench's pieces behave like YCSB's: FNV values and key
 * names, Zipfian frequencies against theory, scrambling that spreads the
 * popular items, latest/hotspot/uniform/sequential choices, property files
 * (and errors that name file and line), basic-binding traces, histogram
 * percentiles and the workload's operation mix. The tool's sources are
 * included directly: test binaries link only libadaptkv.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/generators.c"
#include "tools/kvbench/histogram.c"
#include "tools/kvbench/props.c"
#include "tools/kvbench/trace.c"
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
    akv_kb_zipf_init(&z, 0, n - 1, 0.99);
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
    akv_kb_gen_init(&g, AKV_KB_LATEST, 0, 9999, 0.99);
    uint64_t newest = 0, last = 9999;
    for (int i = 0; i < 100000; i++) {
        if (i == 50000)
            last = 14999; /* inserts happened: zeta grows incrementally */
        uint64_t v = akv_kb_gen_next(&g, &r, last);
        cr_assert(v <= last);
        newest += v == last;
    }
    cr_expect(newest > 5000, "newest item drawn %llu times", (unsigned long long)newest);
}

Test(ycsb, hotspot_uniform_and_sequential)
{
    akv_kb_rng r;
    akv_kb_rng_seed(&r, 11);
    akv_kb_gen h, u, s;
    akv_kb_gen_init(&h, AKV_KB_HOTSPOT, 1000, 1999, 0.99); /* 20% of items get 80% of ops */
    akv_kb_gen_init(&u, AKV_KB_UNIFORM, 0, 99, 0.99);
    akv_kb_gen_init(&s, AKV_KB_SEQUENTIAL, 5, 7, 0.99);
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

/* ---- traces ------------------------------------------------------------------------ */

static int trace_lines(akv_kb_trace *t, const char *const *lines)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; lines[i]; i++)
        if (akv_kb_trace_parse_line(t, "tr", i + 1, lines[i], strlen(lines[i])))
            return -1;
    return 0;
}

Test(ycsb, trace_of_basic_binding)
{
    const char *const ok[] = {
        "YCSB Client 0.17.0",
        "Loading workload...",
        "Starting test.",
        "DBWrapper: report latency for each error is false and specific error codes to track"
        " for latency are: []",
        "READ usertable user6284781860667377211 [ <all fields>]",
        "UPDATE usertable user1 [ field3=+8&&9?(5 ]",
        "INSERT usertable user2 [ field0=abc field1=def ]",
        "SCAN usertable user3 37 [ <all fields>]",
        "DELETE usertable user4",
        "2024-01-01 00:00:10:000 10 sec: 1000 operations; 100 current ops/sec;",
        "[OVERALL], RunTime(ms), 10",
        NULL};
    akv_kb_trace t;
    cr_assert_eq(trace_lines(&t, ok), 0, "%s", t.err);
    cr_assert_eq(t.n, 5);
    cr_expect_eq(t.ops[0].op, AKV_KB_READ);
    cr_expect_str_eq(t.ops[0].key, "user6284781860667377211");
    cr_expect_eq(t.ops[1].op, AKV_KB_UPDATE);
    cr_expect_eq(t.ops[3].op, AKV_KB_SCAN);
    cr_expect_eq(t.ops[3].count, 37);
    cr_expect_eq(t.ops[4].op, AKV_KB_DELETE);
    akv_kb_trace_free(&t);

    const char *const bad[][3] = {
        {"READ usertable", NULL, "tr:1: READ without a key"},
        {"READ usertable user1 [ <all fields>]", "SCAN usertable user1 x [ ]", "tr:2: SCAN record count 'x'"},
        {"GET user1", NULL, "tr:1: unrecognized line"},
        {"UPDATE usertable user1 [ field0=ab", NULL, "tr:1: field list does not end"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *const lines[] = {bad[i][0], bad[i][1], NULL};
        cr_expect_neq(trace_lines(&t, lines), 0);
        cr_expect(strstr(t.err, bad[i][2]) != NULL, "%s", t.err);
        akv_kb_trace_free(&t);
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
    akv_kb_client_init(&c, &w, &sh, 1, 0, 1);
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

Test(ycsb, load_phase_inserts_every_record_once)
{
    akv_kb_props p;
    cr_assert_eq(parse(&p, "recordcount=500\ninsertstart=100\n"), 0);
    akv_kb_workload w;
    cr_assert_eq(akv_kb_workload_load(&w, &p), 0, "%s", p.err);
    akv_kb_shared sh;
    cr_assert_eq(akv_kb_shared_init(&sh, &w, true), 0);
    akv_kb_client c;
    akv_kb_client_init(&c, &w, &sh, 1, 0, 1);
    akv_kb_req r;
    uint64_t n = 0, next = 100;
    while (akv_kb_client_load_next(&c, &r)) {
        cr_assert_eq(r.keynum, next++);
        cr_assert_eq(r.vlen, 1000);
        n++;
    }
    cr_expect_eq(n, 400);
    cr_expect_eq(akv_kb_last_acked(&sh), 499);
    akv_kb_shared_free(&sh);
    akv_kb_props_free(&p);
}
