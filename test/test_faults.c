/*
 * test_faults.c — injected I/O faults: one file-system call fails, the
 * engine reports it, stays consistent, and the database reopens with every
 * acknowledged write.
 *
 * A child process runs a fixed workload with the fault shim preloaded
 * (test/shim/faultfs.c, LD_PRELOAD): create, sync puts, deletes and batches,
 * flush, lookups of absent keys (adaptations, miss log), more writes, a
 * flush that saves the adapted filters, a full compaction, close (adapted
 * filters and the miss log saved), reopen, writes, flush, close. The shim
 * counts the calls that write under the database directory (open for
 * writing, write, pwrite, writev, fsync, fdatasync, sync_file_range,
 * fallocate, ftruncate, rename, link) and fails the N-th with EIO or ENOSPC.
 *
 * A dry run (no fault) traces every counted call; the sweep then runs one
 * child per chosen N: for each phase and each kind of call (the call and its
 * file's name without numbers), its first and its last occurrence. Faults
 * alternate EIO and ENOSPC; every 16th is permanent (EIO: every later call
 * fails too). RocksDB's info LOG is never failed (see faultfs.c). For each N:
 *   - the child neither crashes nor hangs (bounded wait; the one exception,
 *     RocksDB 7.8 aborting on its WAL writer's assertion after a fault on
 *     one of its files, is counted, and the checks after recovery still run);
 *   - some API call returns an error or the engine logs a warning, unless
 *     the failed call wrote something RocksDB treats as optional by design
 *     (preallocation, the OPTIONS file: must_report below);
 *   - in the child, after the fault, every lookup returns an allowed value,
 *     NOTFOUND only where allowed, or an error (never a wrong answer);
 *   - after the fault clears (the parent, without the shim, reopens) every
 *     key holds its last acknowledged value, or the value of a write that
 *     failed after it (a failed write may or may not have reached the WAL);
 *     keys never written are absent; the ordered layout's scan agrees with
 *     the lookups; and (every 4th N) the database takes a write and compacts.
 * And over the sweep: 90% of the faults were injected (the calls are not
 * numbered identically in every run: background threads), and every phase
 * whose own calls do I/O (not the lookup phases) had a fault reported.
 * AKV_FAULT_STRIDE=K sweeps every K-th candidate only (default 1);
 * AKV_FAULT_ONLY=N,N,... only those candidates (to reproduce one);
 * AKV_FAULT_VERBOSE=1 prints each N's outcome.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "support/childproc.h"
#include "support/filter_props.h"
#include "support/kvmodel.h"
#include "util/order.h"

#define FK            400u /* keys */
#define MAX_ITEMS     8u   /* per batch */
#define MAX_SEQ       (1u << 14)
#define ABSENT        (-1)
#define CHILD_SECONDS 120           /* a child that takes longer is hung */
#define AFTER_KEY     "after-fault" /* written by the check after recovery */

enum { OP_PUT = 1, OP_DEL };
enum { R_WRITE = 1, R_CALL, R_END };
enum { CALL_OPEN = 1, CALL_FLUSH, CALL_COMPACT, CALL_CLOSE, CALL_HINT };

typedef struct item {
    uint32_t op, key;
    int64_t seq;
} item;

typedef struct frec {
    uint32_t type, call, n, pad;
    int32_t rc, warnings;
    int64_t extra;
    item items[MAX_ITEMS];
} frec;

_Static_assert(sizeof(frec) < 512, "records must be written atomically to a pipe");

/* ---- keys, values, the model ---------------------------------------------- */

static size_t key_of(uint32_t k, char *buf)
{
    return (size_t)snprintf(buf, 32, "fault-key-%04u", k);
}

static size_t value_of(uint32_t k, int64_t seq, char *buf)
{
    int n = snprintf(buf, 64, "k=%u seq=%lld ", k, (long long)seq);
    size_t len = 30 + (size_t)(seq * 7919 % 200);
    for (size_t i = (size_t)n; i < len; i++)
        buf[i] = (char)('a' + (seq + (int64_t)i) % 26);
    return len > (size_t)n ? len : (size_t)n;
}

/* What each key may hold: its last acknowledged value, or the value of a
 * write that failed after that acknowledgement (it may have reached the WAL
 * before the failing call). */
typedef struct fmodel {
    int64_t acked[FK];           /* seq of the acknowledged value, or ABSENT */
    int64_t ack_seq[FK];         /* seq of the acknowledged operation on the key (-1: none) */
    bool del_maybe[FK];          /* a delete failed after the acknowledgement */
    int32_t failed_put[MAX_SEQ]; /* key of a failed put with this seq, or -1 */
    unsigned acked_ops, failed_ops;
} fmodel;

static void model_init(fmodel *m)
{
    for (uint32_t k = 0; k < FK; k++) {
        m->acked[k] = ABSENT;
        m->ack_seq[k] = -1;
        m->del_maybe[k] = false;
    }
    memset(m->failed_put, 0xff, sizeof m->failed_put);
    m->acked_ops = m->failed_ops = 0;
}

static void model_write(fmodel *m, const frec *r)
{
    for (uint32_t i = 0; i < r->n; i++) {
        const item *it = &r->items[i];
        cr_assert_lt(it->key, FK);
        cr_assert(it->seq >= 0 && it->seq < (int64_t)MAX_SEQ);
        if (r->rc == AKV_OK) {
            m->acked[it->key] = it->op == OP_PUT ? it->seq : ABSENT;
            m->ack_seq[it->key] = it->seq;
            m->del_maybe[it->key] = false;
        } else if (it->op == OP_PUT) {
            m->failed_put[it->seq] = (int32_t)it->key;
        } else {
            m->del_maybe[it->key] = true;
        }
    }
    if (r->rc == AKV_OK)
        m->acked_ops++;
    else
        m->failed_ops++;
}

