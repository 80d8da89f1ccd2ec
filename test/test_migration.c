/*
 * test_migration.c — a database written by an older format opens with
 * today's code and answers exactly what was written (issue 28, "Deliver
 * 5"). Each fixture of test/fixtures/ (README.md there) is copied to a
 * temporary directory first (RocksDB's files in the repository are never
 * opened in place), opened, checked key by key and by a full iteration
 * against what test/support/fixture.c says its writer wrote, written to,
 * closed, reopened, checked again, compacted and checked once more.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "support/damage.h"
#include "support/fixture.h"
#include "support/kvmodel.h"

/* Written by the format of commit 3147892 (test/fixtures/README.md). */
#define FIXTURE_3147892 "test/fixtures/format-3147892"
/* Written by the format of commit f5e8b9e: memtables in the pool of
 * families, runs one family each; kept for the change that takes the runs
 * out of their families. */
#define FIXTURE_F5E8B9E "test/fixtures/format-f5e8b9e"
/* Written by the format of commit bad2ff5: runs one family each, read
 * through names in runs/ (left out of the fixture: derived at open),
 * catalog version 3; the last format before runs became files only. */
#define FIXTURE_BAD2FF5 "test/fixtures/format-bad2ff5"

static char copy_to[1024];
static size_t copy_from_len;

static int copy_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    char dst[2048];
    int n = snprintf(dst, sizeof dst, "%s%s", copy_to, path + copy_from_len);
    if (n < 0 || (size_t)n >= sizeof dst)
        return -1;
    if (flag == FTW_D)
        return mkdir(dst, 0755) == 0 || errno == EEXIST ? 0 : -1;
    if (flag != FTW_F || !S_ISREG(st->st_mode))
        return -1; /* a fixture holds files and directories only */
    int in = open(path, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0644);
    int rc = in >= 0 && out >= 0 ? 0 : -1;
    char buf[65536];
    ssize_t r;
    while (rc == 0 && (r = read(in, buf, sizeof buf)) != 0) {
        if (r < 0 || write(out, buf, (size_t)r) != r)
            rc = -1;
    }
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        rc = -1;
    return rc;
}

/* The fixture's database of this layout, copied to copy_to: db/ in a
 * fresh temp dir (into tmp); *o: the options that open it. */
static void copy_fixture(const char *fixture, const char *layout, char *tmp, size_t cap, akv_options *o)
{
    akvf_options(o, AKV_LAYOUT_AUTO);
    o->create_if_missing = 0;
    o->seed = 0; /* the database's own */
    char src[512];
    snprintf(src, sizeof src, "%s/%s", fixture, layout);
    struct stat st;
    cr_assert_eq(stat(src, &st), 0, "fixture %s is missing (run the tests from the repository's root)", src);
    akvt_tmpdir(tmp, cap, "migration");
    int n = snprintf(copy_to, sizeof copy_to, "%s/db", tmp);
    cr_assert(n > 0 && (size_t)n < sizeof copy_to);
    copy_from_len = strlen(src);
    cr_assert_eq(nftw(src, copy_one, 16, FTW_PHYS), 0, "copying %s to %s failed", src, copy_to);
}

/* Every key, present or absent, against the model after `phases`. */
static void check_gets(akv_db *db, unsigned phases, const char *when)
{
    char k[32], want[32];
    for (unsigned i = 0; i < AKVF_KEYS; i++) {
        size_t kl = akvf_key(k, i);
        unsigned holds = akvf_state(phases, i);
        void *v = NULL;
        size_t vl = 0;
        int rc = akv_get(db, k, kl, &v, &vl);
        if (!holds) {
            cr_assert_eq(rc, AKV_NOTFOUND, "%s: key %u should be absent: %s", when, i, akv_strerror(rc));
            continue;
        }
        cr_assert_eq(rc, AKV_OK, "%s: key %u (phase %u): %s (%s)", when, i, holds, akv_strerror(rc),
                     akv_errmsg());
        size_t wl = akvf_value(want, holds, i);
        cr_assert(vl == wl && memcmp(v, want, wl) == 0, "%s: key %u has a value other than phase %u's", when,
                  i, holds);
        akv_free(v);
    }
}

