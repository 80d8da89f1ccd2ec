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
#include "engine/lockorder.h"
#include "util/clock.h"

/*
 * Adaptations live in memory; the adapted slots are written back
 * (atomically, like any filter file) by the flush thread at most every
 * ADAPT_SAVE_SECONDS while it flushes, by the compaction thread when idle
 * that long, by akv_flush and at close, so a key that fooled a filter does
 * not fool it again after a restart. A crash only loses recent
 * adaptations: the file on disk is always a complete filter of its SST.
 * Saving after every flush, as adaptkv first did, cost two syncs per
 * adapted filter several times a second (docs/design.md, "Syncs"). The
 * files of one save share one directory sync; savemu keeps two threads
 * from writing one file at once. Runs on a background thread (or at
 * close), so no compaction removes a run meanwhile; the version pin keeps
 * its slots alive.
 */
#define ADAPT_SAVE_SECONDS 10

int akvi_save_adapted_slots(akv_db *db)
{
    int first = AKV_OK;
    bool wrote = false;
    akvi_mutex_lock(&db->bg.savemu, AKVI_RANK_SAVE);
    db->bg.saved_at = akvi_mono_seconds();
    akvi_version *v = akvi_current(db);
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        for (size_t j = 0; j < r->info.n_sst; j++) {
            int rc = akvi_slot_save(&r->slots[j], db->fdir, r->info.id, r->info.ssts[j].id);
            wrote |= rc > 0;
            if (rc < 0) {
                akvi_log(db, "warning: could not save an adapted filter: %s", akv_errmsg());
                first = first != AKV_OK ? first : rc;
            }
        }
    }
    akvi_version_unref(v);
    if (wrote) {
        int rc = akvi_fsync_dir(db->fdir);
        if (rc != AKV_OK) {
            akvi_log(db, "warning: adapted filters saved, but not their directory: %s", akv_errmsg());
            first = first != AKV_OK ? first : rc;
        }
    }
    akvi_mutex_unlock(&db->bg.savemu, AKVI_RANK_SAVE);
    return first; /* a slot whose file failed stays dirty: saved again next time */
}

/* The flush thread's save: when akv_flush asked for one, or after a flush
 * once ADAPT_SAVE_SECONDS have passed since the last. */
static void save_if_due(akv_db *db, bool flushed)
{
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    uint64_t req = db->bg.save_req;
    bool asked = req > db->bg.save_done;
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    akvi_mutex_lock(&db->bg.savemu, AKVI_RANK_SAVE);
    bool due = asked || (flushed && akvi_mono_seconds() - db->bg.saved_at >= ADAPT_SAVE_SECONDS);
    akvi_mutex_unlock(&db->bg.savemu, AKVI_RANK_SAVE);
    if (due)
        akvi_save_adapted_slots(db);
    if (asked) {
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        db->bg.save_done = req; /* only this thread advances it */
        pthread_cond_broadcast(&db->bg.done_cv);
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    }
}

/* ---- the thread ---------------------------------------------------------- */

void akvi_bg_wake(akv_db *db)
{
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    pthread_cond_broadcast(&db->bg.cv);
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
}

enum { FLUSHER, COMPACTOR };

/* Under bg.mu: is there work for this thread? */
static bool pending(akv_db *db, int role)
{
    if (db->bg.error)
        return false;
    akvi_version *v = akvi_current(db);
    bool yes = role == FLUSHER
                   ? v->n_mem > 1 || akvi_l0_merge_due(db, v) || db->bg.save_req > db->bg.save_done
                   : db->bg.compact_req > db->bg.compact_done || akvi_compaction_needed(db, v);
    akvi_version_unref(v);
    /* A flushed memtable readers let go of: its pool family is emptied at
     * the turn's start (akvi_grave_empty), which a writer short of a free
     * family waits for. */
    return yes || (role == FLUSHER && akvi_grave_has_mems(db));
}

/* The flush thread's turn: the oldest waiting memtable, then the adapted
 * slots if their save is due; else a save akv_flush asked for, then an L0
 * merge (compact.c) if one is due. */
static int flush_oldest(akv_db *db)
{
    akvi_version *v = akvi_current(db);
    akvi_mem *m = v->n_mem > 1 ? v->mems[v->n_mem - 1] : NULL;
    if (m)
        akvi_mem_ref(m);
    akvi_version_unref(v);
    if (!m) { /* a save akv_flush asked for first: it waits on it */
        save_if_due(db, false);
        return akvi_compact_l0(db);
    }
    int rc = akvi_flush_one(db, m);
    akvi_mem_unref(m);
    if (rc == AKV_OK)
        save_if_due(db, true);
    return rc;
}

/* Under bg.mu: wait for work; on every idle timeout, the flusher empties
 * the grave (what readers released) and the compactor saves adapted slots. */
static void wait_for_work(akv_db *db, int role)
{
    while (!db->bg.shutdown && !pending(db, role)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ADAPT_SAVE_SECONDS;
        if (pthread_cond_timedwait(&db->bg.cv, &db->bg.mu, &until) == ETIMEDOUT) {
            akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
            if (role == COMPACTOR) {
                akvi_save_adapted_slots(db);
            } else {
                akvi_grave_empty(db);
                akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE); /* a pool family may be free now */
                pthread_cond_broadcast(&db->wr.stall_cv);
                akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
            }
            akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        }
    }
}

