#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/bits.h"
#include "filters/rbf.h"
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

/* The bit array of a serialized bloom or rbf filter: the last ceil(m/8)
 * bytes of the payload. */
static const uint8_t *bits_of(const uint8_t *buf, size_t len, uint64_t m)
{
    return buf + len - 8 - (m + 7) / 8;
}

/* An RBF over (m, n) with k given in thousandths. */
static akv_filter *rbf_milli(uint64_t m, size_t n, uint32_t milli, uint64_t seed)
{
    akv_filter_params p = params((double)m / (double)n);
    p.flags = AKV_RBF_MILLI_K;
    p.num_hashes = milli;
    return akvt_build("rbf", &p, seed, n);
}

Test(rbf, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                akv_filter_params p = params(bpks[b]);
                akv_filter *f = akvt_build("rbf", &p, seed, sizes[s]);
                akvt_check_no_false_negatives(f, seed, sizes[s]);
                if (sizes[s] >= 10000)
                    akvt_check_fpr_theory(f, seed, 200000, 0.10);
                akv_filter_destroy(f);
            }
}

/* Fixed-point k* = (m/n) ln 2: m = 131072, n = 60000 gives 1.51419. */
Test(rbf, fixed_point_kstar)
{
    uint32_t k_int;
    uint64_t thr;
    akvi_rbf_kstar(131072, 60000, &k_int, &thr);
    cr_assert_eq(k_int, 1);
    cr_assert(fabs(akvi_rbf_frac(thr) - (131072.0 / 60000 * M_LN2 - 1)) < 1e-12);
    akvi_rbf_kstar(64, 1, &k_int, &thr); /* 44.36 */
    cr_assert_eq(k_int, 44);
    akvi_rbf_kstar(1 << 20, 1, &k_int, &thr); /* clamped */
    cr_assert_eq(k_int, AKV_RBF_MAX_K);
    cr_assert_eq(thr, 0);
    akvi_rbf_kmilli(1514, &k_int, &thr);
    cr_assert_eq(k_int, 1);
    cr_assert(fabs(akvi_rbf_frac(thr) - 0.514) < 1e-15);
}

/*
 * docs/filters.md, "Findings": at m = 131072, n = 60000 the FPR follows q^a(1 - f p0),
 * with minima at integer k; k* = 1.514 (foz 0.500) is worse than k = 2.
 */
Test(rbf, rational_k_sweep_matches_corrected_formula)
{
    const uint32_t ks[] = {1000, 1300, 1514, 1700, 2000};
    const double expected[] = {0.3673, 0.3743, 0.3715, 0.3669, 0.3596};
    double fpr[5];
    for (int i = 0; i < 5; i++) {
        akv_filter *f = rbf_milli(131072, 60000, ks[i], 11);
        double th = f->kind->fpr_theory(f);
        cr_assert(fabs(th - expected[i]) < 0.002, "k=%u theory %.4f vs %.4f", ks[i], th, expected[i]);
        akvt_check_no_false_negatives(f, 11, 60000);
        fpr[i] = akvt_measure_fpr(f, 11, 1000000);
        double p0 = exp(-(double)ks[i] / 1000.0 * 60000 / 131072);
        cr_log_info("rbf m=131072 n=60000 k=%.3f: fpr %.4f, q^a(1-f p0) %.4f, paper (1-p0)^k %.4f",
                    ks[i] / 1000.0, fpr[i], th, pow(1 - p0, ks[i] / 1000.0));
        cr_assert(fabs(fpr[i] - th) < 0.01 * th + 5 * sqrt(th * (1 - th) / 1e6), "k=%u fpr %.4f vs %.4f",
                  ks[i], fpr[i], th);
        akv_filter_destroy(f);
    }
    cr_assert(fpr[4] < fpr[2] && fpr[0] < fpr[1], "no minima at integer k: %f %f %f", fpr[0], fpr[2], fpr[4]);
}

/* At k*, the fraction of zero bits is 1/2. */
Test(rbf, foz_at_kstar)
{
    akv_filter_params p = params(131072.0 / 60000);
    akv_filter *f = akvt_build("rbf", &p, 12, 60000);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    uint64_t m = 0; /* the payload starts with u64 m */
    for (int i = 0; i < 8; i++)
        m |= (uint64_t)buf[AKV_FILTER_HEADER_BYTES + i] << (8 * i);
    double foz = 1.0 - (double)akvi_popcount_bytes(bits_of(buf, len, m), (size_t)(m + 7) / 8) / (double)m;
    cr_assert(fabs(foz - 0.5) < 0.005, "foz %f", foz);
    free(buf);
    akv_filter_destroy(f);
}

