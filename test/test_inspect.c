/*
 * test_inspect.c — the one read-only look at a database directory
 * (engine/inspect.c): it changes nothing on disk, types what it finds by
 * the damage table's kinds in a fixed order, marks what shows the catalog
 * is behind the data, and open's policy over its findings refuses with the
 * first one the table refuses.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "engine/inspect.h"
#include "support/damage.h"
#include "support/kvmodel.h"
#include "support/numbered.h"

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void opts(akv_options *o)
{
    akv_options_init(o);
    o->memtable_bytes = 32 << 10;
    o->sst_target_bytes = 16 << 10;
    o->block_cache_bytes = 1 << 20;
    o->log = quiet;
}

/* A database of 3,000 keys in runs, closed. */
static void make_db(const char *dir)
{
    akv_options o;
    opts(&o);
    o.create_if_missing = 1;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 3000);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
}

/* A handle on dir with the test's options, nothing opened yet. */
static akv_db *handle(const char *dir)
{
    akv_options o, r;
    opts(&o);
    cr_assert_eq(akvi_options_resolve(&o, &r), AKV_OK, "%s", akv_errmsg());
    int rc;
    akv_db *db = akvi_db_new(dir, &r, &rc);
    cr_assert_not_null(db, "%s", akv_errmsg());
    return db;
}

/* The findings of one inspection of dir, RocksDB opened read only, as open
 * makes it; the catalog's reserve in *next. */
static akvi_findings look(const char *dir, uint64_t *next)
{
    akv_db *db = handle(dir);
    uint32_t layout;
    cr_assert_eq(akvi_identity_read(dir, &layout, &db->seed), AKV_OK, "%s", akv_errmsg());
    db->layout = (akv_layout)layout;
    akvi_cf_set cfs = {0};
    cr_assert_eq(akvi_cf_set_open(db, true, false, &cfs), AKV_OK, "%s", akv_errmsg());
    akvi_catalog c;
    char note[700];
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK, "%s", akv_errmsg());
    *next = c.next_run_id;
    akvi_inspection I;
    cr_assert_eq(akvi_inspect(db, &c, &cfs, &I), AKV_OK, "%s", akv_errmsg());
    akvi_findings F = I.found;
    I.found = (akvi_findings){0};
    akvi_inspection_free(&I);
    akvi_catalog_free(&c);
    akvi_cf_set_free(db, &cfs, false);
    akvi_db_free(db);
    return F;
}

static size_t refusing(const akvi_findings *F)
{
    size_t n = 0;
    for (size_t i = 0; i < F->n; i++)
        n += akvi_damage_table[F->v[i].kind].refuses;
    return n;
}

Test(inspect, a_clean_database_has_nothing_to_refuse_and_the_look_changes_nothing)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "insp-clean");
    make_db(dir);
    char *before = akvt_dir_digest(dir);
    uint64_t next;
    akvi_findings F = look(dir, &next);
    cr_assert_eq(refusing(&F), 0, "%s", F.n ? F.v[0].msg : "");
    for (size_t i = 0; i < F.n; i++)
        cr_assert(!F.v[i].catalog_behind, "%s", F.v[i].msg);
    akvi_findings_free(&F);
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "the inspection changed the directory");
    free(before);
    free(after);
    akvt_rmrf(dir);
}

static void expect_refused(const char *dir, const akvi_finding *first)
{
    char *before = akvt_dir_digest(dir);
    akv_options o;
    opts(&o);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), first->rc);
    cr_assert_not_null(strstr(akv_errmsg(), first->msg), "open said '%s', the finding '%s'", akv_errmsg(),
                       first->msg);
    cr_assert_not_null(strstr(akv_errmsg(), "akv_repair"), "%s", akv_errmsg());
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "a refused open changed the directory");
    free(before);
    free(after);
}

static void expect_repaired(const char *dir)
{
    akv_options o;
    opts(&o);
    akv_repair_report rep;
    cr_assert_eq(akv_repair(dir, &o, &rep), AKV_OK, "%s", akv_errmsg());
    akv_free(rep.text);
    uint64_t next;
    akvi_findings F = look(dir, &next);
    cr_assert_eq(refusing(&F), 0, "after repair: %s", F.n ? F.v[0].msg : "");
    akvi_findings_free(&F);
}

/* Files newer than the catalog: one finding each, in the inspection's
 * order (filters, then runs), each showing the catalog behind; open
 * refuses with the first and changes nothing; repair acts on them. */
