/*
 * test_engine.c — the engine against a model (test/support/kvmodel.c).
 *
 * Seeded random operation sequences (put, delete, get, scan, batch) are run
 * against adaptkv and an in-memory sorted array at once, across explicit
 * flushes, compactions and close/reopen, for both layouts, with a 64 KiB
 * memtable so several levels form within a few thousand operations. Every
 * answer the engine gives is compared with the model's. The other tests pin
 * down the API's edges: size limits, refused reopens, iterators on the hash
 * layout (hash order, every live key once), damaged filter files (which
 * must be rebuilt, never trusted) and the filter slot counters.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "engine/internal.h" /* the compaction test hook */
#include "support/filter_props.h"
#include "support/kvmodel.h"
#include "util/order.h"

#define NKEYS  1500u
#define KEYBUF 4096

/* ---- keys and values --------------------------------------------------- */

/* Key i: a class byte (including 0x00 and 0xff), BE32(i), then 0–11 filler
 * bytes (every 211th key is 3000 bytes long). Distinct for distinct i. */
static size_t make_key(uint32_t i, unsigned char *buf)
{
    static const unsigned char cls[] = {'k', 'K', 'z', 0x00, 0xff};
    size_t n = 0;
    buf[n++] = cls[i % sizeof cls];
    buf[n++] = (unsigned char)(i >> 24);
    buf[n++] = (unsigned char)(i >> 16);
    buf[n++] = (unsigned char)(i >> 8);
    buf[n++] = (unsigned char)i;
    size_t extra = i % 211 == 0 ? 3000 : ((i * 2654435761u) >> 28) % 12;
    for (size_t j = 0; j < extra; j++)
        buf[n++] = (unsigned char)(i + j * 31);
    return n;
}

/* Keys that are never written: class byte 'A' is not one make_key uses. */
static size_t make_absent_key(uint64_t i, unsigned char *buf)
{
    return (size_t)snprintf((char *)buf, KEYBUF, "A%08llx-absent", (unsigned long long)i);
}

/* Mostly small values, some up to 5000 bytes so the memtable fills quickly. */
static size_t make_value(uint64_t *rng, unsigned char *buf)
{
    uint64_t r = akvt_rand(rng) % 100;
    size_t n = r < 70   ? akvt_rand(rng) % 100
               : r < 95 ? 100 + akvt_rand(rng) % 900
                        : 1000 + akvt_rand(rng) % 4000;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t x = akvt_rand(rng);
        memcpy(buf + i, &x, n - i < 8 ? n - i : 8);
    }
    return n;
}

/* ---- a database under test next to its model --------------------------- */

typedef struct logcount {
    atomic_int n;
} logcount;

/* Counts warnings only: the engine also logs notes (e.g. the policy chosen). */
static void count_log(void *arg, const char *msg)
{
    if (strstr(msg, "warning") || strstr(msg, "rebuil"))
        atomic_fetch_add(&((logcount *)arg)->n, 1);
    if (strncmp(msg, "slot policy", 11) != 0) /* keep failures diagnosable */
        fprintf(stderr, "adaptkv log: %s\n", msg);
}

typedef struct world {
    char dir[512];
    akv_options opt;
    akv_db *db;
    akvt_model m;
    uint64_t rng;
    logcount log;
    uint32_t max_levels; /* most non-empty levels seen at once */
} world;

static void small_options(akv_options *o, akv_layout layout, const char *policy)
{
    akv_options_init(o);
    o->layout = layout;
    o->slot_policy = policy;
    o->memtable_bytes = 64u << 10;
    o->sst_target_bytes = 32u << 10;
    o->l0_compaction_trigger = 2;
    o->level_multiplier = 4;
    o->seed = 0x5eed;
}

static void world_open(world *w)
{
    int rc = akv_open(w->dir, &w->opt, &w->db);
    cr_assert_eq(rc, AKV_OK, "open %s: %s (%s)", w->dir, akv_strerror(rc), akv_errmsg());
    cr_assert_not_null(w->db);
}

static void world_init(world *w, const char *tag, akv_layout layout, const char *policy, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    akvt_tmpdir(w->dir, sizeof w->dir, tag);
    small_options(&w->opt, layout, policy);
    w->opt.log = count_log;
    w->opt.log_arg = &w->log;
    w->rng = seed;
    world_open(w);
}

static void world_reopen(world *w)
{
    cr_assert_eq(akv_close(w->db), AKV_OK, "close: %s", akv_errmsg());
    w->db = NULL;
    world_open(w);
}

static void world_done(world *w)
{
    cr_assert_eq(akv_close(w->db), AKV_OK, "close: %s", akv_errmsg());
    akvt_model_free(&w->m);
    akvt_rmrf(w->dir);
}

/* ---- checks ------------------------------------------------------------ */

static void check_key(world *w, const unsigned char *k, size_t kl, const char *when)
{
    void *v = NULL;
    size_t vl = 0;
    int rc = akv_get(w->db, k, kl, &v, &vl);
    const akvt_pair *p = akvt_model_get(&w->m, k, kl);
    if (!p) {
        cr_assert_eq(rc, AKV_NOTFOUND, "%s: key (%zu bytes, byte0 %02x) should be absent, got rc %d (%s)",
                     when, kl, k[0], rc, akv_errmsg());
        return;
    }
    cr_assert_eq(rc, AKV_OK, "%s: key (%zu bytes, byte0 %02x) should be present, got rc %d (%s)", when, kl,
                 k[0], rc, akv_errmsg());
    cr_assert_eq(vl, p->vlen, "%s: value length %zu, expected %zu", when, vl, p->vlen);
    cr_assert(vl == 0 || memcmp(v, p->val, vl) == 0, "%s: value bytes differ", when);
    akv_free(v);
}

static void check_index(world *w, uint32_t i, const char *when)
{
    unsigned char k[KEYBUF];
    check_key(w, k, make_key(i, k), when);
}

/* Up to `limit` pairs from `from` on, compared with the model. */
static void check_scan_from(world *w, const unsigned char *from, size_t fl, size_t limit, const char *when)
{
    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(w->db, &it), AKV_OK, "%s: iter_create: %s", when, akv_errmsg());
    size_t i = 0;
    if (from) {
        akv_iter_seek(it, from, fl);
        i = akvt_model_lower_bound(&w->m, from, fl);
    } else {
        akv_iter_seek_first(it);
    }
    for (size_t n = 0; n < limit && i < w->m.n; n++, i++, akv_iter_next(it)) {
        cr_assert(akv_iter_valid(it), "%s: iterator ended after %zu pairs, model has %zu more", when, n,
                  w->m.n - i);
        size_t kl, vl;
        const void *k = akv_iter_key(it, &kl);
        const void *v = akv_iter_value(it, &vl);
        const akvt_pair *p = &w->m.v[i];
        cr_assert(akvt_keycmp(k, kl, p->key, p->klen) == 0, "%s: scan pair %zu has the wrong key", when, n);
        cr_assert(vl == p->vlen && (vl == 0 || memcmp(v, p->val, vl) == 0), "%s: scan pair %zu: wrong value",
                  when, n);
    }
    if (i >= w->m.n)
        cr_assert_not(akv_iter_valid(it), "%s: iterator shows a key the model does not have", when);
    cr_assert_eq(akv_iter_status(it), AKV_OK, "%s: iter status: %s", when, akv_errmsg());
    akv_iter_destroy(it);
}

static void check_random_scan(world *w)
{
    unsigned char k[KEYBUF];
    uint64_t r = akvt_rand(&w->rng);
    size_t kl = r % 4 == 0 ? make_absent_key(r, k) : make_key((uint32_t)(r % NKEYS), k);
    check_scan_from(w, k, kl, 1 + akvt_rand(&w->rng) % 100, "scan");
}

/* Hash layout: a full pass yields every live key once with its value, in
 * hash order (h.hi non-decreasing, then the key); a seek to a live key
 * lands on it. */
static void check_hash_scan(world *w, const char *when)
{
    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(w->db, &it), AKV_OK, "%s: iter_create: %s", when, akv_errmsg());
    size_t n = 0;
    uint64_t prev_hi = 0;
    unsigned char prev[KEYBUF];
    size_t prev_len = 0;
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it), n++) {
        size_t kl, vl;
        const void *k = akv_iter_key(it, &kl);
        const void *v = akv_iter_value(it, &vl);
        const akvt_pair *p = akvt_model_get(&w->m, k, kl);
        cr_assert_not_null(p, "%s: hash scan pair %zu: a key the model does not have", when, n);
        cr_assert(vl == p->vlen && (vl == 0 || memcmp(v, p->val, vl) == 0),
                  "%s: hash scan pair %zu: wrong value", when, n);
        uint64_t hi = akv_hash_key(k, kl, w->opt.seed).hi;
        cr_assert(n == 0 || hi > prev_hi || (hi == prev_hi && akvt_keycmp(prev, prev_len, k, kl) < 0),
                  "%s: hash scan pair %zu is out of hash order", when, n);
        prev_hi = hi;
        cr_assert_leq(kl, sizeof prev);
        memcpy(prev, k, kl);
        prev_len = kl;
    }
    cr_assert_eq(akv_iter_status(it), AKV_OK, "%s: iter status: %s", when, akv_errmsg());
    cr_assert_eq(n, w->m.n, "%s: hash scan saw %zu keys, the model has %zu", when, n, w->m.n);
    for (size_t i = 0; i < w->m.n; i += 1 + w->m.n / 16) {
        const akvt_pair *p = &w->m.v[i];
        akv_iter_seek(it, p->key, p->klen);
        cr_assert(akv_iter_valid(it), "%s: seek to live key %zu found nothing", when, i);
        size_t kl;
        const void *k = akv_iter_key(it, &kl);
        cr_assert(akvt_keycmp(k, kl, p->key, p->klen) == 0, "%s: seek to live key %zu landed elsewhere", when,
                  i);
    }
    akv_iter_destroy(it);
}

static void check_all(world *w, const char *when)
{
    for (uint32_t i = 0; i < NKEYS; i++)
        check_index(w, i, when);
    unsigned char k[KEYBUF];
    for (uint64_t i = 0; i < 200; i++)
        check_key(w, k, make_absent_key(i, k), when);
    if (w->opt.layout == AKV_LAYOUT_ORDERED)
        check_scan_from(w, NULL, 0, SIZE_MAX, when);
    else
        check_hash_scan(w, when);
}

/* After a full compaction: one run, and the stats count exactly the live
 * keys, i.e. shadowed versions and tombstones were dropped at the last level. */
static void check_compacted(world *w)
{
    akv_stats st;
    cr_assert_eq(akv_get_stats(w->db, &st), AKV_OK);
    cr_assert_eq(st.live_keys_estimate, (uint64_t)w->m.n,
                 "after compact: live_keys_estimate %llu, model has %zu live keys",
                 (unsigned long long)st.live_keys_estimate, w->m.n);
    uint32_t levels = 0, runs = 0;
    uint64_t keys = 0;
    for (int l = 0; l < AKV_MAX_LEVELS; l++) {
        levels += st.runs_per_level[l] > 0;
        runs += st.runs_per_level[l];
        keys += st.keys_per_level[l];
    }
    /* A full compaction leaves one level, cut into runs of about
     * sst_target_bytes (disjoint ranges); at least one when keys are live. */
    cr_assert_leq(levels, 1, "after compact: %u non-empty levels", levels);
    cr_assert(w->m.n == 0 || runs >= 1, "after compact: %u runs for %zu keys", runs, w->m.n);
    cr_assert_eq(keys, (uint64_t)w->m.n, "after compact: keys_per_level sum %llu, model %zu",
                 (unsigned long long)keys, w->m.n);
}

/* ---- the random operation sequence ------------------------------------- */

static void op_put(world *w)
{
    unsigned char k[KEYBUF], v[8192];
    size_t kl = make_key((uint32_t)(akvt_rand(&w->rng) % NKEYS), k);
    size_t vl = make_value(&w->rng, v);
    cr_assert_eq(akv_put(w->db, k, kl, v, vl), AKV_OK, "put: %s", akv_errmsg());
    akvt_model_put(&w->m, k, kl, v, vl);
}

static void op_del(world *w)
{
    unsigned char k[KEYBUF];
    size_t kl = make_key((uint32_t)(akvt_rand(&w->rng) % NKEYS), k);
    cr_assert_eq(akv_delete(w->db, k, kl), AKV_OK, "delete: %s", akv_errmsg());
    akvt_model_del(&w->m, k, kl);
}

/* A batch of 1–20 puts and deletes, possibly touching one key twice: the
 * later operation must win, as in the model. */
