/*
 * bg.c — the background thread: flush first, then compaction; and the
 * commit step both end with (DESIGN §5):
 *
 *   SSTs written and ingested, filter files fsynced (runwriter.c)
 *   -> catalog written with one synced write (akvi_commit)
 *   -> new version installed (akvi_apply)
 *   -> replaced CFs and filter files dropped at their last unref (version.c)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static bool dropped(const akvi_run *r, akvi_run *const *drop, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (drop[i] == r)
            return true;
    return false;
}

/* The run list (search order) after replacing `drop` with `add`. */
static akvi_run **next_runs(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *add,
                            size_t *n)
{
    akvi_run **out = calloc(v->n_run + 1, sizeof *out);
    if (!out)
        return NULL;
    size_t k = 0;
    bool placed = add == NULL;
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        if (dropped(r, drop, n_drop))
            continue;
        if (!placed && r->info.level >= add->info.level) {
            out[k++] = add;
            placed = true;
        }
        out[k++] = r;
    }
    if (!placed)
        out[k++] = add;
    *n = k;
    return out;
}

/* Commit and install the replacement of `drop` (runs) / `mem` by `add`. */
static int publish(akv_db *db, akvi_version *v, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run *add)
{
    size_t n;
    akvi_run **runs = next_runs(v, drop, n_drop, add, &n);
    if (!runs)
        return akvi_err(AKV_ENOMEM, "out of memory");
    uint64_t flushed = mem ? mem->gen : db->flushed_mem_gen;
    int rc = akvi_commit(db, runs, n, flushed);
    free(runs);
    if (rc != AKV_OK)
        return rc;
    db->flushed_mem_gen = flushed;
    for (size_t i = 0; i < n_drop; i++)
        atomic_store(&drop[i]->obsolete, true);
    if (mem)
        atomic_store(&mem->obsolete, true);
    rc = akvi_apply(db, NULL, mem, drop, n_drop, add);
    if (mem && rc == AKV_OK)
        akvi_guard_remove_mem(db, mem);
    return rc;
}

static rocksdb_iterator_t *scan_iter(akv_db *db, rocksdb_column_family_handle_t *cf)
{
    return rocksdb_create_iterator_cf(db->rdb, db->ro_scan, cf);
}

/* Stream a merge into a run writer; tombstones dropped when asked. */
static int copy_merge(akvi_merge *mg, akvi_runwriter *w, bool drop_tombstones)
{
    int rc = AKV_OK;
    for (akvi_merge_seek_first(mg); rc == AKV_OK && akvi_merge_valid(mg); akvi_merge_next(mg)) {
        size_t kl, vl;
        const uint8_t *k = akvi_merge_key(mg, &kl);
        const uint8_t *val = akvi_merge_value(mg, &vl);
        if (drop_tombstones && vl > 0 && val[0] == AKVI_TAG_DEL)
            continue;
        rc = akvi_rw_add(w, k, kl, val, vl);
    }
    return rc != AKV_OK ? rc : akvi_merge_status(mg);
}

/* Merge column families (newest first) into a new run at `level`. */
static int build_run(akv_db *db, rocksdb_column_family_handle_t **cfs, size_t n, int level, uint64_t est,
                     bool drop_tombstones, akvi_run **out)
{
    rocksdb_iterator_t **its = calloc(n ? n : 1, sizeof *its);
    if (!its)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        its[i] = scan_iter(db, cfs[i]);
    akvi_merge *mg = akvi_merge_create(its, n);
    akvi_runwriter *w = NULL;
    int rc = mg ? akvi_rw_begin(db, level, est, &w) : akvi_err(AKV_ENOMEM, "out of memory");
    if (rc == AKV_OK)
        rc = copy_merge(mg, w, drop_tombstones);
    if (rc == AKV_OK)
        rc = akvi_rw_finish(w, out);
    else
        akvi_rw_abort(w);
    if (mg)
        akvi_merge_destroy(mg);
    else {
        for (size_t i = 0; i < n; i++)
            rocksdb_iter_destroy(its[i]);
        free(its);
    }
    return rc;
}

int akvi_flush_one(akv_db *db, akvi_mem *m)
{
    akvi_version *v = akvi_current(db);
    akvi_run *run = NULL;
    /* Nothing older than the oldest memtable when there are no runs. */
    int rc = build_run(db, &m->cf, 1, 0, atomic_load(&m->bytes), v->n_run == 0, &run);
    if (rc == AKV_OK)
        rc = publish(db, v, m, NULL, 0, run);
    else if (run)
        akvi_run_unref(run);
    akvi_version_unref(v);
    if (rc == AKV_OK)
        atomic_fetch_add(&db->st.flushes, 1);
    return rc;
}

static uint64_t level_capacity(const akv_db *db, int level)
{
    uint64_t cap = db->opt.memtable_bytes;
    for (int i = 0; i < level; i++)
        cap *= (uint64_t)db->opt.level_multiplier;
    return cap;
}

static akvi_run *run_at(const akvi_version *v, int level)
{
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level == level)
            return v->runs[i];
    return NULL;
}

