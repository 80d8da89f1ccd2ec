#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/bits.h"
#include "filters/shbf.h"
#include "support/filter_props.h"

static const size_t sizes[] = {0, 1, 100, 10000, 200000};
static const double bpks[] = {6, 10, 16};

static akv_filter_params params(double bpk)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = bpk;
    return p;
}

static unsigned describe_field(const akv_filter *f, const char *field)
{
    char d[256], key[32];
    f->kind->describe(f, d, sizeof d);
    snprintf(key, sizeof key, "\"%s\":", field);
    const char *s = strstr(d, key);
    cr_assert_not_null(s, "no %s in %s", field, d);
    return (unsigned)strtoul(s + strlen(key), NULL, 10);
}

static unsigned describe_k(const akv_filter *f)
{
    return describe_field(f, "k");
}

static akv_filter_params params_t(double bpk, unsigned t)
{
    akv_filter_params p = params(bpk);
    p.flags = AKV_SHBF_SHIFTS(t);
    return p;
}

/* ---- ShBF_M: the `shbf` kind ------------------------------------------- */

Test(shbf, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                akv_filter_params p = params(bpks[b]);
                akv_filter *f = akvt_build("shbf", &p, seed, sizes[s]);
                cr_assert_eq(describe_k(f) % 2, 0, "default k must be even");
                akvt_check_no_false_negatives(f, seed, sizes[s]);
                if (sizes[s] >= 10000)
                    akvt_check_fpr_theory(f, seed, 200000, 0.10);
                akv_filter_destroy(f);
            }
}

/* The paper's setup (docs/filters.md, "Findings"): k = 8, m = 22008, w̄ = 57, n = 1000..1500;
 * eq. 1 gives 8.32e-5 .. 1.03e-3 and the simulation follows it. */
Test(shbf, paper_setup_matches_eq1)
{
    const size_t ns[] = {1000, 1200, 1500};
    const double eq1[] = {8.32e-5, 2.65e-4, 1.03e-3};
    for (int i = 0; i < 3; i++) {
        akv_filter_params p = params(22008.0 / 1024); /* exact in binary: m = 22008 */
        p.expected_keys = 1024;
        p.num_hashes = 8;
        akv_filter *f = akvt_build("shbf", &p, 40 + i, ns[i]);
        double th = f->kind->fpr_theory(f);
        cr_assert(fabs(th - eq1[i]) < 0.02 * eq1[i], "n=%zu eq1 %g vs %g", ns[i], th, eq1[i]);
        akvt_check_no_false_negatives(f, 40 + i, ns[i]);
        akvt_check_fpr_theory(f, 40 + i, 3000000, 0.10);
        cr_log_info("shbf k=8 m=22008 n=%zu: fpr %.3g, eq.1 %.3g", ns[i],
                    akvt_measure_fpr(f, 40 + i, 3000000), th);
        akv_filter_destroy(f);
    }
}

Test(shbf, odd_k_is_pairs_plus_one_probe)
{
    for (uint32_t k = 1; k <= 9; k += 2) {
        akv_filter_params p = params(10);
        p.num_hashes = k;
        akv_filter *f = akvt_build("shbf", &p, k, 50000);
        akvt_check_no_false_negatives(f, k, 50000);
        akvt_check_fpr_theory(f, k, 300000, 0.10);
        cr_assert_eq(f->kind->words_touched(f, akvt_key(k, 0)), (k + 1) / 2);
        akv_filter_destroy(f);
    }
}

/*
 * Words read: a member reads exactly k/2 windows; a non-member stops at the
 * first failing pair, so on average Σ_{i<k/2} P^i with P the probability a
 * pair passes, (1-p')(1-p'+p'^2/(w̄-1)). Compared with `bloom` at the same
 * memory on the paper's workload (half members), about half the reads.
 */
