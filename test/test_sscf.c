/*
 * test_sscf.c — Seesaw Counting Filter / ada-SSCF: zero false negatives
 * under random insert/remove/absorb churn, counters back to zero after
 * removing every key, vulnerable negatives protected, sticky saturation,
 * serialization, and lock-free queries against a mutating thread.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "filters/sscf.h"
#include "support/filter_props.h"

static const akv_filter_kind *kind(void)
{
    return akv_filter_kind_by_name("sscf");
}

static akv_negative *make_negatives(uint64_t space, size_t n)
{
    akv_negative *neg = malloc(n * sizeof *neg + 1);
    cr_assert_not_null(neg);
    for (size_t i = 0; i < n; i++)
        neg[i] = (akv_negative){akvt_key(space, i), 1.0 / (double)(i + 1)};
    return neg;
}

static akv_filter *create(double bpk, uint64_t cap, uint32_t flags, const akv_negative *neg, size_t nn)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = bpk;
    p.expected_keys = cap;
    p.flags = flags;
    akv_filter *f = NULL;
    int rc = akv_filter_create(kind(), &p, neg, nn, &f);
    cr_assert_eq(rc, AKV_OK, "create: %s", akv_strerror(rc));
    cr_assert_eq(akv_filter_finish(f), AKV_OK);
    return f;
}

static uint64_t described(const akv_filter *f, const char *name);

/* Both counter layouts, each static and adaptive. */
static const uint32_t layouts[] = {0, AKV_SSCF_STATIC, AKV_SSCF_WIDE, AKV_SSCF_WIDE | AKV_SSCF_STATIC};
#define N_LAYOUTS (sizeof layouts / sizeof *layouts)

/* Every counter back at zero, except at most max_sat sticky-saturated ones
 * (overloaded configurations, or the packed layout's low sticky counts on
 * sealed and marked counters). */
static void check_zero(const akv_filter *f, uint64_t max_sat)
{
    uint64_t pc, mc, sat;
    cr_assert_eq(akvi_sscf_nonzero(f, &pc, &mc, &sat), AKV_OK);
    cr_assert(pc == 0 && mc == 0, "after removing every key: %llu pc and %llu mc counters non-zero",
              (unsigned long long)pc, (unsigned long long)mc);
    cr_assert_leq(sat, max_sat, "%llu counters saturated", (unsigned long long)sat);
}

/* A model of the live multiset drives random inserts, removes and absorbs;
 * every live key must stay visible, and removing all empties every counter. */
static void churn(double bpk, uint32_t flags, uint64_t seed, size_t cap, size_t ops)
{
    akv_negative *neg = make_negatives(seed ^ 0x99, cap);
    akv_filter *f = create(bpk, cap, flags, neg, cap);
    akv_hash *live = malloc(2 * cap * sizeof *live);
    size_t n = 0, next = 0, absorbed = 0;
    uint64_t st = seed;
    for (size_t op = 0; op < ops; op++) {
        uint64_t r = akvt_rand(&st) % 100;
        if ((r < 50 && n < 2 * cap) || n == 0) {
            /* some keys repeat (multiset) and some were absorbed as negatives */
            akv_hash h = r % 7 == 0 && n ? live[akvt_rand(&st) % n]
                         : r % 11 == 0   ? neg[akvt_rand(&st) % cap].h
                                         : akvt_key(seed, next++);
            cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
            live[n++] = h;
        } else if (r < 90) {
            size_t i = akvt_rand(&st) % n;
            cr_assert_eq(akv_filter_remove(f, live[i]), AKV_OK, "remove of a live key refused (op %zu)", op);
            live[i] = live[--n];
        } else if (!(flags & AKV_SSCF_STATIC)) {
            cr_assert_eq(akv_filter_absorb(f, akvt_key(seed ^ 0x77, absorbed++)), AKV_OK);
        }
        if (op % 997 == 0)
            for (size_t i = 0; i < n; i++)
                cr_assert(akv_filter_may_contain(f, live[i]), "false negative at op %zu", op);
    }
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, live[i]), "false negative after churn");
    while (n)
        cr_assert_eq(akv_filter_remove(f, live[--n]), AKV_OK);
    check_zero(f, UINT64_MAX); /* 2× capacity with duplicates: may saturate */
    akv_filter_destroy(f);
    free(live);
    free(neg);
}

