/*
 * version.c — versions of the LSM shape, and how readers pin them.
 *
 * A get pins the current version with a hazard pointer of its own thread
 * slot (akvi_pin): it stores the version it read into its slot's pin, reads
 * the current pointer again, and retries if it changed. Nothing shared is
 * written, so readers on different cores do not bounce a cache line. An
 * edit that replaces the current version retires the old one instead of
 * dropping its reference; a retired version is unref'd once no pin names
 * it (akvi_reclaim: after each edit, and by the reader whose unpin finds
 * retired versions waiting). Every other user (iterators, statistics, the
 * background threads, a get's adaptation) pins by refcount under a shared
 * lock (akvi_current), as a thread without a slot does; the background
 * threads and the writer (memtable rotation) publish new versions. Runs and memtables are shared between
 * consecutive versions and carry their own counts; once a run or memtable
 * has been replaced (marked obsolete) its column family is dropped and its
 * filter files deleted after the last reference goes, i.e. never while a
 * reader can still be looking at it (grave.c: not on a reader's time).
 */
#include <stdlib.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/order.h"

akvi_version *akvi_version_new(size_t n_mem, size_t n_run)
{
    akvi_version *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->mems = calloc(n_mem ? n_mem : 1, sizeof *v->mems);
    v->runs = calloc(n_run ? n_run : 1, sizeof *v->runs);
    if (!v->mems || !v->runs) {
        free(v->mems);
        free(v->runs);
        free(v);
        return NULL;
    }
    atomic_init(&v->refs, 1);
    v->n_mem = n_mem;
    v->n_run = n_run;
    return v;
}

void akvi_version_ref(akvi_version *v)
{
    atomic_fetch_add(&v->refs, 1);
}

void akvi_version_unref(akvi_version *v)
{
    if (!v || atomic_fetch_sub(&v->refs, 1) != 1)
        return;
    for (size_t i = 0; i < v->n_mem; i++)
        akvi_mem_unref(v->mems[i]);
    for (size_t i = 0; i < v->n_run; i++)
        akvi_run_unref(v->runs[i]);
    free(v->mems);
    free(v->runs);
    free(v);
}

void akvi_run_ref(akvi_run *r)
{
    atomic_fetch_add(&r->refs, 1);
}

void akvi_run_unref(akvi_run *r)
{
    if (r && atomic_fetch_sub(&r->refs, 1) == 1)
        akvi_grave_run(r);
}

void akvi_mem_ref(akvi_mem *m)
{
    atomic_fetch_add(&m->refs, 1);
}

void akvi_mem_unref(akvi_mem *m)
{
    if (m && atomic_fetch_sub(&m->refs, 1) == 1)
        akvi_grave_mem(m);
}

akvi_version *akvi_current(akv_db *db)
{
    akvi_rw_rdlock(&db->vs.mu, AKVI_RANK_VERSION);
    akvi_version *v = db->vs.cur;
    if (v) /* NULL only while open builds the first version */
        akvi_version_ref(v);
    akvi_rw_unlock(&db->vs.mu, AKVI_RANK_VERSION);
    return v;
}

akvi_version *akvi_pin(akv_db *db, int *tok)
{
    int t = akvi_thread_slot();
    /* A get inside a get of this thread and database (a log hook or a
     * filter kind's callback that reads the database) must not overwrite
     * the outer get's pin: only this thread writes its slot, so a pin
     * already there means nesting, and the inner get pins by refcount. */
    if (t >= 0 && atomic_load_explicit(&db->vs.pins[t].p.v, memory_order_relaxed) != NULL)
        t = -1;
    *tok = t;
    if (t < 0)
        return akvi_current(db);
    /* seq_cst: the pin's store and the second read of `cur` are ordered
     * against an edit's swap and its reclaim's scan of the pins. */
    _Atomic(akvi_version *) *pin = &db->vs.pins[t].p.v;
    akvi_version *v = atomic_load(&db->vs.cur);
    for (;;) {
        atomic_store(pin, v);
        akvi_version *again = atomic_load(&db->vs.cur);
        if (again == v)
            return v;
        v = again;
    }
}

