/*
 * test_reliability.c — damage to a database directory ends in a clear
 * refusal, a rebuild from data with a warning, or correct answers; never in
 * a successful open followed by lost keys, stale values, resurrected
 * deletes or false negatives (docs/reliability.md).
 *
 * Every database here holds two runs over the same 3000 keys: run 1 has
 * "v1-<i>" for every akvt_key_name, run 2 (newer) has "v2-<i>", except every tenth
 * akvt_key_name, which it deletes. Any answer from run 1 is therefore visible as a
 * stale value or a resurrected delete.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "engine/internal.h" /* the create-step hook, the catalog */
#include "support/childproc.h"
#include "support/damage.h"
#include "support/kvmodel.h"
#include "support/tworuns.h"
#include "util/codec.h"

/* A refused open: a clear code, a message that names the way out, and the
 * directory exactly as it was. */
static void expect_refusal(const char *dir, const akv_options *o, const char *what)
{
    char *before = akvt_dir_digest(dir);
    akv_db *db = NULL;
    int rc = akv_open(dir, o, &db);
    if (rc == AKV_OK) {
        akvt_tally t = akvt_check_v2(db);
        akv_close(db);
        cr_assert_fail("%s: open succeeded (%u right, %u wrong, %u errors)", what, t.right, t.wrong, t.eio);
    }
    cr_assert_null(db);
    cr_assert(rc == AKV_ECORRUPT || rc == AKV_EIO, "%s: open gave %s (%s)", what, akv_strerror(rc),
              akv_errmsg());
    cr_assert_not_null(strstr(akv_errmsg(), "akv_repair"), "%s: the message does not name akv_repair: %s",
                       what, akv_errmsg());
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "%s: the refused open changed the directory", what);
    free(before);
    free(after);
}

/* Either refused (as above) or open with every answer right. */
static bool refused_or_right(const char *dir, const akv_options *o, const char *what)
{
    char *before = akvt_dir_digest(dir);
    akv_db *db = NULL;
    int rc = akv_open(dir, o, &db);
    if (rc == AKV_OK) {
        free(before);
        akvt_expect_all_right(db, what);
        cr_assert_eq(akv_close(db), AKV_OK);
        return false;
    }
    cr_assert(rc == AKV_ECORRUPT || rc == AKV_EIO, "%s: open gave %s (%s)", what, akv_strerror(rc),
              akv_errmsg());
    cr_assert_not_null(strstr(akv_errmsg(), "akv_repair"), "%s: the message does not name akv_repair: %s",
                       what, akv_errmsg());
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "%s: the refused open changed the directory", what);
    free(before);
    free(after);
    return true;
}

static void filter_path(const char *dir, uint64_t run, uint64_t sst, char *out, size_t cap)
{
    snprintf(out, cap, "%s/filters/%llu-%llu.akf", dir, (unsigned long long)run, (unsigned long long)sst);
}

static const char *slot_kind(akv_db *db, uint64_t run, uint64_t sst, char *out)
{
    akv_slot_info *rows;
    size_t n;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    out[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].level >= 0 && rows[i].run == run && rows[i].sst == sst)
            snprintf(out, 16, "%s", rows[i].kind);
    akv_free(rows);
    return out;
}

/* 1. A filter file of another kind than the catalog records is a corrupt
 * filter: rebuilt from data, with a warning. On main it was loaded as it
 * was, silently. */
Test(reliability, filter_of_another_kind_is_rebuilt)
{
    if (!akv_filter_kind_by_name("aqf") || !akv_filter_kind_by_name("blocked"))
        cr_skip_test("needs aqf and blocked");
    char dir[512], other[512], path[1100], opath[1100], kind[16];
    akvt_tmpdir(dir, sizeof dir, "rel-kind");
    akvt_tmpdir(other, sizeof other, "rel-kind-other");
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o, oo;
    akvt_opts(&o, &lb, AKV_LAYOUT_HASH, "l0=aqf,l1+=aqf");
    akvt_opts(&oo, &lb, AKV_LAYOUT_HASH, "l0=blocked,l1+=blocked");
    uint64_t run = akvt_two_runs(dir, &o);
    cr_assert_eq(akvt_two_runs(other, &oo), run, "both databases number their runs alike");
    /* The same SST's keys (same seed, same writes), another kind. */
    filter_path(dir, run, 3, path, sizeof path);
    filter_path(other, run, 3, opath, sizeof opath);
    akvt_copy_file(opath, path);
    akvt_log_reset(&lb);
    akv_db *db = akvt_open_ok(dir, &o);
    cr_assert_str_eq(slot_kind(db, run, 3, kind), "aqf", "slot %llu-3 runs a %s filter; the catalog says aqf",
                     (unsigned long long)run, kind);
    char name[64];
    snprintf(name, sizeof name, "%llu-3.akf", (unsigned long long)run);
    cr_assert_not_null(strstr(lb.text, name), "no warning names %s; log:\n%s", name, lb.text);
    akvt_expect_all_right(db, "after a filter of another kind");
    cr_assert_eq(akv_close(db), AKV_OK);
    /* The rebuilt file is the catalog's kind: the next open is silent. */
    akvt_log_reset(&lb);
    db = akvt_open_ok(dir, &o);
    cr_assert_null(strstr(lb.text, name), "the rebuilt filter was not written back; log:\n%s", lb.text);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
    akvt_rmrf(other);
}