static void op_batch(world *w)
{
    akv_batch *b;
    cr_assert_eq(akv_batch_create(&b), AKV_OK);
    size_t n = 1 + akvt_rand(&w->rng) % 20;
    struct {
        unsigned char k[KEYBUF], v[8192];
        size_t kl, vl;
        int del;
    } *ops = malloc(n * sizeof *ops);
    cr_assert_not_null(ops);
    for (size_t i = 0; i < n; i++) {
        ops[i].kl = make_key((uint32_t)(akvt_rand(&w->rng) % NKEYS), ops[i].k);
        ops[i].del = akvt_rand(&w->rng) % 4 == 0;
        ops[i].vl = ops[i].del ? 0 : make_value(&w->rng, ops[i].v);
        int rc = ops[i].del ? akv_batch_delete(b, ops[i].k, ops[i].kl)
                            : akv_batch_put(b, ops[i].k, ops[i].kl, ops[i].v, ops[i].vl);
        cr_assert_eq(rc, AKV_OK, "batch add: %s", akv_errmsg());
    }
    cr_assert_eq(akv_batch_count(b), n);
    cr_assert_eq(akv_write(w->db, b, (int)(akvt_rand(&w->rng) % 2)), AKV_OK, "write: %s", akv_errmsg());
    for (size_t i = 0; i < n; i++) {
        if (ops[i].del)
            akvt_model_del(&w->m, ops[i].k, ops[i].kl);
        else
            akvt_model_put(&w->m, ops[i].k, ops[i].kl, ops[i].v, ops[i].vl);
    }
    free(ops);
    akv_batch_destroy(b);
}

static void op_other(world *w, uint64_t r)
{
    if (r < 880) {
        if (w->opt.layout == AKV_LAYOUT_ORDERED)
            check_random_scan(w);
    } else if (r < 886) {
        cr_assert_eq(akv_flush(w->db), AKV_OK, "flush: %s", akv_errmsg());
    } else if (r < 888) {
        cr_assert_eq(akv_compact(w->db), AKV_OK, "compact: %s", akv_errmsg());
        check_compacted(w);
    } else if (r < 890) {
        world_reopen(w);
    } else {
        unsigned char k[KEYBUF];
        check_key(w, k, make_absent_key(akvt_rand(&w->rng), k), "absent get");
    }
}

static void note_levels(world *w)
{
    akv_stats st;
    cr_assert_eq(akv_get_stats(w->db, &st), AKV_OK);
    if (st.levels > w->max_levels)
        w->max_levels = st.levels;
}

static void random_ops(world *w, size_t nops)
{
    for (size_t i = 0; i < nops; i++) {
        if (i % 100 == 0)
            note_levels(w);
        uint64_t r = akvt_rand(&w->rng) % 1000;
        if (r < 450)
            op_put(w);
        else if (r < 600)
            op_del(w);
        else if (r < 840)
            check_index(w, (uint32_t)(akvt_rand(&w->rng) % NKEYS), "get");
        else if (r < 860)
            op_batch(w);
        else
            op_other(w, r);
    }
}

static size_t nops_default(void)
{
    /* Sanitizer builds run several times slower; keep them within minutes. */
    const char *san = getenv("AKV_SANITIZER");
    return san && *san ? 2000 : 4000;
}

static void model_test(akv_layout layout, uint64_t seed)
{
    world w;
    world_init(&w, layout == AKV_LAYOUT_HASH ? "model-hash" : "model-ord", layout, NULL, seed);
    random_ops(&w, nops_default());
    check_all(&w, "after the run");
    akv_stats st;
    cr_assert_eq(akv_get_stats(w.db, &st), AKV_OK);
    cr_assert_geq(w.max_levels, 2, "a 64 KiB memtable should have formed several levels");
    cr_log_info("model %s seed %llu: %zu live keys, up to %u levels; since the last reopen %llu flushes, "
                "%llu compactions",
                layout == AKV_LAYOUT_HASH ? "hash" : "ordered", (unsigned long long)seed, w.m.n, w.max_levels,
                (unsigned long long)st.flushes, (unsigned long long)st.compactions);
    world_reopen(&w);
    check_all(&w, "after reopen");
    cr_assert_eq(akv_compact(w.db), AKV_OK, "compact: %s", akv_errmsg());
    check_compacted(&w);
    check_all(&w, "after compact");
    world_reopen(&w);
    check_all(&w, "after compact and reopen");
    world_done(&w);
}

Test(model, random_ops_hash_layout)
{
    model_test(AKV_LAYOUT_HASH, 1);
}
Test(model, random_ops_ordered_layout)
{
    model_test(AKV_LAYOUT_ORDERED, 2);
}
Test(model, random_ops_hash_layout_seed3)
{
    model_test(AKV_LAYOUT_HASH, 3);
}
Test(model, random_ops_ordered_layout_seed4)
{
    model_test(AKV_LAYOUT_ORDERED, 4);
}

/* ---- tombstones -------------------------------------------------------- */

static void put_range(world *w, uint32_t from, uint32_t to, const char *tag)
{
    unsigned char k[KEYBUF];
    char v[64];
    for (uint32_t i = from; i < to; i++) {
        size_t kl = make_key(i, k);
        int vl = snprintf(v, sizeof v, "%s-%u", tag, i);
        cr_assert_eq(akv_put(w->db, k, kl, v, (size_t)vl), AKV_OK, "put: %s", akv_errmsg());
        akvt_model_put(&w->m, k, kl, v, (size_t)vl);
    }
}

/* An empty memtable (after a flush, before any write) holds nothing: an
 * absent lookup checks no guard for it, as RocksDB skips an empty
 * memtable's Bloom filter. The first write makes it count again, and a key
 * written is found through it before and after a reopen. */
Test(memtables, an_empty_memtable_is_not_checked)
{
    world w;
    world_init(&w, "emptymem", AKV_LAYOUT_HASH, NULL, 7);
    put_range(&w, 0, 2000, "e");
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    unsigned char k[KEYBUF];
    akv_get_info empty = {0}, one = {0}, info = {0};
    size_t kl = make_absent_key(42, k);
    cr_assert_eq(akv_get_ex(w.db, k, kl, NULL, NULL, &empty), AKV_NOTFOUND);
    cr_assert_eq(empty.mem_probes, 0);
    put_range(&w, 5000, 5001, "f");
    cr_assert_eq(akv_get_ex(w.db, k, kl, NULL, NULL, &one), AKV_NOTFOUND);
    cr_assert_eq(one.slots_checked, empty.slots_checked + 1,
                 "%u filters with one key in the memtable, %u with none", one.slots_checked,
                 empty.slots_checked);
    kl = make_key(5000, k);
    cr_assert_eq(akv_get_ex(w.db, k, kl, NULL, NULL, &info), AKV_OK, "the key in the memtable");
    cr_assert_eq(info.mem_probes, 1);
    world_reopen(&w);
    cr_assert_eq(akv_get_ex(w.db, k, kl, NULL, NULL, &info), AKV_OK, "the key in the recovered memtable");
    check_all(&w, "after the reopen");
    world_done(&w);
}

static void tombstone_test(akv_layout layout)
{
    world w;
    world_init(&w, "tomb", layout, NULL, 7);
    put_range(&w, 0, NKEYS, "old");
    cr_assert_eq(akv_compact(w.db), AKV_OK, "compact: %s", akv_errmsg());
    check_compacted(&w);
    /* Tombstones now sit above the old values: they must shadow them. */
    unsigned char k[KEYBUF];
    for (uint32_t i = 0; i < NKEYS; i += 2) {
        size_t kl = make_key(i, k);
        cr_assert_eq(akv_delete(w.db, k, kl), AKV_OK);
        akvt_model_del(&w.m, k, kl);
    }
    check_all(&w, "deletes in the memtable");
    cr_assert_eq(akv_flush(w.db), AKV_OK);
    check_all(&w, "tombstones in L0 over the last level");
    akv_stats st;
    cr_assert_eq(akv_get_stats(w.db, &st), AKV_OK);
    cr_assert_geq(st.live_keys_estimate, (uint64_t)w.m.n, "runs hold the live keys at least");
    world_reopen(&w);
    check_all(&w, "tombstones after reopen");
    /* Compacting into the last level drops them (and what they shadow). */
    cr_assert_eq(akv_compact(w.db), AKV_OK);
    check_compacted(&w);
    check_all(&w, "after compact");
    /* Deleted keys can come back with new values. */
    put_range(&w, 0, NKEYS / 2, "new");
    cr_assert_eq(akv_flush(w.db), AKV_OK);
    check_all(&w, "rewritten");
    cr_assert_eq(akv_compact(w.db), AKV_OK);
    check_compacted(&w);
    check_all(&w, "rewritten and compacted");
    world_done(&w);
}

Test(tombstones, shadow_then_dropped_at_last_level_hash)
{
    tombstone_test(AKV_LAYOUT_HASH);
}
Test(tombstones, shadow_then_dropped_at_last_level_ordered)
{
    tombstone_test(AKV_LAYOUT_ORDERED);
}

/* ---- limits -------------------------------------------------------------- */

static void expect_einval(int rc, const char *what)
{
    cr_assert_eq(rc, AKV_EINVAL, "%s: expected AKV_EINVAL, got %d", what, rc);
    cr_assert_str_not_empty(akv_errmsg(), "%s: no error message", what);
}

static void expect_absent(akv_db *db, const void *k, size_t kl, const char *what)
{
    void *v = NULL;
    size_t vl;
    cr_assert_eq(akv_get(db, k, kl, &v, &vl), AKV_NOTFOUND, "%s: a rejected write was stored", what);
}

static void limits_batch(akv_db *db, const unsigned char *big_key, const unsigned char *big_val)
{
    akv_batch *b;
    cr_assert_eq(akv_batch_create(&b), AKV_OK);
    expect_einval(akv_batch_put(b, big_key, 0, "v", 1), "batch put, empty key");
    expect_einval(akv_batch_put(b, big_key, AKV_MAX_KEY_BYTES + 1, "v", 1), "batch put, long key");
    expect_einval(akv_batch_put(b, "bv", 2, big_val, AKV_MAX_VALUE_BYTES + 1), "batch put, big value");
    expect_einval(akv_batch_delete(b, big_key, 0), "batch delete, empty key");
    cr_assert_eq(akv_batch_count(b), 0, "rejected operations were added to the batch");
    cr_assert_eq(akv_batch_put(b, "ok", 2, "1", 1), AKV_OK);
    cr_assert_eq(akv_write(db, b, 1), AKV_OK);
    expect_absent(db, "bv", 2, "batch");
    akv_batch_destroy(b);
}

/* akv_get_pinned reads a value in place, from a memtable or a run, and the
 * pin holds while a compaction replaces the run it was read from. */
static void pinned_reads(akv_layout layout)
{
    world w;
    world_init(&w, "pinned", layout, NULL, 7);
    size_t big = 300u << 10;
    unsigned char *val = malloc(big);
    cr_assert_not_null(val);
    for (size_t i = 0; i < big; i++)
        val[i] = (unsigned char)(i * 131 + 7);
    cr_assert_eq(akv_put(w.db, "in-run", 6, val, big), AKV_OK);
    cr_assert_eq(akv_put(w.db, "empty", 5, "", 0), AKV_OK);
    cr_assert_eq(akv_put(w.db, "gone", 4, "x", 1), AKV_OK);
    cr_assert_eq(akv_delete(w.db, "gone", 4), AKV_OK);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(w.db, "in-mem", 6, "memvalue", 8), AKV_OK);

    akv_pinned *run_pin = NULL, *mem_pin = NULL, *none = (akv_pinned *)&w;
    cr_assert_eq(akv_get_pinned(w.db, "in-run", 6, &run_pin), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get_pinned(w.db, "in-mem", 6, &mem_pin), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get_pinned(w.db, "gone", 4, &none), AKV_NOTFOUND);
    cr_assert_null(none);
    cr_assert_eq(akv_get_pinned(w.db, "never", 5, &none), AKV_NOTFOUND);
    cr_assert_null(none);
    cr_assert_eq(akv_get_pinned(w.db, "", 0, &none), AKV_EINVAL);
    cr_assert_eq(akv_get_pinned(w.db, "k", 1, NULL), AKV_EINVAL);

    /* Replace the run under the pin, overwrite the key: the pin still
     * shows what it read. */
    cr_assert_eq(akv_put(w.db, "in-run", 6, "newer", 5), AKV_OK);
    cr_assert_eq(akv_compact(w.db), AKV_OK, "%s", akv_errmsg());
    size_t len = 0;
    const void *v = akv_pinned_value(run_pin, &len);
    cr_assert_eq(len, big);
    cr_assert(memcmp(v, val, big) == 0, "the pinned value changed under its pin");
    v = akv_pinned_value(mem_pin, &len);
    cr_assert(len == 8 && memcmp(v, "memvalue", 8) == 0);
    akv_pinned_release(run_pin);
    akv_pinned_release(mem_pin);
    akv_pinned_release(NULL);
    cr_assert_null(akv_pinned_value(NULL, &len));
    cr_assert_eq(len, 0);

    akv_pinned *p = NULL;
    cr_assert_eq(akv_get_pinned(w.db, "in-run", 6, &p), AKV_OK);
    v = akv_pinned_value(p, &len);
    cr_assert(len == 5 && memcmp(v, "newer", 5) == 0);
    akv_pinned_release(p);
    cr_assert_eq(akv_get_pinned(w.db, "empty", 5, &p), AKV_OK);
    akv_pinned_value(p, &len);
    cr_assert_eq(len, 0);
    akv_pinned_release(p);
    free(val);
    world_done(&w);
}