Test(shbf, words_per_query)
{
    akv_filter_params p = params(10);
    akv_filter *s = akvt_build("shbf", &p, 50, 100000);
    akv_filter *b = akvt_build("bloom", &p, 50, 100000);
    unsigned k = describe_k(s);
    double ws_neg = 0, wb_neg = 0, ws_pos = 0, wb_pos = 0;
    const size_t q = 100000;
    for (size_t i = 0; i < q; i++) {
        akv_hash neg = akvt_key(50 ^ 0xfeed, i), pos = akvt_key(50, i);
        ws_neg += s->kind->words_touched(s, neg);
        wb_neg += b->kind->words_touched(b, neg);
        unsigned w = s->kind->words_touched(s, pos);
        cr_assert_eq(w, k / 2);
        ws_pos += w;
        wb_pos += b->kind->words_touched(b, pos);
    }
    double zero = exp(-(double)k / 10), pass = (1 - zero) * (1 - zero + zero * zero / 56), expect = 0;
    for (unsigned i = 0; i < k / 2; i++)
        expect += pow(pass, i);
    cr_assert(fabs(ws_neg / q - expect) < 0.03 * expect, "negative reads %f vs %f", ws_neg / q, expect);
    double mixed = (ws_neg + ws_pos) / (wb_neg + wb_pos);
    cr_log_info("shbf/bloom words: negatives %.3f, half members %.3f", ws_neg / wb_neg, mixed);
    cr_assert(mixed < 0.65, "mixed ratio %f", mixed);
    akv_filter_destroy(s);
    akv_filter_destroy(b);
}

Test(shbf, serialization_and_corruption)
{
    for (size_t n = 0; n <= 5000; n += 2500) {
        akv_filter_params p = params(10);
        akv_filter *f = akvt_build("shbf", &p, 4, n);
        akvt_check_serialization(f, 4, n, 20000, 300);
        akv_filter_destroy(f);
    }
}

/* Payload (version 2): u64 m, u32 k, u32 wbar, u32 t, u64 keys, bits. The
 * filter has t = 1, k = 8: t = 2 would need k to be a multiple of 3. */
Test(shbf, load_validates_fields)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("shbf", &p, 6, 3000);
    const size_t offs[] = {0, 7, 8, 8, 12, 12, 15, 16, 16, 16, 19};
    const uint8_t vals[] = {0x40, 0x01, 0, 65, 58, 1, 1, 0, 8, 2, 1};
    akvt_check_edits_rejected(f, offs, vals, sizeof offs / sizeof *offs, false);
    akv_filter_destroy(f);
}

/* ---- ShBF_M with t shifts (the paper's §3.6, eqs. 10–12) -------------- */

/* The paper's eq. 1, written out here independently of the kind: for
 * t = 1 the kind's eqs. 11–12 must give the same number. */
static double eq1_ref(unsigned k, unsigned wbar, uint64_t m, uint64_t n)
{
    double zero = exp((double)k * (double)n / 2 * log1p(-2.0 / (double)m));
    return pow(1 - zero, k / 2 + (k & 1)) * pow(1 - zero + zero * zero / (wbar - 1), k / 2);
}

Test(shbf, eq11_reduces_to_eq1_for_one_shift)
{
    const size_t ns[] = {1, 1000, 50000};
    for (size_t i = 0; i < 3; i++)
        for (size_t b = 0; b < 3; b++)
            for (uint32_t k = 0; k <= 13; k++) {
                akv_filter_params p = params(bpks[b]);
                p.num_hashes = k; /* 0: the default even k */
                akv_filter *f = akvt_build("shbf", &p, 80 + k, ns[i]);
                cr_assert_eq(describe_field(f, "t"), 1);
                double got = f->kind->fpr_theory(f);
                double want =
                    eq1_ref(describe_k(f), describe_field(f, "wbar"), describe_field(f, "m"), ns[i]);
                cr_assert(fabs(got - want) <= 1e-12 * want, "n=%zu bpk=%g k=%u: eq.11 %.17g vs eq.1 %.17g",
                          ns[i], bpks[b], describe_k(f), got, want);
                akv_filter_destroy(f);
            }
}

/* Default k is the multiple of t+1 minimising eq. 11; members read exactly
 * k/(t+1) windows; a single key sets k distinct bits (t distinct offsets). */
