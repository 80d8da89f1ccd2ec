/*
 * test_qf.c — the plain quotient filter `qf` (the AQF paper's baseline) and
 * the shared core's layout: no false negatives, FPR against the exact
 * formula, random insert/delete against a model, bulk load, merge,
 * serialization, and the per-slot space of both kinds.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "filters/aqf.h"
#include "filters/qf_core.h"
#include "revmap/revmap.h"
#include "support/filter_props.h"
#include "util/order.h"

static const size_t sizes[] = {1, 100, 10000, 200000};

Test(qf, no_false_negatives_fpr_matches_theory)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (uint32_t r = 3; r <= 9; r += 3) {
            akv_filter_params p;
            akv_filter_params_init(&p);
            p.remainder_bits = r;
            akv_filter *f = akvt_build("qf", &p, r + s, sizes[s]);
            akvt_check_no_false_negatives(f, r + s, sizes[s]);
            if (sizes[s] >= 10000)
                akvt_check_fpr_theory(f, r + s, 300000, 0.05);
            cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
            akv_filter_destroy(f);
        }
}

/* Remainder bits derived from bits/key at the target fill. */
Test(qf, derived_remainder_bits)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 13;
    akv_filter *f = akvt_build("qf", &p, 1, 1000), *g = akvt_build("aqf", &p, 1, 1000);
    akvi_aqf_info a, b;
    akvi_aqf_info_get(f, &a);
    akvi_aqf_info_get(g, &b);
    cr_assert_eq(a.r, 8); /* floor(13 * 0.9) - 3 metadata bits */
    cr_assert_eq(b.r, 7); /* - 4 with the extension bit */
    akv_filter_destroy(f);
    akv_filter_destroy(g);
}

/* Space per slot: qf r + 2.125 bits (occupied, runend, 1/64 offset byte),
 * aqf r + 3.125 (plus extension): at r = 9 the AQF is 97/89 = 9.0% larger,
 * the paper's Table 2 ratio (docs/filters.md, "Layout and hash bits"). */
Test(qf, layout_bits_per_slot)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.remainder_bits = 9;
    p.expected_keys = 1u << 20;
    akv_filter *f = NULL, *g = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("qf"), &p, NULL, 0, &f), AKV_OK);
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("aqf"), &p, NULL, 0, &g), AKV_OK);
    akvi_aqf_info a;
    akvi_aqf_info_get(f, &a);
    /* r + 2.125 bits a slot (qf), r + 3.125 (aqf): the paper's layout,
     * 89 and 97 bytes a block of 64 slots at r = 9 */
    double slots = (double)akv_filter_memory(f) / 89 * 64; /* physical slots incl. overflow */
    cr_assert_float_eq((double)akv_filter_memory(f) * 8 / slots, 11.125, 1e-9);
    cr_assert_float_eq((double)akv_filter_memory(g) / (double)akv_filter_memory(f), 97.0 / 89.0, 1e-9);
    cr_assert_eq(akv_filter_memory(f), akvi_qf_bytes_for(a.slots, 9, false));
    cr_assert_lt(slots, (double)a.slots * 1.01); /* overflow tail 64 + 4*sqrt(slots) */
    akv_filter_destroy(f);
    akv_filter_destroy(g);
}

Test(qf, random_insert_delete_against_model)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.expected_keys = 5000;
        p.remainder_bits = 2 + (uint32_t)seed; /* tiny remainders: long runs, many repeats */
        akv_filter *f = NULL;
        cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("qf"), &p, NULL, 0, &f), AKV_OK);
        cr_assert_eq(akv_filter_finish(f), AKV_OK);
        akv_hash *v = malloc(6000 * sizeof *v);
        size_t n = 0;
        uint64_t st = seed;
        for (int i = 0; i < 30000; i++) {
            if ((akvt_rand(&st) % 10 < 6) && n < 5200) {
                akv_hash h = {akvt_rand(&st), akvt_rand(&st)};
                int rc = akv_filter_insert(f, h);
                cr_assert(rc == AKV_OK || rc == AKV_EFULL);
                if (rc == AKV_OK)
                    v[n++] = h;
            } else if (n) {
                size_t j = akvt_rand(&st) % n;
                cr_assert_eq(akv_filter_remove(f, v[j]), AKV_OK);
                v[j] = v[--n];
            }
            if (i % 1000 == 0) {
                cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
                for (size_t j = 0; j < n; j++)
                    cr_assert(akv_filter_may_contain(f, v[j]));
            }
        }
        for (size_t j = 0; j < n; j++)
            cr_assert(akv_filter_may_contain(f, v[j]));
        cr_assert_eq(f->n_keys, n);
        free(v);
        akv_filter_destroy(f);
    }
}

