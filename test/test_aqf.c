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
#include <xxhash.h>

#include "filters/aqf.h"
#include "filters/qf_core.h"
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
static void step(akv_filter *f, akvi_memrevmap *rm, model *m, uint64_t *st, unsigned bits, uint64_t *adapted)
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
        cr_assert_eq(akvi_memrevmap_insert(rm, h), AKV_OK);
        m->v[m->n++] = h;
    } else if (op < 6 && m->n) {
        size_t i = akvt_rand(st) % m->n;
        cr_assert_eq(akv_filter_remove(f, m->v[i]), AKV_OK);
        cr_assert_eq(akvi_memrevmap_remove(rm, m->v[i]), AKV_OK);
        m->v[i] = m->v[--m->n];
    } else {
        akv_hash y = crowded(st, bits);
        if (model_has(m, y) || !akv_filter_may_contain(f, y))
            return;
        int rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
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
        akvi_aqf_info info;
        akvi_aqf_info_get(f, &info);
        bits = info.q + info.r;
        akvi_memrevmap *rm = NULL;
        cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm), AKV_OK);
        model m = {calloc(60, sizeof(akv_hash)), 0, 58};
        uint64_t adapted = 0;
        for (int i = 0; i < 4000; i++) {
            step(f, rm, &m, &st, bits, &adapted);
            check_members(f, &m);
            if (i % 50 == 0)
                cr_assert_eq(akvi_aqf_validate(f), AKV_OK, "seed %llu step %d", (unsigned long long)seed, i);
        }
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        cr_assert_gt(adapted, 10);
        free(m.v);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

Test(aqf, random_ops_against_model_uniform)
{
    uint64_t st = 42;
    akv_filter *f = empty_aqf(20000, 6);
    akvi_memrevmap *rm = NULL;
    cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm), AKV_OK);
    model m = {calloc(20000, sizeof(akv_hash)), 0, 18000};
    uint64_t adapted = 0;
    for (int i = 0; i < 40000; i++) {
        uint64_t op = akvt_rand(&st) % 10;
        if (op < 5 && m.n < m.cap) {
            akv_hash h = {akvt_rand(&st), akvt_rand(&st)};
            cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
            akvi_memrevmap_insert(rm, h);
            m.v[m.n++] = h;
        } else if (op < 7 && m.n) {
            size_t j = akvt_rand(&st) % m.n;
            cr_assert_eq(akv_filter_remove(f, m.v[j]), AKV_OK);
            akvi_memrevmap_remove(rm, m.v[j]);
            m.v[j] = m.v[--m.n];
        } else {
            akv_hash y = {akvt_rand(&st), akvt_rand(&st)};
            if (akv_filter_may_contain(f, y)) {
                cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
                cr_assert_not(akv_filter_may_contain(f, y));
                adapted++;
            }
        }
    }
    check_members(f, &m);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    akv_filter_stats s;
    akv_filter_get_stats(f, &s);
    cr_assert_eq(s.adaptations, adapted);
    cr_assert_gt(s.adapt_bits, 0);
    free(m.v);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* Shadowing-hazard regression (docs/filters.md, "Rank order, the shadowing
 * hazard, ..."): two keys in one minirun with identical
 * unextended fingerprints, queried in both orders, then a false positive
 * on that minirun adapted, then a third key whose hash matches the first
 * key's extended fingerprint, then removals. No step may lose a key, and
 * adapt must extend each record with its own key's bits. */
Test(aqf, shadowing_hazard_regression)
{
    akv_filter *f = empty_aqf(1000, 7);
    akvi_aqf_info info;
    akvi_aqf_info_get(f, &info);
    unsigned mb = info.q + info.r; /* minirun bits at the top of h.hi */
    uint64_t mid = 0x5a5a5a5a5a5a5a5aULL & ~(~0ULL >> mb);
    akv_hash k1 = {mid | 1, 1ULL << 40}, k2 = {mid | 1, 2ULL << 40}; /* differ only in lo */
    akv_hash k3 = {mid | (1ULL << (63 - mb)), 0}; /* shares the minirun, differs in ext_1 */
    akvi_memrevmap *rm = NULL;
    cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm), AKV_OK);
    cr_assert_eq(akv_filter_insert(f, k2), AKV_OK);
    cr_assert_eq(akv_filter_insert(f, k1), AKV_OK);
    akvi_memrevmap_insert(rm, k1);
    akvi_memrevmap_insert(rm, k2);
    cr_assert(akv_filter_may_contain(f, k2));
    cr_assert(akv_filter_may_contain(f, k1));
    /* A stored key is never "adapted away". */
    cr_assert_eq(akv_filter_adapt(f, k1, akvi_memrevmap_revmap(rm)), AKV_NOTFOUND);
    /* A false positive sharing ~100 bits with k1 and k2. */
    akv_hash y = {mid | 1, 3ULL << 40};
    cr_assert(akv_filter_may_contain(f, y));
    cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
    cr_assert_not(akv_filter_may_contain(f, y));
    cr_assert(akv_filter_may_contain(f, k1));
    cr_assert(akv_filter_may_contain(f, k2));
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    /* k3 lands in the now-extended minirun: placed by its own bits. */
    cr_assert_eq(akv_filter_insert(f, k3), AKV_OK);
    akvi_memrevmap_insert(rm, k3);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    akv_hash ks[3] = {k1, k2, k3};
    for (int i = 0; i < 3; i++)
        cr_assert(akv_filter_may_contain(f, ks[i]));
    /* Another FP matching the group: every matching record is adapted with its owner's bits. */
    akv_hash y2 = {mid | 1, 4ULL << 40};
    if (akv_filter_may_contain(f, y2))
        cr_assert_eq(akv_filter_adapt(f, y2, akvi_memrevmap_revmap(rm)), AKV_OK);
    cr_assert_not(akv_filter_may_contain(f, y2));
    /* A reverse map that disagrees with the filter is refused, filter unchanged. */
    akvi_memrevmap_remove(rm, k2);
    akv_hash y3 = {mid | 1, 5ULL << 40};
    if (akv_filter_may_contain(f, y3))
        cr_assert_eq(akv_filter_adapt(f, y3, akvi_memrevmap_revmap(rm)), AKV_ECORRUPT);
    akvi_memrevmap_insert(rm, k2);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(akv_filter_remove(f, ks[i]), AKV_OK);
        for (int j = i + 1; j < 3; j++)
            cr_assert(akv_filter_may_contain(f, ks[j]), "removing %d lost %d", i, j);
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    }
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* Identical hashes (duplicates) are separate records; removing one keeps the other. */
Test(aqf, duplicates)
{
    akv_filter *f = empty_aqf(100, 8);
    akv_hash h = {0x1234567890abcdefULL, 77};
    cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
    cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
    cr_assert_eq(akv_filter_remove(f, h), AKV_OK);
    cr_assert(akv_filter_may_contain(f, h));
    cr_assert_eq(akv_filter_remove(f, h), AKV_OK);
    cr_assert_not(akv_filter_may_contain(f, h));
    cr_assert_eq(akv_filter_remove(f, h), AKV_NOTFOUND);
    akv_filter_destroy(f);
}

