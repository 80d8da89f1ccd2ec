/*
 * test_iter.c — iterators in both directions, against a model.
 *
 * A database is filled with seeded random puts and deletes (a 4 KiB
 * memtable, so entries, overwrites and tombstones spread over memtables
 * and several runs), then seeded random walks — seek_first, seek_last,
 * seek, next, prev and (ordered layout) upper bounds set and removed — are
 * compared step by step with a cursor over the model's pairs in the
 * layout's order: key order, or hash order (h.hi, then the key) in the
 * hash layout.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/hash.h"
#include "support/kvmodel.h"

#define SEED 0xabcdefull

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Keys of 1 to 6 bytes from a small alphabet, binary bytes included, so
 * prefixes and near neighbours are common. */
static size_t random_key(uint64_t *rng, unsigned char *k)
{
    static const unsigned char alpha[] = {'a', 'b', 'c', 0x00, 0xff};
    size_t n = 1 + next_rand(rng) % 6;
    for (size_t i = 0; i < n; i++)
        k[i] = alpha[next_rand(rng) % sizeof alpha];
    return n;
}

typedef struct order_ctx {
    bool hash;
} order_ctx;

static order_ctx ORDER;

static int cmp_pos(const void *ak, size_t al, const void *bk, size_t bl)
{
    if (ORDER.hash) {
        uint64_t ha = akv_hash_key(ak, al, SEED).hi, hb = akv_hash_key(bk, bl, SEED).hi;
        if (ha != hb)
            return ha < hb ? -1 : 1;
    }
    return akvt_keycmp(ak, al, bk, bl);
}

static int cmp_pair(const void *a, const void *b)
{
    const akvt_pair *x = a, *y = b;
    return cmp_pos(x->key, x->klen, y->key, y->klen);
}

/* The model's cursor: an index into the pairs in iteration order, and the
 * bound (ordered layout). */
typedef struct cursor {
    const akvt_pair *v;
    size_t n;
    long i; /* -1 or n: not valid */
    const unsigned char *bound;
    size_t bound_len;
} cursor;

static bool cur_valid(const cursor *c)
{
    if (c->i < 0 || (size_t)c->i >= c->n)
        return false;
    return !c->bound || akvt_keycmp(c->v[c->i].key, c->v[c->i].klen, c->bound, c->bound_len) < 0;
}

static long lower_bound(const cursor *c, const void *k, size_t kl)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cmp_pos(c->v[mid].key, c->v[mid].klen, k, kl) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (long)lo;
}

static void check_same(akv_iter *it, const cursor *c, const char *what, int step)
{
    bool valid = cur_valid(c);
    cr_assert_eq(akv_iter_valid(it) != 0, valid, "step %d (%s): iterator valid %d, model %d", step, what,
                 akv_iter_valid(it), valid);
    cr_assert_eq(akv_iter_status(it), AKV_OK, "step %d (%s): %s", step, what, akv_errmsg());
    if (!valid)
        return;
    size_t kl, vl;
    const void *k = akv_iter_key(it, &kl);
    const void *v = akv_iter_value(it, &vl);
    const akvt_pair *p = &c->v[c->i];
    cr_assert(akvt_keycmp(k, kl, p->key, p->klen) == 0, "step %d (%s): wrong key (model index %ld of %zu)",
              step, what, c->i, c->n);
    cr_assert(vl == p->vlen && (vl == 0 || memcmp(v, p->val, vl) == 0), "step %d (%s): wrong value", step,
              what);
}