/* 2. A valid filter file of one SST copied over another SST's file: on
 * main it was accepted and most keys of that SST read as not found. */
static void swapped_filter_test(akv_layout layout)
{
    char dir[512], from[1100], to[1100];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    uint64_t run = akvt_two_runs_in_tmp(dir, sizeof dir, "rel-swap", &o, &lb, layout);
    filter_path(dir, run, 0, from, sizeof from);
    filter_path(dir, run, 2, to, sizeof to);
    akvt_copy_file(from, to);
    /* and one of the older run over a file of the newer */
    filter_path(dir, run - 1, 4, from, sizeof from);
    filter_path(dir, run, 4, to, sizeof to);
    akvt_copy_file(from, to);
    akvt_log_reset(&lb);
    akv_db *db = akvt_open_ok(dir, &o);
    akvt_expect_all_right(db, "after swapped filter files");
    char name[64];
    snprintf(name, sizeof name, "%llu-2.akf", (unsigned long long)run);
    cr_assert_not_null(strstr(lb.text, name), "no warning names %s; log:\n%s", name, lb.text);
    snprintf(name, sizeof name, "%llu-4.akf", (unsigned long long)run);
    cr_assert_not_null(strstr(lb.text, name), "no warning names %s; log:\n%s", name, lb.text);
    cr_assert_eq(akv_close(db), AKV_OK);
    db = akvt_open_ok(dir, &o);
    akvt_expect_all_right(db, "reopened after the rebuild");
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(reliability, filter_of_another_sst_is_rebuilt_hash)
{
    swapped_filter_test(AKV_LAYOUT_HASH);
}

Test(reliability, filter_of_another_sst_is_rebuilt_ordered)
{
    swapped_filter_test(AKV_LAYOUT_ORDERED);
}

/* 3. A corrupt data block in one SST of the newer run: lookups there fail
 * with AKV_EIO, and a compaction must fail too, with its inputs intact. On
 * main RocksDB's iterator ended at the damaged file with an OK status, the
 * compaction succeeded without the rest of the run, and older values and
 * deleted keys came back. */
static void corrupt_sst_test(akv_layout layout)
{
    char dir[512], ssts[64][1024], cf[32];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    uint64_t run = akvt_two_runs_in_tmp(dir, sizeof dir, "rel-sst", &o, &lb, layout);
    snprintf(cf, sizeof cf, "run.%llu", (unsigned long long)run);
    size_t n = akvt_cf_ssts(dir, cf, ssts, 64);
    cr_assert_geq(n, 4, "run %llu has %zu SSTs", (unsigned long long)run, n);
    akvt_smash(ssts[2], 20, 40); /* the first data block of the third SST */
    akv_db *db = akvt_open_ok(dir, &o);
    akvt_tally t = akvt_check_v2(db);
    cr_assert_eq(t.wrong, 0, "before compaction: %u wrong answers", t.wrong);
    cr_assert_gt(t.eio, 0, "the damaged block reads fine?");
    akvt_log_reset(&lb);
    int rc = akv_compact(db);
    cr_assert_eq(rc, AKV_ECORRUPT, "compaction over a damaged SST gave %s (%s)", akv_strerror(rc),
                 akv_errmsg());
    char want[64];
    snprintf(want, sizeof want, "run %llu", (unsigned long long)run);
    cr_assert_not_null(strstr(lb.text, want), "the failure does not name %s; log:\n%s", want, lb.text);
    cr_assert_not_null(strstr(lb.text, "SST"), "the failure does not name the SST; log:\n%s", lb.text);
    if (layout == AKV_LAYOUT_ORDERED) {
        /* A scan that reaches the damaged SST ends with an error, not early. */
        akv_iter *it;
        cr_assert_eq(akv_iter_create(db, &it), AKV_OK);
        size_t seen = 0;
        for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it))
            seen++;
        cr_assert_neq(akv_iter_status(it), AKV_OK, "a scan over a damaged SST ended with OK after %zu keys",
                      seen);
        /* docs/reliability.md: damaged data is AKV_ECORRUPT (it was
         * AKV_EIO when RocksDB itself reported the corruption). */
        cr_assert_eq(akv_iter_status(it), AKV_ECORRUPT, "a scan over a damaged SST ended with %s (%s)",
                     akv_strerror(akv_iter_status(it)), akv_errmsg());
        akv_iter_destroy(it);
    }
    t = akvt_check_v2(db);
    cr_assert_eq(t.wrong, 0, "after the failed compaction: %u wrong answers (first akvt_key_name %d)",
                 t.wrong, t.first_wrong);
    akv_close(db);
    db = akvt_open_ok(dir, &o);
    t = akvt_check_v2(db);
    cr_assert_eq(t.wrong, 0, "reopened: %u wrong answers (first akvt_key_name %d)", t.wrong, t.first_wrong);
    cr_assert_gt(t.eio, 0);
    akv_close(db);
    akvt_rmrf(dir);
}

Test(reliability, compaction_fails_on_a_corrupt_sst_hash)
{
    corrupt_sst_test(AKV_LAYOUT_HASH);
}

Test(reliability, compaction_fails_on_a_corrupt_sst_ordered)
{
    corrupt_sst_test(AKV_LAYOUT_ORDERED);
}

/* 4. The WAL cut at 3/4 after two flushes. On main the catalog lived only
 * in WAL records: it rolled back, and open deleted the newer run as a
 * leftover without a word. */
