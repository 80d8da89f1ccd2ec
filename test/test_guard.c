/*
 * test_guard.c — the memtable guard with a deliberately tiny dynamic kind:
 * inserts past its capacity fail, the engine must then probe memtables
 * directly (never a false negative) and rebuild the guard at a flush.
 * Also checks that a flush removes exactly the keys it inserted.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"

#define TINY_CAP 300

/* An exact multiset of hashes with a hard capacity. */
typedef struct tiny {
    akv_filter base;
    size_t n;
    akv_hash h[TINY_CAP];
} tiny;

extern const akv_filter_kind tiny_kind;

static int t_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)p;
    (void)neg;
    (void)n_neg;
    tiny *t = calloc(1, sizeof *t);
    if (!t)
        return AKV_ENOMEM;
    t->base.kind = &tiny_kind;
    *out = &t->base;
    return AKV_OK;
}

static int t_insert(akv_filter *f, akv_hash h)
{
    tiny *t = (tiny *)f;
    if (t->n == TINY_CAP)
        return AKV_EFULL;
    t->h[t->n++] = h;
    f->n_keys++;
    return AKV_OK;
}

static int t_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK;
}

static bool t_may(const akv_filter *f, akv_hash h)
{
    const tiny *t = (const tiny *)f;
    for (size_t i = 0; i < t->n; i++)
        if (t->h[i].hi == h.hi && t->h[i].lo == h.lo)
            return true;
    return false;
}

static int t_remove(akv_filter *f, akv_hash h)
{
    tiny *t = (tiny *)f;
    for (size_t i = 0; i < t->n; i++)
        if (t->h[i].hi == h.hi && t->h[i].lo == h.lo) {
            t->h[i] = t->h[--t->n];
            f->n_keys--;
            return AKV_OK;
        }
    return AKV_NOTFOUND;
}

static size_t t_mem(const akv_filter *f)
{
    (void)f;
    return sizeof(tiny);
}

static int t_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    (void)f;
    (void)buf;
    *len = 0;
    return AKV_OK;
}

static int t_load(const uint8_t *buf, size_t len, uint16_t v, akv_filter **out)
{
    (void)buf;
    (void)len;
    (void)v;
    return t_create(NULL, NULL, 0, out);
}

static void t_destroy(akv_filter *f)
{
    free(f);
}

const akv_filter_kind tiny_kind = {
    .name = "tinyset",
    .id = 1777,
    .payload_version = 1,
    .flags = AKV_FK_DYNAMIC,
    .summary = "test: exact multiset with a hard capacity",
    .create = t_create,
    .add = t_insert,
    .finish = t_finish,
    .may_contain = t_may,
    .memory_bytes = t_mem,
    .save = t_save,
    .load = t_load,
    .destroy = t_destroy,
    .insert = t_insert,
    .remove = t_remove,
};

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void setup(void)
{
    int rc = akv_filter_register(&tiny_kind);
    cr_assert(rc == AKV_OK || rc == AKV_EEXIST);
}

static size_t key(char *b, unsigned i)
{
    return (size_t)snprintf(b, 32, "g-%06u", i);
}

static void check_upto(akv_db *db, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        char k[32];
        size_t kl = key(k, i);
        void *v = NULL;
        size_t vl = 0;
        cr_assert_eq(akv_get(db, k, kl, &v, &vl), AKV_OK, "key %u of %u not found", i, n);
        cr_assert_eq(vl, kl);
        cr_assert(memcmp(v, k, kl) == 0);
        akv_free(v);
    }
}

Test(guard, overflowing_guard_never_hides_a_key)
{
    setup();
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvguard-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.slot_policy = "mem=tinyset,l0=bloom";
    o.memtable_bytes = 16 << 10; /* ~700 small entries: more than the guard holds */
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    unsigned n = 0;
    for (int round = 0; round < 6; round++) {
        for (unsigned j = 0; j < 500; j++, n++) {
            char k[32];
            size_t kl = key(k, n);
            cr_assert_eq(akv_put(db, k, kl, k, kl), AKV_OK, "%s", akv_errmsg());
        }
        check_upto(db, n);
        if (round % 2 == 1)
            cr_assert_eq(akv_flush(db), AKV_OK);
    }
    /* after a flush the guard is rebuilt and filters again */
    cr_assert_eq(akv_flush(db), AKV_OK);
    for (unsigned j = 0; j < 50; j++, n++) {
        char k[32];
        size_t kl = key(k, n);
        cr_assert_eq(akv_put(db, k, kl, k, kl), AKV_OK);
    }
    akv_slot_info *rows;
    size_t nr;
    cr_assert_eq(akv_slots(db, &rows, &nr), AKV_OK);
    uint64_t filtered0 = rows[0].filtered;
    akv_free(rows);
    for (unsigned i = 0; i < 100; i++)
        cr_assert_eq(akv_get(db, "absent", 6, NULL, NULL), AKV_NOTFOUND);
    cr_assert_eq(akv_slots(db, &rows, &nr), AKV_OK);
    cr_assert_str_eq(rows[0].kind, "tinyset");
    cr_assert_geq(rows[0].filtered - filtered0, 100, "the rebuilt guard filters again");
    akv_free(rows);
    check_upto(db, n);
    cr_assert_eq(akv_close(db), AKV_OK);
    /* reopen: the guard is rebuilt from the WAL's memtable */
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    check_upto(db, n);
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* The first guard is a guess from memtable_bytes; after the first flush it
 * is resized from the key count actually seen. With large values the guess
 * is far too big, and the guard must shrink (and keep answering right). */
Test(guard, resized_from_observed_memtable_keys)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvguard-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.slot_policy = "mem=sscf,l0+=blocked";
    o.memtable_bytes = 4 << 20;
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akv_stats before, after;
    cr_assert_eq(akv_get_stats(db, &before), AKV_OK);
    static char val[4096];
    unsigned n = 0;
    for (; n < 600; n++) {
        char k[32];
        size_t kl = key(k, n);
        cr_assert_eq(akv_put(db, k, kl, val, sizeof val), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK);
    cr_assert_eq(akv_get_stats(db, &after), AKV_OK);
    cr_assert_lt(after.filter_bytes * 2, before.filter_bytes, "guard %llu -> %llu bytes",
                 (unsigned long long)before.filter_bytes, (unsigned long long)after.filter_bytes);
    for (unsigned i = 0; i < n; i++) {
        char k[32];
        size_t kl = key(k, i), vl;
        void *v;
        cr_assert_eq(akv_get(db, k, kl, &v, &vl), AKV_OK, "key %u lost", i);
        cr_assert_eq(vl, sizeof val);
        akv_free(v);
    }
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
