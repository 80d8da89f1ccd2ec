/*
 * test_misslog.c — the negative-lookup summary: counting, hints, the byte
 * budget, heavy hitters surviving churn, range selection, persistence.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"

static akv_hash hk(const char *k)
{
    return akv_hash_key(k, strlen(k), 7);
}

static void rec(akvi_misslog *ml, const char *k, double wasted)
{
    akvi_misslog_record(ml, hk(k), k, strlen(k), wasted);
}

Test(misslog, counts_and_costs)
{
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    for (int i = 0; i < 5; i++)
        rec(ml, "hot", 1);
    rec(ml, "cold", 0);
    akvi_misslog_hint(ml, hk("declared"), "declared", 8, 100);
    cr_assert_eq(akvi_misslog_count(ml), 3);
    akv_negative *neg;
    size_t n = akvi_misslog_collect(ml, NULL, NULL, 10, &neg);
    cr_assert_eq(n, 3);
    /* heaviest first: declared (100), hot (5 lookups + 5 wasted), cold (1) */
    cr_assert_eq(neg[0].h.hi, hk("declared").hi);
    cr_assert_eq(neg[1].h.hi, hk("hot").hi);
    cr_assert_float_eq(neg[1].cost, 10.0, 1e-9);
    cr_assert_eq(neg[2].h.hi, hk("cold").hi);
    free(neg);
    akvi_misslog_destroy(ml);
}

Test(misslog, budget_is_respected_and_heavy_hitters_survive)
{
    akvi_misslog *ml = akvi_misslog_create(8192);
    char k[32];
    for (int round = 0; round < 50; round++) {
        for (int h = 0; h < 5; h++) {
            snprintf(k, sizeof k, "heavy%d", h);
            rec(ml, k, 1);
        }
        for (int i = 0; i < 20; i++) {
            snprintf(k, sizeof k, "noise%d-%d", round, i);
            rec(ml, k, 0);
        }
    }
    cr_assert_leq(akvi_misslog_count(ml), 8192 / 64);
    akv_negative *neg;
    size_t n = akvi_misslog_collect(ml, NULL, NULL, 5, &neg);
    cr_assert_eq(n, 5);
    for (int h = 0; h < 5; h++) {
        snprintf(k, sizeof k, "heavy%d", h);
        bool found = false;
        for (size_t i = 0; i < n; i++)
            found |= neg[i].h.hi == hk(k).hi;
        cr_assert(found, "%s was evicted", k);
    }
    free(neg);
    akvi_misslog_destroy(ml);
}

static bool starts_with_a(void *arg, akv_hash h, const void *key, size_t klen)
{
    (void)arg;
    (void)h;
    return klen > 0 && ((const char *)key)[0] == 'a';
}

Test(misslog, range_selection)
{
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    rec(ml, "apple", 0);
    rec(ml, "banana", 0);
    rec(ml, "avocado", 0);
    akv_negative *neg;
    size_t n = akvi_misslog_collect(ml, starts_with_a, NULL, 100, &neg);
    cr_assert_eq(n, 2);
    free(neg);
    akvi_misslog_destroy(ml);
}

Test(misslog, persistence_round_trip_and_damage)
{
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    char k[32];
    for (int i = 0; i < 100; i++) {
        snprintf(k, sizeof k, "key%d", i);
        for (int j = 0; j <= i % 3; j++)
            rec(ml, k, 0.5);
    }
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_misslog_encode(ml, &buf, &len), AKV_OK);
    akvi_misslog *m2 = akvi_misslog_create(1 << 16);
    cr_assert_eq(akvi_misslog_decode(m2, buf, len), AKV_OK);
    cr_assert_eq(akvi_misslog_count(m2), 100);
    akv_negative *a, *b;
    size_t na = akvi_misslog_collect(ml, NULL, NULL, 1000, &a),
           nb = akvi_misslog_collect(m2, NULL, NULL, 1000, &b);
    cr_assert_eq(na, nb);
    double sa = 0, sb = 0;
    for (size_t i = 0; i < na; i++) {
        sa += a[i].cost;
        sb += b[i].cost;
    }
    cr_assert_float_eq(sa, sb, 1e-9);
    free(a);
    free(b);
    buf[len / 2] ^= 0x40;
    akvi_misslog *m3 = akvi_misslog_create(1 << 16);
    cr_assert_eq(akvi_misslog_decode(m3, buf, len), AKV_ECORRUPT);
    cr_assert_neq(akvi_misslog_decode(m3, buf, 10), AKV_OK);
    free(buf);
    akvi_misslog_destroy(ml);
    akvi_misslog_destroy(m2);
    akvi_misslog_destroy(m3);
}

typedef struct rec_arg {
    akvi_misslog *ml;
    int id;
} rec_arg;

static void *recorder(void *p)
{
    rec_arg *a = p;
    char k[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(k, sizeof k, "t%d-%d", a->id, i % 5000);
        rec(a->ml, k, 1);
    }
    return NULL;
}