static bool model_allows(const fmodel *m, uint32_t k, int64_t seq)
{
    if (seq == ABSENT)
        return m->acked[k] == ABSENT || m->del_maybe[k];
    if (seq == m->acked[k])
        return true;
    return seq > m->ack_seq[k] && seq < (int64_t)MAX_SEQ && m->failed_put[seq] == (int32_t)k;
}

/* Seq of the value of key k in db (ABSENT if not found), or -2 on an error;
 * asserts that the value is intact. */
static int64_t observe(akv_db *db, uint32_t k, int *rc_out)
{
    char kb[32], want[300];
    size_t kl = key_of(k, kb);
    void *v = NULL;
    size_t vl = 0;
    int rc = akv_get(db, kb, kl, &v, &vl);
    *rc_out = rc;
    if (rc == AKV_NOTFOUND)
        return ABSENT;
    if (rc != AKV_OK)
        return -2;
    char text[300];
    cr_assert(vl < sizeof text, "key %u: a %zu-byte value was never written", k, vl);
    memcpy(text, v, vl);
    text[vl] = '\0';
    unsigned kk = 0;
    long long seq = -3;
    cr_assert_eq(sscanf(text, "k=%u seq=%lld ", &kk, &seq), 2, "key %u: unparsable value", k);
    cr_assert_eq(kk, k, "key %u holds the value of key %u", k, kk);
    size_t wl = value_of(k, seq, want);
    cr_assert(wl == vl && memcmp(want, v, vl) == 0, "key %u: the value of seq %lld is damaged", k, seq);
    akv_free(v);
    return seq;
}

/* Every key against the model; the ordered layout's scan against the gets.
 * With `errors_ok`, lookups may fail (a database after a fault); the count
 * of failed lookups is returned. */
static unsigned check_db(akv_db *db, const fmodel *m, akv_layout layout, bool errors_ok, const char *when)
{
    static _Thread_local int64_t seen[FK];
    unsigned errors = 0;
    for (uint32_t k = 0; k < FK; k++) {
        int rc;
        seen[k] = observe(db, k, &rc);
        if (seen[k] == -2) {
            cr_assert(errors_ok, "%s: key %u: lookup failed: %s (%s)", when, k, akv_strerror(rc),
                      akv_errmsg());
            errors++;
            continue;
        }
        cr_assert(model_allows(m, k, seen[k]),
                  "%s: key %u holds %s%lld; acknowledged %lld (op seq %lld), a later failed delete: %d", when,
                  k, seen[k] == ABSENT ? "nothing " : "seq ", (long long)seen[k], (long long)m->acked[k],
                  (long long)m->ack_seq[k], m->del_maybe[k]);
    }
    for (unsigned i = 0; i < 50; i++) {
        char kb[32];
        int n = snprintf(kb, sizeof kb, "never-written-%u", i);
        int rc = akv_get(db, kb, (size_t)n, NULL, NULL);
        cr_assert(rc == AKV_NOTFOUND || (errors_ok && rc < 0), "%s: a key never written: %s", when,
                  akv_strerror(rc));
    }
    if (layout != AKV_LAYOUT_ORDERED || errors)
        return errors;
    akv_iter *it;
    int rc = akv_iter_create(db, &it);
    if (rc != AKV_OK) {
        cr_assert(errors_ok, "%s: iterator: %s", when, akv_errmsg());
        return errors + 1;
    }
    uint32_t next = 0;
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it)) {
        size_t kl, vl;
        const char *key = akv_iter_key(it, &kl);
        const char *val = akv_iter_value(it, &vl);
        unsigned k;
        char kb[32];
        cr_assert(kl < sizeof kb, "%s: scan shows a key that was never written", when);
        memcpy(kb, key, kl);
        kb[kl] = '\0';
        if (strcmp(kb, AFTER_KEY) == 0)
            continue;
        cr_assert_eq(sscanf(kb, "fault-key-%4u", &k), 1, "%s: scan shows key '%s'", when, kb);
        cr_assert(k < FK && key_of(k, kb) == kl, "%s: scan shows key '%s'", when, kb);
        for (; next < k; next++)
            cr_assert_eq(seen[next], ABSENT, "%s: the scan skips key %u", when, next);
        cr_assert_neq(seen[k], ABSENT, "%s: the scan shows key %u, which a lookup does not find", when, k);
        char want[300];
        cr_assert(value_of(k, seen[k], want) == vl && memcmp(want, val, vl) == 0,
                  "%s: the scan's value of key %u differs from the lookup's", when, k);
        next = k + 1;
    }
    for (; next < FK; next++)
        cr_assert_eq(seen[next], ABSENT, "%s: the scan ends before key %u", when, next);
    rc = akv_iter_status(it);
    akv_iter_destroy(it);
    if (rc != AKV_OK) {
        cr_assert(errors_ok, "%s: scan: %s", when, akv_strerror(rc));
        errors++;
    }
    return errors;
}

