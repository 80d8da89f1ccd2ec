/*
 * memtable.c — memtables: creation, rotation into a family of the pool
 * (mempool.c), the wait for the writers still inside a rotated one, and
 * recovery from the WAL. Their keys' hashes go to the guard
 * (guard.c). A database of an older format also has memtables in families
 * of their own (mem.<gen>) until open has flushed them (recover.c).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

int akvi_mem_create(akv_db *db, uint64_t gen, rocksdb_column_family_handle_t *cf, int pool, akvi_mem **out)
{
    akvi_mem *m = calloc(1, sizeof *m);
    if (!m)
        return akvi_err(AKV_ENOMEM, "out of memory");
    atomic_init(&m->refs, 1);
    m->db = db;
    m->gen = gen;
    m->cf = cf;
    m->pool = pool;
    *out = m;
    return AKV_OK;
}

int akvi_rotate(akv_db *db)
{
    /* No family is created: one of the pool's, its generation recorded
     * before the first write reaches it (open refuses a gap in the
     * memtable generations, recover.c). */
    uint64_t gen = db->wr.next_mem_gen;
    size_t idx;
    int rc = akvi_pool_take(db, gen, &idx);
    if (rc != AKV_OK)
        return rc;
    akvi_mem *m = NULL;
    rc = akvi_mem_create(db, gen, db->pool.cf[idx], (int)idx, &m);
    if (rc == AKV_OK)
        rc = akvi_apply(db, m, NULL, NULL, 0, NULL, 0);
    if (rc != AKV_OK) {
        if (m)
            akvi_mem_unref(m); /* not obsolete: the family is left alone */
        akvi_pool_put_back(db, idx);
        return rc;
    }
    db->wr.next_mem_gen++;
    return AKV_OK;
}

int akvi_mem_recover(akv_db *db, akvi_mem *m)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, m->cf);
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) {
        size_t iklen, vlen, klen;
        const uint8_t *ik = (const uint8_t *)rocksdb_iter_key(it, &iklen);
        (void)rocksdb_iter_value(it, &vlen);
        const uint8_t *uk = akvi_ukey(db, ik, iklen, &klen);
        akvi_guard_recover_insert(db, m, akv_hash_key(uk, klen, db->seed));
        atomic_store_explicit(&m->written, true, memory_order_release);
        atomic_fetch_add(&m->bytes, iklen + vlen);
        atomic_fetch_add(&m->entries, 1);
    }
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    return err ? akvi_rocks_err(err, "recovering a memtable") : AKV_OK;
}

void akvi_mem_quiesce(akvi_mem *m)
{
    /* A writer past wr.mu is inside one RocksDB write: microseconds. */
    while (atomic_load_explicit(&m->writers, memory_order_acquire) > 0)
        sched_yield();
}

int akvi_mem_add_active(akv_db *db, akvi_mem **mems, size_t *n)
{
    if (*n > 0 && mems[0]->pool >= 0)
        return AKV_OK;
    uint64_t gen = db->wr.next_mem_gen;
    size_t idx;
    int rc = akvi_pool_take(db, gen, &idx);
    if (rc == AKVI_POOL_WAIT) /* nothing is being emptied at open */
        rc = akvi_err(AKV_EIO, "no family of the memtable pool is free");
    if (rc != AKV_OK)
        return rc;
    memmove(mems + 1, mems, *n * sizeof *mems);
    rc = akvi_mem_create(db, gen, db->pool.cf[idx], (int)idx, &mems[0]);
    if (rc != AKV_OK) {
        memmove(mems, mems + 1, *n * sizeof *mems);
        akvi_pool_put_back(db, idx);
        return rc;
    }
    db->wr.next_mem_gen++;
    ++*n;
    return AKV_OK;
}
