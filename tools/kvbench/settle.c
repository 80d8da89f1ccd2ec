/*
 * settle.c — wait, before a run phase, until the engine's background work
 * has caught up (`--settle SECONDS`), so that a run measures the tree in
 * steady state rather than whatever backlog the load or the last close left
 * (docs/kvbench.md, "Steady state"). Each engine says what it still owes
 * through its `backlog` hook: adaptkv its compaction debt and memtables
 * waiting for the flush, RocksDB its pending and running flushes and
 * compactions. The wait ends when two polls in a row find nothing owed, or
 * at the timeout, which the report then states.
 */
#include "tools/kvbench/kvbench.h"

#define POLL_MS    200
#define PROGRESS_S 10.0

int akv_kb_settle(akv_kb_engine *e, double max_seconds, FILE *log, akv_kb_settle_result *out)
{
    double t0 = akv_kb_clock_seconds(CLOCK_MONOTONIC), next_note = PROGRESS_S;
    int idle_polls = 0;
    out->requested = true;
    out->settled = false;
    out->seconds = 0;
    out->last[0] = 0;
    for (;;) {
        char what[sizeof out->last];
        int rc = e->backlog(e, what, sizeof what);
        if (rc < 0)
            return rc;
        double t = akv_kb_clock_seconds(CLOCK_MONOTONIC) - t0;
        out->seconds = t;
        if (rc == 0) {
            if (++idle_polls >= 2) {
                out->settled = true;
                break;
            }
        } else {
            idle_polls = 0;
            snprintf(out->last, sizeof out->last, "%s", what);
        }
        if (t >= max_seconds)
            break;
        if (log && rc > 0 && t >= next_note) {
            fprintf(log, "kvbench: settling: %.0f s so far; still owed: %s\n", t, what);
            fflush(log);
            next_note += PROGRESS_S;
        }
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (log) {
        if (out->settled)
            fprintf(log, "kvbench: settled after %.1f s: no background work owed\n", out->seconds);
        else
            fprintf(log, "kvbench: not settled after %.1f s (the --settle limit); still owed: %s\n",
                    out->seconds, out->last);
        fflush(log);
    }
    return 0;
}