static void fault_options(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 128u << 10; /* memtables rotate only when the workload flushes */
    o->sst_target_bytes = 8u << 10; /* several SSTs (and filter files) per run */
    o->block_cache_bytes = 1u << 20;
    o->l0_compaction_trigger = 8; /* compactions only when asked */
    o->rest_compaction = 0;       /* (not after each flush either) */
    o->bits_per_key = 6;          /* false positives to adapt to, */
    o->l0_front = 0;              /* which an L0 front would keep from the slots (it is memory only) */
    /* Puts and deletes are not synced (their WAL append still reaches the
     * kernel before they return, and no machine crash is simulated here, so
     * they must survive too); batches are written with sync. */
    o->sync = 0;
    o->seed = 99;
}

/* ---- the child ------------------------------------------------------------------ */

typedef struct child {
    int fd;
    akv_layout layout;
    uint64_t rng;
    int64_t seq;
    fmodel model;
    int warnings; /* messages logged that report a failed call */
    void (*phase)(const char *);
} child;

/* The engine's log reports a failed call with its error text (RocksDB's
 * "IO error", or strerror's); other warnings (a filter build that falls
 * back to another kind, say) are not reports of a fault. */
static void child_log(void *arg, const char *msg)
{
    child *c = arg;
    if (strstr(msg, "IO error") || strstr(msg, "Input/output error") ||
        strstr(msg, "No space left on device"))
        c->warnings++;
    if (getenv("AKV_FAULT_VERBOSE"))
        fprintf(stderr, "fault child log: %s\n", msg);
}

static void send_rec(child *c, frec *r)
{
    r->warnings = c->warnings;
    size_t len = offsetof(frec, items) + (r->type == R_WRITE ? r->n : 0) * sizeof(item);
    if (write(c->fd, r, len) != (ssize_t)len)
        _exit(4);
}

static void send_call(child *c, uint32_t call, int rc)
{
    frec r = {.type = R_CALL, .call = call, .rc = rc};
    send_rec(c, &r);
}

static void set_phase(child *c, const char *name)
{
    if (c->phase)
        c->phase(name);
}

/* One put, delete or batch of the model's keys. */
static int do_write(child *c, akv_db *db)
{
    frec r = {.type = R_WRITE};
    uint64_t x = akvt_rand(&c->rng) % 100;
    r.n = x < 60 ? 1 : x < 80 ? 1 : 2 + (uint32_t)(akvt_rand(&c->rng) % (MAX_ITEMS - 1));
    for (uint32_t i = 0; i < r.n; i++) {
        r.items[i].op = x < 60 ? OP_PUT : x < 80 ? OP_DEL : (akvt_rand(&c->rng) % 4 ? OP_PUT : OP_DEL);
        r.items[i].key = (uint32_t)(akvt_rand(&c->rng) % FK);
        r.items[i].seq = c->seq++;
    }
    char k[32], v[300];
    int rc;
    if (x < 80) {
        const item *it = &r.items[0];
        size_t kl = key_of(it->key, k);
        rc = it->op == OP_PUT ? akv_put(db, k, kl, v, value_of(it->key, it->seq, v)) : akv_delete(db, k, kl);
    } else {
        akv_batch *b;
        rc = akv_batch_create(&b);
        for (uint32_t i = 0; rc == AKV_OK && i < r.n; i++) {
            const item *it = &r.items[i];
            size_t kl = key_of(it->key, k);
            rc = it->op == OP_PUT ? akv_batch_put(b, k, kl, v, value_of(it->key, it->seq, v))
                                  : akv_batch_delete(b, k, kl);
        }
        if (rc == AKV_OK)
            rc = akv_write(db, b, 1);
        akv_batch_destroy(b);
    }
    r.rc = rc;
    model_write(&c->model, &r);
    send_rec(c, &r);
    return rc;
}

static void writes(child *c, akv_db *db, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        do_write(c, db);
}

/* Lookups of keys never written (false positives to adapt to, entries for
 * the miss log), and of written ones; every answer is checked. */
static unsigned lookups(child *c, akv_db *db, const char *tag, unsigned n)
{
    unsigned errors = 0;
    for (unsigned i = 0; i < n; i++) {
        char kb[32];
        int kl = snprintf(kb, sizeof kb, "%s-%u", tag, i);
        int rc = akv_get(db, kb, (size_t)kl, NULL, NULL);
        if (rc != AKV_NOTFOUND && rc >= 0) {
            fprintf(stderr, "fault child: absent key %s found (%s)\n", kb, akv_strerror(rc));
            _exit(3);
        }
        errors += rc < 0;
        if (i % 10 == 0) {
            uint32_t k = (uint32_t)(akvt_rand(&c->rng) % FK);
            int grc;
            int64_t s = observe(db, k, &grc);
            if (s == -2) {
                errors++;
            } else if (!model_allows(&c->model, k, s)) {
                fprintf(stderr, "fault child: key %u holds %lld, acknowledged %lld\n", k, (long long)s,
                        (long long)c->model.acked[k]);
                _exit(3);
            }
        }
        if (i % 8 == 0) {
            int hrc = akv_hint_negative(db, kb, (size_t)kl, 4.0);
            if (hrc != AKV_OK)
                send_call(c, CALL_HINT, hrc);
        }
    }
    return errors;
}

