/*
 * test_adapt.c — the feedback loop under attack: an absent key that cost a
 * wasted probe must stop costing one when it is replayed, in both layouts,
 * while writers keep flushing new runs, even when an SST's adaptive filter
 * was built nearly full and the fresh false positives use up its room; and
 * the adapted filter reaches its file on disk without waiting for close.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "adaptkv/hash.h"

static void tmpdir(char *out, size_t cap)
{
    snprintf(out, cap, "%s/akvadapt-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(out));
}

static void rmrf(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Present keys are even, absent keys odd: every absent key falls inside
 * the key range of the SSTs, so in the ordered layout it reaches their
 * filters too. */
static size_t key(char *buf, uint64_t i)
{
    return (size_t)snprintf(buf, 32, "user%010llu", (unsigned long long)i);
}

/* Keys of the first run: a count just under what a 2^11-slot quotient
 * filter takes at its 0.9 load, so its AQF has little room to adapt. */
#define BASE_KEYS     1800u
#define WRITER_ROUNDS 6u
#define WRITER_KEYS   150u

typedef struct writer_arg {
    akv_db *db;
    atomic_bool failed;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    char k[32];
    char v[100];
    memset(v, 'w', sizeof v);
    uint64_t s = 0x5eed0001;
    for (unsigned r = 0; r < WRITER_ROUNDS; r++) {
        for (unsigned i = 0; i < WRITER_KEYS; i++) {
            /* even keys past the base set, spread over the whole range */
            uint64_t id = 2 * (BASE_KEYS + (rng(&s) % (20u * BASE_KEYS)));
            if (akv_put(w->db, k, key(k, id), v, sizeof v) != AKV_OK)
                atomic_store(&w->failed, true);
        }
        if (akv_flush(w->db) != AKV_OK)
            atomic_store(&w->failed, true);
    }
    return NULL;
}

static unsigned wasted(akv_db *db, uint64_t id)
{
    char k[32];
    akv_get_info info;
    int rc = akv_get_ex(db, k, key(k, id), NULL, NULL, &info);
    cr_assert(rc == AKV_NOTFOUND, "absent key %llu: rc %d %s", (unsigned long long)id, rc, akv_errmsg());
    return info.wasted_probes;
}

/* Adaptive SST slots, a fixed seed, and the runs kept as flushed: no
 * compaction rebuilds a filter in these tests. */
static void adapt_options(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->seed = 42;
    o->slot_policy = "mem=sscf,l0+=aqf";
    o->l0_compaction_trigger = 64;
    o->l0_stall_runs = 64;
    o->log = quiet;
}

static void attack(akv_layout layout)
{
    char dir[512];
    tmpdir(dir, sizeof dir);
    akv_options o;
    adapt_options(&o, layout);
    o.memtable_bytes = 8u << 20;
    o.block_cache_bytes = 1u << 20;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());

    char k[32];
    char v[100];
    memset(v, 'v', sizeof v);
    for (uint64_t i = 0; i < BASE_KEYS; i++)
        cr_assert_eq(akv_put(db, k, key(k, 2 * i * 20), v, sizeof v), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());

    /* The attacker explores fresh absent keys while writers flush new
     * runs, and keeps the ones that cost a probe. */
    writer_arg wa = {db, false};
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, writer, &wa), 0);
    enum { EXPLORE = 30000, POOL = 4096 };
    uint64_t *pool = malloc(POOL * sizeof *pool);
    cr_assert_not_null(pool);
    size_t n = 0;
    uint64_t s = 0xadab7;
    for (unsigned i = 0; i < EXPLORE && n < POOL; i++) {
        uint64_t id = 2 * (rng(&s) % (20u * BASE_KEYS)) + 1;
        if (wasted(db, id))
            pool[n++] = id;
    }
    /* Two replays while the writers go on, then they stop. */
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < n; i++)
            (void)wasted(db, pool[i]);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert(!atomic_load(&wa.failed), "writer failed");

    /* One more replay once every run exists, so each filter has seen each
     * key; now none may let a replayed key through again. */
    for (size_t i = 0; i < n; i++)
        (void)wasted(db, pool[i]);
    unsigned total = 0, fooled = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned w = wasted(db, pool[i]);
        total += w;
        fooled += w > 0;
    }
    cr_assert_gt(n, 200, "the attack found only %zu costly keys", n);
    cr_assert_leq(fooled, n / 50, "%u of %zu replayed absent keys still cost probes (%u wasted)", fooled, n,
                  total);

    /* and no adaptation or rebuild lost a key */
    for (uint64_t i = 0; i < BASE_KEYS; i++) {
        void *val = NULL;
        size_t vl = 0;
        cr_assert_eq(akv_get(db, k, key(k, 2 * i * 20), &val, &vl), AKV_OK, "key %llu lost",
                     (unsigned long long)i);
        akv_free(val);
    }
    free(pool);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    rmrf(dir);
}

