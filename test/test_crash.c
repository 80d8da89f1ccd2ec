/*
 * test_crash.c — kill -9 a writer at random points; no acknowledged write
 * may be lost, no acknowledged delete undone, no batch half-applied.
 *
 * Each iteration starts a child that opens the database with sync writes and
 * a 16 KiB memtable (so flushes and compactions run all the time), then puts,
 * deletes, writes batches, flushes and compacts; it also looks up keys that
 * were never written (false positives adapt the filters, and the adapted
 * filters are saved after every flush) and keys it wrote (checked against
 * its own model), and, in the ordered layout, scans ranges (checked too).
 * Before each write, flush or compaction it sends the parent an INTENT
 * record (with the batch's items) and after the engine returns an ACK, each
 * with one write(2) of less than PIPE_BUF bytes, so records arrive whole.
 * The parent SIGKILLs the child at a seeded random point: after a random
 * number of acknowledged operations, then at once, or once a flush or
 * compaction is under way, or once a filter file is being written (a
 * ".tmp" in the filters directory: a new run's filter or an adapted filter
 * saved over its file). It drains the pipe, reopens the database and checks
 * every key, and in the ordered layout a full scan (keys, values, order):
 *   - keys the in-flight operation does not touch hold exactly their last
 *     acknowledged value (or stay absent after an acknowledged delete);
 *   - the in-flight operation is applied entirely or not at all;
 *   - keys never written are not found.
 * The database carries over to the next iteration, so recovery of recovered
 * databases is exercised too. AKV_CRASH_ITER=N (default 20) sets the number of
 * iterations, split between the two layouts;
 * AKV_CRASH_POLICY sets the slot policy (default: the engine's).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "support/childproc.h"
#include "support/filter_props.h"
#include "support/kvmodel.h"

#define CK        2000u /* keys */
#define MAX_ITEMS 16u   /* per batch */
#define MAX_OPS   4000u /* per child, if never killed */
#define ABSENT    (-1)

enum { OP_PUT = 1, OP_DEL, OP_BATCH, OP_FLUSH, OP_COMPACT, OP_READS, OP_SCAN };
enum { REC_INTENT = 1, REC_ACK, REC_FAIL };

typedef struct item {
    uint32_t op, key;
    int64_t seq; /* the value written is value_of(key, seq) */
} item;

/* One record; an INTENT carries its items, so it fits one atomic write. */
typedef struct rec {
    uint32_t type, op, n, pad;
    item items[MAX_ITEMS];
} rec;

_Static_assert(sizeof(rec) < 4096, "records must be written atomically to a pipe");

static size_t key_of(uint32_t k, char *buf)
{
    return (size_t)snprintf(buf, 32, "crash-key-%05u", k);
}

/* Value of (key, seq): self-describing, 20–620 bytes. */
static size_t value_of(uint32_t k, int64_t seq, char *buf)
{
    int n = snprintf(buf, 64, "k=%u seq=%lld ", k, (long long)seq);
    size_t len = 20 + (size_t)(seq * 7919 % 600);
    for (size_t i = (size_t)n; i < len; i++)
        buf[i] = (char)('a' + (seq + (int64_t)i) % 26);
    return len > (size_t)n ? len : (size_t)n;
}

/* Filter builds that fall back (an AQF too small for its negatives) warn;
 * expected here, and not worth a page of output. */
static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

static void crash_options(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 16u << 10; /* a flush every ~50 operations */
    o->sst_target_bytes = 16u << 10;
    o->l0_compaction_trigger = 2;
    o->level_multiplier = 4;
    o->sync = 1;
    o->seed = 77;
    o->bits_per_key = 8; /* false positives for the filters to adapt to */
    o->log = getenv("AKV_CRASH_VERBOSE") ? NULL : quiet;
    /* AKV_CRASH_POLICY=... runs the test under another slot policy. */
    const char *policy = getenv("AKV_CRASH_POLICY");
    o->slot_policy = policy && *policy ? policy : NULL;
}

/* ---- the child ----------------------------------------------------------- */

static void send_rec(int fd, const rec *r)
{
    size_t len = offsetof(rec, items) + r->n * sizeof(item);
    if (write(fd, r, len) != (ssize_t)len)
        _exit(4);
}

static void child_fail(int fd, const char *what, int rc)
{
    fprintf(stderr, "crash child: %s failed: %s (%s)\n", what, akv_strerror(rc), akv_errmsg());
    rec r = {.type = REC_FAIL};
    send_rec(fd, &r);
    _exit(3);
}