Test(shbf, shifts_params)
{
    for (unsigned t = 1; t <= 7; t++)
        for (size_t b = 0; b < 3; b++) {
            akv_filter_params p = params_t(bpks[b], t);
            akv_filter *f = akvt_build("shbf", &p, 90 + t, 20000);
            unsigned k = describe_k(f);
            cr_assert_eq(describe_field(f, "t"), t);
            cr_assert_eq(k % (t + 1), 0, "t=%u: default k=%u", t, k);
            for (size_t i = 0; i < 1000; i++)
                cr_assert_eq(f->kind->words_touched(f, akvt_key(90 + t, i)), k / (t + 1));
            cr_log_info("shbf t=%u bits/key %g: k=%u, eq.11 %.4g", t, bpks[b], k, f->kind->fpr_theory(f));
            akv_filter_destroy(f);
        }
    /* Flags: t = 0 is t = 1; t > 7 and unknown bits are refused; for t ≥ 2,
     * k must be a multiple of t+1. */
    const akv_filter_kind *kind = akv_filter_kind_by_name("shbf");
    akv_filter *f = NULL;
    akv_filter_params p = params(10);
    p.expected_keys = 1000;
    p.flags = AKV_SHBF_SHIFTS(8);
    cr_assert_eq(akv_filter_create(kind, &p, NULL, 0, &f), AKV_EINVAL);
    p.flags = AKV_SHBF_SHIFTS(2) | 1;
    cr_assert_eq(akv_filter_create(kind, &p, NULL, 0, &f), AKV_EINVAL);
    p.flags = AKV_SHBF_SHIFTS(2);
    p.num_hashes = 4;
    cr_assert_eq(akv_filter_create(kind, &p, NULL, 0, &f), AKV_EINVAL);
    p.num_hashes = 9;
    cr_assert_eq(akv_filter_create(kind, &p, NULL, 0, &f), AKV_OK);
    cr_assert_eq(describe_k(f), 9);
    akv_filter_destroy(f);
    p.flags = AKV_SHBF_SHIFTS(0);
    p.num_hashes = 0;
    cr_assert_eq(akv_filter_create(kind, &p, NULL, 0, &f), AKV_OK);
    cr_assert_eq(describe_field(f, "t"), 1);
    akv_filter_destroy(f);
    /* One key in a large array: k bits set (offsets distinct, groups apart). */
    for (unsigned t = 2; t <= 7; t++) {
        size_t exact = 0;
        for (size_t i = 0; i < 100; i++) {
            akv_filter_params q = params_t(10, t);
            q.expected_keys = 100000;
            akv_filter *g = akvt_build("shbf", &q, 200 + i, 1);
            uint8_t *buf;
            size_t len;
            cr_assert_eq(akv_filter_serialize(g, &buf, &len), AKV_OK);
            const size_t bits_at = AKV_FILTER_HEADER_BYTES + 28; /* payload header: 8+4+4+4+8 */
            uint64_t ones = akvi_popcount_bytes(buf + bits_at, len - AKV_FILTER_TRAILER_BYTES - bits_at);
            cr_assert_leq(ones, describe_k(g));
            exact += ones == describe_k(g);
            free(buf);
            akv_filter_destroy(g);
        }
        cr_assert_geq(exact, 97, "t=%u: %zu of 100 keys set k bits", t, exact);
    }
}

/* t = 1, 2, 3 at 6, 10, 16 bits/key: no false negatives, FPR against
 * eqs. 11–12. */
Test(shbf, shifts_no_false_negatives_fpr_matches_theory)
{
    for (unsigned t = 1; t <= 3; t++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 2; seed++) {
                akv_filter_params p = params_t(bpks[b], t);
                akv_filter *f = akvt_build("shbf", &p, 100 + seed, 200000);
                akvt_check_no_false_negatives(f, 100 + seed, 200000);
                akvt_check_fpr_theory(f, 100 + seed, 1000000, 0.10);
                if (seed == 1)
                    cr_log_info("shbf t=%u bits/key %g k=%u: fpr %.5f, eq.11 %.5f", t, bpks[b], describe_k(f),
                                akvt_measure_fpr(f, 100 + seed, 1000000), f->kind->fpr_theory(f));
                akv_filter_destroy(f);
            }
    for (unsigned t = 2; t <= 3; t++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            akv_filter_params p = params_t(10, t);
            akv_filter *f = akvt_build("shbf", &p, 110 + t, sizes[s]);
            akvt_check_no_false_negatives(f, 110 + t, sizes[s]);
            akv_filter_destroy(f);
        }
}

/* Words per absent-key query: groups pass independently with probability
 * P = f^(1/g) (g = k/(t+1) groups, f from eq. 11), so a query reads
 * Σ_{i<g} P^i windows on average; bloom at the same memory reads ~2. */
