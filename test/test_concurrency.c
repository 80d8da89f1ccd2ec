/*
 * test_concurrency.c — readers, a writer and the background thread at once.
 *
 * Stable keys are written before the threads start and never touched again:
 * every reader must find every one of them at every moment, whatever flush,
 * compaction, memtable rotation, guard removal or adaptation is running.
 * Readers also look up absent keys (driving adaptation) and, in the ordered
 * layout, scan. Meant to run under ThreadSanitizer too. Also: the read
 * counters, kept per thread, add up exactly once the readers are done; and
 * versions and memtable guards replaced all the time under gets that pin
 * them by hazard are never freed under them.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "engine/internal.h"

#define STABLE  4000u
#define READERS 3

typedef struct world {
    akv_db *db;
    akv_layout layout;
    atomic_bool stop;
    atomic_uint errors;
    char msg[256];
} world;

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static size_t stable_key(char *b, unsigned i)
{
    return (size_t)snprintf(b, 32, "stable-%06u", i);
}

static void fail(world *w, const char *what, unsigned i)
{
    if (atomic_fetch_add(&w->errors, 1) == 0)
        snprintf(w->msg, sizeof w->msg, "%s %u: %s", what, i, akv_errmsg());
}

static void *reader(void *arg)
{
    world *w = arg;
    uint64_t x = (uint64_t)pthread_self() | 1;
    while (!atomic_load(&w->stop)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        unsigned i = (unsigned)(x % STABLE);
        char k[32], v[32];
        size_t kl = stable_key(k, i);
        int vl = snprintf(v, sizeof v, "v%u", i);
        void *got = NULL;
        size_t gl = 0;
        int rc = akv_get(w->db, k, kl, &got, &gl);
        if (rc != AKV_OK || gl != (size_t)vl || memcmp(got, v, gl) != 0)
            fail(w, "stable key lost or wrong", i);
        akv_free(got);
        kl = (size_t)snprintf(k, sizeof k, "stable-%06ux", i); /* absent, inside the range */
        if (akv_get(w->db, k, kl, NULL, NULL) != AKV_NOTFOUND)
            fail(w, "absent key found", i);
        if (w->layout == AKV_LAYOUT_ORDERED && i % 64 == 0) {
            akv_iter *it;
            if (akv_iter_create(w->db, &it) != AKV_OK) {
                fail(w, "iter_create", i);
                continue;
            }
            unsigned seen = 0;
            for (akv_iter_seek(it, "stable-", 7); akv_iter_valid(it) && seen < STABLE; akv_iter_next(it)) {
                size_t l;
                const char *key = akv_iter_key(it, &l);
                if (l < 7 || memcmp(key, "stable-", 7) != 0)
                    break;
                seen++;
            }
            if (akv_iter_status(it) != AKV_OK || seen != STABLE)
                fail(w, "scan saw a wrong number of stable keys", seen);
            akv_iter_destroy(it);
        }
    }
    return NULL;
}

static void *writer(void *arg)
{
    world *w = arg;
    char k[32], v[128];
    memset(v, 'x', sizeof v);
    for (unsigned i = 0; i < 8000 && atomic_load(&w->errors) == 0; i++) {
        size_t kl = (size_t)snprintf(k, sizeof k, "churn-%06u", i % 3000);
        int rc = (i % 5 == 4) ? akv_delete(w->db, k, kl) : akv_put(w->db, k, kl, v, sizeof v);
        if (rc != AKV_OK)
            fail(w, "write", i);
        if (i % 3000 == 2999 && akv_compact(w->db) != AKV_OK)
            fail(w, "compact", i);
    }
    atomic_store(&w->stop, true);
    return NULL;
}

