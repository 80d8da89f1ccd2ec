/*
 * test_mempool.c — the fixed pool of memtable families (engine/mempool.c):
 * rotations and flushes create and drop no memtable family and leave the
 * pool's families without files; an iterator that holds flushed memtables
 * grows the pool instead of stopping the writers; open takes each family's
 * generation from its record, empties the stale ones, and takes a copy of an
 * older format's memtable over its own family (a move interrupted before
 * the drop).
 */
#include <criterion/criterion.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "engine/internal.h"
#include "support/damage.h"
#include "support/kvmodel.h"
#include "support/numbered.h"

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void opts(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 32 << 10;
    o->sst_target_bytes = 16 << 10;
    o->block_cache_bytes = 1 << 20;
    o->log = quiet;
}

/* The families of database dir: how many of the pool's, and of the older
 * format's mem.<gen>. */
static void count_families(const char *dir, size_t *pool, size_t *mem)
{
    *pool = akvt_families(dir, "pool.", true);
    *mem = akvt_families(dir, "mem.", true);
}

/* SST files RocksDB holds for the pool's families (all, or family `only`).
 * The active memtable's family may hold some after a reopen (RocksDB
 * flushes what it replays from its WAL); an emptied one holds none. */
static size_t pool_files(akv_db *db, const char *only)
{
    akvi_live_sst *l = NULL;
    size_t n = 0, files = 0;
    cr_assert_eq(akvi_live_ssts(db->rk.rdb, &l, &n), AKV_OK, "%s", akv_errmsg());
    for (size_t i = 0; i < n; i++)
        files += only ? strcmp(l[i].cf, only) == 0 : strncmp(l[i].cf, "pool.", 5) == 0;
    akvi_live_ssts_free(l, n);
    return files;
}

static void no_family_changes(akv_layout layout)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rot");
    akv_options o;
    opts(&o, layout);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akv_stats before, after;
    cr_assert_eq(akv_get_stats(db, &before), AKV_OK);
    akvt_put_numbered(db, 0, 6000); /* some 7 memtables of 32 KiB */
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    uint64_t flushes = after.flushes - before.flushes,
             empties = after.memtable_empties - before.memtable_empties;
    cr_assert_geq(flushes, 3, "%llu flushes", (unsigned long long)flushes);
    /* every flushed memtable's family was emptied (akv_flush empties the
     * grave before it returns), none created or dropped for it */
    cr_assert_eq(empties, flushes, "%llu flushes, %llu families emptied", (unsigned long long)flushes,
                 (unsigned long long)empties);
    cr_assert_eq(pool_files(db, NULL), 0, "emptied pool families still hold SST files");
    size_t pool, mem;
    count_families(dir, &pool, &mem);
    cr_assert_eq(pool, AKVI_POOL_SIZE, "%zu pool families", pool);
    cr_assert_eq(mem, 0, "%zu mem.<gen> families", mem);
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    count_families(dir, &pool, &mem);
    cr_assert_eq(pool, AKVI_POOL_SIZE, "%zu pool families after a reopen", pool);
    akvt_rmrf(dir);
}

Test(mempool, rotations_reuse_the_pool_hash)
{
    no_family_changes(AKV_LAYOUT_HASH);
}

Test(mempool, rotations_reuse_the_pool_ordered)
{
    no_family_changes(AKV_LAYOUT_ORDERED);
}

/* Memtables written and not flushed come back after a close (which does
 * not flush) in the order of the generations their families record. */