Test(sscf, no_false_negatives_under_churn_and_counters_return_to_zero)
{
    static const double bpks[] = {8, 20, 36};
    for (size_t b = 0; b < 3; b++)
        for (uint64_t seed = 1; seed <= 2; seed++)
            for (size_t l = 0; l < N_LAYOUTS; l++)
                churn(bpks[b], layouts[l], seed + 10 * l, 5000,
                      layouts[l] & AKV_SSCF_STATIC ? 100000 : 200000);
    churn(24, AKV_SSCF_RATIO_FLAGS(60), 5, 3000, 60000); /* heavily sealed */
}

/* At capacity the wide layout (sticky at 15) never saturates; the packed
 * one (sticky at 7, and at 5 on sealed counters) only rarely. */
Test(sscf, bulk_build_no_false_negatives)
{
    akv_negative *neg = make_negatives(3, 100000);
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        akv_filter *f = create(20, 100000, layouts[l], neg, 100000);
        for (size_t i = 0; i < 100000; i++)
            cr_assert_eq(akv_filter_add(f, akvt_key(7, i)), AKV_OK);
        akvt_check_no_false_negatives(f, 7, 100000);
        for (size_t i = 0; i < 100000; i++)
            cr_assert_eq(akv_filter_remove(f, akvt_key(7, i)), AKV_OK);
        uint64_t m = described(f, "m");
        check_zero(f, layouts[l] & AKV_SSCF_WIDE ? 0 : m / 10000);
        akv_filter_destroy(f);
    }
    free(neg);
}

static double fpr_of(const akv_filter *f, const akv_negative *neg, size_t from, size_t to)
{
    size_t fp = 0;
    for (size_t i = from; i < to; i++)
        fp += akv_filter_may_contain(f, neg[i].h);
    return (double)fp / (double)(to - from);
}

/* A statistic from the kind's describe() JSON body. */
static uint64_t described(const akv_filter *f, const char *name)
{
    char buf[1024] = "", pat[64];
    cr_assert_gt(f->kind->describe(f, buf, sizeof buf), 0);
    snprintf(pat, sizeof pat, "\"%s\":", name);
    const char *e = strstr(buf, pat);
    cr_assert_not_null(e, "%s missing in %s", name, buf);
    return strtoull(e + strlen(pat), NULL, 10);
}

/* The encoded (costliest) negatives are answered far better than the rest:
 * with the paper's 5% of capacity, and with the default (which encodes
 * more of them, each a little less protected). */
Test(sscf, vulnerable_negatives_are_protected)
{
    const size_t n = 100000, nn = 100000;
    akv_negative *neg = make_negatives(4, nn); /* cost falls with index */
    for (int paper = 1; paper >= 0; paper--) {
        akv_filter *f = create(20, n, paper ? AKV_SSCF_RATIO_FLAGS(5) : 0, neg, nn);
        for (size_t i = 0; i < n; i++)
            akv_filter_insert(f, akvt_key(8, i));
        size_t top = (size_t)described(f, "encoded");
        cr_assert_eq(top, paper ? n / 20 : top);
        double v = fpr_of(f, neg, 0, top), o = fpr_of(f, neg, top, nn);
        cr_log_info("%zu encoded: their FPR %.5f, other negatives %.5f", top, v, o);
        cr_assert_lt(v * (paper ? 20 : 8), o, "vulnerable %.5f vs others %.5f", v, o);
        akv_filter_stats st;
        akv_filter_get_stats(f, &st);
        cr_assert_eq(st.capacity, n);
        akv_filter_destroy(f);
    }
    free(neg);
}

/* Default encoding: every given negative while fewer than 10% of the
 * counters are sealed, then stop (costliest first). */
Test(sscf, default_encoding_seals_a_tenth_of_the_counters)
{
    const size_t n = 20000;
    akv_negative *neg = make_negatives(21, n);
    akv_filter *f = create(20, n, 0, neg, 500);
    cr_assert_eq(described(f, "encoded"), 500, "a few negatives are all encoded");
    akv_filter_destroy(f);
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        uint32_t flags = layouts[l];
        f = create(20, n, flags, neg, n);
        double m = (double)described(f, "m"), k = (double)described(f, "k");
        double enc = (double)described(f, "encoded"), want = -log(0.9) * m / k;
        cr_log_info("flags %u: encoded %.0f of %zu, expected about %.0f", flags, enc, n, want);
        cr_assert(fabs(enc - want) < 0.1 * want, "encoded %.0f, expected about %.0f", enc, want);
        akv_filter_destroy(f);
    }
    f = create(20, n, AKV_SSCF_RATIO_FLAGS(5), neg, n);
    cr_assert_eq(described(f, "encoded"), n / 20, "an explicit ratio is kept");
    akv_filter_destroy(f);
    free(neg);
}

