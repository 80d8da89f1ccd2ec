/*
 * mempool.c — the fixed pool of memtable families (docs/design.md, "Data
 * layout", "Commit"): `pool.<i>` families made with the database and never
 * dropped, each holding one memtable at a time. A rotation takes a free one
 * and records the memtable generation it now holds in the family itself,
 * under the empty key (no data key is empty; scans start at "\0", so no
 * reader meets it), before any write reaches it; a flushed memtable's
 * family is emptied off the write path (one range deletion over the record
 * and every key, a RocksDB flush and a compaction that leave it without
 * files) and becomes free again. Creating or dropping a family stops every RocksDB writer (its
 * MANIFEST and OPTIONS file are rewritten); with the pool, the write path
 * does neither.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/bits.h"
#include "util/clock.h"

void akvi_pool_name(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "pool.%zu", i + 1);
}

static int marker_put(akv_db *db, rocksdb_column_family_handle_t *cf, uint64_t gen)
{
    uint8_t v[8];
    for (int b = 0; b < 8; b++)
        v[b] = (uint8_t)(gen >> (8 * b));
    char *err = NULL;
    rocksdb_put_cf(db->rk.rdb, db->rk.wo, cf, "", 0, (const char *)v, sizeof v, &err);
    return err ? akvi_rocks_err(err, "recording a memtable's generation") : AKV_OK;
}

int akvi_pool_marker(akv_db *db, rocksdb_column_family_handle_t *cf, uint64_t *gen)
{
    char *err = NULL;
    size_t len = 0;
    *gen = 0;
    char *v = rocksdb_get_cf(db->rk.rdb, db->rk.ro, cf, "", 0, &len, &err);
    if (err)
        return akvi_rocks_err(err, "reading a memtable family's generation");
    int rc = AKV_OK;
    if (v && len != 8)
        rc = akvi_err(AKV_ECORRUPT, "a memtable family's generation record is %zu bytes, not 8", len);
    else if (v)
        *gen = akvi_load_le64((const uint8_t *)v);
    rocksdb_free(v);
    return rc;
}

void akvi_pool_init(akv_db *db)
{
    pthread_mutex_init(&db->pool.mu, NULL);
    db->pool.n = 0;
}

void akvi_pool_set(akv_db *db, size_t i, rocksdb_column_family_handle_t *cf, int state)
{
    akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
    db->pool.cf[i] = cf;
    db->pool.state[i] = (uint8_t)state;
    if (i + 1 > db->pool.n)
        db->pool.n = i + 1;
    akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
}

/* Family i made (empty: it holds no generation yet). */
static int create_one(akv_db *db, size_t i)
{
    char name[32];
    akvi_pool_name(i, name, sizeof name);
    rocksdb_column_family_handle_t *cf = NULL;
    int rc = akvi_cf_create(db, name, -1, &cf);
    if (rc == AKV_OK)
        akvi_pool_set(db, i, cf, AKVI_POOL_FREE);
    return rc;
}

int akvi_pool_fill(akv_db *db)
{
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < AKVI_POOL_SIZE; i++)
        if (i >= db->pool.n || !db->pool.cf[i])
            rc = create_one(db, i);
    return rc;
}

/* A free family, marked busy: one of the pool's, or a new one when none
 * is free or being emptied; AKVI_POOL_WAIT when one is being emptied. */
static int claim(akv_db *db, size_t *idx)
{
    akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
    size_t n = db->pool.n, found = n;
    bool emptying = false;
    for (size_t i = 0; i < n; i++) {
        if (found == n && db->pool.cf[i] && db->pool.state[i] == AKVI_POOL_FREE)
            found = i;
        emptying |= db->pool.state[i] == AKVI_POOL_EMPTYING;
    }
    if (found < n)
        db->pool.state[found] = AKVI_POOL_BUSY;
    akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
    if (found == n) {
        /* None free. One being emptied is free within milliseconds: wait
         * for it. Otherwise readers pin flushed memtables (an iterator
         * holds its version): the pool grows by one family, up to
         * AKVI_POOL_MAX, rather than stop the writers until they let go. */
        if (emptying || n >= AKVI_POOL_MAX)
            return AKVI_POOL_WAIT;
        int rc = create_one(db, n);
        if (rc != AKV_OK)
            return rc;
        akvi_log(db, "the memtable pool grew to %zu families (readers hold flushed memtables)", n + 1);
        akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
        db->pool.state[n] = AKVI_POOL_BUSY;
        akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
        found = n;
    }
    *idx = found;
    return AKV_OK;
}

