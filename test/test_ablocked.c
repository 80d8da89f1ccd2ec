/*
 * test_ablocked.c — kind `ablocked`: a blocked Bloom filter plus a verified
 * list of fixed false positives. No false negatives after any sequence of
 * adaptations (also under concurrent queries) or pre-adaptation at build,
 * a false positive is fixed at once and the list stays within its budget
 * (a full bucket replaces a value), a stored key's 31-bit fingerprint is
 * never listed, the budget is met, and damaged or oversized payloads are
 * refused; version-1 payloads still load; CLOCK keeps the values in use.
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

static akv_filter *build(uint64_t seed, size_t n, double bpk, akv_hash **keys, akvi_memrevmap **rm)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = bpk;
    akv_filter *f = akvt_build("ablocked", &p, seed, n);
    *keys = akvt_keys(seed, n);
    cr_assert_eq(akvi_memrevmap_create(*keys, n, rm), AKV_OK);
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

/* Seeded random streams of false positives: an adaptation fixes its
 * false positive at once, the first 16 stay fixed (no bucket can fill before a 17th), every key
 * stays positive after every step, and the list never outgrows its budget:
 * an admitted value replaces one. */
Test(ablocked, adapt_fixes_bounded_no_false_negatives)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        akv_hash *keys;
        akvi_memrevmap *rm;
        size_t n = 20000;
        akv_filter *f = build(seed, n, 10, &keys, &rm);
        size_t mem0 = akv_filter_memory(f);
        akv_hash *fixed = malloc(100000 * sizeof *fixed);
        size_t nf = 0;
        for (uint64_t i = 0; i < 100000; i++) {
            akv_hash y = akvt_key(seed + 100, i);
            if (!akv_filter_may_contain(f, y))
                continue;
            int rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
            cr_assert_eq(rc, AKV_OK, "adapt: %s", akv_strerror(rc));
            cr_assert_not(akv_filter_may_contain(f, y));
            fixed[nf++] = y;
            if (nf <= 16)
                for (size_t j = 0; j < nf; j++)
                    cr_assert_not(akv_filter_may_contain(f, fixed[j]), "early fix %zu forgotten", j);
            if (nf % 16 == 0)
                akvt_check_no_false_negatives(f, seed, n);
        }
        akvt_check_no_false_negatives(f, seed, n);
        cr_assert_eq(akv_filter_memory(f), mem0, "the list grew");
        /* more fixes than the 80 cells hold: replacement happened, and the
         * list is still doing its job */
        cr_assert_gt(nf, 200);
        size_t still = 0;
        for (size_t i = 0; i < nf; i++)
            still += !akv_filter_may_contain(f, fixed[i]);
        cr_assert(still >= 60 && still <= 80, "%zu of %zu fixes held by 80 cells", still, nf);
        /* stored keys are never adapted away */
        for (size_t i = 0; i < 1000; i++)
            cr_assert_eq(akv_filter_adapt(f, keys[i], akvi_memrevmap_revmap(rm)), AKV_NOTFOUND);
        akvt_check_no_false_negatives(f, seed, n);
        /* the adapted filter round-trips with its list */
        uint8_t *buf;
        size_t len;
        cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
        akv_filter *g = NULL;
        cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK);
        for (size_t i = 0; i < nf; i++)
            cr_assert_eq(akv_filter_may_contain(g, fixed[i]), akv_filter_may_contain(f, fixed[i]));
        akvt_check_no_false_negatives(g, seed, n);
        akv_filter_destroy(g);
        free(buf);
        free(fixed);
        free(keys);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

/* Negatives given at build are listed when the Bloom part passes them and
 * no key shares their 31 bits, heaviest first into free cells: the slot
 * starts adapted. Keys stay positive, including keys whose fingerprint a
 * negative shares (those negatives are left positive). */
