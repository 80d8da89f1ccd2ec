/*
 * commit.c — the commit step that ends every flush and compaction
 * (docs/design.md, "Commit"):
 *
 *   SSTs written and ingested, filter files fsynced (runwriter.c)
 *   -> catalog written with one synced write (akvi_commit)
 *   -> new version installed (akvi_apply)
 *   -> replaced CFs and filter files dropped at their last unref (version.c)
 */
#include <stdlib.h>

#include "engine/internal.h"

int akvi_commit(akv_db *db, akvi_run **runs, size_t n_run, uint64_t flushed_mem_gen)
{
    akvi_catalog c = {.layout = (uint32_t)db->layout,
                      .seed = db->seed,
                      .next_run_id = db->next_run_id,
                      .flushed_mem_gen = flushed_mem_gen,
                      .n_run = n_run};
    c.runs = calloc(n_run ? n_run : 1, sizeof *c.runs);
    if (!c.runs)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n_run; i++)
        c.runs[i] = runs[i]->info; /* shallow: encode only reads */
    uint8_t *buf = NULL, *mbuf = NULL;
    size_t len, mlen;
    pthread_mutex_lock(&db->catmu);
    int rc = akvi_catalog_encode(&c, &buf, &len);
    free(c.runs);
    /* The miss log rides along unsynced; the catalog's synced write makes
     * the WAL (and so both records) durable. Both go under the writer lock:
     * RocksDB would otherwise merge them into a user write's WAL group,
     * which is correct but invisible to ThreadSanitizer (RocksDB is not
     * instrumented) and costs the user write a synced WAL flush. */
    if (rc == AKV_OK)
        rc = akvi_misslog_encode(db->ml, &mbuf, &mlen);
    pthread_mutex_lock(&db->wmu);
    if (rc == AKV_OK)
        rc = akvi_meta_put(db, "misslog", mbuf, mlen, false);
    if (rc == AKV_OK)
        rc = akvi_meta_put(db, "catalog", buf, len, true);
    pthread_mutex_unlock(&db->wmu);
    pthread_mutex_unlock(&db->catmu);
    free(buf);
    free(mbuf);
    return rc;
}

int akvi_publish(akv_db *db, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run **add, size_t n_add)
{
    pthread_mutex_lock(&db->pubmu);
    akvi_version *v = akvi_current(db);
    size_t n;
    akvi_run **runs = akvi_runs_after(v, drop, n_drop, add, n_add, &n);
    akvi_version_unref(v);
    uint64_t flushed = mem ? mem->gen : db->flushed_mem_gen;
    int rc = runs ? akvi_commit(db, runs, n, flushed) : akvi_err(AKV_ENOMEM, "out of memory");
    free(runs);
    if (rc == AKV_OK) {
        db->flushed_mem_gen = flushed;
        for (size_t i = 0; i < n_drop; i++)
            atomic_store(&drop[i]->obsolete, true);
        if (mem)
            atomic_store(&mem->obsolete, true);
        rc = akvi_apply(db, NULL, mem, drop, n_drop, add, n_add);
    }
    pthread_mutex_unlock(&db->pubmu);
    if (mem && rc == AKV_OK)
        akvi_guard_remove_mem(db, mem);
    return rc;
}