Test(reliability, truncated_wal_keeps_the_catalog)
{
    char dir[512], rdir[600], wal[1100];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_two_runs_in_tmp(dir, sizeof dir, "rel-wal", &o, &lb, AKV_LAYOUT_HASH);
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    if (akvt_find_file(rdir, "", ".log", wal, sizeof wal))
        akvt_truncate(wal, akvt_file_size(wal) * 3 / 4);
    refused_or_right(dir, &o, "after cutting the WAL");
    akvt_rmrf(dir);
}

/* The WAL must not grow without bound: on main nothing ever flushed the
 * meta family, so the first log file held every write ever made. */
Test(reliability, wal_stays_bounded)
{
    char dir[512], rdir[600];
    akvt_tmpdir(dir, sizeof dir, "rel-walsize");
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_opts(&o, &lb, AKV_LAYOUT_HASH, NULL);
    o.memtable_bytes = 64 << 10;
    o.sst_target_bytes = 1 << 20; /* one SST per run: few fsyncs */
    o.l0_compaction_trigger = 4;
    akv_db *db = akvt_open_ok(dir, &o);
    char k[32], v[200];
    memset(v, 'x', sizeof v);
    uint64_t written = 0;
    for (unsigned i = 0; i < 20000; i++) {
        size_t kl = akvt_key_name(k, i);
        cr_assert_eq(akv_put(db, k, kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
        written += kl + sizeof v;
    }
    cr_assert_eq(akv_flush(db), AKV_OK);
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    uint64_t wal = akvt_bytes_with_suffix(rdir, ".log");
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_log_info("%llu bytes written, %llu bytes of WAL", (unsigned long long)written,
                (unsigned long long)wal);
    /* What RocksDB keeps: up to a memtable's worth written since the meta
     * family was last flushed, plus the live memtables (up to about three
     * with the WAL's own framing), plus the flushed memtables a writer
     * released since the flush thread's last turn (their families are
     * dropped there, docs/design.md "Commit"; a WAL goes only when every
     * family with data in it is flushed or dropped). Far below the ~4.4 MB
     * written, which a WAL that never shrinks would hold. */
    cr_assert_lt(wal, 10 * o.memtable_bytes, "%llu bytes of WAL after writing %llu bytes in 64 KiB memtables",
                 (unsigned long long)wal, (unsigned long long)written);
    akvt_rmrf(dir);
}

/* 5. The MANIFEST cut at its end: RocksDB forgets recent edits (the
 * ingestion of the newer run's SSTs among them) while the catalog still
 * lists them. On main open succeeded and every akvt_key_name read stale or
 * resurrected. Every cut must end in a refusal or right answers. */
Test(reliability, truncated_manifest_is_refused_or_harmless)
{
    char dir[512], work[600], rdir[700], man[1100];
    akvt_tmpdir(dir, sizeof dir, "rel-manifest");
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_opts(&o, &lb, AKV_LAYOUT_HASH, NULL);
    char db_dir[600];
    snprintf(db_dir, sizeof db_dir, "%s/db", dir);
    akvt_two_runs(db_dir, &o);
    snprintf(work, sizeof work, "%s/work", dir);
    unsigned refused = 0, cuts = 0;
    for (uint64_t cut = 50; cut <= 2000; cut += 100) {
        akvt_copy_tree(db_dir, work);
        snprintf(rdir, sizeof rdir, "%s/rocksdb", work);
        cr_assert(akvt_find_file(rdir, "MANIFEST-", "", man, sizeof man));
        uint64_t size = akvt_file_size(man);
        if (cut >= size)
            break;
        akvt_truncate(man, size - cut);
        char what[64];
        snprintf(what, sizeof what, "MANIFEST cut by %llu bytes", (unsigned long long)cut);
        refused += refused_or_right(work, &o, what);
        cuts++;
        akvt_rmrf(work);
    }
    cr_log_info("%u of %u MANIFEST cuts refused", refused, cuts);
    cr_assert_gt(refused, 0, "no cut was refused: the catalog is not checked against RocksDB");
    akvt_rmrf(dir);
}

/* 6. rocksdb/CURRENT deleted. On main the first open failed but left a new
 * CURRENT and MANIFEST; the second created an empty database and deleted
 * the old SSTs and filters. */
Test(reliability, missing_current_is_refused_not_wiped)
{
    char dir[512], path[600];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_two_runs_in_tmp(dir, sizeof dir, "rel-current", &o, &lb, AKV_LAYOUT_HASH);
    snprintf(path, sizeof path, "%s/rocksdb/CURRENT", dir);
    cr_assert_eq(unlink(path), 0);
    expect_refusal(dir, &o, "first open without CURRENT");
    cr_assert_not_null(strstr(akv_errmsg(), "CURRENT"), "the message does not name CURRENT: %s",
                       akv_errmsg());
    expect_refusal(dir, &o, "second open without CURRENT");
    akvt_rmrf(dir);
}

/* docs/design.md: a refused open leaves the directory untouched. On main
 * RocksDB had already replayed its log and written a new MANIFEST. */
Test(reliability, refused_open_changes_nothing)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "rel-refused");
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_opts(&o, &lb, AKV_LAYOUT_HASH, NULL);
    akv_db *db = akvt_open_ok(dir, &o);
    akvt_write_v1(db);
    char k[32];
    cr_assert_eq(akv_put(db, k, akvt_key_name(k, 1), "unflushed", 9), AKV_OK); /* something in the WAL */
    cr_assert_eq(akv_close(db), AKV_OK);
    char *before = akvt_dir_digest(dir);
    o.layout = AKV_LAYOUT_ORDERED;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_EINVAL);
    o.layout = AKV_LAYOUT_HASH;
    o.seed = 12345;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_EINVAL);
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "a refused open changed the directory");
    free(before);
    free(after);
    akvt_rmrf(dir);
}