Test(reads, pinned_values_hash)
{
    pinned_reads(AKV_LAYOUT_HASH);
}

Test(reads, pinned_values_ordered)
{
    pinned_reads(AKV_LAYOUT_ORDERED);
}

Test(limits, key_and_value_sizes)
{
    world w;
    world_init(&w, "limits", AKV_LAYOUT_ORDERED, NULL, 1);
    unsigned char *big_key = malloc(AKV_MAX_KEY_BYTES + 1);
    unsigned char *big_val = malloc(AKV_MAX_VALUE_BYTES + 1);
    cr_assert(big_key && big_val);
    memset(big_key, 'k', AKV_MAX_KEY_BYTES + 1);
    memset(big_val, 'v', AKV_MAX_VALUE_BYTES + 1);

    expect_einval(akv_put(w.db, big_key, 0, "v", 1), "put, empty key");
    expect_einval(akv_put(w.db, big_key, AKV_MAX_KEY_BYTES + 1, "v", 1), "put, 64 KiB + 1 key");
    expect_einval(akv_put(w.db, "big", 3, big_val, AKV_MAX_VALUE_BYTES + 1), "put, 64 MiB + 1 value");
    expect_einval(akv_delete(w.db, big_key, 0), "delete, empty key");
    expect_einval(akv_delete(w.db, big_key, AKV_MAX_KEY_BYTES + 1), "delete, long key");
    void *v = NULL;
    size_t vl;
    expect_einval(akv_get(w.db, big_key, 0, &v, &vl), "get, empty key");
    expect_einval(akv_get(w.db, big_key, AKV_MAX_KEY_BYTES + 1, &v, &vl), "get, long key");
    expect_absent(w.db, "big", 3, "put");
    limits_batch(w.db, big_key, big_val);

    /* The limits themselves are allowed: a 64 KiB key, a 1 MiB and an empty value. */
    akvt_model_put(&w.m, "ok", 2, "1", 1);
    akvt_model_put(&w.m, big_key, AKV_MAX_KEY_BYTES, "max", 3);
    akvt_model_put(&w.m, "mib", 3, big_val, 1u << 20);
    akvt_model_put(&w.m, "empty", 5, "", 0);
    cr_assert_eq(akv_put(w.db, big_key, AKV_MAX_KEY_BYTES, "max", 3), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(w.db, "mib", 3, big_val, 1u << 20), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(w.db, "empty", 5, "", 0), AKV_OK, "%s", akv_errmsg());
    check_scan_from(&w, NULL, 0, SIZE_MAX, "limits");
    cr_assert_eq(akv_compact(w.db), AKV_OK);
    world_reopen(&w);
    check_scan_from(&w, NULL, 0, SIZE_MAX, "limits after reopen");
    check_key(&w, big_key, AKV_MAX_KEY_BYTES, "64 KiB key");
    expect_absent(w.db, "big", 3, "after reopen");
    free(big_key);
    free(big_val);
    world_done(&w);
}

/* ---- refused reopens ----------------------------------------------------- */

static void expect_refused(const char *dir, const akv_options *o, const char *what)
{
    akv_db *db = (akv_db *)1;
    int rc = akv_open(dir, o, &db);
    cr_assert_lt(rc, 0, "%s: open should fail, got %d", what, rc);
    cr_assert_null(db, "%s: *db must be NULL on failure", what);
    cr_assert_str_not_empty(akv_errmsg(), "%s: no error message", what);
}

static void open_close(const char *dir, const akv_options *o)
{
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, o, &db), AKV_OK, "open: %s", akv_errmsg());
    void *v = NULL;
    size_t vl;
    cr_assert_eq(akv_get(db, "a", 1, &v, &vl), AKV_OK, "the key written at create is gone: %s", akv_errmsg());
    akv_free(v);
    cr_assert_eq(akv_close(db), AKV_OK);
}

static void reopen_test(akv_layout layout)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "reopen");
    akv_options o;
    small_options(&o, layout, NULL);
    o.seed = 42;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "create: %s", akv_errmsg());
    cr_assert_eq(akv_put(db, "a", 1, "1", 1), AKV_OK);
    cr_assert_eq(akv_close(db), AKV_OK);

    akv_options bad = o;
    bad.layout = layout == AKV_LAYOUT_HASH ? AKV_LAYOUT_ORDERED : AKV_LAYOUT_HASH;
    expect_refused(dir, &bad, "other layout");
    cr_assert_eq(akv_open(dir, &bad, &db), AKV_EINVAL, "other layout: expected AKV_EINVAL");
    bad = o;
    bad.seed = 43;
    expect_refused(dir, &bad, "other seed");
    bad = o;
    bad.error_if_exists = 1;
    expect_refused(dir, &bad, "error_if_exists");

    open_close(dir, &o); /* same seed */
    bad = o;
    bad.seed = 0; /* 0: whatever the database has */
    open_close(dir, &bad);
    bad.layout = AKV_LAYOUT_AUTO; /* so for the layout */
    cr_assert_eq(akv_open(dir, &bad, &db), AKV_OK, "auto layout: %s", akv_errmsg());
    cr_assert_eq(akv_db_layout(db), layout);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);

    akvt_tmpdir(dir, sizeof dir, "autonew"); /* a new database with AUTO is hash */
    cr_assert_eq(akv_open(dir, &bad, &db), AKV_OK, "auto create: %s", akv_errmsg());
    cr_assert_eq(akv_db_layout(db), AKV_LAYOUT_HASH);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);

    akvt_tmpdir(dir, sizeof dir, "missing");
    char sub[600];
    snprintf(sub, sizeof sub, "%s/none", dir);
    bad = o;
    bad.create_if_missing = 0;
    expect_refused(sub, &bad, "create_if_missing = 0");
    akvt_rmrf(dir);
}

Test(reopen, refuses_other_layout_or_seed_hash)
{
    reopen_test(AKV_LAYOUT_HASH);
}
Test(reopen, refuses_other_layout_or_seed_ordered)
{
    reopen_test(AKV_LAYOUT_ORDERED);
}

Test(reopen, hash_layout_iterates_in_hash_order)
{
    world w;
    world_init(&w, "hashiter", AKV_LAYOUT_HASH, NULL, 1);
    put_range(&w, 0, 10, "v");
    check_all(&w, "hash layout, memtable only");
    world_done(&w);
}

/* A scan after reopen (cold block cache) reads blocks, the iterator counts
 * them and the engine's block_reads counter takes them over on destroy. */
Test(reopen, scans_count_their_block_reads)
{
    world w;
    world_init(&w, "iterreads", AKV_LAYOUT_ORDERED, NULL, 1);
    put_range(&w, 0, 400, "v");
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    world_reopen(&w);
    akv_stats before, after;
    cr_assert_eq(akv_get_stats(w.db, &before), AKV_OK);
    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(w.db, &it), AKV_OK, "%s", akv_errmsg());
    size_t n = 0;
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it))
        n++;
    cr_assert_eq(akv_iter_status(it), AKV_OK);
    cr_assert_eq(n, 400);
    uint64_t reads = akv_iter_block_reads(it);
    cr_assert_gt(reads, 0, "a cold scan of flushed data read no blocks");
    akv_iter_destroy(it);
    cr_assert_eq(akv_get_stats(w.db, &after), AKV_OK);
    cr_assert_eq(after.block_reads - before.block_reads, reads);
    check_all(&w, "after scan");
    world_done(&w);
}

/* ---- damaged filter files ------------------------------------------------ */

static int cmp_path(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The filter files in DIR/filters, sorted; returns how many (at most max). */
static size_t list_filters(const char *dir, char paths[][1024], size_t max)
{
    char fdir[700];
    snprintf(fdir, sizeof fdir, "%s/filters", dir);
    DIR *d = opendir(fdir);
    cr_assert_not_null(d, "no %s directory", fdir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t l = strlen(e->d_name);
        if (l > 4 && strcmp(e->d_name + l - 4, ".akf") == 0)
            snprintf(paths[n++], 1024, "%s/%s", fdir, e->d_name);
    }
    closedir(d);
    akvi_sort(paths, n, sizeof paths[0], cmp_path);
    return n;
}

static void flip_bytes(const char *path, uint64_t *rng)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    cr_assert_gt(size, 0);
    for (int i = 0; i < 8; i++) {
        long at = (long)(akvt_rand(rng) % (uint64_t)size);
        fseek(f, at, SEEK_SET);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ (1 << (akvt_rand(rng) % 8)), f);
    }
    fclose(f);
}

static void damage(char paths[][1024], size_t n, uint64_t *rng)
{
    struct stat st;
    flip_bytes(paths[0], rng);
    cr_assert_eq(stat(paths[1], &st), 0);
    cr_assert_eq(truncate(paths[1], st.st_size / 2), 0);
    cr_assert_eq(unlink(paths[2]), 0);
    if (n > 3)
        cr_assert_eq(truncate(paths[3], 0), 0);
    if (n > 4) {
        FILE *f = fopen(paths[4], "ab");
        cr_assert_not_null(f);
        fputs("trailing garbage", f);
        fclose(f);
    }
}

static void corrupt_filters_test(akv_layout layout, const char *tag)
{
    world w;
    world_init(&w, tag, layout, NULL, 11);
    w.opt.l0_compaction_trigger = 8; /* keep several runs, hence several files */
    w.opt.rest_compaction = 0;       /* and leave them there while idle */
    world_reopen(&w);
    for (int r = 0; r < 3; r++) {
        put_range(&w, (uint32_t)r * 500, (uint32_t)r * 500 + 500, "c");
        cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    }
    cr_assert_eq(akv_close(w.db), AKV_OK);
    w.db = NULL;

    char paths[16][1024];
    size_t n = list_filters(w.dir, paths, 16);
    cr_assert_geq(n, 3, "expected at least 3 filter files after 3 flushes, found %zu", n);
    damage(paths, n, &w.rng);

    atomic_store(&w.log.n, 0);
    world_open(&w);
    check_all(&w, "damaged filters");
    cr_assert_gt(atomic_load(&w.log.n), 0, "rebuilding damaged filters should log a warning");
    /* Reads after the rebuild, a compaction over rebuilt slots, and a reopen. */
    put_range(&w, 1400, NKEYS, "d");
    cr_assert_eq(akv_compact(w.db), AKV_OK, "compact: %s", akv_errmsg());
    check_all(&w, "compacted after rebuild");
    world_reopen(&w);
    check_all(&w, "reopened after rebuild");
    world_done(&w);
}

Test(corruption, damaged_filter_files_are_rebuilt_hash)
{
    corrupt_filters_test(AKV_LAYOUT_HASH, "corrupt-hash");
}
Test(corruption, damaged_filter_files_are_rebuilt_ordered)
{
    corrupt_filters_test(AKV_LAYOUT_ORDERED, "corrupt-ord");
}

/* ---- filter slot counters under several policies ------------------------- */

static const char *const policies[] = {
    NULL, /* the default, with the engine's fallbacks */
    "mem=sscf,l0=aqf,l1+=habf",
    "mem=none,l0=bloom,l1+=blocked",
    "mem=sscf,l0=rbf,l1+=vsbbf",
    "mem=sscf,l0=shbf,l1+=qf",
    "l0=fhabf,l1+=aqf",
};

/* Every kind the policy names is registered (so the policy can be tested). */
static bool policy_available(const char *policy)
{
    if (!policy)
        return true;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", policy);
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        const char *kind = strchr(item, '=');
        if (kind && strcmp(kind + 1, "none") != 0 && !akv_filter_kind_by_name(kind + 1))
            return false;
    }
    return true;
}

