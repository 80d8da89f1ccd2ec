#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filters/blocked.h"
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

/* Recompute the envelope checksum after editing a payload, so that the
 * kind's own validation (not the checksum) has to catch the damage. */
Test(blocked, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                akv_filter_params p = params(bpks[b]);
                akv_filter *f = akvt_build("blocked", &p, seed, sizes[s]);
                akvt_check_no_false_negatives(f, seed, sizes[s]);
                if (sizes[s] >= 10000)
                    akvt_check_fpr_theory(f, seed, 200000, 0.10);
                if (sizes[s] == 0)
                    cr_assert_eq(akvt_measure_fpr(f, seed, 10000), 0.0);
                akv_filter_destroy(f);
            }
}

/* The blocked formula is a Poisson mixture, visibly above plain Bloom's
 * (1 - e^(-k/b))^k: at 10 bits/key, ~0.0096 against 0.0082. */
Test(blocked, theory_is_the_blocked_mixture)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("blocked", &p, 5, 100000);
    double th = f->kind->fpr_theory(f);
    double plain = pow(1 - exp(-7.0 / 10), 7);
    cr_assert(th > plain * 1.10 && th < plain * 1.30, "theory %g vs plain %g", th, plain);
    akv_filter_destroy(f);
}

/* One block: the load is exactly n, the formula has no mixture. */
Test(blocked, single_block_and_explicit_k)
{
    akv_filter_params p = params(10);
    p.num_hashes = 3;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        akv_filter *f = akvt_build("blocked", &p, seed, 40);
        akvt_check_no_false_negatives(f, seed, 40);
        akv_filter_destroy(f);
    }
    p.num_hashes = 65;
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("blocked"), &p, NULL, 0, &g), AKV_EINVAL);
}

/* More than 7 probes use a second remixed word of fields. */
Test(blocked, many_probes)
{
    akv_filter_params p = params(20);
    p.num_hashes = 16;
    akv_filter *f = akvt_build("blocked", &p, 8, 50000);
    akvt_check_no_false_negatives(f, 8, 50000);
    akvt_check_fpr_theory(f, 8, 300000, 0.10);
    akv_filter_destroy(f);
}

/* The AVX2 and scalar query paths answer identically. */
Test(blocked, scalar_and_simd_paths_agree)
{
    for (uint32_t k = 1; k <= 20; k += 3) {
        akv_filter_params p = params(8);
        p.num_hashes = k;
        akv_filter *a = akvt_build("blocked", &p, k, 20000);
        p.flags = AKV_BLOCKED_SCALAR;
        akv_filter *b = akvt_build("blocked", &p, k, 20000);
        for (uint64_t i = 0; i < 100000; i++) {
            akv_hash h = akvt_key(k ^ 0x99, i);
            cr_assert_eq(akv_filter_may_contain(a, h), akv_filter_may_contain(b, h), "k=%u key %llu", k,
                         (unsigned long long)i);
        }
        akv_filter_destroy(a);
        akv_filter_destroy(b);
    }
}

/* One cache line per query: at most the 8 words of the block. */
Test(blocked, words_touched_within_one_line)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("blocked", &p, 3, 10000);
    for (uint64_t i = 0; i < 10000; i++) {
        unsigned w = f->kind->words_touched(f, akvt_key(77, i));
        cr_assert(w >= 1 && w <= 8);
    }
    akv_filter_destroy(f);
}

Test(blocked, serialization_and_corruption)
{
    for (size_t n = 0; n <= 5000; n += 2500) {
        akv_filter_params p = params(10);
        akv_filter *f = akvt_build("blocked", &p, 4, n);
        akvt_check_serialization(f, 4, n, 20000, 300);
        akv_filter_destroy(f);
    }
}

/* Payload fields edited under a valid checksum are rejected by load. */
Test(blocked, load_validates_fields)
{
    akv_filter_params p = params(10);
    akv_filter *f = akvt_build("blocked", &p, 6, 3000);
    /* Payload: u64 blocks (59 here: one byte), u32 k, u64 keys. */
    const size_t offs[] = {0, 0, 7, 8, 8, 11};
    const uint8_t vals[] = {0, 0xff, 0x80, 0, 65, 1};
    akvt_check_edits_rejected(f, offs, vals, sizeof offs / sizeof *offs, false);
    akv_filter_destroy(f);
}

/* Keys and queries that share their top 12 bits of h.hi (a run covering
 * 1/4096 of the hash range, as a compaction into the next level makes):
 * the block comes from the whole of h.hi, so the FPR stays the formula's.
 * Picked from h.hi's top bits directly, they would fill a few blocks. */
Test(blocked, narrow_hash_range_keeps_its_fpr)
{
    const akv_filter_kind *k = akv_filter_kind_by_name("blocked");
    uint64_t st = 77;
    size_t n = 50000, q = 200000;
    uint64_t top = akvt_rand(&st) & (0xfffULL << 52);
    akv_hash *keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (akv_hash){top | (akvt_rand(&st) >> 12), akvt_rand(&st)};
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = n;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_build(k, &p, keys, n, NULL, 0, &f), AKV_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, keys[i]));
    size_t fp = 0;
    for (size_t i = 0; i < q; i++)
        fp += akv_filter_may_contain(f, (akv_hash){top | (akvt_rand(&st) >> 12), akvt_rand(&st)});
    double fpr = (double)fp / (double)q, theory = f->kind->fpr_theory(f);
    cr_assert(fpr < theory * 1.15 + 0.0005, "FPR %.4f against %.4f", fpr, theory);
    /* version 1 payloads still load (one block: both versions agree) */
    p.expected_keys = 50;
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_build(k, &p, keys, 50, NULL, 0, &g), AKV_OK);
    size_t len = 0;
    cr_assert_eq(k->save(g, NULL, &len), AKV_OK);
    uint8_t *buf = malloc(len);
    cr_assert_eq(k->save(g, buf, &len), AKV_OK);
    akv_filter *h = NULL;
    cr_assert_eq(k->load(buf, len, 1, &h), AKV_OK);
    for (size_t i = 0; i < 50; i++)
        cr_assert(akv_filter_may_contain(h, keys[i]));
    cr_assert_eq(k->load(buf, len, 3, &(akv_filter *){NULL}), AKV_ENOTSUP);
    akv_filter_destroy(h);
    akv_filter_destroy(g);
    free(buf);
    akv_filter_destroy(f);
    free(keys);
}
