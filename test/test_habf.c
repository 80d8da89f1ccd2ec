/*
 * test_habf.c — HABF and f-HABF: zero false negatives with and without
 * costed negatives, plain-Bloom behaviour without negatives, weighted FPR
 * below a Bloom filter's at equal memory, determinism, serialization and
 * rejection of corrupt payloads.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/codec.h"
#include "support/filter_props.h"

static const char *const kinds[] = {"habf", "fhabf"};

/* Negatives from their own key space, costs uniform (s = 0) or Zipf(s)
 * over a seeded shuffle of ranks. */
static akv_negative *make_negatives(uint64_t seed, size_t n, double s)
{
    akv_negative *neg = malloc(n * sizeof *neg + 1);
    cr_assert_not_null(neg);
    for (size_t i = 0; i < n; i++) {
        neg[i].h = akvt_key(seed ^ 0x6e6567ULL, i);
        neg[i].cost = s > 0 ? pow((double)(i + 1), -s) : 1.0;
    }
    uint64_t st = seed * 3 + 1;
    for (size_t i = n; i > 1; i--) {
        size_t j = akvt_rand(&st) % i;
        double t = neg[i - 1].cost;
        neg[i - 1].cost = neg[j].cost;
        neg[j].cost = t;
    }
    return neg;
}

static uint32_t g_num_hashes; /* 0 = the kind's default */

static akv_filter *build_costed(const char *kind, double bpk, uint64_t seed, size_t n,
                                const akv_negative *neg, size_t nn)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.num_hashes = g_num_hashes;
    p.bits_per_key = bpk;
    p.expected_keys = n;
    p.seed = seed;
    akv_hash *keys = akvt_keys(seed, n);
    akv_filter *f = NULL;
    int rc = akv_filter_build(akv_filter_kind_by_name(kind), &p, keys, n, neg, nn, &f);
    cr_assert_eq(rc, AKV_OK, "%s build: %s", kind, akv_strerror(rc));
    free(keys);
    return f;
}

static double weighted_fpr(const akv_filter *f, const akv_negative *neg, size_t nn)
{
    double bad = 0, total = 0;
    for (size_t i = 0; i < nn; i++) {
        total += neg[i].cost;
        if (akv_filter_may_contain(f, neg[i].h))
            bad += neg[i].cost;
    }
    return bad / total;
}