static double weighted_fpr(const akv_filter *f, const akv_negative *neg, size_t nn)
{
    double bad = 0, total = 0;
    for (size_t i = 0; i < nn; i++) {
        total += neg[i].cost;
        bad += akv_filter_may_contain(f, neg[i].h) ? neg[i].cost : 0;
    }
    return bad / total;
}

/* Zipf 1.0 costs, equal memory, mean of 3 seeds. A CBF ignores costs, so
 * its expected weighted FPR is its plain FPR over the negatives (its
 * weighted figure swings with whether the costliest few negatives happen to
 * be false positives); the SSCFs are measured against that. The packed
 * layout must reach the 3x of the paper's abstract; the paper's wide layout
 * measured 2.0-2.9x (docs/filters.md), and over 20 other seed triplets
 * 1.4-2.6x (ada) and 1.9-3.6x (static) against the CBF's weighted figure;
 * the bounds leave room for that spread. */
Test(sscf, beats_cbf_at_equal_memory_on_zipf_costs)
{
    enum { CBF, PACKED, WIDE, WIDE_STATIC, KINDS };
    static const uint32_t flags[KINDS] = {0, 0, AKV_SSCF_WIDE, AKV_SSCF_WIDE | AKV_SSCF_STATIC};
    const size_t n = 100000, nn = 100000;
    double w[KINDS] = {0}, cbf_fpr = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        akv_negative *neg = make_negatives(30 + seed, nn);
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.bits_per_key = 20;
        p.expected_keys = n;
        akv_filter *f[KINDS];
        cr_assert_eq(akv_filter_create(akv_filter_kind_by_name("cbf"), &p, NULL, 0, &f[CBF]), AKV_OK);
        for (int j = PACKED; j < KINDS; j++)
            f[j] = create(20, n, flags[j], neg, nn);
        size_t cbf_bytes = akv_filter_memory(f[CBF]);
        for (int j = 0; j < KINDS; j++) {
            for (size_t i = 0; i < n; i++)
                cr_assert_eq(akv_filter_insert(f[j], akvt_key(40 + seed, i)), AKV_OK);
            cr_assert_leq(akv_filter_memory(f[j]), cbf_bytes + 1, "equal memory");
            w[j] += weighted_fpr(f[j], neg, nn) / 3;
        }
        cbf_fpr += fpr_of(f[CBF], neg, 0, nn) / 3;
        for (int j = 0; j < KINDS; j++)
            akv_filter_destroy(f[j]);
        free(neg);
    }
    cr_log_info(
        "weighted FPR: cbf %.4f (plain FPR %.4f), sscf %.4f (%.2fx), wide %.4f (%.2fx), wide static %.4f "
        "(%.2fx)",
        w[CBF], cbf_fpr, w[PACKED], cbf_fpr / w[PACKED], w[WIDE], cbf_fpr / w[WIDE], w[WIDE_STATIC],
        cbf_fpr / w[WIDE_STATIC]);
    cr_assert_lt(3 * w[PACKED], cbf_fpr, "packed ada-SSCF %.4f vs CBF %.4f", w[PACKED], cbf_fpr);
    cr_assert_gt(w[CBF], 1.25 * w[WIDE], "wide ada-SSCF %.4f vs CBF %.4f", w[WIDE], w[CBF]);
    cr_assert_gt(w[CBF], 1.6 * w[WIDE_STATIC], "wide static SSCF %.4f vs CBF %.4f", w[WIDE_STATIC], w[CBF]);
}

/* A payload written before the packed layout existed (version 1) holds the
 * wide layout and loads as it; version 1 bytes that claim the packed layout
 * are refused. Made here from a version-2 wide payload by relabelling. */
Test(sscf, version1_payloads_load_as_wide)
{
    akv_negative *neg = make_negatives(50, 2000);
    akv_filter *f = create(20, 10000, AKV_SSCF_WIDE, neg, 2000);
    for (size_t i = 0; i < 10000; i++)
        akv_filter_insert(f, akvt_key(51, i));
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    cr_assert_eq(buf[8], 2, "payload version");
    buf[8] = 1;
    akvt_reseal(buf, len);
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK);
    akvt_check_no_false_negatives(g, 51, 10000);
    for (size_t i = 0; i < 2000; i++)
        cr_assert_eq(akv_filter_may_contain(g, neg[i].h), akv_filter_may_contain(f, neg[i].h));
    akv_filter_destroy(g);
    buf[AKV_FILTER_HEADER_BYTES + 2] = 1; /* layout field: packed */
    akvt_reseal(buf, len);
    g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_ECORRUPT);
    cr_assert_null(g);
    free(buf);
    akv_filter_destroy(f);
    free(neg);
}