static void run(akv_layout layout)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvconc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.layout = layout;
    o.memtable_bytes = 48 << 10;
    o.sst_target_bytes = 16 << 10;
    o.bits_per_key = 6;
    o.log = quiet;
    world w = {.layout = layout};
    cr_assert_eq(akv_open(dir, &o, &w.db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = 0; i < STABLE; i++) {
        char k[32], v[32];
        size_t kl = stable_key(k, i);
        int vl = snprintf(v, sizeof v, "v%u", i);
        cr_assert_eq(akv_put(w.db, k, kl, v, (size_t)vl), AKV_OK);
    }
    pthread_t r[READERS], wr;
    for (int i = 0; i < READERS; i++)
        pthread_create(&r[i], NULL, reader, &w);
    pthread_create(&wr, NULL, writer, &w);
    pthread_join(wr, NULL);
    for (int i = 0; i < READERS; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(atomic_load(&w.errors), 0, "%u errors, first: %s", atomic_load(&w.errors), w.msg);
    akv_stats st;
    cr_assert_eq(akv_get_stats(w.db, &st), AKV_OK);
    cr_assert_gt(st.flushes, 0);
    cr_assert_eq(akv_close(w.db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(concurrency, readers_writer_background_hash)
{
    run(AKV_LAYOUT_HASH);
}
Test(concurrency, readers_writer_background_ordered)
{
    run(AKV_LAYOUT_ORDERED);
}

/* ---- counts kept per thread ------------------------------------------------ */

/* More threads than thread slots (64): some share a counter stripe with
 * atomic additions and pin versions by refcount. */
#define COUNTERS 70

typedef struct count_arg {
    akv_db *db;
    unsigned seed, gets, absent;
    atomic_uint *bad;
} count_arg;

static void *count_reader(void *p)
{
    count_arg *a = p;
    uint64_t x = 0x9e3779b97f4a7c15ULL * (a->seed + 1);
    for (unsigned n = 0; n < 400; n++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        char k[32];
        unsigned i = (unsigned)(x % (2 * STABLE));
        size_t kl = i < STABLE ? stable_key(k, i) : (size_t)snprintf(k, sizeof k, "stable-%06ux", i % 97);
        int rc = akv_get(a->db, k, kl, NULL, NULL);
        a->gets++;
        if (rc == AKV_NOTFOUND)
            a->absent++;
        if (rc != (i < STABLE ? AKV_OK : AKV_NOTFOUND))
            atomic_fetch_add(a->bad, 1);
    }
    return NULL;
}

typedef struct row_sums {
    uint64_t queries, filtered, probes, fps, adaptations;
} row_sums;

static row_sums slot_rows(akv_db *db)
{
    akv_slot_info *rows;
    size_t n;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    row_sums s = {0};
    for (size_t i = 0; i < n; i++) {
        s.queries += rows[i].queries;
        s.filtered += rows[i].filtered;
        s.probes += rows[i].probes;
        s.fps += rows[i].false_positives;
        s.adaptations += rows[i].adaptations;
    }
    akv_free(rows);
    return s;
}

/* Gets write only their thread's stripe of the counters; once the readers
 * are done, the sums are exact: every get counted once, every absent key
 * once, and the per-slot rows add up to the database's totals. */
Test(concurrency, read_counts_are_exact_across_threads)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvcount-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.memtable_bytes = 48 << 10;
    o.sst_target_bytes = 16 << 10;
    o.bits_per_key = 6;
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = 0; i < STABLE; i++) {
        char k[32];
        size_t kl = stable_key(k, i);
        cr_assert_eq(akv_put(db, k, kl, "v", 1), AKV_OK);
    }
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = 0; i < 50; i++) { /* a few in the memtable: the guard counts too */
        char k[32];
        size_t kl = stable_key(k, i);
        cr_assert_eq(akv_put(db, k, kl, "v", 1), AKV_OK);
    }
    akv_stats a, b;
    cr_assert_eq(akv_get_stats(db, &a), AKV_OK);
    row_sums ra = slot_rows(db);
    atomic_uint bad = 0;
    static count_arg args[COUNTERS];
    pthread_t t[COUNTERS];
    for (unsigned i = 0; i < COUNTERS; i++) {
        args[i] = (count_arg){db, i, 0, 0, &bad};
        cr_assert_eq(pthread_create(&t[i], NULL, count_reader, &args[i]), 0);
    }
    uint64_t gets = 0, absent = 0;
    for (unsigned i = 0; i < COUNTERS; i++) {
        cr_assert_eq(pthread_join(t[i], NULL), 0);
        gets += args[i].gets;
        absent += args[i].absent;
    }
    cr_assert_eq(atomic_load(&bad), 0, "%u gets answered wrongly", atomic_load(&bad));
    cr_assert_eq(akv_get_stats(db, &b), AKV_OK);
    row_sums rb = slot_rows(db);
    cr_assert_eq(b.gets - a.gets, gets);
    cr_assert_eq(b.negative_lookups - a.negative_lookups, absent);
    cr_assert_eq(rb.queries - ra.queries, b.slot_queries - a.slot_queries);
    cr_assert_eq(rb.filtered - ra.filtered, b.slot_filtered - a.slot_filtered);
    cr_assert_eq(rb.probes - ra.probes, b.probes - a.probes);
    cr_assert_eq(rb.fps - ra.fps, b.false_positives - a.false_positives);
    cr_assert_eq(rb.adaptations - ra.adaptations, b.adaptations - a.adaptations);
    cr_assert_gt(b.slot_queries - a.slot_queries, gets, "every get checks the guard and a slot");
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- versions replaced under the readers' pins ------------------------------ */

typedef struct churn_world {
    akv_db *db;
    atomic_bool stop;
    atomic_uint errors;
} churn_world;

static void *pin_reader(void *p)
{
    churn_world *w = p;
    uint64_t x = (uint64_t)pthread_self() | 1;
    while (!atomic_load(&w->stop)) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        char k[32];
        unsigned i = (unsigned)(x % 500);
        size_t kl = stable_key(k, i);
        void *v = NULL;
        size_t vl = 0;
        if (akv_get(w->db, k, kl, &v, &vl) != AKV_OK || vl != 1 || ((char *)v)[0] != 's')
            atomic_fetch_add(&w->errors, 1);
        akv_free(v);
        kl = (size_t)snprintf(k, sizeof k, "gone-%llu", (unsigned long long)(x % 100000));
        if (akv_get(w->db, k, kl, NULL, NULL) != AKV_NOTFOUND)
            atomic_fetch_add(&w->errors, 1);
    }
    return NULL;
}

/* A 4 KiB memtable: the writer rotates every few dozen writes and the
 * background threads flush, merge and compact all the time, so versions
 * (and memtable guards) are replaced while gets hold hazard pins on them.
 * No get may see a lost key; under AddressSanitizer and ThreadSanitizer,
 * no version, run or guard may be freed while a get still reads it. */
Test(concurrency, versions_replaced_under_pinned_gets)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvpins-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.memtable_bytes = 4096;
    o.sst_target_bytes = 8192;
    o.bits_per_key = 6;
    o.log = quiet;
    churn_world w = {0};
    cr_assert_eq(akv_open(dir, &o, &w.db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = 0; i < 500; i++) {
        char k[32];
        size_t kl = stable_key(k, i);
        cr_assert_eq(akv_put(w.db, k, kl, "s", 1), AKV_OK);
    }
    pthread_t r[3];
    for (int i = 0; i < 3; i++)
        cr_assert_eq(pthread_create(&r[i], NULL, pin_reader, &w), 0);
    char k[32], v[64];
    memset(v, 'c', sizeof v);
    for (unsigned i = 0; i < 2500; i++) {
        size_t kl = (size_t)snprintf(k, sizeof k, "churn-%05u", i % 1000);
        cr_assert_eq(akv_put(w.db, k, kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_compact(w.db), AKV_OK, "%s", akv_errmsg());
    atomic_store(&w.stop, true);
    for (int i = 0; i < 3; i++)
        pthread_join(r[i], NULL);
    cr_assert_eq(atomic_load(&w.errors), 0, "%u wrong answers", atomic_load(&w.errors));
    akv_stats st;
    cr_assert_eq(akv_get_stats(w.db, &st), AKV_OK);
    cr_log_info("%llu flushes, %llu compactions, %llu L0 merges", (unsigned long long)st.flushes,
                (unsigned long long)st.compactions, (unsigned long long)st.l0_merges);
    cr_assert_gt(st.flushes, 20, "only %llu flushes", (unsigned long long)st.flushes);
    cr_assert_eq(akv_close(w.db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- a get inside a get ------------------------------------------------------ */

/* A get nested inside another get of the same thread and database (a log
 * hook or a filter kind's callback that reads the database) must leave the
 * outer get's pin in place: the pin is what keeps the outer get's version
 * from being reclaimed. */
Test(concurrency, a_nested_get_keeps_the_outer_pin)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvnest-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_put(db, "k", 1, "v", 1), AKV_OK);
    int tok;
    akvi_version *outer = akvi_pin(db, &tok);
    cr_assert_geq(tok, 0, "the test thread has a thread slot");
    cr_assert_eq(akv_get(db, "k", 1, NULL, NULL), AKV_OK);
    cr_assert_eq(akv_get(db, "absent", 6, NULL, NULL), AKV_NOTFOUND);
    cr_assert_eq(atomic_load(&db->vs.pins[tok].p.v), outer,
                 "the nested get replaced or cleared the outer pin");
    akvi_unpin(db, outer, tok);
    cr_assert_null(atomic_load(&db->vs.pins[tok].p.v));
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