Test(inspect, files_newer_than_the_catalog_are_typed_and_ordered)
{
    char dir[512], sub[600], filt[1024], run[1024], cmd[4096];
    akvt_tmpdir(dir, sizeof dir, "insp-newer");
    make_db(dir);
    uint64_t next;
    akvi_findings F = look(dir, &next);
    akvi_findings_free(&F);
    snprintf(sub, sizeof sub, "%s/filters", dir);
    cr_assert(akvt_find_file(sub, "", ".akf", filt, sizeof filt));
    snprintf(sub, sizeof sub, "%s/runs", dir);
    cr_assert(akvt_find_file(sub, "", ".sst", run, sizeof run));
    unsigned long long big = (unsigned long long)next + 5;
    snprintf(cmd, sizeof cmd, "cp '%s' '%s/filters/%llu-0.akf' && cp '%s' '%s/runs/%llu-0.sst'", filt, dir,
             big, run, dir, big);
    cr_assert_eq(system(cmd), 0);

    F = look(dir, &next);
    const akvi_finding *old[3] = {0};
    size_t n = 0;
    for (size_t i = 0; i < F.n; i++)
        if (F.v[i].kind == AKVI_DMG_CATALOG_OLD && n < 3)
            old[n++] = &F.v[i];
    cr_assert_eq(n, 2, "%zu findings of a catalog older than the data", n);
    cr_assert_not_null(strstr(old[0]->msg, "filter file"), "%s", old[0]->msg);
    cr_assert_not_null(strstr(old[1]->msg, "run file"), "%s", old[1]->msg);
    cr_assert(old[0]->catalog_behind && old[1]->catalog_behind);
    cr_assert_eq(old[0]->rc, AKV_ECORRUPT);
    cr_assert_eq(refusing(&F), 2);
    expect_refused(dir, old[0]);
    akvi_findings_free(&F);

    expect_repaired(dir);
    akv_options o;
    opts(&o);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

/* A run that is its files only, every one of them gone: the catalog names
 * data that is not there (it is behind), a finding open refuses. */
Test(inspect, a_run_whose_files_are_all_gone_shows_the_catalog_behind)
{
    char dir[512], sub[600], run[1024], cmd[4096];
    akvt_tmpdir(dir, sizeof dir, "insp-gone");
    make_db(dir);
    snprintf(sub, sizeof sub, "%s/runs", dir);
    cr_assert(akvt_find_file(sub, "", ".sst", run, sizeof run));
    unsigned long long id = strtoull(strrchr(run, '/') + 1, NULL, 10);
    snprintf(cmd, sizeof cmd, "mkdir '%s/away' && mv '%s/runs/%llu-'* '%s/away/'", dir, dir, id, dir);
    cr_assert_eq(system(cmd), 0);
    uint64_t next;
    akvi_findings F = look(dir, &next);
    const akvi_finding *f = akvi_findings_first(&F, AKVI_DMG_RUN_FILE);
    cr_assert_not_null(f, "no finding of a missing run file (%zu findings)", F.n);
    cr_assert(f->catalog_behind, "%s", f->msg);
    cr_assert_not_null(strstr(f->msg, "runs/"), "%s", f->msg);
    cr_assert_eq(refusing(&F), 1, "%s", F.v[0].msg);
    expect_refused(dir, f);
    akvi_findings_free(&F);
    expect_repaired(dir);
    akvt_rmrf(dir);
}

/* Before RocksDB opens: what the directory is, from its identity and
 * rocksdb/CURRENT, and damage as findings. */
static akvi_findings look_dir(const char *dir, akvi_dir_kind *kind, uint32_t *layout)
{
    akv_db *db = handle(dir);
    akvi_findings F = {0};
    uint64_t seed;
    cr_assert_eq(akvi_inspect_dir(db, &F, kind, layout, &seed), AKV_OK, "%s", akv_errmsg());
    akvi_db_free(db);
    return F;
}

/* One finding before RocksDB opens, of kind k, and open refuses with it. */
static void refused_as(const char *dir, akvi_damage k)
{
    akvi_dir_kind kind;
    uint32_t layout;
    akvi_findings F = look_dir(dir, &kind, &layout);
    cr_assert_eq(F.n, 1);
    cr_assert_eq(F.v[0].kind, k);
    expect_refused(dir, &F.v[0]);
    akvi_findings_free(&F);
}

Test(inspect, the_directory_before_rocksdb_opens)
{
    char dir[512], cmd[4096];
    akvt_tmpdir(dir, sizeof dir, "insp-dir");
    akvi_dir_kind kind;
    uint32_t layout = 99;
    akvi_findings F = look_dir(dir, &kind, &layout);
    cr_assert_eq(kind, AKVI_DIR_NEW);
    cr_assert_eq(F.n, 0);
    make_db(dir);
    F = look_dir(dir, &kind, &layout);
    cr_assert_eq(kind, AKVI_DIR_IDENTIFIED);
    cr_assert_eq(layout, (uint32_t)AKV_LAYOUT_HASH);
    cr_assert_eq(F.n, 0, "%s", F.n ? F.v[0].msg : "");

    /* CURRENT gone beside an identity: a finding open refuses. */
    snprintf(cmd, sizeof cmd, "mv '%s/rocksdb/CURRENT' '%s/CURRENT.away'", dir, dir);
    cr_assert_eq(system(cmd), 0);
    refused_as(dir, AKVI_DMG_CURRENT_MISSING);

    /* The identity gone, CURRENT back: unidentified (its copy in the meta
     * family is read once RocksDB opens), nothing to refuse yet. */
    snprintf(cmd, sizeof cmd,
             "mv '%s/CURRENT.away' '%s/rocksdb/CURRENT' && mv '%s/IDENTITY' '%s/IDENTITY.away'", dir, dir,
             dir, dir);
    cr_assert_eq(system(cmd), 0);
    F = look_dir(dir, &kind, &layout);
    cr_assert_eq(kind, AKVI_DIR_UNIDENTIFIED);
    cr_assert_eq(F.n, 0, "%s", F.n ? F.v[0].msg : "");

    /* A damaged identity: refused with the identity's own error. */
    snprintf(cmd, sizeof cmd, "printf 'not an identity' > '%s/IDENTITY'", dir);
    cr_assert_eq(system(cmd), 0);
    refused_as(dir, AKVI_DMG_IDENTITY_DAMAGED);
    akvt_rmrf(dir);
}