Test(mempool, unflushed_memtables_come_back_in_order)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "back");
    akv_options o;
    opts(&o, AKV_LAYOUT_ORDERED);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    /* the same keys over and over: only the newest memtable's value may win */
    char k[32], v[64];
    for (unsigned round = 0; round < 6; round++)
        for (unsigned i = 0; i < 500; i++) {
            size_t kl = akvt_numbered_key(k, i);
            int vl = snprintf(v, sizeof v, "round-%u-%u", round, i);
            cr_assert_eq(akv_put(db, k, kl, v, (size_t)vl), AKV_OK, "%s", akv_errmsg());
        }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvi_version *cur = akvi_current(db);
    for (size_t i = 1; i < cur->n_mem; i++)
        cr_assert_eq(cur->mems[i - 1]->gen, cur->mems[i]->gen + 1, "memtable generations out of order");
    for (size_t i = 0; i < cur->n_mem; i++)
        cr_assert_geq(cur->mems[i]->pool, 0, "a memtable outside the pool");
    akvi_version_unref(cur);
    for (unsigned i = 0; i < 500; i++) {
        size_t kl = akvt_numbered_key(k, i);
        int vl = snprintf(v, sizeof v, "round-5-%u", i);
        void *got = NULL;
        size_t gl = 0;
        cr_assert_eq(akv_get(db, k, kl, &got, &gl), AKV_OK, "key %u lost: %s", i, akv_errmsg());
        cr_assert(gl == (size_t)vl && memcmp(got, v, gl) == 0, "key %u: an older memtable's value", i);
        akv_free(got);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* An iterator holds its version's memtables, flushed or not: with more of
 * them held than the pool has spare, the writers go on (the pool grows)
 * instead of waiting for the iterators, and what each sees stays. */
Test(mempool, iterators_held_across_flushes_do_not_stop_writers)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "iter");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { ITERS = AKVI_POOL_SIZE + 2, STEP = 1200 }; /* 1200 records: more than a memtable */
    akv_iter *its[ITERS];
    for (unsigned r = 0; r < ITERS; r++) {
        akvt_put_numbered(db, r * STEP, (r + 1) * STEP);
        cr_assert_eq(akv_iter_create(db, &its[r]), AKV_OK, "%s", akv_errmsg());
    }
    akvt_put_numbered(db, ITERS * STEP, (ITERS + 4) * STEP);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    for (unsigned r = 0; r < ITERS; r++) {
        size_t seen = 0;
        for (akv_iter_seek_first(its[r]); akv_iter_valid(its[r]); akv_iter_next(its[r]))
            seen++;
        cr_assert_eq(akv_iter_status(its[r]), AKV_OK, "%s", akv_errmsg());
        cr_assert_eq(seen, (r + 1) * STEP, "iterator %u saw %zu keys, not %u", r, seen, (r + 1) * STEP);
        akv_iter_destroy(its[r]);
    }
    size_t pool, mem;
    count_families(dir, &pool, &mem);
    cr_assert_gt(pool, AKVI_POOL_SIZE, "the pool did not grow (%zu)", pool);
    cr_assert_leq(pool, AKVI_POOL_MAX);
    unsigned n = (ITERS + 5) * STEP;
    akvt_put_numbered(db, (ITERS + 4) * STEP, n);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, n);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, n);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    size_t pool2;
    count_families(dir, &pool2, &mem);
    cr_assert_eq(pool2, pool, "the pool changed at reopen: %zu -> %zu families", pool, pool2);
    akvt_rmrf(dir);
}

/* The bare RocksDB instance of database dir, every family open. */
typedef struct bare {
    rocksdb_options_t *o;
    rocksdb_t *db;
    char **names;
    size_t n;
    rocksdb_column_family_handle_t **h;
} bare;

static void bare_open(bare *b, const char *dir)
{
    char rdir[600];
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    b->o = rocksdb_options_create();
    char *err = NULL;
    b->names = rocksdb_list_column_families(b->o, rdir, &b->n, &err);
    cr_assert_null(err);
    const rocksdb_options_t **cfo = calloc(b->n, sizeof *cfo);
    b->h = calloc(b->n, sizeof *b->h);
    for (size_t i = 0; i < b->n; i++)
        cfo[i] = b->o;
    b->db =
        rocksdb_open_column_families(b->o, rdir, (int)b->n, (const char *const *)b->names, cfo, b->h, &err);
    free(cfo);
    cr_assert_null(err, "%s", err);
}

static rocksdb_column_family_handle_t *bare_cf(bare *b, const char *name)
{
    for (size_t i = 0; i < b->n; i++)
        if (strcmp(b->names[i], name) == 0)
            return b->h[i];
    return NULL;
}

static void bare_close(bare *b)
{
    for (size_t i = 0; i < b->n; i++)
        rocksdb_column_family_handle_destroy(b->h[i]);
    rocksdb_close(b->db);
    rocksdb_list_column_families_destroy(b->names, b->n);
    free(b->h);
    rocksdb_options_destroy(b->o);
}

static void put_marker(rocksdb_t *db, rocksdb_column_family_handle_t *cf, uint64_t gen)
{
    uint8_t v[8];
    for (int i = 0; i < 8; i++)
        v[i] = (uint8_t)(gen >> (8 * i));
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_put_cf(db, wo, cf, "", 0, (const char *)v, 8, &err);
    rocksdb_writeoptions_destroy(wo);
    cr_assert_null(err, "%s", err);
}

/* A family left holding a memtable that is already in a run (a crash
 * before it was emptied): open empties it, and none of what it holds
 * reaches a reader. */
Test(mempool, a_stale_family_is_emptied_at_open)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "stale");
    akv_options o;
    opts(&o, AKV_LAYOUT_ORDERED);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 100);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg()); /* generation 1 is in a run */
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    bare b = {0};
    bare_open(&b, dir);
    rocksdb_column_family_handle_t *cf = bare_cf(&b, "pool.6"); /* not the active one */
    cr_assert_not_null(cf);
    put_marker(b.db, cf, 1);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_put_cf(b.db, wo, cf, "ghost", 5, "\x01ghost", 6, &err); /* a PUT-tagged value */
    cr_assert_null(err);
    rocksdb_writeoptions_destroy(wo);
    bare_close(&b);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.memtable_empties, 1, "%llu families emptied at open",
                 (unsigned long long)st.memtable_empties);
    cr_assert_eq(akv_get(db, "ghost", 5, NULL, NULL), AKV_NOTFOUND, "a stale family's key is visible");
    akvt_expect_numbered(db, 100);
    cr_assert_eq(pool_files(db, "pool.6"), 0, "the emptied family still holds SST files");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* A new database in dir, closed, then key = val put straight into its
 * family cf with RocksDB, behind adaptkv's back. */
