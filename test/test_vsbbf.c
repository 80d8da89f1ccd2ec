#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "filters/vsbbf.h"
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

static void check_plan(uint64_t m, uint64_t n, int J, const uint64_t *size, const uint64_t *off)
{
    akvi_vsbbf_block b[AKV_VSBBF_MAX_BLOCKS];
    int got = akvi_vsbbf_plan(m, n, b);
    cr_assert_eq(got, J, "m=%llu: %d blocks", (unsigned long long)m, got);
    cr_assert_eq(got, __builtin_popcountll(m));
    double ksum = 0;
    for (int j = 0; j < J; j++) {
        cr_assert_eq(b[j].size, size[j], "m=%llu block %d size", (unsigned long long)m, j);
        cr_assert_eq(b[j].offset, off[j], "m=%llu block %d offset", (unsigned long long)m, j);
        cr_assert_eq(b[j].offset, m & ~(2 * b[j].size - 1));
        ksum += b[j].k_int + (double)b[j].act_thr * 0x1p-64;
    }
    double kstar = (double)m / (double)n * M_LN2;
    cr_assert(fabs(ksum - kstar) < 1e-9 * kstar, "sum k_j %.12f vs k* %.12f", ksum, kstar);
}

/* Plan examples (docs/filters.md, "How they are built"): blocks are the set
 * bits of m, largest first. */
Test(vsbbf, block_plans)
{
    check_plan(11, 5, 3, (uint64_t[]){8, 2, 1}, (uint64_t[]){0, 8, 10});
    check_plan(25, 5, 3, (uint64_t[]){16, 8, 1}, (uint64_t[]){0, 16, 24});
    check_plan(1000000, 100000, 7, (uint64_t[]){1 << 19, 1 << 18, 1 << 17, 1 << 16, 1 << 14, 1 << 9, 1 << 6},
               (uint64_t[]){0, 524288, 786432, 917504, 983040, 999424, 999936});
    check_plan(10000000, 1000000, 8,
               (uint64_t[]){1 << 23, 1 << 20, 1 << 19, 1 << 15, 1 << 12, 1 << 10, 1 << 9, 1 << 7},
               (uint64_t[]){0, 8388608, 9437184, 9961472, 9994240, 9998336, 9999360, 9999872});
    /* k_j = (m_j/n)·ln 2 at (10^6, 10^5) = 3.634, 1.817, 0.908, ... */
    akvi_vsbbf_block b[AKV_VSBBF_MAX_BLOCKS];
    akvi_vsbbf_plan(1000000, 100000, b);
    cr_assert_eq(b[0].k_int, 3);
    cr_assert(fabs(b[0].act_thr * 0x1p-64 - 0.634) < 0.001);
    cr_assert_eq(b[2].k_int, 0);
    cr_assert_eq(akvi_vsbbf_plan(0, 1, b), 0);
}

/* m = 2^c: a single block, i.e. one (rational) Bloom filter. */
Test(vsbbf, power_of_two_is_one_block)
{
    for (int c = 0; c < 40; c++) {
        akvi_vsbbf_block b[AKV_VSBBF_MAX_BLOCKS];
        cr_assert_eq(akvi_vsbbf_plan(1ULL << c, 1000, b), 1);
        cr_assert_eq(b[0].offset, 0);
        cr_assert_eq(b[0].size, 1ULL << c);
    }
    akv_filter_params p = params(8); /* 8192 keys × 8 = 2^16 bits */
    akv_filter *f = akvt_build("vsbbf", &p, 2, 8192);
    char d[256];
    f->kind->describe(f, d, sizeof d);
    cr_assert(strstr(d, "\"blocks\":1,") != NULL, "%s", d);
    akvt_check_no_false_negatives(f, 2, 8192);
    akvt_check_fpr_theory(f, 2, 300000, 0.10);
    akv_filter_destroy(f);
}

Test(vsbbf, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                akv_filter_params p = params(bpks[b]);
                akv_filter *f = akvt_build("vsbbf", &p, seed, sizes[s]);
                akvt_check_no_false_negatives(f, seed, sizes[s]);
                if (sizes[s] >= 10000)
                    akvt_check_fpr_theory(f, seed, 200000, 0.10);
                akv_filter_destroy(f);
            }
}

/*
 * docs/filters.md, "Findings", at m = 10^6, n = 10^5: the activation-corrected product
 * predicts 0.0100 (the paper's eq. 11 says 0.0082); decorrelated blocks
 * reach it, the literal Algorithm 2 indexing does much worse (~0.028).
 */
Test(vsbbf, spec_numbers_and_literal_variant)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("vsbbf", &p, 21, 100000);
    double th = f->kind->fpr_theory(f);
    cr_assert(fabs(th - 0.01002) < 0.0003, "theory %f", th);
    akvt_check_fpr_theory(f, 21, 1000000, 0.05);
    double fpr = akvt_measure_fpr(f, 21, 1000000);
    p.flags = AKV_VSBBF_LITERAL;
    akv_filter *g = akvt_build("vsbbf", &p, 21, 100000);
    akvt_check_no_false_negatives(g, 21, 100000);
    double lit = akvt_measure_fpr(g, 21, 1000000);
    cr_assert(lit > 2 * fpr, "literal %f vs decorrelated %f", lit, fpr);
    cr_log_info(
        "vsbbf m=1e6 n=1e5: decorrelated fpr %.5f (theory %.5f, paper eq.11 %.5f), literal Alg.2 %.5f", fpr,
        th, pow(0.5, 10 * M_LN2), lit);
    akvt_check_serialization(g, 21, 100000, 10000, 50);
    akv_filter_destroy(f);
    akv_filter_destroy(g);
}

/* Any m, including odd sizes with tiny blocks (1, 2, 4 bits). */
Test(vsbbf, odd_sizes)
{
    const double bpk[] = {7.3, 9.99, 12.7};
    for (int i = 0; i < 3; i++) {
        akv_filter_params p = params(bpk[i]);
        akv_filter *f = akvt_build("vsbbf", &p, 30 + i, 33333);
        akvt_check_no_false_negatives(f, 30 + i, 33333);
        akvt_check_fpr_theory(f, 30 + i, 300000, 0.10);
        akv_filter_destroy(f);
    }
    akv_filter_params p = params(0.5); /* m = 64: floor, k < 1 */
    akv_filter *f = akvt_build("vsbbf", &p, 40, 100);
    akvt_check_no_false_negatives(f, 40, 100);
    akv_filter_destroy(f);
}

Test(vsbbf, serialization_and_corruption)
{
    for (size_t n = 0; n <= 5000; n += 2500) {
        akv_filter_params p = params(10);
        akv_filter *f = akvt_build("vsbbf", &p, 4, n);
        akvt_check_serialization(f, 4, n, 20000, 300);
        akv_filter_destroy(f);
    }
}

/* Payload: u64 m, u64 n_plan, u32 flags, u64 keys, u8 J, J × (u32 k_int,
 * u64 act_thr, u64 activated), bits. A plan that does not match (m, n_plan)
 * or counts that cannot be right are rejected under a valid checksum. */
Test(vsbbf, load_validates_fields)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("vsbbf", &p, 6, 3000);
    const size_t blk = 29;
    const size_t offs[] = {0, 6, 8, 16, 28, blk, blk + 4, blk + 19, blk + 12 + 8};
    const uint8_t vals[] = {0x31, 0x40, 0x77, 0x02, 0x09, 0x07, 0x01, 0xff, 0x05};
    akvt_check_edits_rejected(f, offs, vals, sizeof offs / sizeof *offs, true);
    akv_filter_destroy(f);
}
