/*
 * test_recovery.c — engine internals around open: leftovers of interrupted
 * flushes/compactions are removed, memtables come back from the WAL, the
 * catalog is the truth, and adaptation in multi-shard runs never produces a
 * false negative.
 */
#include <criterion/criterion.h>
#include <rocksdb/c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "engine/internal.h"
#include "support/damage.h"
#include "support/kvmodel.h"
#include "support/numbered.h"

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void opts(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 64 << 10;
    o->sst_target_bytes = 16 << 10;
    o->block_cache_bytes = 1 << 20;
    o->rest_compaction = 0; /* the runs stay as written */
    o->log = quiet;
}

/* Open the bare RocksDB instance and add families an interrupted flush or
 * compaction could have left behind: run `id` (an id the catalog reserved
 * but no run took) and a flushed memtable. */
/* The bare RocksDB instance of database `dir`, every family open with
 * RocksDB's default options. */
typedef struct bare {
    char rdir[600];
    rocksdb_options_t *o;
    rocksdb_t *db;
    char **names;
    size_t n;
    rocksdb_column_family_handle_t **h;
} bare;

static void bare_open(bare *b, const char *dir)
{
    snprintf(b->rdir, sizeof b->rdir, "%s/rocksdb", dir);
    b->o = rocksdb_options_create();
    char *err = NULL;
    b->n = 0;
    b->names = rocksdb_list_column_families(b->o, b->rdir, &b->n, &err);
    cr_assert_null(err);
    const rocksdb_options_t **cfo = calloc(b->n, sizeof *cfo);
    b->h = calloc(b->n, sizeof *b->h);
    for (size_t i = 0; i < b->n; i++)
        cfo[i] = b->o;
    b->db = rocksdb_open_column_families(b->o, b->rdir, (int)b->n, (const char *const *)b->names, cfo, b->h,
                                         &err);
    free(cfo);
    cr_assert_null(err, "%s", err);
}

static void bare_close(bare *b)
{
    for (size_t i = 0; i < b->n; i++)
        rocksdb_column_family_handle_destroy(b->h[i]);
    rocksdb_close(b->db);
    rocksdb_list_column_families_destroy(b->names, b->n);
    free(b->h);
    rocksdb_options_destroy(b->o);
}

static void plant_leftovers(const char *dir, unsigned long long id)
{
    bare b = {0};
    bare_open(&b, dir);
    char *err = NULL;
    char run[32], rmap[32];
    snprintf(run, sizeof run, "run.%llu", id);
    snprintf(rmap, sizeof rmap, "rmap.%llu", id);
    const char *extra[] = {run, rmap, "mem.1"};
    for (size_t i = 0; i < 3; i++) {
        bool exists = false;
        for (size_t j = 0; j < b.n; j++)
            exists |= strcmp(b.names[j], extra[i]) == 0;
        if (exists)
            continue;
        rocksdb_column_family_handle_t *c = rocksdb_create_column_family(b.db, b.o, extra[i], &err);
        cr_assert_null(err);
        rocksdb_column_family_handle_destroy(c);
    }
    bare_close(&b);
    char path[700];
    snprintf(path, sizeof path, "%s/filters/%llu-0.akf", dir, id);
    FILE *f = fopen(path, "w");
    fputs("junk", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/tmp/%llu-0.sst", dir, id);
    f = fopen(path, "w");
    fputs("junk", f);
    fclose(f);
}

/* Open the bare RocksDB instance; with `ingest`, add one SST file to
 * family `cf` as a flush would (ingested). Then delete the file family `cf`
 * holds, as RocksDB 7.8 does itself when the MANIFEST sync of an ingestion
 * fails after the record was written (docs/reliability.md). */
static void remove_sst_of(const char *dir, const char *cf, bool ingest)
{
    char path[800];
    bare b = {0};
    bare_open(&b, dir);
    char *err = NULL;
    if (ingest) {
        rocksdb_column_family_handle_t *target = NULL;
        for (size_t i = 0; i < b.n; i++)
            if (strcmp(b.names[i], cf) == 0)
                target = b.h[i];
        cr_assert_not_null(target, "no family %s", cf);
        snprintf(path, sizeof path, "%s/planted.sst", dir);
        rocksdb_envoptions_t *eo = rocksdb_envoptions_create();
        rocksdb_sstfilewriter_t *w = rocksdb_sstfilewriter_create(eo, b.o);
        rocksdb_sstfilewriter_open(w, path, &err);
        cr_assert_null(err);
        rocksdb_sstfilewriter_put(w, "x", 1, "y", 1, &err);
        cr_assert_null(err);
        rocksdb_sstfilewriter_finish(w, &err);
        cr_assert_null(err);
        rocksdb_sstfilewriter_destroy(w);
        rocksdb_envoptions_destroy(eo);
        rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
        const char *files[] = {path};
        rocksdb_ingest_external_file_cf(b.db, target, files, 1, io, &err);
        cr_assert_null(err, "%s", err);
        rocksdb_ingestexternalfileoptions_destroy(io);
    }
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(b.db);
    path[0] = 0;
    for (int i = 0; i < rocksdb_livefiles_count(lf); i++)
        if (strcmp(rocksdb_livefiles_column_family_name(lf, i), cf) == 0)
            snprintf(path, sizeof path, "%s%s", b.rdir, rocksdb_livefiles_name(lf, i));
    rocksdb_livefiles_destroy(lf);
    bare_close(&b);
    cr_assert(path[0], "family %s has no SST file", cf);
    cr_assert_eq(unlink(path), 0, "%s", path);
}

static unsigned long long newest_run(akv_db *db)
{
    akv_slot_info *rows;
    size_t n;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    unsigned long long id = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].level >= 0 && rows[i].run > id)
            id = rows[i].run;
    akv_free(rows);
    return id;
}