/* A full iteration: every live key exactly once, with its value. */
static void check_iteration(akv_db *db, unsigned phases, const char *when)
{
    unsigned char seen[AKVF_KEYS] = {0};
    unsigned live = 0, found = 0;
    for (unsigned i = 0; i < AKVF_KEYS; i++)
        live += akvf_state(phases, i) != 0;
    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(db, &it), AKV_OK);
    char want[32];
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it)) {
        size_t kl, vl;
        const void *k = akv_iter_key(it, &kl), *v = akv_iter_value(it, &vl);
        long i = akvf_key_index(k, kl);
        cr_assert_geq(i, 0, "%s: iteration returned a key the fixture never wrote", when);
        cr_assert_eq(seen[i], 0, "%s: key %ld returned twice", when, i);
        seen[i] = 1;
        unsigned holds = akvf_state(phases, (unsigned)i);
        cr_assert_neq(holds, 0, "%s: iteration returned key %ld, which is absent", when, i);
        size_t wl = akvf_value(want, holds, (unsigned)i);
        cr_assert(vl == wl && memcmp(v, want, wl) == 0, "%s: key %ld iterated with a wrong value", when, i);
        found++;
    }
    cr_assert_eq(akv_iter_status(it), AKV_OK, "%s: iteration: %s", when, akv_errmsg());
    akv_iter_destroy(it);
    cr_assert_eq(found, live, "%s: iteration returned %u keys, %u are live", when, found, live);
}

static void write_phase(akv_db *db, unsigned p)
{
    unsigned i = 0;
    int rc = akvf_write_phase(db, p, &i);
    cr_assert_eq(rc, AKV_OK, "phase %u, key %u: %s", p, i, akv_errmsg());
}

static akv_db *open_ok(const char *dir, const akv_options *o)
{
    akv_db *db = NULL;
    int rc = akv_open(dir, o, &db);
    cr_assert_eq(rc, AKV_OK, "open %s: %s (%s)", dir, akv_strerror(rc), akv_errmsg());
    return db;
}

static void migrates(const char *fixture, akv_layout layout)
{
    const char *name = layout == AKV_LAYOUT_HASH ? "hash" : "ordered";
    char tmp[512];
    akv_options o;
    copy_fixture(fixture, name, tmp, sizeof tmp, &o);
    const char *dir = copy_to;
    akv_db *db = open_ok(dir, &o);
    cr_assert_eq(akv_db_layout(db), layout);

    /* The shape the writer left: runs at two levels, a memtable from the WAL. */
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_geq(st.levels, 2, "%s: runs at %u levels", name, st.levels);
    cr_assert_geq(st.runs_per_level[0], 2, "%s: %u L0 runs", name, st.runs_per_level[0]);
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    uint64_t mem_keys = 0;
    for (size_t j = 0; j < n; j++)
        if (rows[j].level == -1)
            mem_keys += rows[j].keys;
    akv_free(rows);
    cr_assert_gt(mem_keys, 0, "%s: open replayed no write from the WAL", name);

    check_gets(db, AKVF_PHASES, "as written");
    check_iteration(db, AKVF_PHASES, "as written");

    write_phase(db, 6);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    write_phase(db, 7);
    check_gets(db, AKVF_TEST_PHASES, "written to");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());

    /* Runs kept in families (formats f5e8b9e and bad2ff5) are runs of
     * files after the first open: no run or reverse-map family is left. */
    cr_assert_eq(akvt_families(dir, "run.", true) + akvt_families(dir, "rmap.", true), 0,
                 "%s: a run family is still there after the first open", name);
    db = open_ok(dir, &o);
    check_gets(db, AKVF_TEST_PHASES, "reopened");
    check_iteration(db, AKVF_TEST_PHASES, "reopened");
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    uint64_t drops = st.family_drops;
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.family_drops, drops, "%s: replacing converted runs dropped %llu families", name,
                 (unsigned long long)(st.family_drops - drops));
    check_gets(db, AKVF_TEST_PHASES, "compacted");
    check_iteration(db, AKVF_TEST_PHASES, "compacted");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(tmp);
}