/* A failed open of a new directory leaves nothing behind: the directory
 * itself if open made it, or only what was there before. */
static const char *fail_step;
static int fail_at(const char *step)
{
    return strcmp(step, fail_step) == 0 ? AKV_EIO : AKV_OK;
}

Test(reliability, failed_create_leaves_nothing)
{
    char dir[512], sub[600];
    akvt_tmpdir(dir, sizeof dir, "rel-create");
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_opts(&o, &lb, AKV_LAYOUT_HASH, NULL);
    snprintf(sub, sizeof sub, "%s/db", dir);
    const char *steps[] = {"rocksdb", "catalog", "identity"};
    for (size_t i = 0; i < 3; i++) {
        fail_step = steps[i];
        atomic_store(&akvi_hook_create_step, fail_at);
        akv_db *db = NULL;
        cr_assert_neq(akv_open(sub, &o, &db), AKV_OK, "create did not fail at %s", steps[i]);
        struct stat st;
        cr_assert_neq(stat(sub, &st), 0, "a create that failed at %s left %s behind", steps[i], sub);
        /* an existing empty directory stays empty */
        cr_assert_neq(akv_open(dir, &o, &db), AKV_OK);
        char *left = akvt_dir_digest(dir);
        cr_assert_str_eq(left, "", "a create that failed at %s left files: %s", steps[i], left);
        free(left);
        cr_assert(stat(dir, &st) == 0 && S_ISDIR(st.st_mode));
    }
    atomic_store(&akvi_hook_create_step, NULL);
    akv_db *db = akvt_open_ok(sub, &o);
    cr_assert_eq(akv_close(db), AKV_OK);
    db = akvt_open_ok(sub, &o);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

/* IDENTITY lost while RocksDB is whole: written again from the meta
 * family's copy, with a warning; a damaged IDENTITY is refused. */
Test(reliability, lost_identity_is_written_again)
{
    char dir[512], path[600];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_two_runs_in_tmp(dir, sizeof dir, "rel-identity", &o, &lb, AKV_LAYOUT_HASH);
    snprintf(path, sizeof path, "%s/IDENTITY", dir);
    cr_assert_eq(unlink(path), 0);
    akvt_log_reset(&lb);
    akv_db *db = akvt_open_ok(dir, &o);
    cr_assert_not_null(strstr(lb.text, "IDENTITY"), "no warning; log:\n%s", lb.text);
    akvt_expect_all_right(db, "after the identity was written again");
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert(akvt_file_size(path) == 28);
    akvt_smash(path, 12, 4);
    expect_refusal(dir, &o, "damaged IDENTITY");
    akv_repair_report r;
    cr_assert_eq(akv_repair(dir, &o, &r), AKV_OK, "%s", akv_errmsg());
    cr_assert_not_null(strstr(r.text, "identity"), "%s", r.text);
    akv_free(r.text);
    db = akvt_open_ok(dir, &o);
    akvt_expect_all_right(db, "after repairing the identity");
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

/* ---- the catalog's formats and files ----------------------------------- */

/* A version-1 record (format 1, kept in the meta family) still decodes:
 * no sequence number, no key digests. */
Test(reliability, catalog_version_1_still_decodes)
{
    uint8_t buf[512];
    akvi_wbuf w = {buf, 0};
    akvi_w_bytes(&w, "AKVC", 4);
    akvi_w_u32(&w, 1);                  /* version */
    akvi_w_u32(&w, AKV_LAYOUT_ORDERED); /* layout */
    akvi_w_u64(&w, 77);                 /* seed */
    akvi_w_u64(&w, 9);                  /* next_run_id */
    akvi_w_u64(&w, 4);                  /* flushed_mem_gen */
    akvi_w_u32(&w, 1);                  /* runs */
    akvi_w_u64(&w, 8);                  /* id */
    akvi_w_u32(&w, 0);                  /* level */
    akvi_w_u32(&w, 0);                  /* prefix_bits */
    akvi_w_u64(&w, 2);                  /* keys */
    akvi_w_u64(&w, 100);                /* bytes */
    akvi_w_u64(&w, 20);                 /* raw_bytes */
    akvi_w_u32(&w, 1);                  /* ssts */
    akvi_w_u64(&w, 0);                  /* sst id */
    akvi_w_u64(&w, 2);                  /* keys */
    akvi_w_u64(&w, 100);                /* bytes */
    akvi_w_u64(&w, 0);                  /* prefix */
    akvi_w_u8(&w, 3);
    akvi_w_bytes(&w, "aqf", 3);
    akvi_w_u32(&w, 1);
    akvi_w_bytes(&w, "a", 1);
    akvi_w_u32(&w, 1);
    akvi_w_bytes(&w, "b", 1);
    akvi_w_u64(&w, XXH64(buf, w.len, 0));
    akvi_catalog c;
    cr_assert_eq(akvi_catalog_decode(buf, w.len, &c), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(c.seq, 0);
    cr_assert_eq(c.seed, 77);
    cr_assert_eq(c.next_run_id, 9);
    cr_assert_eq(c.flushed_mem_gen, 4);
    cr_assert_eq(c.n_run, 1);
    cr_assert_eq(c.runs[0].ssts[0].digest, 0, "version 1 records no digest");
    cr_assert_str_eq(c.runs[0].ssts[0].kind, "aqf");
    akvi_catalog_free(&c);
}

static void write_slot(const char *dir, int slot, uint64_t seq)
{
    akvi_catalog c = {.layout = 0, .seed = 5, .seq = seq, .next_run_id = seq + 10};
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/CATALOG.%d", dir, slot);
    cr_assert_eq(akvi_file_rewrite(path, buf, len), AKV_OK);
    free(buf);
}

/* Two slots: the valid one with the higher sequence wins; a damaged slot
 * is passed over with a note; a record in the wrong slot is not trusted. */
Test(reliability, catalog_slots)
{
    char dir[512], path[600], note[700];
    akvt_tmpdir(dir, sizeof dir, "rel-slots");
    akvi_catalog c;
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_NOTFOUND);
    write_slot(dir, 1, 5);
    write_slot(dir, 0, 6);
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(c.seq, 6);
    cr_assert_str_eq(note, "");
    akvi_catalog_free(&c);
    snprintf(path, sizeof path, "%s/CATALOG.0", dir);
    akvt_smash(path, 30, 4); /* a torn write of the newer slot */
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK);
    cr_assert_eq(c.seq, 5, "the previous commit is used");
    cr_assert_not_null(strstr(note, "CATALOG.0"), "%s", note);
    akvi_catalog_free(&c);
    write_slot(dir, 0, 7); /* odd sequence in slot 0 */
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK);
    cr_assert_eq(c.seq, 5, "a record in the wrong slot was trusted");
    akvi_catalog_free(&c);
    snprintf(path, sizeof path, "%s/CATALOG.1", dir);
    akvt_smash(path, 30, 4);
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_ECORRUPT);
    akvt_rmrf(dir);
}

