/*
 * compact.c — leveled compaction (docs/design.md, "LSM shape"): which level
 * is due, which runs merge, and where the output goes.
 */
#include <stdlib.h>

#include "engine/internal.h"

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
        rc = akvi_rw_merge(db, cfs, n, out_level, est, last, &run);
        if (rc == AKV_OK)
            rc = akvi_publish(db, v, NULL, in, n, run);
        if (rc != AKV_OK && run) /* not published: still ours (a failed commit too) */
            akvi_run_unref(run);
        if (rc == AKV_OK)
            atomic_fetch_add(&db->st.compactions, 1);
    }
    free(in);
    free(cfs);
    akvi_version_unref(v);
    return rc;
}