static void child_main(const char *dir, akv_layout layout, int fd)
{
    child *c = calloc(1, sizeof *c);
    if (!c)
        _exit(5);
    c->fd = fd;
    c->layout = layout;
    c->rng = layout == AKV_LAYOUT_HASH ? 0x5eed1 : 0x5eed2;
    model_init(&c->model);
    *(void **)&c->phase = dlsym(RTLD_DEFAULT, "akv_faultfs_phase");
    void (*summary)(void);
    *(void **)&summary = dlsym(RTLD_DEFAULT, "akv_faultfs_summary");
    akv_options o;
    fault_options(&o, layout);
    o.log = child_log;
    o.log_arg = c;
    akv_db *db;
    unsigned get_errors = 0;
    int64_t adaptations = 0;

    set_phase(c, "open");
    int rc = akv_open(dir, &o, &db);
    send_call(c, CALL_OPEN, rc);
    if (rc == AKV_OK) {
        set_phase(c, "load");
        writes(c, db, 120);
        set_phase(c, "flush");
        send_call(c, CALL_FLUSH, akv_flush(db));
        set_phase(c, "adapt");
        get_errors += lookups(c, db, "absent-a", 1500);
        set_phase(c, "load2");
        writes(c, db, 60);
        set_phase(c, "flush2"); /* a flush, then the adapted filters are saved */
        send_call(c, CALL_FLUSH, akv_flush(db));
        set_phase(c, "adapt2");
        get_errors += lookups(c, db, "absent-b", 1500);
        set_phase(c, "load3");
        writes(c, db, 30);
        set_phase(c, "compact");
        send_call(c, CALL_COMPACT, akv_compact(db));
        set_phase(c, "adapt3");
        get_errors += lookups(c, db, "absent-c", 1500);
        akv_stats st;
        if (akv_get_stats(db, &st) == AKV_OK)
            adaptations = (int64_t)st.adaptations;
        set_phase(c, "check");
        get_errors += check_db(db, &c->model, layout, true, "in the child");
        set_phase(c, "close"); /* adapted filters and the miss log saved */
        send_call(c, CALL_CLOSE, akv_close(db));
        set_phase(c, "reopen");
        rc = akv_open(dir, &o, &db);
        send_call(c, CALL_OPEN, rc);
        if (rc == AKV_OK) {
            get_errors += check_db(db, &c->model, layout, true, "in the child after reopening");
            set_phase(c, "load4");
            writes(c, db, 30);
            set_phase(c, "flush3");
            send_call(c, CALL_FLUSH, akv_flush(db));
            set_phase(c, "close2");
            send_call(c, CALL_CLOSE, akv_close(db));
        }
    }
    set_phase(c, "end");
    if (summary)
        summary();
    frec end = {.type = R_END, .n = get_errors, .extra = adaptations};
    send_rec(c, &end);
    _exit(0);
}

__attribute__((constructor)) static void fault_child_entry(void)
{
    const char *e = getenv("AKV_FAULT_CHILD");
    if (!e)
        return;
    int layout, fd;
    char dir[512];
    if (sscanf(e, "%d %d %511[^\n]", &layout, &fd, dir) != 3)
        _exit(5);
    /* The parent reads what the child printed (an abort's message too). */
    const char *err = getenv("AKV_FAULT_STDERR");
    int efd = err ? open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
    if (efd >= 0) {
        dup2(efd, STDERR_FILENO);
        close(efd);
    }
    child_main(dir, (akv_layout)layout, fd);
}

/* ---- the parent -------------------------------------------------------------------- */

typedef struct outcome {
    fmodel model;
    bool ended;               /* the child sent its last record */
    int api_errors, warnings; /* calls that returned an error; failures logged */
    unsigned get_errors;      /* lookups that failed in the child after the fault */
    int64_t adaptations;
    bool open_failed;
    bool rocks_aborted; /* RocksDB's no-space recovery aborted the child */
    /* from the shim's report */
    long calls, fired;
    char fault_op[32], fault_phase[32], fault_path[600], fault_prev[600];
    struct {
        char name[32];
        long first, last;
    } phase[32];
    int n_phase;
} outcome;

static void absorb(outcome *o, const frec *r)
{
    if (r->type == R_WRITE) {
        model_write(&o->model, r);
    } else if (r->type == R_END) {
        o->ended = true;
        o->get_errors = r->n;
        o->adaptations = r->extra;
    } else if (r->call == CALL_OPEN && r->rc != AKV_OK) {
        o->open_failed = true;
    }
    if (r->type != R_END && r->rc < 0)
        o->api_errors++;
    o->warnings = r->warnings;
}

static void read_report(outcome *o, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "fault ", 6) == 0) {
            o->fired++;
            if (o->fired == 1) {
                sscanf(line, "fault N=%*d op=%31s errno=%*s phase=%31s path=%599s prev=%599s", o->fault_op,
                       o->fault_phase, o->fault_path, o->fault_prev);
            }
        } else if (strncmp(line, "calls ", 6) == 0) {
            char *p = line + 6;
            int used = 0;
            sscanf(p, "%ld%n", &o->calls, &used);
            p += used;
            while (o->n_phase < 32 &&
                   sscanf(p, " phase %31s %ld %ld%n", o->phase[o->n_phase].name, &o->phase[o->n_phase].first,
                          &o->phase[o->n_phase].last, &used) == 3) {
                o->n_phase++;
                p += used;
            }
        }
    }
    fclose(f);
}

