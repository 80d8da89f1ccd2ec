/* The slot interface itself: registry, envelope, and the properties every
 * registered kind must keep, checked over all of them in one place. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/codec.h"
#include "support/filter_props.h"

static const char *const builtin[] = {"bloom", "blocked", "rbf",   "vsbbf", "shbf", "qf",
                                      "aqf",   "habf",    "fhabf", "sscf",  "cbf"};

Test(filter, builtin_kinds_registered_with_unique_ids)
{
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++) {
        const akv_filter_kind *k = akv_filter_kind_by_name(builtin[i]);
        cr_assert_not_null(k, "kind %s missing", builtin[i]);
        cr_assert_eq(akv_filter_kind_by_id(k->id), k);
    }
    const akv_filter_kind *a, *b;
    for (size_t i = 0; (a = akv_filter_kind_at(i)); i++)
        for (size_t j = i + 1; (b = akv_filter_kind_at(j)); j++)
            cr_assert(a->id != b->id && strcmp(a->name, b->name) != 0);
}

Test(filter, register_rejects_duplicates_and_incomplete_kinds)
{
    akv_filter_kind k = *akv_filter_kind_by_name("bloom");
    cr_assert_eq(akv_filter_register(&k), AKV_EEXIST);
    k.name = "user-bloom";
    k.id = 1000;
    k.may_contain = NULL;
    cr_assert_eq(akv_filter_register(&k), AKV_EINVAL);
    static akv_filter_kind user;
    user = *akv_filter_kind_by_name("bloom");
    user.name = "user-bloom";
    user.id = 1000;
    cr_assert_eq(akv_filter_register(&user), AKV_OK);
    cr_assert_eq(akv_filter_kind_by_name("user-bloom"), &user);
    cr_assert_eq(akv_filter_kind_by_id(1000), &user);
}

Test(filter, unknown_kind_and_newer_format_are_not_supported)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    akv_filter *f = akvt_build("bloom", &p, 3, 100);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    const uint16_t patches[][2] = {{6, 999}, {4, AKV_FILTER_FORMAT_VERSION + 1}, {8, 99}};
    for (size_t i = 0; i < 3; i++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, buf, len);
        copy[patches[i][0]] = (uint8_t)patches[i][1];
        copy[patches[i][0] + 1] = (uint8_t)(patches[i][1] >> 8);
        akvi_wbuf w = {copy + len - 8, 0};
        akvi_w_u64(&w, XXH64(copy, len - 8, 0)); /* a valid checksum: only the field is wrong */
        akv_filter *g = NULL;
        cr_assert_eq(akv_filter_deserialize(copy, len, &g), AKV_ENOTSUP, "patch %zu", i);
        cr_assert_null(g);
        free(copy);
    }
    free(buf);
    akv_filter_destroy(f);
}

Test(filter, strerror_names_every_code)
{
    for (int rc = AKV_EEXIST; rc <= AKV_NOTFOUND; rc++)
        cr_assert_str_neq(akv_strerror(rc), "unknown error");
    cr_assert_str_eq(akv_strerror(-99), "unknown error");
}

/* Every registered kind: no false negatives, round trip, corruption
 * rejected, damaged payloads never crash load. Empty and tiny sets too. */
Test(filter, every_kind_keeps_the_slot_contract)
{
    static const size_t sizes[] = {0, 1, 3000};
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++)
        for (size_t s = 0; s < 3; s++) {
            akv_filter_params p;
            akv_filter_params_init(&p);
            akv_filter *f = akvt_build(builtin[i], &p, 11 + s, sizes[s]);
            akvt_check_no_false_negatives(f, 11 + s, sizes[s]);
            akvt_check_serialization(f, 11 + s, sizes[s], 2000, 100);
            akvt_check_payload_damage(f, 5 + s, 300);
            akv_filter_destroy(f);
        }
}

/* The batch call answers exactly like single calls, members and absent keys
 * mixed, with batch sizes around the prefetch distance. */
Test(filter, batch_answers_match_single_queries)
{
    const size_t n = 2000, q = 1000;
    for (size_t i = 0; i < sizeof builtin / sizeof *builtin; i++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        akv_filter *f = akvt_build(builtin[i], &p, 21, n);
        akv_hash hs[1000];
        bool out[1000];
        for (size_t j = 0; j < q; j++)
            hs[j] = akvt_key(j % 2 ? 21 : 99, j * 3);
        for (size_t len = 0; len <= q; len += len < 40 ? 1 : 480) {
            size_t maybe = akv_filter_may_contain_many(f, hs, len, out), want = 0;
            for (size_t j = 0; j < len; j++) {
                cr_assert_eq(out[j], akv_filter_may_contain(f, hs[j]), "%s: batch answer %zu differs",
                             builtin[i], j);
                want += out[j];
            }
            cr_assert_eq(maybe, want);
        }
        akv_filter_destroy(f);
    }
}