/* Choose the next operation and its items. Reads and scans change nothing
 * and send no records. */
static void plan_op(rec *r, uint64_t *rng, int64_t *seq, akv_layout layout)
{
    uint64_t x = akvt_rand(rng) % 100;
    r->type = REC_INTENT;
    r->pad = 0;
    r->op = x < 55   ? OP_PUT
            : x < 73 ? OP_DEL
            : x < 87 ? OP_BATCH
            : x < 95 ? OP_READS
            : x < 97 ? (layout == AKV_LAYOUT_ORDERED ? OP_SCAN : OP_READS)
            : x < 99 ? OP_FLUSH
                     : OP_COMPACT;
    r->n = r->op == OP_BATCH ? 2 + (uint32_t)(akvt_rand(rng) % (MAX_ITEMS - 1)) : r->op <= OP_DEL ? 1 : 0;
    for (uint32_t i = 0; i < r->n; i++) {
        r->items[i].op = r->op == OP_BATCH ? (akvt_rand(rng) % 4 ? OP_PUT : OP_DEL) : r->op;
        r->items[i].key = (uint32_t)(akvt_rand(rng) % CK);
        r->items[i].seq = (*seq)++;
    }
}

static int do_batch(akv_db *db, const rec *r)
{
    akv_batch *b;
    int rc = akv_batch_create(&b);
    char k[32], v[700];
    for (uint32_t i = 0; rc == AKV_OK && i < r->n; i++) {
        const item *it = &r->items[i];
        size_t kl = key_of(it->key, k);
        rc = it->op == OP_PUT ? akv_batch_put(b, k, kl, v, value_of(it->key, it->seq, v))
                              : akv_batch_delete(b, k, kl);
    }
    if (rc == AKV_OK)
        rc = akv_write(db, b, 1);
    akv_batch_destroy(b);
    return rc;
}

static int do_op(akv_db *db, const rec *r)
{
    char k[32], v[700];
    const item *it = &r->items[0];
    switch (r->op) {
    case OP_PUT:
        return akv_put(db, k, key_of(it->key, k), v, value_of(it->key, it->seq, v));
    case OP_DEL:
        return akv_delete(db, k, key_of(it->key, k));
    case OP_BATCH:
        return do_batch(db, r);
    case OP_FLUSH:
        return akv_flush(db);
    default:
        return akv_compact(db);
    }
}

/* The child's own model: seq of each key's value, or ABSENT. */
static int64_t g_child_cur[CK];