Test(shbf, shifts_words_per_query)
{
    akv_filter_params pb = params(10);
    akv_filter *b = akvt_build("bloom", &pb, 120, 200000);
    const size_t q = 200000;
    double wb = 0;
    for (size_t i = 0; i < q; i++)
        wb += b->kind->words_touched(b, akvt_key(120 ^ 0xfeed, i));
    for (unsigned t = 1; t <= 3; t++) {
        akv_filter_params p = params_t(10, t);
        akv_filter *f = akvt_build("shbf", &p, 120, 200000);
        unsigned g = describe_k(f) / (t + 1);
        double pass = pow(f->kind->fpr_theory(f), 1.0 / g), expect = 0, ws = 0;
        for (unsigned i = 0; i < g; i++)
            expect += pow(pass, i);
        for (size_t i = 0; i < q; i++)
            ws += f->kind->words_touched(f, akvt_key(120 ^ 0xfeed, i));
        cr_assert(fabs(ws / q - expect) < 0.02 * expect, "t=%u: %f words vs %f", t, ws / q, expect);
        cr_log_info("shbf t=%u k=%u: %.3f words/absent query (theory %.3f), %.3f x bloom's %.3f", t,
                    describe_k(f), ws / q, expect, ws / wb, wb / q);
        cr_assert(ws / wb < (t == 1 ? 0.75 : 0.6), "t=%u reads %f x bloom", t, ws / wb);
        akv_filter_destroy(f);
    }
    akv_filter_destroy(b);
}

Test(shbf, shifts_serialization_and_corruption)
{
    for (unsigned t = 1; t <= 3; t++)
        for (size_t n = 0; n <= 5000; n += 2500) {
            akv_filter_params p = params_t(10, t);
            akv_filter *f = akvt_build("shbf", &p, 130 + t, n);
            akvt_check_serialization(f, 130 + t, n, 20000, 300);
            uint8_t *buf;
            size_t len;
            cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
            akv_filter *g = NULL;
            cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK);
            cr_assert_eq(describe_field(g, "t"), t);
            cr_assert_eq(describe_k(g), describe_k(f));
            cr_assert_eq(g->kind->fpr_theory(g), f->kind->fpr_theory(f));
            akv_filter_destroy(g);
            free(buf);
            akv_filter_destroy(f);
        }
}

/* A payload of version 1 (written before t existed: u64 m, u32 k, u32 wbar,
 * u64 keys, bits) loads as t = 1 and answers as it did. It is made here from
 * a version-2 one by dropping the t field. */
static uint8_t *as_version1(const uint8_t *buf, size_t len, size_t *out_len)
{
    const size_t pl = AKV_FILTER_HEADER_BYTES, tf = pl + 16;
    uint8_t *c = malloc(len - 4);
    memcpy(c, buf, tf);
    memcpy(c + tf, buf + tf + 4, len - tf - 4);
    c[8] = 1; /* payload version, u16 at 8 */
    c[9] = 0;
    uint64_t plen = 0;
    for (int i = 0; i < 8; i++)
        plen |= (uint64_t)c[12 + i] << (8 * i);
    plen -= 4;
    for (int i = 0; i < 8; i++)
        c[12 + i] = (uint8_t)(plen >> (8 * i));
    *out_len = len - 4;
    akvt_reseal(c, *out_len);
    return c;
}

Test(shbf, version1_payloads_load_as_one_shift)
{
    for (uint32_t k = 7; k <= 8; k++) {
        akv_filter_params p = params(10);
        p.num_hashes = k;
        akv_filter *f = akvt_build("shbf", &p, 140 + k, 30000);
        uint8_t *buf;
        size_t len, len1;
        cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
        cr_assert_eq(buf[8], 2, "payload version");
        uint8_t *v1 = as_version1(buf, len, &len1);
        akv_filter *g = NULL;
        cr_assert_eq(akv_filter_deserialize(v1, len1, &g), AKV_OK);
        cr_assert_eq(describe_field(g, "t"), 1);
        cr_assert_eq(describe_k(g), k);
        cr_assert_eq(g->n_keys, 30000);
        akvt_check_no_false_negatives(g, 140 + k, 30000);
        for (size_t i = 0; i < 100000; i++) {
            akv_hash h = akvt_key(141 + k, i);
            cr_assert_eq(akv_filter_may_contain(g, h), akv_filter_may_contain(f, h));
        }
        cr_assert_eq(g->kind->fpr_theory(g), f->kind->fpr_theory(f));
        akv_filter_destroy(g);
        /* The same bytes labelled version 2 are short by the t field. */
        v1[8] = 2;
        akvt_reseal(v1, len1);
        cr_assert_eq(akv_filter_deserialize(v1, len1, &g), AKV_ECORRUPT);
        cr_assert_null(g);
        free(v1);
        free(buf);
        akv_filter_destroy(f);
    }
}

