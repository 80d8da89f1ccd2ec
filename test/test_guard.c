/*
 * test_guard.c — the memtable guard with a deliberately tiny dynamic kind:
 * inserts past its capacity fail, the engine must then probe memtables
 * directly (never a false negative) and rebuild the guard at a flush.
 * Also checks that a flush removes exactly the keys it inserted, and that
 * the guard is sized by the keys in the memtables.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
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

static akv_slot_info guard_row(akv_db *db)
{
    akv_slot_info *rows;
    size_t nr;
    cr_assert_eq(akv_slots(db, &rows, &nr), AKV_OK);
    cr_assert(nr > 0 && rows[0].level == -1);
    akv_slot_info g = rows[0];
    akv_free(rows);
    return g;
}

/* The guard is sized by the keys the memtables hold, not by memtable_bytes:
 * small when they are empty, grown (right away, never "broken") as they
 * fill, after a flush sized for 5/4 of the keys the flushed memtable held
 * (one size while the next memtable fills), and right all along. */
Test(guard, sized_by_the_memtable_keys)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvguard-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.slot_policy = "mem=sscf,l0+=blocked";
    o.memtable_bytes = 64 << 20;
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    uint64_t empty = st.filter_bytes;
    /* 4096 keys at 30 bits: 15 KiB, whatever memtable_bytes says */
    cr_assert_leq(empty, 20u << 10, "an empty guard takes %llu bytes", (unsigned long long)empty);
    unsigned n = 0;
    for (; n < 50000; n++) {
        char k[32];
        size_t kl = key(k, n);
        cr_assert_eq(akv_put(db, k, kl, k, kl), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    /* capacity between the keys and four times them: 30 bits a key */
    cr_assert(st.filter_bytes >= 50000ull * 30 / 8 && st.filter_bytes <= 4 * 50000ull * 30 / 8,
              "50,000 keys, guard %llu bytes", (unsigned long long)st.filter_bytes);
    akv_slot_info g0 = guard_row(db);
    for (unsigned i = 0; i < 1000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "absent-%u", i);
        cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_NOTFOUND);
    }
    akv_slot_info g1 = guard_row(db);
    /* it grew instead of breaking: absent keys are still filtered */
    cr_assert_geq(g1.filtered - g0.filtered, 950, "%llu of 1000 filtered",
                  (unsigned long long)(g1.filtered - g0.filtered));
    check_upto(db, n);
    cr_assert_eq(akv_flush(db), AKV_OK);
    akv_slot_info g2 = guard_row(db);
    cr_assert_eq(g2.keys, 0);
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    /* 62,500 keys at 30 bits a key */
    cr_assert(st.guard_filter_bytes >= 62500ull * 30 / 8 * 9 / 10 &&
                  st.guard_filter_bytes <= 62500ull * 30 / 8 * 3 / 2,
              "after the flush of 50,000 keys the guard takes %llu bytes",
              (unsigned long long)st.guard_filter_bytes);
    check_upto(db, n);
    cr_assert_eq(akv_close(db), AKV_OK);
    /* reopen with the memtable in the WAL: the guard grows while it is re-read */
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    for (unsigned i = n; i < n + 20000; i++) {
        char k[32];
        size_t kl = key(k, i);
        cr_assert_eq(akv_put(db, k, kl, k, kl), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    check_upto(db, n + 20000);
    g0 = guard_row(db);
    for (unsigned i = 0; i < 1000; i++) {
        char k[32];
        size_t kl = (size_t)snprintf(k, sizeof k, "absent-%u", i);
        cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_NOTFOUND);
    }
    g1 = guard_row(db);
    cr_assert_geq(g1.filtered - g0.filtered, 950);
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* ---- an exact multiset with no capacity: what a flush removes ------------ */

#define EXACT_BUCKETS 65536

typedef struct exact_node {
    akv_hash h;
    unsigned count;
    struct exact_node *next;
} exact_node;

typedef struct exact {
    akv_filter base;
    pthread_mutex_t mu;
    exact_node *b[EXACT_BUCKETS];
} exact;

/* Removals of a hash the set did not hold: in a counting filter, a count
 * taken from other keys, so a false negative waiting to happen. */
static _Atomic unsigned long exact_bad_removes;

extern const akv_filter_kind exact_kind;

static int e_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)p;
    (void)neg;
    (void)n_neg;
    exact *e = calloc(1, sizeof *e);
    if (!e)
        return AKV_ENOMEM;
    pthread_mutex_init(&e->mu, NULL);
    e->base.kind = &exact_kind;
    *out = &e->base;
    return AKV_OK;
}

static exact_node **e_find(exact *e, akv_hash h)
{
    exact_node **p = &e->b[h.lo % EXACT_BUCKETS];
    while (*p && ((*p)->h.hi != h.hi || (*p)->h.lo != h.lo))
        p = &(*p)->next;
    return p;
}

static int e_insert(akv_filter *f, akv_hash h)
{
    exact *e = (exact *)f;
    pthread_mutex_lock(&e->mu);
    exact_node **p = e_find(e, h);
    if (!*p) {
        *p = calloc(1, sizeof **p);
        if (!*p) {
            pthread_mutex_unlock(&e->mu);
            return AKV_ENOMEM;
        }
        (*p)->h = h;
    }
    (*p)->count++;
    f->n_keys++;
    pthread_mutex_unlock(&e->mu);
    return AKV_OK;
}