/* akv_repair on a database of an older format, before any open: nothing
 * is lost, the runs kept in families are runs of files afterwards, and
 * the database reads as written. */
static void repairs(const char *fixture, akv_layout layout)
{
    const char *name = layout == AKV_LAYOUT_HASH ? "hash" : "ordered";
    char tmp[512];
    akv_options o;
    copy_fixture(fixture, name, tmp, sizeof tmp, &o);
    const char *dir = copy_to;
    akv_repair_report r;
    int rc = akv_repair(dir, &o, &r);
    cr_assert_eq(rc, AKV_OK, "%s: repair: %s (%s)", name, akv_errmsg(), r.text ? r.text : "");
    cr_assert_eq(r.entries_lost, 0, "%s: %s", name, r.text);
    cr_assert_eq(r.runs_rewritten + r.runs_dropped, 0, "%s: %s", name, r.text);
    cr_assert_geq(r.runs_kept, 3, "%s: %s", name, r.text);
    akv_free(r.text);
    cr_assert_eq(akvt_families(dir, "run.", true) + akvt_families(dir, "rmap.", true), 0,
                 "%s: a run family is still there after repair", name);
    akv_db *db = open_ok(dir, &o);
    check_gets(db, AKVF_PHASES, "repaired");
    check_iteration(db, AKVF_PHASES, "repaired");
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    check_gets(db, AKVF_PHASES, "repaired and compacted");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(tmp);
}

Test(migration, format_3147892_hash)
{
    migrates(FIXTURE_3147892, AKV_LAYOUT_HASH);
}

Test(migration, format_3147892_ordered)
{
    migrates(FIXTURE_3147892, AKV_LAYOUT_ORDERED);
}

Test(migration, format_f5e8b9e_hash)
{
    migrates(FIXTURE_F5E8B9E, AKV_LAYOUT_HASH);
}

Test(migration, format_f5e8b9e_ordered)
{
    migrates(FIXTURE_F5E8B9E, AKV_LAYOUT_ORDERED);
}

Test(migration, format_bad2ff5_hash)
{
    migrates(FIXTURE_BAD2FF5, AKV_LAYOUT_HASH);
}

Test(migration, format_bad2ff5_ordered)
{
    migrates(FIXTURE_BAD2FF5, AKV_LAYOUT_ORDERED);
}

Test(migration, repair_3147892_hash)
{
    repairs(FIXTURE_3147892, AKV_LAYOUT_HASH);
}

Test(migration, repair_3147892_ordered)
{
    repairs(FIXTURE_3147892, AKV_LAYOUT_ORDERED);
}

Test(migration, repair_f5e8b9e_hash)
{
    repairs(FIXTURE_F5E8B9E, AKV_LAYOUT_HASH);
}

Test(migration, repair_f5e8b9e_ordered)
{
    repairs(FIXTURE_F5E8B9E, AKV_LAYOUT_ORDERED);
}

Test(migration, repair_bad2ff5_hash)
{
    repairs(FIXTURE_BAD2FF5, AKV_LAYOUT_HASH);
}

Test(migration, repair_bad2ff5_ordered)
{
    repairs(FIXTURE_BAD2FF5, AKV_LAYOUT_ORDERED);
}

/* An older format's run family that RocksDB forgot (its files still in
 * rocksdb/): open refuses, repair names the files as the run's SSTs again
 * and loses nothing. */