/* ---- ShBF_A: association -------------------------------------------------- */

/* S1 = keys [0, 20000), S2 = keys [15000, 35000): 5000 in both. */
#define A_N1    20000
#define A_SHIFT 15000
#define A_ALL   35000

static bool answer_allows(akvi_shbfa_answer a, bool in1, bool in2)
{
    switch (a) {
    case AKV_SHBFA_NEITHER:
        return !in1 && !in2;
    case AKV_SHBFA_S1_ONLY:
        return in1 && !in2;
    case AKV_SHBFA_BOTH:
        return in1 && in2;
    case AKV_SHBFA_S2_ONLY:
        return !in1 && in2;
    case AKV_SHBFA_S1_MAYBE_S2:
        return in1;
    case AKV_SHBFA_S2_MAYBE_S1:
        return in2;
    case AKV_SHBFA_EXACTLY_ONE:
        return in1 != in2;
    case AKV_SHBFA_UNKNOWN:
        return in1 || in2;
    }
    return false;
}

static akvi_shbfa *build_assoc(uint32_t k, double bpk)
{
    akv_hash *all = akvt_keys(60, A_ALL);
    akvi_shbfa *f = NULL;
    cr_assert_eq(akvi_shbfa_build(all, A_N1, all + A_SHIFT, A_ALL - A_SHIFT, k, bpk, &f), AKV_OK);
    free(all);
    return f;
}

/* ShBF_A (docs/filters.md, "Findings"): P(clear answer) = (1 - 0.5^k)^2 at the optimal m; never a
 * wrong answer for a member of S1 ∪ S2; k windows at most. */
Test(shbfa, clear_answers_and_no_wrong_answers)
{
    for (uint32_t k = 4; k <= 10; k += 2) {
        akvi_shbfa *f = build_assoc(k, 0);
        akvi_shbf_info info;
        akvi_shbfa_info(f, &info);
        cr_assert_eq(info.n, A_ALL);
        size_t clear = 0;
        for (size_t i = 0; i < A_ALL; i++) {
            unsigned w;
            bool in1 = i < A_N1, in2 = i >= A_SHIFT;
            akvi_shbfa_answer a = akvi_shbfa_query(f, akvt_key(60, i), &w);
            cr_assert(answer_allows(a, in1, in2), "k=%u key %zu: answer %d wrong", k, i, a);
            cr_assert(w >= 1 && w <= k);
            clear += a >= AKV_SHBFA_S1_ONLY && a <= AKV_SHBFA_S2_ONLY;
        }
        double p = (double)clear / A_ALL, th = pow(1 - pow(0.5, k), 2);
        cr_assert(fabs(p - th) < 0.01 + 5 * sqrt(th * (1 - th) / A_ALL), "k=%u clear %f vs %f", k, p, th);
        cr_log_info("shbfa k=%u: clear answers %.4f, theory %.4f, wrong 0", k, p, th);
        /* Non-members: mostly "neither", which is always right. */
        size_t neither = 0;
        for (size_t i = 0; i < 50000; i++)
            neither += akvi_shbfa_query(f, akvt_key(61, i), NULL) == AKV_SHBFA_NEITHER;
        cr_assert(neither > 0.8 * 50000, "k=%u neither %zu", k, neither);
        akvi_shbfa_destroy(f);
    }
}