/* Format-1 filter files (a bare envelope, bound to nothing) are still
 * read: kept when they hold every key of their SST, rewritten bound; one
 * that came from another SST is rebuilt. */
static void to_version_1(const char *from, const char *to)
{
    akv_filter *f = NULL;
    cr_assert_eq(akvi_slot_file_filter(from, &f), AKV_OK);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    akv_filter_destroy(f);
    cr_assert_eq(akvi_file_rewrite(to, buf, len), AKV_OK);
    akv_free(buf);
}

Test(reliability, version_1_filter_files_are_checked)
{
    char dir[512], own[1100], other[1100];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    uint64_t run = akvt_two_runs_in_tmp(dir, sizeof dir, "rel-v1", &o, &lb, AKV_LAYOUT_HASH);
    filter_path(dir, run, 1, own, sizeof own);
    to_version_1(own, own);
    filter_path(dir, run, 0, other, sizeof other);
    filter_path(dir, run, 3, own, sizeof own);
    to_version_1(other, own); /* SST 0's filter as SST 3's, unbound */
    akvt_log_reset(&lb);
    akv_db *db = akvt_open_ok(dir, &o);
    akvt_expect_all_right(db, "after version-1 filter files");
    char name[64];
    snprintf(name, sizeof name, "%llu-1.akf", (unsigned long long)run);
    cr_assert_null(strstr(lb.text, name), "a valid version-1 file was rebuilt; log:\n%s", lb.text);
    snprintf(name, sizeof name, "%llu-3.akf", (unsigned long long)run);
    cr_assert_not_null(strstr(lb.text, name), "another SST's version-1 filter was kept; log:\n%s", lb.text);
    cr_assert_eq(akv_close(db), AKV_OK);
    for (int j = 1; j <= 3; j += 2) {
        filter_path(dir, run, (uint64_t)j, own, sizeof own);
        FILE *fp = fopen(own, "rb");
        char magic[4] = {0};
        cr_assert_eq(fread(magic, 1, 4, fp), 4);
        fclose(fp);
        cr_assert(memcmp(magic, "AKFS", 4) == 0, "filter file %d was not rewritten bound", j);
    }
    akvt_rmrf(dir);
}

/* ---- a damaged WAL (issue 27, case 4) ------------------------------------ */

/* The child (this binary re-executed, support/childproc.h): opens DIR with
 * synced writes, puts "late-<i>" for i < 500, writes the size of the
 * largest WAL file to DIR.mark, puts 500 more, creates DIR.ready and waits
 * to be killed. */
__attribute__((constructor)) static void wal_child_entry(void)
{
    const char *e = getenv("AKV_WAL_CHILD");
    if (!e)
        return;
    int layout;
    char dir[512];
    if (sscanf(e, "%d %511s", &layout, dir) != 2)
        _exit(5);
    alarm(60);
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_opts(&o, &lb, (akv_layout)layout, NULL);
    o.sync = 1;
    akv_db *db = NULL;
    if (akv_open(dir, &o, &db) != AKV_OK)
        _exit(3);
    char k[32], v[64], rdir[600], wal[1100], path[600];
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    for (unsigned i = 0; i < 1000; i++) {
        if (i == 500) {
            if (!akvt_find_file(rdir, "", ".log", wal, sizeof wal))
                _exit(7);
            snprintf(path, sizeof path, "%s.mark", dir);
            FILE *f = fopen(path, "w");
            if (!f)
                _exit(6);
            fprintf(f, "%llu %s\n", (unsigned long long)akvt_file_size(wal), wal);
            fclose(f);
        }
        size_t kl = (size_t)snprintf(k, sizeof k, "late-%u", i);
        int vl = snprintf(v, sizeof v, "late-value-%u", i);
        if (akv_put(db, k, kl, v, (size_t)vl) != AKV_OK)
            _exit(4);
    }
    snprintf(path, sizeof path, "%s.ready", dir);
    FILE *f = fopen(path, "w");
    if (!f)
        _exit(6);
    fclose(f);
    for (;;)
        pause();
}