Test(habf, no_false_negatives_with_costed_negatives)
{
    static const size_t sizes[] = {1, 2, 100, 5000, 60000};
    static const double bpks[] = {4, 8.44, 14};
    for (size_t t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            for (size_t b = 0; b < 3; b++)
                for (double skew = 0; skew <= 1.0; skew += 1.0) {
                    uint64_t seed = 11 + s * 7 + b;
                    size_t nn = sizes[s] * 2;
                    akv_negative *neg = make_negatives(seed, nn, skew);
                    akv_filter *f = build_costed(kinds[t], bpks[b], seed, sizes[s], neg, nn);
                    akvt_check_no_false_negatives(f, seed, sizes[s]);
                    akv_filter_destroy(f);
                    free(neg);
                }
}

/* Many more negatives than keys at a small budget: most keys get adjusted,
 * many more than once; and some "negatives" are members (a stale miss log
 * entry for a key inserted since) — still no false negative. */
Test(habf, no_false_negatives_under_heavy_adjustment)
{
    const size_t n = 20000, nn = 160000;
    for (size_t t = 0; t < 2; t++) {
        akv_negative *neg = make_negatives(21, nn, 1.0);
        for (size_t i = 0; i < 500; i++)
            neg[i * 7].h = akvt_key(21, i * 13);
        akv_filter *f = build_costed(kinds[t], 5, 21, n, neg, nn);
        akvt_check_no_false_negatives(f, 21, n);
        akv_filter_stats st;
        akv_filter_get_stats(f, &st);
        cr_log_info("%s: %llu adjustments", kinds[t], (unsigned long long)st.adaptations);
        akv_filter_destroy(f);
        free(neg);
    }
}

Test(habf, without_negatives_is_a_sound_bloom_filter)
{
    for (size_t t = 0; t < 2; t++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            akv_filter_params p;
            akv_filter_params_init(&p);
            p.bits_per_key = 6 + 2.0 * (double)seed;
            akv_filter *f = akvt_build(kinds[t], &p, seed, 50000);
            akvt_check_no_false_negatives(f, seed, 50000);
            akvt_check_fpr_theory(f, seed, 200000, 0.10);
            akv_filter_stats st;
            akv_filter_get_stats(f, &st);
            cr_assert_eq(st.adapt_bits, 0, "no negatives: no HashExpressor");
            akv_filter_destroy(f);
        }
}

Test(habf, large_budget_caps_k)
{
    for (size_t t = 0; t < 2; t++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.bits_per_key = 40; /* Bloom optimum k = 28: more than the family */
        akv_filter *f = akvt_build(kinds[t], &p, 3, 2000);
        akvt_check_no_false_negatives(f, 3, 2000);
        akvt_check_serialization(f, 3, 2000, 5000, 50);
        akv_filter_destroy(f);
    }
}

Test(habf, tiny_and_empty_builds)
{
    for (size_t t = 0; t < 2; t++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        akv_filter *f = NULL;
        akv_negative neg = {akvt_key(99, 1), 5.0};
        cr_assert_eq(akv_filter_create(akv_filter_kind_by_name(kinds[t]), &p, &neg, 1, &f), AKV_OK);
        cr_assert(akv_filter_may_contain(f, akvt_key(1, 1)), "unbuilt filter must answer maybe");
        cr_assert_eq(akv_filter_finish(f), AKV_OK);
        cr_assert_eq(akv_filter_add(f, akvt_key(1, 1)), AKV_EINVAL, "static kind is sealed after finish");
        akvt_check_serialization(f, 1, 0, 1000, 50);
        akv_filter_destroy(f);
    }
}

Test(habf, weighted_fpr_beats_bloom_at_equal_memory)
{
    const size_t n = 150000, nn = 150000;
    for (double skew = 0; skew <= 1.0; skew += 1.0)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            akv_negative *neg = make_negatives(seed, nn, skew);
            akv_filter *bloom = build_costed("bloom", 8.44, seed, n, neg, nn);
            g_num_hashes = seed == 2 ? 3 : 0; /* seed 2: the paper's fixed k = 3 */
            akv_filter *h = build_costed("habf", 8.44, seed, n, neg, nn);
            akv_filter *fh = build_costed("fhabf", 8.44, seed, n, neg, nn);
            g_num_hashes = 0;
            cr_assert_leq(akv_filter_memory(h), akv_filter_memory(bloom) + 1, "equal memory");
            cr_assert_leq(akv_filter_memory(fh), akv_filter_memory(bloom) + 1, "equal memory");
            double wb = weighted_fpr(bloom, neg, nn), wh = weighted_fpr(h, neg, nn),
                   wf = weighted_fpr(fh, neg, nn);
            cr_log_info("skew %.1f seed %llu: bloom %.5f habf %.5f fhabf %.5f", skew,
                        (unsigned long long)seed, wb, wh, wf);
            cr_assert_lt(wh, wb / 3, "habf %.5f vs bloom %.5f", wh, wb);
            cr_assert_lt(wf, wb / 2, "fhabf %.5f vs bloom %.5f", wf, wb);
            akv_filter_stats st;
            akv_filter_get_stats(h, &st);
            cr_assert_gt(st.adaptations, 0, "TPJO adjusted no key");
            akv_filter_destroy(bloom);
            akv_filter_destroy(h);
            akv_filter_destroy(fh);
            free(neg);
        }
}

Test(habf, build_is_deterministic)
{
    akv_negative *neg = make_negatives(5, 20000, 1.0);
    for (size_t t = 0; t < 2; t++) {
        akv_filter *a = build_costed(kinds[t], 10, 5, 20000, neg, 20000);
        akv_filter *b = build_costed(kinds[t], 10, 5, 20000, neg, 20000);
        uint8_t *ba, *bb;
        size_t la, lb;
        cr_assert_eq(akv_filter_serialize(a, &ba, &la), AKV_OK);
        cr_assert_eq(akv_filter_serialize(b, &bb, &lb), AKV_OK);
        cr_assert(la == lb && memcmp(ba, bb, la) == 0, "%s: two builds differ", kinds[t]);
        free(ba);
        free(bb);
        akv_filter_destroy(a);
        akv_filter_destroy(b);
    }
    free(neg);
}

