/*
 * test_checkpoint.c — akv_checkpoint, the online backup.
 *
 * The property (in both layouts): a checkpoint taken while two threads run
 * a workloada-like mix (half reads, half writes; a 64 KiB memtable, so
 * flushes and compactions run meanwhile) opens as a database and holds
 * every write acknowledged before the call and none that started after it
 * returned. Each thread writes its own keys in order (t<i>-<n>), so "before
 * the call" is every n below the count of acknowledged puts read just
 * before it, and "after it returned" every n from the count of started
 * puts read just after it. Also: immutable files are hard links, the copy
 * lives on its own, and bad calls are refused.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "support/kvmodel.h"

#define THREADS 2

typedef struct writer {
    akv_db *db;
    int id;
    uint64_t rng;
    _Atomic uint64_t started, acked; /* puts begun, puts returned AKV_OK */
    _Atomic bool *stop;
    int rc; /* first failure */
} writer;

static size_t key_of(int t, uint64_t n, char *buf)
{
    return (size_t)sprintf(buf, "t%d-%08llu", t, (unsigned long long)n);
}

/* ~100 bytes, derived from the key's number. */
static size_t value_of(uint64_t n, char *buf)
{
    int len = sprintf(buf, "value-%llu-", (unsigned long long)n);
    for (; len < 100; len++)
        buf[len] = (char)('a' + (n + (uint64_t)len) % 26);
    return (size_t)len;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *run_writer(void *arg)
{
    writer *w = arg;
    char k[32], v[128];
    while (!atomic_load(w->stop)) {
        uint64_t acked = atomic_load(&w->acked);
        if (acked > 0 && next_rand(&w->rng) % 2 == 0) { /* read an acknowledged key */
            uint64_t m = next_rand(&w->rng) % acked;
            void *got = NULL;
            size_t gl = 0;
            int rc = akv_get(w->db, k, key_of(w->id, m, k), &got, &gl);
            size_t vl = value_of(m, v);
            if (rc != AKV_OK || gl != vl || memcmp(got, v, vl) != 0) {
                w->rc = rc != AKV_OK ? rc : -100;
                akv_free(got);
                return NULL;
            }
            akv_free(got);
            continue;
        }
        uint64_t n = atomic_fetch_add(&w->started, 1);
        size_t kl = key_of(w->id, n, k), vl = value_of(n, v);
        int rc = akv_put(w->db, k, kl, v, vl);
        if (rc != AKV_OK) {
            w->rc = rc;
            return NULL;
        }
        atomic_store(&w->acked, n + 1);
    }
    return NULL;
}

static void options(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 64u << 10;
    o->sst_target_bytes = 32u << 10;
    o->l0_compaction_trigger = 2;
    o->level_multiplier = 4;
    o->seed = 0xc0ffee;
}

static void wait_acked(writer *w, uint64_t n)
{
    for (int t = 0; t < THREADS; t++)
        while (atomic_load(&w[t].acked) < n && w[t].rc == AKV_OK)
            usleep(1000);
}

static void during_workload(akv_layout layout)
{
    char tmp[512], src[600], cp[600];
    akvt_tmpdir(tmp, sizeof tmp, "checkpoint");
    snprintf(src, sizeof src, "%s/db", tmp);
    snprintf(cp, sizeof cp, "%s/copy", tmp);
    akv_options o;
    options(&o, layout);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(src, &o, &db), AKV_OK, "open: %s", akv_errmsg());

    _Atomic bool stop = false;
    writer w[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (writer){.db = db, .id = t, .rng = 0x9e3779b97f4a7c15ull * (uint64_t)(t + 1), .stop = &stop};
        atomic_init(&w[t].started, 0);
        atomic_init(&w[t].acked, 0);
        cr_assert_eq(pthread_create(&th[t], NULL, run_writer, &w[t]), 0);
    }
    /* 3000 puts of ~110 bytes per thread: about ten memtables' worth. */
    wait_acked(w, 3000);
    uint64_t before[THREADS], after[THREADS];
    for (int t = 0; t < THREADS; t++)
        before[t] = atomic_load(&w[t].acked);
    int rc = akv_checkpoint(db, cp);
    for (int t = 0; t < THREADS; t++)
        after[t] = atomic_load(&w[t].started);
    cr_assert_eq(rc, AKV_OK, "checkpoint: %s (%s)", akv_strerror(rc), akv_errmsg());
    /* Writes go on past the checkpoint before the threads stop. */
    wait_acked(w, after[0] > after[1] ? after[0] + 1000 : after[1] + 1000);
    atomic_store(&stop, true);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        cr_assert_eq(w[t].rc, AKV_OK, "thread %d failed: %d (%s)", t, w[t].rc, akv_errmsg());
    }
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    cr_assert_gt(st.flushes, 0, "no flush ran during the workload");
    cr_assert_eq(akv_close(db), AKV_OK, "close: %s", akv_errmsg());

    /* The copy opens as a database of the same layout. */
    akv_options co;
    options(&co, AKV_LAYOUT_AUTO);
    co.seed = 0;
    akv_db *c = NULL;
    cr_assert_eq(akv_open(cp, &co, &c), AKV_OK, "open the checkpoint: %s", akv_errmsg());
    cr_assert_eq(akv_db_layout(c), layout);
    char k[32], v[128];
    uint64_t present = 0;
    for (int t = 0; t < THREADS; t++) {
        uint64_t end = atomic_load(&w[t].started);
        for (uint64_t n = 0; n < end; n++) {
            void *got = NULL;
            size_t gl = 0;
            rc = akv_get(c, k, key_of(t, n, k), &got, &gl);
            if (n < before[t]) {
                size_t vl = value_of(n, v);
                cr_assert_eq(rc, AKV_OK,
                             "thread %d put %llu, acknowledged before the checkpoint, is missing (rc %d)", t,
                             (unsigned long long)n, rc);
                cr_assert(gl == vl && memcmp(got, v, vl) == 0, "thread %d put %llu: wrong value", t,
                          (unsigned long long)n);
            } else if (n >= after[t]) {
                cr_assert_eq(rc, AKV_NOTFOUND,
                             "thread %d put %llu, started after the checkpoint, is in it (rc %d)", t,
                             (unsigned long long)n, rc);
            } else {
                cr_assert(rc == AKV_OK || rc == AKV_NOTFOUND, "rc %d", rc);
            }
            present += rc == AKV_OK;
            akv_free(got);
        }
    }
    /* Nothing else either: a full pass sees exactly the keys found. */
    akv_iter *it = NULL;
    cr_assert_eq(akv_iter_create(c, &it), AKV_OK);
    uint64_t n = 0;
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it))
        n++;
    cr_assert_eq(akv_iter_status(it), AKV_OK, "%s", akv_errmsg());
    akv_iter_destroy(it);
    cr_assert_eq(n, present, "the checkpoint iterates %llu keys, %llu found by get", (unsigned long long)n,
                 (unsigned long long)present);
    cr_log_info("checkpoint (%s): %llu + %llu puts acknowledged before, %llu keys in the copy, %llu flushes",
                layout == AKV_LAYOUT_HASH ? "hash" : "ordered", (unsigned long long)before[0],
                (unsigned long long)before[1], (unsigned long long)present, (unsigned long long)st.flushes);
    /* It is a database: it takes writes and survives a reopen. */
    cr_assert_eq(akv_put(c, "new", 3, "x", 1), AKV_OK);
    cr_assert_eq(akv_close(c), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_open(cp, &co, &c), AKV_OK, "reopen the checkpoint: %s", akv_errmsg());
    cr_assert_eq(akv_get(c, "new", 3, NULL, NULL), AKV_OK);
    cr_assert_eq(akv_close(c), AKV_OK);
    akvt_rmrf(tmp);
}