static void put_behind(const char *dir, const akv_options *o, const char *cf, const char *key, size_t klen,
                       const char *val, size_t vlen)
{
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    bare b = {0};
    bare_open(&b, dir);
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    char *err = NULL;
    rocksdb_put_cf(b.db, wo, bare_cf(&b, cf), key, klen, val, vlen, &err);
    cr_assert_null(err, "%s", err);
    rocksdb_writeoptions_destroy(wo);
    bare_close(&b);
}

/* A family holding data under no generation cannot come from adaptkv:
 * open refuses (and changes nothing) rather than guess. */
Test(mempool, data_without_a_generation_is_refused)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "nogen");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    put_behind(dir, &o, "pool.5", "0123456789", 10, "\x01x", 2);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT, "open accepted data under no generation");
    akvt_rmrf(dir);
}

/* A generation record that is not 8 bytes is damage open cannot read
 * past: refused like data without a record, naming the family and
 * akv_repair. */
Test(mempool, a_generation_record_of_the_wrong_size_is_refused)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "badgen");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    put_behind(dir, &o, "pool.4", "", 0, "\x07\0\0\0\0\0\0", 7);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT, "open read a 7-byte generation record");
    cr_assert(strstr(akv_errmsg(), "pool.4") && strstr(akv_errmsg(), "7 bytes") &&
                  strstr(akv_errmsg(), "akv_repair"),
              "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/* Open moves an older format's memtable into the pool with one batch and
 * then drops its family; a crash in between leaves both: the copy wins and
 * the family goes. */
Test(mempool, an_interrupted_move_into_the_pool_keeps_the_copy)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "move");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 200); /* generation 1, in the pool */
    akvi_version *cur = akvi_current(db);
    uint64_t gen = cur->mems[0]->gen;
    akvi_version_unref(cur);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    /* The family the move came from: the same entries under mem.<gen>,
     * without the last 50 (a copy is whole; the old family may be anything
     * older). */
    bare b = {0};
    bare_open(&b, dir);
    char name[32];
    snprintf(name, sizeof name, "mem.%llu", (unsigned long long)gen);
    char *err = NULL;
    rocksdb_column_family_handle_t *old = rocksdb_create_column_family(b.db, b.o, name, &err);
    cr_assert_null(err, "%s", err);
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    size_t copied = 0;
    for (size_t i = 0; i < b.n; i++) {
        if (strncmp(b.names[i], "pool.", 5) != 0)
            continue;
        rocksdb_iterator_t *it = rocksdb_create_iterator_cf(b.db, ro, b.h[i]);
        for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
            size_t kl, vl;
            const char *k = rocksdb_iter_key(it, &kl), *v = rocksdb_iter_value(it, &vl);
            if (kl == 0 || copied >= 150)
                continue; /* the generation record is the pool's */
            rocksdb_put_cf(b.db, wo, old, k, kl, v, vl, &err);
            cr_assert_null(err);
            copied++;
        }
        rocksdb_iter_destroy(it);
    }
    cr_assert_eq(copied, 150);
    rocksdb_column_family_handle_destroy(old);
    rocksdb_readoptions_destroy(ro);
    rocksdb_writeoptions_destroy(wo);
    bare_close(&b);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 200);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    size_t pool, mem;
    count_families(dir, &pool, &mem);
    cr_assert_eq(mem, 0, "the moved memtable's old family survived");
    akvt_rmrf(dir);
}

/* A family of the pool gone (dropped by hand): open creates it again;
 * repair keeps the memtables the others hold, drops no pool family, and
 * the database opens with the whole pool. */
Test(mempool, a_missing_family_is_created_again_and_repair_keeps_the_pool)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "miss");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 2000); /* a few memtables, some flushed, the newest not */
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    bare b = {0};
    bare_open(&b, dir);
    char *err = NULL;
    rocksdb_drop_column_family(b.db, bare_cf(&b, "pool.6"), &err);
    cr_assert_null(err, "%s", err);
    bare_close(&b);
    size_t pool, mem;
    count_families(dir, &pool, &mem);
    cr_assert_eq(pool, AKVI_POOL_SIZE - 1);
    akv_repair_report r;
    cr_assert_eq(akv_repair(dir, &o, &r), AKV_OK, "%s", akv_errmsg());
    akv_free(r.text);
    count_families(dir, &pool, &mem);
    cr_assert_geq(pool, AKVI_POOL_SIZE - 1, "repair dropped a pool family");
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 2000);
    akvt_put_numbered(db, 2000, 4000);
    akvt_expect_numbered(db, 4000);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    count_families(dir, &pool, &mem);
    cr_assert_eq(pool, AKVI_POOL_SIZE, "%zu pool families after open", pool);
    akvt_rmrf(dir);
}