Test(adapt, replayed_absent_keys_stop_costing_probes_ordered)
{
    attack(AKV_LAYOUT_ORDERED);
}

Test(adapt, replayed_absent_keys_stop_costing_probes_hash)
{
    attack(AKV_LAYOUT_HASH);
}

/* The one filter file in DIR/filters (the test keeps a single SST). */
static void only_filter_file(const char *dir, char *path, size_t cap)
{
    char fdir[600];
    snprintf(fdir, sizeof fdir, "%s/filters", dir);
    DIR *d = opendir(fdir);
    cr_assert_not_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".akf") && !strstr(e->d_name, ".tmp")) {
            snprintf(path, cap, "%s/%s", fdir, e->d_name);
            n++;
        }
    closedir(d);
    cr_assert_eq(n, 1, "expected one filter file, found %d", n);
}

static akv_filter *read_filter(const char *path)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    static uint8_t buf[1 << 20];
    size_t len = fread(buf, 1, sizeof buf, fp);
    fclose(fp);
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &f), AKV_OK, "filter file %s does not load", path);
    return f;
}

/* Adaptations are written to the filter file after the next flush, while
 * the database stays open: a crash then no longer forgets them. The file's
 * filter must still hold every key of its SST. Ordered layout: a slot sees
 * the key's own hash, so this test can query the file directly. */
Test(adapt, adapted_filter_is_saved_after_a_flush)
{
    char dir[512];
    tmpdir(dir, sizeof dir);
    akv_options o;
    adapt_options(&o, AKV_LAYOUT_ORDERED);
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32], v[16] = "v";
    for (uint64_t i = 0; i < BASE_KEYS; i++)
        cr_assert_eq(akv_put(db, k, key(k, 2 * i), v, 1), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    char path[1200];
    only_filter_file(dir, path, sizeof path);
    akv_filter *before = read_filter(path);

    enum { POOL = 512 };
    uint64_t pool[POOL], s = 0x5a7e;
    size_t n = 0;
    for (unsigned i = 0; i < 200000 && n < POOL; i++) {
        uint64_t id = 2 * (rng(&s) % BASE_KEYS) + 1; /* odd: absent, inside the range */
        if (wasted(db, id))
            pool[n++] = id;
    }
    cr_assert_gt(n, 20, "only %zu false positives to adapt to", n);
    /* Keys past the SST's range land in new runs; two flushes make sure the
     * first flush's save has finished (the background thread is serial). */
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(akv_put(db, k, key(k, 10 * BASE_KEYS + (uint64_t)r), v, 1), AKV_OK);
        cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    }
    akv_filter *after = read_filter(path);
    for (uint64_t i = 0; i < BASE_KEYS; i++) {
        size_t kl = key(k, 2 * i);
        cr_assert(akv_filter_may_contain(after, akv_hash_key(k, kl, 42)), "saved filter lost key %llu",
                  (unsigned long long)(2 * i));
    }
    /* (A rare wasted probe is the memtable guard's; count the SST's own.) */
    size_t was = 0, still = 0;
    for (size_t i = 0; i < n; i++) {
        size_t kl = key(k, pool[i]);
        akv_hash h = akv_hash_key(k, kl, 42);
        if (akv_filter_may_contain(before, h)) {
            was++;
            still += akv_filter_may_contain(after, h);
        }
    }
    cr_assert_geq(was, n * 9 / 10, "only %zu of %zu wasted probes were the SST filter's", was, n);
    cr_assert_leq(still, was / 50, "%zu of %zu adapted keys still pass the saved filter", still, was);
    akv_filter_destroy(before);
    akv_filter_destroy(after);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    rmrf(dir);
}
