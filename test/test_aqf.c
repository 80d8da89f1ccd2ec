/*
 * test_aqf.c — the Adaptive Quotient Filter: random operation sequences
 * against a model set (zero false negatives), adaptation, monotonicity, the
 * shadowing hazard, merge/resize/bulk load, static YES/NO build,
 * serialization, and queries racing writers.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "filters/aqf.h"
#include "revmap/revmap.h"
#include "support/filter_props.h"

static const akv_filter_kind *K(const char *n)
{
    const akv_filter_kind *k = akv_filter_kind_by_name(n);
    cr_assert_not_null(k);
    return k;
}

static akv_filter *empty_aqf(uint64_t n, uint32_t r)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = n;
    p.remainder_bits = r;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_create(K("aqf"), &p, NULL, 0, &f), AKV_OK);
    cr_assert_eq(akv_filter_finish(f), AKV_OK);
    return f;
}

/* Hashes that collide a lot: few top patterns, long shared prefixes, so
 * miniruns hold several keys and extensions nest. */
static akv_hash crowded(uint64_t *st, unsigned mini_bits)
{
    static const uint64_t pat[4] = {0x0123456789abcdefULL, 0x0123456789abcdeeULL, 0x0f0f0f0f0f0f0f0fULL,
                                    0x0123456700000000ULL};
    uint64_t top = akvt_rand(st) >> (64 - mini_bits);
    uint64_t hi = (top << (64 - mini_bits)) | (pat[akvt_rand(st) & 3] >> mini_bits);
    if (akvt_rand(st) & 1)
        hi ^= akvt_rand(st) >> (mini_bits + 20);
    uint64_t lo = akvt_rand(st) & 0xff;
    if (akvt_rand(st) & 1)
        lo = akvt_rand(st);
    return (akv_hash){hi, lo};
}

static bool heq(akv_hash a, akv_hash b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

typedef struct model {
    akv_hash *v;
    size_t n, cap;
} model;

static bool model_has(const model *m, akv_hash h)
{
    for (size_t i = 0; i < m->n; i++)
        if (heq(m->v[i], h))
            return true;
    return false;
}

static void check_members(const akv_filter *f, const model *m)
{
    for (size_t i = 0; i < m->n; i++)
        cr_assert(akv_filter_may_contain(f, m->v[i]), "false negative on member %zu", i);
}

/* One random step: insert, remove, or query-and-adapt. */
static void step(akv_filter *f, akv_memrevmap *rm, model *m, uint64_t *st, unsigned bits, uint64_t *adapted)
{
    uint64_t op = akvt_rand(st) % 10;
    if (op < 4 && m->n < m->cap) {
        akv_hash h = crowded(st, bits);
        if (model_has(m, h))
            return;
        int rc = akv_filter_insert(f, h);
        if (rc == AKV_EFULL)
            return;
        cr_assert_eq(rc, AKV_OK, "insert: %s", akv_strerror(rc));
        cr_assert_eq(akv_memrevmap_insert(rm, h), AKV_OK);
        m->v[m->n++] = h;
    } else if (op < 6 && m->n) {
        size_t i = akvt_rand(st) % m->n;
        cr_assert_eq(akv_filter_remove(f, m->v[i]), AKV_OK);
        cr_assert_eq(akv_memrevmap_remove(rm, m->v[i]), AKV_OK);
        m->v[i] = m->v[--m->n];
    } else {
        akv_hash y = crowded(st, bits);
        if (model_has(m, y) || !akv_filter_may_contain(f, y))
            return;
        int rc = akv_filter_adapt(f, y, akv_memrevmap_revmap(rm));
        if (rc == AKV_EFULL)
            return;
        cr_assert_eq(rc, AKV_OK, "adapt: %s", akv_strerror(rc));
        cr_assert_not(akv_filter_may_contain(f, y), "still a false positive after adapt");
        (*adapted)++;
    }
}

Test(aqf, random_ops_against_model_crowded)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        uint64_t st = seed * 7919;
        unsigned bits = 6 + (unsigned)(seed % 3) + 3; /* q + r of the filter below */
        akv_filter *f = empty_aqf(40, 3);
        akv_aqf_info info;
        akv_aqf_info_get(f, &info);
        bits = info.q + info.r;
        akv_memrevmap *rm = NULL;
        cr_assert_eq(akv_memrevmap_create(NULL, 0, &rm), AKV_OK);
        model m = {calloc(60, sizeof(akv_hash)), 0, 58};
        uint64_t adapted = 0;
        for (int i = 0; i < 4000; i++) {
            step(f, rm, &m, &st, bits, &adapted);
            check_members(f, &m);
            if (i % 50 == 0)
                cr_assert_eq(akv_aqf_validate(f), AKV_OK, "seed %llu step %d", (unsigned long long)seed, i);
        }
        cr_assert_eq(akv_aqf_validate(f), AKV_OK);
        cr_assert_gt(adapted, 10);
        free(m.v);
        akv_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

Test(aqf, random_ops_against_model_uniform)
{
    uint64_t st = 42;
    akv_filter *f = empty_aqf(20000, 6);
    akv_memrevmap *rm = NULL;
    cr_assert_eq(akv_memrevmap_create(NULL, 0, &rm), AKV_OK);
    model m = {calloc(20000, sizeof(akv_hash)), 0, 18000};
    uint64_t adapted = 0;
    for (int i = 0; i < 60000; i++) {
        uint64_t op = akvt_rand(&st) % 10;
        if (op < 5 && m.n < m.cap) {
            akv_hash h = {akvt_rand(&st), akvt_rand(&st)};
            cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
            akv_memrevmap_insert(rm, h);
            m.v[m.n++] = h;
        } else if (op < 7 && m.n) {
            size_t j = akvt_rand(&st) % m.n;
            cr_assert_eq(akv_filter_remove(f, m.v[j]), AKV_OK);
            akv_memrevmap_remove(rm, m.v[j]);
            m.v[j] = m.v[--m.n];
        } else {
            akv_hash y = {akvt_rand(&st), akvt_rand(&st)};
            if (akv_filter_may_contain(f, y)) {
                cr_assert_eq(akv_filter_adapt(f, y, akv_memrevmap_revmap(rm)), AKV_OK);
                cr_assert_not(akv_filter_may_contain(f, y));
                adapted++;
            }
        }
    }
    check_members(f, &m);
    cr_assert_eq(akv_aqf_validate(f), AKV_OK);
    akv_filter_stats s;
    akv_filter_get_stats(f, &s);
    cr_assert_eq(s.adaptations, adapted);
    cr_assert_gt(s.adapt_bits, 0);
    free(m.v);
    akv_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}
