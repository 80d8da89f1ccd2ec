/*
 * grave.c — the end of a run or memtable (docs/design.md, "Versions").
 *
 * When the last reference to a run or memtable goes, it is destroyed; if it
 * is obsolete (a flush or compaction replaced it), its column family is
 * dropped and its filter files deleted, or, for a memtable in a family of
 * the pool, that family is emptied and freed (mempool.c): a range deletion,
 * a RocksDB flush and a compaction. Dropping a column family writes
 * and syncs RocksDB's MANIFEST: tens of milliseconds on a disk, which must
 * not land on a reader's get. A reader usually holds that last reference
 * (it pinned the version the compaction just replaced), so:
 *   - a background thread, or any thread while no background thread runs
 *     (open, repair, close), destroys at once;
 *   - any other thread hands the obsolete object to the background threads
 *     (the grave), which destroy it at their next turn, at the latest after
 *     their idle timeout; akv_flush and akv_compact empty the grave, and
 *     wait for any destruction another thread is running, before they
 *     return; close empties it after the threads stop.
 * Until then its column family and filter files stay: a crash meanwhile
 * leaves a leftover the catalog accounts for, which open drops.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "engine/runstore.h"

static _Thread_local bool on_background_thread;

void akvi_grave_background_thread(void)
{
    on_background_thread = true;
}

void akvi_run_close_files(akvi_run *r)
{
    for (size_t j = 0; r->files && j < r->info.n_sst; j++)
        akvi_rs_sst_close(r->files[j]);
    free(r->files);
    r->files = NULL;
    akvi_rs_sst_close(r->rmap_file);
    r->rmap_file = NULL;
}

/* Its filter files and its files in DIR/runs (a family run's names there
 * are links of the files its family holds). */
static void delete_files(akvi_run *r)
{
    char name[64], path[4096];
    for (size_t j = 0; j <= r->info.n_sst; j++) {
        if (j < r->info.n_sst) {
            akvi_filter_file_name(r->info.id, r->info.ssts[j].id, name, sizeof name);
            snprintf(path, sizeof path, "%s/%s", r->db->fdir, name);
            unlink(path);
        } else if (r->db->layout != AKV_LAYOUT_ORDERED)
            break;
        akvi_run_file_name(r->info.id, j < r->info.n_sst ? r->info.ssts[j].id : AKVI_RMAP_SST, name,
                           sizeof name);
        snprintf(path, sizeof path, "%s/%s", r->db->sdir, name);
        unlink(path);
    }
}

static void destroy_run(akvi_run *r)
{
    akvi_run_close_files(r);
    if (atomic_load(&r->obsolete)) {
        /* The catalog no longer names this run: its data and slots go. */
        if (r->cf)
            akvi_cf_drop(r->db, r->cf);
        if (r->rmap_cf)
            akvi_cf_drop(r->db, r->rmap_cf);
        delete_files(r);
    }
    if (r->cf)
        rocksdb_column_family_handle_destroy(r->cf);
    if (r->rmap_cf)
        rocksdb_column_family_handle_destroy(r->rmap_cf);
    for (size_t j = 0; r->slots && j < r->info.n_sst; j++) {
        atomic_fetch_sub(&r->db->grown_bytes, atomic_load(&r->slots[j].grown_bytes));
        akvi_slot_destroy(&r->slots[j]);
    }
    free(r->slots);
    akvi_front_unref(r->front);
    akvi_cat_run_free(&r->info);
    free(r);
}

static void destroy_mem(akvi_mem *m)
{
    if (m->pool >= 0) { /* the pool owns the family */
        if (atomic_load(&m->obsolete))
            akvi_pool_empty(m->db, (size_t)m->pool);
    } else {
        if (atomic_load(&m->obsolete) && m->cf)
            akvi_cf_drop(m->db, m->cf);
        if (m->cf)
            rocksdb_column_family_handle_destroy(m->cf);
    }
    free(m->hashes);
    free(m);
}

/* Put r or m in the grave if this thread must not destroy it; false: the
 * caller destroys it now. */
static bool defer(akv_db *db, akvi_run *r, akvi_mem *m)
{
    if (on_background_thread)
        return false;
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    bool open = db->grave.open;
    if (open && r) {
        r->grave_next = db->grave.runs;
        db->grave.runs = r;
    } else if (open) {
        m->grave_next = db->grave.mems;
        db->grave.mems = m;
    }
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
    return open;
}

/* A destruction starts (+1) or ends (-1); akvi_grave_wait waits for none. */
static void busy(akv_db *db, int d)
{
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    db->grave.busy = (unsigned)((int)db->grave.busy + d);
    if (db->grave.busy == 0)
        pthread_cond_broadcast(&db->grave.idle);
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
}

void akvi_grave_run(akvi_run *r)
{
    akv_db *db = r->db;
    if (atomic_load(&r->obsolete) && defer(db, r, NULL))
        return;
    busy(db, 1);
    destroy_run(r);
    busy(db, -1);
}

void akvi_grave_mem(akvi_mem *m)
{
    akv_db *db = m->db;
    bool obsolete = atomic_load(&m->obsolete);
    if (obsolete && m->pool >= 0) /* writers short of a family wait for it */
        akvi_pool_retire(db, (size_t)m->pool);
    if (obsolete && defer(db, NULL, m))
        return;
    busy(db, 1);
    destroy_mem(m);
    busy(db, -1);
}

bool akvi_grave_has_mems(akv_db *db)
{
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    bool any = db->grave.mems != NULL;
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
    return any;
}

void akvi_grave_set_open(akv_db *db, bool open)
{
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    db->grave.open = open;
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
}

void akvi_grave_empty(akv_db *db)
{
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    akvi_run *runs = db->grave.runs;
    akvi_mem *mems = db->grave.mems;
    db->grave.runs = NULL;
    db->grave.mems = NULL;
    if (runs || mems) /* taken: until they are gone, another akvi_grave_wait waits */
        db->grave.busy++;
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
    if (!runs && !mems)
        return;
    while (runs) {
        akvi_run *next = runs->grave_next;
        destroy_run(runs);
        runs = next;
    }
    while (mems) {
        akvi_mem *next = mems->grave_next;
        destroy_mem(mems);
        mems = next;
    }
    busy(db, -1);
}

void akvi_grave_wait(akv_db *db)
{
    akvi_mutex_lock(&db->grave.mu, AKVI_RANK_GRAVE);
    while (db->grave.busy)
        pthread_cond_wait(&db->grave.idle, &db->grave.mu);
    akvi_mutex_unlock(&db->grave.mu, AKVI_RANK_GRAVE);
}

void akvi_grave_init(akvi_grave *g)
{
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->idle, NULL);
}

void akvi_grave_destroy(akvi_grave *g)
{
    pthread_cond_destroy(&g->idle);
    pthread_mutex_destroy(&g->mu);
}