int akvi_pool_take(akv_db *db, uint64_t gen, size_t *idx)
{
    size_t found;
    int rc = claim(db, &found);
    if (rc != AKV_OK)
        return rc;
    /* The generation before any write reaches the family: RocksDB's WAL
     * replays a prefix of what was written, so a recovered write to it
     * implies its record. */
    rc = marker_put(db, db->pool.cf[found], gen);
    if (rc != AKV_OK) {
        akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
        db->pool.state[found] = AKVI_POOL_FREE;
        akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
        return akvi_stop(db, rc);
    }
    *idx = found;
    return AKV_OK;
}

int akvi_pool_adopt(akv_db *db, rocksdb_column_family_handle_t *src, uint64_t gen, size_t *idx)
{
    size_t found;
    int rc = claim(db, &found);
    if (rc == AKVI_POOL_WAIT) /* nothing is being emptied at open */
        rc = akvi_err(AKV_EIO, "no family of the memtable pool is free");
    if (rc != AKV_OK)
        return rc;
    rocksdb_column_family_handle_t *cf = db->pool.cf[found];
    rocksdb_writebatch_t *wb = rocksdb_writebatch_create();
    uint8_t v[8];
    for (int b = 0; b < 8; b++)
        v[b] = (uint8_t)(gen >> (8 * b));
    rocksdb_writebatch_put_cf(wb, cf, "", 0, (const char *)v, sizeof v);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, src);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = rocksdb_iter_key(it, &kl), *val = rocksdb_iter_value(it, &vl);
        rocksdb_writebatch_put_cf(wb, cf, k, kl, val, vl);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (err)
        rc = akvi_rocks_err(err, "reading a memtable family to move it into the pool");
    /* One synced batch: the copy is whole or absent (load_mems). */
    if (rc == AKV_OK) {
        rocksdb_write(db->rk.rdb, db->rk.wo_sync, wb, &err);
        if (err)
            rc = akvi_rocks_err(err, "moving a memtable into the pool");
    }
    rocksdb_writebatch_destroy(wb);
    if (rc != AKV_OK) {
        akvi_pool_set(db, found, cf, AKVI_POOL_FREE);
        return rc;
    }
    *idx = found;
    return AKV_OK;
}

void akvi_pool_put_back(akv_db *db, size_t i)
{
    /* Its record named a generation no memtable took: the next rotation
     * takes that generation again, maybe in another family. */
    char *err = NULL;
    rocksdb_delete_cf(db->rk.rdb, db->rk.wo, db->pool.cf[i], "", 0, &err);
    if (err) {
        akvi_log(db, "warning: could not remove a memtable family's generation: %s", err);
        rocksdb_free(err);
    }
    akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
    db->pool.state[i] = AKVI_POOL_FREE;
    akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
}

void akvi_pool_retire(akv_db *db, size_t i)
{
    akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
    db->pool.state[i] = AKVI_POOL_EMPTYING;
    akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
}

