/*
 * inspect.c — one read-only look at a database directory (inspect.h).
 *
 * The catalog is the truth about runs; RocksDB's MANIFEST is the witness of
 * every SST it holds (count, key range, entries, size), and ids and
 * generations the catalog has not reserved are evidence that it is older
 * than the data (docs/reliability.md, "Damage and what open does"). Each
 * disagreement becomes a finding of its kind, in a fixed order: families,
 * SST files, names newer than the catalog, memtables. Checks that need a
 * run's filters or readers (a filter file's binding, a run file's entry
 * count) are made as open loads them (recover.c), in the same read-only
 * phase. Before RocksDB opens, the identity and rocksdb/CURRENT say what
 * the directory is (akvi_inspect_dir), and the WAL is read for damage the
 * replay would drop without a word (akvi_wal_damage).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/inspect.h"
#include "util/order.h"
#include "util/shard.h"

typedef struct look {
    akv_db *db;
    const akvi_catalog *c;
    const akvi_cf_set *cfs;
    akvi_findings *F;
    bool *gone;    /* per family: one the catalog accounts for as gone */
    bool *missing; /* per family: a file of it RocksDB records is missing */
} look;

#define RUN(id) ((unsigned long long)(id))

/* Every family accounted for: named by the catalog, a leftover the
 * catalog explains, or one of the memtable pool's. */
static void look_families(look *L)
{
    const akvi_catalog *c = L->c;
    const akvi_cf_set *s = L->cfs;
    for (size_t i = 0; i < s->n; i++) {
        const char *name = s->names[i];
        uint64_t id;
        if (strcmp(name, "default") == 0 || strcmp(name, "meta") == 0)
            continue;
        if ((id = akvi_parse_id(name, "run.")) || (id = akvi_parse_id(name, "rmap."))) {
            const akvi_cat_run *r = akvi_catalog_run(c, id);
            if (r && !r->files)
                continue;
            if (id >= c->next_run_id)
                akvi_finding_add(
                    L->F, AKVI_DMG_CATALOG_OLD, AKV_ECORRUPT, i, true,
                    "family %s is newer than the catalog (which reserves run ids below %llu): the "
                    "catalog is older than the data",
                    name, RUN(c->next_run_id));
            else /* a run the catalog replaced, or one never committed */
                L->gone[i] = true;
        } else if ((id = akvi_parse_id(name, "mem."))) {
            L->gone[i] = id <= c->flushed_mem_gen; /* an older format's, already in a run */
        } else if (!((id = akvi_parse_id(name, "pool.")) && id <= AKVI_POOL_MAX)) {
            akvi_finding_add(L->F, AKVI_DMG_FOREIGN_FAMILY, AKV_ECORRUPT, i, false,
                             "RocksDB holds family '%s', which is not adaptkv's", name);
        }
        if (L->gone[i])
            akvi_finding_add(L->F, AKVI_DMG_LEFTOVER, AKV_OK, i, false, "%s", "");
    }
    for (size_t i = 0; i < c->n_run; i++) {
        if (c->runs[i].files) /* no family: its files are checked below */
            continue;
        char name[64];
        snprintf(name, sizeof name, "run.%llu", RUN(c->runs[i].id));
        bool run = akvi_cf_find(s, name) != NULL, ok = run;
        if (ok && L->db->layout == AKV_LAYOUT_ORDERED) {
            snprintf(name, sizeof name, "rmap.%llu", RUN(c->runs[i].id));
            ok = akvi_cf_find(s, name) != NULL;
        }
        if (!ok)
            akvi_finding_add(L->F, AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, SIZE_MAX, !run,
                             "the catalog names run %llu but RocksDB has no family %s", RUN(c->runs[i].id),
                             name);
    }
}

/* Hash layout: an SST holds one shard (the top prefix_bits of h.hi, the
 * first 8 bytes of every internal key), so its smallest and largest keys
 * are both in the shard its prefix names. */
static bool shard_fits(const akvi_cat_run *r, const akvi_cat_sst *s)
{
    if (s->smallest_len < 8 || s->largest_len < 8)
        return false;
    akv_hash lo = {.hi = akvi_get_be64(s->smallest)}, hi = {.hi = akvi_get_be64(s->largest)};
    return r->prefix_bits <= 64 && akvi_shard_of(lo, r->prefix_bits) == s->prefix &&
           akvi_shard_of(hi, r->prefix_bits) == s->prefix;
}