/* A new database in dir: 3000 numbered keys, flushed, closed; the id of
 * its newest run. */
static unsigned long long flushed_db(const char *dir, const akv_options *o)
{
    akv_db *db;
    cr_assert_eq(akv_open(dir, o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 3000);
    cr_assert_eq(akv_flush(db), AKV_OK);
    unsigned long long id = newest_run(db);
    cr_assert_eq(akv_close(db), AKV_OK);
    return id;
}

static void leftovers_test(akv_layout layout)
{
    char dir[512], path[700], run[32], rmap[32];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, layout);
    akv_db *db;
    /* A commit reserves the id after the next one (docs/format.md §6). */
    unsigned long long id = flushed_db(dir, &o) + 1;
    snprintf(run, sizeof run, "run.%llu", id);
    snprintf(rmap, sizeof rmap, "rmap.%llu", id);
    plant_leftovers(dir, id);
    cr_assert(akvt_families(dir, run, false));
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_not(akvt_families(dir, run, false), "unnamed run family survived");
    cr_assert_not(akvt_families(dir, rmap, false), "unnamed rmap family survived");
    cr_assert_not(akvt_families(dir, "mem.1", false), "flushed memtable family survived");
    struct stat st;
    snprintf(path, sizeof path, "%s/filters/%llu-0.akf", dir, id);
    cr_assert_neq(stat(path, &st), 0, "unnamed filter file survived");
    snprintf(path, sizeof path, "%s/tmp/%llu-0.sst", dir, id);
    cr_assert_neq(stat(path, &st), 0, "temp file survived");
    /* A family beyond the catalog's reserve is not a leftover: refused. */
    plant_leftovers(dir, 999);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT);
    cr_assert(akvt_families(dir, "run.999", false), "a family newer than the catalog was deleted");
    akvt_rmrf(dir);
}

Test(recovery, leftovers_removed_hash)
{
    leftovers_test(AKV_LAYOUT_HASH);
}
Test(recovery, leftovers_removed_ordered)
{
    leftovers_test(AKV_LAYOUT_ORDERED);
}

/* RocksDB's MANIFEST names an SST it removed itself, of a family the
 * catalog does not name (an uncommitted run of a database that kept runs
 * in families): open drops the family and answers as before. (A committed
 * run's file missing: recovery::runs_are_their_files_*.) */
Test(recovery, missing_sst_of_an_uncommitted_run_is_dropped)
{
    char dir[512], run[32];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    akv_db *db;
    unsigned long long committed = flushed_db(dir, &o);
    unsigned long long id = committed + 1; /* reserved, not taken */
    snprintf(run, sizeof run, "run.%llu", id);
    plant_leftovers(dir, id);
    remove_sst_of(dir, run, true);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_not(akvt_families(dir, run, false), "the family with the missing file survived");
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(recovery, memtables_come_back_from_the_wal)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    o.memtable_bytes = 1 << 20; /* nothing flushed */
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 2000);
    cr_assert_eq(akv_delete(db, "key-0000007", 11), AKV_OK);
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.levels, 0);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get(db, "key-0000007", 11, NULL, NULL), AKV_NOTFOUND);
    cr_assert_eq(akv_put(db, "key-0000007", 11, "value-7", 7), AKV_OK);
    akvt_expect_numbered(db, 2000);
    /* the guard was rebuilt from the recovered memtable: absent keys skip it */
    akv_get_info gi;
    unsigned probed = 0;
    for (unsigned i = 0; i < 1000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "absent-%u", i);
        cr_assert_eq(akv_get_ex(db, k, kl, NULL, NULL, &gi), AKV_NOTFOUND);
        probed += gi.probes;
    }
    if (akv_filter_kind_by_name("sscf") || akv_filter_kind_by_name("cbf"))
        cr_assert_lt(probed, 200, "guard let %u of 1000 absent lookups through", probed);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

