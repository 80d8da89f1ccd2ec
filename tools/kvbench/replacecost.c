/*
 * replacecost.c — kvbench --replace-cost N: what replacing one run costs
 * adaptkv's bookkeeping, and the writers meanwhile, at the number of runs
 * the database has (docs/kvbench.md; issue 28 asks that it not grow with
 * them: docs/benchmarks.md, "What one run replacement costs").
 *
 * One replacement is one flush of a small memtable (1,000 puts of 100 B)
 * into a new L0 run: the engine creates the run's family and ingests its
 * SSTs, drops the flushed memtable's family and has created the next one at
 * rotation — the family operations a compaction pays per run it writes and
 * per run it replaces. Meanwhile one writer thread puts 100 B values at
 * 5,000 a second; its latency is kept apart for puts that overlap a
 * replacement and for the rest. Per replacement: the wall time of
 * akv_flush, the family operations and their time (akv_stats), RocksDB's
 * newest OPTIONS file's size and its MANIFEST's growth.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "adaptkv/adaptkv.h"
#include "tools/kvbench/kvbench.h"

#define RC_FILL       1000u /* puts before each flush */
#define RC_VLEN       100u
#define RC_WRITER_GAP 200000L /* ns between the writer's puts: 5,000 a second */

typedef struct rc_writer {
    akv_kb_engine *e;
    pthread_t th;
    _Atomic bool stop;
    _Atomic unsigned window; /* odd while a replacement runs */
    _Atomic uint64_t window_max_ns;
    akv_kb_hist during, outside;
    uint64_t errors;
} rc_writer;

typedef struct rc_one {
    double wall_ms, family_ms;
    uint64_t ops, creates, drops;
    uint64_t options_bytes;
    int64_t manifest_growth;
    double writer_max_ms;
} rc_one;