Test(shbfa, edge_cases)
{
    akvi_shbfa *f = NULL;
    cr_assert_eq(akvi_shbfa_build(NULL, 0, NULL, 0, 0, 0, &f), AKV_EINVAL);
    cr_assert_eq(akvi_shbfa_build(NULL, 0, NULL, 0, 65, 10, &f), AKV_EINVAL);
    cr_assert_eq(akvi_shbfa_build(NULL, 0, NULL, 0, 0, 10, &f), AKV_OK);
    for (size_t i = 0; i < 1000; i++)
        cr_assert_eq(akvi_shbfa_query(f, akvt_key(62, i), NULL), AKV_SHBFA_NEITHER);
    akvi_shbfa_destroy(f);
    /* Duplicates and one-element sets. */
    akv_hash a[3] = {akvt_key(63, 1), akvt_key(63, 1), akvt_key(63, 2)};
    cr_assert_eq(akvi_shbfa_build(a, 3, a + 2, 1, 8, 0, &f), AKV_OK);
    akvi_shbf_info info;
    akvi_shbfa_info(f, &info);
    cr_assert_eq(info.n, 2);
    cr_assert(answer_allows(akvi_shbfa_query(f, a[0], NULL), true, false));
    cr_assert(answer_allows(akvi_shbfa_query(f, a[2], NULL), true, true));
    akvi_shbfa_destroy(f);
}

/* ---- ShBF_X: multiplicity -------------------------------------------------- */

#define X_N 20000
#define X_C 57

static akvi_shbfx_item *count_items(uint64_t space, size_t n, uint64_t seed)
{
    akvi_shbfx_item *it = malloc(n * sizeof *it);
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++)
        it[i] = (akvi_shbfx_item){akvt_key(space, i), (uint32_t)(akvt_rand(&st) % X_C) + 1};
    return it;
}

/* ShBF_X (docs/filters.md, "Findings") at 1.5× the optimal memory: members are never under-
 * reported and are exact with probability (1-f0)^(c-j) (erratum to eq.
 * 19); non-members read 0 with probability (1-f0)^c (eq. 18). */
Test(shbfx, never_under_reports_and_cr_matches_theory)
{
    akvi_shbfx_item *it = count_items(70, X_N, 7);
    for (uint32_t k = 4; k <= 12; k += 4) {
        akvi_shbfx_params p = {.k = k, .bits_per_key = 1.5 * k / M_LN2, .c = X_C};
        akvi_shbfx *f = NULL;
        cr_assert_eq(akvi_shbfx_build(it, X_N, &p, &f), AKV_OK);
        double f0 = akvi_shbfx_f0(f), exact = 0, exact_th = 0;
        for (size_t i = 0; i < X_N; i++) {
            unsigned w;
            uint32_t got = akvi_shbfx_query(f, it[i].h, &w);
            cr_assert(got >= it[i].count, "k=%u key %zu: %u < %u", k, i, got, it[i].count);
            cr_assert_eq(w, k);
            exact += got == it[i].count;
            exact_th += pow(1 - f0, X_C - it[i].count);
        }
        cr_assert(fabs(exact - exact_th) < 0.02 * X_N, "k=%u members exact %f vs %f", k, exact, exact_th);
        size_t zero = 0;
        const size_t q = 200000;
        for (size_t i = 0; i < q; i++)
            zero += akvi_shbfx_query(f, akvt_key(71, i), NULL) == 0;
        double cr = (double)zero / q, th = pow(1 - f0, X_C);
        cr_assert(fabs(cr - th) < 0.05 * th + 5 * sqrt(th * (1 - th) / q), "k=%u CR %f vs %f", k, cr, th);
        cr_log_info("shbfx k=%u: non-member CR %.4f vs (1-f0)^c %.4f; members exact %.4f vs %.4f", k, cr, th,
                    exact / X_N, exact_th / X_N);
        akvi_shbfx_destroy(f);
    }
    free(it);
}

/* §5.3.2 path: random inserts and removals against an exact model; no
 * stored key is ever under-reported, and removing everything empties the
 * bit array. */