/* Loads refuse what no filter writes: a marked counter in a static packed
 * filter, and payload version 0. The counter nibbles start 84 bytes into
 * the payload (u8, u8, u16, two u64 sizes, eight u64 statistics). */
Test(sscf, load_rejects_marks_in_static_filters_and_version_0)
{
    akv_filter *f = create(20, 1000, AKV_SSCF_STATIC, NULL, 0);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK, "untouched payload loads");
    akv_filter_destroy(g);
    buf[AKV_FILTER_HEADER_BYTES + 84] = 8; /* counter 0: marked, one key */
    akvt_reseal(buf, len);
    g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_ECORRUPT);
    cr_assert_null(g);
    buf[AKV_FILTER_HEADER_BYTES + 84] = 0;
    buf[8] = 0; /* payload version 0 */
    akvt_reseal(buf, len);
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_ECORRUPT);
    cr_assert_null(g);
    free(buf);
    akv_filter_destroy(f);
}

/* Packed codes: an absorbed negative over a counter holding one key is
 * marked and seals when that key leaves; the query then says no. */
Test(sscf, packed_marked_counter_seals_when_it_empties)
{
    akv_filter *f = create(20, 1000, 0, NULL, 0);
    akv_hash key = akvt_key(60, 0);
    cr_assert_eq(akv_filter_insert(f, key), AKV_OK);
    cr_assert_eq(akv_filter_absorb(f, key), AKV_OK); /* its counters hold one key each */
    cr_assert(akv_filter_may_contain(f, key), "a present key stays visible after being absorbed");
    cr_assert_eq(akv_filter_remove(f, key), AKV_OK);
    cr_assert_not(akv_filter_may_contain(f, key), "the learned negative is sealed once its counters empty");
    check_zero(f, 0);
    akv_filter_destroy(f);
}

/* ada-SSCF: absorbed negatives seal as the keys over them churn away. */
Test(sscf, absorbed_negatives_seal_as_keys_churn)
{
    const size_t n = 50000, na = 2500;
    akv_filter *f = create(20, n, 0, NULL, 0);
    for (size_t i = 0; i < n; i++)
        akv_filter_insert(f, akvt_key(10, i));
    akv_negative *learned = make_negatives(11, na);
    double before = fpr_of(f, learned, 0, na);
    for (size_t i = 0; i < na; i++)
        cr_assert_eq(akv_filter_absorb(f, learned[i].h), AKV_OK);
    for (size_t i = 0; i < n; i++) { /* replace every key */
        cr_assert_eq(akv_filter_remove(f, akvt_key(10, i)), AKV_OK);
        cr_assert_eq(akv_filter_insert(f, akvt_key(12, i)), AKV_OK);
    }
    akvt_check_no_false_negatives(f, 12, n);
    double after = fpr_of(f, learned, 0, na);
    cr_log_info("learned negatives FPR %.4f -> %.4f", before, after);
    cr_assert_lt(after * 5, before);
    akv_filter_stats st;
    akv_filter_get_stats(f, &st);
    cr_assert_eq(st.absorbed, na);
    akv_filter_destroy(f);
    free(learned);
}

Test(sscf, without_negatives_is_a_counting_bloom_filter)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.bits_per_key = 24;
    akv_filter *f = akvt_build("sscf", &p, 2, 80000);
    akvt_check_no_false_negatives(f, 2, 80000);
    akvt_check_fpr_theory(f, 2, 200000, 0.10);
    akv_filter_destroy(f);
}

Test(sscf, saturation_is_sticky)
{
    akv_filter *f = create(16, 1000, 0, NULL, 0);
    akv_hash h = akvt_key(13, 0);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
    for (size_t i = 1; i < 500; i++)
        akv_filter_insert(f, akvt_key(13, i));
    for (int i = 0; i < 40; i++)
        cr_assert_eq(akv_filter_remove(f, h), AKV_OK, "saturated counters keep accepting removes");
    for (size_t i = 1; i < 500; i++)
        cr_assert(akv_filter_may_contain(f, akvt_key(13, i)));
    akv_filter_destroy(f);
}

