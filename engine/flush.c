/*
 * flush.c — a memtable becomes an L0 run: its family is streamed through a
 * run writer, its keys go into the L0 front (l0front.c), the run is
 * committed and installed, and the memtable's keys leave the guard.
 */
#include <stdlib.h>

#include "engine/internal.h"

int akvi_flush_one(akv_db *db, akvi_mem *m)
{
    akvi_mem_quiesce(m); /* the last writes into it have landed */
    akvi_version *v = akvi_current(db);
    /* Nothing older than the oldest memtable when there are no runs (only
     * this thread adds runs to an empty tree). */
    bool drop_tombstones = v->n_run == 0;
    akvi_version_unref(v);
    akvi_run **runs = NULL;
    size_t n = 0;
    int rc = akvi_rw_merge(db, m, NULL, 0, 0, atomic_load(&m->bytes), NULL, UINT64_MAX, drop_tombstones,
                           &runs, &n);
    if (rc == AKV_OK) {
        akvi_version *now = akvi_current(db);
        akvi_front_cover_flush(db, now, m, runs, n);
        akvi_version_unref(now);
        rc = akvi_publish(db, m, NULL, 0, runs, n);
    }
    for (size_t i = 0; rc != AKV_OK && i < n; i++)
        akvi_run_unref(runs[i]);
    free(runs);
    if (rc == AKV_OK)
        atomic_fetch_add(&db->st.flushes, 1);
    return rc;
}