Test(shbfx, updates_without_false_negatives)
{
    const size_t pool = 6000;
    akvi_shbfx_item *it = count_items(72, 3000, 9);
    uint32_t *model = calloc(pool, sizeof *model);
    for (size_t i = 0; i < 3000; i++)
        model[i] = it[i].count;
    akvi_shbfx_params p = {.k = 8, .bits_per_key = 16, .c = X_C, .updatable = true};
    akvi_shbfx *f = NULL;
    cr_assert_eq(akvi_shbfx_build(it, 3000, &p, &f), AKV_OK);
    uint64_t st = 5;
    for (size_t op = 0; op < 100000; op++) {
        size_t i = akvt_rand(&st) % pool;
        akv_hash h = akvt_key(72, i);
        if (akvt_rand(&st) & 1) {
            int rc = akvi_shbfx_insert(f, h);
            cr_assert_eq(rc, model[i] == X_C ? AKV_EFULL : AKV_OK);
            model[i] += rc == AKV_OK;
        } else {
            int rc = akvi_shbfx_remove(f, h);
            cr_assert_eq(rc, model[i] == 0 ? AKV_NOTFOUND : AKV_OK);
            model[i] -= rc == AKV_OK;
        }
        if (op % 1000 == 0)
            for (size_t j = 0; j < pool; j++)
                cr_assert(akvi_shbfx_query(f, akvt_key(72, j), NULL) >= model[j], "op %zu key %zu", op, j);
    }
    for (size_t j = 0; j < pool; j++)
        cr_assert(akvi_shbfx_query(f, akvt_key(72, j), NULL) >= model[j]);
    for (size_t j = 0; j < pool; j++)
        while (model[j]--)
            cr_assert_eq(akvi_shbfx_remove(f, akvt_key(72, j)), AKV_OK);
    akvi_shbf_info info;
    akvi_shbfx_info(f, &info);
    cr_assert_eq(info.n, 0);
    for (size_t j = 0; j < pool; j++)
        cr_assert_eq(akvi_shbfx_query(f, akvt_key(72, j), NULL), 0);
    akvi_shbfx_destroy(f);
    free(model);
    free(it);
}

Test(shbfx, params_and_edge_cases)
{
    akvi_shbfx *f = NULL;
    akvi_shbfx_params p = {.k = 6};
    akvi_shbfx_item bad[2] = {{akvt_key(73, 0), 0}, {akvt_key(73, 1), 58}};
    cr_assert_eq(akvi_shbfx_build(bad, 1, &p, &f), AKV_EINVAL);
    cr_assert_eq(akvi_shbfx_build(bad + 1, 1, &p, &f), AKV_EINVAL);
    /* Repeated hashes add up, and may not pass c together. */
    akvi_shbfx_item rep[2] = {{akvt_key(73, 2), 30}, {akvt_key(73, 2), 30}};
    cr_assert_eq(akvi_shbfx_build(rep, 2, &p, &f), AKV_EINVAL);
    rep[1].count = 27;
    cr_assert_eq(akvi_shbfx_build(rep, 2, &p, &f), AKV_OK);
    cr_assert_eq(akvi_shbfx_query(f, rep[0].h, NULL), 57);
    cr_assert_eq(akvi_shbfx_insert(f, rep[0].h), AKV_ENOTSUP);
    akvi_shbfx_destroy(f);
    p.k = 0;
    cr_assert_eq(akvi_shbfx_build(NULL, 0, &p, &f), AKV_EINVAL);
    p = (akvi_shbfx_params){.k = 4, .c = 58};
    cr_assert_eq(akvi_shbfx_build(NULL, 0, &p, &f), AKV_EINVAL);
    /* Empty, then grown from nothing through the update path. */
    p = (akvi_shbfx_params){.k = 4, .c = 3, .bits_per_key = 10, .updatable = true};
    cr_assert_eq(akvi_shbfx_build(NULL, 0, &p, &f), AKV_OK);
    akv_hash h = akvt_key(73, 9);
    cr_assert_eq(akvi_shbfx_query(f, h, NULL), 0);
    cr_assert_eq(akvi_shbfx_remove(f, h), AKV_NOTFOUND);
    for (int i = 1; i <= 3; i++) {
        cr_assert_eq(akvi_shbfx_insert(f, h), AKV_OK);
        cr_assert_geq(akvi_shbfx_query(f, h, NULL), (uint32_t)i);
    }
    cr_assert_eq(akvi_shbfx_insert(f, h), AKV_EFULL);
    cr_assert_eq(akvi_shbfx_query(f, h, NULL), 3);
    akvi_shbfx_destroy(f);
}

/* ---- ShBF_A / ShBF_X serialized forms ------------------------------------- */