static akv_filter *build_aqf(uint64_t seed, size_t n, uint32_t r, akv_hash **keys, akvi_memrevmap **rm)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.remainder_bits = r;
    akv_filter *f = akvt_build("aqf", &p, seed, n);
    *keys = akvt_keys(seed, n);
    cr_assert_eq(akvi_memrevmap_create(*keys, n, rm), AKV_OK);
    return f;
}

/* Fix a stream of false positives; none of them ever comes back. */
Test(aqf, adapt_fixes_and_is_monotonic)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build_aqf(3, 50000, 6, &keys, &rm);
    akv_hash *fixed = malloc(20000 * sizeof *fixed);
    size_t nf = 0;
    for (uint64_t i = 0; i < 400000 && nf < 20000; i++) {
        akv_hash y = akvt_key(999, i);
        if (!akv_filter_may_contain(f, y))
            continue;
        cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
        cr_assert_not(akv_filter_may_contain(f, y));
        fixed[nf++] = y;
        if (nf % 1000 == 0)
            for (size_t j = 0; j < nf; j++)
                cr_assert_not(akv_filter_may_contain(f, fixed[j]), "fixed FP %zu came back", j);
    }
    cr_assert_gt(nf, 1000);
    for (size_t j = 0; j < nf; j++)
        cr_assert_not(akv_filter_may_contain(f, fixed[j]));
    akvt_check_no_false_negatives(f, 3, 50000);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    /* ~1 + 1/(2^r - 1) extension slots per adaptation (docs/filters.md,
     * "Rank order, the shadowing hazard, ...") */
    akvi_aqf_info info;
    akvi_aqf_info_get(f, &info);
    double per = (double)info.ext_slots / (double)info.adaptations;
    cr_assert(per >= 1.0 && per < 1.1, "%.3f extension slots per adaptation", per);
    free(fixed);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