static _Noreturn void child_die(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void child_die(int fd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "crash child: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    rec r = {.type = REC_FAIL};
    send_rec(fd, &r);
    _exit(3);
}

#define child_check(fd, ok, ...)                                                                             \
    do {                                                                                                     \
        if (!(ok))                                                                                           \
            child_die(fd, __VA_ARGS__);                                                                      \
    } while (0)

/* Lookups of keys never written (each false positive adapts a filter;
 * flushes then save the adapted filters) and of written keys, checked
 * against the model: adaptation must never hide a key. */
static void do_reads(akv_db *db, int fd, uint64_t *rng)
{
    if (getenv("AKV_CRASH_VERBOSE")) {
        akv_stats st;
        akv_get_stats(db, &st);
        fprintf(stderr, "crash child: %llu adaptations, %llu false positives\n",
                (unsigned long long)st.adaptations, (unsigned long long)st.false_positives);
    }
    char k[48], want[700];
    for (unsigned i = 0; i < 200; i++) {
        int kl = snprintf(k, sizeof k, "crash-absent-%llu", (unsigned long long)(akvt_rand(rng) % 100000));
        int rc = akv_get(db, k, (size_t)kl, NULL, NULL);
        child_check(fd, rc == AKV_NOTFOUND, "absent key %s: %s", k, akv_strerror(rc));
        if (i % 8)
            continue;
        uint32_t key = (uint32_t)(akvt_rand(rng) % CK);
        void *v = NULL;
        size_t vl = 0;
        rc = akv_get(db, k, key_of(key, k), &v, &vl);
        if (g_child_cur[key] == ABSENT) {
            child_check(fd, rc == AKV_NOTFOUND, "key %u was deleted, get says %s", key, akv_strerror(rc));
        } else {
            child_check(fd, rc == AKV_OK, "key %u: %s (%s)", key, akv_strerror(rc), akv_errmsg());
            size_t wl = value_of(key, g_child_cur[key], want);
            child_check(fd, vl == wl && memcmp(v, want, wl) == 0, "key %u: wrong value", key);
            akv_free(v);
        }
    }
}

/* Ordered layout: up to 100 pairs from a random key on, against the model. */
static void do_scan(akv_db *db, int fd, uint64_t *rng)
{
    akv_iter *it;
    int rc = akv_iter_create(db, &it);
    child_check(fd, rc == AKV_OK, "iterator: %s", akv_errmsg());
    uint32_t from = (uint32_t)(akvt_rand(rng) % CK), k = from;
    char kb[32], want[700];
    akv_iter_seek(it, kb, key_of(from, kb));
    for (unsigned n = 0; n < 100 && akv_iter_valid(it); n++, k++, akv_iter_next(it)) {
        while (k < CK && g_child_cur[k] == ABSENT)
            k++;
        size_t kl, vl;
        const char *key = akv_iter_key(it, &kl);
        const char *val = akv_iter_value(it, &vl);
        if (k >= CK || kl != key_of(k, kb) || memcmp(key, kb, kl) != 0) {
            child_die(fd, "scan from key %u: step %u shows '%.*s', the model key %u", from, n, (int)kl, key,
                      k);
        } else {
            size_t wl = value_of(k, g_child_cur[k], want);
            child_check(fd, vl == wl && memcmp(val, want, wl) == 0, "scan: key %u has a wrong value", k);
        }
    }
    if (!akv_iter_valid(it)) {
        while (k < CK && g_child_cur[k] == ABSENT)
            k++;
        child_check(fd, k >= CK, "scan from key %u ends before key %u", from, k);
    }
    child_check(fd, akv_iter_status(it) == AKV_OK, "scan: %s", akv_strerror(akv_iter_status(it)));
    akv_iter_destroy(it);
}

static _Noreturn void child_main(const char *dir, akv_layout layout, int fd, uint64_t rng, int64_t seq,
                                 const char *state)
{
    /* The parent's view of every key (after its last check) seeds the
     * child's model, as hex seqs ("-" for absent), one per key. */
    for (uint32_t k = 0; k < CK; k++) {
        char *end;
        g_child_cur[k] = *state == '-' ? ABSENT : (int64_t)strtoll(state, &end, 16);
        state = *state == '-' ? state + 1 : end;
        if (*state == ',')
            state++;
    }
    akv_options o;
    crash_options(&o, layout);
    akv_db *db = NULL;
    int rc = akv_open(dir, &o, &db);
    if (rc != AKV_OK)
        child_fail(fd, "open", rc);
    for (unsigned i = 0; i < MAX_OPS; i++) {
        rec r;
        plan_op(&r, &rng, &seq, layout);
        if (r.op == OP_READS) {
            do_reads(db, fd, &rng);
            continue;
        }
        if (r.op == OP_SCAN) {
            do_scan(db, fd, &rng);
            continue;
        }
        send_rec(fd, &r);
        if ((rc = do_op(db, &r)) != AKV_OK)
            child_fail(fd, "operation", rc);
        for (uint32_t j = 0; j < r.n; j++)
            g_child_cur[r.items[j].key] = r.items[j].op == OP_PUT ? r.items[j].seq : ABSENT;
        rec ack = {.type = REC_ACK, .op = r.op};
        send_rec(fd, &ack);
    }
    akv_close(db);
    _exit(0);
}

/* The child is this binary re-executed (support/childproc.h): it finds its
 * orders in AKV_CRASH_CHILD and its model in AKV_CRASH_STATE, and becomes the
 * writer before the test runner's main() starts. */
__attribute__((constructor)) static void crash_child_entry(void)
{
    const char *e = getenv("AKV_CRASH_CHILD");
    if (!e)
        return;
    int layout, fd;
    unsigned long long rng;
    long long seq;
    char dir[512];
    const char *state = getenv("AKV_CRASH_STATE");
    if (!state || sscanf(e, "%d %d %llu %lld %511[^\n]", &layout, &fd, &rng, &seq, dir) != 5)
        _exit(5);
    child_main(dir, (akv_layout)layout, fd, rng, seq, state);
}

/* ---- the parent ------------------------------------------------------------ */

typedef struct crash_state {
    char dir[512];
    akv_layout layout;
    int64_t cur[CK]; /* seq of the acknowledged value, or ABSENT */
    int64_t next_seq;
    rec pending; /* the intent not yet acknowledged; type 0 if none */
    uint64_t rng;
    unsigned acks;
    unsigned in_maintenance;  /* kills that hit an explicit flush or compaction */
    unsigned in_filter_write; /* kills while a filter file was being written */
    unsigned in_adapted_save; /* ... over an existing file: an adapted filter saved */
} crash_state;

static void apply(int64_t *state, const rec *r)
{
    for (uint32_t i = 0; i < r->n; i++)
        state[r->items[i].key] = r->items[i].op == OP_PUT ? r->items[i].seq : ABSENT;
}

/* Fold one record into the model. Returns false on a child failure. */
static bool absorb(crash_state *s, const rec *r)
{
    if (r->type == REC_INTENT) {
        cr_assert_eq(s->pending.type, 0, "two intents without an ack");
        s->pending = *r;
        for (uint32_t i = 0; i < r->n; i++)
            if (r->items[i].seq >= s->next_seq)
                s->next_seq = r->items[i].seq + 1;
    } else if (r->type == REC_ACK) {
        cr_assert_eq(s->pending.type, REC_INTENT, "an ack without an intent");
        apply(s->cur, &s->pending);
        s->pending.type = 0;
        s->acks++;
    } else {
        return false;
    }
    return true;
}

typedef struct reader {
    unsigned char buf[1 << 16];
    size_t have;
} reader;

/* Read what the (non-blocking) pipe has and absorb the whole records.
 * 0 at EOF, -1 when nothing is there now. */
static ssize_t pump(crash_state *s, int fd, reader *rd, bool *failed)
{
    ssize_t n = read(fd, rd->buf + rd->have, sizeof rd->buf - rd->have);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return -1;
    cr_assert_geq(n, 0, "read from the child: %s", strerror(errno));
    rd->have += (size_t)n;
    size_t off = 0;
    for (;;) {
        const size_t head = offsetof(rec, items);
        if (rd->have - off < head)
            break;
        rec r;
        memcpy(&r, rd->buf + off, head);
        cr_assert_leq(r.n, MAX_ITEMS);
        size_t len = head + r.n * sizeof(item);
        if (rd->have - off < len)
            break;
        memcpy(&r, rd->buf + off, len);
        off += len;
        if (!absorb(s, &r))
            *failed = true;
    }
    memmove(rd->buf, rd->buf + off, rd->have - off);
    rd->have -= off;
    return n;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A filter file being written: 1, or 2 when it replaces an existing file
 * (an adapted filter being saved); 0 if none. */
static int filter_write_under_way(const char *fdir)
{
    DIR *d = opendir(fdir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len > 8 && strcmp(e->d_name + len - 8, ".akf.tmp") == 0) {
            char path[700];
            snprintf(path, sizeof path, "%s/%.*s", fdir, (int)(len - 4), e->d_name);
            found = access(path, F_OK) == 0 ? 2 : 1;
        }
    }
    closedir(d);
    return found;
}

/* How an iteration's kill is placed. */
enum { KILL_AFTER_ACKS, KILL_IN_MAINTENANCE, KILL_IN_FILTER_WRITE, KILL_IN_ADAPTED_SAVE };

/* Run the child until the kill point, kill it, collect every record. */
static void run_child(crash_state *s)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    uint64_t child_rng = akvt_rand(&s->rng);
    unsigned target = 1 + (unsigned)(akvt_rand(&s->rng) % 100); /* each op fsyncs: keep iterations short */
    uint64_t m = akvt_rand(&s->rng) % 8;
    int mode = m < 4    ? KILL_AFTER_ACKS
               : m < 6  ? KILL_IN_MAINTENANCE
               : m == 6 ? KILL_IN_FILTER_WRITE
                        : KILL_IN_ADAPTED_SAVE;
    long delay_us = (long)(akvt_rand(&s->rng) % 3000);
    char e_child[700], fdir[600];
    snprintf(e_child, sizeof e_child, "AKV_CRASH_CHILD=%d %d %llu %lld %s", (int)s->layout, p[1],
             (unsigned long long)child_rng, (long long)s->next_seq, s->dir);
    snprintf(fdir, sizeof fdir, "%s/filters", s->dir);
    size_t cap = 32 + CK * 18;
    char *e_state = malloc(cap);
    cr_assert_not_null(e_state);
    size_t off = (size_t)snprintf(e_state, cap, "AKV_CRASH_STATE=");
    for (uint32_t k = 0; k < CK; k++)
        off +=
            (size_t)(s->cur[k] == ABSENT ? snprintf(e_state + off, cap - off, "-,")
                                         : snprintf(e_state + off, cap - off, "%llx,", (long long)s->cur[k]));
    const char *env[] = {e_child, e_state, NULL};
    pid_t pid = akvt_spawn_self(env);
    free(e_state);
    close(p[1]);
    cr_assert_eq(fcntl(p[0], F_SETFL, O_NONBLOCK), 0);
    reader *rd = calloc(1, sizeof *rd);
    cr_assert_not_null(rd);
    bool failed = false, killed = false, eof = false;
    unsigned start = s->acks;
    double watch_until = 0;
    while (!eof && !failed && !killed) {
        bool watching = watch_until > 0;
        struct pollfd pf = {p[0], POLLIN, 0};
        int pr = poll(&pf, 1, watching ? 0 : 1000);
        ssize_t n = pr > 0 ? pump(s, p[0], rd, &failed) : -1;
        eof = n == 0;
        bool due = s->acks - start >= target;
        if (due && mode == KILL_IN_MAINTENANCE)
            due = s->pending.type == REC_INTENT && s->pending.op >= OP_FLUSH;
        if (due && (mode == KILL_IN_FILTER_WRITE || mode == KILL_IN_ADAPTED_SAVE)) {
            /* watch the filters directory for a while; then kill anyway */
            if (!watching)
                watch_until = akvt_now() + 3;
            int w = filter_write_under_way(fdir);
            if (mode == KILL_IN_ADAPTED_SAVE && w == 1)
                w = 0;
            due = w > 0 || akvt_now() > watch_until;
            if (w > 0) {
                s->in_filter_write++;
                s->in_adapted_save += w == 2;
            }
            if (!due)
                sleep_us(100);
        } else if (due && mode == KILL_AFTER_ACKS) {
            sleep_us(delay_us);
        }
        if (due) {
            kill(pid, SIGKILL);
            killed = true;
        }
    }
    int status;
    cr_assert(akvt_wait_bounded(pid, 120, &status), "the writer child hung");
    while (pump(s, p[0], rd, &failed) > 0) /* drain what the child wrote before dying */
        ;
    close(p[0]);
    free(rd);
    cr_assert_not(failed, "the writer child reported a failure (see its message above)");
    cr_assert((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) ||
                  (WIFEXITED(status) && WEXITSTATUS(status) == 0),
              "the writer child died on its own (status 0x%x)", status);
}

