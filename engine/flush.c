/*
 * flush.c — a memtable becomes an L0 run: its family is streamed through a
 * run writer, the run is committed and installed, and the memtable's keys
 * leave the guard.
 */
#include "engine/internal.h"

int akvi_flush_one(akv_db *db, akvi_mem *m)
{
    akvi_version *v = akvi_current(db);
    akvi_run *run = NULL;
    /* Nothing older than the oldest memtable when there are no runs. */
    int rc = akvi_rw_merge(db, &m->cf, 1, 0, atomic_load(&m->bytes), v->n_run == 0, &run);
    if (rc == AKV_OK)
        rc = akvi_publish(db, v, m, NULL, 0, run);
    if (rc != AKV_OK && run) /* not published: still ours (a failed commit too) */
        akvi_run_unref(run);
    akvi_version_unref(v);
    if (rc == AKV_OK)
        atomic_fetch_add(&db->st.flushes, 1);
    return rc;
}