/* True when every run slot is of an adaptive kind. */
static bool slots_adaptive(const akv_slot_info *rows, size_t n)
{
    size_t runs = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].level < 0)
            continue;
        const akv_filter_kind *k = akv_filter_kind_by_name(rows[i].kind);
        if (!k || !(k->flags & AKV_FK_ADAPTIVE))
            return false;
        runs++;
    }
    return runs > 0;
}

static void absent_queries(world *w, uint64_t space, size_t q)
{
    unsigned char k[KEYBUF];
    for (uint64_t i = 0; i < q; i++) {
        size_t kl = make_absent_key(space * 1000000 + i, k);
        void *v = NULL;
        size_t vl;
        cr_assert_eq(akv_get(w->db, k, kl, &v, &vl), AKV_NOTFOUND);
    }
}

static void check_slot_rows(world *w, const akv_stats *st, bool *adaptive)
{
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(w->db, &rows, &n), AKV_OK, "slots: %s", akv_errmsg());
    cr_assert_gt(n, 0, "a compacted database has at least one slot");
    uint64_t queries = 0, keys = 0;
    for (size_t i = 0; i < n; i++) {
        bool no_guard = rows[i].level < 0 && strcmp(rows[i].kind, "none") == 0; /* mem=none */
        cr_assert(no_guard || akv_filter_kind_by_name(rows[i].kind), "slot kind '%.16s' is not registered",
                  rows[i].kind);
        cr_assert_leq(rows[i].filtered, rows[i].queries);
        queries += rows[i].queries;
        if (rows[i].level >= 0)
            keys += rows[i].keys;
    }
    cr_assert_eq(queries, st->slot_queries, "slot rows count %llu queries, stats %llu",
                 (unsigned long long)queries, (unsigned long long)st->slot_queries);
    cr_assert_eq(keys, (uint64_t)w->m.n, "run slots hold %llu keys, the database %zu",
                 (unsigned long long)keys, w->m.n);
    *adaptive = slots_adaptive(rows, n);
    akv_free(rows);
}

static void slot_counters_test(const char *policy, akv_layout layout)
{
    world w;
    world_init(&w, "slots", layout, policy, 5);
    put_range(&w, 0, NKEYS, "s");
    cr_assert_eq(akv_compact(w.db), AKV_OK, "compact: %s", akv_errmsg());
    check_all(&w, policy ? policy : "default policy");
    enum { Q = 20000 };
    akv_stats a, b, c;
    cr_assert_eq(akv_get_stats(w.db, &a), AKV_OK);
    absent_queries(&w, 1, Q);
    cr_assert_eq(akv_get_stats(w.db, &b), AKV_OK);
    cr_assert_eq(b.negative_lookups - a.negative_lookups, Q);
    uint64_t queries = b.slot_queries - a.slot_queries, filtered = b.slot_filtered - a.slot_filtered;
    uint64_t fp = b.false_positives - a.false_positives;
    cr_log_info("policy %s: %llu slot queries, %llu filtered, %llu false positives in %d absent lookups",
                policy ? policy : "default", (unsigned long long)queries, (unsigned long long)filtered,
                (unsigned long long)fp, Q);
    /* At most 6 %: the AQF (l1+=aqf) answers about 5.3 % of fresh keys yes
     * at 10 bits/key (its fingerprints are shorter than a QF's, room being
     * kept for adaptations, and a fresh key's first false positive is not
     * adapted to: engine/adapt.c); the other kinds stay under 3 %. */
    cr_assert_leq(fp, Q * 6 / 100, "%s: %llu false positives in %d absent lookups at 10 bits/key",
                  policy ? policy : "default", (unsigned long long)fp, Q);
    if (queries >= Q / 2)
        cr_assert_geq(filtered * 10, queries * 9, "%s: slots filtered %llu of %llu queries",
                      policy ? policy : "default", (unsigned long long)filtered, (unsigned long long)queries);
    bool adaptive = false;
    check_slot_rows(&w, &b, &adaptive);
    /* Adaptive slots fix each false positive when it happens and keep the
     * ones asked again: absent keys that keep coming back soon cost
     * (almost) nothing. Within the budget a slot cannot hold every false
     * positive of the Q lookups above (ablocked lists 0.125 bits/key of
     * them, docs/filters.md), so this is a smaller set asked four times. */
    enum { H = 1000 };
    absent_queries(&w, 2, H);
    akv_stats d;
    cr_assert_eq(akv_get_stats(w.db, &c), AKV_OK);
    absent_queries(&w, 2, H);
    absent_queries(&w, 2, H);
    cr_assert_eq(akv_get_stats(w.db, &d), AKV_OK);
    absent_queries(&w, 2, H);
    akv_stats e;
    cr_assert_eq(akv_get_stats(w.db, &e), AKV_OK);
    uint64_t first = c.false_positives - b.false_positives, last = e.false_positives - d.false_positives;
    if (adaptive)
        cr_assert_leq(last, first / 4 + 2, "%s: adaptive slots repeated %llu of %llu false positives",
                      policy ? policy : "default", (unsigned long long)last, (unsigned long long)first);
    check_all(&w, "after absent queries");
    world_done(&w);
}

Test(slots, counters_under_each_available_policy)
{
    size_t tested = 0;
    for (size_t i = 0; i < sizeof policies / sizeof *policies; i++) {
        if (!policy_available(policies[i])) {
            cr_log_info("policy %s: a kind is not registered, skipped", policies[i]);
            continue;
        }
        slot_counters_test(policies[i], i % 2 ? AKV_LAYOUT_ORDERED : AKV_LAYOUT_HASH);
        tested++;
    }
    cr_assert_gt(tested, 0);
}

/* Filter memory by level (docs/design.md): a small L0 run's slots get more
 * bits per key than the deepest level's, and the runs' slots together stay
 * near the budget. Every key is still found. */
/* Builds a 12,000-key level and two 150-key L0 runs with values of vlen
 * bytes; returns the slots' key-weighted bits per key in L0, in the
 * deepest level and over all runs. */
static void bits_by_level(akv_layout layout, const char *policy, size_t vlen, double *l0, double *deep,
                          double *all)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "bits");
    akv_options o;
    small_options(&o, layout, policy);
    o.bits_per_key = 10;
    /* SSTs of a few thousand keys: a slot rounds its filter up to whole
     * cache lines, and the small runs get what the budget leaves. */
    o.sst_target_bytes = 512u << 10;
    o.l0_compaction_trigger = 8; /* the small runs stay in L0 */
    o.rest_compaction = 0;       /* also between the flushes */
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[100];
    memset(v, 'v', sizeof v);
    const int big = 12000, small = 150;
    for (int i = 0; i < big + 2 * small; i++) {
        int kl = snprintf(k, sizeof k, "bits-%06d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, vlen), AKV_OK, "%s", akv_errmsg());
        if (i + 1 == big)
            cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
        else if (i + 1 == big + small || i + 1 == big + 2 * small)
            cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    }
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK, "%s", akv_errmsg());
    int deepest = 0;
    for (size_t i = 0; i < n; i++)
        deepest = rows[i].level > deepest ? rows[i].level : deepest;
    cr_assert_gt(deepest, 0, "akv_compact left no deeper level");
    /* Key-weighted means: a slot of a few hundred keys rounds its filter
     * to whole cache lines, so single slots scatter around their target. */
    double mem[3] = {0}, keys[3] = {0}; /* L0, deepest, all runs */
    for (size_t i = 0; i < n; i++) {
        if (rows[i].level < 0 || rows[i].keys == 0)
            continue;
        int c = rows[i].level == 0 ? 0 : rows[i].level == deepest ? 1 : -1;
        double m = rows[i].bits_per_key * (double)rows[i].keys;
        if (c >= 0) {
            mem[c] += m;
            keys[c] += (double)rows[i].keys;
        }
        mem[2] += m;
        keys[2] += (double)rows[i].keys;
    }
    akv_free(rows);
    cr_assert_eq(keys[0], 2.0 * small, "%.0f keys in L0", keys[0]);
    *l0 = mem[0] / keys[0];
    *deep = mem[1] / keys[1];
    *all = mem[2] / keys[2];
    for (int i = 0; i < big + 2 * small; i++) {
        int kl = snprintf(k, sizeof k, "bits-%06d", i);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* The runs' slots average the budget, small runs above it and the deepest
 * level below. Static kinds: no growth. No guard, whose share would come
 * off the budget (next test). */
static void bits_follow_run_sizes(akv_layout layout)
{
    double l0, deep, all;
    bits_by_level(layout, "mem=none,l0+=blocked", 100, &l0, &deep, &all);
    cr_log_info("bits/key: L0 %.2f, deepest %.2f, all %.2f", l0, deep, all);
    cr_assert_gt(l0, deep + 3, "L0 %.2f bits/key, deepest level %.2f", l0, deep);
    /* The deepest level, built by a full compaction as the whole tree,
     * gets the budget; its slots of ~270 keys round up to whole 512-bit
     * blocks: up to ~15 % over. */
    cr_assert_leq(deep, 11.5, "deepest level %.2f bits/key", deep);
    cr_assert(all > 9 && all < 11.75, "runs' slots: %.2f bits/key on average", all);
}

Test(slots, bits_follow_run_sizes_hash)
{
    bits_follow_run_sizes(AKV_LAYOUT_HASH);
}

Test(slots, bits_follow_run_sizes_ordered)
{
    bits_follow_run_sizes(AKV_LAYOUT_ORDERED);
}

/* Hash layout: every SST compaction writes is a whole shard holding all of
 * its level's keys there, so its slot hashes (shard prefix shifted out)
 * spread over the whole slot space. A merge cut more coarsely than its
 * inputs wrote SSTs whose keys filled a quarter of that space: an AQF
 * over them ran out of room at build (a fallback at twice the memory) and
 * a Bloom filter's keys crowded a quarter of its blocks. Checked on every
 * SST of 300 or more keys after loads and compactions at several levels. */
Test(slots, compacted_ssts_spread_over_their_slot_space)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "spread");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, policy_available("mem=sscf,l0+=aqf") ? "mem=sscf,l0+=aqf" : NULL);
    o.memtable_bytes = 256u << 10;
    o.sst_target_bytes = 128u << 10;
    logcount lc = {0};
    o.log = count_log;
    o.log_arg = &lc;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[100];
    memset(v, 'v', sizeof v);
    uint64_t st = 0x5bead;
    size_t checked = 0;
    for (int round = 0; round < 6; round++) {
        for (int i = 0; i < 6000; i++) {
            int kl = snprintf(k, sizeof k, "spread-%llu", (unsigned long long)(akvt_rand(&st) % 60000));
            cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
        }
        cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
        akv_stats sts;
        for (int w = 0; w < 1000; w++) { /* background compactions catch up */
            cr_assert_eq(akv_get_stats(db, &sts), AKV_OK);
            if (sts.compaction_debt_bytes == 0)
                break;
            usleep(10000);
        }
        akvi_version *ver = akvi_current(db);
        for (size_t i = 0; i < ver->n_run; i++) {
            const akvi_run *r = ver->runs[i];
            for (size_t j = 0; j < r->info.n_sst; j++) {
                if (r->info.ssts[j].keys < 300)
                    continue;
                akv_hash *h = NULL;
                size_t n = 0;
                cr_assert_eq(akvi_sst_hashes(db, r, &r->info.ssts[j], &h, &n), AKV_OK, "%s", akv_errmsg());
                size_t q[4] = {0};
                for (size_t x = 0; x < n; x++)
                    q[akvi_run_slot_hash(db, &r->info, h[x]).hi >> 62]++;
                for (int x = 0; x < 4; x++)
                    cr_assert_geq(
                        q[x], n / 8,
                        "round %d, L%u run %llu SST %zu (%zu keys, %u prefix bits): quarters %zu %zu %zu %zu",
                        round, r->info.level, (unsigned long long)r->info.id, j, n, r->info.prefix_bits, q[0],
                        q[1], q[2], q[3]);
                checked++;
                free(h);
            }
        }
        akvi_version_unref(ver);
    }
    cr_log_info("%zu SSTs checked", checked);
    cr_assert_gt(checked, 20);
    /* no slot build fell back (an AQF without room for its keys) */
    cr_assert_eq(atomic_load(&lc.n), 0, "%d warnings", atomic_load(&lc.n));
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* The memtable guard's memory comes off the runs' share, its fixed minimum
 * (4096 keys) up to 2 % of the budget, and never more than a quarter of
 * it. With 1-byte values a 64 KiB memtable holds fewer keys than that
 * minimum, so the guard keeps its minimum: 2 % of the budget over these
 * 12,000 keys. */