Test(aqf, fpr_matches_exact_formula)
{
    for (uint32_t r = 4; r <= 10; r += 3) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.remainder_bits = r;
        akv_filter *f = akvt_build("aqf", &p, r, 100000);
        akvt_check_no_false_negatives(f, r, 100000);
        akvt_check_fpr_theory(f, r, 400000, 0.05);
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        akv_filter_destroy(f);
    }
}

/* Bulk load of sorted hashes = incremental inserts in any order, byte for byte. */
static void serialized(const akv_filter *f, uint8_t **buf, size_t *len)
{
    cr_assert_eq(akv_filter_serialize(f, buf, len), AKV_OK);
}

/* One key at a time (the in-place insert: its word-wise shift, the run
 * start from home's block) builds byte for byte what the bulk load writes,
 * for remainder widths from 1 to 32 bits, at 90 % of 17 067 home slots and
 * at 93.75 % of 2^14 (long clusters, shifts across blocks); the
 * hardware build and the portable one. */
Test(aqf, bulk_load_equals_incremental)
{
    const char *kinds[2] = {"qf", "aqf"};
    const uint32_t rs[] = {1, 4, 9, 17, 32};
    const double lfs[] = {0.9, 0.9375};
    for (int kk = 0; kk < 4; kk++) /* qf, aqf; the hardware build, then the portable one */
        for (size_t ri = 0; ri < sizeof rs / sizeof rs[0]; ri++)
            for (int li = 0; li < 2; li++) {
                akvi_qf_force_portable(kk >= 2);
                size_t n = 15360;
                akv_hash *keys = akvt_keys(5 + ri, n);
                akv_filter_params p;
                akv_filter_params_init(&p);
                p.expected_keys = n;
                p.remainder_bits = rs[ri]; /* small r: many shared miniruns */
                p.load_factor = lfs[li];
                akv_filter *inc = NULL, *bulk = NULL;
                cr_assert_eq(akv_filter_create(K(kinds[kk % 2]), &p, NULL, 0, &inc), AKV_OK);
                cr_assert_eq(akv_filter_finish(inc), AKV_OK);
                akvi_aqf_info info;
                akvi_aqf_info_get(inc, &info);
                cr_assert_eq(info.slots, li ? 16384u : 17067u);
                for (size_t i = 0; i < n; i++)
                    cr_assert_eq(akv_filter_insert(inc, keys[i]), AKV_OK, "%s r=%u key %zu", kinds[kk % 2],
                                 rs[ri], i);
                cr_assert_eq(akvi_aqf_validate(inc), AKV_OK);
                cr_assert_eq(akvi_aqf_bulk_load(K(kinds[kk % 2]), &p, keys, n, &bulk),
                             AKV_EINVAL); /* unsorted */
                akvi_qf_sort(keys, n);
                cr_assert_eq(akvi_aqf_bulk_load(K(kinds[kk % 2]), &p, keys, n, &bulk), AKV_OK);
                cr_assert_eq(akvi_aqf_validate(bulk), AKV_OK);
                uint8_t *a, *b;
                size_t la, lb;
                serialized(inc, &a, &la);
                serialized(bulk, &b, &lb);
                cr_assert_eq(la, lb);
                cr_assert(memcmp(a, b, la) == 0, "%s r=%u fill %.2f: bulk load differs from inserts",
                          kinds[kk % 2], rs[ri], lfs[li]);
                free(a), free(b);
                akv_filter_destroy(bulk);
                akv_filter_destroy(inc);
                free(keys);
            }
    akvi_qf_force_portable(false);
}

/* Merge without keys answers like a build from the union (members), keeps
 * invariants; the exact merge also keeps every adaptation. */