/* Fill to 95%: inserts succeed up to the limit, then EFULL, never a false negative. */
Test(qf, fill_to_capacity)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = 60000;
    p.remainder_bits = 8;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("qf"), &p, NULL, 0, &f), AKV_OK);
    cr_assert_eq(akv_filter_finish(f), AKV_OK);
    akv_filter_stats st;
    akv_filter_get_stats(f, &st);
    size_t i = 0;
    while (akv_filter_insert(f, akvt_key(6, i)) == AKV_OK)
        i++;
    cr_assert_eq(i, st.capacity);
    akvt_check_no_false_negatives(f, 6, i);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    akv_filter_destroy(f);
}

Test(qf, merge_answers_like_union_build)
{
    size_t n = 40000;
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.remainder_bits = 9;
    akv_filter *a = akvt_build("qf", &p, 1, n), *b = akvt_build("qf", &p, 2, n), *m = NULL;
    akvi_aqf_info ia;
    akvi_aqf_info_get(a, &ia);
    cr_assert_eq(akvi_aqf_merge(a, b, ia.q + 1, &m), AKV_OK);
    cr_assert_eq(akvi_aqf_validate(m), AKV_OK);
    /* the union built directly with the merged geometry is the same filter */
    akv_hash *u = malloc(2 * n * sizeof *u);
    for (size_t i = 0; i < n; i++)
        u[i] = akvt_key(1, i), u[n + i] = akvt_key(2, i);
    akvi_qf_sort(u, 2 * n);
    akv_filter_params pu = p;
    pu.remainder_bits = 8;
    pu.load_factor = 1.0; /* twice the inputs' slots, exactly */
    pu.expected_keys = 2 * ia.slots;
    akv_filter *ub = NULL;
    cr_assert_eq(akvi_aqf_bulk_load(akv_filter_kind_by_name("qf"), &pu, u, 2 * n, &ub), AKV_OK);
    uint8_t *x, *y;
    size_t lx, ly;
    cr_assert_eq(akv_filter_serialize(m, &x, &lx), AKV_OK);
    cr_assert_eq(akv_filter_serialize(ub, &y, &ly), AKV_OK);
    cr_assert_eq(lx, ly);
    cr_assert(memcmp(x, y, lx) == 0, "merge differs from the union build");
    free(x), free(y), free(u);
    akv_filter_destroy(ub);
    akv_filter_destroy(m), akv_filter_destroy(a), akv_filter_destroy(b);
}

Test(qf, serialization_and_corruption)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    akv_filter *f = akvt_build("qf", &p, 4, 5000);
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akv_filter_destroy(f);
}

Test(qf, shard_prefix_bits)
{
    /* keys of one shard share their top 3 bits; the quotient starts below them */
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.prefix_bits = 3;
    p.remainder_bits = 8;
    p.expected_keys = 10000;
    akv_hash *k = malloc(10000 * sizeof *k);
    uint64_t st = 3;
    for (size_t i = 0; i < 10000; i++)
        k[i] = (akv_hash){(5ULL << 61) | (akvt_rand(&st) >> 3), akvt_rand(&st)};
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_build(akv_filter_kind_by_name("aqf"), &p, k, 10000, NULL, 0, &f), AKV_OK);
    for (size_t i = 0; i < 10000; i++)
        cr_assert(akv_filter_may_contain(f, k[i]));
    akvi_aqf_info in;
    akvi_aqf_info_get(f, &in);
    cr_assert_eq(in.prefix_bits, 3);
    cr_assert_lt((double)in.used / (double)in.slots, 0.95);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    /* adaptation and resize read the shard's keys through the prefix too */
    akvi_memrevmap *rm;
    cr_assert_eq(akvi_memrevmap_create(k, 10000, &rm), AKV_OK);
    size_t fixed = 0;
    for (uint64_t i = 0; i < 100000; i++) {
        akv_hash y = {(5ULL << 61) | (akvt_rand(&st) >> 3), akvt_rand(&st)};
        if (akv_filter_may_contain(f, y)) {
            cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
            cr_assert_not(akv_filter_may_contain(f, y));
            fixed++;
        }
    }
    cr_assert_gt(fixed, 10);
    akv_filter *g = NULL;
    cr_assert_eq(akvi_aqf_resize(f, in.q + 1, 0, akvi_memrevmap_revmap(rm), &g), AKV_OK);
    for (size_t i = 0; i < 10000; i++)
        cr_assert(akv_filter_may_contain(g, k[i]));
    cr_assert_eq(akvi_aqf_validate(g), AKV_OK);
    akv_filter_destroy(g);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
    free(k);
}

