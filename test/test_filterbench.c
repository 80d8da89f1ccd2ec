/*
 * test_filterbench.c — filterbench's side-by-side mode (--baseline): the
 * baseline is built over the same keys and answers the same query stream,
 * so its FPR and word reads equal those of a run of the baseline kind on
 * its own, and the candidate's answers do not change because a baseline ran
 * next to it. The measurement code is compiled into this test.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "tools/filterbench/datasets.c"
#include "tools/filterbench/run.c"
#include "tools/filterbench/zipf.c"

static fb_config config(const char *kind, const char *baseline)
{
    fb_config c;
    memset(&c, 0, sizeof c);
    akv_filter_params_init(&c.params);
    c.filter = kind;
    c.kind = akv_filter_kind_by_name(kind);
    cr_assert_not_null(c.kind, "kind %s", kind);
    c.keys = 20000;
    c.queries = 50000;
    c.seed = 3;
    if (baseline) {
        c.baseline = baseline;
        c.baseline_kind = akv_filter_kind_by_name(baseline);
        cr_assert_not_null(c.baseline_kind);
        c.rounds = 3;
    }
    return c;
}

static fb_result run_ok(const fb_config *c)
{
    fb_result r;
    memset(&r, 0, sizeof r);
    int rc = fb_run(c, &r);
    cr_assert_eq(rc, AKV_OK, "%s: %s", c->filter, r.error);
    return r;
}

Test(filterbench, baseline_sees_the_same_keys_and_queries)
{
    fb_config both = config("shbf", "bloom"), shbf = config("shbf", NULL), bloom = config("bloom", NULL);
    fb_result rb = run_ok(&both), rs = run_ok(&shbf), rl = run_ok(&bloom);

    cr_expect_eq(rb.rounds, 3);
    cr_expect_eq(rb.false_negatives, 0);
    cr_expect_eq(rb.base.false_negatives, 0);
    /* The candidate is unchanged by the baseline next to it ... */
    cr_expect_eq(rb.fpr, rs.fpr);
    cr_expect_eq(rb.words_per_query, rs.words_per_query);
    /* ... and the baseline answers exactly as bloom run alone. */
    cr_expect_eq(rb.base.fpr, rl.fpr);
    cr_expect_eq(rb.base.words_per_query, rl.words_per_query);
    cr_expect_eq(rb.base.memory_bytes, rl.memory_bytes);
    cr_expect(fabs(rb.base.fpr_theory - rl.fpr_theory) < 1e-12);
    /* ShBF_M reads fewer words than bloom on absent keys (docs/filters.md,
     * "Findings"). */
    cr_expect_lt(rb.words_per_query, rb.base.words_per_query);
    cr_expect(isfinite(rb.query_speedup) && rb.query_speedup > 0);
    cr_expect(isfinite(rb.batch_speedup) && rb.batch_speedup > 0);
}

Test(filterbench, median_of_rounds)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2};
    cr_expect_eq(median(odd, 3), 3);
    cr_expect_eq(median(even, 4), 2.5);
}

Test(filterbench, baseline_gets_its_own_defaults)
{
    fb_config c = config("bloom", "sscf");
    c.params.bits_per_key = 10;
    c.params.num_hashes = 40; /* applies to the candidate only: sscf defaults must build */
    fb_result r = run_ok(&c);
    cr_expect_eq(r.base.false_negatives, 0);

    fb_config z = config("bloom", "bloom");
    z.keys = 0; /* an empty filter still compares */
    fb_result rz = run_ok(&z);
    cr_expect_eq(rz.base.fpr, rz.fpr);
}

/* insert_ns times real inserts (a second filter, one akv_filter_insert a
 * key), not the buffering add(); --adapt times its replay; --baseline qf
 * gets the candidate's remainder bits and fill. */
Test(filterbench, real_inserts_adapt_timing_and_qf_baseline)
{
    fb_config c = config("aqf", "qf");
    c.params.remainder_bits = 9;
    c.params.load_factor = 0.9;
    c.adapt = true;
    c.qdist = (fb_dist){true, 1.5};
    c.universe = 100000;
    fb_result r = run_ok(&c);
    cr_expect_eq(r.false_negatives, 0);
    cr_expect(isfinite(r.insert_ns) && r.insert_ns > 0);
    cr_expect(isfinite(r.add_ns) && r.add_ns > 0);
    cr_expect(isfinite(r.adapt_query_ns) && r.adapt_query_ns > 0);
    cr_expect_lt(r.fpr_after, r.fpr_before + 1e-12);
    /* the qf baseline at r = 9: 9 + 2.125 bits a slot at 0.9 fill, plus the
     * overflow tail (3 % at 22 223 slots) */
    fb_config q = config("qf", NULL);
    q.params.remainder_bits = 9;
    q.params.load_factor = 0.9;
    q.qdist = c.qdist;
    q.universe = c.universe;
    fb_result rq = run_ok(&q);
    cr_expect_eq(r.base.memory_bytes, rq.memory_bytes);
    cr_expect_eq(r.base.fpr, rq.fpr);
    cr_expect(r.base.bits_per_key > 11.125 / 0.9 && r.base.bits_per_key < 1.04 * 11.125 / 0.9);
}

/* The binary fuse kinds run through filterbench like any other: no false
 * negatives, an FPR near 2^-f, a member query timed, and with --adapt
 * afuse fixes false positives so the replay's FPR drops. */
Test(filterbench, fuse_and_afuse_run)
{
    fb_config fu = config("fuse", "blocked");
    fb_result r = run_ok(&fu);
    cr_expect_eq(r.false_negatives, 0);
    cr_expect(r.fpr > 0 && r.fpr < 2 * r.fpr_theory, "fuse fpr %g theory %g", r.fpr, r.fpr_theory);
    cr_expect(r.member_query_ns > 0);
    fb_config af = config("afuse", NULL);
    af.adapt = true;
    af.universe = 2000;
    fb_result ra = run_ok(&af);
    cr_expect_eq(ra.false_negatives, 0);
    cr_expect_gt(ra.adaptations, 0);
    cr_expect_lt(ra.fpr_after, ra.fpr_before);
}