Test(aqf, merge_answers_like_union)
{
    size_t n = 20000;
    akv_hash *ka, *kb;
    akvi_memrevmap *ra, *rb;
    akv_filter *a = build_aqf(11, n, 6, &ka, &ra), *b = build_aqf(12, n, 6, &kb, &rb);
    akv_hash fixed[64];
    size_t nf = 0;
    for (uint64_t i = 0; nf < 64; i++) {
        akv_hash y = akvt_key(77, i);
        akv_filter *t = (i & 1) ? a : b;
        akvi_memrevmap *rt = (i & 1) ? ra : rb;
        if (akv_filter_may_contain(a, y) || akv_filter_may_contain(b, y)) {
            if (akv_filter_may_contain(t, y) && akv_filter_adapt(t, y, akvi_memrevmap_revmap(rt)) == AKV_OK &&
                !akv_filter_may_contain(a, y) && !akv_filter_may_contain(b, y))
                fixed[nf++] = y;
        }
    }
    akvi_aqf_info ia;
    akvi_aqf_info_get(a, &ia);
    cr_assert_eq(akvi_aqf_merge(a, b, ia.q, &(akv_filter *){NULL}), AKV_EFULL); /* 2n > 2^q slots */
    for (uint32_t d = 1; d <= 2; d++) {
        akv_filter *m = NULL;
        cr_assert_eq(akvi_aqf_merge(a, b, ia.q + d, &m), AKV_OK);
        cr_assert_eq(akvi_aqf_validate(m), AKV_OK);
        akvt_check_no_false_negatives(m, 11, n);
        akvt_check_no_false_negatives(m, 12, n);
        cr_assert_eq(m->n_keys, 2 * n);
        akv_filter_destroy(m);
    }
    akv_filter *m = NULL;
    cr_assert_eq(akvi_aqf_merge_exact(a, akvi_memrevmap_revmap(ra), b, akvi_memrevmap_revmap(rb), 0, 0, &m),
                 AKV_OK);
    cr_assert_eq(akvi_aqf_validate(m), AKV_OK);
    akvt_check_no_false_negatives(m, 11, n);
    akvt_check_no_false_negatives(m, 12, n);
    for (size_t j = 0; j < nf; j++)
        cr_assert_not(akv_filter_may_contain(m, fixed[j]), "exact merge forgot adaptation %zu", j);
    /* Resize the merged filter back down and up: still exact. */
    akv_hash *both = malloc(2 * n * sizeof *both);
    memcpy(both, ka, n * sizeof *both);
    memcpy(both + n, kb, n * sizeof *both);
    akvi_memrevmap *rboth;
    akvi_memrevmap_create(both, 2 * n, &rboth);
    akvi_aqf_info im;
    akvi_aqf_info_get(m, &im);
    /* grow by one quotient bit, then shrink back: both directions */
    akv_filter *cur = m;
    uint32_t qs[2] = {im.q + 1, im.q};
    for (int t = 0; t < 2; t++) {
        akv_filter *z = NULL;
        int rc = akvi_aqf_resize(cur, qs[t], 0, akvi_memrevmap_revmap(rboth), &z);
        cr_assert_eq(rc, AKV_OK, "resize to q=%u: %s", qs[t], akv_strerror(rc));
        cr_assert_eq(akvi_aqf_validate(z), AKV_OK);
        akvt_check_no_false_negatives(z, 11, n);
        akvt_check_no_false_negatives(z, 12, n);
        for (size_t j = 0; t == 0 && j < nf; j++) /* growing is exact */
            cr_assert_not(akv_filter_may_contain(z, fixed[j]), "resize forgot adaptation %zu", j);
        if (cur != m)
            akv_filter_destroy(cur);
        cur = z;
    }
    akv_filter_destroy(cur);
    akvi_memrevmap_destroy(rboth);
    free(both);
    akv_filter_destroy(m);
    free(ka), free(kb);
    akvi_memrevmap_destroy(ra), akvi_memrevmap_destroy(rb);
    akv_filter_destroy(a), akv_filter_destroy(b);
}

/* Static YES/NO (paper §4.3): every listed negative is filtered. */
Test(aqf, yes_no_build_filters_every_negative)
{
    size_t ny = 50000, nn = 200000;
    akv_hash *yes = akvt_keys(21, ny), *no = akvt_keys(22, nn);
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.remainder_bits = 5;
    akv_filter *f = NULL;
    size_t unfixable = 99;
    cr_assert_eq(akvi_aqf_build_yesno(&p, yes, ny, no, nn, &f, &unfixable), AKV_OK);
    cr_assert_eq(unfixable, 0);
    for (size_t i = 0; i < ny; i++)
        cr_assert(akv_filter_may_contain(f, yes[i]));
    for (size_t i = 0; i < nn; i++)
        cr_assert_not(akv_filter_may_contain(f, no[i]), "negative %zu still positive", i);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    /* random other keys still see about the built FPR */
    double fpr = akvt_measure_fpr(f, 23, 200000);
    cr_assert_lt(fpr, 0.05);
    akv_filter_destroy(f);
    /* a NO hash equal to a YES hash cannot be filtered and is reported */
    cr_assert_eq(akvi_aqf_build_yesno(&p, yes, ny, yes, 10, &f, &unfixable), AKV_OK);
    cr_assert_eq(unfixable, 10);
    akv_filter_destroy(f);
    free(yes), free(no);
}