/* One background thread: flushes never wait behind a long compaction. */
static void run(akv_db *db, int role)
{
    akvi_grave_background_thread();
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    for (;;) {
        wait_for_work(db, role);
        if (db->bg.shutdown)
            break;
        uint64_t req = db->bg.compact_req;
        bool full = role == COMPACTOR && req > db->bg.compact_done;
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
        akvi_grave_empty(db);
        int rc = role == FLUSHER ? flush_oldest(db) : akvi_compact_step(db, full);
        if (rc != AKV_OK) {
            akvi_log(db, "background %s failed: %s", role == FLUSHER ? "flush or L0 merge" : "compaction",
                     akv_errmsg());
            akvi_stop(db, rc);
        }
        akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
        pthread_cond_broadcast(&db->wr.stall_cv);
        akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        if (rc == AKV_OK && full)
            db->bg.compact_done = req;
        pthread_cond_broadcast(&db->bg.done_cv);
        pthread_cond_broadcast(&db->bg.cv); /* a flush can make a compaction due */
    }
    pthread_cond_broadcast(&db->bg.done_cv);
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
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
    if (pthread_create(&db->bg.flusher, NULL, flusher_main, db) != 0)
        return akvi_err(AKV_EIO, "cannot start the flush thread");
    if (pthread_create(&db->bg.compactor, NULL, compactor_main, db) != 0) {
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        db->bg.shutdown = true;
        pthread_cond_broadcast(&db->bg.cv);
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
        pthread_join(db->bg.flusher, NULL);
        return akvi_err(AKV_EIO, "cannot start the compaction thread");
    }
    db->bg.started = true;
    akvi_grave_set_open(db, true);
    return AKV_OK;
}

void akvi_bg_stop(akv_db *db)
{
    if (!db->bg.started)
        return;
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    db->bg.shutdown = true;
    pthread_cond_broadcast(&db->bg.cv);
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    pthread_join(db->bg.flusher, NULL);
    pthread_join(db->bg.compactor, NULL);
    db->bg.started = false;
    akvi_grave_set_open(db, false);
    akvi_grave_empty(db);
    /* Release writers stalled on the background thread. */
    akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
    pthread_cond_broadcast(&db->wr.stall_cv);
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
}

/* ---- synchronous maintenance --------------------------------------------- */

static bool flushed_through(akv_db *db, uint64_t gen)
{
    akvi_version *v = akvi_current(db);
    bool done = v->n_mem == 1 || v->mems[v->n_mem - 1]->gen > gen;
    akvi_version_unref(v);
    return done;
}

int akvi_rotate_when_free(akv_db *db)
{
    bool counted = false;
    for (;;) {
        int rc = akvi_rotate(db);
        if (rc != AKVI_POOL_WAIT)
            return rc;
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        int err = db->bg.error;
        bool down = db->bg.shutdown;
        pthread_cond_broadcast(&db->bg.cv); /* the flush thread empties the family */
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
        if (err || down)
            return akvi_err(err ? err : AKV_EBUSY, "background flush/compaction failed; writes are stopped");
        if (!counted) {
            atomic_fetch_add_explicit(&db->st.write_stalls, 1, memory_order_relaxed);
            counted = true;
        }
        pthread_cond_wait(&db->wr.stall_cv, &db->wr.mu);
    }
}

int akv_flush(akv_db *db)
{
    if (!db)
        return akvi_err(AKV_EINVAL, "akv_flush: NULL db");
    akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
    akvi_version *v = akvi_current(db);
    int rc = AKV_OK;
    uint64_t target = v->mems[0]->gen;
    bool rotate = atomic_load(&v->mems[0]->entries) > 0;
    if (!rotate)
        target = v->n_mem > 1 ? v->mems[1]->gen : 0;
    akvi_version_unref(v); /* first: a rotation may wait for a memtable it holds */
    if (rotate)
        rc = akvi_rotate_when_free(db);
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
    if (rc != AKV_OK)
        return rc;
    /* The flush thread saves the adapted slots once it is through. */
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    uint64_t save = ++db->bg.save_req;
    pthread_cond_broadcast(&db->bg.cv);
    while (!db->bg.error && !db->bg.shutdown && (!flushed_through(db, target) || db->bg.save_done < save))
        pthread_cond_wait(&db->bg.done_cv, &db->bg.mu);
    rc = db->bg.error;
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    akvi_grave_empty(db);
    akvi_grave_wait(db);
    return rc ? akvi_err(rc, "flush failed in the background; see the log") : AKV_OK;
}

int akv_compact(akv_db *db)
{
    int rc = akv_flush(db);
    if (rc != AKV_OK)
        return rc;
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    uint64_t req = ++db->bg.compact_req;
    pthread_cond_broadcast(&db->bg.cv);
    while (!db->bg.error && !db->bg.shutdown && db->bg.compact_done < req)
        pthread_cond_wait(&db->bg.done_cv, &db->bg.mu);
    rc = db->bg.error;
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    akvi_grave_empty(db);
    akvi_grave_wait(db);
    return rc ? akvi_err(rc, "compaction failed in the background; see the log") : AKV_OK;
}

void akvi_bg_init(akvi_bg *bg)
{
    pthread_mutex_init(&bg->mu, NULL);
    pthread_mutex_init(&bg->savemu, NULL);
    pthread_cond_init(&bg->cv, NULL);
    pthread_cond_init(&bg->done_cv, NULL);
}

void akvi_bg_destroy(akvi_bg *bg)
{
    pthread_mutex_destroy(&bg->mu);
    pthread_mutex_destroy(&bg->savemu);
    pthread_cond_destroy(&bg->cv);
    pthread_cond_destroy(&bg->done_cv);
    for (int l = 0; l < AKV_MAX_LEVELS; l++) {
        free(bg->cursor[l].key);
        bg->cursor[l].key = NULL;
    }
}