/* Actual state of key k after recovery: seq of its value or ABSENT. */
static int64_t observe(akv_db *db, uint32_t k)
{
    char kb[32], expect[700];
    size_t kl = key_of(k, kb);
    void *v = NULL;
    size_t vl = 0;
    int rc = akv_get(db, kb, kl, &v, &vl);
    if (rc == AKV_NOTFOUND)
        return ABSENT;
    cr_assert_eq(rc, AKV_OK, "get after crash: %s", akv_errmsg());
    long long seq = -2;
    unsigned kk = 0;
    cr_assert(vl < sizeof expect, "key %u: a %zu-byte value was never written", k, vl);
    memcpy(expect, v, vl);
    expect[vl] = '\0';
    cr_assert_eq(sscanf(expect, "k=%u seq=%lld ", &kk, &seq), 2, "key %u: unparsable value", k);
    cr_assert_eq(kk, k, "key %u holds the value of key %u", k, kk);
    char want[700];
    size_t wl = value_of(k, seq, want);
    cr_assert(wl == vl && memcmp(want, v, vl) == 0, "key %u: value of seq %lld is damaged", k, seq);
    akv_free(v);
    return seq;
}

/* The ordered layout's full scan: exactly the keys the lookups find, in
 * order, with the same values. */
static void check_scan(akv_db *db, const int64_t *actual, int iter)
{
    akv_iter *it;
    cr_assert_eq(akv_iter_create(db, &it), AKV_OK);
    uint32_t k = 0;
    char kb[32], want[700];
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it), k++) {
        while (k < CK && actual[k] == ABSENT)
            k++;
        size_t kl, vl;
        const char *key = akv_iter_key(it, &kl);
        const char *val = akv_iter_value(it, &vl);
        cr_assert(k < CK, "iteration %d: the scan shows '%.*s' after the last key", iter, (int)kl, key);
        cr_assert(kl == key_of(k, kb) && memcmp(key, kb, kl) == 0,
                  "iteration %d: the scan shows '%.*s' where lookups put key %u", iter, (int)kl, key, k);
        size_t wl = value_of(k, actual[k], want);
        cr_assert(vl == wl && memcmp(val, want, wl) == 0, "iteration %d: the scan's value of key %u differs",
                  iter, k);
    }
    cr_assert_eq(akv_iter_status(it), AKV_OK);
    akv_iter_destroy(it);
    while (k < CK && actual[k] == ABSENT)
        k++;
    cr_assert_geq(k, CK, "iteration %d: the scan ends before key %u", iter, k);
}

