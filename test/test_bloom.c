#include <criterion/criterion.h>

#include "support/filter_props.h"

static const size_t sizes[] = {1, 100, 10000, 200000};
static const double bpks[] = {6, 10, 16};

Test(bloom, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t b = 0; b < 3; b++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                akv_filter_params p;
                akv_filter_params_init(&p);
                p.bits_per_key = bpks[b];
                akv_filter *f = akvt_build("bloom", &p, seed, sizes[s]);
                akvt_check_no_false_negatives(f, seed, sizes[s]);
                if (sizes[s] >= 10000)
                    akvt_check_fpr_theory(f, seed, 200000, 0.10);
                akv_filter_destroy(f);
            }
}

Test(bloom, non_power_of_two_sizes)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 7.3; /* m = 7.3n, not a power of two */
    akv_filter *f = akvt_build("bloom", &p, 9, 33333);
    akvt_check_no_false_negatives(f, 9, 33333);
    akvt_check_fpr_theory(f, 9, 300000, 0.10);
    akv_filter_destroy(f);
}

Test(bloom, serialization_and_corruption)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    akv_filter *f = akvt_build("bloom", &p, 4, 5000);
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akv_filter_destroy(f);
}

Test(bloom, rejects_bad_params)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = -1;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("bloom"), &p, NULL, 0, &f), AKV_EINVAL);
    cr_assert_null(f);
}