/* A run's SSTs against the files RocksDB's MANIFEST records for its family
 * (the witness of every SST's key range, entry count and size, and through
 * the key range, of its shard prefix): the first difference is a finding. */
static int look_run_files(look *L, const akvi_cat_run *r, const akvi_live_sst *l, size_t n)
{
    akv_db *db = L->db;
    char name[64];
    size_t first;
    snprintf(name, sizeof name, "run.%llu", RUN(r->id));
    rocksdb_column_family_handle_t *cf = akvi_cf_find(L->cfs, name);
    if (!cf)
        return AKV_OK; /* a finding already */
    size_t k = akvi_live_ssts_of(l, n, name, &first);
    if (k != r->n_sst) {
        akvi_finding_add(L->F, AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, SIZE_MAX, false,
                         "run %llu: the catalog records %zu SST files, RocksDB's family %s holds %zu (its "
                         "MANIFEST lost or gained files)",
                         RUN(r->id), r->n_sst, name, k);
        return AKV_OK;
    }
    for (size_t j = 0; j < k; j++) {
        const akvi_cat_sst *s = &r->ssts[j];
        const akvi_live_sst *f = &l[first + j];
        const char *file = f->name + (f->name[0] == '/'), *what = NULL;
        if (akvi_bytes_cmp(f->smallest, f->smallest_len, s->smallest, s->smallest_len) != 0 ||
            akvi_bytes_cmp(f->largest, f->largest_len, s->largest, s->largest_len) != 0)
            what = "key range";
        else if (f->entries && f->entries != s->keys)
            what = "entry count";
        else if (f->size != s->bytes)
            what = "size";
        else if (db->layout == AKV_LAYOUT_HASH && !shard_fits(r, s)) {
            /* Lookups go to an SST by its shard prefix: the prefix must be
             * the shard of the key range RocksDB (the witness) holds. */
            akvi_finding_add(
                L->F, AKVI_DMG_CATALOG_SHARD, AKV_ECORRUPT, SIZE_MAX, false,
                "run %llu SST %llu: the catalog's shard prefix %llu (of %u bits) is not the shard "
                "of the SST's key range in RocksDB's file %s",
                RUN(r->id), RUN(s->id), RUN(s->prefix), r->prefix_bits, file);
            return AKV_OK;
        }
        if (what) {
            akvi_finding_add(
                L->F, AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, SIZE_MAX, false,
                "run %llu SST %llu: RocksDB's file %s (%llu entries, %llu bytes) differs from the "
                "catalog's record (%llu entries, %llu bytes) in its %s",
                RUN(r->id), RUN(s->id), file, RUN(f->entries), RUN(f->size), RUN(s->keys), RUN(s->bytes),
                what);
            return AKV_OK;
        }
    }
    uint64_t entries = 0;
    int rc = akvi_cf_entries(db->rk.rdb, cf, &entries);
    if (rc == AKV_OK && entries != r->keys) {
        akvi_finding_add(L->F, AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, SIZE_MAX, false,
                         "run %llu: RocksDB's family %s holds %llu entries, the catalog records %llu",
                         RUN(r->id), name, RUN(entries), RUN(r->keys));
        return AKV_OK;
    }
    snprintf(name, sizeof name, "rmap.%llu", RUN(r->id));
    if (rc == AKV_OK && db->layout == AKV_LAYOUT_ORDERED && (cf = akvi_cf_find(L->cfs, name)) != NULL) {
        rc = akvi_cf_entries(db->rk.rdb, cf, &entries);
        if (rc == AKV_OK && entries != r->keys)
            akvi_finding_add(L->F, AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT, SIZE_MAX, false,
                             "run %llu: its reverse map %s holds %llu entries, the run %llu", RUN(r->id),
                             name, RUN(entries), RUN(r->keys));
    }
    return rc;
}

/* After RocksDB opened without paranoid checks: every SST file that is
 * missing must belong to a family the catalog accounts for as gone (a
 * leftover, dropped when the open goes live), never to a run, a memtable
 * or meta. */