/* Every truncation and `flips` random byte changes are rejected. */
static void check_damage(const uint8_t *buf, size_t len, int (*load)(const uint8_t *, size_t, void **),
                         size_t flips)
{
    for (size_t cut = 0; cut<len; cut += len> 4096 ? len / 512 : 1) {
        void *g = NULL;
        cr_assert_eq(load(buf, cut, &g), AKV_ECORRUPT, "truncation to %zu accepted", cut);
        cr_assert_null(g);
    }
    uint8_t *c = malloc(len);
    uint64_t st = len;
    for (size_t t = 0; t < flips; t++) {
        memcpy(c, buf, len);
        c[akvt_rand(&st) % len] ^= (uint8_t)(akvt_rand(&st) | 1);
        void *g = NULL;
        cr_assert_eq(load(c, len, &g), AKV_ECORRUPT);
        cr_assert_null(g);
    }
    free(c);
}

static int load_a(const uint8_t *b, size_t l, void **o)
{
    return akvi_shbfa_deserialize(b, l, (akvi_shbfa **)o);
}
static int load_x(const uint8_t *b, size_t l, void **o)
{
    return akvi_shbfx_deserialize(b, l, (akvi_shbfx **)o);
}

/* Payload fields edited under a recomputed checksum (16-byte header). */
static void check_fields(const uint8_t *buf, size_t len, int (*load)(const uint8_t *, size_t, void **),
                         const size_t *offs, const uint8_t *vals, size_t n)
{
    uint8_t *c = malloc(len);
    for (size_t e = 0; e < n; e++) {
        memcpy(c, buf, len);
        c[offs[e]] = vals[e];
        akvt_reseal(c, len);
        void *g = NULL;
        cr_assert_eq(load(c, len, &g), AKV_ECORRUPT, "edit %zu accepted", e);
        cr_assert_null(g);
    }
    free(c);
}

Test(shbfa, serialization)
{
    akvi_shbfa *f = build_assoc(6, 0), *g = NULL;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_shbfa_serialize(f, &buf, &len), AKV_OK);
    cr_assert_eq(akvi_shbfa_deserialize(buf, len, &g), AKV_OK);
    for (size_t i = 0; i < A_ALL + 20000; i++) {
        akv_hash h = akvt_key(i < A_ALL ? 60 : 61, i);
        cr_assert_eq(akvi_shbfa_query(f, h, NULL), akvi_shbfa_query(g, h, NULL));
    }
    check_damage(buf, len, load_a, 300);
    /* u64 m at 16, u32 k at 24, u64 n at 28 */
    const size_t offs[] = {16, 23, 24, 24, 27};
    const uint8_t vals[] = {0x01, 0x40, 0, 65, 1};
    check_fields(buf, len, load_a, offs, vals, 5);
    free(buf);
    akvi_shbfa_destroy(f);
    akvi_shbfa_destroy(g);
}

Test(shbfx, serialization)
{
    akvi_shbfx_item *it = count_items(74, 5000, 3);
    akvi_shbfx_params p = {.k = 8, .bits_per_key = 16, .updatable = true};
    akvi_shbfx *f = NULL, *g = NULL;
    cr_assert_eq(akvi_shbfx_build(it, 5000, &p, &f), AKV_OK);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_shbfx_serialize(f, &buf, &len), AKV_OK);
    cr_assert_eq(akvi_shbfx_deserialize(buf, len, &g), AKV_OK);
    for (size_t i = 0; i < 5000; i++)
        cr_assert_eq(akvi_shbfx_query(g, it[i].h, NULL), akvi_shbfx_query(f, it[i].h, NULL));
    for (size_t i = 0; i < 20000; i++)
        cr_assert_eq(akvi_shbfx_query(g, akvt_key(75, i), NULL), akvi_shbfx_query(f, akvt_key(75, i), NULL));
    cr_assert_eq(akvi_shbfx_insert(g, it[0].h), AKV_ENOTSUP);
    check_damage(buf, len, load_x, 300);
    /* u64 m at 16, u32 k at 24, u32 c at 28, u64 n at 32 */
    const size_t offs[] = {16, 23, 24, 24, 28, 28, 31};
    const uint8_t vals[] = {0x01, 0x40, 0, 65, 0, 58, 1};
    check_fields(buf, len, load_x, offs, vals, 7);
    free(buf);
    free(it);
    akvi_shbfx_destroy(f);
    akvi_shbfx_destroy(g);
}
