/*
 * stats.h — the database's statistics, one part of akv_db with no lock of
 * its own: every counter is an atomic. Read-path counters are striped by
 * thread slot, so a get writes only its own cache lines; write-path and
 * background counters are single atomics. stats.c sums them for
 * akv_get_stats (docs/design.md, "The lean absent path").
 */
#ifndef AKVI_STATS_H
#define AKVI_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "engine/threadslot.h"

/* Read-path counters of the database, one block per thread slot (and one
 * shared by threads without a slot), each on its own cache lines; summed by
 * akv_get_stats. */
typedef struct akvi_rstats {
    _Atomic uint64_t gets, negative_lookups, probes, wasted_probes, slot_queries, slot_filtered,
        false_positives, adaptations, block_reads;
} akvi_rstats;
typedef union akvi_rstats_line {
    akvi_rstats c;
    char pad[2 * AKVI_LINE];
} akvi_rstats_line;
#define AKVI_RSTATS_STRIPES (AKVI_THREAD_SLOTS + 1)

/* Owned by no lock: written with relaxed atomic additions, summed by
 * stats.c. `rs`: AKVI_RSTATS_STRIPES blocks of read-path counters. */
typedef struct akvi_stats {
    akvi_rstats_line *rs;
    _Atomic uint64_t puts, deletes, flushes, compactions, write_stalls, write_slowdowns, l0_merges,
        bytes_written_user, bytes_written_disk, filter_grows, filter_refills, family_ops, family_op_us,
        family_creates, family_drops, wal_damaged_recoveries, wal_records_dropped, memtable_empties,
        memtable_empty_us;
    _Atomic uint64_t bytes_written_level[AKV_MAX_LEVELS];
} akvi_stats;

/* The read-path stripes (AKV_ENOMEM: nothing to destroy then). */
int akvi_stats_init(akvi_stats *st);
void akvi_stats_destroy(akvi_stats *st);

#endif
