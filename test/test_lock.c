/*
 * test_lock.c — one handle at a time: a database another handle holds, in
 * this process or another, is refused with AKV_EBUSY by open and by repair
 * before either reads, moves or writes anything in it (docs/reliability.md,
 * "One handle at a time").
 *
 * Before the lock a second opener ran open's read-only checks against a
 * database in the middle of a commit and was told it was corrupt, and a
 * repair moved live SST files the writer's MANIFEST did not record yet
 * into lost/, then failed on RocksDB's lock with the damage done.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "support/childproc.h"
#include "support/damage.h"
#include "support/kvmodel.h"

/* Small memtables and SSTs: the writer flushes and commits all the time. */
static void busy_opts(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 16 << 10;
    o->sst_target_bytes = 8 << 10;
    o->block_cache_bytes = 1 << 20;
    o->seed = 0x10c4ed;
}

static size_t key_of(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "lock-key-%07u", i);
}

/* ---- the writer child ------------------------------------------------------ */

/* Opens DIR, says so by creating READY, then writes synced puts of keys
 * 0, 1, 2, ... ("v<i>", 100 bytes), writing the count acknowledged so far
 * to fd after each, until killed. */
static void writer_main(const char *dir, akv_layout layout, int fd, const char *ready)
{
    alarm(120); /* never outlives a test that lost track of it */
    akv_options o;
    busy_opts(&o, layout);
    o.sync = 1;
    akv_db *db = NULL;
    if (akv_open(dir, &o, &db) != AKV_OK)
        _exit(3);
    FILE *f = fopen(ready, "w");
    if (!f)
        _exit(4);
    fclose(f);
    char k[32], v[128];
    for (unsigned i = 0;; i++) {
        memset(v, 'a' + (int)(i % 26), sizeof v);
        int vl = snprintf(v, sizeof v, "v%u", i);
        v[vl] = '.';
        if (akv_put(db, k, key_of(k, i), v, 100) != AKV_OK)
            _exit(7);
        unsigned done = i + 1;
        if (write(fd, &done, sizeof done) != sizeof done)
            _exit(8);
    }
}

__attribute__((constructor)) static void lock_child_entry(void)
{
    const char *e = getenv("AKV_LOCK_CHILD");
    if (!e)
        return;
    int layout, fd;
    char dir[512], ready[600];
    if (sscanf(e, "%d %d %511s %599s", &layout, &fd, dir, ready) != 4)
        _exit(5);
    writer_main(dir, (akv_layout)layout, fd, ready);
}

typedef struct writer {
    pid_t pid;
    int fd; /* read end: acknowledged counts */
} writer;

static writer start_writer(const char *dir, akv_layout layout)
{
    char ready[600], env[1200];
    snprintf(ready, sizeof ready, "%s.ready", dir);
    unlink(ready);
    int p[2];
    cr_assert_eq(pipe(p), 0); /* inherited: no FD_CLOEXEC */
    snprintf(env, sizeof env, "AKV_LOCK_CHILD=%d %d %s %s", (int)layout, p[1], dir, ready);
    const char *add[] = {env, NULL};
    writer w = {.pid = akvt_spawn_self(add), .fd = p[0]};
    close(p[1]);
    struct stat st;
    double until = akvt_now() + 60;
    while (stat(ready, &st) != 0) {
        int status;
        cr_assert_eq(waitpid(w.pid, &status, WNOHANG), 0, "the writer ended before it opened (status %d)",
                     status);
        cr_assert_lt(akvt_now(), until, "the writer did not open in 60 s");
        usleep(2000);
    }
    unlink(ready);
    return w;
}

/* SIGKILL the writer; the number of puts it acknowledged. */
static unsigned stop_writer(writer *w)
{
    kill(w->pid, SIGKILL);
    int status;
    waitpid(w->pid, &status, 0);
    unsigned acked = 0, x;
    while (read(w->fd, &x, sizeof x) == sizeof x)
        acked = x;
    close(w->fd);
    return acked;
}

/* Wait until the writer acknowledged at least n puts. */
static unsigned wait_acks(writer *w, unsigned n)
{
    unsigned acked = 0, x;
    while (acked < n) {
        cr_assert_eq(read(w->fd, &x, sizeof x), (ssize_t)sizeof x, "the writer stopped");
        acked = x;
    }
    return acked;
}

/* Every acknowledged put reads back. */
static void expect_acked(const char *dir, akv_layout layout, unsigned acked)
{
    akv_options o;
    busy_opts(&o, layout);
    akv_db *db = NULL;
    int rc = akv_open(dir, &o, &db);
    cr_assert_eq(rc, AKV_OK, "open after the writer: %s (%s)", akv_strerror(rc), akv_errmsg());
    char k[32], want[16];
    for (unsigned i = 0; i < acked; i++) {
        size_t vl = 0;
        void *v = NULL;
        rc = akv_get(db, k, key_of(k, i), &v, &vl);
        cr_assert_eq(rc, AKV_OK, "acknowledged key %u: %s (%s)", i, akv_strerror(rc), akv_errmsg());
        int wl = snprintf(want, sizeof want, "v%u.", i);
        cr_assert(vl == 100 && memcmp(v, want, (size_t)wl) == 0, "key %u has a wrong value", i);
        akv_free(v);
    }
    cr_assert_eq(akv_close(db), AKV_OK);
}