/* Two runs, then 1000 synced puts in a child killed with SIGKILL; the WAL
 * file holding the puts and its size after the first 500 into wal, *mark. */
static void late_writes_then_kill(const char *dir, akv_layout layout, char *wal, size_t cap, uint64_t *mark)
{
    char env[700], ready[600], markp[600];
    snprintf(env, sizeof env, "AKV_WAL_CHILD=%d %s", (int)layout, dir);
    snprintf(ready, sizeof ready, "%s.ready", dir);
    snprintf(markp, sizeof markp, "%s.mark", dir);
    const char *add[] = {env, NULL};
    pid_t pid = akvt_spawn_self(add);
    double until = akvt_now() + 60;
    int status;
    while (access(ready, F_OK) != 0) {
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the writer ended early (status %d)", status);
        cr_assert_lt(akvt_now(), until, "the writer did not finish in 60 s");
        usleep(2000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FILE *f = fopen(markp, "r");
    cr_assert_not_null(f);
    unsigned long long m;
    char fmt[32];
    snprintf(fmt, sizeof fmt, "%%llu %%%zus", cap - 1);
    cr_assert_eq(fscanf(f, fmt, &m, wal), 2);
    fclose(f);
    unlink(ready);
    unlink(markp);
    *mark = m;
}

/* How many of late-0.. read back; they must be a prefix (nothing after a
 * gap), with their values. */
static unsigned late_prefix(akv_db *db)
{
    char k[32], want[64];
    unsigned n = 0;
    bool gap = false;
    for (unsigned i = 0; i < 1000; i++) {
        size_t kl = (size_t)snprintf(k, sizeof k, "late-%u", i);
        void *v = NULL;
        size_t vl = 0;
        int rc = akv_get(db, k, kl, &v, &vl);
        cr_assert(rc == AKV_OK || rc == AKV_NOTFOUND, "late-%u: %s", i, akv_strerror(rc));
        if (rc == AKV_OK) {
            int wl = snprintf(want, sizeof want, "late-value-%u", i);
            cr_assert(!gap, "late-%u is there after a missing earlier write", i);
            cr_assert(vl == (size_t)wl && memcmp(v, want, vl) == 0, "late-%u has a wrong value", i);
            n++;
        } else
            gap = true;
        akv_free(v);
    }
    return n;
}

static void damaged_wal_test(akv_layout layout, bool cut)
{
    char dir[512], wal[1100];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_two_runs_in_tmp(dir, sizeof dir, cut ? "rel-walcut" : "rel-walmid", &o, &lb, layout);
    uint64_t mark;
    late_writes_then_kill(dir, layout, wal, sizeof wal, &mark);
    uint64_t size = akvt_file_size(wal);
    cr_assert_gt(size, mark);
    if (cut) /* the case: cut to 3/4 of its length */
        akvt_truncate(wal, size * 3 / 4);
    else /* 16 bytes smashed just after the first 500 puts */
        akvt_smash(wal, mark + 20, 16);
    /* Strict: refused, nothing changed. */
    o.wal_strict = 1;
    char *before = akvt_dir_digest(dir);
    akv_db *db = NULL;
    int rc = akv_open(dir, &o, &db);
    cr_assert_eq(rc, AKV_ECORRUPT, "a strict open of a damaged WAL gave %s (%s)", akv_strerror(rc),
                 akv_errmsg());
    cr_assert_not_null(strstr(akv_errmsg(), "wal_strict"), "%s", akv_errmsg());
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "the refused open changed the directory");
    free(before);
    free(after);
    /* Not strict: every write before the damage, a warning, the counts. */
    o.wal_strict = 0;
    akvt_log_reset(&lb);
    db = akvt_open_ok(dir, &o);
    akvt_expect_all_right(db, "after a damaged WAL");
    unsigned kept = late_prefix(db);
    if (!cut)
        cr_assert_geq(kept, 500, "only %u of the 500 puts before the damage were kept", kept);
    cr_assert_lt(kept, 1000, "the damage dropped nothing");
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.wal_damaged_recoveries, 1);
    cr_assert_geq(st.wal_records_dropped, 1);
    if (!cut) /* the complete records after the damage are found again and counted */
        cr_assert_geq(st.wal_records_dropped, 1000 - kept - 2, "%llu records dropped, %u puts lost",
                      (unsigned long long)st.wal_records_dropped, 1000 - kept);
    cr_assert_not_null(strstr(lb.text, cut ? "ends inside a record" : "is damaged"), "log:\n%s", lb.text);
    char num[32];
    snprintf(num, sizeof num, "the %u records", kept);
    cr_assert_not_null(strstr(lb.text, num), "the warning does not count the %u records kept; log:\n%s", kept,
                       lb.text);
    cr_assert_eq(akv_close(db), AKV_OK);
    /* Recovered once: the next open (strict too) finds nothing to say. */
    o.wal_strict = 1;
    akvt_log_reset(&lb);
    db = akvt_open_ok(dir, &o);
    cr_assert_eq(late_prefix(db), kept);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_eq(st.wal_damaged_recoveries, 0, "log:\n%s", lb.text);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(dir);
}