static bool e_may(const akv_filter *f, akv_hash h)
{
    exact *e = (exact *)f;
    pthread_mutex_lock(&e->mu);
    bool yes = *e_find(e, h) != NULL;
    pthread_mutex_unlock(&e->mu);
    return yes;
}

static int e_remove(akv_filter *f, akv_hash h)
{
    exact *e = (exact *)f;
    pthread_mutex_lock(&e->mu);
    exact_node **p = e_find(e, h);
    int rc = AKV_OK;
    if (!*p) {
        atomic_fetch_add(&exact_bad_removes, 1);
        rc = AKV_NOTFOUND;
    } else if (--(*p)->count == 0) {
        exact_node *dead = *p;
        *p = dead->next;
        free(dead);
    }
    if (rc == AKV_OK)
        f->n_keys--;
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static size_t e_mem(const akv_filter *f)
{
    return (size_t)f->n_keys * sizeof(exact_node) + sizeof(exact);
}

static int e_load(const uint8_t *buf, size_t len, uint16_t v, akv_filter **out)
{
    (void)buf;
    (void)len;
    (void)v;
    return e_create(NULL, NULL, 0, out);
}

static void e_destroy(akv_filter *f)
{
    exact *e = (exact *)f;
    for (size_t i = 0; i < EXACT_BUCKETS; i++)
        while (e->b[i]) {
            exact_node *n = e->b[i];
            e->b[i] = n->next;
            free(n);
        }
    pthread_mutex_destroy(&e->mu);
    free(e);
}

const akv_filter_kind exact_kind = {
    .name = "exactset",
    .id = 1778,
    .payload_version = 1,
    .flags = AKV_FK_DYNAMIC,
    .summary = "test: exact multiset, counts removals of what it does not hold",
    .create = e_create,
    .add = e_insert,
    .finish = t_finish,
    .may_contain = e_may,
    .memory_bytes = e_mem,
    .save = t_save,
    .load = e_load,
    .destroy = e_destroy,
    .insert = e_insert,
    .remove = e_remove,
};

typedef struct put_loop {
    akv_db *db;
    unsigned from, n;
    _Atomic unsigned done; /* keys [from, from + done) are written */
} put_loop;

static void *put_main(void *arg)
{
    put_loop *w = arg;
    for (unsigned i = 0; i < w->n; i++) {
        char k[32];
        size_t kl = key(k, w->from + i);
        if (akv_put(w->db, k, kl, k, kl) != AKV_OK)
            break;
        atomic_store(&w->done, i + 1);
    }
    return NULL;
}

/* A flushed memtable of more than one chunk of hashes leaves the guard a
 * chunk at a time, with the writer lock let go in between, while two
 * writers fill the next memtables and the guard grows under them: every
 * hash it removes is one it holds, every key written stays found, and once
 * all is flushed the guard holds nothing. */
Test(guard, a_flush_removes_its_keys_a_chunk_at_a_time_under_writers)
{
    int rc = akv_filter_register(&exact_kind);
    cr_assert(rc == AKV_OK || rc == AKV_EEXIST);
    atomic_store(&exact_bad_removes, 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/akvguard-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(dir));
    akv_options o;
    akv_options_init(&o);
    o.slot_policy = "mem=exactset,l0+=bloom";
    o.memtable_bytes = 512 << 10; /* ~14,000 keys a memtable: three chunks and more */
    o.log = quiet;
    akv_db *db;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { PER_WRITER = 60000 };
    put_loop w[2] = {{db, 0, PER_WRITER, 0}, {db, PER_WRITER, PER_WRITER, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, put_main, &w[i]), 0);
    /* Meanwhile: flushes, and reads of what is written so far. */
    for (int round = 0;
         round < 200 && (atomic_load(&w[0].done) < PER_WRITER || atomic_load(&w[1].done) < PER_WRITER);
         round++) {
        cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
        for (int t = 0; t < 2; t++) {
            unsigned done = atomic_load(&w[t].done);
            for (unsigned i = 0; i < done; i += 97) {
                char k[32];
                size_t kl = key(k, w[t].from + i);
                cr_assert_eq(akv_get(db, k, kl, NULL, NULL), AKV_OK, "key %u written, not found",
                             w[t].from + i);
            }
        }
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&w[0].done) + atomic_load(&w[1].done), 2 * PER_WRITER, "%s", akv_errmsg());
    cr_assert_eq(akv_flush(db), AKV_OK);
    check_upto(db, 2 * PER_WRITER);
    cr_assert_eq(atomic_load(&exact_bad_removes), 0, "%lu hashes removed that the guard did not hold",
                 atomic_load(&exact_bad_removes));
    akv_slot_info g = guard_row(db);
    cr_assert_str_eq(g.kind, "exactset");
    cr_assert_eq(g.keys, 0, "after the last flush the guard holds %llu keys", (unsigned long long)g.keys);
    cr_assert_eq(akv_close(db), AKV_OK);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
