/*
 * test_ablocked.c — kind `ablocked`: a blocked Bloom filter plus a verified
 * list of fixed false positives. No false negatives after any sequence of
 * adaptations (also under concurrent queries), a false positive stays fixed,
 * a stored key's 32-bit fingerprint is never listed, the budget is met, and
 * damaged or oversized payloads are refused.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "revmap/revmap.h"
#include "support/filter_props.h"

static const akv_filter_kind *K(void)
{
    const akv_filter_kind *k = akv_filter_kind_by_name("ablocked");
    cr_assert_not_null(k);
    return k;
}

static akv_filter *build(uint64_t seed, size_t n, double bpk, akv_hash **keys, akv_memrevmap **rm)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = bpk;
    akv_filter *f = akvt_build("ablocked", &p, seed, n);
    *keys = akvt_keys(seed, n);
    cr_assert_eq(akv_memrevmap_create(*keys, n, rm), AKV_OK);
    return f;
}

Test(ablocked, budget_and_fpr)
{
    static const double bpk[] = {8, 10, 16};
    for (size_t i = 0; i < 3; i++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.bits_per_key = bpk[i];
        p.expected_keys = 200000;
        akv_filter *f = akvt_build("ablocked", &p, 3, 200000);
        double got = (double)akv_filter_memory(f) * 8 / 200000;
        cr_assert(got <= bpk[i] * 1.01 && got >= bpk[i] * 0.97, "%.0f bits/key: %.3f", bpk[i], got);
        akvt_check_no_false_negatives(f, 3, 200000);
        akvt_check_fpr_theory(f, 3, 300000, 0.05);
        akv_filter_destroy(f);
    }
}

/* Seeded random streams of false positives: each fixed one stays fixed,
 * every key stays positive after every step. */
Test(ablocked, adapt_fixes_monotonic_no_false_negatives)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        akv_hash *keys;
        akv_memrevmap *rm;
        size_t n = 20000;
        akv_filter *f = build(seed, n, 10, &keys, &rm);
        akv_hash *fixed = malloc(100000 * sizeof *fixed);
        size_t nf = 0;
        uint64_t full = 0;
        for (uint64_t i = 0; i < 100000; i++) {
            akv_hash y = akvt_key(seed + 100, i);
            if (!akv_filter_may_contain(f, y))
                continue;
            int rc = akv_filter_adapt(f, y, akv_memrevmap_revmap(rm));
            if (rc == AKV_EFULL) {
                full++;
                continue;
            }
            cr_assert_eq(rc, AKV_OK, "adapt: %s", akv_strerror(rc));
            cr_assert_not(akv_filter_may_contain(f, y));
            fixed[nf++] = y;
            if (nf % 16 == 0)
                akvt_check_no_false_negatives(f, seed, n);
        }
        akvt_check_no_false_negatives(f, seed, n);
        for (size_t i = 0; i < nf; i++)
            cr_assert_not(akv_filter_may_contain(f, fixed[i]), "fixed false positive %zu came back", i);
        cr_assert_gt(nf, 40);
        cr_assert_gt(full, 0); /* the list holds n/256 · 0.8 = 62 */
        /* stored keys are never adapted away */
        for (size_t i = 0; i < 1000; i++)
            cr_assert_eq(akv_filter_adapt(f, keys[i], akv_memrevmap_revmap(rm)), AKV_NOTFOUND);
        akvt_check_no_false_negatives(f, seed, n);
        /* the adapted filter round-trips with its list */
        uint8_t *buf;
        size_t len;
        cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
        akv_filter *g = NULL;
        cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK);
        for (size_t i = 0; i < nf; i++)
            cr_assert_not(akv_filter_may_contain(g, fixed[i]));
        akvt_check_no_false_negatives(g, seed, n);
        akv_filter_destroy(g);
        free(buf);
        free(fixed);
        free(keys);
        akv_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

/* A false positive whose top 32 bits equal a stored key's cannot be listed
 * (the list would answer "no" for the key): counted, left positive. */