Test(aqf, serialization_round_trip_and_corruption)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build_aqf(4, 5000, 7, &keys, &rm);
    for (uint64_t i = 0; i < 200000; i++) {
        akv_hash y = akvt_key(31, i);
        if (akv_filter_may_contain(f, y))
            akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
    }
    akvt_check_serialization(f, 4, 5000, 20000, 300);
    akv_filter_destroy(f);
    free(keys);
    akvi_memrevmap_destroy(rm);
}

/* Exact delete with shortening: no false negatives, deleted key filtered. */
Test(aqf, remove_exact_shortens)
{
    akv_filter *f = empty_aqf(200, 3);
    akvi_memrevmap *rm;
    akvi_memrevmap_create(NULL, 0, &rm);
    uint64_t st = 5;
    model m = {calloc(200, sizeof(akv_hash)), 0, 150};
    akvi_aqf_info info;
    akvi_aqf_info_get(f, &info);
    for (int i = 0; i < 3000; i++) {
        if (m.n < m.cap && (akvt_rand(&st) & 1)) {
            akv_hash h = crowded(&st, info.q + info.r);
            if (model_has(&m, h) || akv_filter_insert(f, h) != AKV_OK)
                continue;
            akvi_memrevmap_insert(rm, h);
            m.v[m.n++] = h;
        } else if (m.n && (akvt_rand(&st) & 1)) {
            size_t j = akvt_rand(&st) % m.n;
            cr_assert_eq(akvi_aqf_remove_exact(f, m.v[j], akvi_memrevmap_revmap(rm), true), AKV_OK);
            akvi_memrevmap_remove(rm, m.v[j]);
            m.v[j] = m.v[--m.n];
        } else {
            akv_hash y = crowded(&st, info.q + info.r);
            if (!model_has(&m, y) && akv_filter_may_contain(f, y))
                akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
        }
        check_members(f, &m);
        if (i % 100 == 0)
            cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    }
    free(m.v);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* Queries race a writer that inserts, adapts and removes: the stable keys
 * must answer "maybe" on every single query (run under ThreadSanitizer by
 * `make tsan`). */
typedef struct race {
    akv_filter *f;
    akv_hash *stable;
    size_t n;
    int stop;
    uint64_t misses;
} race;

static void *reader(void *arg)
{
    race *r = arg;
    uint64_t st = (uint64_t)(uintptr_t)arg, miss = 0;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE))
        for (int i = 0; i < 1000; i++)
            miss += !akv_filter_may_contain(r->f, r->stable[akvt_rand(&st) % r->n]);
    __atomic_fetch_add(&r->misses, miss, __ATOMIC_RELAXED);
    return NULL;
}

/* Two reader threads querying r->stable until race_stop. */
static void race_start(race *r, pthread_t th[2])
{
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, reader, r);
}

/* Stop the readers; their false negatives (must be 0). */
static uint64_t race_stop(race *r, pthread_t th[2])
{
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    return r->misses;
}

Test(aqf, concurrent_queries_never_false_negative)
{
    size_t n = 20000;
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build_aqf(8, n, 5, &keys, &rm);
    race r = {f, keys, n, 0, 0};
    pthread_t th[2];
    race_start(&r, th);
    uint64_t st = 17;
    akv_hash *dyn = malloc(4000 * sizeof *dyn);
    size_t nd = 0;
    for (int i = 0; i < 20000; i++) {
        uint64_t op = akvt_rand(&st) % 3;
        if (op == 0 && nd < 4000) {
            akv_hash h = {akvt_rand(&st), akvt_rand(&st)};
            if (akv_filter_insert(f, h) == AKV_OK) {
                akvi_memrevmap_insert(rm, h);
                dyn[nd++] = h;
            }
        } else if (op == 1 && nd) {
            size_t j = akvt_rand(&st) % nd;
            cr_assert_eq(akv_filter_remove(f, dyn[j]), AKV_OK);
            akvi_memrevmap_remove(rm, dyn[j]);
            dyn[j] = dyn[--nd];
        } else {
            akv_hash y = {akvt_rand(&st), akvt_rand(&st)};
            if (akv_filter_may_contain(f, y))
                cr_assert_eq(akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm)), AKV_OK);
        }
    }
    uint64_t misses = race_stop(&r, th);
    cr_assert_eq(misses, 0, "%llu false negatives under concurrency", (unsigned long long)misses);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    free(dyn);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* Refill: a full filter rebuilt in place from its keys keeps every key and
 * its memory, rejects the negatives it was given, forgets the rest of what
 * it learned, and has room to adapt again. Seeded, three seeds. */