/* Run the workload in a child with the shim; fault at call n (0: none). */
static void run_child(outcome *o, const char *dir, const char *report, akv_layout layout, long n, long times,
                      const char *errname, bool trace)
{
    memset(o, 0, sizeof *o);
    model_init(&o->model);
    int p[2];
    cr_assert_eq(pipe(p), 0);
    char e_child[700], e_preload[700], e_dir[600], e_n[64], e_times[64], e_errno[64], e_report[700],
        e_asan[600], e_stderr[720], errpath[690];
    snprintf(e_child, sizeof e_child, "AKV_FAULT_CHILD=%d %d %s", (int)layout, p[1], dir);
    snprintf(e_dir, sizeof e_dir, "AKV_FAULT_DIR=%s", dir);
    snprintf(e_n, sizeof e_n, "AKV_FAULT_N=%ld", n);
    snprintf(e_times, sizeof e_times, "AKV_FAULT_TIMES=%ld", times);
    snprintf(e_errno, sizeof e_errno, "AKV_FAULT_ERRNO=%s", errname);
    snprintf(e_report, sizeof e_report, "AKV_FAULT_REPORT=%s", report);
    snprintf(errpath, sizeof errpath, "%s.stderr", report);
    snprintf(e_stderr, sizeof e_stderr, "AKV_FAULT_STDERR=%s", errpath);
    akvt_faultfs_env(e_preload, sizeof e_preload, e_asan, sizeof e_asan);
    /* Not RocksDB's info log: after one failed write to it, RocksDB 7.8's
     * next write there aborts on an assertion (its WritableFileWriter
     * refuses to go on after an error; Debian's build keeps assertions),
     * and its C API offers no other logger. */
    const char *env[] = {e_child,
                         e_preload,
                         e_dir,
                         e_n,
                         e_times,
                         e_errno,
                         e_report,
                         e_asan,
                         e_stderr,
                         "AKV_FAULT_SKIP=LOG",
                         trace ? "AKV_FAULT_TRACE=1" : NULL,
                         NULL};
    unlink(report);
    pid_t pid = akvt_spawn_self(env);
    close(p[1]);
    unsigned char buf[1 << 15];
    size_t have = 0;
    double until = akvt_now() + CHILD_SECONDS;
    bool hung = false;
    for (;;) {
        struct pollfd pf = {p[0], POLLIN, 0};
        int left = (int)((until - akvt_now()) * 1000);
        if (left <= 0) {
            hung = true;
            break;
        }
        int pr = poll(&pf, 1, left);
        if (pr < 0 && errno == EINTR)
            continue;
        cr_assert_geq(pr, 0, "poll: %s", strerror(errno));
        if (pr == 0)
            continue;
        ssize_t got = read(p[0], buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR)
            continue;
        cr_assert_geq(got, 0, "read from the child: %s", strerror(errno));
        if (got == 0)
            break;
        have += (size_t)got;
        size_t off = 0;
        const size_t head = offsetof(frec, items);
        while (have - off >= head) {
            frec r;
            memcpy(&r, buf + off, head);
            cr_assert(r.type != R_WRITE || r.n <= MAX_ITEMS, "a damaged record from the child");
            size_t len = head + (r.type == R_WRITE ? r.n : 0) * sizeof(item);
            if (have - off < len)
                break;
            memcpy(&r, buf + off, len);
            off += len;
            absorb(o, &r);
        }
        memmove(buf, buf + off, have - off);
        have -= off;
    }
    close(p[0]);
    int status = 0;
    bool ended = !hung && akvt_wait_bounded(pid, 30, &status);
    if (!ended || hung) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    read_report(o, report);
    /* What the child printed goes on to this process's stderr, as if it
     * had printed there itself. */
    bool rocks_assert = false;
    FILE *ef = fopen(errpath, "r");
    if (ef) {
        char line[1024];
        while (fgets(line, sizeof line, ef)) {
            fputs(line, stderr);
            rocks_assert = rocks_assert || strstr(line, "sync_without_flush_called_") != NULL ||
                           (strstr(line, "ExtractUserKey") && strstr(line, "kNumInternalBytes"));
        }
        fclose(ef);
    }
    cr_assert(ended && !hung, "N=%ld: the child hung (fault: %s %s in phase %s)", n, o->fault_op,
              o->fault_path, o->fault_phase);
    /* RocksDB 7.8 can abort the process on an assertion once a write or
     * sync of its WAL failed: its WritableFileWriter refuses any later
     * append, flush or sync of that file, and Debian's build keeps the
     * assertion (`sync_without_flush_called_`). Its no-space recovery
     * thread and its close (which writes out the WAL's buffer) both get
     * there (docs/reliability.md); adaptkv cannot keep RocksDB from it
     * through the C API. Likewise a compaction of a memtable family being
     * emptied (mempool.c) whose output SST's first write fails: RocksDB
     * 7.8 then asks that empty output for its smallest key and aborts on
     * `ExtractUserKey`'s assertion (docs/reliability.md). Such a child is
     * not a failure of the engine; the parent still checks that no
     * acknowledged write was lost. Only SIGABRT, with one of those
     * assertions' messages, after a fault on one of RocksDB's files. */
    o->rocks_aborted = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && o->fired && rocks_assert &&
                       strstr(o->fault_path, "/rocksdb/") != NULL;
    if (o->rocks_aborted)
        return;
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "N=%ld: the child failed (status 0x%x; fault: %s on %s in phase %s); see its message above", n,
              status, o->fault_op, o->fault_path, o->fault_phase);
    cr_assert(o->ended, "N=%ld: the child ended without its last record", n);
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* After the fault clears: reopen without the shim and check every key;
 * with `more`, also that the database takes a write and compacts again. */