Test(slots, guard_memory_comes_off_the_runs)
{
    /* The budget follows the guard's memory averaged over a minute; this
     * test lasts seconds. */
    atomic_store(&akvi_guard_avg_seconds, 0.001);
    double l0, deep, all, l0_none, deep_none, all_none;
    bits_by_level(AKV_LAYOUT_HASH, "mem=sscf,l0+=blocked", 1, &l0, &deep, &all);
    bits_by_level(AKV_LAYOUT_HASH, "mem=none,l0+=blocked", 1, &l0_none, &deep_none, &all_none);
    cr_log_info("bits/key with the guard: L0 %.2f, deepest %.2f, all %.2f; without: %.2f, %.2f, %.2f", l0,
                deep, all, l0_none, deep_none, all_none);
    cr_assert_lt(deep, deep_none - 0.1, "deepest level %.2f bits/key with the guard, %.2f without", deep,
                 deep_none);
    cr_assert_gt(deep, deep_none * 0.75, "deepest level %.2f bits/key with the guard, %.2f without", deep,
                 deep_none);
    cr_assert_lt(all, all_none, "runs' slots %.2f bits/key with the guard, %.2f without", all, all_none);
}

/* An absent key, and once more if it cost a probe: adaptation fixes a
 * key's second false positive, not its first (engine/adapt.c). */
static void absent_twice(akv_db *db, const char *k, size_t kl)
{
    akv_get_info info;
    cr_assert_eq(akv_get_ex(db, k, kl, NULL, NULL, &info), AKV_NOTFOUND);
    if (info.wasted_probes > 0)
        cr_assert_eq(akv_get_ex(db, k, kl, NULL, NULL, &info), AKV_NOTFOUND);
}

/* AQF slots only, no memtable guard, and SSTs and memtables of `bytes`:
 * a test's keys fit one memtable, flushed as one SST with one slot. */
static void one_aqf_slot_options(akv_options *o, uint64_t bytes)
{
    small_options(o, AKV_LAYOUT_HASH, "mem=none,l0+=aqf");
    o->sst_target_bytes = bytes;
    o->memtable_bytes = bytes;
}

/* An AQF slot that runs out of room for adaptations grows (engine/adapt.c);
 * the filter it grew into, and the one it outgrew (kept for readers that
 * may still hold it), count in the slots' memory and in filter_grown_bytes,
 * within their own allowance over the budget (grown_filter_share), not
 * taken from the slots built afterwards; they leave when the grown run is
 * compacted away. */
Test(slots, grown_slots_are_counted_apart_from_the_builds)
{
    if (!policy_available("mem=none,l0+=aqf"))
        cr_skip_test("aqf is not registered");
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "grown");
    akv_options o;
    one_aqf_slot_options(&o, 4u << 20);
    o.grown_filter_share = 8; /* a database this small: room for a growth */
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { N = 2000 };
    char k[32];
    for (int i = 0; i < N; i++) {
        int kl = snprintf(k, sizeof k, "grown-%06d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, "v", 1), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    akv_stats before;
    cr_assert_eq(akv_get_stats(db, &before), AKV_OK);
    /* Fresh absent keys, each replayed once if it cost a probe, until the
     * slot has used up its room and grown. */
    int i = 0;
    for (; i < 2000000 && atomic_load(&db->grown_bytes) == 0; i++) {
        int kl = snprintf(k, sizeof k, "absent-%08d", i);
        absent_twice(db, k, (size_t)kl);
    }
    uint64_t grown = atomic_load(&db->grown_bytes);
    akv_stats after;
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    cr_log_info("grew after %d absent keys: %llu bytes; slots %llu -> %llu bytes", i,
                (unsigned long long)grown, (unsigned long long)before.filter_bytes,
                (unsigned long long)after.filter_bytes);
    cr_assert_gt(grown, 0, "no slot grew after %d absent keys", i);
    cr_assert_eq(after.filter_grown_bytes, grown);
    cr_assert_geq(after.filter_bytes, before.filter_bytes + grown, "the outgrown filter is not counted");
    cr_assert_eq(after.filter_bytes_per_level[0], after.filter_bytes, "L0 holds every slot");
    /* A run flushed now gets the budget, as the first did: growth is
     * counted apart. */
    for (int j = 0; j < N; j++) {
        int kl = snprintf(k, sizeof k, "second-%06d", j);
        cr_assert_eq(akv_put(db, k, (size_t)kl, "v", 1), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    akv_stats two;
    cr_assert_eq(akv_get_stats(db, &two), AKV_OK);
    double second = (double)(two.filter_bytes - after.filter_bytes) * 8 / N;
    double first = (double)before.filter_bytes * 8 / N;
    cr_log_info("first run %.2f bits/key as built, second %.2f", first, second);
    cr_assert(second > first - 0.5 && second < first + 0.5, "second run %.2f bits/key, first %.2f", second,
              first);
    cr_assert_leq((double)two.filter_bytes, (1 + o.grown_filter_share) * (double)two.filter_budget_bytes,
                  "%llu bytes of filters against a budget of %llu", (unsigned long long)two.filter_bytes,
                  (unsigned long long)two.filter_budget_bytes);
    for (int j = 0; j < N; j++) {
        int kl = snprintf(k, sizeof k, "grown-%06d", j);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    /* Compacted away: the output is built at the budget, and the grown
     * run's memory leaves the account when it is freed. */
    cr_assert_eq(akv_put(db, "grown-extra", 11, "v", 1), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    for (int w = 0; w < 500 && atomic_load(&db->grown_bytes) != 0; w++)
        usleep(10000);
    cr_assert_eq(atomic_load(&db->grown_bytes), 0, "%llu grown bytes left after the compaction",
                 (unsigned long long)atomic_load(&db->grown_bytes));
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* Past the grown filters' share over the budget (3 %), a
 * full AQF slot is refilled in place rather than grown: its memory stays
 * what it was built with, adaptation goes on, no key is lost, and the
 * refilled filter is what a reopen loads. */
Test(slots, full_slot_past_the_grown_share_is_refilled_in_place)
{
    if (!policy_available("mem=none,l0+=aqf"))
        cr_skip_test("aqf is not registered");
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "refill");
    akv_options o;
    one_aqf_slot_options(&o, 8u << 20); /* one slot of ~25 KB: a growth would pass 3 % */
    akv_db *db = NULL;
    akv_options bad = o;
    bad.grown_filter_share = -0.5;
    expect_einval(akv_open(dir, &bad, &db), "grown_filter_share -0.5");
    bad.grown_filter_share = nan("");
    expect_einval(akv_open(dir, &bad, &db), "grown_filter_share NaN");
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { N = 20000 };
    char k[32];
    for (int i = 0; i < N; i++) {
        int kl = snprintf(k, sizeof k, "refill-%06d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, "v", 1), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    akv_stats before, after;
    cr_assert_eq(akv_get_stats(db, &before), AKV_OK);
    cr_assert_eq(before.ssts_per_level[0], 1, "%u SSTs", before.ssts_per_level[0]);
    /* Fresh absent keys (each replayed once if it cost a probe) until the
     * slot has been refilled twice. */
    int i = 0;
    for (; i < 3000000; i++) {
        int kl = snprintf(k, sizeof k, "absent-%08d", i);
        absent_twice(db, k, (size_t)kl);
        if (i % 1000 == 0) {
            cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
            if (after.filter_refills >= 2)
                break;
        }
    }
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    cr_log_info("%d absent keys: %llu refills, %llu grows, %llu adaptations; filter bytes %llu -> %llu", i,
                (unsigned long long)after.filter_refills, (unsigned long long)after.filter_grows,
                (unsigned long long)after.adaptations, (unsigned long long)before.filter_bytes,
                (unsigned long long)after.filter_bytes);
    cr_assert_geq(after.filter_refills, 2, "%llu refills after %d absent keys",
                  (unsigned long long)after.filter_refills, i);
    cr_assert_eq(after.filter_grows, 0);
    cr_assert_eq(atomic_load(&db->grown_bytes), 0);
    cr_assert_eq(after.filter_bytes, before.filter_bytes, "the refilled slot's memory changed");
    /* it adapted past its first refill: more adaptations than one table's room */
    uint64_t adapted = after.adaptations;
    for (int j = 0; j < 20000; j++) {
        int kl = snprintf(k, sizeof k, "later-%08d", j);
        absent_twice(db, k, (size_t)kl);
    }
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    cr_assert_gt(after.adaptations, adapted, "no adaptation after the refills");
    for (int j = 0; j < N; j++) {
        int kl = snprintf(k, sizeof k, "refill-%06d", j);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    for (int j = 0; j < N; j++) {
        int kl = snprintf(k, sizeof k, "refill-%06d", j);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost after reopen", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* A costed kind (HABF) is built with as many of the miss log's negatives
 * as it has keys, not the quarter that pre-adapted kinds take: asked again
 * after a compaction, the absent keys of the first pass (three quarters as
 * many as the keys) are nearly all answered "no". */
Test(slots, costed_slots_take_the_miss_logs_negatives)
{
    if (!policy_available("mem=sscf,l0+=habf"))
        cr_skip_test("habf is not registered");
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "costed");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, "mem=sscf,l0+=habf");
    o.miss_log_bytes = 4u << 20;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { N = 8000, Q = 6000 };
    char k[32];
    for (int i = 0; i < N; i++) {
        int kl = snprintf(k, sizeof k, "costed-%06d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, "v", 1), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    uint64_t fp[2];
    for (int pass = 0; pass < 2; pass++) {
        akv_stats a, b;
        cr_assert_eq(akv_get_stats(db, &a), AKV_OK);
        for (int i = 0; i < Q; i++) {
            int kl = snprintf(k, sizeof k, "absent-%06d", i);
            cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_NOTFOUND);
        }
        cr_assert_eq(akv_get_stats(db, &b), AKV_OK);
        fp[pass] = b.false_positives - a.false_positives;
        /* one more key, so that the compaction rewrites the level */
        cr_assert_eq(akv_put(db, "costed-extra", 12, "v", 1), AKV_OK, "%s", akv_errmsg());
        cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    }
    cr_log_info("false positives: %llu before, %llu after the rebuild", (unsigned long long)fp[0],
                (unsigned long long)fp[1]);
    cr_assert_gt(fp[0], 20, "%llu false positives in %d absent lookups", (unsigned long long)fp[0], Q);
    cr_assert_leq(fp[1] * 5, fp[0], "%llu false positives after the rebuild, %llu before",
                  (unsigned long long)fp[1], (unsigned long long)fp[0]);
    for (int i = 0; i < N; i++) {
        int kl = snprintf(k, sizeof k, "costed-%06d", i);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* The kinds of the runs' slots after a compaction (level >= 0 rows). */
static void run_slot_kinds(akv_db *db, char *kinds, size_t cap)
{
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK, "%s", akv_errmsg());
    kinds[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].level >= 0 && !strstr(kinds, rows[i].kind))
            snprintf(kinds + strlen(kinds), cap - strlen(kinds), "%s ", rows[i].kind);
    akv_free(rows);
}

/* A costed kind learns only the negatives the miss log hands it: while the
 * log has lost most of the absent keys it met, new slots are afuse
 * instead; a log that holds the stream gets the kind asked for. */
Test(slots, costed_kind_needs_a_miss_log_that_holds_the_stream)
{
    if (!policy_available("mem=sscf,l0+=habf") || !policy_available("mem=sscf,l0+=afuse"))
        cr_skip_test("habf or afuse is not registered");
    const uint64_t budgets[] = {64u << 10, 8u << 20};
    const char *want[] = {"afuse", "habf"};
    for (int b = 0; b < 2; b++) {
        char dir[512];
        akvt_tmpdir(dir, sizeof dir, "costed-cover");
        akv_options o;
        small_options(&o, AKV_LAYOUT_HASH, "mem=sscf,l0+=habf");
        o.miss_log_bytes = budgets[b];
        akv_db *db = NULL;
        cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
        char k[32];
        for (int i = 0; i < 4000; i++) {
            int kl = snprintf(k, sizeof k, "cover-%06d", i);
            cr_assert_eq(akv_put(db, k, (size_t)kl, "v", 1), AKV_OK, "%s", akv_errmsg());
        }
        /* 30,000 distinct absent keys: some 2,800 entries fit in 64 KiB. */
        for (int i = 0; i < 30000; i++) {
            int kl = snprintf(k, sizeof k, "gone-%06d", i);
            cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_NOTFOUND);
        }
        akv_stats st;
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        cr_assert(b == 0 ? st.miss_log_coverage < 0.9 : st.miss_log_coverage >= 0.9,
                  "miss log of %llu bytes: coverage %g", (unsigned long long)budgets[b],
                  st.miss_log_coverage);
        char *js = NULL;
        cr_assert_eq(akv_stats_json(db, &js), AKV_OK);
        cr_assert(strstr(js, "\"miss_log_coverage\":") != NULL, "%s", js);
        akv_free(js);
        cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
        char kinds[128];
        run_slot_kinds(db, kinds, sizeof kinds);
        cr_log_info("miss log %llu bytes: slots %s", (unsigned long long)budgets[b], kinds);
        char only[32];
        snprintf(only, sizeof only, "%s ", want[b]);
        cr_assert_str_eq(kinds, only, "miss log of %llu bytes: slots are %s, expected only %s",
                         (unsigned long long)budgets[b], kinds, want[b]);
        for (int i = 0; i < 4000; i++) {
            int kl = snprintf(k, sizeof k, "cover-%06d", i);
            cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
        }
        cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
        akvt_rmrf(dir);
    }
}

/* akv_get_info counts memtable probes apart from the SSTs': without a
 * guard every memtable is probed, in vain for an absent key. */
Test(slots, get_info_counts_memtable_probes_apart)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "meminfo");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, "mem=none,l0+=blocked");
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(db, "flushed", 7, "v", 1), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(db, "in-memory", 9, "v", 1), AKV_OK, "%s", akv_errmsg());
    akv_get_info gi;
    memset(&gi, 0, sizeof gi);
    cr_assert_eq(akv_get_ex(db, "absent", 6, NULL, NULL, &gi), AKV_NOTFOUND);
    cr_assert_geq(gi.mem_probes, 1, "%u memtables probed", gi.mem_probes);
    cr_assert_eq(gi.mem_wasted, gi.mem_probes);
    cr_assert_geq(gi.probes, gi.mem_probes);
    cr_assert_eq(gi.wasted_probes, gi.probes, "an absent key: every probe was in vain");
    memset(&gi, 0, sizeof gi);
    cr_assert_eq(akv_get_ex(db, "in-memory", 9, NULL, NULL, &gi), AKV_OK);
    cr_assert_eq(gi.probes, gi.mem_probes, "found in a memtable: no SST read");
    cr_assert_eq(gi.mem_wasted + 1, gi.mem_probes);
    memset(&gi, 0, sizeof gi);
    cr_assert_eq(akv_get_ex(db, "flushed", 7, NULL, NULL, &gi), AKV_OK);
    cr_assert_eq(gi.mem_wasted, gi.mem_probes, "the memtables did not hold it");
    cr_assert_gt(gi.probes, gi.mem_probes, "found in an SST");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* ---- the write controller ---------------------------------------------- */

/* Writes are rate-limited from l0_slowdown_runs L0 runs on, not before;
 * none is refused or lost while slowed. (Counts, not times: the delay's
 * length is the tools' business.) */
Test(writes, slow_down_from_l0_slowdown_runs)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "slowdown");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, NULL);
    o.l0_compaction_trigger = 6; /* no compaction below 6 L0 runs */
    o.l0_slowdown_runs = 3;
    o.l0_stall_runs = 6;
    o.rest_compaction = 0; /* the L0 runs stay while the test is between writes */
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32];
    akv_stats st;
    for (int run = 0; run < 3; run++) {
        for (int i = 0; i < 20; i++) {
            int n = snprintf(k, sizeof k, "key-%d-%d", run, i);
            cr_assert_eq(akv_put(db, k, (size_t)n, "v", 1), AKV_OK, "%s", akv_errmsg());
        }
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        cr_assert_eq(st.write_slowdowns, 0, "slowed at %d L0 runs", run);
        cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    }
    /* three L0 runs now: every write is delayed */
    for (int i = 0; i < 5; i++) {
        int n = snprintf(k, sizeof k, "late-%d", i);
        cr_assert_eq(akv_put(db, k, (size_t)n, "v", 1), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.write_slowdowns, 5);
    cr_assert_eq(st.write_stalls, 0);
    for (int run = 0; run < 3; run++)
        for (int i = 0; i < 20; i++) {
            int n = snprintf(k, sizeof k, "key-%d-%d", run, i);
            void *v = NULL;
            size_t vl = 0;
            cr_assert_eq(akv_get(db, k, (size_t)n, &v, &vl), AKV_OK, "%s lost", k);
            akv_free(v);
        }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* ---- compaction debt ----------------------------------------------------- */

/* The hook holds the compaction thread until the test lets it go. */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static bool hold_compactions;

static void hold_hook(void)
{
    pthread_mutex_lock(&hold_mu);
    while (hold_compactions)
        pthread_cond_wait(&hold_cv, &hold_mu);
    pthread_mutex_unlock(&hold_mu);
}

static void set_hold(bool on)
{
    pthread_mutex_lock(&hold_mu);
    hold_compactions = on;
    pthread_cond_broadcast(&hold_cv);
    pthread_mutex_unlock(&hold_mu);
}

/* Open with every compaction held at its start (hold_hook) until
 * close_releasing_hold or set_hold(false). */
static akv_db *open_held(const char *dir, const akv_options *o)
{
    akv_db *db = NULL;
    set_hold(true);
    atomic_store(&akvi_hook_before_compaction, hold_hook);
    cr_assert_eq(akv_open(dir, o, &db), AKV_OK, "%s", akv_errmsg());
    return db;
}

/* Pages of `path` in the page cache, and all its pages (mincore). */
static void resident_pages(const char *path, size_t *resident, size_t *total)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "stat %s", path);
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = ((size_t)st.st_size + page - 1) / page;
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "open %s", path);
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fileno(f), 0);
    cr_assert(m != MAP_FAILED, "mmap %s", path);
    unsigned char *vec = malloc(n);
    cr_assert_not_null(vec);
    cr_assert_eq(mincore(m, (size_t)st.st_size, vec), 0, "mincore %s", path);
    for (size_t i = 0; i < n; i++)
        *resident += vec[i] & 1;
    *total += n;
    free(vec);
    munmap(m, (size_t)st.st_size);
    fclose(f);
}