static void walks(akv_layout layout, uint64_t seed)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "iter");
    akv_options o;
    akv_options_init(&o);
    o.layout = layout;
    o.memtable_bytes = 4u << 10;
    o.sst_target_bytes = 4u << 10;
    o.l0_compaction_trigger = 3;
    o.level_multiplier = 4;
    o.seed = SEED;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());

    akvt_model m = {0};
    uint64_t rng = seed;
    unsigned char k[8], v[64];
    for (int op = 0; op < 3000; op++) {
        size_t kl = random_key(&rng, k);
        if (next_rand(&rng) % 4 == 0) {
            cr_assert_eq(akv_delete(db, k, kl), AKV_OK);
            akvt_model_del(&m, k, kl);
        } else {
            size_t vl = next_rand(&rng) % sizeof v;
            for (size_t i = 0; i < vl; i++)
                v[i] = (unsigned char)next_rand(&rng);
            cr_assert_eq(akv_put(db, k, kl, v, vl), AKV_OK);
            akvt_model_put(&m, k, kl, v, vl);
        }
        if (op == 1500)
            cr_assert_eq(akv_flush(db), AKV_OK);
    }
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_gt(st.flushes, 3, "the data should lie in several runs");

    ORDER.hash = layout == AKV_LAYOUT_HASH;
    akvt_pair *order = malloc((m.n ? m.n : 1) * sizeof *order);
    cr_assert_not_null(order);
    memcpy(order, m.v, m.n * sizeof *order);
    qsort(order, m.n, sizeof *order, cmp_pair);
    cursor c = {order, m.n, -1, NULL, 0};
    unsigned char bound[8];

    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(db, &it), AKV_OK, "%s", akv_errmsg());
    /* Writes after the iterator was created are not seen. */
    cr_assert_eq(akv_put(db, "late", 4, "x", 1), AKV_OK);
    for (int step = 0; step < 4000; step++) {
        uint64_t r = next_rand(&rng) % 100;
        const char *what;
        if (r < 3) {
            what = "seek_first";
            akv_iter_seek_first(it);
            c.i = 0;
        } else if (r < 6) {
            what = "seek_last";
            akv_iter_seek_last(it);
            c.i = c.bound ? lower_bound(&c, c.bound, c.bound_len) - 1 : (long)c.n - 1;
        } else if (r < 14) {
            what = "seek";
            size_t kl;
            if (c.n && next_rand(&rng) % 2) { /* a live key, or one that may not be */
                const akvt_pair *p = &c.v[next_rand(&rng) % c.n];
                memcpy(k, p->key, p->klen);
                kl = p->klen;
            } else {
                kl = random_key(&rng, k);
            }
            akv_iter_seek(it, k, kl);
            c.i = lower_bound(&c, k, kl);
        } else if (r < 17 && layout == AKV_LAYOUT_ORDERED) {
            if (next_rand(&rng) % 3 == 0) {
                what = "remove bound";
                cr_assert_eq(akv_iter_set_upper_bound(it, NULL, 0), AKV_OK);
                c.bound = NULL;
            } else {
                what = "set bound";
                size_t bl = random_key(&rng, bound);
                cr_assert_eq(akv_iter_set_upper_bound(it, bound, bl), AKV_OK);
                c.bound = bound;
                c.bound_len = bl;
            }
            /* It applies from the next seek: start over. */
            akv_iter_seek_first(it);
            c.i = 0;
        } else if (r < 58) {
            what = "next";
            bool was = cur_valid(&c);
            akv_iter_next(it);
            if (was)
                c.i++;
        } else {
            what = "prev";
            bool was = cur_valid(&c);
            akv_iter_prev(it);
            if (was)
                c.i--;
        }
        /* An invalid cursor stays where it fell off. */
        check_same(it, &c, what, step);
    }
    akv_iter_destroy(it);

    if (layout == AKV_LAYOUT_HASH) {
        cr_assert_eq(akv_iter_create(db, &it), AKV_OK);
        cr_assert_eq(akv_iter_set_upper_bound(it, "b", 1), AKV_ENOTSUP);
        akv_iter_destroy(it);
    }
    cr_assert_eq(akv_iter_set_upper_bound(NULL, "b", 1), AKV_EINVAL);
    free(order);
    akvt_model_free(&m);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(iter, both_directions_ordered)
{
    walks(AKV_LAYOUT_ORDERED, 1);
}

Test(iter, both_directions_ordered_seed2)
{
    walks(AKV_LAYOUT_ORDERED, 2);
}

Test(iter, both_directions_hash)
{
    walks(AKV_LAYOUT_HASH, 3);
}