/* ---- the tests ------------------------------------------------------------- */

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static int repair_quietly(const char *dir, akv_repair_report *rep)
{
    akv_options o;
    akv_options_init(&o);
    o.layout = AKV_LAYOUT_AUTO;
    o.log = quiet;
    return akv_repair(dir, &o, rep);
}

/* Case 5 within one process: RocksDB's message was "lock hold by current
 * process" (AKV_EIO), after the read-only checks had run. */
static void second_handle_in_process(akv_layout layout)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "lock-inproc");
    akv_options o;
    busy_opts(&o, layout);
    akv_db *db = NULL, *db2 = (akv_db *)1;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32];
    for (unsigned i = 0; i < 500; i++)
        cr_assert_eq(akv_put(db, k, key_of(k, i), "x", 1), AKV_OK);
    cr_assert_eq(akv_flush(db), AKV_OK);
    int rc = akv_open(dir, &o, &db2);
    cr_assert_eq(rc, AKV_EBUSY, "a second open in the same process gave %s (%s)", akv_strerror(rc),
                 akv_errmsg());
    cr_assert_null(db2);
    cr_assert_not_null(strstr(akv_errmsg(), "in use"), "message: %s", akv_errmsg());
    akv_repair_report rep;
    rc = repair_quietly(dir, &rep);
    cr_assert_eq(rc, AKV_EBUSY, "a repair of an open database gave %s (%s)", akv_strerror(rc), akv_errmsg());
    akv_free(rep.text);
    char lost[600];
    snprintf(lost, sizeof lost, "%s/lost", dir);
    cr_assert(access(lost, F_OK) != 0, "the refused repair made %s", lost);
    /* The first handle is unharmed, and the lock goes with it. */
    size_t vl;
    void *v = NULL;
    cr_assert_eq(akv_get(db, k, key_of(k, 7), &v, &vl), AKV_OK);
    akv_free(v);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(akv_open(dir, &o, &db2), AKV_OK, "open after close: %s", akv_errmsg());
    cr_assert_eq(akv_close(db2), AKV_OK);
    cr_assert_eq(repair_quietly(dir, &rep), AKV_OK, "repair after close: %s", akv_errmsg());
    cr_assert_eq(rep.entries_lost, 0);
    akv_free(rep.text);
    akvt_rmrf(dir);
}

Test(lock, second_handle_in_one_process_is_busy_hash)
{
    second_handle_in_process(AKV_LAYOUT_HASH);
}

Test(lock, second_handle_in_one_process_is_busy_ordered)
{
    second_handle_in_process(AKV_LAYOUT_ORDERED);
}

/* Case 5: an opener of a database another process is writing (flushing and
 * committing all the time) always gets AKV_EBUSY, never AKV_ECORRUPT. */
static void opener_of_a_busy_database(akv_layout layout)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "lock-opener");
    writer w = start_writer(dir, layout);
    akv_options o;
    busy_opts(&o, layout);
    for (int t = 0; t < 40; t++) {
        wait_acks(&w, (unsigned)(t + 1) * 20);
        akv_db *db = NULL;
        int rc = akv_open(dir, &o, &db);
        if (rc == AKV_OK)
            akv_close(db);
        cr_assert_eq(rc, AKV_EBUSY, "try %d: an open of a database another process writes gave %s (%s)", t,
                     akv_strerror(rc), akv_errmsg());
    }
    unsigned acked = stop_writer(&w);
    /* The kill released the lock. */
    expect_acked(dir, layout, acked);
    akvt_rmrf(dir);
}

Test(lock, opener_of_a_database_another_process_writes_is_busy_hash)
{
    opener_of_a_busy_database(AKV_LAYOUT_HASH);
}

Test(lock, opener_of_a_database_another_process_writes_is_busy_ordered)
{
    opener_of_a_busy_database(AKV_LAYOUT_ORDERED);
}

/* Case 1: a repair of a database another process is writing gets AKV_EBUSY
 * and leaves it untouched: nothing is set aside, and after the writer dies
 * the database opens with every acknowledged put. */
static void repair_of_a_busy_database(akv_layout layout)
{
    char dir[512], lost[600];
    akvt_tmpdir(dir, sizeof dir, "lock-repair");
    snprintf(lost, sizeof lost, "%s/lost", dir);
    writer w = start_writer(dir, layout);
    for (int t = 0; t < 20; t++) {
        wait_acks(&w, (unsigned)(t + 1) * 40);
        akv_repair_report rep;
        int rc = repair_quietly(dir, &rep);
        cr_assert_eq(rc, AKV_EBUSY, "try %d: a repair of a database another process writes gave %s (%s)", t,
                     akv_strerror(rc), akv_errmsg());
        cr_assert_eq(rep.files_set_aside, 0);
        akv_free(rep.text);
        cr_assert(access(lost, F_OK) != 0, "try %d: the refused repair made %s", t, lost);
    }
    unsigned acked = stop_writer(&w);
    expect_acked(dir, layout, acked);
    akvt_rmrf(dir);
}

Test(lock, repair_of_a_database_another_process_writes_is_busy_hash)
{
    repair_of_a_busy_database(AKV_LAYOUT_HASH);
}

Test(lock, repair_of_a_database_another_process_writes_is_busy_ordered)
{
    repair_of_a_busy_database(AKV_LAYOUT_ORDERED);
}