/* Many small shards, adaptive slots, a storm of absent lookups: every
 * adaptation must leave every stored key findable. */
static void adapt_test(akv_layout layout)
{
    if (!akv_filter_kind_by_name("aqf"))
        return;
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, layout);
    o.slot_policy = "l0=aqf";
    o.bits_per_key = 6; /* many false positives to adapt to */
    /* More repeated false positives than the filters have room for: let
     * them grow (the default refills them instead, forgetting older ones:
     * slots::full_slot_past_the_grown_share_is_refilled_in_place). */
    o.grown_filter_share = 8;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 20000);
    cr_assert_eq(akv_compact(db), AKV_OK);
    for (int round = 0; round < 2; round++)
        for (unsigned i = 0; i < 20000; i++) {
            char k[32];
            size_t kl = (size_t)snprintf(k, sizeof k, "key-%07ux", i);
            cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_NOTFOUND);
        }
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_gt(st.false_positives, 0);
    cr_assert_gt(st.adaptations, 0, "no adaptation out of %llu false positives",
                 (unsigned long long)st.false_positives);
    akvt_expect_numbered(db, 20000);
    /* the second pass over the same absent keys probes much less */
    uint64_t fp1 = st.false_positives;
    for (unsigned i = 0; i < 20000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "key-%07ux", i);
        cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_NOTFOUND);
    }
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_lt(st.false_positives - fp1, fp1 / 4 + 10,
                 "adapted keys keep fooling the filters: %llu false positives in the third pass, %llu in the first two",
                 (unsigned long long)(st.false_positives - fp1), (unsigned long long)fp1);
    cr_assert_eq(akv_close(db), AKV_OK);
    /* adaptations were saved at close: still effective after a reopen */
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = 0; i < 20000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "key-%07ux", i);
        cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_NOTFOUND);
    }
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_lt(st.false_positives, fp1 / 4 + 10, "adaptations lost at reopen: %llu false positives",
                 (unsigned long long)st.false_positives);
    akvt_expect_numbered(db, 20000);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(adapt, multi_shard_hash_layout_no_false_negatives)
{
    adapt_test(AKV_LAYOUT_HASH);
}
Test(adapt, split_reverse_map_ordered_layout_no_false_negatives)
{
    adapt_test(AKV_LAYOUT_ORDERED);
}

Test(recovery, slot_hash_moves_the_shard_prefix_out)
{
    akv_hash h = {0xC123456789abcdefULL, 0x0fedcba987654321ULL};
    akv_hash s = akvi_slot_hash(h, 0);
    cr_assert(s.hi == h.hi && s.lo == h.lo);
    s = akvi_slot_hash(h, 2);
    cr_assert_eq(s.hi >> 2, (h.hi << 2) >> 2);
    cr_assert_eq(s.lo, h.lo);
}

/* Costly negatives declared up front reach the filters built by the next
 * compaction: cost-aware and pre-adapting kinds then reject them. */
static void hint_test(const char *policy)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH);
    o.slot_policy = policy;
    o.bits_per_key = 5;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 20000);
    for (unsigned i = 0; i < 2000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "hinted-%u", i);
        cr_assert_eq(akv_hint_negative(db, k, kl, 50.0), AKV_OK);
    }
    cr_assert_eq(akv_hint_negative(db, "x", 1, -1), AKV_EINVAL);
    cr_assert_eq(akv_compact(db), AKV_OK);
    unsigned hinted = 0, plain = 0;
    for (unsigned i = 0; i < 2000; i++) {
        char k[32];
        akv_get_info gi;
        size_t kl = (size_t)snprintf(k, sizeof k, "hinted-%u", i);
        cr_assert_eq(akv_get_ex(db, k, kl, NULL, NULL, &gi), AKV_NOTFOUND);
        hinted += gi.wasted_probes;
        kl = (size_t)snprintf(k, sizeof k, "plain-%u", i);
        cr_assert_eq(akv_get_ex(db, k, kl, NULL, NULL, &gi), AKV_NOTFOUND);
        plain += gi.wasted_probes;
    }
    cr_log_info("%s: wasted probes for 2000 hinted negatives %u, for 2000 other negatives %u", policy, hinted,
                plain);
    cr_assert_lt(hinted, plain / 2 + 5, "%s: hinted %u vs plain %u", policy, hinted, plain);
    akvt_expect_numbered(db, 20000);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(adapt, hinted_negatives_pre_adapt_aqf)
{
    if (akv_filter_kind_by_name("aqf"))
        hint_test("l0=aqf");
}
Test(adapt, hinted_negatives_shape_habf)
{
    if (akv_filter_kind_by_name("habf"))
        hint_test("l0=habf");
}