Test(habf, serialization_round_trip_and_corruption)
{
    akv_negative *neg = make_negatives(4, 8000, 1.0);
    for (size_t t = 0; t < 2; t++) {
        akv_filter *f = build_costed(kinds[t], 8, 4, 5000, neg, 8000);
        akvt_check_serialization(f, 4, 5000, 20000, 300);
        akv_filter_destroy(f);
        akv_filter_params p;
        akv_filter_params_init(&p);
        f = akvt_build(kinds[t], &p, 4, 3000);
        akvt_check_serialization(f, 4, 3000, 20000, 100);
        akv_filter_destroy(f);
    }
    free(neg);
}

/* Payload offsets (see habf_save): fast, k, alpha, nfunc, h0[k], seed, m,
 * omega, … Load must reject inconsistent fields even with a valid envelope.
 * The byte at `off` is XOR-ed with x. */
static int load_mutated(const akv_filter *f, size_t off, uint8_t x)
{
    size_t len = 0;
    cr_assert_eq(f->kind->save(f, NULL, &len), AKV_OK);
    uint8_t *buf = malloc(len);
    cr_assert_eq(f->kind->save(f, buf, &len), AKV_OK);
    buf[off] ^= x;
    akv_filter *g = NULL;
    int rc = f->kind->load(buf, len, f->kind->payload_version, &g);
    akv_filter_destroy(g);
    free(buf);
    return rc;
}

Test(habf, load_validates_fields)
{
    akv_negative *neg = make_negatives(8, 4000, 0);
    g_num_hashes = 3; /* the offsets below assume k = 3 */
    for (size_t t = 0; t < 2; t++) {
        akv_filter *f = build_costed(kinds[t], 8, 8, 3000, neg, 4000);
        cr_assert_eq(load_mutated(f, 0, 1), AKV_ECORRUPT, "variant flag");
        cr_assert_eq(load_mutated(f, 1, 3), AKV_ECORRUPT, "k = 0");
        cr_assert_eq(load_mutated(f, 1, 40), AKV_ECORRUPT, "k too large");
        cr_assert_eq(load_mutated(f, 2, 3), AKV_ECORRUPT, "cell size");
        cr_assert_eq(load_mutated(f, 3, 4), AKV_ECORRUPT, "family size");
        cr_assert_eq(load_mutated(f, 4, 3), AKV_ECORRUPT, "duplicate H_0 index");
        cr_assert_eq(load_mutated(f, 4, 1), AKV_ECORRUPT, "H_0 index 0 is reserved");
        cr_assert_eq(load_mutated(f, 4 + 3 + 8 + 7, 0x40), AKV_ECORRUPT, "m beyond payload");
        cr_assert_eq(load_mutated(f, 4 + 3 + 16, 1), AKV_ECORRUPT, "omega disagrees with length");
        cr_assert_eq(load_mutated(f, 4 + 3, 0x5a), AKV_OK, "seed is free");
        akv_filter_destroy(f);
    }
    g_num_hashes = 0;
    free(neg);
}

Test(habf, rejects_bad_params)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.num_hashes = 7; /* habf has 7 functions: at least one must stay a candidate */
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("habf"), &p, NULL, 0, &f), AKV_EINVAL);
    cr_assert_null(f);
    p.num_hashes = 9;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("fhabf"), &p, NULL, 0, &f), AKV_EINVAL);
}

Test(habf, load_survives_payload_damage)
{
    akv_negative *neg = make_negatives(9, 3000, 1.0);
    for (size_t t = 0; t < 2; t++) {
        akv_filter *f = build_costed(kinds[t], 8, 9, 2000, neg, 3000);
        akvt_check_payload_damage(f, 9, 2000);
        akv_filter_destroy(f);
    }
    free(neg);
}