void akvi_unpin(akv_db *db, akvi_version *v, int tok)
{
    if (tok < 0) {
        akvi_version_unref(v);
        return;
    }
    /* Ended, then cleared: a grace period waits for either. */
    atomic_store(&db->vs.pins[tok].p.ended,
                 atomic_load_explicit(&db->vs.pins[tok].p.ended, memory_order_relaxed) + 1);
    atomic_store(&db->vs.pins[tok].p.v, NULL);
    /* An edit retired a version (maybe this one) while this reader held it:
     * its scan may have seen the pin, so look (seq_cst, after the store). */
    if (atomic_load(&db->vs.n_retired) > 0)
        akvi_reclaim(db, false);
}

static bool pinned(const akv_db *db, const akvi_version *v)
{
    for (size_t i = 0; i < AKVI_THREAD_SLOTS; i++)
        if (atomic_load(&db->vs.pins[i].p.v) == v)
            return true;
    return false;
}

/* seq_cst throughout: the replacement's store precedes the snapshot, so a
 * pin the snapshot does not see was taken after it and reads the new one. */
void akvi_pins_snapshot(akv_db *db, akvi_pin_snapshot *s)
{
    for (size_t i = 0; i < AKVI_THREAD_SLOTS; i++)
        s->ended[i] = atomic_load(&db->vs.pins[i].p.v) ? atomic_load(&db->vs.pins[i].p.ended) : UINT64_MAX;
}

bool akvi_pins_passed(akv_db *db, const akvi_pin_snapshot *s)
{
    for (size_t i = 0; i < AKVI_THREAD_SLOTS; i++)
        if (s->ended[i] != UINT64_MAX && atomic_load(&db->vs.pins[i].p.v) &&
            atomic_load(&db->vs.pins[i].p.ended) == s->ended[i])
            return false;
    return true;
}

/* The version `cur` no longer names: unref'd once no pin names it. */
static void retire(akv_db *db, akvi_version *old)
{
    if (!old)
        return;
    akvi_mutex_lock(&db->vs.retmu, AKVI_RANK_RETIRED);
    old->retired_next = db->vs.retired;
    db->vs.retired = old;
    atomic_fetch_add(&db->vs.n_retired, 1);
    akvi_mutex_unlock(&db->vs.retmu, AKVI_RANK_RETIRED);
    akvi_reclaim(db, true);
}

/* A reader whose trylock fails sets `reclaim_again` first: the holder, or
 * a later one, looks at it after unlocking and scans once more, so a pin
 * cleared during a scan is never left unseen. */
void akvi_reclaim(akv_db *db, bool wait)
{
    if (!db->vs.pins)
        return;
    if (wait) {
        akvi_mutex_lock(&db->vs.retmu, AKVI_RANK_RETIRED);
    } else {
        atomic_store(&db->vs.reclaim_again, true);
        if (!akvi_mutex_trylock(&db->vs.retmu, AKVI_RANK_RETIRED))
            return;
    }
    for (;;) {
        atomic_store(&db->vs.reclaim_again, false);
        akvi_version *keep = NULL, *done = NULL;
        size_t kept = 0;
        for (akvi_version *v = db->vs.retired, *next; v; v = next) {
            next = v->retired_next;
            if (pinned(db, v)) {
                v->retired_next = keep;
                keep = v;
                kept++;
            } else {
                v->retired_next = done;
                done = v;
            }
        }
        db->vs.retired = keep;
        atomic_store(&db->vs.n_retired, kept);
        akvi_mutex_unlock(&db->vs.retmu, AKVI_RANK_RETIRED);
        /* Outside the lock: the last unref of a run may drop its family. */
        for (akvi_version *v = done, *next; v; v = next) {
            next = v->retired_next;
            akvi_version_unref(v);
        }
        if (!atomic_load(&db->vs.reclaim_again) || !akvi_mutex_trylock(&db->vs.retmu, AKVI_RANK_RETIRED))
            return;
    }
}

void akvi_install(akv_db *db, akvi_version *v)
{
    akvi_rw_wrlock(&db->vs.mu, AKVI_RANK_VERSION);
    akvi_version *old = db->vs.cur;
    db->vs.cur = v;
    akvi_rw_unlock(&db->vs.mu, AKVI_RANK_VERSION);
    retire(db, old);
}

int akvi_deepest_level(const akvi_version *v)
{
    int d = -1;
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level > d)
            d = (int)v->runs[i]->info.level;
    return d;
}

static bool in_list(const akvi_run *r, akvi_run *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == r)
            return true;
    return false;
}

