/*
 * damage.h — the damage an open can find in a database directory, and what
 * open does about each: the table of docs/reliability.md ("Damage and what
 * open does"), here as code. Each row names one kind of damage in the
 * words of that table; test_reliability.c checks that the two list the
 * same rows in the same order, so neither changes alone.
 *
 * Open goes on past some damage (it rebuilds, drops or re-creates what is
 * derived, and logs a warning) and refuses the rest, leaving the directory
 * as it was and naming akv_repair. Each refusal of a kind the table
 * refuses goes through akvi_refuse, with the kind it found. The one
 * refusal an option asks for (`wal_strict`, of a WAL open would otherwise
 * recover up to its damage) is made where the option is read (recover.c).
 *
 * What one look at a directory finds (inspect.c) is a list of findings,
 * each of a kind of this table. Open's policy over that list is
 * akvi_findings_open; repair (repair.c) acts on every finding instead.
 */
#ifndef AKVI_DAMAGE_H
#define AKVI_DAMAGE_H

#include <stdbool.h>

#include "adaptkv/adaptkv.h"

typedef enum akvi_damage {
    AKVI_DMG_FILTER_UNUSABLE,
    AKVI_DMG_FILTER_OTHER_KIND,
    AKVI_DMG_FILTER_OTHER_SST,
    AKVI_DMG_FILTER_FIELD_CONFLICT,
    AKVI_DMG_CATALOG_SHARD,
    AKVI_DMG_FILTER_V1,
    AKVI_DMG_FILTER_AND_SST,
    AKVI_DMG_SST_BLOCK,
    AKVI_DMG_RUN_FILE_NAME,
    AKVI_DMG_RUN_FILE,
    AKVI_DMG_WAL,
    AKVI_DMG_MANIFEST_CUT,
    AKVI_DMG_CURRENT_MISSING,
    AKVI_DMG_CATALOG_ONE_SLOT,
    AKVI_DMG_CATALOG_BOTH,
    AKVI_DMG_CATALOG_OLD,
    AKVI_DMG_CATALOG_POLICY,
    AKVI_DMG_IDENTITY_DAMAGED,
    AKVI_DMG_IDENTITY_MISSING,
    AKVI_DMG_IDENTITY_GONE,
    AKVI_DMG_FOREIGN_FAMILY,
    AKVI_DMG_POOL_STALE,
    AKVI_DMG_POOL_FILE_MISSING,
    AKVI_DMG_POOL_MISSING,
    AKVI_DMG_POOL_NO_GENERATION,
    AKVI_DMG_MEM_FAMILY_MOVED,
    AKVI_DMG_SST_MISSING,
    AKVI_DMG_LEFTOVER,
    AKVI_DMG_COUNT
} akvi_damage;

typedef struct akvi_damage_row {
    const char *what; /* the damage, as docs/reliability.md's table words it */
    bool refuses;     /* open refuses (else it goes on, and says so) */
} akvi_damage_row;

extern const akvi_damage_row akvi_damage_table[AKVI_DMG_COUNT];

/* Open's refusal for damage d (a kind open refuses): rc with the message
 * and the repair hint, the directory left as it was. */
int akvi_refuse(akvi_damage d, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Open goes on past damage d (a kind it does not refuse): a warning
 * through the log hook. */
void akvi_damage_warn(const akv_db *db, akvi_damage d, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* One finding of an inspection (inspect.c): a kind of damage, the code a
 * refusal of it returns, the family it concerns, and what it is, in words
 * for the log or the refusal ("": a leftover said nowhere). */
typedef struct akvi_finding {
    akvi_damage kind;
    int rc;
    size_t cf; /* its index in the inspected family set; SIZE_MAX: none */
    /* Evidence that the catalog is not the newest state of the data: a
     * run id or memtable generation it does not account for, or a run it
     * names whose data is gone (repair then keeps runs it does not name). */
    bool catalog_behind;
    char msg[640];
} akvi_finding;

/* Findings in the order the inspection made them. */
typedef struct akvi_findings {
    akvi_finding *v;
    size_t n, cap;
    bool oom; /* a finding was lost for want of memory */
} akvi_findings;

/* Append a finding (F->oom set if there is no room for it). */
void akvi_finding_add(akvi_findings *F, akvi_damage kind, int rc, size_t cf, bool catalog_behind,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void akvi_findings_free(akvi_findings *F);
/* The first finding of kind k (NULL: none). */
const akvi_finding *akvi_findings_first(const akvi_findings *F, akvi_damage k);

/* Open's policy: the first finding of a kind the table refuses is the
 * refusal (its code, its message, the repair hint; nothing is logged and
 * the caller changes nothing); else each finding that has words is logged
 * as a warning and AKV_OK returned, for the caller to act on them. */
int akvi_findings_open(const akv_db *db, const akvi_findings *F);

#endif