static void verify_after(const outcome *o, const char *dir, akv_layout layout, long n, bool more)
{
    akv_options opt;
    fault_options(&opt, layout);
    opt.log = quiet;
    akv_db *db;
    int rc = akv_open(dir, &opt, &db);
    cr_assert_eq(rc, AKV_OK, "N=%ld: reopen after the fault (%s %s, phase %s): %s", n, o->fault_op,
                 o->fault_path, o->fault_phase, akv_errmsg());
    char when[64];
    snprintf(when, sizeof when, "N=%ld after reopening", n);
    check_db(db, &o->model, layout, false, when);
    if (more) {
        cr_assert_eq(akv_put(db, AFTER_KEY, strlen(AFTER_KEY), "x", 1), AKV_OK,
                     "N=%ld: put after recovery: %s", n, akv_errmsg());
        cr_assert_eq(akv_compact(db), AKV_OK, "N=%ld: compaction after recovery: %s", n, akv_errmsg());
        check_db(db, &o->model, layout, false, when);
        cr_assert_eq(akv_get(db, AFTER_KEY, strlen(AFTER_KEY), NULL, NULL), AKV_OK);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "N=%ld: close after recovery: %s", n, akv_errmsg());
}

typedef struct tally {
    char phase[32];
    unsigned tried, fired, reported, silent_ok;
} tally;

static tally *tally_of(tally *t, unsigned *nt, const char *phase)
{
    for (unsigned i = 0; i < *nt; i++)
        if (strcmp(t[i].phase, phase) == 0)
            return &t[i];
    cr_assert_lt(*nt, 32u);
    snprintf(t[*nt].phase, sizeof t[*nt].phase, "%s", phase);
    return &t[(*nt)++];
}

/* The candidates, from the dry run's trace of every counted call: for each
 * phase and each kind of call (the call and its file's name with the
 * numbers taken out: "write rocksdb/#.log", "rename filters/#-#.akf"), its
 * first and its last occurrence. A phase's calls of one kind repeat the
 * same code path (WAL appends of single writes, one filter file per SST);
 * first and last tell a flush's new filter files from the adapted ones
 * saved after it. */
typedef struct sig {
    char key[200];
    long first, last;
} sig;

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static void normalize(const char *path, const char *dir, char *out, size_t cap)
{
    size_t dl = strlen(dir);
    if (strncmp(path, dir, dl) == 0)
        path += dl + (path[dl] == '/');
    size_t k = 0;
    for (const char *p = path; *p && k + 1 < cap; p++) {
        if (*p >= '0' && *p <= '9') {
            if (k == 0 || out[k - 1] != '#')
                out[k++] = '#';
        } else {
            out[k++] = *p;
        }
    }
    out[k] = '\0';
}

static size_t pick_from_trace(const char *trace, const char *dir, long *out, size_t cap)
{
    FILE *f = fopen(trace, "r");
    cr_assert_not_null(f, "no trace from the dry run");
    static sig sigs[1024];
    size_t ns = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        long n;
        char op[32], phase[32], path[700], norm[90];
        if (sscanf(line, "call %ld %31s %31s %699s", &n, op, phase, path) != 4)
            continue;
        normalize(path, dir, norm, sizeof norm);
        char key[200];
        snprintf(key, sizeof key, "%s %s %s", phase, op, norm);
        size_t i = 0;
        while (i < ns && strcmp(sigs[i].key, key) != 0)
            i++;
        if (i == ns) {
            cr_assert_lt(ns, sizeof sigs / sizeof *sigs);
            snprintf(sigs[ns].key, sizeof sigs[ns].key, "%s", key);
            sigs[ns++].first = n;
        }
        sigs[i].last = n;
    }
    fclose(f);
    size_t k = 0;
    for (size_t i = 0; i < ns && k + 2 <= cap; i++) {
        out[k++] = sigs[i].first;
        if (sigs[i].last != sigs[i].first)
            out[k++] = sigs[i].last;
    }
    akvi_sort(out, k, sizeof *out, cmp_long);
    return k;
}

/* What kind of file a failed call touched (for the summary). */
enum {
    K_WAL,
    K_MANIFEST,
    K_SST_WRITE,
    K_SST_INGEST,
    K_FILTER,
    K_OPTIONS,
    K_CURRENT,
    K_DIR,
    K_OTHER,
    K_COUNT
};
static const char *const kind_names[K_COUNT] = {"wal",    "manifest", "sst-written",           "sst-ingested",
                                                "filter", "options",  "current/identity/lock", "directory",
                                                "other"};

