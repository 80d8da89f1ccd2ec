/*
 * test_policy.c — slot policy parsing: strict errors with messages, the
 * default and its fallbacks, level inheritance.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/internal.h"

static const akv_filter_kind *K(const char *n)
{
    return akv_filter_kind_by_name(n);
}

Test(policy, explicit_levels)
{
    akvi_policy p;
    cr_assert_eq(akvi_policy_parse("l0=bloom,l1+=blocked,l3=bloom", 10, &p, NULL, 0), AKV_OK);
    cr_assert_eq(p.level[0], K("bloom"));
    cr_assert_eq(p.level[1], K("blocked"));
    cr_assert_eq(p.level[2], K("blocked"));
    cr_assert_eq(p.level[3], K("bloom"));
    cr_assert_eq(p.level[4], K("blocked"));
    cr_assert_eq(p.level[AKV_MAX_LEVELS - 1], K("blocked"));
}

Test(policy, deeper_levels_inherit)
{
    akvi_policy p;
    cr_assert_eq(akvi_policy_parse("l0=bloom", 10, &p, NULL, 0), AKV_OK);
    for (int l = 0; l < AKV_MAX_LEVELS; l++)
        cr_assert_eq(p.level[l], K("bloom"));
}

/* The default run kind is afuse at every budget; without it the fallback
 * follows the budget: ablocked below 12 bits/key, aqf from 12 up, each
 * falling back to the other, then blocked, then bloom. */
Test(policy, default_run_kind_follows_the_budget)
{
    akvi_policy p;
    char note[256];
    const akv_filter_kind *lean = K("afuse")      ? K("afuse")
                                  : K("ablocked") ? K("ablocked")
                                  : K("aqf")      ? K("aqf")
                                  : K("blocked")  ? K("blocked")
                                                  : K("bloom");
    const akv_filter_kind *rich = K("afuse")      ? K("afuse")
                                  : K("aqf")      ? K("aqf")
                                  : K("ablocked") ? K("ablocked")
                                  : K("blocked")  ? K("blocked")
                                                  : K("bloom");
    const double lean_bits[] = {1, 6, 10, 11.99}, rich_bits[] = {12, 13, 16, 40};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(akvi_policy_parse(NULL, lean_bits[i], &p, note, sizeof note), AKV_OK);
        cr_assert_eq(p.level[0], lean, "%g bits/key: %s", lean_bits[i], p.level[0]->name);
        cr_assert_eq(p.level[5], lean);
        cr_assert(strstr(note, lean->name) != NULL, "note: %s", note);
        cr_assert_eq(akvi_policy_parse(NULL, rich_bits[i], &p, NULL, 0), AKV_OK);
        cr_assert_eq(p.level[0], rich, "%g bits/key: %s", rich_bits[i], p.level[0]->name);
        cr_assert_eq(p.level[AKV_MAX_LEVELS - 1], rich);
    }
    if (K("sscf"))
        cr_assert_eq(p.mem, K("sscf"));
    cr_assert_eq(akvi_policy_parse("", 10, &p, NULL, 0), AKV_OK);
    cr_assert_eq(p.level[0], lean);
    /* A level the text names keeps its kind whatever the budget. */
    cr_assert_eq(akvi_policy_parse("l0=bloom", 16, &p, NULL, 0), AKV_OK);
    cr_assert_eq(p.level[0], K("bloom"));
}

Test(policy, mem_none_and_static_mem_kind)
{
    akvi_policy p;
    cr_assert_eq(akvi_policy_parse("mem=none,l0=bloom", 10, &p, NULL, 0), AKV_OK);
    cr_assert_null(p.mem);
    cr_assert_eq(akvi_policy_parse("mem=bloom", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert(strstr(akv_errmsg(), "bloom") != NULL);
}

Test(policy, strict_errors)
{
    akvi_policy p;
    cr_assert_eq(akvi_policy_parse("l0=nosuchkind", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_str_eq(akv_errmsg(), "unknown filter kind 'nosuchkind'");
    cr_assert_eq(akvi_policy_parse("l9=bloom", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert(strstr(akv_errmsg(), "unknown level 'l9'") != NULL, "%s", akv_errmsg());
    cr_assert_eq(akvi_policy_parse("disk=bloom", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert(strstr(akv_errmsg(), "unknown level 'disk'") != NULL);
    cr_assert_eq(akvi_policy_parse("l0=bloom,,l1=bloom", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akvi_policy_parse("l0=bloom,l0=blocked", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akvi_policy_parse("l0", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akvi_policy_parse("l0=", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akvi_policy_parse("l1+x=bloom", 10, &p, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akvi_policy_parse("l0=bloom,", 10, &p, NULL, 0), AKV_EINVAL);
}

Test(policy, open_refuses_bad_policy)
{
    akv_options o;
    akv_options_init(&o);
    o.slot_policy = "mem=sscf,l0=x";
    akv_db *db = (akv_db *)1;
    cr_assert_eq(akv_open("/nonexistent-dir-for-policy-test/db", &o, &db), AKV_EINVAL);
    cr_assert_null(db);
    cr_assert_str_eq(akv_errmsg(), "unknown filter kind 'x'");
}
