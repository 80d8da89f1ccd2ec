/*
 * version.c — refcounted versions of the LSM shape.
 *
 * Readers pin the current version with one mutex-protected increment and
 * then read without locks; the background thread and the writer (memtable
 * rotation) publish new versions. Runs and memtables are shared between
 * consecutive versions and carry their own counts; once a run or memtable
 * has been replaced (marked obsolete) its column family is dropped and its
 * filter files deleted after the last reference goes, i.e. never while a
 * reader can still be looking at it (grave.c: not on a reader's time).
 */
#include <stdlib.h>

#include "engine/internal.h"
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
    pthread_rwlock_rdlock(&db->vmu);
    akvi_version *v = db->cur;
    if (v) /* NULL only while open builds the first version */
        akvi_version_ref(v);
    pthread_rwlock_unlock(&db->vmu);
    return v;
}

void akvi_install(akv_db *db, akvi_version *v)
{
    pthread_rwlock_wrlock(&db->vmu);
    akvi_version *old = db->cur;
    db->cur = v;
    pthread_rwlock_unlock(&db->vmu);
    akvi_version_unref(old);
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
    return akv_bytes_cmp(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
}

void akvi_sort_runs(akvi_run **runs, size_t n)
{
    akv_sort(runs, n, sizeof *runs, run_order);
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
 * new version; the edit is applied under vmu so no edit is lost.
 */
int akvi_apply(akv_db *db, akvi_mem *add_mem, const akvi_mem *drop_mem, akvi_run *const *drop_runs,
               size_t n_drop, akvi_run *const *add_runs, size_t n_add)
{
    pthread_rwlock_wrlock(&db->vmu);
    akvi_version *old = db->cur;
    size_t n_mem = old->n_mem + (add_mem != NULL) - (drop_mem != NULL);
    akvi_version *v = akvi_version_new(n_mem, old->n_run + n_add + 1);
    if (!v) {
        pthread_rwlock_unlock(&db->vmu);
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
    db->cur = v;
    pthread_rwlock_unlock(&db->vmu);
    akvi_version_unref(old);
    return AKV_OK;
}
