/*
 * test_cbf.c — counting Bloom filter: no false negatives, FPR against its
 * formula, insert/remove back to all-zero counters, refused removal of
 * absent keys, sticky saturation, serialization.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "filters/sscf.h"
#include "support/filter_props.h"

static const size_t sizes[] = {1, 100, 10000, 100000};
static const double bpks[] = {8, 16, 24};

Test(cbf, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++) {
            akv_filter_params p;
            akv_filter_params_init(&p);
            p.bits_per_key = bpks[b];
            akv_filter *f = akvt_build("cbf", &p, s + 1, sizes[s]);
            akvt_check_no_false_negatives(f, s + 1, sizes[s]);
            if (sizes[s] >= 10000)
                akvt_check_fpr_theory(f, s + 1, 200000, 0.10);
            akv_filter_destroy(f);
        }
}

Test(cbf, remove_everything_returns_to_zero)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 16;
    akv_filter *f = akvt_build("cbf", &p, 3, 50000);
    uint64_t nz = 0;
    cr_assert_eq(akvi_cbf_nonzero(f, &nz), AKV_OK);
    cr_assert_gt(nz, 0);
    /* remove half, the other half must stay visible */
    for (size_t i = 0; i < 50000; i += 2)
        cr_assert_eq(akv_filter_remove(f, akvt_key(3, i)), AKV_OK);
    for (size_t i = 1; i < 50000; i += 2)
        cr_assert(akv_filter_may_contain(f, akvt_key(3, i)));
    for (size_t i = 1; i < 50000; i += 2)
        cr_assert_eq(akv_filter_remove(f, akvt_key(3, i)), AKV_OK);
    cr_assert_eq(akvi_cbf_nonzero(f, &nz), AKV_OK);
    cr_assert_eq(nz, 0, "%llu counters left after removing every key", (unsigned long long)nz);
    cr_assert_eq(f->n_keys, 0);
    akv_filter_destroy(f);
}

Test(cbf, random_churn_no_false_negatives)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 12;
    p.expected_keys = 4000;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("cbf"), &p, NULL, 0, &f), AKV_OK);
    akv_hash *live = malloc(8000 * sizeof *live);
    size_t n = 0, next = 0;
    uint64_t st = 77;
    for (size_t op = 0; op < 100000; op++) {
        if (n == 0 || (akvt_rand(&st) % 2 && n < 8000)) {
            live[n] = akvt_key(5, next++);
            cr_assert_eq(akv_filter_insert(f, live[n++]), AKV_OK);
        } else {
            size_t i = akvt_rand(&st) % n;
            cr_assert_eq(akv_filter_remove(f, live[i]), AKV_OK);
            live[i] = live[--n];
        }
    }
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, live[i]));
    free(live);
    akv_filter_destroy(f);
}

Test(cbf, absent_remove_refused_and_saturation_sticky)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = 1000;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("cbf"), &p, NULL, 0, &f), AKV_OK);
    akv_hash h = akvt_key(6, 0);
    cr_assert_eq(akv_filter_remove(f, h), AKV_NOTFOUND);
    for (int i = 0; i < 30; i++)
        akv_filter_insert(f, h);
    for (int i = 0; i < 30; i++)
        cr_assert_eq(akv_filter_remove(f, h), AKV_OK);
    cr_assert(akv_filter_may_contain(f, h), "saturated counters never go back down");
    akv_filter_destroy(f);
}

Test(cbf, serialization_and_corruption)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 10; /* odd number of counters: a padding nibble */
    akv_filter *f = akvt_build("cbf", &p, 4, 5001);
    akvt_check_serialization(f, 4, 5001, 20000, 300);
    akv_filter_destroy(f);
}

Test(cbf, load_survives_payload_damage)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 10;
    akv_filter *f = akvt_build("cbf", &p, 8, 3001);
    akvt_check_payload_damage(f, 8, 2000);
    akv_filter_destroy(f);
}