/* Compare the recovered database with the model; resolve the in-flight op. */
static void verify(crash_state *s, int iter)
{
    akv_options o;
    crash_options(&o, s->layout);
    o.sync = 0;
    akv_db *db = NULL;
    int rc = akv_open(s->dir, &o, &db);
    cr_assert_eq(rc, AKV_OK, "iteration %d: reopen after kill: %s", iter, akv_errmsg());
    int64_t *actual = malloc(CK * sizeof *actual), *after = malloc(CK * sizeof *after);
    cr_assert(actual && after);
    for (uint32_t k = 0; k < CK; k++)
        actual[k] = observe(db, k);
    memcpy(after, s->cur, CK * sizeof *after);
    apply(after, &s->pending);
    bool all_before = true, all_after = true;
    for (uint32_t k = 0; k < CK; k++) {
        all_before &= actual[k] == s->cur[k];
        all_after &= actual[k] == after[k];
    }
    if (!all_before && !all_after)
        for (uint32_t k = 0; k < CK; k++)
            cr_assert(actual[k] == s->cur[k] || actual[k] == after[k],
                      "iteration %d: key %u holds seq %lld; acknowledged %lld, in flight %lld", iter, k,
                      (long long)actual[k], (long long)s->cur[k], (long long)after[k]);
    cr_assert(all_before || all_after, "iteration %d: the in-flight batch (%u items) was applied partially",
              iter, s->pending.n);
    if (s->layout == AKV_LAYOUT_ORDERED)
        check_scan(db, actual, iter);
    for (unsigned i = 0; i < 100; i++) {
        char k[48];
        int kl = snprintf(k, sizeof k, "crash-absent-%u", i * 997);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_NOTFOUND, "iteration %d: %s found", iter, k);
    }
    cr_assert_eq(akv_close(db), AKV_OK);
    memcpy(s->cur, actual, CK * sizeof *actual);
    s->in_maintenance += s->pending.type == REC_INTENT && s->pending.op >= OP_FLUSH;
    s->pending.type = 0;
    free(actual);
    free(after);
}