Test(checkpoint, during_a_two_thread_workload_hash)
{
    during_workload(AKV_LAYOUT_HASH);
}

Test(checkpoint, during_a_two_thread_workload_ordered)
{
    during_workload(AKV_LAYOUT_ORDERED);
}

/* Files in dir whose names end with `suffix`: how many, and how many are
 * hard links (more than one name). */
static void count_links(const char *dir, const char *suffix, int *files, int *linked)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        cr_assert_eq(stat(p, &st), 0);
        (*files)++;
        *linked += st.st_nlink > 1;
    }
    closedir(d);
}

Test(checkpoint, links_immutable_files_and_lives_on_its_own)
{
    char tmp[512], src[600], cp[600], p[700];
    akvt_tmpdir(tmp, sizeof tmp, "cplinks");
    snprintf(src, sizeof src, "%s/db", tmp);
    snprintf(cp, sizeof cp, "%s/copy", tmp);
    akv_options o;
    options(&o, AKV_LAYOUT_HASH);
    o.l0_compaction_trigger = 100; /* nothing compacts: the source keeps its files */
    o.l0_stall_runs = 200;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(src, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[128];
    for (uint64_t n = 0; n < 2000; n++)
        cr_assert_eq(akv_put(db, k, key_of(0, n, k), v, value_of(n, v)), AKV_OK);
    cr_assert_eq(akv_flush(db), AKV_OK);

    cr_assert_eq(akv_checkpoint(db, cp), AKV_OK, "%s", akv_errmsg());
    int files = 0, linked = 0;
    snprintf(p, sizeof p, "%s/filters", cp);
    count_links(p, ".akf", &files, &linked);
    cr_assert_gt(files, 0, "no filter file in the checkpoint");
    cr_assert_eq(linked, files, "%d of %d filter files are hard links", linked, files);
    files = linked = 0;
    snprintf(p, sizeof p, "%s/rocksdb", cp);
    count_links(p, ".sst", &files, &linked);
    cr_assert_gt(files, 0, "no SST in the checkpoint");
    cr_assert_eq(linked, files, "%d of %d SSTs are hard links", linked, files);

    /* Refusals: an existing directory, NULL arguments. */
    cr_assert_eq(akv_checkpoint(db, cp), AKV_EEXIST);
    cr_assert_not_null(strstr(akv_errmsg(), "new directory"), "%s", akv_errmsg());
    cr_assert_eq(akv_checkpoint(db, NULL), AKV_EINVAL);
    cr_assert_eq(akv_checkpoint(NULL, cp), AKV_EINVAL);
    snprintf(p, sizeof p, "%s/no/such/parent", tmp);
    cr_assert_eq(akv_checkpoint(db, p), AKV_EIO);

    /* The two go their own ways. */
    cr_assert_eq(akv_delete(db, k, key_of(0, 5, k)), AKV_OK);
    cr_assert_eq(akv_compact(db), AKV_OK);
    akv_db *c = NULL;
    cr_assert_eq(akv_open(cp, &o, &c), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_get(c, k, key_of(0, 5, k), NULL, NULL), AKV_OK,
                 "a delete in the source reached the copy");
    cr_assert_eq(akv_put(c, "only-in-copy", 12, "1", 1), AKV_OK);
    cr_assert_eq(akv_get(db, "only-in-copy", 12, NULL, NULL), AKV_NOTFOUND);
    cr_assert_eq(akv_get(db, k, key_of(0, 5, k), NULL, NULL), AKV_NOTFOUND);
    for (uint64_t n = 0; n < 2000; n += 97)
        cr_assert_eq(akv_get(c, k, key_of(0, n, k), NULL, NULL), AKV_OK);
    cr_assert_eq(akv_close(c), AKV_OK);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvt_rmrf(tmp);
}