static int file_kind(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t len = strlen(b);
    bool in_tmp = strstr(path, "/db/tmp/") != NULL; /* the engine's DIR/tmp, not a system one */
    if (len > 4 && strcmp(b + len - 4, ".log") == 0)
        return K_WAL;
    if (strncmp(b, "MANIFEST-", 9) == 0)
        return K_MANIFEST;
    if (len > 4 && strcmp(b + len - 4, ".sst") == 0)
        return in_tmp ? K_SST_WRITE : K_SST_INGEST;
    if (strstr(b, ".akf"))
        return K_FILTER;
    if (strncmp(b, "OPTIONS-", 8) == 0)
        return K_OPTIONS;
    if (strcmp(b, "CURRENT") == 0 || strcmp(b, "IDENTITY") == 0 || strcmp(b, "LOCK") == 0 ||
        strstr(b, ".dbtmp"))
        return K_CURRENT;
    if (!strchr(b, '.') && (strcmp(b, "rocksdb") == 0 || strcmp(b, "filters") == 0 || strcmp(b, "tmp") == 0 ||
                            strcmp(b, "db") == 0))
        return K_DIR;
    return K_OTHER;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* Must the failed call be reported? Not when what it wrote is something
 * RocksDB treats as optional, by design:
 *   - preallocation: fallocate before appending, ftruncate of the unused
 *     tail at close or after recovery, and the reopen of the last WAL for
 *     that ftruncate at open (RocksDB logs these failing and goes on). The
 *     reopen is known by its flags (the shim's "reopen": append, no
 *     truncation) and its file (a WAL, NNNNNN.log), not by its number in
 *     the dry run: background threads shift the numbers from run to run;
 *   - the OPTIONS file (a record of the options for tools; RocksDB logs a
 *     failure to write it and goes on, fail_if_options_file_error being
 *     off, and adaptkv passes its options at every open), including the
 *     directory's fsync that follows its rename. */
static bool is_wal(const char *name)
{
    size_t n = strspn(name, "0123456789");
    return n > 0 && strcmp(name + n, ".log") == 0;
}

static bool must_report(const outcome *o)
{
    const char *op = o->fault_op;
    if (strcmp(op, "fallocate") == 0 || strcmp(op, "posix_fallocate") == 0 || strcmp(op, "ftruncate") == 0)
        return false;
    if (strcmp(op, "reopen") == 0 && is_wal(base_name(o->fault_path)))
        return false;
    if (strncmp(base_name(o->fault_path), "OPTIONS-", 8) == 0)
        return false;
    if (strcmp(op, "fsync") == 0 && strncmp(base_name(o->fault_prev), "OPTIONS-", 8) == 0)
        return false;
    return true;
}

/* The sweep runs on a memory file system when there is one: it tests how
 * the engine handles failed calls, not the disk, and a disk's fsyncs only
 * make it slow. AKV_FAULT_TMPDIR overrides; then TMPDIR, then /tmp. */
static void fault_tmpdir(char *buf, size_t cap, akv_layout layout)
{
    const char *base = getenv("AKV_FAULT_TMPDIR");
    struct stat st;
    if (!base || !*base)
        base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                   ? "/dev/shm"
                   : getenv("TMPDIR");
    if (!base || !*base)
        base = "/tmp";
    int n = snprintf(buf, cap, "%s/akvt-faults-%s-XXXXXX", base, layout == AKV_LAYOUT_HASH ? "hash" : "ord");
    cr_assert(n > 0 && (size_t)n < cap, "temporary path too long");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp %s: %s", buf, strerror(errno));
}

/* Is n in the comma-separated list? */
static bool in_list(const char *list, long n)
{
    for (const char *p = list; *p;) {
        char *end;
        long x = strtol(p, &end, 10);
        if (end == p)
            return false;
        if (x == n)
            return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

static bool verbose(void)
{
    const char *e = getenv("AKV_FAULT_VERBOSE");
    return e && *e && strcmp(e, "0") != 0;
}

static void sweep(akv_layout layout)
{
    const char *lname = layout == AKV_LAYOUT_HASH ? "hash" : "ordered";
    char base[512], dir[600], report[600];
    fault_tmpdir(base, sizeof base, layout);
    snprintf(dir, sizeof dir, "%s/db", base);
    snprintf(report, sizeof report, "%s/report", base);
    outcome *o = calloc(1, sizeof *o);
    cr_assert_not_null(o);

    /* The dry run: no fault, everything succeeds; a trace of the calls. */
    run_child(o, dir, report, layout, 0, 1, "EIO", true);
    cr_assert_eq(o->api_errors, 0, "the run without a fault had errors");
    cr_assert_eq(o->warnings, 0, "the run without a fault logged I/O failures");
    cr_assert_gt(o->calls, 0, "the shim counted no calls: is it preloaded?");
    cr_assert_gt(o->adaptations, 0, "no adaptation happened: adapted filters are never saved");
    verify_after(o, dir, layout, 0, true);
    static long cand[2048];
    size_t nc = pick_from_trace(report, dir, cand, sizeof cand / sizeof *cand);
    akvt_rmrf(base);
    char plan[1024];
    size_t po = 0;
    for (int i = 0; i < o->n_phase; i++) {
        size_t k = 0;
        for (size_t j = 0; j < nc; j++)
            k += cand[j] >= o->phase[i].first && cand[j] <= o->phase[i].last;
        if (o->phase[i].last >= o->phase[i].first && po < sizeof plan)
            po += (size_t)snprintf(plan + po, sizeof plan - po, " %s %ld/%zu", o->phase[i].name,
                                   o->phase[i].last - o->phase[i].first + 1, k);
    }
    long open_last = 0;
    for (int i = 0; i < o->n_phase; i++)
        if (strcmp(o->phase[i].name, "open") == 0)
            open_last = o->phase[i].last;
    const char *se = getenv("AKV_FAULT_STRIDE");
    long stride = se && atol(se) > 0 ? atol(se) : 1;
    cr_log_info("faults %s: %ld calls without a fault, %zu chosen; calls/chosen per phase:%s", lname,
                o->calls, nc, plan);

    tally t[32];
    unsigned nt = 0, tried = 0, fired = 0, reported = 0, sticky = 0, optional = 0, failed_lookups = 0,
             rocks_aborted = 0;
    unsigned kinds[K_COUNT] = {0};
    memset(t, 0, sizeof t);
    const char *only = getenv("AKV_FAULT_ONLY");
    for (size_t i = 0; i < nc; i += (size_t)stride) {
        long n = cand[i];
        if (only && *only && !in_list(only, n))
            continue;
        /* Both layouts create RocksDB's files the same way: the ordered
         * sweep leaves the creating open to the hash sweep. */
        if (layout == AKV_LAYOUT_ORDERED && n <= open_last)
            continue;
        /* Alternate EIO and ENOSPC; every 16th fault is permanent (the
         * disk stays broken until the process ends), with EIO: a disk that
         * stays full makes RocksDB 7.8's own recovery thread abort on an
         * assertion after a failed MANIFEST write (see docs/reliability.md). */
        long times = (i / (size_t)stride) % 16 == 7 ? -1 : 1;
        const char *err = times < 0 || (i / (size_t)stride) % 2 == 0 ? "EIO" : "ENOSPC";
        fault_tmpdir(base, sizeof base, layout);
        snprintf(dir, sizeof dir, "%s/db", base);
        snprintf(report, sizeof report, "%s/report", base);
        run_child(o, dir, report, layout, n, times, err, false);
        tried++;
        sticky += times < 0;
        tally *tp = tally_of(t, &nt, o->fired ? o->fault_phase : "(not reached)");
        tp->tried++;
        bool rep = o->api_errors > 0 || o->warnings > 0 || o->rocks_aborted;
        rocks_aborted += o->rocks_aborted;
        failed_lookups += o->get_errors;
        if (o->fired) {
            fired++;
            tp->fired++;
            kinds[file_kind(o->fault_path)]++;
            if (rep) {
                reported++;
                tp->reported++;
            } else {
                cr_assert(!must_report(o),
                          "N=%ld (%s): %s on %s failed in phase %s and nothing reported it", n, err,
                          o->fault_op, o->fault_path, o->fault_phase);
                tp->silent_ok++;
                optional++;
            }
        }
        if (verbose())
            fprintf(stderr, "N=%ld %s%s: %s %s in %s -> %d API errors, %d warnings, %u failed lookups%s%s\n", n,
                    err, times < 0 ? " (permanent)" : "", o->fired ? o->fault_op : "-", o->fault_path,
                    o->fired ? o->fault_phase : "-", o->api_errors, o->warnings, o->get_errors,
                    o->open_failed ? ", open refused" : "",
                    o->rocks_aborted ? ", aborted by RocksDB's no-space recovery" : "");
        /* every 4th: the recovered database also takes a write and compacts */
        verify_after(o, dir, layout, n, tried % 4 == 1);
        akvt_rmrf(base);
    }
    char summary[2048];
    size_t so = 0;
    for (unsigned i = 0; i < nt; i++)
        so += (size_t)snprintf(summary + so, sizeof summary - so, " %s %u/%u/%u", t[i].phase, t[i].tried,
                               t[i].fired, t[i].reported);
    cr_log_info("faults %s: %u runs (%u permanent), %u faults injected, %u reported, %u optional by design, "
                "%u lookups failed (with an error) after a fault, %u children aborted by RocksDB's no-space "
                "recovery; tried/fired/reported per phase:%s",
                lname, tried, sticky, fired, reported, optional, failed_lookups, rocks_aborted, summary);
    so = 0;
    for (int k = 0; k < K_COUNT; k++)
        so += (size_t)snprintf(summary + so, sizeof summary - so, " %s %u", kind_names[k], kinds[k]);
    cr_log_info("faults %s: faults per file:%s", lname, so ? summary : "");
    /* The sweep is not vacuous: nearly every N was reached, and every phase
     * whose own calls do I/O had faults reported. The lookup phases (adapt*,
     * check) do none themselves: what the dry run counted there is
     * background work (a flush or compaction finishing, adapted filters
     * saved) that lands in them by timing, and in the sweep's runs it may
     * land in the phase before or after (seen once in CI: "no fault in
     * phase check was reported"). Their faults are still checked one by
     * one above. */
    cr_assert_geq(fired * 10, tried * 9, "only %u of %u faults were injected", fired, tried);
    for (int i = 0; stride == 1 && !(only && *only) && i < o->n_phase; i++) {
        const char *ph = o->phase[i].name;
        bool lookups_only = strncmp(ph, "adapt", 5) == 0 || strcmp(ph, "check") == 0;
        if (o->phase[i].last < o->phase[i].first || lookups_only ||
            (layout == AKV_LAYOUT_ORDERED && strcmp(ph, "open") == 0))
            continue;
        unsigned rep = 0;
        for (unsigned j = 0; j < nt; j++)
            rep += strcmp(t[j].phase, ph) == 0 ? t[j].reported : 0;
        cr_assert_gt(rep, 0, "no fault in phase %s was reported", ph);
    }
    free(o);
}

Test(faults, sweep_hash_layout)
{
    if (getenv("AKV_SANITIZER") && strstr(getenv("AKV_SANITIZER"), "thread"))
        cr_skip_test("the shim is not preloaded under ThreadSanitizer");
    sweep(AKV_LAYOUT_HASH);
}

Test(faults, sweep_ordered_layout)
{
    if (getenv("AKV_SANITIZER") && strstr(getenv("AKV_SANITIZER"), "thread"))
        cr_skip_test("the shim is not preloaded under ThreadSanitizer");
    sweep(AKV_LAYOUT_ORDERED);
}
