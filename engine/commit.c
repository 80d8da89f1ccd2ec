/*
 * commit.c — the commit step that ends every flush and compaction
 * (docs/design.md, "Commit"):
 *
 *   SSTs written, synced and moved into DIR/runs, that directory synced
 *   (runwriter.c), filter files fsynced, their directory synced once
 *   (akvi_publish)
 *   -> catalog file written and synced (akvi_commit)
 *   -> new version installed (akvi_apply)
 *   -> replaced runs' files and filter files deleted at their last unref
 *      (grave.c)
 */
#include <stdlib.h>

#include "engine/internal.h"
#include "engine/lockorder.h"

int akvi_commit(akv_db *db, akvi_run **runs, size_t n_run, uint64_t flushed_mem_gen)
{
    /* One run id ahead is reserved, so the next flush or compaction names
     * its family without a catalog write of its own (akvi_catalog_reserve). */
    akvi_catalog c = {.layout = (uint32_t)db->layout,
                      .seed = db->seed,
                      .next_run_id = db->vs.next_run_id + 1,
                      .flushed_mem_gen = flushed_mem_gen,
                      .n_run = n_run};
    c.runs = calloc(n_run ? n_run : 1, sizeof *c.runs);
    if (!c.runs)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_run; i++)
        c.runs[i] = runs[i]->info; /* shallow: encode only reads */
    uint8_t *mbuf = NULL;
    size_t mlen = 0;
    akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
    /* The miss log is a hint: written unsynced to the meta family, under
     * the writer lock (docs/design.md, "Concurrency": RocksDB may group it
     * with user writes, which reach RocksDB outside that lock; correct, and
     * suppressed under ThreadSanitizer, which cannot see RocksDB's own
     * synchronization: tsan.c). */
    int rc = akvi_misslog_encode(db->ml, &mbuf, &mlen);
    if (rc == AKV_OK) {
        akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
        rc = akvi_meta_put(db, "misslog", mbuf, mlen, false);
        akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
    }
    /* The catalog: its own file, synced, independent of RocksDB's WAL. */
    if (rc == AKV_OK)
        rc = akvi_catalog_store(db, &c);
    /* RocksDB deletes a WAL file only once every family with data in it has
     * been flushed or dropped; memtable families are dropped after their
     * flush, but the meta family is written at every commit and would pin
     * every WAL file ever made. So once a memtable's worth has gone into the
     * WAL since the last time, the meta family is flushed (not waited for;
     * measured: flushing it at every commit made a commit 4x dearer). */
    uint64_t user = atomic_load(&db->st.bytes_written_user);
    db->cat.meta_wal_bytes += mlen;
    bool flush_meta =
        rc == AKV_OK && db->cat.meta_wal_bytes + (user - db->cat.meta_flush_user) >= db->opt.memtable_bytes;
    if (flush_meta) {
        db->cat.meta_wal_bytes = 0;
        db->cat.meta_flush_user = user;
    }
    akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    free(c.runs);
    free(mbuf);
    if (flush_meta)
        akvi_meta_flush(db, false);
    return rc;
}

int akvi_publish(akv_db *db, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run **add, size_t n_add)
{
    akvi_mutex_lock(&db->vs.pubmu, AKVI_RANK_PUB);
    akvi_version *v = akvi_current(db);
    size_t n;
    akvi_run **runs = akvi_runs_after(v, drop, n_drop, add, n_add, &n);
    akvi_version_unref(v);
    uint64_t flushed = mem ? mem->gen : db->vs.flushed_mem_gen;
    int rc = runs ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    /* The new runs' filter files (each replaced and fsynced by its run
     * writer) are durable with one directory sync before the catalog names
     * them: one per commit, however many runs it adds (docs/design.md,
     * "Syncs"). */
    if (rc == AKV_OK && n_add > 0)
        rc = akvi_fsync_dir(db->fdir);
    if (rc == AKV_OK)
        rc = akvi_commit(db, runs, n, flushed);
    free(runs);
    if (rc == AKV_OK) {
        db->vs.flushed_mem_gen = flushed;
        for (size_t i = 0; i < n_drop; i++)
            atomic_store(&drop[i]->obsolete, true);
        if (mem) {
            atomic_store(&mem->obsolete, true);
            akvi_guard_draining(db, mem);
        }
        rc = akvi_apply(db, NULL, mem, drop, n_drop, add, n_add);
        if (mem && rc != AKV_OK)
            akvi_guard_draining(db, NULL);
    }
    akvi_mutex_unlock(&db->vs.pubmu, AKVI_RANK_PUB);
    if (mem && rc == AKV_OK)
        akvi_guard_remove_mem(db, mem);
    return rc;
}
