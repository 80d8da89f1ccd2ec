#include "tworuns.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kvmodel.h"

void akvt_capture(void *arg, const char *msg)
{
    akvt_logbuf *lb = arg;
    pthread_mutex_lock(&lb->mu);
    lb->n++;
    int k = snprintf(lb->text + lb->len, sizeof lb->text - lb->len, "%s\n", msg);
    if (k > 0 && lb->len + (size_t)k < sizeof lb->text)
        lb->len += (size_t)k;
    pthread_mutex_unlock(&lb->mu);
}

void akvt_log_reset(akvt_logbuf *lb)
{
    pthread_mutex_lock(&lb->mu);
    lb->len = 0;
    lb->n = 0;
    lb->text[0] = 0;
    pthread_mutex_unlock(&lb->mu);
}

void akvt_opts(akv_options *o, akvt_logbuf *lb, akv_layout layout, const char *policy)
{
    akv_options_init(o);
    o->layout = layout;
    o->slot_policy = policy;
    o->memtable_bytes = 1 << 20;    /* only explicit flushes make runs */
    o->sst_target_bytes = 16 << 10; /* several SSTs per run */
    o->block_cache_bytes = 1 << 20;
    o->l0_compaction_trigger = 8;
    o->l0_stall_runs = 16;
    o->rest_compaction = 0; /* the runs stay as flushed */
    o->seed = 0x7e57ab1e;
    o->log = akvt_capture;
    o->log_arg = lb;
}

akv_db *akvt_open_ok(const char *dir, const akv_options *o)
{
    akv_db *db = NULL;
    int rc = akv_open(dir, o, &db);
    cr_assert_eq(rc, AKV_OK, "open %s: %s (%s)", dir, akv_strerror(rc), akv_errmsg());
    return db;
}

size_t akvt_key_name(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "akvt_key_name-%07u", i);
}

void akvt_write_v1(akv_db *db)
{
    char k[32], v[64];
    for (unsigned i = 0; i < AKVT_NKEYS; i++) {
        int vl = snprintf(v, sizeof v, "v1-%u", i);
        cr_assert_eq(akv_put(db, k, akvt_key_name(k, i), v, (size_t)vl), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "flush: %s", akv_errmsg());
}

void akvt_write_v2(akv_db *db)
{
    char k[32], v[64];
    for (unsigned i = 0; i < AKVT_NKEYS; i++) {
        size_t kl = akvt_key_name(k, i);
        int vl = snprintf(v, sizeof v, "v2-%u", i);
        int rc = i % 10 == 0 ? akv_delete(db, k, kl) : akv_put(db, k, kl, v, (size_t)vl);
        cr_assert_eq(rc, AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "flush: %s", akv_errmsg());
}

/* The newest run's id (run ids grow; the second flush made the newest). */
uint64_t akvt_newest_run(akv_db *db)
{
    akv_slot_info *rows;
    size_t n;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    uint64_t id = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].level >= 0 && rows[i].run > id)
            id = rows[i].run;
    akv_free(rows);
    return id;
}

/* Two runs (see the top of the file); returns the newer run's id. */
uint64_t akvt_two_runs(const char *dir, const akv_options *o)
{
    akv_db *db = akvt_open_ok(dir, o);
    akvt_write_v1(db);
    akvt_write_v2(db);
    uint64_t id = akvt_newest_run(db);
    cr_assert_eq(akv_close(db), AKV_OK);
    return id;
}

uint64_t akvt_two_runs_in_tmp(char *dir, size_t cap, const char *tag, akv_options *o, akvt_logbuf *lb,
                              akv_layout layout)
{
    akvt_tmpdir(dir, cap, tag);
    akvt_opts(o, lb, layout, NULL);
    return akvt_two_runs(dir, o);
}

/* Compare every akvt_key_name with what run 2 says. */
akvt_tally akvt_check_v2(akv_db *db)
{
    akvt_tally t = {0, 0, 0, -1};
    char k[32], v[64];
    for (unsigned i = 0; i < AKVT_NKEYS; i++) {
        size_t kl = akvt_key_name(k, i);
        int vl = snprintf(v, sizeof v, "v2-%u", i);
        void *got = NULL;
        size_t gl = 0;
        int rc = akv_get(db, k, kl, &got, &gl);
        bool ok =
            i % 10 == 0 ? rc == AKV_NOTFOUND : rc == AKV_OK && gl == (size_t)vl && memcmp(got, v, gl) == 0;
        if (rc == AKV_EIO || rc == AKV_ECORRUPT)
            t.eio++;
        else if (ok)
            t.right++;
        else {
            if (t.first_wrong < 0)
                t.first_wrong = (int)i;
            t.wrong++;
        }
        akv_free(got);
    }
    return t;
}

void akvt_expect_all_right(akv_db *db, const char *what)
{
    akvt_tally t = akvt_check_v2(db);
    cr_assert_eq(t.wrong, 0,
                 "%s: %u wrong answers (lost, stale or resurrected; first akvt_key_name %d), %u errors", what,
                 t.wrong, t.first_wrong, t.eio);
    cr_assert_eq(t.eio, 0, "%s: %u lookups failed", what, t.eio);
}