Test(sscf, remove_of_absent_key_is_refused)
{
    akv_filter *f = create(20, 1000, 0, NULL, 0);
    for (size_t i = 0; i < 100; i++)
        akv_filter_insert(f, akvt_key(14, i));
    size_t refused = 0;
    for (size_t i = 0; i < 1000; i++)
        refused += akv_filter_remove(f, akvt_key(15, i)) == AKV_NOTFOUND;
    cr_assert_gt(refused, 900);
    akv_filter_destroy(f);
}

Test(sscf, static_mode_has_no_absorb)
{
    akv_filter *f = create(20, 1000, AKV_SSCF_STATIC, NULL, 0);
    cr_assert_eq(akv_filter_absorb(f, akvt_key(1, 1)), AKV_ENOTSUP);
    akv_filter_destroy(f);
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.flags = AKV_SSCF_RATIO_FLAGS(101);
    cr_assert_eq(akv_filter_create(kind(), &p, NULL, 0, &f), AKV_EINVAL);
}

Test(sscf, serialization_round_trip_and_corruption)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    akv_filter *f = akvt_build("sscf", &p, 4, 5000);
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akv_filter_destroy(f);
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        uint32_t flags = layouts[l];
        akv_negative *neg = make_negatives(16, 4000);
        f = create(18, 5001, flags, neg, 4000);
        for (size_t i = 0; i < 5001; i++)
            akv_filter_insert(f, akvt_key(4, i));
        for (size_t i = 0; i < 300 && !(flags & AKV_SSCF_STATIC); i++)
            akv_filter_absorb(f, akvt_key(17, i));
        akvt_check_serialization(f, 4, 5001, 20000, 300);
        akv_filter_destroy(f);
        free(neg);
    }
}

/* ---- concurrency: lock-free queries against one mutating thread ---------- */

typedef struct conc {
    akv_filter *f;
    size_t stable, rounds;
    atomic_bool stop;
    atomic_size_t misses;
} conc;

static void *writer(void *arg)
{
    conc *c = arg;
    for (size_t r = 0; r < c->rounds; r++) {
        for (size_t i = 0; i < 2000; i++)
            akv_filter_insert(c->f, akvt_key(31 + r, i));
        for (size_t i = 0; i < 20; i++)
            akv_filter_absorb(c->f, akvt_key(40, r * 20 + i));
        for (size_t i = 0; i < 2000; i++)
            akv_filter_remove(c->f, akvt_key(31 + r, i));
    }
    atomic_store(&c->stop, true);
    return NULL;
}

static void *reader(void *arg)
{
    conc *c = arg;
    uint64_t st = (uint64_t)(uintptr_t)arg;
    while (!atomic_load(&c->stop)) {
        size_t i = akvt_rand(&st) % c->stable;
        if (!akv_filter_may_contain(c->f, akvt_key(30, i)))
            atomic_fetch_add(&c->misses, 1);
        akv_filter_may_contain(c->f, akvt_key(31, i)); /* racing keys: any answer */
    }
    return NULL;
}

Test(sscf, concurrent_queries_never_miss)
{
    bool slow = getenv("AKV_SANITIZER") && *getenv("AKV_SANITIZER");
    akv_negative *neg = make_negatives(41, 2000);
    conc c = {.f = create(12, 20000, 0, neg, 2000), .stable = 10000, .rounds = slow ? 100 : 1000};
    for (size_t i = 0; i < c.stable; i++)
        akv_filter_insert(c.f, akvt_key(30, i));
    pthread_t w, r[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&r[i], NULL, reader, &c);
    pthread_create(&w, NULL, writer, &c);
    pthread_join(w, NULL);
    for (int i = 0; i < 3; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(atomic_load(&c.misses), 0, "a stable key was missed during concurrent mutation");
    akvt_check_no_false_negatives(c.f, 30, c.stable);
    akv_filter_destroy(c.f);
    free(neg);
}

Test(sscf, load_survives_payload_damage)
{
    for (size_t l = 0; l < N_LAYOUTS; l++) {
        akv_negative *neg = make_negatives(18, 500);
        akv_filter *f = create(16, 2001, layouts[l], neg, 500);
        for (size_t i = 0; i < 2001; i++)
            akv_filter_insert(f, akvt_key(19, i));
        akvt_check_payload_damage(f, 19, 2000);
        akv_filter_destroy(f);
        free(neg);
    }
}