/* A flush's SST files stay in the page cache, as RocksDB's own flush
 * output does (sstwriter.cc: RocksDB's C API builds its SstFileWriter to
 * drop every file it writes from the cache). */
Test(lsm, flushed_ssts_stay_in_the_page_cache)
{
    char dir[512], rdir[600];
    akvt_tmpdir(dir, sizeof dir, "pagecache");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, NULL);
    o.memtable_bytes = 4u << 20;
    o.sst_target_bytes = 1u << 20;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[1000];
    memset(v, 'p', sizeof v);
    for (int i = 0; i < 3000; i++) {
        int kl = snprintf(k, sizeof k, "page-%d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    snprintf(rdir, sizeof rdir, "%s/runs", dir); /* the runs' own files */
    DIR *d = opendir(rdir);
    cr_assert_not_null(d, "%s", rdir);
    size_t resident = 0, total = 0, files = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".sst") != 0)
            continue;
        char path[1200];
        snprintf(path, sizeof path, "%s/%s", rdir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || st.st_size < (64 << 10))
            continue; /* a small reverse map */
        resident_pages(path, &resident, &total);
        files++;
    }
    closedir(d);
    cr_assert_gt(files, 0, "no run SST in %s", rdir);
    cr_assert_geq(resident * 2, total, "%zu of %zu pages of %zu fresh SSTs in the page cache", resident,
                  total, files);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());    akvt_rmrf(dir);
}

/* akv_stats.family_ops: a run is its own files (no column family), and the
 * memtables live in the pool's families, so a flush creates, drops and
 * ingests into no family, and writers never wait for one: the flushed
 * memtable's family is emptied (memtable_empties). The counters stay in
 * the stats, each by its kind. */
Test(stats, a_flush_makes_no_family_operation)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "famops");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, NULL);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akv_stats before, after;
    cr_assert_eq(akv_get_stats(db, &before), AKV_OK);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(akv_put(db, "k", 1, "v", 1), AKV_OK, "%s", akv_errmsg());
        cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    cr_assert_eq(after.flushes, before.flushes + 3);
    cr_assert_eq(after.family_ops, before.family_ops,
                 "%llu -> %llu family operations for flushes and a compaction",
                 (unsigned long long)before.family_ops, (unsigned long long)after.family_ops);
    cr_assert_eq(after.family_creates, before.family_creates);
    cr_assert_eq(after.family_drops, before.family_drops);
    cr_assert_eq(after.family_op_us, before.family_op_us);
    cr_assert_eq(after.memtable_empties, before.memtable_empties + 3,
                 "%llu -> %llu memtable families emptied", (unsigned long long)before.memtable_empties,
                 (unsigned long long)after.memtable_empties);
    char *json = NULL;
    cr_assert_eq(akv_stats_json(db, &json), AKV_OK);
    cr_assert_not_null(strstr(json, "\"family_ops\":"), "%s", json);
    cr_assert_not_null(strstr(json, "\"family_op_us\":"), "%s", json);
    cr_assert_not_null(strstr(json, "\"family_creates\":"), "%s", json);
    cr_assert_not_null(strstr(json, "\"family_drops\":"), "%s", json);
    cr_assert_not_null(strstr(json, "\"memtable_empties\":"), "%s", json);
    akv_free(json);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());    akvt_rmrf(dir);
}

/* akv_stats.compaction_debt_bytes: 0 once compactions have caught up;
 * while they are held back, what the over-full levels hold beyond their
 * capacities, which is more than 0 and less than all the data. */