/* The level whose compaction is due (-1: none); L0 first. */
static int due_level(const akv_db *db, const akvi_version *v)
{
    if (akvi_runs_at_level(v, 0) >= (size_t)db->opt.l0_compaction_trigger)
        return 0;
    for (int l = 1; l < AKV_MAX_LEVELS - 1; l++) {
        const akvi_run *r = run_at(v, l);
        if (r && r->info.raw_bytes > level_capacity(db, l))
            return l;
    }
    return -1;
}

bool akvi_compaction_needed(akv_db *db, const akvi_version *v)
{
    return due_level(db, v) >= 0;
}

int akvi_compact_step(akv_db *db, bool full)
{
    akvi_version *v = akvi_current(db);
    int from = full ? 0 : due_level(db, v);
    int out_level = full ? (akvi_deepest_level(v) > 1 ? akvi_deepest_level(v) : 1) : from + 1;
    akvi_run **in = calloc(v->n_run + 1, sizeof *in);
    rocksdb_column_family_handle_t **cfs = calloc(v->n_run + 1, sizeof *cfs);
    size_t n = 0;
    uint64_t est = 0;
    for (size_t i = 0; in && cfs && from >= 0 && i < v->n_run; i++) {
        int l = (int)v->runs[i]->info.level;
        if (full || l == from || l == out_level) {
            in[n] = v->runs[i];
            cfs[n++] = v->runs[i]->cf;
            est += v->runs[i]->info.raw_bytes;
        }
    }
    int rc = (in && cfs) ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    bool trivial = n == 0 || (full && n == 1 && (int)in[0]->info.level == out_level);
    if (rc == AKV_OK && !trivial) {
        /* Tombstones can go only when nothing older lies below the output. */
        bool last = akvi_deepest_level(v) <= out_level;
        akvi_run *run = NULL;
        rc = build_run(db, cfs, n, out_level, est, last, &run);
        if (rc == AKV_OK)
            rc = publish(db, v, NULL, in, n, run);
        else if (run)
            akvi_run_unref(run);
        if (rc == AKV_OK)
            atomic_fetch_add(&db->st.compactions, 1);
    }
    free(in);
    free(cfs);
    akvi_version_unref(v);
    return rc;
}

/* ---- the thread ---------------------------------------------------------- */

void akvi_bg_wake(akv_db *db)
{
    pthread_mutex_lock(&db->bgmu);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->bgmu);
}

/* Under bgmu: 1 = flush, 2 = compaction, 0 = nothing to do. */
static int pending(akv_db *db)
{
    if (db->bg_error)
        return 0;
    akvi_version *v = akvi_current(db);
    int what = v->n_mem > 1                                                            ? 1
               : (db->compact_req > db->compact_done || akvi_compaction_needed(db, v)) ? 2
                                                                                       : 0;
    akvi_version_unref(v);
    return what;
}

static int do_work(akv_db *db, int what, bool full)
{
    if (what == 2)
        return akvi_compact_step(db, full);
    akvi_version *v = akvi_current(db);
    akvi_mem *m = v->mems[v->n_mem - 1];
    akvi_mem_ref(m);
    akvi_version_unref(v);
    int rc = akvi_flush_one(db, m);
    akvi_mem_unref(m);
    return rc;
}

/* Adapted filters are written back after every flush and, when idle, this
 * often, so a crash loses at most this much learning (never correctness:
 * every filter file on disk is a complete filter of its SST). */
#define ADAPT_SAVE_SECONDS 10

/* Under bgmu: wait for work; on every idle timeout save adapted slots. */
static int wait_for_work(akv_db *db)
{
    int what = 0;
    while (!db->shutdown && (what = pending(db)) == 0) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += ADAPT_SAVE_SECONDS;
        if (pthread_cond_timedwait(&db->bg_cv, &db->bgmu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&db->bgmu);
            akvi_save_adapted_slots(db);
            pthread_mutex_lock(&db->bgmu);
        }
    }
    return what;
}

static void *bg_main(void *arg)
{
    akv_db *db = arg;
    pthread_mutex_lock(&db->bgmu);
    for (;;) {
        int what = wait_for_work(db);
        if (db->shutdown)
            break;
        uint64_t req = db->compact_req;
        bool full = what == 2 && req > db->compact_done;
        pthread_mutex_unlock(&db->bgmu);
        int rc = do_work(db, what, full);
        if (rc != AKV_OK)
            akvi_log(db, "background %s failed: %s", what == 1 ? "flush" : "compaction", akv_errmsg());
        else if (what == 1)
            akvi_save_adapted_slots(db);
        pthread_mutex_lock(&db->wmu);
        pthread_cond_broadcast(&db->stall_cv);
        pthread_mutex_unlock(&db->wmu);
        pthread_mutex_lock(&db->bgmu);
        if (rc != AKV_OK)
            db->bg_error = rc;
        else if (full)
            db->compact_done = req;
        pthread_cond_broadcast(&db->done_cv);
    }
    pthread_cond_broadcast(&db->done_cv);
    pthread_mutex_unlock(&db->bgmu);
    return NULL;
}

int akvi_bg_start(akv_db *db)
{
    if (pthread_create(&db->bg, NULL, bg_main, db) != 0)
        return akvi_err(AKV_EIO, "cannot start the background thread");
    db->bg_started = true;
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
    pthread_join(db->bg, NULL);
    db->bg_started = false;
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
    return rc ? akvi_err(rc, "compaction failed in the background; see the log") : AKV_OK;
}
