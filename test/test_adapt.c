/*
 * test_adapt.c — the feedback loop under attack: an absent key that cost a
 * wasted probe must stop costing one when it is replayed, in both layouts,
 * while writers keep flushing new runs, even when an SST's adaptive filter
 * was built nearly full and the fresh false positives use up its room.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/adaptkv.h"

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

static void attack(akv_layout layout)
{
    char dir[512];
    tmpdir(dir, sizeof dir);
    akv_options o;
    akv_options_init(&o);
    o.layout = layout;
    o.seed = 42;
    o.slot_policy = "mem=sscf,l0+=aqf";
    o.memtable_bytes = 8u << 20;
    o.block_cache_bytes = 1u << 20;
    /* keep the runs as flushed: no compaction rebuilds a filter here */
    o.l0_compaction_trigger = 64;
    o.l0_stall_runs = 64;
    o.log = quiet;
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