Test(reliability, wal_damaged_in_its_middle_keeps_what_precedes_hash)
{
    damaged_wal_test(AKV_LAYOUT_HASH, false);
}

Test(reliability, wal_damaged_in_its_middle_keeps_what_precedes_ordered)
{
    damaged_wal_test(AKV_LAYOUT_ORDERED, false);
}

Test(reliability, wal_cut_to_three_quarters_is_reported_hash)
{
    damaged_wal_test(AKV_LAYOUT_HASH, true);
}

Test(reliability, wal_cut_to_three_quarters_is_reported_ordered)
{
    damaged_wal_test(AKV_LAYOUT_ORDERED, true);
}

/* ---- catalog damage with a valid checksum (issue 27, case 3) -------------- */

/* A run of v1 compacted to level 1, then run 2 (v2, deletes) in level 0. */
static void leveled_runs(const char *dir, const akv_options *o)
{
    akv_db *db = akvt_open_ok(dir, o);
    akvt_write_v1(db);
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    akvt_write_v2(db);
    cr_assert_eq(akv_close(db), AKV_OK);
}

/* Rewrite the newest catalog file with `flip` applied, checksum and all
 * valid (a bad RAM bit or a stray write before the checksum was computed).
 * Returns false when flip finds nothing to change. */
static int flip_catalog(const char *dir, bool (*flip)(akvi_catalog *c, unsigned what), unsigned what)
{
    akvi_catalog c;
    char note[700], path[1100];
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK, "%s", akv_errmsg());
    int changed = flip(&c, what);
    if (changed) {
        uint8_t *buf;
        size_t len;
        cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
        akvi_catalog d;
        if (akvi_catalog_decode(buf, len, &d) == AKV_OK)
            akvi_catalog_free(&d);
        else
            changed = 2; /* the decoder refuses it (order of prefixes, say) */
        snprintf(path, sizeof path, "%s/CATALOG.%d", dir, (int)(c.seq & 1));
        FILE *f = fopen(path, "wb");
        cr_assert_not_null(f);
        cr_assert_eq(fwrite(buf, 1, len, f), len);
        fclose(f);
        free(buf);
    }
    akvi_catalog_free(&c);
    return changed;
}

/* what = run index: bit 0 of its level. */
static bool flip_level(akvi_catalog *c, unsigned what)
{
    if (what >= c->n_run)
        return false;
    c->runs[what].level ^= 1;
    return true;
}

/* what = run index * 64 * 16 + SST index * 16 + bit: a bit of a shard prefix. */
static bool flip_prefix(akvi_catalog *c, unsigned what)
{
    unsigned run = what / (64 * 16), sst = what / 16 % 64, bit = what % 16;
    if (run >= c->n_run || sst >= c->runs[run].n_sst || bit >= c->runs[run].prefix_bits)
        return false;
    c->runs[run].ssts[sst].prefix ^= 1ull << bit;
    return true;
}

/* After the flip: refused naming the field (directory unchanged) or every
 * answer right; a refusal is then resolved by repair, with nothing lost. */
static unsigned flip_test(akv_layout layout, bool (*flip)(akvi_catalog *, unsigned), unsigned n_what,
                          const char *field)
{
    char base[512], dir[600];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    akvt_tmpdir(base, sizeof base, "rel-flip");
    akvt_opts(&o, &lb, layout, NULL);
    char orig[600];
    snprintf(orig, sizeof orig, "%s/orig", base);
    leveled_runs(orig, &o);
    snprintf(dir, sizeof dir, "%s/work", base);
    unsigned refused = 0, tried = 0;
    for (unsigned what = 0; what < n_what; what++) {
        unsigned sst = what / 16 % 64;
        if (flip == flip_prefix && (what % 16 > 2 || (sst != 0 && sst != 3 && sst != 7)))
            continue; /* bits 0..2 of the prefixes of SSTs 0, 3 and 7 of each run: ~12 cases */
        akvt_copy_tree(orig, dir);
        int how = flip_catalog(dir, flip, what);
        if (!how) {
            akvt_rmrf(dir);
            continue;
        }
        tried++;
        char wh[96];
        snprintf(wh, sizeof wh, "%s flip %u", field, what);
        if (refused_or_right(dir, &o, wh)) {
            if (refused++ == 0)
                cr_log_info("%s: %s", wh, akv_errmsg());
            if (how == 1) /* else the previous catalog was used, and refused for what it lacks */
                cr_assert_not_null(strstr(akv_errmsg(), field), "%s: the refusal does not name the %s: %s",
                                   wh, field, akv_errmsg());
            if (how == 1 && strcmp(field, "level") == 0) /* and what the previous generation says */
                cr_assert_not_null(strstr(akv_errmsg(), "the previous catalog (CATALOG."), "%s: %s", wh,
                                   akv_errmsg());
            akv_repair_report r;
            int rc = akv_repair(dir, &o, &r);
            cr_assert_eq(rc, AKV_OK, "%s: repair gave %s (%s)\n%s", wh, akv_strerror(rc), akv_errmsg(),
                         r.text);
            cr_assert_eq(r.entries_lost, 0, "%s: %s", wh, r.text);
            akv_free(r.text);
            akv_db *db = akvt_open_ok(dir, &o);
            akvt_expect_all_right(db, wh);
            cr_assert_eq(akv_close(db), AKV_OK);
        }
        akvt_rmrf(dir);
    }
    cr_assert_gt(tried, 0);
    cr_log_info("%s: %u of %u flips refused", field, refused, tried);
    akvt_rmrf(base);
    return refused;
}