Test(misslog, sharded_concurrent_records_and_round_trip)
{
    akvi_misslog *ml = akvi_misslog_create(1 << 20);
    pthread_t t[4];
    rec_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (rec_arg){ml, i};
        pthread_create(&t[i], NULL, recorder, &a[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    size_t n = akvi_misslog_count(ml);
    /* 20000 distinct keys of ~72 bytes each against a 1 MiB budget */
    cr_assert(n > 10000 && n <= (1u << 20) / 64, "%zu entries", n);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_misslog_encode(ml, &buf, &len), AKV_OK);
    akvi_misslog *m2 = akvi_misslog_create(1 << 20);
    cr_assert_eq(akvi_misslog_decode(m2, buf, len), AKV_OK);
    cr_assert_eq(akvi_misslog_count(m2), n);
    akv_negative *neg;
    size_t k = akvi_misslog_collect(m2, NULL, NULL, 3, &neg);
    cr_assert_eq(k, 3);
    cr_assert_geq(neg[0].cost, 8.0); /* 4 lookups + 4 wasted probes, plus any inherited count */
    free(neg);
    free(buf);
    akvi_misslog_destroy(ml);
    akvi_misslog_destroy(m2);
}

Test(misslog, random_records_never_crash)
{
    uint64_t x = 777;
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 20 + (size_t)(iter % 300);
        uint8_t *buf = malloc(len);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t)((x & 3) == 0 ? x >> 8 : (x >> 8) & 3);
        }
        memcpy(buf, "AKVM", 4);
        buf[4] = 1, buf[5] = buf[6] = buf[7] = 0;
        uint64_t h = XXH64(buf, len - 8, 0);
        for (int i = 0; i < 8; i++)
            buf[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
        (void)akvi_misslog_decode(ml, buf, len);
        free(buf);
    }
    akvi_misslog_destroy(ml);
}

/* Coverage: 1 while the table has lost no key it met; low once a stream of
 * distinct keys far outgrows it; back up when the stream narrows to keys it
 * holds and new keys are rare (the counters are halved as they grow). */
Test(misslog, coverage_follows_the_stream)
{
    akvi_misslog *ml = akvi_misslog_create(8192); /* about 100 entries */
    cr_assert_float_eq(akvi_misslog_coverage(ml), 1.0, 1e-12);
    char k[32];
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof k, "few%d", i);
        rec(ml, k, 1);
    }
    cr_assert_float_eq(akvi_misslog_coverage(ml), 1.0, 1e-12, "nothing lost yet");
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "many%d", i);
        rec(ml, k, 1);
    }
    double wide = akvi_misslog_coverage(ml);
    cr_assert_lt(wide, 0.2, "coverage %g after 5000 distinct keys in ~100 entries", wide);
    /* The same 20 keys over and over, one new key in 100 lookups. */
    for (int r = 0; r < 400; r++) {
        for (int i = 0; i < 20; i++) {
            snprintf(k, sizeof k, "many%d", 4990 - i % 10);
            rec(ml, k, 1);
        }
        if (r % 5 == 0) {
            snprintf(k, sizeof k, "late%d", r);
            rec(ml, k, 1);
        }
    }
    double narrow = akvi_misslog_coverage(ml);
    cr_log_info("coverage %g wide, %g narrow", wide, narrow);
    cr_assert_gt(narrow, 0.5, "coverage %g once the stream narrowed (%g before)", narrow, wide);
    akvi_misslog_destroy(ml);
}

/* The get path's record (akvi_misslog_negative): a costly negative always;
 * a free one always while the table has room, and once it is full one time
 * in AKVI_MISSLOG_SAMPLE, counted that many times. So a key looked up often
 * is in a full table with about its true count. */
Test(misslog, get_path_samples_free_negatives_once_full)
{
    akvi_misslog *ml = akvi_misslog_create(4u << 20);
    char k[32];
    for (int i = 0; i < 200; i++) {
        int kl = snprintf(k, sizeof k, "costly%d", i);
        akvi_misslog_negative(ml, hk(k), k, (size_t)kl, 1);
    }
    for (int i = 0; i < 4000; i++) {
        int kl = snprintf(k, sizeof k, "once%d", i);
        akvi_misslog_negative(ml, hk(k), k, (size_t)kl, 0);
    }
    cr_assert_eq(akvi_misslog_count(ml), 4200, "a table with room lost a negative");
    akvi_misslog_destroy(ml);

    ml = akvi_misslog_create(8192); /* about 100 entries */
    for (int i = 0; i < 400; i++) { /* full of costly keys, each seen twice */
        int kl = snprintf(k, sizeof k, "costly%d", i % 200);
        akvi_misslog_negative(ml, hk(k), k, (size_t)kl, 1);
    }
    size_t n0 = akvi_misslog_count(ml);
    for (int i = 0; i < 8000; i++)
        akvi_misslog_negative(ml, hk("hot"), "hot", 3, 0);
    cr_assert_leq(akvi_misslog_count(ml), n0 + 1);
    akv_negative *neg;
    size_t n = akvi_misslog_collect(ml, NULL, NULL, 1, &neg);
    cr_assert_eq(n, 1);
    cr_assert_eq(neg[0].h.hi, hk("hot").hi, "the hot key is not the heaviest");
    /* Sampled one in 8, eight each (and admitted one in 8 more, 64): the
     * count is within a few hundred of 8000 (sd about 250). */
    cr_assert(neg[0].cost > 6000 && neg[0].cost < 10000, "hot key counted %g times for 8000", neg[0].cost);
    free(neg);
    akvi_misslog_destroy(ml);
}