Test(aqf, refill_frees_room_keeps_keys_and_memory)
{
    enum { N = 20000, HOT = 200 };
    for (uint64_t seed = 1; seed <= 3; seed++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.bits_per_key = 12;
        akv_filter *f = akvt_build("aqf", &p, seed, N);
        akv_hash *keys = akvt_keys(seed, N);
        akvi_memrevmap *rm;
        cr_assert_eq(akvi_memrevmap_create(keys, N, &rm), AKV_OK);
        /* adapt to fresh false positives until the filter is full */
        size_t cap = 4 * N, nf = 0;
        akv_hash *fixed = malloc(cap * sizeof *fixed);
        int rc = AKV_OK;
        for (uint64_t i = 0; rc != AKV_EFULL && nf < cap; i++) {
            akv_hash y = akvt_key(1000 + seed, i);
            if (!akv_filter_may_contain(f, y))
                continue;
            rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
            if (rc == AKV_OK)
                fixed[nf++] = y;
        }
        cr_assert_eq(rc, AKV_EFULL, "seed %llu: %zu adaptations and still room", (unsigned long long)seed,
                     nf);
        cr_assert_gt(nf, 2 * HOT);
        size_t mem = akv_filter_memory(f);

        /* the last HOT fixed keys are the hot negatives handed to refill */
        akv_negative neg[HOT];
        for (size_t i = 0; i < HOT; i++)
            neg[i] = (akv_negative){fixed[nf - HOT + i], 1.0};
        cr_assert_eq(akv_filter_refill(f, keys, N, neg, HOT), AKV_OK);
        cr_assert_eq(akv_filter_memory(f), mem, "refill changed the memory");
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        akvt_check_no_false_negatives(f, seed, N);
        for (size_t i = 0; i < HOT; i++)
            cr_assert_not(akv_filter_may_contain(f, neg[i].h), "hot negative %zu passes after refill", i);
        size_t back = 0;
        for (size_t i = 0; i < nf - HOT; i++)
            back += akv_filter_may_contain(f, fixed[i]);
        cr_assert_gt(back, (nf - HOT) * 9 / 10, "only %zu of %zu older adaptations forgotten", back,
                     nf - HOT);
        /* room again: a fresh false positive is fixed */
        rc = AKV_NOTFOUND;
        for (uint64_t i = 0; rc != AKV_OK && i < 100000; i++) {
            akv_hash y = akvt_key(5000 + seed, i);
            if (akv_filter_may_contain(f, y))
                rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
        }
        cr_assert_eq(rc, AKV_OK, "no adaptation after a refill: %s", akv_strerror(rc));
        akvt_check_no_false_negatives(f, seed, N);
        free(fixed);
        free(keys);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

Test(aqf, refill_errors)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    akv_filter *f = akvt_build("aqf", &p, 4, 1000);
    akv_hash *many = akvt_keys(4, 3000);
    cr_assert_eq(akv_filter_refill(NULL, many, 1000, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akv_filter_refill(f, NULL, 1000, NULL, 0), AKV_EINVAL);
    cr_assert_eq(akv_filter_refill(f, many, 1000, NULL, 5), AKV_EINVAL);
    /* more keys than the table was built for */
    cr_assert_eq(akv_filter_refill(f, many, 3000, NULL, 0), AKV_EFULL);
    akvt_check_no_false_negatives(f, 4, 1000);
    cr_assert_eq(akv_filter_refill(f, many, 1000, NULL, 0), AKV_OK);
    akvt_check_no_false_negatives(f, 4, 1000);
    /* a kind without refill, and a filter not finished */
    akv_filter *b = akvt_build("bloom", &p, 4, 1000);
    cr_assert_eq(akv_filter_refill(b, many, 1000, NULL, 0), AKV_ENOTSUP);
    akv_filter *u = NULL;
    p.expected_keys = 1000;
    cr_assert_eq(akv_filter_create(K("aqf"), &p, NULL, 0, &u), AKV_OK);
    cr_assert_eq(akv_filter_refill(u, many, 10, NULL, 0), AKV_EINVAL);
    akv_filter_destroy(u);
    akv_filter_destroy(b);
    akv_filter_destroy(f);
    free(many);
}

/* Queries racing refills (and adaptations between them) never miss a key. */
Test(aqf, refill_races_queries_without_false_negatives)
{
    size_t n = 20000;
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build_aqf(9, n, 5, &keys, &rm);
    race r = {f, keys, n, 0, 0};
    pthread_t th[2];
    race_start(&r, th);
    uint64_t st = 29;
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 500; i++) {
            akv_hash y = {akvt_rand(&st), akvt_rand(&st)};
            if (akv_filter_may_contain(f, y)) {
                int rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
                cr_assert(rc == AKV_OK || rc == AKV_EFULL, "%s", akv_strerror(rc));
            }
        }
        cr_assert_eq(akv_filter_refill(f, keys, n, NULL, 0), AKV_OK);
    }
    uint64_t misses = race_stop(&r, th);
    cr_assert_eq(misses, 0, "%llu false negatives while refilling", (unsigned long long)misses);
    cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* A damaged payload with a recomputed checksum (a forged file): load must
 * validate the structure itself and never crash or accept a broken table. */
Test(aqf, forged_payload_is_validated)
{
    akv_hash *keys;
    akvi_memrevmap *rm;
    akv_filter *f = build_aqf(9, 3000, 6, &keys, &rm);
    for (uint64_t i = 0; i < 50000; i++) {
        akv_hash y = akvt_key(41, i);
        if (akv_filter_may_contain(f, y))
            akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
    }
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    uint8_t *copy = malloc(len);
    uint64_t st = 3;
    size_t accepted = 0;
    for (int t = 0; t < 400; t++) {
        memcpy(copy, buf, len);
        size_t pos = AKV_FILTER_HEADER_BYTES + akvt_rand(&st) % (len - AKV_FILTER_HEADER_BYTES - 8);
        copy[pos] ^= (uint8_t)(1u << (akvt_rand(&st) & 7));
        uint64_t sum = XXH64(copy, len - 8, 0);
        for (int i = 0; i < 8; i++)
            copy[len - 8 + i] = (uint8_t)(sum >> (8 * i));
        akv_filter *g = NULL;
        int rc = akv_filter_deserialize(copy, len, &g);
        cr_assert(rc == AKV_OK || rc == AKV_ECORRUPT, "rc %d", rc);
        if (rc == AKV_OK) { /* a flip the format cannot see (e.g. a counter field) */
            cr_assert_eq(akvi_aqf_validate(g), AKV_OK);
            accepted++;
            akv_filter_destroy(g);
        }
    }
    /* At 0.9 fill about two thirds of the payload are remainder bits of
     * used slots; a flip there is another valid fingerprint. */
    cr_assert_lt(accepted, 280, "accepted %zu", accepted);
    free(copy);
    free(buf);
    free(keys);
    akvi_memrevmap_destroy(rm);
    akv_filter_destroy(f);
}

/* The same random operations on slot counts that are not powers of two:
 * minirun owners come from an h.hi interval (two prefix scans). */
Test(aqf, random_ops_against_model_crowded_any_size)
{
    static const uint64_t sizes[] = {80, 150, 333};
    for (uint64_t seed = 1; seed <= 6; seed++) {
        uint64_t st = seed * 104729;
        uint64_t n = sizes[seed % 3];
        akv_filter *f = empty_aqf(n, 3 + (uint32_t)(seed % 2));
        akvi_aqf_info info;
        akvi_aqf_info_get(f, &info);
        cr_assert_neq(info.slots & (info.slots - 1), 0, "want a slot count that is no power of two");
        akvi_memrevmap *rm = NULL;
        cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm), AKV_OK);
        model m = {calloc(n + 2, sizeof(akv_hash)), 0, n * 9 / 10};
        uint64_t adapted = 0;
        for (int i = 0; i < 4000; i++) {
            step(f, rm, &m, &st, info.q + info.r, &adapted);
            check_members(f, &m);
            if (i % 50 == 0)
                cr_assert_eq(akvi_aqf_validate(f), AKV_OK, "seed %llu step %d", (unsigned long long)seed, i);
        }
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        cr_assert_gt(adapted, 10);
        free(m.v);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

/* Clusters longer than 255 slots saturate the one-byte block offsets;
 * lookups, inserts, removes and adaptations then compute them. */
Test(aqf, saturated_offsets)
{
    for (uint64_t seed = 1; seed <= 3; seed++) {
        akv_filter_params p;
        akv_filter_params_init(&p);
        p.expected_keys = 1024;
        p.load_factor = 1.0; /* 1024 home slots */
        p.remainder_bits = 8;
        akv_filter *f = NULL;
        cr_assert_eq(akv_filter_create(K("aqf"), &p, NULL, 0, &f), AKV_OK);
        cr_assert_eq(akv_filter_finish(f), AKV_OK);
        akvi_memrevmap *rm = NULL;
        cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm), AKV_OK);
        uint64_t st = seed * 31337;
        model m = {calloc(800, sizeof(akv_hash)), 0, 800};
        /* 700 keys whose homes are slots 4..11: one cluster of ~700 slots */
        for (int i = 0; i < 700; i++) {
            akv_hash h = {((4 + (akvt_rand(&st) & 7)) << 54) | (akvt_rand(&st) >> 10), akvt_rand(&st)};
            cr_assert_eq(akv_filter_insert(f, h), AKV_OK);
            cr_assert_eq(akvi_memrevmap_insert(rm, h), AKV_OK);
            m.v[m.n++] = h;
        }
        check_members(f, &m);
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        uint64_t adapted = 0;
        for (int i = 0; i < 3000; i++) {
            uint64_t op = akvt_rand(&st) % 3;
            akv_hash y = {((4 + (akvt_rand(&st) & 7)) << 54) | (akvt_rand(&st) >> 10), akvt_rand(&st)};
            if (op == 0 && m.n < m.cap) {
                int rc = akv_filter_insert(f, y);
                if (rc == AKV_EFULL)
                    continue;
                cr_assert_eq(rc, AKV_OK);
                cr_assert_eq(akvi_memrevmap_insert(rm, y), AKV_OK);
                m.v[m.n++] = y;
            } else if (op == 1 && m.n) {
                size_t j = akvt_rand(&st) % m.n;
                cr_assert_eq(akv_filter_remove(f, m.v[j]), AKV_OK);
                cr_assert_eq(akvi_memrevmap_remove(rm, m.v[j]), AKV_OK);
                m.v[j] = m.v[--m.n];
            } else if (akv_filter_may_contain(f, y) && !model_has(&m, y)) {
                int rc = akv_filter_adapt(f, y, akvi_memrevmap_revmap(rm));
                if (rc == AKV_EFULL)
                    continue;
                cr_assert_eq(rc, AKV_OK);
                cr_assert_not(akv_filter_may_contain(f, y));
                adapted++;
            }
            if (i % 100 == 0) {
                check_members(f, &m);
                cr_assert_eq(akvi_aqf_validate(f), AKV_OK, "seed %llu step %d", (unsigned long long)seed, i);
            }
        }
        check_members(f, &m);
        cr_assert_eq(akvi_aqf_validate(f), AKV_OK);
        cr_assert_gt(adapted, 5);
        free(m.v);
        akvi_memrevmap_destroy(rm);
        akv_filter_destroy(f);
    }
}

