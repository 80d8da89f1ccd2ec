/*
 * damage.c — the table of damage and open's policy for each
 * (damage.h; docs/reliability.md, "Damage and what open does").
 */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/damage.h"
#include "engine/internal.h"

#define GOES_ON false
#define REFUSES true

const akvi_damage_row akvi_damage_table[AKVI_DMG_COUNT] = {
    [AKVI_DMG_FILTER_UNUSABLE] = {"a filter file missing, failing its checksum, naming an unknown kind",
                                  GOES_ON},
    [AKVI_DMG_FILTER_OTHER_KIND] = {"a filter file of another kind than the catalog records", GOES_ON},
    [AKVI_DMG_FILTER_OTHER_SST] = {"a filter file copied from another SST or another database", GOES_ON},
    [AKVI_DMG_FILTER_FIELD_CONFLICT] =
        {"a filter file bound to its SST (run, SST, keys, size, key digest and "
         "range all the catalog's) that records another level or shard than the "
         "catalog",
         REFUSES},
    [AKVI_DMG_CATALOG_SHARD] = {"a catalog whose shard prefix for an SST is not the shard of that SST's key "
                                "range (hash layout)",
                                REFUSES},
    [AKVI_DMG_FILTER_V1] = {"a filter file of format 1 (no binding)", GOES_ON},
    [AKVI_DMG_FILTER_AND_SST] = {"a filter file unusable and its SST unreadable", GOES_ON},
    [AKVI_DMG_SST_BLOCK] = {"a corrupt data block in an SST", GOES_ON},
    [AKVI_DMG_RUN_FILE_NAME] = {"a name in `runs/` missing, or naming another file than its run's family "
                                "holds (another inode)",
                                GOES_ON},
    [AKVI_DMG_RUN_FILE] = {"a run file in `runs/` of a run with no family (the catalog its only record) "
                           "missing, unreadable, or not the size and entry count the catalog records",
                           REFUSES},
    [AKVI_DMG_WAL] = {"the WAL cut or damaged", GOES_ON},
    [AKVI_DMG_MANIFEST_CUT] = {"the MANIFEST cut (RocksDB forgets recent edits: ingestions, families)",
                               REFUSES},
    [AKVI_DMG_CURRENT_MISSING] = {"`rocksdb/CURRENT` missing", REFUSES},
    [AKVI_DMG_CATALOG_ONE_SLOT] = {"one catalog slot damaged", GOES_ON},
    [AKVI_DMG_CATALOG_BOTH] = {"both catalog slots missing or damaged", REFUSES},
    [AKVI_DMG_CATALOG_OLD] = {"a catalog older than the data (an old catalog file put back)", REFUSES},
    [AKVI_DMG_CATALOG_POLICY] = {"a catalog whose stored slot policy does not parse", REFUSES},
    [AKVI_DMG_IDENTITY_DAMAGED] = {"`IDENTITY` damaged", REFUSES},
    [AKVI_DMG_IDENTITY_MISSING] = {"`IDENTITY` missing, `rocksdb/CURRENT` present", GOES_ON},
    [AKVI_DMG_IDENTITY_GONE] = {"`IDENTITY` missing and no copy in the meta family", REFUSES},
    [AKVI_DMG_FOREIGN_FAMILY] = {"a family that is not adaptkv's", REFUSES},
    [AKVI_DMG_POOL_STALE] = {"a memtable pool family holding a flushed memtable (a crash before or while it "
                             "was emptied)",
                             GOES_ON},
    [AKVI_DMG_POOL_FILE_MISSING] =
        {"a memtable pool family whose SST file the MANIFEST names is missing (a cut "
         "MANIFEST forgot that an emptying deleted it)",
         REFUSES},
    [AKVI_DMG_POOL_MISSING] =
        {"a memtable pool family missing (dropped by hand, or forgotten by a cut MANIFEST)", GOES_ON},
    [AKVI_DMG_POOL_NO_GENERATION] = {"a memtable pool family holding data under no generation record, or a "
                                     "record that is not 8 bytes",
                                     REFUSES},
    [AKVI_DMG_MEM_FAMILY_MOVED] =
        {"an older format's memtable moved into the pool, its own `mem.<gen>` family "
         "still there (a crash between the copy and the drop)",
         GOES_ON},
    [AKVI_DMG_SST_MISSING] = {"an SST file the MANIFEST names is missing", REFUSES},
    [AKVI_DMG_LEFTOVER] = {"a family or file of a run or memtable the catalog accounts for as gone (an "
                           "interrupted flush, compaction or emptying)",
                           GOES_ON},
};

/* The message of a finding of kind d, which open must (refuses) or must
 * not refuse. */
static void format(char *msg, size_t cap, akvi_damage d, bool refuses, const char *fmt, va_list ap)
{
    assert(d < AKVI_DMG_COUNT && akvi_damage_table[d].refuses == refuses);
    (void)d;
    (void)refuses;
    vsnprintf(msg, cap, fmt, ap);
}

int akvi_refuse(akvi_damage d, int rc, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    format(msg, sizeof msg, d, true, fmt, ap);
    va_end(ap);
    return akvi_err(rc, "%s" AKVI_REPAIR_HINT, msg);
}

void akvi_damage_warn(const akv_db *db, akvi_damage d, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    format(msg, sizeof msg, d, false, fmt, ap);
    va_end(ap);
    akvi_log(db, "warning: %s", msg);
}

void akvi_finding_add(akvi_findings *F, akvi_damage kind, int rc, size_t cf, bool catalog_behind,
                      const char *fmt, ...)
{
    assert(kind < AKVI_DMG_COUNT);
    if (F->n == F->cap) {
        size_t cap = F->cap ? 2 * F->cap : 8;
        akvi_finding *g = realloc(F->v, cap * sizeof *g);
        if (!g) {
            F->oom = true;
            return;
        }
        F->v = g;
        F->cap = cap;
    }
    akvi_finding *f = &F->v[F->n++];
    *f = (akvi_finding){.kind = kind, .rc = rc, .cf = cf, .catalog_behind = catalog_behind};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
}

void akvi_findings_free(akvi_findings *F)
{
    free(F->v);
    *F = (akvi_findings){0};
}

const akvi_finding *akvi_findings_first(const akvi_findings *F, akvi_damage k)
{
    for (size_t i = 0; i < F->n; i++)
        if (F->v[i].kind == k)
            return &F->v[i];
    return NULL;
}

int akvi_findings_open(const akv_db *db, const akvi_findings *F)
{
    for (size_t i = 0; i < F->n; i++)
        if (akvi_damage_table[F->v[i].kind].refuses)
            return akvi_refuse(F->v[i].kind, F->v[i].rc, "%s", F->v[i].msg);
    for (size_t i = 0; i < F->n; i++)
        if (F->v[i].msg[0])
            akvi_damage_warn(db, F->v[i].kind, "%s", F->v[i].msg);
    return AKV_OK;
}