static int look_missing_files(look *L, const akvi_live_sst *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *file = l[i].name + (l[i].name[0] == '/');
        char *path = akvi_path_join(L->db->rdir, file);
        if (!path)
            return akvi_err(AKV_ENOMEM, "out of memory");
        bool there = akvi_path_exists(path);
        free(path);
        if (there)
            continue;
        size_t cf = SIZE_MAX;
        for (size_t j = 0; j < L->cfs->n; j++)
            if (strcmp(L->cfs->names[j], l[i].cf) == 0)
                cf = j;
        if (cf != SIZE_MAX)
            L->missing[cf] = true;
        if (cf != SIZE_MAX && L->gone[cf])
            akvi_finding_add(L->F, AKVI_DMG_LEFTOVER, AKV_OK, cf, false,
                             "RocksDB's file %s is missing; it belongs to family %s, which no committed run "
                             "names (an interrupted flush or compaction): the family is dropped",
                             file, l[i].cf);
        else
            akvi_finding_add(
                L->F, akvi_parse_id(l[i].cf, "pool.") ? AKVI_DMG_POOL_FILE_MISSING : AKVI_DMG_SST_MISSING,
                AKV_ECORRUPT, cf, false, "RocksDB's file %s of family %s is missing", file, l[i].cf);
    }
    return AKV_OK;
}

/* The SST files RocksDB records, against the catalog. */
static int look_sst_files(look *L)
{
    akvi_live_sst *l = NULL;
    size_t n = 0;
    int rc = akvi_live_ssts(L->db->rk.rdb, &l, &n);
    if (rc == AKV_OK && L->db->missing_relaxed)
        rc = look_missing_files(L, l, n);
    for (size_t i = 0; rc == AKV_OK && i < L->c->n_run; i++)
        if (!L->c->runs[i].files)
            rc = look_run_files(L, &L->c->runs[i], l, n);
    akvi_live_ssts_free(l, n);
    return rc;
}

/* Filter files and run files: named, a leftover (run id below the
 * reserve, deleted by open), or newer than the catalog. */
static int look_newer(look *L, const char *dir, const char *ext, const char *what)
{
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? AKV_OK : akvi_err(AKV_EIO, "reading %s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        uint64_t run, sst;
        if (akvi_file_name_parse(e->d_name, ext, &run, &sst) == AKVI_FNAME_FILE && run >= L->c->next_run_id)
            akvi_finding_add(L->F, AKVI_DMG_CATALOG_OLD, AKV_ECORRUPT, SIZE_MAX, true,
                             "%s %s is newer than the catalog (which reserves run ids below %llu): the "
                             "catalog is older than the data",
                             what, e->d_name, RUN(L->c->next_run_id));
    }
    closedir(d);
    return AKV_OK;
}

/* A run that is its files in DIR/runs (no family): none of them there is
 * a run the catalog names whose data is gone. (Each file's size and entry
 * count are checked as open opens its readers.) */
static void look_file_runs(look *L)
{
    for (size_t i = 0; i < L->c->n_run; i++) {
        const akvi_cat_run *r = &L->c->runs[i];
        bool any = false;
        char name[64] = "";
        for (size_t j = 0; r->files && j < r->n_sst && !any; j++) {
            akvi_run_file_name(r->id, r->ssts[j].id, name, sizeof name);
            char *p = akvi_path_join(L->db->sdir, name);
            any = !p || akvi_path_exists(p); /* out of memory: not a finding */
            free(p);
        }
        if (r->files && r->n_sst && !any)
            akvi_finding_add(L->F, AKVI_DMG_RUN_FILE, AKV_ECORRUPT, SIZE_MAX, true,
                             "run %llu: none of its %zu files is in runs/ (the last, runs/%s, is missing; "
                             "the catalog is its only record)",
                             RUN(r->id), r->n_sst, name);
    }
}

/* Does family cf hold anything? */
static int cf_has_data(akv_db *db, rocksdb_column_family_handle_t *cf, bool *any)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, cf);
    rocksdb_iter_seek_to_first(it);
    *any = rocksdb_iter_valid(it);
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    rocksdb_iter_destroy(it);
    return err ? akvi_rocks_err(err, "reading a memtable family") : AKV_OK;
}