Test(reliability, catalog_level_flip_is_refused_hash)
{
    flip_test(AKV_LAYOUT_HASH, flip_level, 8, "level");
}

Test(reliability, catalog_level_flip_is_refused_ordered)
{
    flip_test(AKV_LAYOUT_ORDERED, flip_level, 8, "level");
}

Test(reliability, catalog_shard_prefix_flip_is_refused)
{
    flip_test(AKV_LAYOUT_HASH, flip_prefix, 2 * 64 * 16 + 8 * 16, "shard prefix");
}

/* A scan (ordered layout) that reaches a damaged block ends with
 * AKV_ECORRUPT wherever the damage is: at a block RocksDB's iterator
 * stops at silently (checked against the catalog's counts), or at one
 * whose checksum RocksDB reports (that was AKV_EIO). */
Test(reliability, scan_over_a_damaged_block_is_ecorrupt)
{
    char dir[512], work[600], ssts[64][1024], cf[32];
    akvt_logbuf lb = AKVT_LOGBUF_INIT;
    akv_options o;
    uint64_t run = akvt_two_runs_in_tmp(dir, sizeof dir, "rel-scan", &o, &lb, AKV_LAYOUT_ORDERED);
    snprintf(cf, sizeof cf, "run.%llu", (unsigned long long)run);
    snprintf(work, sizeof work, "%s-w", dir);
    const uint64_t offs[] = {20, 1000, 3000, 6000, 9000};
    for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
        akvt_copy_tree(dir, work);
        size_t n = akvt_cf_ssts(work, cf, ssts, 64);
        cr_assert_geq(n, 3);
        if (offs[k] + 40 >= akvt_file_size(ssts[1])) {
            akvt_rmrf(work);
            continue;
        }
        akvt_smash(ssts[1], offs[k], 40);
        akv_db *db = akvt_open_ok(work, &o);
        akv_iter *it;
        cr_assert_eq(akv_iter_create(db, &it), AKV_OK);
        size_t seen = 0;
        for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it))
            seen++;
        int st = akv_iter_status(it);
        cr_assert(st == AKV_ECORRUPT || (st == AKV_OK && seen == AKVT_NKEYS - AKVT_NKEYS / 10),
                  "damage at byte %llu: a scan ended with %s after %zu keys (%s)",
                  (unsigned long long)offs[k], akv_strerror(st), seen, akv_errmsg());
        akv_iter_destroy(it);
        akv_close(db);
        akvt_rmrf(work);
    }
    akvt_rmrf(dir);
}

/* docs/reliability.md's "Damage and what open does" is engine/damage.c's
 * table: the same rows in the same order, the damage word for word, and a
 * row open refuses says "refused" there and no other row does. */
Test(reliability, the_damage_table_in_the_code_is_the_documented_one)
{
    FILE *f = fopen("docs/reliability.md", "r");
    cr_assert_not_null(f, "docs/reliability.md: %s", strerror(errno));
    char line[4096];
    bool in = false;
    size_t n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!in) {
            in = strncmp(line, "| damage | what open does |", 27) == 0;
            if (in)
                cr_assert_not_null(fgets(line, sizeof line, f)); /* |---|---| */
            continue;
        }
        if (line[0] != '|')
            break;
        const char *cell = line + 2, *end = strstr(cell, " | ");
        cr_assert_not_null(end, "row %zu of the table has one cell: %s", n, line);
        cr_assert_lt(n, AKVI_DMG_COUNT, "the documented table has more rows than the code's: %.*s",
                     (int)(end - cell), cell);
        const akvi_damage_row *row = &akvi_damage_table[n];
        cr_assert(strlen(row->what) == (size_t)(end - cell) &&
                      strncmp(cell, row->what, (size_t)(end - cell)) == 0,
                  "row %zu: the docs say '%.*s', the code '%s'", n, (int)(end - cell), cell, row->what);
        cr_assert_eq(strstr(end, "refused") != NULL, row->refuses,
                     "row %zu ('%s'): the docs %s it is refused", n, row->what,
                     row->refuses ? "do not say" : "say");
        n++;
    }
    fclose(f);
    cr_assert(in, "docs/reliability.md has no damage table");
    cr_assert_eq(n, AKVI_DMG_COUNT, "the docs list %zu kinds of damage, the code %d", n, AKVI_DMG_COUNT);
}

Test(reliability, a_refusal_names_repair_and_keeps_its_code)
{
    int rc = akvi_refuse(AKVI_DMG_FOREIGN_FAMILY, AKV_ECORRUPT, "family %s", "x");
    cr_assert_eq(rc, AKV_ECORRUPT);
    cr_assert_str_eq(akv_errmsg(), "family x" AKVI_REPAIR_HINT);
    cr_assert_eq(akvi_refuse(AKVI_DMG_IDENTITY_DAMAGED, AKV_ENOTSUP, "v"), AKV_ENOTSUP);
}