static void repair_restores(akv_layout layout)
{
    const char *name = layout == AKV_LAYOUT_HASH ? "hash" : "ordered";
    char tmp[512];
    akv_options o;
    copy_fixture(FIXTURE_BAD2FF5, name, tmp, sizeof tmp, &o);
    const char *dir = copy_to;
    size_t k = akvt_forget_family(dir, "run.3");
    akv_db *db = NULL;
    cr_assert_neq(akv_open(dir, &o, &db), AKV_OK, "%s: open served a run whose family is gone", name);
    akv_repair_report r;
    int rc = akv_repair(dir, &o, &r);
    cr_assert_eq(rc, AKV_OK, "%s: repair: %s (%s)", name, akv_errmsg(), r.text ? r.text : "");
    cr_assert_eq(r.ssts_restored, k, "%s: %s", name, r.text);
    cr_assert_eq(r.entries_lost, 0, "%s: %s", name, r.text);
    cr_assert_eq(r.runs_rewritten, 0, "%s: %s", name, r.text);
    akv_free(r.text);
    db = open_ok(dir, &o);
    check_gets(db, AKVF_PHASES, "restored");
    check_iteration(db, AKVF_PHASES, "restored");
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(tmp);
}

Test(migration, repair_restores_a_forgotten_run_family_hash)
{
    repair_restores(AKV_LAYOUT_HASH);
}

Test(migration, repair_restores_a_forgotten_run_family_ordered)
{
    repair_restores(AKV_LAYOUT_ORDERED);
}

/* An older format's run family with a damaged data block: repair rewrites
 * the run from what reads back, moves the damaged file to lost/, and
 * every key then reads a value it was once given, or is absent, with no
 * more keys off the fixture's final state than the entries reported
 * lost. */
static void repair_salvages(akv_layout layout)
{
    const char *name = layout == AKV_LAYOUT_HASH ? "hash" : "ordered";
    char tmp[512], files[16][1024];
    akv_options o;
    copy_fixture(FIXTURE_BAD2FF5, name, tmp, sizeof tmp, &o);
    const char *dir = copy_to;
    size_t k = akvt_cf_ssts(dir, "run.3", files, 16);
    cr_assert_gt(k, 0);
    akvt_smash(files[0], akvt_file_size(files[0]) / 3, 64);
    akv_repair_report r;
    int rc = akv_repair(dir, &o, &r);
    cr_assert_eq(rc, AKV_OK, "%s: repair: %s (%s)", name, akv_errmsg(), r.text ? r.text : "");
    cr_assert_eq(r.runs_rewritten, 1, "%s: %s", name, r.text);
    cr_assert_eq(r.ssts_damaged, 1, "%s: %s", name, r.text);
    cr_assert_geq(r.files_set_aside, 1, "%s: %s", name, r.text);
    cr_assert_gt(r.entries_lost, 0, "%s: %s", name, r.text);
    uint64_t lost = r.entries_lost;
    akv_free(r.text);
    akv_db *db = open_ok(dir, &o);
    char key[32], want[32];
    uint64_t off = 0;
    for (unsigned i = 0; i < AKVF_KEYS; i++) {
        size_t kl = akvf_key(key, i);
        void *v = NULL;
        size_t vl = 0;
        rc = akv_get(db, key, kl, &v, &vl);
        cr_assert(rc == AKV_OK || rc == AKV_NOTFOUND, "%s: key %u: %s", name, i, akv_errmsg());
        unsigned holds = akvf_state(AKVF_PHASES, i);
        bool once = false, now = rc == AKV_OK ? false : holds == 0;
        for (unsigned p = 1; rc == AKV_OK && p <= AKVF_PHASES; p++) {
            size_t wl = akvf_value(want, p, i);
            once |= vl == wl && memcmp(v, want, wl) == 0;
            now |= p == holds && vl == wl && memcmp(v, want, wl) == 0;
        }
        cr_assert(rc == AKV_NOTFOUND || once, "%s: key %u reads a value never written", name, i);
        off += !now;
        akv_free(v);
    }
    cr_assert_leq(off, lost, "%s: %llu keys read otherwise than written, %llu entries reported lost", name,
                  (unsigned long long)off, (unsigned long long)lost);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(tmp);
}

Test(migration, repair_salvages_a_damaged_run_family_hash)
{
    repair_salvages(AKV_LAYOUT_HASH);
}

Test(migration, repair_salvages_a_damaged_run_family_ordered)
{
    repair_salvages(AKV_LAYOUT_ORDERED);
}