/* Memtables newer than the catalog's flushed generation: in the pool's
 * families, by the generation each one's record names (older: stale), and
 * in mem.<gen> families of an older format. Those above the flushed
 * generation are consecutive and start right after it: memtables are
 * flushed oldest first, and their families emptied or dropped only after
 * the catalog says so. */
static int look_memtables(look *L, akvi_inspection *I)
{
    akv_db *db = L->db;
    const akvi_cf_set *s = L->cfs;
    uint64_t flushed = L->c->flushed_mem_gen;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t gen = 0, p = akvi_parse_id(s->names[i], "pool.");
        if (!p || p > AKVI_POOL_MAX || !s->h[i] || L->missing[i]) /* missing: a finding already */
            continue;
        int rc = akvi_pool_marker(db, s->h[i], &gen);
        if (rc == AKV_ECORRUPT) { /* a record that is not 8 bytes */
            akvi_finding_add(L->F, AKVI_DMG_POOL_NO_GENERATION, rc, i, false, "memtable family %s: %s",
                             s->names[i], akv_errmsg());
            continue;
        }
        bool any = false;
        if (rc == AKV_OK && gen <= flushed)
            rc = cf_has_data(db, s->h[i], &any);
        if (rc != AKV_OK)
            return rc;
        /* Its generation is written before its first key and removed with
         * its last, by one range deletion. */
        if (any && gen == 0)
            akvi_finding_add(L->F, AKVI_DMG_POOL_NO_GENERATION, AKV_ECORRUPT, i, false,
                             "memtable family %s holds data but no generation", s->names[i]);
        I->pool[i] = gen > flushed ? AKVI_POOL_BUSY : gen || any ? AKVI_POOL_STALE : AKVI_POOL_FREE;
        if (I->pool[i] == AKVI_POOL_STALE)
            akvi_finding_add(L->F, AKVI_DMG_POOL_STALE, AKV_OK, i, false, "%s", "");
        I->gen[i] = gen > flushed ? gen : 0;
    }
    /* One a pool family holds a copy of (open moved it there and stopped
     * before dropping it) is a leftover: the copy was written in one
     * batch. */
    for (size_t i = 0; i < s->n; i++) {
        uint64_t gen = akvi_parse_id(s->names[i], "mem.");
        bool copied = false;
        for (size_t j = 0; gen > flushed && j < s->n; j++)
            copied |= akvi_parse_id(s->names[j], "pool.") && I->gen[j] == gen;
        if (copied)
            akvi_finding_add(L->F, AKVI_DMG_MEM_FAMILY_MOVED, AKV_OK, i, false, "%s", "");
        else if (gen > flushed)
            I->gen[i] = gen;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++)
        if (I->gen[i]) {
            lo = I->gen[i] < lo ? I->gen[i] : lo;
            hi = I->gen[i] > hi ? I->gen[i] : hi;
            n++;
        }
    /* A gap, or a generation twice, means a memtable was flushed by a
     * commit this catalog does not have. */
    if (n && (lo != flushed + 1 || hi - lo + 1 != n))
        akvi_finding_add(L->F, AKVI_DMG_CATALOG_OLD, AKV_ECORRUPT, SIZE_MAX, true,
                         "memtables %llu..%llu (%zu of them) do not follow the catalog's flushed generation "
                         "%llu: the catalog is older than the data",
                         RUN(lo), RUN(hi), n, RUN(flushed));
    return AKV_OK;
}

static bool has_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    bool any = false;
    while (d && !any && (e = readdir(d)) != NULL)
        any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    if (d)
        closedir(d);
    return any;
}