/* More keys than expected_keys: finish() sizes the table for what it got. */
Test(qf, build_beyond_expected_keys)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = 100;
    const char *kinds[2] = {"qf", "aqf"};
    for (int i = 0; i < 2; i++) {
        akv_filter *f = akvt_build(kinds[i], &p, 7, 20000);
        akvt_check_no_false_negatives(f, 7, 20000);
        cr_assert_eq(f->n_keys, 20000);
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        akv_filter_destroy(f);
    }
}

/* Without remainder_bits the table is exactly the budget: bits_per_key · n
 * bits within 3 %, for any n (the slot count is no power of two). */
Test(qf, budget_bits_per_key)
{
    static const double bpk[] = {8, 10, 12, 16};
    static const size_t ns[] = {20000, 150000};
    const char *kinds[2] = {"qf", "aqf"};
    for (int k = 0; k < 2; k++)
        for (size_t b = 0; b < 4; b++)
            for (size_t j = 0; j < 2; j++) {
                akv_filter_params p;
                akv_filter_params_init(&p);
                p.bits_per_key = bpk[b];
                p.expected_keys = ns[j];
                akv_filter *f = akvt_build(kinds[k], &p, 11 + j, ns[j]);
                double got = (double)akv_filter_memory(f) * 8 / (double)ns[j];
                cr_assert(got <= bpk[b] && got >= 0.97 * bpk[b], "%s %.0f bits/key: %.3f", kinds[k], bpk[b],
                          got);
                akvi_aqf_info in;
                akvi_aqf_info_get(f, &in);
                cr_assert_leq((double)ns[j], 0.935 * (double)in.slots);
                akvt_check_no_false_negatives(f, 11 + j, ns[j]);
                akvt_check_fpr_theory(f, 11 + j, 200000, 0.05);
                akv_filter_destroy(f);
            }
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Payloads declaring sizes near 2^64 are refused, never allocated. */
Test(qf, huge_declared_sizes_are_corrupt)
{
    const char *kinds[2] = {"qf", "aqf"};
    static const uint64_t bad_slots[] = {~0ULL, ~0ULL - 63, 1ULL << 63, (1ULL << 40) + 1, 63, 0};
    static const uint64_t bad_blocks[] = {~0ULL, 1ULL << 58, (~0ULL) / 97 + 1, 0};
    for (int k = 0; k < 2; k++) {
        const akv_filter_kind *kind = akv_filter_kind_by_name(kinds[k]);
        uint8_t buf[4096] = {0};
        for (size_t i = 0; i < sizeof bad_slots / sizeof *bad_slots; i++)
            for (size_t j = 0; j < sizeof bad_blocks / sizeof *bad_blocks; j++) {
                put64(buf, bad_slots[i]);
                put32(buf + 8, 9);
                put32(buf + 12, 0);
                put64(buf + 16, bad_blocks[j]);
                akv_filter *f = NULL;
                cr_assert_eq(kind->load(buf, sizeof buf, 2, &f), AKV_ECORRUPT);
                cr_assert_eq(kind->load(buf, 72, 2, &f), AKV_ECORRUPT);
            }
        /* a sane slot count with a block count it does not imply */
        put64(buf, 1000);
        put64(buf + 16, (1000 + 64 + 127) / 64 + 1);
        akv_filter *f = NULL;
        cr_assert_eq(kind->load(buf, sizeof buf, 2, &f), AKV_ECORRUPT);
        /* version 1: q up to 63, r up to 2^32 - 1 */
        static const uint32_t qs[] = {63, 41, 64, 0xffffffffu};
        for (size_t i = 0; i < 4; i++) {
            put32(buf, qs[i]);
            put32(buf + 4, i & 1 ? 0xffffffffu : 9);
            cr_assert_eq(kind->load(buf, sizeof buf, 1, &f), AKV_ECORRUPT);
        }
        cr_assert_eq(kind->load(buf, sizeof buf, 3, &f), AKV_ENOTSUP);
    }
}

/* Payload version 1 (64-bit words per block, a whole offset word, 2^q home
 * slots, tail 10·sqrt(2^q) + 64) still loads, and answers as it did. */
Test(qf, loads_version1_payload)
{
    const char *kinds[2] = {"qf", "aqf"};
    for (int k = 0; k < 2; k++) {
        const akv_filter_kind *kind = akv_filter_kind_by_name(kinds[k]);
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.expected_keys = 4096;
        p.load_factor = 1.0; /* 2^12 home slots */
        p.remainder_bits = 7;
        akv_filter *f = akvt_build(kinds[k], &p, 5, 3500);
        akv_hash *keys = akvt_keys(5, 3500);
        akvi_memrevmap *rm;
        cr_assert_eq(akvi_memrevmap_create(keys, 3500, &rm), AKV_OK);
        for (uint64_t i = 0; k == 1 && i < 20000; i++) {
            akv_hash y = akvt_key(6, i);
            if (akv_filter_may_contain(f, y))
                cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
        }
        size_t len = 0;
        cr_assert_eq(kind->save(f, NULL, &len), AKV_OK);
        uint8_t *v2 = malloc(len);
        cr_assert_eq(kind->save(f, v2, &len), AKV_OK);
        uint64_t nb2 = get64(v2 + 16), mw = k ? 3 : 2, bb = 8 * mw + 1 + 8 * 7;
        cr_assert_eq(len, 64 + nb2 * bb);
        /* the same table in the version-1 layout */
        uint64_t ns = 4096, nb1 = (ns + 640 + 64 + 63) / 64, bw = mw + 1 + 7;
        size_t len1 = 12 + 40 + nb1 * bw * 8;
        uint8_t *v1 = calloc(1, len1);
        put32(v1, 12), put32(v1 + 4, 7), put32(v1 + 8, 0);
        memcpy(v1 + 12, v2 + 24, 40); /* prefix, items, used, ext_slots, adaptations */
        for (uint64_t b = 0; b < nb2; b++) {
            const uint8_t *s = v2 + 64 + b * bb;
            uint8_t *d = v1 + 52 + b * bw * 8;
            memcpy(d, s, 8 * mw);
            cr_assert_lt(s[8 * mw], 255); /* small clusters: the byte is the offset */
            put64(d + 8 * mw, s[8 * mw]);
            memcpy(d + 8 * mw + 8, s + 8 * mw + 1, 8 * 7);
        }
        akv_filter *g = NULL;
        cr_assert_eq(kind->load(v1, len1, 1, &g), AKV_OK);
        cr_assert_eq(akvi_aqf_validate(g), AKV_OK);
        akvt_check_no_false_negatives(g, 5, 3500);
        for (uint64_t i = 0; i < 50000; i++) {
            akv_hash y = akvt_key(7, i);
            cr_assert_eq(akv_filter_may_contain(f, y), akv_filter_may_contain(g, y));
        }
        for (uint64_t i = 0; k == 1 && i < 20000; i++)
            cr_assert_not(akv_filter_may_contain(g, akvt_key(6, i)) &&
                          !akv_filter_may_contain(f, akvt_key(6, i)));
        /* damaged version-1 payloads are refused too */
        v1[60] ^= 0x10;
        akv_filter *h = NULL;
        int rc = kind->load(v1, len1, 1, &h);
        cr_assert(rc == AKV_ECORRUPT || rc == AKV_OK);
        if (rc == AKV_OK) {
            cr_assert_eq(akvi_aqf_validate(h), AKV_OK);
            akv_filter_destroy(h);
        }
        cr_assert_eq(kind->load(v1, len1 - 8, 1, &h), AKV_ECORRUPT);
        akv_filter_destroy(g);
        free(v1), free(v2), free(keys);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

static int cmp_hi(const void *a, const void *b)
{
    const akv_hash *x = a, *y = b;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Keys whose hashes crowd into one stretch of the hash space (a fraction of
 * it, at any offset) make runs longer than a 64-slot block. A bulk build
 * either succeeds and holds every key, or refuses (AKV_EFULL): it once set
 * the offsets of blocks such a run covers to at most 64 and lost keys. */
Test(qf, clustered_hashes_bulk_build_no_false_negatives)
{
    uint64_t x = 99;
    size_t built = 0;
    for (int trial = 0; trial < 2000; trial++) {
        const akv_filter_kind *k = akv_filter_kind_by_name(trial % 2 ? "aqf" : "qf");
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t n = 20 + (x >> 40) % 300;
        akv_hash *h = malloc(n * sizeof *h);
        cr_assert_not_null(h);
        unsigned parts = 2 + (unsigned)((x >> 20) % 60);
        uint64_t width = ~0ULL / parts;
        uint64_t start = (x >> 8) % parts * width + (x % 1000) * (width / 2000);
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            h[i] = (akv_hash){start + (x >> 1) % width, x * 0x9e3779b97f4a7c15ULL};
        }
        akvi_sort(h, n, sizeof *h, cmp_hi);
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.expected_keys = n;
        p.bits_per_key = 10;
        akv_filter *f = NULL;
        int rc = akv_filter_build(k, &p, h, n, NULL, 0, &f);
        cr_assert(rc == AKV_OK || rc == AKV_EFULL, "%s build: %s", k->name, akv_strerror(rc));
        if (rc == AKV_OK) {
            built++;
            for (size_t i = 0; i < n; i++)
                cr_assert(akv_filter_may_contain(f, h[i]), "%s (trial %d, %zu keys in 1/%u of the space) lost key %zu",
                          k->name, trial, n, parts, i);
            akv_filter_destroy(f);
        }
        free(h);
    }
    cr_assert_gt(built, 500, "only %zu of 2000 clustered builds succeeded", built);
}