Test(ablocked, build_preadapts_to_negatives)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        size_t n = 40000; /* 160 cells */
        akv_hash *keys = akvt_keys(seed, n);
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.expected_keys = n;
        akv_filter *plain = NULL;
        cr_assert_eq(akv_filter_build(K(), &p, keys, n, NULL, 0, &plain), AKV_OK);
        akv_negative neg[120];
        size_t nn = 0;
        for (uint64_t i = 0; nn < 100; i++) {
            akv_hash y = akvt_key(seed + 50, i);
            if (akv_filter_may_contain(plain, y)) {
                neg[nn] = (akv_negative){y, (double)(1000 - nn)};
                nn++;
            }
        }
        /* 10 negatives sharing a key's 31 bits: must stay positive */
        uint64_t st = seed;
        for (size_t i = 0; i < 10; i++)
            neg[nn++] = (akv_negative){{keys[i * 7].hi ^ (akvt_rand(&st) & 0xffffffffULL), akvt_rand(&st)}, 1};
        /* and 10 that the Bloom part already refuses are no use listed */
        for (uint64_t i = 0; nn < 120; i++) {
            akv_hash y = akvt_key(seed + 60, i);
            if (!akv_filter_may_contain(plain, y))
                neg[nn++] = (akv_negative){y, 1};
        }
        akv_filter *f = NULL;
        cr_assert_eq(akv_filter_build(K(), &p, keys, n, neg, nn, &f), AKV_OK);
        cr_assert_eq(akv_filter_memory(f), akv_filter_memory(plain));
        akvt_check_no_false_negatives(f, seed, n);
        size_t fixed = 0;
        for (size_t i = 0; i < 100; i++)
            fixed += !akv_filter_may_contain(f, neg[i].h);
        /* 100 values over 10 buckets of 16: a bucket may overflow, rarely */
        cr_assert_geq(fixed, 95, "%zu of 100 negatives pre-adapted", fixed);
        for (size_t i = 100; i < 110; i++)
            cr_assert_eq(akv_filter_may_contain(f, neg[i].h), akv_filter_may_contain(plain, neg[i].h));
        akv_filter_stats fs = {0};
        akv_filter_get_stats(f, &fs);
        cr_assert_eq(fs.adapt_bits, 32 * fixed);
        for (size_t i = 0; i < 2000; i++) {
            akv_hash y = akvt_key(seed + 70, i);
            cr_assert(!akv_filter_may_contain(f, y) || akv_filter_may_contain(plain, y));
        }
        akv_filter_destroy(f);
        akv_filter_destroy(plain);
        free(keys);
    }
}

/* A false positive whose top 31 bits equal a stored key's cannot be listed
 * (the list would answer "no" for the key): counted, left positive. */
/* An absent key whose 31-bit value a stored key shares cannot be listed;
 * it goes into the exact table by its whole hash (16 of them), and the
 * stored key is still found. Past 16 such keys they stay false positives. */
Test(ablocked, shared_fingerprint_goes_to_the_exact_table)
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
    size_t before = akv_filter_memory(f);
    akvi_memrevmap *rm;
    cr_assert_eq(akvi_memrevmap_create(keys, n, &rm), AKV_OK);
    size_t tried = 0, fixed = 0;
    akv_hash ys[64];
    for (size_t i = 0; i < n && tried < 40; i++) {
        /* same top 32 bits (so 31) as key i, other low bits */
        akv_hash y = {keys[i].hi ^ (akvt_rand(&st) & 0xffffffffULL), akvt_rand(&st)};
        if (!akv_filter_may_contain(f, y))
            continue;
        int rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
        if (tried < 16) {
            cr_assert_eq(rc, AKV_OK, "exact entry %zu", tried);
            cr_assert_not(akv_filter_may_contain(f, y), "an exact entry is answered no");
            ys[fixed++] = y;
        } else {
            cr_assert_eq(rc, AKV_NOTFOUND, "the exact table holds 16");
            cr_assert(akv_filter_may_contain(f, y));
        }
        tried++;
        cr_assert(akv_filter_may_contain(f, keys[i]));
    }
    cr_assert_gt(tried, 16);
    for (size_t i = 0; i < fixed; i++)
        cr_assert_not(akv_filter_may_contain(f, ys[i]));
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, keys[i]));
    cr_assert_eq(akv_filter_memory(f), before + 16 * sizeof(akv_hash), "the table counts in the memory");
    /* A stored key itself is never put in the table. */
    cr_assert_eq(akv_filter_adapt(f, keys[7], akvi_memrevmap_revmap(rm)), AKV_NOTFOUND);
    cr_assert(akv_filter_may_contain(f, keys[7]));
    akvi_memrevmap_destroy(rm);
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
    akvi_memrevmap *rm;
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
        if (akv_filter_may_contain(f, y) && akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)) == AKV_OK)
            fixed++;
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(a[0].misses + a[1].misses, 0);
    cr_assert_gt(fixed, 50);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

Test(ablocked, huge_declared_sizes_are_corrupt)
{
    /* version 2: buckets of 16 cells */
    static const uint64_t buckets[] = {~0ULL, 1ULL << 62, (~0ULL) / 64 + 1, 200, 0};
    uint8_t buf[4096] = {0};
    for (size_t i = 0; i < 5; i++) {
        put64(buf, buckets[i]);
        akv_filter *f = NULL;
        cr_assert_eq(K()->load(buf, sizeof buf, 2, &f), AKV_ECORRUPT);
    }
    /* a count above the cells, and a blocked payload length past the end */
    put64(buf, 4);
    put64(buf + 8, 65);
    akv_filter *f = NULL;
    cr_assert_eq(K()->load(buf, sizeof buf, 2, &f), AKV_ECORRUPT);
    put64(buf + 8, 0);
    put64(buf + 48 + 256 + 2, ~0ULL);
    cr_assert_eq(K()->load(buf, sizeof buf, 2, &f), AKV_ECORRUPT);
    /* version 1: cells of a linear-probing table, at least 64 */
    static const uint64_t cells[] = {~0ULL, 1ULL << 62, (~0ULL) / 4 + 1, 63, 0};
    memset(buf, 0, sizeof buf);
    for (size_t i = 0; i < 5; i++) {
        put64(buf, cells[i]);
        cr_assert_eq(K()->load(buf, sizeof buf, 1, &f), AKV_ECORRUPT);
    }
    cr_assert_eq(K()->load(buf, sizeof buf, 3, &f), AKV_ENOTSUP);
}

