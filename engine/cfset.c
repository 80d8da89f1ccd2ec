/*
 * cfset.c — RocksDB's column families as an open finds them: RocksDB
 * opened (read only, or for writing) with every family its MANIFEST lists,
 * and the handles handed out to the runs and memtables that own them; the
 * rest are destroyed, and leftovers dropped, at the end (open, repair).
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

rocksdb_column_family_handle_t *akvi_cf_take(akvi_cf_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->state[i] == AKVI_CF_FREE && strcmp(s->names[i], name) == 0) {
            s->state[i] = AKVI_CF_USED;
            return s->h[i];
        }
    return NULL;
}

rocksdb_column_family_handle_t *akvi_cf_find(const akvi_cf_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->names[i], name) == 0)
            return s->h[i];
    return NULL;
}

int akvi_cf_set_open(akv_db *db, bool read_only, bool create, akvi_cf_set *s)
{
    char *err = NULL;
    size_t n = 0;
    bool exists = akvi_path_exists_in(db->rdir, "CURRENT");
    char **listed = exists ? rocksdb_list_column_families(db->rk.dbopt, db->rdir, &n, &err) : NULL;
    if (err)
        return akvi_rocks_err(err, "listing RocksDB's column families");
    bool has_meta = false;
    for (size_t i = 0; i < n; i++)
        has_meta |= strcmp(listed[i], "meta") == 0;
    size_t total = n ? n + !has_meta : 2;
    s->names = calloc(total, sizeof *s->names);
    s->h = calloc(total, sizeof *s->h);
    s->state = calloc(total, sizeof *s->state);
    const rocksdb_options_t **opts = calloc(total, sizeof *opts);
    if (!s->names || !s->h || !s->state || !opts) {
        free(opts);
        if (listed)
            rocksdb_list_column_families_destroy(listed, n);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        s->names[k++] = strdup(listed[i]);
    if (!n)
        s->names[k++] = strdup("default");
    if (!has_meta && !read_only)
        s->names[k++] = strdup("meta");
    if (listed)
        rocksdb_list_column_families_destroy(listed, n);
    s->n = k;
    for (size_t i = 0; i < k; i++)
        opts[i] = akvi_cf_options_for(db, s->names[i]);
    rocksdb_options_set_create_if_missing(db->rk.dbopt, create ? 1 : 0);
    for (;;) {
        if (read_only)
            db->rk.rdb = rocksdb_open_for_read_only_column_families(
                db->rk.dbopt, db->rdir, (int)k, (const char *const *)s->names, opts, s->h, 0, &err);
        else
            db->rk.rdb = rocksdb_open_column_families(db->rk.dbopt, db->rdir, (int)k,
                                                      (const char *const *)s->names, opts, s->h, &err);
        /* A table file the MANIFEST names is missing: RocksDB 7.8 deletes
         * an ingested file when the MANIFEST sync of its ingestion fails,
         * though the record may have reached the disk. Open once more
         * without paranoid checks; load_existing then refuses unless every
         * missing file belongs to a family the catalog does not name. */
        if (!err || !db->missing_ok || db->missing_relaxed || !strstr(err, "Corruption") ||
            !strstr(err, "No such file"))
            break;
        akvi_log(db,
                 "warning: RocksDB's MANIFEST names a missing SST (%s); opening without its paranoid checks "
                 "to see whose it is",
                 err);
        free(err);
        err = NULL;
        memset(s->h, 0, s->n * sizeof *s->h);
        rocksdb_options_set_paranoid_checks(db->rk.dbopt, 0);
        db->missing_relaxed = true;
    }
    free(opts);
    if (err) {
        db->rk.rdb = NULL;
        memset(s->h, 0, s->n * sizeof *s->h);
        return akvi_rocks_err(err, "opening RocksDB");
    }
    db->rk.default_cf = akvi_cf_take(s, "default");
    db->rk.meta_cf = akvi_cf_take(s, "meta");
    if (!db->rk.meta_cf)
        return akvi_refuse(AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, "RocksDB in %s has no meta family", db->rdir);
    return AKV_OK;
}

/* Handles the runs and memtables did not take; `drop`: leftovers go (only
 * after a successful recovery, in the read-write phase). */
static void cf_set_release(akv_db *db, akvi_cf_set *s, bool drop)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->state[i] != AKVI_CF_USED && s->h && s->h[i]) {
            if (drop && s->state[i] == AKVI_CF_LEFTOVER)
                akvi_cf_drop(db, s->h[i]);
            rocksdb_column_family_handle_destroy(s->h[i]);
        }
        s->h[i] = NULL;
    }
}

void akvi_cf_set_free(akv_db *db, akvi_cf_set *s, bool drop)
{
    if (s->h)
        cf_set_release(db, s, drop);
    for (size_t i = 0; i < s->n; i++)
        free(s->names[i]);
    free(s->names);
    free(s->h);
    free(s->state);
    memset(s, 0, sizeof *s);
}

/* "run.12" -> 12 with prefix "run."; 0 if the name is not of that form. */
uint64_t akvi_parse_id(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || name[n] < '0' || name[n] > '9')
        return 0;
    char *end;
    unsigned long long v = strtoull(name + n, &end, 10);
    return *end ? 0 : (uint64_t)v;
}