/* Integer k: the same bits and answers as `bloom` with that k. */
Test(rbf, integer_k_is_bit_identical_to_bloom)
{
    for (uint32_t k = 1; k <= 9; k += 2) {
        akv_filter_params p = params(9.5);
        p.num_hashes = k;
        akv_filter *b = akvt_build("bloom", &p, k, 30000);
        akv_filter *r = akvt_build("rbf", &p, k, 30000);
        /* The same through the milli-k request. */
        p.flags = AKV_RBF_MILLI_K;
        p.num_hashes = 1000 * k;
        akv_filter *r2 = akvt_build("rbf", &p, k, 30000);
        uint8_t *bb, *rb, *rb2;
        size_t bl, rl, rl2;
        cr_assert_eq(akv_filter_serialize(b, &bb, &bl), AKV_OK);
        cr_assert_eq(akv_filter_serialize(r, &rb, &rl), AKV_OK);
        cr_assert_eq(akv_filter_serialize(r2, &rb2, &rl2), AKV_OK);
        uint64_t m = 285000;
        cr_assert_eq(memcmp(bits_of(bb, bl, m), bits_of(rb, rl, m), (m + 7) / 8), 0, "k=%u bits differ", k);
        cr_assert_eq(memcmp(bits_of(bb, bl, m), bits_of(rb2, rl2, m), (m + 7) / 8), 0);
        for (uint64_t i = 0; i < 100000; i++) {
            akv_hash h = akvt_key(500 + k, i);
            cr_assert_eq(akv_filter_may_contain(b, h), akv_filter_may_contain(r, h));
        }
        free(bb);
        free(rb);
        free(rb2);
        akv_filter_destroy(b);
        akv_filter_destroy(r);
        akv_filter_destroy(r2);
    }
}

/* k < 1: most keys set no bit at all, yet none is ever missed. */
Test(rbf, fractional_k_below_one)
{
    for (uint32_t milli = 100; milli < 1000; milli += 300) {
        akv_filter *f = rbf_milli(8192, 6000, milli, milli);
        akvt_check_no_false_negatives(f, milli, 6000);
        akvt_check_fpr_theory(f, milli, 200000, 0.02);
        akvt_check_serialization(f, milli, 6000, 20000, 100);
        akv_filter_destroy(f);
    }
}

Test(rbf, rejects_bad_params)
{
    akv_filter_params p = params(10);
    p.flags = AKV_RBF_MILLI_K;
    p.num_hashes = 0;
    akv_filter *f = NULL;
    const akv_filter_kind *k = akv_filter_kind_by_name("rbf");
    cr_assert_eq(akv_filter_create(k, &p, NULL, 0, &f), AKV_EINVAL);
    p.num_hashes = 64001;
    cr_assert_eq(akv_filter_create(k, &p, NULL, 0, &f), AKV_EINVAL);
    p.flags = 0;
    p.num_hashes = 65;
    cr_assert_eq(akv_filter_create(k, &p, NULL, 0, &f), AKV_EINVAL);
    cr_assert_null(f);
}

Test(rbf, serialization_and_corruption)
{
    for (size_t n = 0; n <= 5000; n += 2500) {
        akv_filter_params p = params(10);
        akv_filter *f = akvt_build("rbf", &p, 4, n);
        akvt_check_serialization(f, 4, n, 20000, 300);
        akv_filter_destroy(f);
    }
}

/* Payload: u64 m, u32 k_int, u64 act_thr, u64 keys, u64 activated, bits.
 * Inconsistent fields under a valid checksum are rejected by load. */
Test(rbf, load_validates_fields)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("rbf", &p, 6, 3000);
    const size_t offs[] = {0, 5, 7, 8, 11, 35};
    const uint8_t vals[] = {0x13, 0x01, 0x80, 65, 0x01, 0xff};
    akvt_check_edits_rejected(f, offs, vals, sizeof offs / sizeof *offs, false);
    /* Zero k with zero threshold: no probes at all. */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    memset(buf + AKV_FILTER_HEADER_BYTES + 8, 0, 12);
    akvt_reseal(buf, len);
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_ECORRUPT);
    free(buf);
    akv_filter_destroy(f);
}