/*
 * Search order: level ascending; within L0 newest first (flushes and L0
 * merges allocate run ids in order on one thread, and a merge takes the
 * newest L0 runs: compact.c); within a level >= 1 by key range (runs there
 * are disjoint, so a lookup finds its one run by binary search).
 */
static int run_order(const void *pa, const void *pb)
{
    const akvi_run *a = *(akvi_run *const *)pa, *b = *(akvi_run *const *)pb;
    if (a->info.level != b->info.level)
        return a->info.level < b->info.level ? -1 : 1;
    if (a->info.level == 0)
        return (a->info.id < b->info.id) - (a->info.id > b->info.id);
    const akvi_cat_sst *x = &a->info.ssts[0], *y = &b->info.ssts[0];
    return akvi_bytes_cmp(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
}

void akvi_sort_runs(akvi_run **runs, size_t n)
{
    akvi_sort(runs, n, sizeof *runs, run_order);
}

/* Fill out[] (room for v->n_run + n_add) with the runs after the edit. */
static size_t place_runs(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *const *add,
                         size_t n_add, akvi_run **out)
{
    size_t k = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if (!in_list(v->runs[i], drop, n_drop))
            out[k++] = v->runs[i];
    for (size_t i = 0; i < n_add; i++)
        out[k++] = add[i];
    akvi_sort_runs(out, k);
    return k;
}

akvi_run **akvi_runs_after(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *const *add,
                           size_t n_add, size_t *n)
{
    akvi_run **out = calloc(v->n_run + n_add + 1, sizeof *out);
    if (out)
        *n = place_runs(v, drop, n_drop, add, n_add, out);
    return out;
}

/*
 * Derive and publish a new version from the current one, atomically with
 * respect to other edits (the writer rotates memtables while the background
 * thread replaces runs). `add_mem` and `add_runs` hand their references to the
 * new version; the edit is applied under vs.mu so no edit is lost.
 */
int akvi_apply(akv_db *db, akvi_mem *add_mem, const akvi_mem *drop_mem, akvi_run *const *drop_runs,
               size_t n_drop, akvi_run *const *add_runs, size_t n_add)
{
    akvi_rw_wrlock(&db->vs.mu, AKVI_RANK_VERSION);
    akvi_version *old = db->vs.cur;
    size_t n_mem = old->n_mem + (add_mem != NULL) - (drop_mem != NULL);
    akvi_version *v = akvi_version_new(n_mem, old->n_run + n_add + 1);
    if (!v) {
        akvi_rw_unlock(&db->vs.mu, AKVI_RANK_VERSION);
        return akvi_err(AKV_ENOMEM, "out of memory installing a version");
    }
    size_t k = 0;
    if (add_mem)
        v->mems[k++] = add_mem;
    for (size_t i = 0; i < old->n_mem; i++)
        if (old->mems[i] != drop_mem) {
            akvi_mem_ref(old->mems[i]);
            v->mems[k++] = old->mems[i];
        }
    for (size_t i = 0; i < old->n_run; i++)
        if (!in_list(old->runs[i], drop_runs, n_drop))
            akvi_run_ref(old->runs[i]);
    v->n_run = place_runs(old, drop_runs, n_drop, add_runs, n_add, v->runs);
    db->vs.cur = v;
    akvi_rw_unlock(&db->vs.mu, AKVI_RANK_VERSION);
    retire(db, old);
    return AKV_OK;
}

int akvi_vset_init(akvi_vset *vs)
{
    vs->pins = aligned_alloc(AKVI_LINE, AKVI_THREAD_SLOTS * sizeof *vs->pins);
    if (!vs->pins)
        return AKV_ENOMEM;
    memset(vs->pins, 0, AKVI_THREAD_SLOTS * sizeof *vs->pins);
    pthread_mutex_init(&vs->retmu, NULL);
    pthread_mutex_init(&vs->pubmu, NULL);
    /* Writer-preferring: a stream of readers pinning versions must not
     * starve the background thread's installs. */
    pthread_rwlockattr_t va;
    pthread_rwlockattr_init(&va);
    pthread_rwlockattr_setkind_np(&va, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&vs->mu, &va);
    pthread_rwlockattr_destroy(&va);
    return AKV_OK;
}

void akvi_vset_destroy(akvi_vset *vs)
{
    free(vs->pins);
    vs->pins = NULL;
    pthread_mutex_destroy(&vs->retmu);
    pthread_mutex_destroy(&vs->pubmu);
    pthread_rwlock_destroy(&vs->mu);
}