/* Adapt f to the first `want` false positives of key space `space` (into
 * out); returns the index after the last key tried. */
static uint64_t fix_first(akv_filter *f, akvi_memrevmap *rm, uint64_t space, akv_hash *out, size_t want)
{
    uint64_t i = 0;
    for (size_t n = 0; n < want; i++) {
        akv_hash y = akvt_key(space, i);
        if (akv_filter_may_contain(f, y) && akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)) == AKV_OK)
            out[n++] = y;
    }
    return i;
}

/* A version-1 payload (a linear-probing list of 32-bit values, as the
 * first release wrote it) still loads. Its values were checked against 32
 * bits of the keys, not the 31 a value covers now, so the list starts
 * empty: the fixed false positives are positive again, the keys too. */
Test(ablocked, version1_payload_loads_with_an_empty_list)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    size_t n = 20000;
    akv_filter *f = build(6, n, 10, &keys, &rm);
    akv_hash fixed[40];
    size_t nf = 40;
    fix_first(f, rm, 66, fixed, nf);
    size_t len = 0;
    cr_assert_eq(K()->save(f, NULL, &len), AKV_OK);
    uint8_t *v2 = malloc(len);
    cr_assert_eq(K()->save(f, v2, &len), AKV_OK);
    /* v2: 6 u64, 80 cells, blocked part; v1: 4 u64, 80 32-bit values */
    size_t cells = 80, tail = len - 48 - 4 * cells;
    uint8_t *v1 = malloc(32 + 4 * cells + tail);
    put64(v1, cells);
    memcpy(v1 + 8, v2 + 8, 24);
    for (size_t i = 0; i < cells; i++) {
        uint32_t c;
        memcpy(&c, v2 + 48 + 4 * i, 4);
        c >>= 1; /* not what v1 held (32 bits), but non-zero where v2 is */
        memcpy(v1 + 32 + 4 * i, &c, 4);
    }
    memcpy(v1 + 32 + 4 * cells, v2 + 48 + 4 * cells, tail);
    akv_filter *g = NULL;
    cr_assert_eq(K()->load(v1, 32 + 4 * cells + tail, 1, &g), AKV_OK);
    for (size_t i = 0; i < nf; i++)
        cr_assert(akv_filter_may_contain(g, fixed[i]));
    akvt_check_no_false_negatives(g, 6, n);
    cr_assert_eq(akv_filter_memory(g), akv_filter_memory(f));
    akv_filter_stats st = {0};
    akv_filter_get_stats(g, &st);
    cr_assert_eq(st.adapt_bits, 0);
    /* a count that disagrees with the cells is still refused */
    put64(v1 + 8, 3);
    cr_assert_eq(K()->load(v1, 32 + 4 * cells + tail, 1, &(akv_filter *){NULL}), AKV_ECORRUPT);
    akv_filter_destroy(g);
    free(v1);
    free(v2);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* CLOCK keeps what is used: 40 hot false positives, queried between
 * adaptations, stay fixed while 3,000 one-off false positives pass through
 * the same 80 cells. */
Test(ablocked, referenced_values_survive_a_stream_of_one_offs)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    size_t n = 20000;
    akv_filter *f = build(8, n, 10, &keys, &rm);
    akv_hash hot[40];
    size_t nh = 40;
    uint64_t i = fix_first(f, rm, 88, hot, nh);
    size_t ones = 0;
    for (; ones < 3000; i++) {
        akv_hash y = akvt_key(88, i);
        if (!akv_filter_may_contain(f, y))
            continue;
        ones++;
        /* (not queried again: a query would mark it referenced too) */
        cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
        for (size_t j = 0; j < nh; j++)
            (void)akv_filter_may_contain(f, hot[j]);
    }
    size_t kept = 0;
    for (size_t j = 0; j < nh; j++)
        kept += !akv_filter_may_contain(f, hot[j]);
    cr_assert_geq(kept, 38, "%zu of 40 hot values kept", kept);
    akvt_check_no_false_negatives(f, 8, n);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

Test(ablocked, serialization_and_damage)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build(4, 5000, 10, &keys, &rm);
    for (uint64_t i = 0; i < 20000; i++) {
        akv_hash y = akvt_key(31, i);
        if (akv_filter_may_contain(f, y))
            akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
    }
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akvt_check_payload_damage(f, 4, 2000);
    akv_filter_destroy(f);
    free(keys);
    akvi_memrevmap_destroy(rm);
}