int akvi_inspect_dir(akv_db *db, akvi_findings *F, akvi_dir_kind *kind, uint32_t *layout, uint64_t *seed)
{
    bool has_current = akvi_path_exists_in(db->rdir, "CURRENT");
    int rc = akvi_identity_read(db->dir, layout, seed);
    *kind = rc == AKV_OK ? AKVI_DIR_IDENTIFIED : has_current ? AKVI_DIR_UNIDENTIFIED : AKVI_DIR_NEW;
    if (rc != AKV_OK && rc != AKV_NOTFOUND)
        akvi_finding_add(F, AKVI_DMG_IDENTITY_DAMAGED, rc, SIZE_MAX, false, "%s", akv_errmsg());
    else if (rc == AKV_OK && !has_current)
        akvi_finding_add(F, AKVI_DMG_CURRENT_MISSING, AKV_ECORRUPT, SIZE_MAX, false,
                         "%s/CURRENT is missing: RocksDB cannot find its MANIFEST, and a database with an "
                         "identity is never created again (akv_repair restores CURRENT)",
                         db->rdir);
    else if (*kind == AKVI_DIR_NEW &&
             (akvi_path_exists_in(db->dir, "CATALOG.0") || akvi_path_exists_in(db->dir, "CATALOG.1") ||
              has_entries(db->rdir) || has_entries(db->fdir)))
        akvi_finding_add(F, AKVI_DMG_CURRENT_MISSING, AKV_ECORRUPT, SIZE_MAX, false,
                         "%s holds adaptkv files but neither an identity nor rocksdb/CURRENT", db->dir);
    return F->oom ? akvi_err(AKV_ENOMEM, "out of memory") : AKV_OK;
}

int akvi_inspect(akv_db *db, const akvi_catalog *c, const akvi_cf_set *cfs, akvi_inspection *out)
{
    size_t n = cfs->n ? cfs->n : 1;
    *out = (akvi_inspection){.gen = calloc(n, sizeof *out->gen), .pool = calloc(n, sizeof *out->pool)};
    look L = {.db = db,
              .c = c,
              .cfs = cfs,
              .F = &out->found,
              .gone = calloc(n, sizeof *L.gone),
              .missing = calloc(n, sizeof *L.missing)};
    int rc = out->gen && out->pool && L.gone && L.missing ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    if (rc == AKV_OK) {
        look_families(&L);
        rc = look_sst_files(&L);
    }
    if (rc == AKV_OK)
        rc = look_newer(&L, db->fdir, ".akf", "filter file");
    if (rc == AKV_OK)
        rc = look_newer(&L, db->sdir, ".sst", "run file");
    if (rc == AKV_OK) {
        look_file_runs(&L);
        rc = look_memtables(&L, out);
    }
    if (rc == AKV_OK && out->found.oom)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    free(L.gone);
    free(L.missing);
    if (rc != AKV_OK)
        akvi_inspection_free(out);
    return rc;
}

void akvi_inspection_free(akvi_inspection *I)
{
    akvi_findings_free(&I->found);
    free(I->gen);
    free(I->pool);
    I->gen = NULL;
    I->pool = NULL;
}

int akvi_wal_damage(akv_db *db, bool strict, char *note, size_t cap)
{
    akvi_wal_report w;
    int rc = akvi_wal_check(db->rdir, &w);
    if (rc != AKV_OK || !w.files_damaged)
        return rc;
    char msg[640], dropped[160];
    if (w.torn && w.records_dropped == 1)
        snprintf(dropped, sizeof dropped, "the incomplete record at its end is dropped");
    else
        snprintf(dropped, sizeof dropped, "it and %llu complete records (%llu writes) after it are dropped",
                 (unsigned long long)(w.records_dropped - 1), (unsigned long long)w.writes_dropped);
    snprintf(msg, sizeof msg,
             "WAL %s/%s %s at byte %llu: the %llu records (%llu writes) before it are recovered; %s%s",
             db->rdir, w.file,
             w.torn ? "ends inside a record (a write cut short, or a cut file)"
                    : "is damaged (a record fails its checksum)",
             (unsigned long long)w.offset, (unsigned long long)w.records_kept,
             (unsigned long long)w.writes_kept, dropped,
             w.files_damaged > 1 ? " (more than one WAL file is damaged)" : "");
    if (note && cap)
        snprintf(note, cap, "%s", msg);
    if (strict)
        return akvi_err(AKV_ECORRUPT,
                        "%s; wal_strict refuses to open past it (open without wal_strict, or akv_repair, "
                        "recovers the writes before the damage and drops the rest); nothing was changed",
                        msg);
    atomic_fetch_add(&db->st.wal_damaged_recoveries, w.files_damaged);
    atomic_fetch_add(&db->st.wal_records_dropped, w.records_dropped);
    akvi_damage_warn(db, AKVI_DMG_WAL, "%s (point-in-time recovery)", msg);
    return AKV_OK;
}