Test(ablocked, shared_fingerprint_is_never_listed)
{
    uint64_t st = 5;
    size_t n = 2000;
    akv_hash *keys = malloc(n * sizeof *keys);
    for (size_t i = 0; i < n; i++)
        keys[i] = (akv_hash){akvt_rand(&st), akvt_rand(&st)};
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = n;
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_build(K(), &p, keys, n, NULL, 0, &f), AKV_OK);
    akv_memrevmap *rm;
    cr_assert_eq(akv_memrevmap_create(keys, n, &rm), AKV_OK);
    size_t tried = 0;
    for (size_t i = 0; i < n && tried < 50; i++) {
        /* same top 32 bits and block as key i, other low bits */
        akv_hash y = {keys[i].hi ^ (akvt_rand(&st) & 0xffffffffULL), akvt_rand(&st)};
        if (!akv_filter_may_contain(f, y))
            continue;
        tried++;
        cr_assert_eq(akv_filter_adapt(f, y, akv_memrevmap_revmap(rm)), AKV_NOTFOUND);
        cr_assert(akv_filter_may_contain(f, keys[i]));
    }
    cr_assert_gt(tried, 5);
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, keys[i]));
    akv_memrevmap_destroy(rm);
    akv_filter_destroy(f);
    free(keys);
}

typedef struct qarg {
    const akv_filter *f;
    const akv_hash *keys;
    size_t n;
    int *stop;
    size_t misses;
} qarg;

static void *reader(void *arg)
{
    qarg *a = arg;
    while (!__atomic_load_n(a->stop, __ATOMIC_ACQUIRE))
        for (size_t i = 0; i < a->n; i++)
            a->misses += !akv_filter_may_contain(a->f, a->keys[i]);
    return NULL;
}

Test(ablocked, concurrent_queries_never_false_negative)
{
    akv_hash *keys;
    akv_memrevmap *rm;
    size_t n = 50000;
    akv_filter *f = build(9, n, 10, &keys, &rm);
    int stop = 0;
    qarg a[2] = {{f, keys, n, &stop, 0}, {f, keys, n, &stop, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, reader, &a[i]);
    size_t fixed = 0;
    for (uint64_t i = 0; i < 200000; i++) {
        akv_hash y = akvt_key(77, i);
        if (akv_filter_may_contain(f, y) && akv_filter_adapt(f, y, akv_memrevmap_revmap(rm)) == AKV_OK)
            fixed++;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(a[0].misses + a[1].misses, 0);
    cr_assert_gt(fixed, 50);
    free(keys);
    akv_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

Test(ablocked, huge_declared_sizes_are_corrupt)
{
    static const uint64_t cells[] = {~0ULL, 1ULL << 62, (~0ULL) / 4 + 1, 63, 0};
    uint8_t buf[2048] = {0};
    for (size_t i = 0; i < 5; i++) {
        put64(buf, cells[i]);
        put64(buf + 8, 0);
        akv_filter *f = NULL;
        cr_assert_eq(K()->load(buf, sizeof buf, 1, &f), AKV_ECORRUPT);
    }
    /* a count above the cells, and a blocked payload length past the end */
    put64(buf, 64);
    put64(buf + 8, 65);
    akv_filter *f = NULL;
    cr_assert_eq(K()->load(buf, sizeof buf, 1, &f), AKV_ECORRUPT);
    put64(buf + 8, 0);
    put64(buf + 32 + 256 + 2, ~0ULL);
    cr_assert_eq(K()->load(buf, sizeof buf, 1, &f), AKV_ECORRUPT);
    cr_assert_eq(K()->load(buf, sizeof buf, 2, &f), AKV_ENOTSUP);
}

Test(ablocked, serialization_and_damage)
{
    akv_hash *keys;
    akv_memrevmap *rm;
    akv_filter *f = build(4, 5000, 10, &keys, &rm);
    for (uint64_t i = 0; i < 20000; i++) {
        akv_hash y = akvt_key(31, i);
        if (akv_filter_may_contain(f, y))
            akv_filter_adapt(f, y, akv_memrevmap_revmap(rm));
    }
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akvt_check_payload_damage(f, 4, 2000);
    akv_filter_destroy(f);
    free(keys);
    akv_memrevmap_destroy(rm);
}