/* The portable build (no POPCNT/BMI2) answers exactly as the hardware one:
 * the same random operations on both, then every structure compared. */
Test(aqf, portable_and_hardware_builds_agree)
{
    akv_filter *f[2];
    akvi_memrevmap *rm[2];
    model m[2];
    uint64_t st[2] = {99, 99}, adapted[2] = {0, 0};
    for (int b = 0; b < 2; b++) {
        akvi_qf_force_portable(b == 1); /* f[1]: the portable build */
        f[b] = empty_aqf(3000, 4);
        cr_assert_eq(akvi_memrevmap_create(NULL, 0, &rm[b]), AKV_OK);
        m[b] = (model){calloc(2800, sizeof(akv_hash)), 0, 2700};
    }
    akvi_qf_force_portable(false);
    akvi_aqf_info info;
    akvi_aqf_info_get(f[0], &info);
    for (int i = 0; i < 20000; i++)
        for (int b = 0; b < 2; b++)
            step(f[b], rm[b], &m[b], &st[b], info.q + info.r, &adapted[b]);
    check_members(f[1], &m[1]);
    cr_assert_eq(akvi_aqf_validate(f[1]), AKV_OK);
    for (uint64_t i = 0; i < 100000; i++) {
        akv_hash y = akvt_key(77, i);
        cr_assert_eq(akv_filter_may_contain(f[1], y), akv_filter_may_contain(f[0], y));
    }
    uint8_t *x, *y;
    size_t lx, ly;
    cr_assert_eq(akv_filter_serialize(f[0], &x, &lx), AKV_OK);
    cr_assert_eq(akv_filter_serialize(f[1], &y, &ly), AKV_OK);
    cr_assert(lx == ly && memcmp(x, y, lx) == 0, "the two builds made different tables");
    cr_assert_gt(adapted[0], 10);
    free(x), free(y);
    for (int b = 0; b < 2; b++) {
        free(m[b].v);
        akvi_memrevmap_destroy(rm[b]);
        akv_filter_destroy(f[b]);
    }
}