Test(stats, compaction_debt_while_compactions_are_held)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "debt");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, NULL);
    o.memtable_bytes = 4u << 20; /* one level holds all of it */
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[1000];
    memset(v, 'v', sizeof v);
    const int n = 600;
    for (int i = 0; i < n; i++) {
        int kl = snprintf(k, sizeof k, "debt-%d", i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.compaction_debt_bytes, 0, "%llu bytes owed after akv_compact",
                 (unsigned long long)st.compaction_debt_bytes);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());

    /* Reopened with 64 KiB memtables (levels of 256 KiB, 1 MiB, ...), the
     * ~600 KB level is over capacity; the compaction thread waits. */
    o.memtable_bytes = 64u << 10;
    db = open_held(dir, &o);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    uint64_t all = (uint64_t)n * sizeof v;
    cr_assert_gt(st.compaction_debt_bytes, 0, "a level over its capacity owes nothing");
    cr_assert_lt(st.compaction_debt_bytes, all, "%llu owed of %llu bytes", (unsigned long long)st.compaction_debt_bytes,
                 (unsigned long long)all);
    char *json = NULL;
    cr_assert_eq(akv_stats_json(db, &json), AKV_OK);
    char want[64];
    snprintf(want, sizeof want, "\"compaction_debt_bytes\":%llu", (unsigned long long)st.compaction_debt_bytes);
    cr_assert_not_null(strstr(json, want), "%s has no %s", json, want);
    akv_free(json);

    set_hold(false);
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    atomic_store(&akvi_hook_before_compaction, NULL);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.compaction_debt_bytes, 0, "%llu bytes owed after catching up",
                 (unsigned long long)st.compaction_debt_bytes);
    for (int i = 0; i < n; i++) {
        int kl = snprintf(k, sizeof k, "debt-%d", i);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* ---- compaction at rest ---------------------------------------------------- */

/* Wait until no compaction is due (the background thread has caught up);
 * the limit only keeps a broken build from hanging the suite. */
static void wait_caught_up(akv_db *db, akv_stats *st)
{
    for (int i = 0; i < 6000; i++) {
        cr_assert_eq(akv_get_stats(db, st), AKV_OK);
        if (st->compaction_debt_bytes == 0)
            return;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cr_assert_fail("compactions never caught up: %llu bytes still owed",
                   (unsigned long long)st->compaction_debt_bytes);
}

/* Keys from..to-1 with 100-byte values: 6000 of them fill ten 64 KiB
 * memtables, enough for three levels at small_options. */
static void put_sized(world *w, uint32_t from, uint32_t to)
{
    unsigned char k[KEYBUF], v[100];
    for (uint32_t i = from; i < to; i++) {
        size_t kl = make_key(i, k);
        memset(v, 'a' + (int)(i % 26), sizeof v);
        cr_assert_eq(akv_put(w->db, k, kl, v, sizeof v), AKV_OK, "put: %s", akv_errmsg());
        akvt_model_put(&w->m, k, kl, v, sizeof v);
    }
}

/* Levels holding runs, and filters an absent lookup checks on average. */
static uint32_t rest_shape(world *w, const akv_stats *st, double *filters)
{
    uint32_t levels = 0;
    for (int l = 0; l < AKV_MAX_LEVELS; l++)
        levels += st->runs_per_level[l] > 0;
    unsigned char k[KEYBUF];
    uint64_t checked = 0;
    enum { Q = 2000 };
    for (uint64_t i = 0; i < Q; i++) {
        akv_get_info info = {0};
        size_t kl = make_absent_key(7000000 + i, k);
        cr_assert_eq(akv_get_ex(w->db, k, kl, NULL, NULL, &info), AKV_NOTFOUND);
        checked += info.slots_checked;
    }
    *filters = (double)checked / Q;
    return levels;
}

/* At rest (nothing written since the last flush), with rest_compaction 2,
 * every run above the deepest level is pushed down into it: one level is left, and an absent
 * key checks one filter (its one SST's), where the same writes without
 * compaction at rest leave more than one level and more filters. A write
 * ends the rest: runs flushed after it stay where their capacities put them
 * until the next flush leaves the memtable empty again. Every key reads
 * back from the model throughout (hash and ordered layouts). */
static void rest_compaction_test(akv_layout layout)
{
    double filters[2];
    uint32_t levels[2];
    for (int rest = 0; rest < 2; rest++) {
        world w;
        world_init(&w, rest ? "rest-on" : "rest-off", layout, NULL, 21 + (uint64_t)rest);
        w.opt.rest_compaction = rest ? 2 : 0;
        world_reopen(&w);
        put_sized(&w, 0, 6000);
        cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
        akv_stats st;
        wait_caught_up(w.db, &st);
        levels[rest] = rest_shape(&w, &st, &filters[rest]);
        check_all(&w, rest ? "at rest" : "without compaction at rest");
        if (rest) {
            /* writes and a flush: the new runs are pushed down once the
             * memtable is empty again, also after a reopen */
            put_sized(&w, 3000, 4000);
            cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
            world_reopen(&w);
            wait_caught_up(w.db, &st);
            double f;
            cr_assert_eq(rest_shape(&w, &st, &f), 1, "levels after writes, a flush and a reopen");
            cr_assert_leq(f, 1.0, "%.3f filters per absent key at rest", f);
            check_all(&w, "at rest again");
        }
        world_done(&w);
    }
    cr_log_info("without compaction at rest: %u levels, %.3f filters per absent key; with: %u, %.3f",
                levels[0], filters[0], levels[1], filters[1]);
    cr_assert_gt(levels[0], 1, "the writes left one level even without compaction at rest");
    /* Without it, how many filters an absent key checks depends on where
     * the background threads' timing left the upper levels' runs (an upper
     * run may cover part of the hash space only: 0.992 was seen), so only
     * the order is asserted: never more filters at rest. The two databases
     * have different seeds, so the share of absent keys that fall in an
     * empty shard and check nothing differs between them by up to about a
     * percent (0.992 without against 0.993 with was seen): hence the 0.02. */
    cr_assert_geq(filters[0] + 0.02, filters[1],
                  "%.3f filters per absent key without compaction at rest, %.3f with", filters[0],
                  filters[1]);
    cr_assert_eq(levels[1], 1, "%u levels at rest", levels[1]);
    cr_assert_leq(filters[1], 1.0, "%.3f filters per absent key at rest", filters[1]);
}

Test(lsm, rest_compaction_leaves_one_level_hash)
{
    rest_compaction_test(AKV_LAYOUT_HASH);
}

Test(lsm, rest_compaction_leaves_one_level_ordered)
{
    rest_compaction_test(AKV_LAYOUT_ORDERED);
}

/* The share of the hash space whose lookups check a run above the deepest
 * level, level by level (an L0 run counts as its shards, as any run): how
 * many filters beyond the deepest level's one an absent key checks. */
static double upper_share(akv_db *db)
{
    akvi_version *v = akvi_current(db);
    int deepest = akvi_deepest_level(v);
    double share = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level < deepest)
            share += ldexp((double)v->runs[i]->info.n_sst, -(int)v->runs[i]->info.prefix_bits);
    akvi_version_unref(v);
    return share;
}

/* What compaction at rest may still rewrite: the raw bytes written by
 * users (since the open, and before it as saved at the last close) less
 * what rests have rewritten. Never negative: that is the bound. */
static void assert_rest_within_credit(akv_db *db, const char *when)
{
    uint64_t in = db->bg.rest_credit_saved + atomic_load(&db->st.bytes_written_user);
    uint64_t out = atomic_load(&db->bg.rest_spent);
    cr_assert_leq(out, in, "%s: rests rewrote %llu raw bytes, more than the %llu written", when,
                  (unsigned long long)out, (unsigned long long)in);
}

/* With the default options (rest_compaction 1, bounded): after writes, a
 * flush and a settle, the levels above the deepest hold no L0 run and are
 * checked by at most a quarter of the lookups (so an absent key checks at
 * most 1.25 filters: RocksDB's upper level at rest was checked by 31-39 %),
 * as long as the credit allows; the rests never rewrite more raw bytes than
 * users wrote, and the credit outlives a reopen. Every key reads back from
 * the model throughout. */
Test(lsm, rest_compaction_keeps_gaps_within_its_credit)
{
    world w;
    world_init(&w, "rest-gaps", AKV_LAYOUT_HASH, NULL, 41);
    cr_assert_eq(w.opt.rest_compaction, 1, "bounded compaction at rest is the default");
    /* A first load: credit of one pass over the data only. */
    put_sized(&w, 0, 6000);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    akv_stats st;
    wait_caught_up(w.db, &st);
    assert_rest_within_credit(w.db, "after one pass");
    check_all(&w, "after one pass");
    /* Four passes more over the same keys: the credit (2.6 MB) now covers
     * the pushes the gaps need whatever shape the background threads'
     * timing left (L0 into L1, a split, three quarters of L2: up to about
     * 1.5 MB; with two passes, 1.3 MB, the rest sometimes ran out of
     * credit at a third of the hash space on a loaded machine). */
    for (int pass = 0; pass < 4; pass++)
        put_sized(&w, 0, 6000);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    wait_caught_up(w.db, &st);
    assert_rest_within_credit(w.db, "after five passes");
    cr_assert_eq(st.runs_per_level[0], 0, "an L0 run left at rest");
    double share = upper_share(w.db), filters;
    uint32_t levels = rest_shape(&w, &st, &filters);
    cr_log_info("at rest after five passes: %u levels, upper share %.3f, %.3f filters per absent key", levels,
                share, filters);
    uint64_t left = w.db->bg.rest_credit_saved + atomic_load(&w.db->st.bytes_written_user) -
                    atomic_load(&w.db->bg.rest_spent);
    cr_assert_leq(share, 0.25,
                  "the upper levels cover %.3f of the hash space at rest (%llu bytes of credit left)", share,
                  (unsigned long long)left);
    cr_assert_leq(filters, 1.30, "%.3f filters per absent key at rest (upper share %.3f)", filters, share);
    check_all(&w, "at rest with gaps");
    /* The credit left is saved at close and read back at open. */
    world_reopen(&w);
    cr_assert_eq(w.db->bg.rest_credit_saved, left, "credit %llu after a reopen, %llu before",
                 (unsigned long long)w.db->bg.rest_credit_saved, (unsigned long long)left);
    /* A burst after the rest: its rest stays within the credit. */
    put_sized(&w, 6000, 6700);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    wait_caught_up(w.db, &st);
    assert_rest_within_credit(w.db, "after a burst");
    check_all(&w, "after a burst");
    world_done(&w);
}

/* The ordered layout under the default bounded rest: the shares are the
 * deepest level's bytes under a run (no shards), so no share is asserted;
 * the rest empties L0, stays within its credit, and every key reads back
 * from the model, also after a reopen and a burst. */
Test(lsm, rest_compaction_within_its_credit_ordered)
{
    world w;
    world_init(&w, "rest-ordered", AKV_LAYOUT_ORDERED, NULL, 43);
    for (int pass = 0; pass < 3; pass++)
        put_sized(&w, 0, 6000);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    akv_stats st;
    wait_caught_up(w.db, &st);
    assert_rest_within_credit(w.db, "ordered, after three passes");
    cr_assert_eq(st.runs_per_level[0], 0, "an L0 run left at rest");
    double filters;
    uint32_t levels = rest_shape(&w, &st, &filters);
    cr_log_info("ordered, at rest after three passes: %u levels, %.3f filters per absent key", levels,
                filters);
    check_all(&w, "ordered, at rest");
    world_reopen(&w);
    put_sized(&w, 6000, 6700);
    cr_assert_eq(akv_flush(w.db), AKV_OK, "flush: %s", akv_errmsg());
    wait_caught_up(w.db, &st);
    assert_rest_within_credit(w.db, "ordered, after a burst");
    check_all(&w, "ordered, after a burst");
    world_done(&w);
}

/* A write ends the rest: with keys in the memtable, nothing is owed and no
 * compaction runs, however many levels there are. */
Test(lsm, rest_compaction_waits_for_an_empty_memtable)
{
    world w;
    world_init(&w, "rest-busy", AKV_LAYOUT_HASH, NULL, 31);
    w.opt.rest_compaction = 1;
    world_reopen(&w);
    put_sized(&w, 0, 6000);
    akv_stats st, later;
    wait_caught_up(w.db, &st); /* the memtable is not empty: no rest yet */
    cr_assert_gt(st.memtables, 0);
    uint32_t levels = 0;
    for (int l = 0; l < AKV_MAX_LEVELS; l++)
        levels += st.runs_per_level[l] > 0;
    cr_assert_gt(levels, 1, "the writes made one level only");
    struct timespec ts = {0, 300 * 1000000L};
    nanosleep(&ts, NULL);
    cr_assert_eq(akv_get_stats(w.db, &later), AKV_OK);
    cr_assert_eq(later.compactions, st.compactions, "a compaction ran with keys in the memtable");
    cr_assert_eq(later.compaction_debt_bytes, 0);
    check_all(&w, "busy");
    world_done(&w);
}

/* ---- L0 merges ------------------------------------------------------------ */

#define MERGE_KEYS   300
#define MERGE_ROUNDS 12

/* Every key's newest round (-1: deleted) against the database. */
static void check_rounds(akv_db *db, const int *last, const char *when)
{
    for (int i = 0; i < MERGE_KEYS; i++) {
        char k[32], want[32];
        int kl = snprintf(k, sizeof k, "merge-%d", i);
        void *v = NULL;
        size_t vl = 0;
        int rc = akv_get(db, k, (size_t)kl, &v, &vl);
        if (last[i] < 0) {
            cr_assert_eq(rc, AKV_NOTFOUND, "%s: %s was deleted, got rc %d", when, k, rc);
            continue;
        }
        cr_assert_eq(rc, AKV_OK, "%s: %s lost: %s", when, k, akv_errmsg());
        int wl = snprintf(want, sizeof want, "round-%d-", last[i]);
        cr_assert(vl > (size_t)wl && memcmp(v, want, (size_t)wl) == 0, "%s: %s holds %.*s, want round %d",
                  when, k, (int)(vl < 12 ? vl : 12), (const char *)v, last[i]);
        akv_free(v);
    }
}

/* Once no L0 merge runs or is due: how many L0 runs the held compaction
 * does not hold (what close leaves in L0); -1 while a merge is pending. */
static int settled_unheld_l0(akv_db *db)
{
    pthread_mutex_lock(&db->bg.mu);
    akvi_version *v = akvi_current(db);
    int n = 0;
    for (size_t i = 0; i < v->n_run; i++)
        n += v->runs[i]->info.level == 0 && v->runs[i]->info.id >= db->bg.l0_held_below;
    if (db->bg.l0_merging || akvi_l0_merge_due(db, v))
        n = -1;
    akvi_version_unref(v);
    pthread_mutex_unlock(&db->bg.mu);
    return n;
}

/* One round: every key written (or deleted) again, then flushed. */
static void merge_round(akv_db *db, int round, int *last)
{
    char k[32], v[220];
    for (int i = 0; i < MERGE_KEYS; i++) {
        int kl = snprintf(k, sizeof k, "merge-%d", i);
        if (round > 0 && i % 7 == round % 7) {
            cr_assert_eq(akv_delete(db, k, (size_t)kl), AKV_OK, "%s", akv_errmsg());
            last[i] = -1;
            continue;
        }
        memset(v, 'v', sizeof v);
        int n = snprintf(v, sizeof v, "round-%d-", round);
        v[n] = 'v';
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
        last[i] = round;
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
}

static void *close_thread(void *db)
{
    return (void *)(intptr_t)akv_close(db);
}

/* Close while the compaction thread is held, letting it go only once close
 * has told the background threads to stop: the held step ends, and no other
 * starts, so what the test built is what close leaves on disk. */
static void close_releasing_hold(akv_db *db)
{
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, close_thread, db), 0);
    for (bool down = false; !down; usleep(1000)) {
        pthread_mutex_lock(&db->bg.mu);
        down = db->bg.shutdown;
        pthread_mutex_unlock(&db->bg.mu);
    }
    set_hold(false);
    void *rc = NULL;
    pthread_join(t, &rc);
    cr_assert_eq((int)(intptr_t)rc, AKV_OK, "close: %s", akv_errmsg());
}