int akvi_pool_empty(akv_db *db, size_t i)
{
    akvi_mutex_lock(&db->pool.mu, AKVI_RANK_POOL);
    rocksdb_column_family_handle_t *cf = db->pool.cf[i];
    akvi_mutex_unlock(&db->pool.mu, AKVI_RANK_POOL);
    if (atomic_load(&db->bg.error) || !cf) {
        akvi_pool_set(db, i, cf, AKVI_POOL_BROKEN); /* reopen empties it */
        return AKV_OK;
    }
    double t0 = akvi_mono_seconds();
    /* From the empty key (its generation record) to the key right after
     * its last: the one range deletion that covers everything it holds. */
    uint64_t gen;
    int rc = akvi_pool_marker(db, cf, &gen);
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, cf);
    uint8_t *hi = NULL;
    size_t hilen = 1; /* "\0": right after the record */
    rocksdb_iter_seek_to_last(it);
    if (rocksdb_iter_valid(it)) {
        const char *k = rocksdb_iter_key(it, &hilen);
        hi = calloc(1, ++hilen); /* the last key with a 0 byte after it: its successor */
        if (hi)
            memcpy(hi, k, hilen - 1);
    } else {
        hi = calloc(1, 1);
    }
    bool any = gen != 0 || hilen > 1;
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    if (rc == AKV_OK && err)
        rc = akvi_rocks_err(err, "reading a memtable family to empty it");
    if (rc == AKV_OK && !hi)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    if (rc == AKV_OK && any) {
        rocksdb_delete_range_cf(db->rk.rdb, db->rk.wo, cf, "", 0, (const char *)hi, hilen, &err);
        if (err)
            rc = akvi_rocks_err(err, "emptying a memtable family");
    }
    free(hi);
    if (rc == AKV_OK && any) {
        /* The range deletion alone would leave the old entries in RocksDB's
         * memtable of the family, and its WAL files unretired: a flush
         * writes out what is left (the deletion only), and a compaction of
         * the family removes that too, so later reads of the family meet
         * no file (docs/design.md, "Data layout"). */
        rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
        rocksdb_flushoptions_set_wait(fo, 1);
        rocksdb_flush_cf(db->rk.rdb, fo, cf, &err);
        rocksdb_flushoptions_destroy(fo);
        if (err)
            rc = akvi_rocks_err(err, "flushing an emptied memtable family");
    }
    if (rc == AKV_OK && any) {
        /* The flush's one file (the range deletion) moved out of L0, which
         * RocksDB does by editing its MANIFEST when the file is alone there
         * (the usual case); then every file of the family below L0 deleted,
         * again by a MANIFEST edit. A compaction that rewrote the file
         * would write an SST, and RocksDB 7.8 aborts on an assertion when
         * such a write fails (docs/reliability.md). Not exclusive: other
         * families' compactions go on meanwhile. */
        rocksdb_compactoptions_t *co = rocksdb_compactoptions_create();
        rocksdb_compactoptions_set_exclusive_manual_compaction(co, 0);
        rocksdb_compact_range_cf_opt(db->rk.rdb, cf, co, NULL, 0, NULL, 0);
        rocksdb_compactoptions_destroy(co);
        rocksdb_delete_file_in_range_cf(db->rk.rdb, cf, NULL, 0, NULL, 0, &err);
        if (err)
            rc = akvi_rocks_err(err, "deleting an emptied memtable family's files");
    }
    if (rc == AKV_OK && any) {
        atomic_fetch_add_explicit(&db->st.memtable_empties, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&db->st.memtable_empty_us, (uint64_t)((akvi_mono_seconds() - t0) * 1e6),
                                  memory_order_relaxed);
    }
    if (rc != AKV_OK) {
        akvi_pool_set(db, i, cf, AKVI_POOL_BROKEN);
        akvi_log(db, "emptying memtable family %zu failed: %s", i + 1, akv_errmsg());
        return akvi_stop(db, rc);
    }
    akvi_pool_set(db, i, cf, AKVI_POOL_FREE);
    return AKV_OK;
}

int akvi_pool_empty_stale(akv_db *db)
{
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < db->pool.n; i++)
        if (db->pool.cf[i] && db->pool.state[i] == AKVI_POOL_STALE)
            rc = akvi_pool_empty(db, i);
    return rc;
}

void akvi_pool_free(akv_db *db)
{
    for (size_t i = 0; i < db->pool.n; i++) {
        if (db->pool.cf[i])
            rocksdb_column_family_handle_destroy(db->pool.cf[i]);
        db->pool.cf[i] = NULL;
    }
    db->pool.n = 0;
}
