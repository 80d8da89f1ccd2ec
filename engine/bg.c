/*
 * bg.c — background work: a flush thread (which also merges L0 runs while
 * it has nothing to flush) and a compaction thread (a flush never waits
 * behind a long compaction), saving what adaptive slots
 * learned; and the synchronous akv_flush and akv_compact, which hand their
 * work to those threads and wait.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/internal.h"

/*
 * Adaptations live in memory; the adapted slots are written back
 * (atomically, like any filter file) after each flush, every few idle
 * seconds and at close, so a key that fooled a filter does not fool it again
 * after a restart. A crash only loses recent adaptations: the file on disk
 * is always a complete filter of its SST. Runs on the background thread (or
 * at close), so no compaction removes a run meanwhile; the version pin keeps
 * its slots alive.
 */
int akvi_save_adapted_slots(akv_db *db)
{
    int first = AKV_OK;
    akvi_version *v = akvi_current(db);
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        for (size_t j = 0; j < r->info.n_sst; j++) {
            int rc = akvi_slot_save(&r->slots[j], db->fdir, r->info.id, r->info.ssts[j].id);
            if (rc != AKV_OK) {
                akvi_log(db, "warning: could not save an adapted filter: %s", akv_errmsg());
                first = first != AKV_OK ? first : rc;
            }
        }
    }
    akvi_version_unref(v);
    return first; /* the slot stays dirty: saved again next time */
}

/* ---- the thread ---------------------------------------------------------- */

void akvi_bg_wake(akv_db *db)
{
    pthread_mutex_lock(&db->bgmu);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->bgmu);
}

enum { FLUSHER, COMPACTOR };

/* Under bgmu: is there work for this thread? */
static bool pending(akv_db *db, int role)
{
    if (db->bg_error)
        return false;
    akvi_version *v = akvi_current(db);
    bool yes = role == FLUSHER ? v->n_mem > 1 || akvi_l0_merge_due(db, v)
                               : db->compact_req > db->compact_done || akvi_compaction_needed(db, v);
    akvi_version_unref(v);
    return yes;
}

/* The flush thread's turn: the oldest waiting memtable, else an L0 merge
 * (compact.c), if one is due. */
static int flush_oldest(akv_db *db)
{
    akvi_version *v = akvi_current(db);
    akvi_mem *m = v->n_mem > 1 ? v->mems[v->n_mem - 1] : NULL;
    if (m)
        akvi_mem_ref(m);
    akvi_version_unref(v);
    if (!m)
        return akvi_compact_l0(db);
    int rc = akvi_flush_one(db, m);
    akvi_mem_unref(m);
    if (rc == AKV_OK)
        akvi_save_adapted_slots(db);
    return rc;
}

/* Adapted filters are written back after every flush and, when idle, this
 * often, so a crash loses at most this much learning (never correctness:
 * every filter file on disk is a complete filter of its SST). */
#define ADAPT_SAVE_SECONDS 10

/* Under bgmu: wait for work; on every idle timeout, the flusher empties
 * the grave (what readers released) and the compactor saves adapted slots. */
static void wait_for_work(akv_db *db, int role)
{
    while (!db->shutdown && !pending(db, role)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ADAPT_SAVE_SECONDS;
        if (pthread_cond_timedwait(&db->bg_cv, &db->bgmu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&db->bgmu);
            if (role == COMPACTOR)
                akvi_save_adapted_slots(db);
            else
                akvi_grave_empty(db);
            pthread_mutex_lock(&db->bgmu);
        }
    }
}

/* One background thread: flushes never wait behind a long compaction. */
static void run(akv_db *db, int role)
{
    akvi_grave_background_thread();
    pthread_mutex_lock(&db->bgmu);
    for (;;) {
        wait_for_work(db, role);
        if (db->shutdown)
            break;
        uint64_t req = db->compact_req;
        bool full = role == COMPACTOR && req > db->compact_done;
        pthread_mutex_unlock(&db->bgmu);
        akvi_grave_empty(db);
        int rc = role == FLUSHER ? flush_oldest(db) : akvi_compact_step(db, full);
        if (rc != AKV_OK) {
            akvi_log(db, "background %s failed: %s", role == FLUSHER ? "flush or L0 merge" : "compaction",
                     akv_errmsg());
            akvi_stop(db, rc);
        }
        pthread_mutex_lock(&db->wmu);
        pthread_cond_broadcast(&db->stall_cv);
        pthread_mutex_unlock(&db->wmu);
        pthread_mutex_lock(&db->bgmu);
        if (rc == AKV_OK && full)
            db->compact_done = req;
        pthread_cond_broadcast(&db->done_cv);
        pthread_cond_broadcast(&db->bg_cv); /* a flush can make a compaction due */
    }
    pthread_cond_broadcast(&db->done_cv);
    pthread_mutex_unlock(&db->bgmu);
}