/*
 * While the compaction thread is inside a step (held by the hook), the
 * flush thread merges the newest L0 runs into one: a lookup checks fewer
 * L0 slots, and every key still reads its newest value or its deletion,
 * after the merges, after a reopen, and after a repair that has lost the
 * catalog (repair orders L0 by run id, which a merge keeps right).
 */
static void l0_merge_test(akv_layout layout, const char *tag)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, tag);
    akv_options o;
    small_options(&o, layout, NULL);
    akv_db *db = open_held(dir, &o);
    int last[MERGE_KEYS];
    int round = 0;
    for (; round < MERGE_ROUNDS; round++)
        merge_round(db, round, last);
    /* The flush thread merges when it has nothing to flush: wait for it,
     * until no merge runs or is due (not a time measured; it only bounds a
     * hang). The repair below orders L0 runs: one more round while fewer
     * than two L0 runs lie outside the held compaction (how the merges
     * fell depends on the threads' timing). */
    akv_stats st;
    int unheld = -1;
    for (int tries = 0; tries < 3000; tries++) {
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        unheld = settled_unheld_l0(db);
        if (st.l0_merges >= 2 && unheld >= 2)
            break;
        if (st.l0_merges >= 2 && unheld >= 0 && round < MERGE_ROUNDS + 4)
            merge_round(db, round++, last);
        usleep(10000);
    }
    cr_assert_geq(unheld, 2, "%d L0 runs outside the held compaction", unheld);
    cr_assert_geq(st.l0_merges, 2, "%llu L0 merges while the compaction was held",
                  (unsigned long long)st.l0_merges);
    cr_assert_lt(st.runs_per_level[0], MERGE_ROUNDS - 2, "%u L0 runs after %d flushes and %llu merges",
                 st.runs_per_level[0], MERGE_ROUNDS, (unsigned long long)st.l0_merges);
    check_rounds(db, last, "merged, compaction held");
    close_releasing_hold(db);

    /* Repair, without the catalog, what that left (merged L0 runs among
     * them); opened with compactions held, lookups see exactly that. */
    char path[600];
    for (int slot = 0; slot < 2; slot++) {
        snprintf(path, sizeof path, "%s/CATALOG.%d", dir, slot);
        cr_assert_eq(unlink(path), 0, "%s: %s", path, strerror(errno));
    }
    akv_repair_report rep;
    cr_assert_eq(akv_repair(dir, &o, &rep), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(rep.entries_lost, 0, "%s", rep.text);
    akv_free(rep.text);
    db = open_held(dir, &o);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_geq(st.runs_per_level[0], 2, "%u L0 runs to order after the repair", st.runs_per_level[0]);
    check_rounds(db, last, "repaired without a catalog");
    close_releasing_hold(db);
    atomic_store(&akvi_hook_before_compaction, NULL);

    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    check_rounds(db, last, "reopened");
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    check_rounds(db, last, "compacted");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* Under a bg.mu-protected flag: is the compaction thread inside a step? */
static bool compacting(akv_db *db)
{
    pthread_mutex_lock(&db->bg.mu);
    bool c = db->bg.compacting;
    pthread_mutex_unlock(&db->bg.mu);
    return c;
}

static void flush_one_run(akv_db *db, int round)
{
    char k[32], v[200];
    memset(v, 'b', sizeof v);
    for (int i = 0; i < 100; i++) {
        int kl = snprintf(k, sizeof k, "backlog-%d-%d", round, i);
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
}

/* L0 runs are merged only once L0 holds twice the compaction trigger's
 * runs: below that, a merge rewrites what the next compaction takes anyway
 * (compact.c). With the trigger at 5 and a compaction held on its 5 runs,
 * 4 more flushes leave 9 runs, 4 of them newer than the compaction's (as
 * many as a merge takes), and no merge; the 10th run brings one. */
Test(lsm, l0_merges_wait_for_a_backlog)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "backlog");
    akv_options o;
    small_options(&o, AKV_LAYOUT_HASH, NULL);
    o.l0_compaction_trigger = 5;
    akv_db *db = open_held(dir, &o);
    for (int r = 0; r < 5; r++)
        flush_one_run(db, r);
    for (int tries = 0; tries < 3000 && !compacting(db); tries++)
        usleep(10000); /* bounds a hang only */
    cr_assert(compacting(db), "no compaction started at the trigger");
    for (int r = 5; r < 9; r++)
        flush_one_run(db, r);
    /* A merge, if one were due, would start at the flush thread's next turn,
     * which the empty flush below gives it and waits on. */
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    usleep(200000);
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.runs_per_level[0], 9, "%u L0 runs", st.runs_per_level[0]);
    cr_assert_eq(st.l0_merges, 0, "%llu L0 merges below the backlog", (unsigned long long)st.l0_merges);
    flush_one_run(db, 9);
    for (int tries = 0; tries < 3000; tries++) {
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        if (st.l0_merges >= 1)
            break;
        usleep(10000);
    }
    cr_assert_geq(st.l0_merges, 1, "no L0 merge with %u L0 runs, 10 flushed", st.runs_per_level[0]);
    cr_assert_lt(st.runs_per_level[0], 10, "%u L0 runs after a merge", st.runs_per_level[0]);
    close_releasing_hold(db);
    atomic_store(&akvi_hook_before_compaction, NULL);
    akvt_rmrf(dir);
}

Test(lsm, l0_merges_keep_newest_first_hash)
{
    l0_merge_test(AKV_LAYOUT_HASH, "l0merge-h");
}

Test(lsm, l0_merges_keep_newest_first_ordered)
{
    l0_merge_test(AKV_LAYOUT_ORDERED, "l0merge-o");
}

/* ---- the L0 front (l0front.c) ------------------------------------------- */

#define FRONT_SPACE  600
#define FRONT_ROUNDS 12

/* Mean filters an absent key checks (akv_get_info.slots_checked), over
 * `n` keys never written; each must be NOTFOUND. */
static double absent_filters(akv_db *db, int n)
{
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        char k[32];
        int kl = snprintf(k, sizeof k, "front-%dx", i); /* inside the keys' range */
        akv_get_info info;
        cr_assert_eq(akv_get_ex(db, k, (size_t)kl, NULL, NULL, &info), AKV_NOTFOUND, "front-%dx: %s", i,
                     akv_errmsg());
        sum += info.slots_checked;
    }
    return (double)sum / n;
}

/* Every key of the space against the model: deletions read as deletions. */
static void front_check(akv_db *db, const akvt_model *m, const char *when)
{
    for (int i = 0; i < FRONT_SPACE; i++) {
        char k[32];
        int kl = snprintf(k, sizeof k, "front-%d", i);
        void *v = NULL;
        size_t vl = 0;
        int rc = akv_get(db, k, (size_t)kl, &v, &vl);
        const akvt_pair *p = akvt_model_get(m, k, (size_t)kl);
        if (!p) {
            cr_assert_eq(rc, AKV_NOTFOUND, "%s: %s should be absent (rc %d)", when, k, rc);
            continue;
        }
        cr_assert_eq(rc, AKV_OK, "%s: %s should be present (rc %d: %s)", when, k, rc, akv_errmsg());
        cr_assert(vl == p->vlen && memcmp(v, p->val, vl) == 0, "%s: %s has the wrong value", when, k);
        akv_free(v);
    }
}

/* Distinct fronts of the current L0 runs, and the runs behind one. */
static void l0_fronts(akv_db *db, size_t *fronts, size_t *behind)
{
    akvi_version *v = akvi_current(db);
    for (size_t i = 0; i < v->n_run && v->runs[i]->info.level == 0; i++) {
        const akvi_front *f = v->runs[i]->front;
        bool seen = false;
        for (size_t j = 0; f && j < i && !seen; j++)
            seen = v->runs[j]->front == f;
        *fronts += f && !seen;
        *behind += f != NULL;
    }
    akvi_version_unref(v);
}

/* One round of front_test: 150 seeded puts and deletions over the key
 * space, mirrored in m, then a flush, and every key checked. */
static void front_round(akv_db *db, akvt_model *m, uint64_t *rng, int round)
{
    for (int j = 0; j < 150; j++) {
        char k[32], v[64];
        int kl = snprintf(k, sizeof k, "front-%d", (int)(akvt_rand(rng) % FRONT_SPACE));
        if (akvt_rand(rng) % 3 == 0) {
            cr_assert_eq(akv_delete(db, k, (size_t)kl), AKV_OK, "%s", akv_errmsg());
            akvt_model_del(m, k, (size_t)kl);
        } else {
            int vl = snprintf(v, sizeof v, "r%d-%llu", round, (unsigned long long)akvt_rand(rng));
            cr_assert_eq(akv_put(db, k, (size_t)kl, v, (size_t)vl), AKV_OK, "%s", akv_errmsg());
            akvt_model_put(m, k, (size_t)kl, v, (size_t)vl);
        }
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    front_check(db, m, "after a flush");
}

/*
 * A property test of the front: seeded random puts, overwrites and
 * deletions over a small key space, one flush per round, with the
 * compaction held so that L0 piles up (and the flush thread merges it).
 * After every round each key reads as the model has it: a deletion in a
 * newer L0 run is never hidden by the front (it holds the tombstones'
 * hashes), so no older value comes back. An absent key checks the front
 * instead of each L0 run; after a reopen the runs have no front and are
 * checked one by one, with the same answers.
 */
static void front_test(akv_layout layout, const char *tag, uint64_t seed)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, tag);
    akv_options o;
    small_options(&o, layout, NULL);
    o.l0_compaction_trigger = 3;
    akv_db *db = open_held(dir, &o);
    akvt_model m = {0};
    uint64_t rng = seed;
    /* Rounds go on past FRONT_ROUNDS (up to three times as many) until
     * L0 holds at least 4 runs and some share a front: the flush thread's
     * L0 merges, timed by the machine, may have folded them. */
    akv_stats st;
    size_t fronts = 0, behind = 0;
    for (int round = 0; round < 3 * FRONT_ROUNDS; round++) {
        front_round(db, &m, &rng, round);
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        l0_fronts(db, &fronts, &behind);
        if (round + 1 >= FRONT_ROUNDS && st.runs_per_level[0] >= 4 && fronts < behind)
            break;
    }
    cr_assert_geq(st.runs_per_level[0], 4, "%u L0 runs", st.runs_per_level[0]);
    /* The L0 runs share fronts (a merged run keeps its inputs'): an absent
     * key checks each front once, and the runs behind one only when it
     * lets the key through (5-6 % at half the budget's bits). */
    cr_assert_lt(fronts, behind, "%zu fronts for %zu L0 runs", fronts, behind);
    double with = absent_filters(db, 2000);
    cr_assert_leq(with, (double)fronts + 0.25 * (double)st.runs_per_level[0],
                  "%.2f filters per absent key with %u L0 runs, %zu of them behind %zu fronts", with,
                  st.runs_per_level[0], behind, fronts);
    uint64_t l0_runs = st.runs_per_level[0];
    close_releasing_hold(db);

    db = open_held(dir, &o);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    front_check(db, &m, "reopened: no fronts");
    double without = absent_filters(db, 2000);
    cr_assert_geq(without, (double)st.runs_per_level[0] - 0.5,
                  "%.2f filters per absent key, %u L0 runs (%llu before)", without, st.runs_per_level[0],
                  (unsigned long long)l0_runs);
    close_releasing_hold(db);
    atomic_store(&akvi_hook_before_compaction, NULL);

    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    front_check(db, &m, "compacted");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_model_free(&m);
    akvt_rmrf(dir);
}

Test(l0front, deletions_are_never_hidden_hash)
{
    front_test(AKV_LAYOUT_HASH, "front-h", 0xf407);
}

Test(l0front, deletions_are_never_hidden_ordered)
{
    front_test(AKV_LAYOUT_ORDERED, "front-o", 0xf408);
}