static int iterations(void)
{
    const char *e = getenv("AKV_CRASH_ITER");
    int n = e && *e ? atoi(e) : 20;
    return n > 0 ? n : 20;
}

static void crash_test(akv_layout layout, uint64_t seed)
{
    crash_state *s = calloc(1, sizeof *s);
    cr_assert_not_null(s);
    akvt_tmpdir(s->dir, sizeof s->dir, layout == AKV_LAYOUT_HASH ? "crash-hash" : "crash-ord");
    s->layout = layout;
    s->rng = seed;
    for (uint32_t k = 0; k < CK; k++)
        s->cur[k] = ABSENT;
    int n = (iterations() + 1) / 2; /* half of the iterations per layout */
    for (int i = 0; i < n; i++) {
        run_child(s);
        verify(s, i);
    }
    cr_log_info(
        "crash %s: %d iterations, %u acknowledged operations; kills inside an explicit flush/compact: "
        "%u, while a filter file was written: %u (%u of them an adapted filter saved over its file)",
        layout == AKV_LAYOUT_HASH ? "hash" : "ordered", n, s->acks, s->in_maintenance, s->in_filter_write,
        s->in_adapted_save);
    akvt_rmrf(s->dir);
    free(s);
}

Test(crash, kill9_writer_hash_layout)
{
    crash_test(AKV_LAYOUT_HASH, 0xc0ffee);
}
Test(crash, kill9_writer_ordered_layout)
{
    crash_test(AKV_LAYOUT_ORDERED, 0xbeef);
}