static void *flusher_main(void *arg)
{
    run(arg, FLUSHER);
    return NULL;
}

static void *compactor_main(void *arg)
{
    run(arg, COMPACTOR);
    return NULL;
}

int akvi_bg_start(akv_db *db)
{
    if (pthread_create(&db->flusher, NULL, flusher_main, db) != 0)
        return akvi_err(AKV_EIO, "cannot start the flush thread");
    if (pthread_create(&db->compactor, NULL, compactor_main, db) != 0) {
        pthread_mutex_lock(&db->bgmu);
        db->shutdown = true;
        pthread_cond_broadcast(&db->bg_cv);
        pthread_mutex_unlock(&db->bgmu);
        pthread_join(db->flusher, NULL);
        return akvi_err(AKV_EIO, "cannot start the compaction thread");
    }
    db->bg_started = true;
    akvi_grave_set_open(db, true);
    return AKV_OK;
}

void akvi_bg_stop(akv_db *db)
{
    if (!db->bg_started)
        return;
    pthread_mutex_lock(&db->bgmu);
    db->shutdown = true;
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->bgmu);
    pthread_join(db->flusher, NULL);
    pthread_join(db->compactor, NULL);
    db->bg_started = false;
    akvi_grave_set_open(db, false);
    akvi_grave_empty(db);
    /* Release writers stalled on the background thread. */
    pthread_mutex_lock(&db->wmu);
    pthread_cond_broadcast(&db->stall_cv);
    pthread_mutex_unlock(&db->wmu);
}

/* ---- synchronous maintenance --------------------------------------------- */

static bool flushed_through(akv_db *db, uint64_t gen)
{
    akvi_version *v = akvi_current(db);
    bool done = v->n_mem == 1 || v->mems[v->n_mem - 1]->gen > gen;
    akvi_version_unref(v);
    return done;
}

int akv_flush(akv_db *db)
{
    if (!db)
        return akvi_err(AKV_EINVAL, "akv_flush: NULL db");
    pthread_mutex_lock(&db->wmu);
    akvi_version *v = akvi_current(db);
    int rc = AKV_OK;
    uint64_t target = v->mems[0]->gen;
    if (atomic_load(&v->mems[0]->entries) > 0)
        rc = akvi_rotate(db);
    else
        target = v->n_mem > 1 ? v->mems[1]->gen : 0;
    akvi_version_unref(v);
    pthread_mutex_unlock(&db->wmu);
    if (rc != AKV_OK)
        return rc;
    akvi_bg_wake(db);
    pthread_mutex_lock(&db->bgmu);
    while (!db->bg_error && !db->shutdown && !flushed_through(db, target))
        pthread_cond_wait(&db->done_cv, &db->bgmu);
    rc = db->bg_error;
    pthread_mutex_unlock(&db->bgmu);
    akvi_grave_empty(db);
    return rc ? akvi_err(rc, "flush failed in the background; see the log") : AKV_OK;
}

int akv_compact(akv_db *db)
{
    int rc = akv_flush(db);
    if (rc != AKV_OK)
        return rc;
    pthread_mutex_lock(&db->bgmu);
    uint64_t req = ++db->compact_req;
    pthread_cond_broadcast(&db->bg_cv);
    while (!db->bg_error && !db->shutdown && db->compact_done < req)
        pthread_cond_wait(&db->done_cv, &db->bgmu);
    rc = db->bg_error;
    pthread_mutex_unlock(&db->bgmu);
    akvi_grave_empty(db);
    return rc ? akvi_err(rc, "compaction failed in the background; see the log") : AKV_OK;
}