static void *writer_main(void *arg)
{
    rc_writer *w = arg;
    void *t = w->e->thread_begin ? w->e->thread_begin(w->e) : NULL;
    char k[48], v[RC_VLEN];
    memset(v, 'w', sizeof v);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (uint64_t i = 0; !atomic_load(&w->stop); i++) {
        next.tv_nsec += RC_WRITER_GAP;
        if (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        int kn = snprintf(k, sizeof k, "replace-writer-%llu", (unsigned long long)i);
        unsigned before = atomic_load(&w->window);
        uint64_t t0 = akv_kb_mono_ns();
        int rc = w->e->write(w->e, t, k, (size_t)kn, v, sizeof v);
        uint64_t ns = akv_kb_mono_ns() - t0;
        unsigned after = atomic_load(&w->window);
        if (rc < 0)
            w->errors++;
        if ((before & 1) || after != before) {
            akv_kb_hist_add(&w->during, ns);
            uint64_t m = atomic_load(&w->window_max_ns);
            while (ns > m && !atomic_compare_exchange_weak(&w->window_max_ns, &m, ns))
                ;
        } else {
            akv_kb_hist_add(&w->outside, ns);
        }
    }
    if (w->e->thread_end)
        w->e->thread_end(w->e, t);
    return NULL;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The newest OPTIONS-<n> file's size (the one RocksDB rewrites). */
static uint64_t options_bytes(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rocksdb", dir);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    unsigned long long best = 0;
    char name[256] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        unsigned long long num;
        if (sscanf(de->d_name, "OPTIONS-%llu", &num) == 1 && !strstr(de->d_name, ".dbtmp") && num >= best) {
            best = num;
            snprintf(name, sizeof name, "%s", de->d_name);
        }
    }
    closedir(d);
    if (!name[0])
        return 0;
    snprintf(path, sizeof path, "%s/rocksdb/%s", dir, name);
    return file_size(path);
}

/* The current MANIFEST's size, and its name into `name`. */
static uint64_t manifest_bytes(const char *dir, char *name, size_t cap)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/rocksdb/CURRENT", dir);
    FILE *f = fopen(path, "r");
    name[0] = 0;
    if (!f)
        return 0;
    if (!fgets(name, (int)cap, f))
        name[0] = 0;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    snprintf(path, sizeof path, "%s/rocksdb/%s", dir, name);
    return file_size(path);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(const rc_one *v, size_t n, size_t off)
{
    double *x = malloc(n * sizeof *x);
    if (!x)
        return 0;
    for (size_t i = 0; i < n; i++)
        memcpy(&x[i], (const char *)&v[i] + off, sizeof x[i]);
    qsort(x, n, sizeof *x, cmp_double);
    double m = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    free(x);
    return m;
}

static void hist_json(FILE *f, const char *name, const akv_kb_hist *h)
{
    fprintf(f, "\"%s\":{\"puts\":%llu,\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f}",
            name, (unsigned long long)h->count, (double)akv_kb_hist_pct(h, 50) / 1e3,
            (double)akv_kb_hist_pct(h, 99) / 1e3, (double)akv_kb_hist_pct(h, 99.9) / 1e3,
            (double)h->max_ns / 1e3);
}

static void hist_text(FILE *out, const char *name, const akv_kb_hist *h)
{
    fprintf(out,
            "[REPLACE], writer %s, puts, %llu, p50 us, %.1f, p99 us, %.1f, p99.9 us, %.1f, max us, %.1f\n",
            name, (unsigned long long)h->count, (double)akv_kb_hist_pct(h, 50) / 1e3,
            (double)akv_kb_hist_pct(h, 99) / 1e3, (double)akv_kb_hist_pct(h, 99.9) / 1e3,
            (double)h->max_ns / 1e3);
}

static int fill(akv_kb_engine *e, uint64_t round)
{
    char k[48], v[RC_VLEN];
    memset(v, 'r', sizeof v);
    for (unsigned i = 0; i < RC_FILL; i++) {
        int kn = snprintf(k, sizeof k, "replace-%llu-%u", (unsigned long long)round, i);
        if (e->write(e, NULL, k, (size_t)kn, v, sizeof v) < 0)
            return -1;
    }
    return 0;
}

int akv_kb_replace_cost(akv_kb_engine *e, const char *dir, uint64_t n, const char *json, FILE *out)
{
    if (strcmp(e->name, "adaptkv") != 0) {
        fprintf(stderr, "kvbench: --replace-cost measures adaptkv's family operations: --engine adaptkv\n");
        return 2;
    }
    akv_stats st;
    akv_get_stats(e->db, &st);
    uint64_t runs = 0, ssts = 0;
    for (int l = 0; l < AKV_MAX_LEVELS; l++) {
        runs += st.runs_per_level[l];
        ssts += st.ssts_per_level[l];
    }
    rc_one *v = calloc(n, sizeof *v);
    rc_writer *w = calloc(1, sizeof *w);
    if (!v || !w) {
        free(v);
        free(w);
        fprintf(stderr, "kvbench: --replace-cost: out of memory\n");
        return 1;
    }
    w->e = e;
    akv_kb_hist_reset(&w->during);
    akv_kb_hist_reset(&w->outside);
    if (pthread_create(&w->th, NULL, writer_main, w) != 0) {
        free(v);
        free(w);
        fprintf(stderr, "kvbench: --replace-cost: cannot start the writer\n");
        return 1;
    }
    int rc = 0;
    if (out)
        fprintf(out, "[REPLACE], Engine, %s, runs, %llu, ssts, %llu\n", e->label, (unsigned long long)runs,
                (unsigned long long)ssts);
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        if (fill(e, i) != 0) {
            fprintf(stderr, "kvbench: --replace-cost: a put failed: %s\n", akv_errmsg());
            rc = 1;
            break;
        }
        struct timespec pause = {0, 100000000L}; /* the writer's latency outside a replacement */
        nanosleep(&pause, NULL);
        char m0[256], m1[256];
        akv_stats s0, s1;
        akv_get_stats(e->db, &s0);
        uint64_t mb0 = manifest_bytes(dir, m0, sizeof m0);
        atomic_store(&w->window_max_ns, 0);
        atomic_fetch_add(&w->window, 1);
        uint64_t t0 = akv_kb_mono_ns();
        int frc = akv_flush(e->db);
        uint64_t t1 = akv_kb_mono_ns();
        atomic_fetch_add(&w->window, 1);
        akv_get_stats(e->db, &s1);
        uint64_t mb1 = manifest_bytes(dir, m1, sizeof m1);
        if (frc != AKV_OK) {
            fprintf(stderr, "kvbench: --replace-cost: akv_flush: %s\n", akv_errmsg());
            rc = 1;
            break;
        }
        rc_one *r = &v[i];
        r->wall_ms = (double)(t1 - t0) / 1e6;
        r->ops = s1.family_ops - s0.family_ops;
        r->creates = s1.family_creates - s0.family_creates;
        r->drops = s1.family_drops - s0.family_drops;
        r->family_ms = (double)(s1.family_op_us - s0.family_op_us) / 1e3;
        r->options_bytes = options_bytes(dir);
        /* A MANIFEST RocksDB rolled over counts from its start. */
        r->manifest_growth = strcmp(m0, m1) == 0 ? (int64_t)mb1 - (int64_t)mb0 : (int64_t)mb1;
        r->writer_max_ms = (double)atomic_load(&w->window_max_ns) / 1e6;
        if (out)
            fprintf(out,
                    "[REPLACE], %llu, wall ms, %.2f, family ops, %llu (%llu creates, %llu drops), family ms, "
                    "%.2f, OPTIONS bytes, %llu, MANIFEST growth, %lld, writer max ms, %.2f\n",
                    (unsigned long long)i + 1, r->wall_ms, (unsigned long long)r->ops,
                    (unsigned long long)r->creates, (unsigned long long)r->drops, r->family_ms,
                    (unsigned long long)r->options_bytes, (long long)r->manifest_growth, r->writer_max_ms);
    }
    atomic_store(&w->stop, true);
    pthread_join(w->th, NULL);
    if (w->errors) {
        fprintf(stderr, "kvbench: --replace-cost: %llu of the writer's puts failed\n",
                (unsigned long long)w->errors);
        rc = 1;
    }
    size_t done = rc == 0 ? (size_t)n : 0;
    if (done && out) {
        fprintf(out, "[REPLACE], median, wall ms, %.2f, family ms, %.2f, writer max ms, %.2f\n",
                median(v, done, offsetof(rc_one, wall_ms)), median(v, done, offsetof(rc_one, family_ms)),
                median(v, done, offsetof(rc_one, writer_max_ms)));
        hist_text(out, "during", &w->during);
        hist_text(out, "outside", &w->outside);
    }
    if (done && json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (!f) {
            fprintf(stderr, "kvbench: cannot write --json %s\n", json);
            rc = 1;
        } else {
            const rc_one *last = &v[done - 1];
            fprintf(f,
                    "{\"engine\":\"%s\",\"replace_cost\":{\"runs\":%llu,\"ssts\":%llu,\"replacements\":%zu,"
                    "\"wall_ms_median\":%.3f,\"family_ms_median\":%.3f,\"writer_max_ms_median\":%.3f,"
                    "\"family_ops\":%llu,\"family_creates\":%llu,\"family_drops\":%llu,"
                    "\"options_bytes\":%llu,\"manifest_growth_bytes\":%lld,",
                    e->label, (unsigned long long)runs, (unsigned long long)ssts, done,
                    median(v, done, offsetof(rc_one, wall_ms)), median(v, done, offsetof(rc_one, family_ms)),
                    median(v, done, offsetof(rc_one, writer_max_ms)), (unsigned long long)last->ops,
                    (unsigned long long)last->creates, (unsigned long long)last->drops,
                    (unsigned long long)last->options_bytes, (long long)last->manifest_growth);
            hist_json(f, "writer_during", &w->during);
            fputc(',', f);
            hist_json(f, "writer_outside", &w->outside);
            fputs("}}\n", f);
            if (f != stdout && fclose(f) != 0) {
                fprintf(stderr, "kvbench: cannot write --json %s\n", json);
                rc = 1;
            }
        }
    }
    free(v);
    free(w);
    return rc;
}