/* Descriptors this process holds open on files under dir/runs. */
static int open_run_files_count(const char *dir)
{
    char runs[700], real[4096];
    snprintf(runs, sizeof runs, "%s/runs/", dir);
    cr_assert_not_null(realpath(dir, real));
    char want[4200];
    snprintf(want, sizeof want, "%s/runs/", real);
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[4096];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len < 0)
            continue;
        target[len] = '\0';
        n += strncmp(target, want, strlen(want)) == 0;
    }
    return n;
}

static int count_run_files(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s/runs' 2>/dev/null | grep -c '\\.sst$'", dir);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    int n = 0;
    cr_assert_eq(fscanf(p, "%d", &n), 1);
    pclose(p);
    return n;
}

/* A run is its files in DIR/runs, the catalog its only record (no column
 * family): gets read them through readers kept open there. Names no run
 * holds (ids below the catalog's reserve: leftovers of an interrupted flush
 * or compaction) are deleted at open; a run file missing or not the one the
 * catalog records is refused, naming it, and akv_repair resolves it. */
static void runs_are_their_files(akv_layout layout)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rec");
    akv_options o;
    opts(&o, layout);
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akvt_put_numbered(db, 0, 3000);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    int named = count_run_files(dir);
    cr_assert_gt(named, 1, "the runs' SSTs are files in runs/");
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "test $(ls '%s/runs' | grep -c -- '-rmap\\.sst$') %s 0", dir,
             layout == AKV_LAYOUT_ORDERED ? "-gt" : "-eq");
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    /* No family holds a run: only the meta family and the memtable pool. */
    snprintf(cmd, sizeof cmd, "! grep -aq 'run\\.[0-9]' '%s'/rocksdb/OPTIONS-*", dir);
    cr_assert_eq(system(cmd), 0, "a run family in RocksDB's OPTIONS");
    cr_assert_eq(open_run_files_count(dir), named, "a reader per SST");
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(open_run_files_count(dir), 0);

    /* Leftover names (run 0 is never allocated) go. */
    snprintf(cmd, sizeof cmd,
             "cd '%s/runs' && g=$(ls | head -1) && cp \"$g\" 0-0.sst && cp \"$g\" 0-rmap.sst", dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    snprintf(cmd, sizeof cmd, "test ! -e '%s/runs/0-0.sst' && test ! -e '%s/runs/0-rmap.sst'", dir, dir);
    cr_assert_eq(system(cmd), 0, "leftover names kept");
    cr_assert_eq(count_run_files(dir), named);
    akvt_expect_numbered(db, 3000);
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    akvt_expect_numbered(db, 3000);
    int after = count_run_files(dir);
    cr_assert_gt(after, 0);
    cr_assert_eq(open_run_files_count(dir), after, "replaced runs' files and readers are gone");
    cr_assert_eq(akv_close(db), AKV_OK);

    /* A run file gone: refused, naming it; the directory is left as it was. */
    snprintf(cmd, sizeof cmd, "cd '%s/runs' && mv \"$(ls | grep -v rmap | head -1)\" '%s/away.sst'", dir,
             dir);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT);
    cr_assert_not_null(strstr(akv_errmsg(), "runs/"), "%s", akv_errmsg());
    cr_assert_not_null(strstr(akv_errmsg(), "akv_repair"), "%s", akv_errmsg());
    cr_assert_eq(count_run_files(dir), after - 1);
    akv_repair_report r;
    cr_assert_eq(akv_repair(dir, &o, &r), AKV_OK, "%s", akv_errmsg());
    cr_assert_gt(r.entries_lost, 0, "%s", r.text);
    akv_free(r.text);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(recovery, runs_are_their_files_hash)
{
    runs_are_their_files(AKV_LAYOUT_HASH);
}

Test(recovery, runs_are_their_files_ordered)
{
    runs_are_their_files(AKV_LAYOUT_ORDERED);
}
