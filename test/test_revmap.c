/* test_revmap.c — the in-memory reverse map against a brute-force scan. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "revmap/revmap.h"
#include "support/filter_props.h"

typedef struct got {
    akv_hash v[4096];
    size_t n, stop_at;
} got;

static int collect(void *arg, akv_hash h)
{
    got *g = arg;
    g->v[g->n++] = h;
    return g->stop_at && g->n == g->stop_at ? 7 : 0;
}

static bool top_eq(uint64_t a, uint64_t b, unsigned nbits)
{
    return nbits == 64 ? a == b : (a >> (64 - nbits)) == (b >> (64 - nbits));
}

static bool lt(akv_hash a, akv_hash b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

static void check_scan(akvi_memrevmap *m, const akv_hash *all, size_t n, uint64_t hi, unsigned nbits)
{
    got g = {.n = 0};
    akv_revmap *rm = akvi_memrevmap_revmap(m);
    cr_assert_eq(rm->scan(rm, hi, nbits, collect, &g), AKV_OK);
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += top_eq(all[i].hi, hi, nbits);
    cr_assert_eq(g.n, want, "nbits %u: %zu keys, want %zu", nbits, g.n, want);
    for (size_t i = 0; i < g.n; i++) {
        cr_assert(top_eq(g.v[i].hi, hi, nbits));
        if (i)
            cr_assert(!lt(g.v[i], g.v[i - 1]), "not in ascending (hi, lo) order");
    }
}

Test(revmap, scan_matches_brute_force)
{
    size_t n = 3000;
    akv_hash *k = malloc((n + 100) * sizeof *k);
    uint64_t st = 9;
    for (size_t i = 0; i < n; i++) /* few top patterns so prefixes repeat, some equal hi */
        k[i] = (akv_hash){(akvt_rand(&st) & 0xf00000000000000fULL) | (i % 7), akvt_rand(&st) % 5};
    akvi_memrevmap *m;
    cr_assert_eq(akvi_memrevmap_create(k, n, &m), AKV_OK);
    unsigned nb[] = {1, 2, 4, 8, 30, 63, 64};
    for (size_t j = 0; j < 200; j++)
        for (size_t b = 0; b < sizeof nb / sizeof *nb; b++)
            check_scan(m, k, n, k[akvt_rand(&st) % n].hi, nb[b]);
    /* dynamic updates */
    for (size_t i = 0; i < 100; i++) {
        k[n] = (akv_hash){akvt_rand(&st) & 0xf000000000000000ULL, i};
        cr_assert_eq(akvi_memrevmap_insert(m, k[n]), AKV_OK);
        n++;
    }
    for (size_t i = 0; i < 500; i++) {
        size_t j = akvt_rand(&st) % n;
        cr_assert_eq(akvi_memrevmap_remove(m, k[j]), AKV_OK);
        k[j] = k[--n];
    }
    cr_assert_eq(akvi_memrevmap_remove(m, (akv_hash){0x1234, 0x5678}), AKV_NOTFOUND);
    for (size_t j = 0; j < 100; j++)
        check_scan(m, k, n, k[akvt_rand(&st) % n].hi, 4);
    akvi_memrevmap_destroy(m);
    free(k);
}

Test(revmap, early_stop_and_bad_nbits)
{
    akv_hash k[10];
    for (int i = 0; i < 10; i++)
        k[i] = (akv_hash){0xabcd000000000000ULL, (uint64_t)i};
    akvi_memrevmap *m;
    cr_assert_eq(akvi_memrevmap_create(k, 10, &m), AKV_OK);
    akv_revmap *rm = akvi_memrevmap_revmap(m);
    got g = {.n = 0, .stop_at = 3};
    cr_assert_eq(rm->scan(rm, k[0].hi, 16, collect, &g), 7);
    cr_assert_eq(g.n, 3);
    cr_assert_lt(rm->scan(rm, k[0].hi, 0, collect, &g), 0);
    cr_assert_lt(rm->scan(rm, k[0].hi, 65, collect, &g), 0);
    akvi_memrevmap_destroy(m);
    akvi_memrevmap *e;
    cr_assert_eq(akvi_memrevmap_create(NULL, 0, &e), AKV_OK);
    g.n = 0;
    cr_assert_eq(akvi_memrevmap_revmap(e)->scan(akvi_memrevmap_revmap(e), 0, 1, collect, &g), AKV_OK);
    cr_assert_eq(g.n, 0);
    akvi_memrevmap_destroy(e);
}
