/*
 * kvbench — replays YCSB workloads (or a trace of YCSB's basic binding)
 * against adaptkv or plain RocksDB with the same measurement code, so the
 * two can be compared side by side: throughput, latency percentiles per
 * operation, negative lookups and the disk probes they waste, RocksDB block
 * reads per operation, filter memory and adaptations.
 *
 *   kvbench -P workloads/workloadn [-p name=value ...] [--engine rocksdb] ...
 *
 * Usage and every property: workloads/README.md and docs/kvbench.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "tools/kvbench/kvbench.h"

typedef struct args {
    akv_kb_props props;
    akv_kb_clientopts opts;
    akv_kb_cfg cfg;
    const char *json, *csv, *timeline, *load_timeline, *phase, *workload_name;
    const char *traces[16];
    int ntraces;
    unsigned threads, interval_ms;
    uint64_t seed, negative_stream, absent_cpu, replace_cost;
    double settle_max; /* --settle: longest wait for steady state before a run phase (0: none) */
    bool equal_memory; /* --equal-filter-memory */
    bool flush_after_load, quiet, threads_given, compact_replay, phase_given, engine_given;
} args;

/* One bench thread; counters the sampler reads are atomics. */
typedef struct worker {
    pthread_t th;
    unsigned id;
    struct bench *b;
    akv_kb_client cl;
    void *etls;
    char *vbuf;
    size_t vbuf_len;
    akv_kb_hist hist[AKV_KB_NOPS], ihist[AKV_KB_NOPS], rhist[AKV_KB_RHIST];
    uint64_t ret[AKV_KB_NOPS][AKV_KB_NRET];
    _Atomic uint64_t ops, negatives, neg_wasted, neg_mem_wasted, neg_filters, block_reads, adv_reads,
        adv_wasted;
    _Atomic uint64_t max_ns; /* slowest call since the timeline's last row */
    uint64_t reads_found, probes, wasted, intended, errors, unsupported, retries;
    double cpu_seconds; /* this client thread's own CPU time, read as it ends */
} worker;

typedef struct bench {
    const args *a;
    akv_kb_engine *e;
    const akv_kb_workload *w;
    akv_kb_shared sh;
    const akv_kb_trace *trace;
    bool load, replay, recon;
    uint64_t total;
    akv_kb_estats before; /* the engine's counters when the measured phase began */
    _Atomic uint64_t issued;
    _Atomic bool done, failed;
    struct timespec start;
    worker *ws;
    FILE *timeline;
    double bits_sum; /* filter bits per key, summed over the timeline's rows */
    unsigned bits_rows;
    char failmsg[AKV_KB_ERRLEN];
} bench;

static void usage(FILE *out)
{
    fprintf(out, "usage: kvbench -P WORKLOAD [-p name=value ...] [options]\n"
                 "       kvbench load|run [adaptkv|rocksdb] -P WORKLOAD [YCSB options] [options]\n"
                 "       kvbench --trace FILE [--trace FILE ...] [options]\n"
                 "  -P FILE              YCSB workload property file (repeatable; later files override)\n"
                 "  -p name=value        set one property (wins over every -P file)\n"
                 "YCSB's own options (each sets a property, as -p does):\n"
                 "  -load | -t (-run)    the load phase only | the run phase only (dotransactions)\n"
                 "  -threads N           client threads (threadcount)\n"
                 "  -target N            operations per second over all threads (target)\n"
                 "  -s                   status lines on stderr every status.interval seconds (status)\n"
                 "  -l LABEL             prefix of the status lines (label)\n"
                 "  -db adaptkv|rocksdb  the engine (db), as --engine\n"
                 "kvbench's options:\n"
                 "  --engine E           adaptkv (default) | rocksdb\n"
                 "  --db DIR             database directory (default ./kvbench-db)\n"
                 "  --phase P            load | run | both (default both)\n"
                 "  --threads N          client threads (default: threadcount, else 1)\n"
                 "  --trace FILE         replay YCSB basic-binding output instead of generating ops\n"
                 "  --layout L           adaptkv: hash (default) | ordered\n"
                 "  --policy STR         adaptkv slot policy, e.g. mem=sscf,l0=aqf,l1+=habf\n"
                 "  --filter F           rocksdb: bloom (default) | ribbon\n"
                 "  --rocksdb-memtable-bloom R\n"
                 "                       rocksdb: memtable Bloom filter of R x the memtable size,\n"
                 "                       whole keys (default 0.02, RocksDB's OptimizeForPointLookup;\n"
                 "                       0 = off); its memory is counted as filter memory\n"
                 "  --bits-per-key B     filter memory per key (default 10)\n"
                 "  --equal-filter-memory\n"
                 "                       adaptkv: add RocksDB's memtable Bloom bits per record to B, so\n"
                 "                       that both engines hold the same filter memory per key\n"
                 "  --memtable-mb N      memtable size (default 64)\n"
                 "  --cache-mb N         block cache size (default 64)\n"
                 "  --direct-reads       O_DIRECT reads for SSTs\n"
                 "  --no-l0-front        adaptkv: l0_front = 0, every L0 run's slot checked\n"
                 "                       (no Bloom filter in front of them)\n"
                 "  --rest-compaction[=M]\n"
                 "                       adaptkv: compaction at rest, rest_compaction = M: 0 off, 1 bounded\n"
                 "                       (the engine's default), 2 (or no M) all the way down\n"
                 "  --sync               fsync every write\n"
                 "  --no-flush           do not flush the memtable between load and run\n"
                 "  --settle SECONDS     before the run phase, flush the memtable, then wait (at most\n"
                 "                       SECONDS) until no flush or compaction is due or running: the\n"
                 "                       run then measures the steady state, and the report says which\n"
                 "                       state it measured\n"
                 "  --miss-log-mb N      adaptkv: miss log budget (default 1)\n"
                 "  --sst-kb N           adaptkv: target SST and run size, sst_target_bytes (default\n"
                 "                       65536: 64 MiB); small values make many runs\n"
                 "  --grown-share X      adaptkv: grown_filter_share, how far full adaptive\n"
                 "                       filters may grow, a share of the filter budget\n"
                 "                       (default 0.03; 0 = never, refill in place)\n"
                 "  --compact-replay     after the run phase, compact everything and run the same\n"
                 "                       operations again (same seed); report that second pass\n"
                 "  --seed S             workload random seed (default 1)\n"
                 "  --json FILE          write the results as JSON ('-' = stdout)\n"
                 "  --csv FILE           append a CSV row (header when the file is new)\n"
                 "  --timeline FILE      CSV samples of the run phase, one per interval\n"
                 "  --load-timeline FILE the same for the load phase\n"
                 "  --interval MS        timeline interval (default 1000)\n"
                 "  --quiet              no text report on stdout\n"
                 "  --negative-stream N  open no database: draw N of the workload's negative keys and\n"
                 "                       print how many come for the first time (what no adaptive\n"
                 "                       filter can save) and what the most frequent keys carry\n"
                 "  --absent-cpu N       no phases: on the database as it is, N fresh absent lookups\n"
                 "                       on 1 thread, then N on each of 2; CPU ns per lookup and\n"
                 "                       the 2-vs-1 throughput ratio (text, and --json)\n"
                 "  --replace-cost N     adaptkv, no phases: on the database as it is, N flushes of\n"
                 "                       1,000 puts into new L0 runs while a writer puts 5,000/s;\n"
                 "                       per flush its wall and family-operation time, RocksDB's\n"
                 "                       OPTIONS size and MANIFEST growth, the writer's latency\n");
}

static double now_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Single writer per counter: a relaxed load+store is enough and cheaper
 * than a locked add on the hot path. */
#define BUMP(x, v)                                                                                           \
    atomic_store_explicit(&(x), atomic_load_explicit(&(x), memory_order_relaxed) + (v), memory_order_relaxed)
#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

/* ---- executing one request ------------------------------------------------ */

static const char *value_for(worker *w, uint64_t len)
{
    size_t slack = w->vbuf_len - len;
    return w->vbuf + (slack ? akv_kb_rng_below(&w->cl.rng, slack) : 0);
}

#define KEY(r) ((r)->ext ? (r)->ext : (r)->key)

/* Runs one request. A read-modify-write is a read, then an update whatever
 * the read found (as YCSB): *mid is when the read ended, rc[0] and rc[1]
 * the two results. Returns the request's result: an error if any call
 * failed, else the read's (found or not) or the write's. */
static int exec(worker *w, const akv_kb_req *r, akv_kb_cost *c, uint64_t *mid, int rc[2])
{
    akv_kb_engine *e = w->b->e;
    rc[1] = 0;
    switch (r->op) {
    case AKV_KB_READ:
        return rc[0] = e->read(e, w->etls, KEY(r), r->klen, c);
    case AKV_KB_UPDATE:
    case AKV_KB_INSERT:
        return rc[0] = e->write(e, w->etls, KEY(r), r->klen, value_for(w, r->vlen), r->vlen);
    case AKV_KB_SCAN:
        return rc[0] = e->scan(e, w->etls, KEY(r), r->klen, r->scan, c);
    case AKV_KB_RMW:
        rc[0] = e->read(e, w->etls, KEY(r), r->klen, c);
        *mid = akv_kb_mono_ns();
        rc[1] = e->write(e, w->etls, KEY(r), r->klen, value_for(w, r->vlen), r->vlen);
        return rc[0] < 0 ? rc[0] : rc[1] < 0 ? rc[1] : rc[0];
    default:
        return rc[0] = e->remove(e, w->etls, KEY(r), r->klen);
    }
}

static int ret_kind(const akv_kb_req *r, int rc)
{
    if (rc < 0)
        return AKV_KB_RET_ERROR;
    return rc == AKV_KB_NOTFOUND && r->op != AKV_KB_SCAN ? AKV_KB_RET_NOT_FOUND : AKV_KB_RET_OK;
}

/* One engine call's latency as measurement.interval asks: from its start
 * (op) or from the request's intended start (intended, both). Without a
 * target throughput the intended start is the call's own start, as in
 * YCSB. */
static void measure(worker *w, int op, uint64_t start, uint64_t end, uint64_t intended)
{
    int mode = w->b->a->opts.interval;
    uint64_t from = intended ? intended : start;
    if (end - start > atomic_load_explicit(&w->max_ns, memory_order_relaxed))
        atomic_store_explicit(&w->max_ns, end - start, memory_order_relaxed);
    akv_kb_hist_add(&w->hist[op], end - (mode == AKV_KB_MEASURE_INTENDED ? from : start));
    if (mode == AKV_KB_MEASURE_BOTH)
        akv_kb_hist_add(&w->ihist[op], end - from);
}

/* Latencies and Return= counts of one request; a read-modify-write counts
 * its read and its update too, as YCSB measures every database call. */
static void measure_req(worker *w, const akv_kb_req *r, const int rc[2], uint64_t t0, uint64_t mid,
                        uint64_t t1, uint64_t intended)
{
    if (r->op == AKV_KB_RMW) {
        measure(w, AKV_KB_READ, t0, mid, intended);
        measure(w, AKV_KB_UPDATE, mid, t1, intended);
        w->ret[AKV_KB_READ][ret_kind(r, rc[0])]++;
        w->ret[AKV_KB_UPDATE][ret_kind(r, rc[1])]++;
    } else {
        w->ret[r->op][ret_kind(r, rc[0])]++;
    }
    measure(w, r->op, t0, t1, intended);
}

static void account(worker *w, const akv_kb_req *r, int rc, const akv_kb_cost *c)
{
    if (rc < 0 && !(r->op == AKV_KB_SCAN && rc == AKV_KB_ENOTSUP)) {
        if (w->errors++ == 0) {
            bench *b = w->b;
            snprintf(b->failmsg, sizeof b->failmsg, "%s %.*s: %s", akv_kb_op_names[r->op],
                     (int)(r->klen > 64 ? 64 : r->klen), KEY(r), b->e->errmsg(b->e, rc));
        }
    }
    if (r->op == AKV_KB_SCAN && rc == AKV_KB_ENOTSUP)
        w->unsupported++;
    w->probes += c->probes;
    w->wasted += c->wasted;
    BUMP(w->block_reads, c->block_reads);
    if (r->op == AKV_KB_READ || r->op == AKV_KB_RMW) {
        if (rc == AKV_KB_FOUND)
            w->reads_found++;
        if (rc == AKV_KB_NOTFOUND) {
            BUMP(w->negatives, 1);
            BUMP(w->neg_wasted, c->wasted);
            BUMP(w->neg_mem_wasted, c->mem_wasted);
            BUMP(w->neg_filters, c->filters);
        }
    }
    w->intended += r->kind == AKV_KB_REQ_NEGATIVE;
    if (r->kind == AKV_KB_REQ_EXPLORE || r->kind == AKV_KB_REQ_REPLAY) {
        BUMP(w->adv_reads, 1);
        BUMP(w->adv_wasted, c->wasted);
    }
    BUMP(w->ops, 1);
}

static void sleep_until(uint64_t deadline_ns)
{
    for (uint64_t t = akv_kb_mono_ns(); t < deadline_ns; t = akv_kb_mono_ns()) {
        uint64_t d = deadline_ns - t;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
    }
}

/* Executes and accounts one request. A failed insert of the load phase is
 * retried core_workload_insertion_retry_limit times, core_workload_insertion_
 * retry_interval seconds apart (times 0.8 to 1.2), as CoreWorkload.doInsert. */
static int run_req(worker *w, const akv_kb_req *r, akv_kb_cost *c, uint64_t intended)
{
    const akv_kb_clientopts *o = &w->b->a->opts;
    for (uint64_t attempt = 1;; attempt++) {
        int rc2[2];
        memset(c, 0, sizeof *c);
        uint64_t t0 = akv_kb_mono_ns(), mid = t0;
        int rc = exec(w, r, c, &mid, rc2);
        uint64_t t1 = akv_kb_mono_ns();
        measure_req(w, r, rc2, t0, mid, t1, intended);
        if (r->op == AKV_KB_READ)
            akv_kb_hist_add(&w->rhist[c->block_reads < AKV_KB_RHIST ? c->block_reads : AKV_KB_RHIST - 1],
                            t1 - t0);
        if (rc >= 0 || !w->b->load || attempt > o->retry_limit) {
            account(w, r, rc, c);
            return rc;
        }
        w->retries++;
        fprintf(stderr, "kvbench: retrying insertion of %.*s, retry count: %llu\n",
                (int)(r->klen > 64 ? 64 : r->klen), KEY(r), (unsigned long long)attempt);
        double pause = 1e9 * (double)o->retry_interval * (0.8 + 0.4 * akv_kb_rng_double(&w->cl.rng));
        sleep_until(akv_kb_mono_ns() + (uint64_t)pause);
    }
}

static void trace_req(const akv_kb_trace_op *t, akv_kb_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = (akv_kb_op)t->op;
    r->scan = t->count;
    r->vlen = t->vlen;
    r->ext = t->key;
    r->klen = t->klen;
}

/* Next request of this phase, or false when the phase is over. */
static bool next_req(worker *w, akv_kb_req *r, uint64_t *i)
{
    bench *b = w->b;
    if (atomic_load(&b->done))
        return false;
    *i = atomic_fetch_add(&b->issued, 1);
    if (*i >= b->total)
        return false;
    if (b->trace)
        trace_req(&b->trace->ops[*i], r);
    else if (b->load)
        return akv_kb_client_load_next(&w->cl, r);
    else if (b->recon)
        akv_kb_client_recon_next(&w->cl, r);
    else
        akv_kb_client_next(&w->cl, r);
    return true;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    bench *b = w->b;
    const akv_kb_clientopts *o = &b->a->opts;
    w->etls = b->e->thread_begin ? b->e->thread_begin(b->e) : NULL;
    akv_kb_req r;
    /* target: this thread's share, one operation every `tick` ns (YCSB's
     * ClientThread; below one per ms a thread starts after a random part of
     * a tick, so threads do not move in lockstep). */
    uint64_t tick = o->target > 0 ? (uint64_t)(1e9 * b->a->threads / o->target) : 0;
    if (tick >= 1000000)
        sleep_until(akv_kb_mono_ns() + akv_kb_rng_below(&w->cl.rng, tick));
    /* maxexecutiontime bounds the run phase; a load always inserts every
     * record, and a reconnaissance asks every key it was given. */
    uint64_t i, limit_ns = b->w && !b->load && !b->recon ? b->w->maxexecutiontime * 1000000000ull : 0,
                t_start = akv_kb_mono_ns();
    uint64_t done = 0, intended = 0;
    while (next_req(w, &r, &i)) {
        akv_kb_cost c;
        int rc = run_req(w, &r, &c, intended);
        if (!b->trace)
            akv_kb_client_done(&w->cl, &r, rc, &c);
        uint64_t t1 = akv_kb_mono_ns();
        if (limit_ns && t1 - t_start > limit_ns)
            atomic_store(&b->done, true);
        if (rc < 0 && b->load && !b->trace && !o->keep_going) {
            fprintf(stderr,
                    "kvbench: thread %u stops loading after a failed insert, as YCSB's "
                    "(core_workload_insertion_keep_going_on_error=false)\n",
                    w->id);
            break;
        }
        if (tick) {
            intended = t_start + ++done * tick;
            sleep_until(intended);
        }
    }
    if (b->e->thread_end)
        b->e->thread_end(b->e, w->etls);
    w->cpu_seconds = akv_kb_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

/* ---- sampling: progress bar and timeline ------------------------------------ */

typedef struct sample {
    double t;
    uint64_t ops, neg, neg_wasted, block_reads, adv, adv_wasted, adaptations;
    uint64_t max_ns; /* slowest call since the previous sample */
    uint64_t l0_files, pending_bytes;
    double bits; /* all filter memory per key */
} sample;

static void take_sample(bench *b, sample *s)
{
    memset(s, 0, sizeof *s);
    s->t = now_since(&b->start);
    for (unsigned i = 0; i < b->a->threads; i++) {
        worker *w = &b->ws[i];
        s->ops += LOAD(w->ops);
        s->neg += LOAD(w->negatives);
        s->neg_wasted += LOAD(w->neg_wasted);
        s->block_reads += LOAD(w->block_reads);
        s->adv += LOAD(w->adv_reads);
        s->adv_wasted += LOAD(w->adv_wasted);
        uint64_t m = atomic_exchange_explicit(&w->max_ns, 0, memory_order_relaxed);
        s->max_ns = m > s->max_ns ? m : s->max_ns;
    }
    akv_kb_estats es;
    if (b->timeline && b->e->stats(b->e, &es) == 0) {
        s->adaptations = es.adaptations;
        s->l0_files = es.l0_files;
        s->pending_bytes = es.pending_compaction_bytes;
        s->bits = es.filter_bits_per_key;
    }
}

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

static void timeline_row(bench *b, const sample *p, const sample *s)
{
    double dt = s->t - p->t;
    char label[128];
    akv_kb_csv_label(label, sizeof label, b->e->label);
    const char *phase = b->load ? "load" : b->replay ? "replay" : "run";
    fprintf(b->timeline, "%s,%s,%.3f,%llu,%.1f,%llu,%.4f,%.4f,%.4f,%llu,%.4f,%llu,%s,%.1f,%llu,%.1f,%.2f\n",
            label, b->w ? b->w->name : "trace", s->t, (unsigned long long)s->ops,
            dt > 0 ? (double)(s->ops - p->ops) / dt : 0, (unsigned long long)s->neg,
            ratio(s->neg_wasted - p->neg_wasted, s->neg - p->neg), ratio(s->neg_wasted, s->neg),
            ratio(s->block_reads - p->block_reads, s->ops - p->ops), (unsigned long long)s->adv,
            ratio(s->adv_wasted - p->adv_wasted, s->adv - p->adv), (unsigned long long)s->adaptations,
            phase, (double)s->max_ns / 1000.0, (unsigned long long)s->l0_files, (double)s->pending_bytes / 1048576.0,
            s->bits);
    b->bits_sum += s->bits;
    b->bits_rows++;
    fflush(b->timeline);
}

/* Without a timeline, the filter memory alone, for its mean over the run. */
static void memory_sample(bench *b)
{
    akv_kb_estats es;
    if (b->e->stats(b->e, &es) == 0) {
        b->bits_sum += es.filter_bits_per_key;
        b->bits_rows++;
    }
}

/* YCSB's -s: a status line now, of the operations since the last one. */
static void status_line(bench *b, double t, uint64_t *last_ops, double *last_t)
{
    uint64_t ops = 0;
    for (unsigned i = 0; i < b->a->threads; i++)
        ops += LOAD(b->ws[i].ops);
    uint64_t todo = b->total == UINT64_MAX || ops >= b->total ? 0 : b->total - ops;
    akv_kb_status_line(stderr, b->a->opts.label, t, ops, *last_ops, t - *last_t, todo);
    *last_ops = ops;
    *last_t = t;
}

static void sample_loop(bench *b)
{
    bool status = b->a->opts.status && !b->recon;
    bool tty = !b->a->quiet && !status && isatty(STDERR_FILENO);
    sample prev = {0}, cur;
    double next_row = b->a->interval_ms / 1000.0, status_every = (double)b->a->opts.status_interval,
           next_status = status_every, status_t = 0;
    uint64_t status_ops = 0;
    take_sample(b, &prev);
    if (status)
        status_line(b, 0, &status_ops, &status_t);
    while (!atomic_load(&b->done)) {
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
        double t = now_since(&b->start);
        if (tty) {
            uint64_t ops = 0;
            for (unsigned i = 0; i < b->a->threads; i++)
                ops += LOAD(b->ws[i].ops);
            akv_kb_progress(stderr, b->load ? "load" : b->recon ? "recon" : "run", ops, b->total, t);
        }
        if (status && t >= next_status) {
            status_line(b, t, &status_ops, &status_t);
            next_status += status_every;
        }
        if (t >= next_row) {
            if (b->timeline) {
                take_sample(b, &cur);
                timeline_row(b, &prev, &cur);
                prev = cur;
            } else {
                memory_sample(b);
            }
            next_row += b->a->interval_ms / 1000.0;
        }
    }
    if (tty)
        akv_kb_progress_end(stderr);
    if (status)
        status_line(b, now_since(&b->start), &status_ops, &status_t);
    if (b->timeline) {
        take_sample(b, &cur);
        if (cur.ops > prev.ops)
            timeline_row(b, &prev, &cur);
    }
}

/* ---- phases ------------------------------------------------------------------- */

static size_t max_value(const akv_kb_workload *w, const akv_kb_trace *t)
{
    size_t m = w ? (size_t)w->max_value : 0;
    for (size_t i = 0; t && i < t->n; i++)
        if (t->ops[i].vlen > m)
            m = t->ops[i].vlen;
    return m;
}

/* YCSB's values are printable random bytes; slices of one buffer are as
 * incompressible and cost nothing to produce per operation. */
static int worker_init(bench *b, worker *w, unsigned id, size_t vmax)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    w->b = b;
    for (int i = 0; i < AKV_KB_NOPS; i++) {
        akv_kb_hist_reset(&w->hist[i]);
        akv_kb_hist_reset(&w->ihist[i]);
    }
    if (b->w)
        akv_kb_client_init(&w->cl, b->w, &b->sh, b->a->seed, id);
    else
        akv_kb_rng_seed(&w->cl.rng, b->a->seed + id);
    w->vbuf_len = vmax + (1u << 20);
    w->vbuf = malloc(w->vbuf_len);
    if (!w->vbuf)
        return -1;
    for (size_t i = 0; i < w->vbuf_len; i++)
        w->vbuf[i] = (char)(' ' + akv_kb_rng_below(&w->cl.rng, 95));
    return 0;
}

static void collect(bench *b, akv_kb_result *r)
{
    for (unsigned i = 0; i < b->a->threads; i++) {
        worker *w = &b->ws[i];
        r->ops += LOAD(w->ops);
        r->negative_lookups += LOAD(w->negatives);
        r->negative_wasted += LOAD(w->neg_wasted);
        r->negative_mem_wasted += LOAD(w->neg_mem_wasted);
        r->negative_filters += LOAD(w->neg_filters);
        r->block_reads += LOAD(w->block_reads);
        r->adversary_reads += LOAD(w->adv_reads);
        r->adversary_wasted += LOAD(w->adv_wasted);
        r->reads_found += w->reads_found;
        r->probes += w->probes;
        r->wasted_probes += w->wasted;
        r->intended_negatives += w->intended;
        r->errors += w->errors;
        r->scans_unsupported += w->unsupported;
        r->insert_retries += w->retries;
        r->client_cpu_seconds += w->cpu_seconds;
        for (int k = 0; k < AKV_KB_NOPS; k++) {
            akv_kb_hist_merge(&r->hist[k], &w->hist[k]);
            akv_kb_hist_merge(&r->ihist[k], &w->ihist[k]);
            if (k < AKV_KB_RHIST)
                akv_kb_hist_merge(&r->rhist[k], &w->rhist[k]);
            for (int s = 0; s < AKV_KB_NRET; s++)
                r->ret[k][s] += w->ret[k][s];
        }
    }
    r->adversary_pool = b->sh.pool_n;
}

static void *sampler_main(void *arg)
{
    sample_loop(arg);
    return NULL;
}

/* Workers run the phase; a sampler thread draws the progress bar and the
 * timeline until the last worker is joined. */
static int run_phase(bench *b, akv_kb_result *r)
{
    unsigned n = b->a->threads, started = 0;
    size_t vmax = max_value(b->w, b->trace);
    b->ws = calloc(n, sizeof *b->ws);
    int rc = b->ws ? 0 : -1;
    for (unsigned i = 0; rc == 0 && i < n; i++)
        rc = worker_init(b, &b->ws[i], i, vmax);
    atomic_store(&b->issued, 0);
    atomic_store(&b->done, false);
    double cpu0 = akv_kb_clock_seconds(CLOCK_PROCESS_CPUTIME_ID);
    akv_kb_io io0, io1;
    bool io_ok = akv_kb_proc_io(&io0);
    clock_gettime(CLOCK_MONOTONIC, &b->start);
    for (; rc == 0 && started < n; started++)
        if (pthread_create(&b->ws[started].th, NULL, worker_main, &b->ws[started]))
            rc = -1;
    pthread_t sampler;
    bool sampling = rc == 0 && pthread_create(&sampler, NULL, sampler_main, b) == 0;
    for (unsigned i = 0; i < started; i++)
        pthread_join(b->ws[i].th, NULL);
    r->seconds = now_since(&b->start);
    r->cpu_seconds = akv_kb_clock_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    r->io_known = io_ok && akv_kb_proc_io(&io1);
    if (r->io_known) {
        r->io_read_bytes = io1.read_bytes - io0.read_bytes;
        /* Written back, or still to be: what was dirtied, less what was
         * dropped before writeback. */
        uint64_t w = io1.write_bytes - io0.write_bytes,
                 c = io1.cancelled_write_bytes - io0.cancelled_write_bytes;
        r->io_write_bytes = w > c ? w - c : 0;
    }
    atomic_store(&b->done, true);
    if (sampling)
        pthread_join(sampler, NULL);
    for (int k = 0; k < AKV_KB_NOPS; k++) {
        akv_kb_hist_reset(&r->hist[k]);
        akv_kb_hist_reset(&r->ihist[k]);
    }
    for (int k = 0; k < AKV_KB_RHIST; k++)
        akv_kb_hist_reset(&r->rhist[k]);
    if (b->ws)
        collect(b, r);
    for (unsigned i = 0; b->ws && i < n; i++)
        free(b->ws[i].vbuf);
    free(b->ws);
    b->ws = NULL;
    return rc;
}

/* ---- command line --------------------------------------------------------------- */

static int die(const char *fmt, const char *a)
{
    fprintf(stderr, "kvbench: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return 2;
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "kvbench: %s: '%s' is not a number in [%g, %g]\n", opt, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

enum {
    O_ENGINE = 256,
    O_DB,
    O_PHASE,
    O_THREADS,
    O_TRACE,
    O_LAYOUT,
    O_POLICY,
    O_FILTER,
    O_BPK,
    O_MEMTABLE,
    O_MISSLOG,
    O_CACHE,
    O_DIRECT,
    O_REST,
    O_SYNC,
    O_NOFLUSH,
    O_REPLAY,
    O_SEED,
    O_JSON,
    O_CSV,
    O_TIMELINE,
    O_LOAD_TIMELINE,
    O_INTERVAL,
    O_QUIET,
    O_MEMBLOOM,
    O_NEGSTREAM,
    O_GROWN,
    O_SETTLE,
    O_EQUALMEM,
    O_ABSENTCPU,
    O_REPLACE,
    O_SSTKB,
    O_NOFRONT,
    O_HELP
};

static const struct option long_opts[] = {{"engine", 1, 0, O_ENGINE},
                                          {"db", 1, 0, O_DB},
                                          {"phase", 1, 0, O_PHASE},
                                          {"threads", 1, 0, O_THREADS},
                                          {"trace", 1, 0, O_TRACE},
                                          {"layout", 1, 0, O_LAYOUT},
                                          {"policy", 1, 0, O_POLICY},
                                          {"filter", 1, 0, O_FILTER},
                                          {"bits-per-key", 1, 0, O_BPK},
                                          {"memtable-mb", 1, 0, O_MEMTABLE},
                                          {"cache-mb", 1, 0, O_CACHE},
                                          {"direct-reads", 0, 0, O_DIRECT},
                                          {"rest-compaction", 2, 0, O_REST},
                                          {"sync", 0, 0, O_SYNC},
                                          {"no-flush", 0, 0, O_NOFLUSH},
                                          {"seed", 1, 0, O_SEED},
                                          {"json", 1, 0, O_JSON},
                                          {"csv", 1, 0, O_CSV},
                                          {"timeline", 1, 0, O_TIMELINE},
                                          {"load-timeline", 1, 0, O_LOAD_TIMELINE},
                                          {"interval", 1, 0, O_INTERVAL},
                                          {"quiet", 0, 0, O_QUIET},
                                          {"rocksdb-memtable-bloom", 1, 0, O_MEMBLOOM},
                                          {"negative-stream", 1, 0, O_NEGSTREAM},
                                          {"compact-replay", 0, 0, O_REPLAY},
                                          {"miss-log-mb", 1, 0, O_MISSLOG},
                                          {"grown-share", 1, 0, O_GROWN},
                                          {"settle", 1, 0, O_SETTLE},
                                          {"equal-filter-memory", 0, 0, O_EQUALMEM},
                                          {"absent-cpu", 1, 0, O_ABSENTCPU},
                                          {"replace-cost", 1, 0, O_REPLACE},
                                          {"sst-kb", 1, 0, O_SSTKB},
                                          {"no-l0-front", 0, 0, O_NOFRONT},
                                          {"help", 0, 0, O_HELP},
                                          {0, 0, 0, 0}};

static void defaults(args *a)
{
    memset(a, 0, sizeof *a);
    a->cfg.engine = "adaptkv";
    a->cfg.dir = "kvbench-db";
    a->cfg.filter = "bloom";
    a->cfg.bits_per_key = 10;
    a->cfg.memtable_bloom_ratio = AKV_KB_MEMTABLE_BLOOM_RATIO;
    a->cfg.memtable_bytes = 64ull << 20;
    a->cfg.cache_bytes = 64ull << 20;
    a->cfg.rest_compaction = -1; /* the engine's default */
    a->phase = "both";
    a->threads = 1;
    a->interval_ms = 1000;
    a->seed = 1;
    a->flush_after_load = true;
}

/* Options that take a number: bounds and the unit they are given in. */
static const struct num_opt {
    int id;
    const char *name;
    double lo, hi, scale;
} num_opts[] = {{O_THREADS, "--threads", 1, 256, 1},
                {O_BPK, "--bits-per-key", 1, 64, 1},
                {O_MEMTABLE, "--memtable-mb", 1, 1e6, 1048576},
                {O_CACHE, "--cache-mb", 1, 1e6, 1048576},
                {O_MISSLOG, "--miss-log-mb", 1, 1e5, 1048576},
                {O_SEED, "--seed", 0, 1e18, 1},
                {O_INTERVAL, "--interval", 10, 1e6, 1},
                {O_MEMBLOOM, "--rocksdb-memtable-bloom", 0, 0.25, 1},
                {O_NEGSTREAM, "--negative-stream", 6, 1e10, 1},
                {O_GROWN, "--grown-share", 0, 64, 1},
                {O_SETTLE, "--settle", 0, 86400, 1},
                {O_ABSENTCPU, "--absent-cpu", 1000, 1e9, 1},
                {O_REPLACE, "--replace-cost", 1, 1e5, 1},
                {O_SSTKB, "--sst-kb", 4, 1e8, 1024}};

static void set_num(args *a, int id, double v)
{
    if (id == O_THREADS) {
        a->threads = (unsigned)v;
        a->threads_given = true;
    } else if (id == O_BPK) {
        a->cfg.bits_per_key = v;
    } else if (id == O_MEMTABLE) {
        a->cfg.memtable_bytes = (uint64_t)v;
    } else if (id == O_CACHE) {
        a->cfg.cache_bytes = (uint64_t)v;
    } else if (id == O_MISSLOG) {
        a->cfg.miss_log_bytes = (uint64_t)v;
    } else if (id == O_SEED) {
        a->seed = (uint64_t)v;
    } else if (id == O_MEMBLOOM) {
        a->cfg.memtable_bloom_ratio = v;
    } else if (id == O_NEGSTREAM) {
        a->negative_stream = (uint64_t)v;
    } else if (id == O_SETTLE) {
        a->settle_max = v;
    } else if (id == O_ABSENTCPU) {
        a->absent_cpu = (uint64_t)v;
    } else if (id == O_REPLACE) {
        a->replace_cost = (uint64_t)v;
        /* No L0 compaction between its flushes (RocksDB's stop follows). */
        a->cfg.l0_trigger = (int)a->replace_cost + 64;
    } else if (id == O_SSTKB) {
        a->cfg.sst_target_bytes = (uint64_t)v;
    } else if (id == O_GROWN) {
        a->cfg.grown_share = v;
        a->cfg.grown_share_set = true;
    } else {
        a->interval_ms = (unsigned)v;
    }
}

/* -1 on a bad number, 0 when handled, 1 when c is not a numeric option. */
static int numeric_opt(args *a, int c, const char *v)
{
    for (size_t i = 0; i < sizeof num_opts / sizeof *num_opts; i++) {
        const struct num_opt *o = &num_opts[i];
        double d;
        if (o->id != c)
            continue;
        if (parse_num(o->name, v, o->lo, o->hi, &d))
            return -1;
        set_num(a, c, d * o->scale);
        return 0;
    }
    return 1;
}

static int other_opt(args *a, int c, const char *v)
{
    switch (c) {
    case O_ENGINE:
        a->cfg.engine = v;
        a->engine_given = true;
        break;
    case O_DB:
        a->cfg.dir = v;
        break;
    case O_PHASE:
        a->phase = v;
        a->phase_given = true;
        break;
    case O_TRACE:
        if (a->ntraces == 16)
            return die("at most 16 --trace files", "");
        a->traces[a->ntraces++] = v;
        break;
    case O_LAYOUT:
        if (strcmp(v, "hash") && strcmp(v, "ordered"))
            return die("--layout: '%s' is not hash or ordered", v);
        a->cfg.ordered = strcmp(v, "ordered") == 0;
        break;
    case O_POLICY:
        a->cfg.policy = v;
        break;
    case O_FILTER:
        a->cfg.filter = v;
        break;
    case O_DIRECT:
        a->cfg.direct_reads = true;
        break;
    case O_REST:
        if (!v)
            a->cfg.rest_compaction = 2;
        else if (strlen(v) == 1 && v[0] >= '0' && v[0] <= '2')
            a->cfg.rest_compaction = v[0] - '0';
        else
            return die("--rest-compaction takes 0, 1 or 2, not '%s'", v);
        break;
    case O_SYNC:
        a->cfg.sync = true;
        break;
    case O_NOFRONT:
        a->cfg.no_l0_front = true;
        break;
    case O_NOFLUSH:
        a->flush_after_load = false;
        break;
    case O_REPLAY:
        a->compact_replay = true;
        break;
    case O_EQUALMEM:
        a->equal_memory = true;
        break;
    case O_JSON:
        a->json = v;
        break;
    case O_CSV:
        a->csv = v;
        break;
    case O_TIMELINE:
        a->timeline = v;
        break;
    case O_LOAD_TIMELINE:
        a->load_timeline = v;
        break;
    case O_QUIET:
        a->quiet = true;
        break;
    default:
        usage(stderr);
        return 2;
    }
    return 0;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int parse_args(args *a, int argc, char **argv)
{
    int c, rc;
    while ((c = getopt_long(argc, argv, "P:p:h", long_opts, NULL)) != -1) {
        if (c == 'h' || c == O_HELP) {
            usage(stdout);
            exit(0);
        }
        if (c == 'P') {
            if (akv_kb_props_load(&a->props, optarg))
                return die("%s", a->props.err);
            a->workload_name = base_name(optarg);
        } else if (c == 'p') {
            if (akv_kb_props_set_arg(&a->props, optarg, optind - 1))
                return die("%s", a->props.err);
        } else if ((rc = numeric_opt(a, c, optarg)) <= 0) {
            if (rc < 0)
                return 2;
        } else if ((rc = other_opt(a, c, optarg)) != 0) {
            return rc;
        }
    }
    if (optind < argc)
        return die("unexpected argument '%s' (see --help)", argv[optind]);
    if (!a->workload_name && a->ntraces == 0 && !a->replace_cost)
        return die("%s", "give a workload (-P FILE) or a trace (--trace FILE); see --help");
    if (strcmp(a->phase, "load") && strcmp(a->phase, "run") && strcmp(a->phase, "both"))
        return die("--phase: '%s' is not load, run or both", a->phase);
    return 0;
}

/* What YCSB's own command line asked for, once the properties are read:
 * the phase (dotransactions: -load, -t, bin/ycsb's load|run), the engine
 * (db: -db, bin/ycsb's binding name); properties kvbench cannot honour are
 * refused by name. */
static int apply_ycsb(args *a)
{
    if (akv_kb_ycsb_refuse(&a->props))
        return die("%s", a->props.err);
    const char *phase = akv_kb_clientopts_phase(&a->opts);
    if (phase && a->phase_given && strcmp(a->phase, phase)) {
        fprintf(stderr, "kvbench: --phase %s and dotransactions=%s (-load, -t) disagree\n", a->phase,
                strcmp(phase, "run") ? "false" : "true");
        return 2;
    }
    if (phase)
        a->phase = phase;
    const char *db = a->opts.db;
    if (db && strcmp(db, "adaptkv") && strcmp(db, "rocksdb"))
        return die("db=%s cannot be honoured: kvbench drives adaptkv or rocksdb (-db adaptkv|rocksdb, "
                   "or --engine), not YCSB's bindings",
                   db);
    if (db && a->engine_given && strcmp(db, a->cfg.engine)) {
        fprintf(stderr, "kvbench: --engine %s and db=%s (-db) disagree\n", a->cfg.engine, db);
        return 2;
    }
    if (db)
        a->cfg.engine = db;
    return 0;
}

/* ---- main ----------------------------------------------------------------------- */

static bool trace_scans(const akv_kb_trace *t)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (t->ops[i].op == AKV_KB_SCAN)
            return true;
    return false;
}

/* adaptkv's hash layout keeps data in hash order: a workload with scans
 * cannot run on it. Say so before loading anything. */
static int check_scans(akv_kb_engine *e, const args *a, const akv_kb_workload *w, const akv_kb_trace *t)
{
    bool needs = (w && w->prop[AKV_KB_SCAN] > 0 && strcmp(a->phase, "load")) || trace_scans(t);
    if (!needs || e->can_scan(e))
        return 0;
    fprintf(stderr,
            "kvbench: %s needs range scans (scanproportion > 0), but adaptkv's 'hash' layout keeps data in "
            "hash order and has none; run it with --layout ordered\n",
            w ? w->name : "the trace");
    return 3;
}

static int open_engine(akv_kb_engine *e, const args *a)
{
    if (strcmp(a->cfg.engine, "adaptkv") == 0)
        akv_kb_engine_akv(e);
    else if (strcmp(a->cfg.engine, "rocksdb") == 0)
        akv_kb_engine_rocksdb(e);
    else
        return die("--engine: '%s' is not adaptkv or rocksdb", a->cfg.engine);
    char err[AKV_KB_ERRLEN];
    mkdir(a->cfg.dir, 0755);
    if (e->open(e, &a->cfg, err, sizeof err))
        return die("%s", err);
    return 0;
}

static int write_outputs(const args *a, const akv_kb_result *r)
{
    const char *ef = a->opts.exportfile;
    if (ef) { /* YCSB's exportfile: the report goes there instead of stdout */
        FILE *f = fopen(ef, "w");
        if (f)
            akv_kb_report_text(r, f);
        if (!f || ferror(f) | fclose(f))
            return die("cannot write exportfile %s", ef);
    } else if (!a->quiet) {
        akv_kb_report_text(r, stdout);
    }
    if (a->json) {
        FILE *f = strcmp(a->json, "-") ? fopen(a->json, "w") : stdout;
        if (!f || akv_kb_report_json(r, f) || (f != stdout && fclose(f)))
            return die("cannot write --json %s", a->json);
    }
    if (a->csv) {
        struct stat st;
        bool fresh = stat(a->csv, &st) != 0 || st.st_size == 0;
        FILE *f = fopen(a->csv, "a");
        if (!f || akv_kb_report_csv(r, f, fresh) || fclose(f))
            return die("cannot write --csv %s", a->csv);
    }
    return 0;
}

/* adversaryrecon: before the run's clock starts, the attacker asks that many
 * fresh absent keys and keeps those that cost a probe, so that its pool can
 * be larger than the block cache from the first second. Nothing of it is
 * measured; the engine's counters are read again when it ends. */
static int recon(bench *b, akv_kb_result *r)
{
    akv_kb_result scratch = {0};
    FILE *timeline = b->timeline;
    b->timeline = NULL;
    b->recon = true;
    b->total = b->w->adv_recon;
    int rc = run_phase(b, &scratch);
    b->recon = false;
    b->timeline = timeline;
    r->errors += scratch.errors; /* reported with the run's, as the first one's message */
    r->recon_lookups = scratch.ops;
    r->recon_pool = b->sh.pool_n;
    if (!b->a->quiet)
        fprintf(stderr,
                "kvbench: reconnaissance: %llu fresh absent keys asked in %.1f s (%llu probes wasted); "
                "the attacker starts with %llu keys\n",
                (unsigned long long)scratch.ops, scratch.seconds,
                (unsigned long long)scratch.adversary_wasted, (unsigned long long)b->sh.pool_n);
    b->e->stats(b->e, &b->before);
    return rc;
}

static int do_phase(bench *b, akv_kb_result *r, bool load)
{
    const akv_kb_workload *w = b->w;
    b->load = load;
    if (w && akv_kb_shared_init(&b->sh, w, load))
        return die("%s", "out of memory");
    int rc = !load && w && w->adv_recon ? recon(b, r) : 0;
    if (b->trace)
        b->total = b->trace->n;
    else if (w)
        b->total = load ? w->loadcount : w->operationcount ? w->operationcount : UINT64_MAX; /* 0: no limit */
    if (rc == 0)
        rc = run_phase(b, r);
    if (w)
        akv_kb_shared_free(&b->sh);
    if (rc)
        return die("%s", "cannot start threads");
    if (r->errors)
        fprintf(stderr, "kvbench: %llu operations failed; the first: %s\n", (unsigned long long)r->errors,
                b->failmsg);
    return 0;
}

static FILE *open_timeline(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f)
        fputs("engine,workload,seconds,ops,ops_per_sec,negative_lookups,wasted_per_negative,"
              "wasted_per_negative_cumulative,block_reads_per_op,adversary_reads,adversary_wasted_per_read,"
              "adaptations,phase,max_latency_us,l0_files,pending_compaction_mb,filter_bits_per_key\n",
              f);
    return f;
}

static int run_all(const args *a, akv_kb_engine *e, const akv_kb_workload *w, const akv_kb_trace *t)
{
    bench b = {.a = a, .e = e, .w = t->n ? NULL : w, .trace = t->n ? t : NULL};
    akv_kb_result load = {0}, run = {0};
    bool do_load = strcmp(a->phase, "run") && !b.trace, do_run = strcmp(a->phase, "load") || b.trace;
    int rc = 0;
    if (do_load && a->load_timeline && !(b.timeline = open_timeline(a->load_timeline)))
        return die("cannot write --load-timeline %s", a->load_timeline);
    if (do_load && (rc = do_phase(&b, &load, true)) == 0 && a->flush_after_load && e->flush(e))
        fprintf(stderr, "kvbench: flush after load failed: %s\n", e->errmsg(e, -1));
    if (b.timeline && fclose(b.timeline) != 0 && rc == 0)
        rc = die("cannot write --load-timeline %s", a->load_timeline);
    b.timeline = NULL;
    if (rc == 0 && do_run && a->timeline && !(b.timeline = open_timeline(a->timeline)))
        return die("cannot write --timeline %s", a->timeline);
    /* Steady state: the memtable flushed (what an earlier run wrote is in
     * it after the open), then no flush or compaction due or running. */
    if (rc == 0 && do_run && a->settle_max > 0 && e->flush(e))
        rc = die("flush before settling failed: %s", e->errmsg(e, -1));
    if (rc == 0 && do_run && a->settle_max > 0 && akv_kb_settle(e, a->settle_max, stderr, &run.settle))
        rc = die("cannot read the background work owed: %s", e->errmsg(e, -2));
    e->stats(e, &b.before);
    run.start_l0_files = b.before.l0_files;
    run.start_pending_bytes = b.before.pending_compaction_bytes;
    b.bits_sum = 0;
    b.bits_rows = 0;
    if (rc == 0 && do_run)
        rc = do_phase(&b, &run, false);
    if (rc == 0 && do_run && a->compact_replay) {
        /* What the filters learned from the first pass, after every run
         * was rewritten: the same operations again (same seed). */
        uint64_t ops = run.ops, negs = run.negative_lookups, wasted = run.negative_wasted;
        double secs = run.seconds;
        akv_kb_settle_result settle = run.settle;
        if (e->compact(e))
            rc = die("compaction before the replay failed: %s", e->errmsg(e, -1));
        memset(&run, 0, sizeof run);
        run.settle = settle;
        e->stats(e, &b.before);
        run.start_l0_files = b.before.l0_files;
        run.start_pending_bytes = b.before.pending_compaction_bytes;
        b.bits_sum = 0;
        b.bits_rows = 0;
        b.replay = true;
        if (rc == 0)
            rc = do_phase(&b, &run, false);
        run.first_pass = true;
        run.first_ops = ops;
        run.first_seconds = secs;
        run.first_negative_lookups = negs;
        run.first_negative_wasted = wasted;
    }
    if (b.timeline)
        fclose(b.timeline);
    akv_kb_result *r = do_run ? &run : &load;
    r->engine = e->name;
    r->label = e->label;
    r->workload = b.trace ? "trace" : w->name;
    r->phase = do_run ? "run" : "load";
    r->cfg = &a->cfg;
    r->opts = &a->opts;
    r->threads = a->threads;
    r->records = w ? w->recordcount : 0;
    r->load_ops = load.ops;
    r->load_seconds = load.seconds;
    e->stats(e, &r->es);
    r->filter_bits_mean = b.bits_rows ? b.bits_sum / b.bits_rows : 0;
    r->adaptations = r->es.adaptations - b.before.adaptations;
    if (rc == 0)
        rc = write_outputs(a, r);
    return rc ? rc : (load.errors || run.errors) ? 1 : 0;
}

static int load_trace(akv_kb_trace *t, const char *path, bool quiet)
{
    size_t ops = t->n;
    uint64_t props = t->skipped_props, banner = t->skipped_banner, cmds = t->skipped_commands;
    if (akv_kb_trace_load(t, path))
        return die("%s", t->err);
    if (!quiet)
        fprintf(stderr,
                "kvbench: %s: %zu operations; skipped %llu properties, %llu command lines and %llu other "
                "lines (banner, status, summary)\n",
                path, t->n - ops, (unsigned long long)(t->skipped_props - props),
                (unsigned long long)(t->skipped_commands - cmds),
                (unsigned long long)(t->skipped_banner - banner));
    return 0;
}

/* --equal-filter-memory: RocksDB's filter memory is its SST filters (about
 * --bits-per-key per key) plus a memtable Bloom filter of
 * --rocksdb-memtable-bloom x the memtable size, per memtable whatever it
 * holds; adaptkv's bits_per_key bounds all of its filter memory, its
 * memtable guard's included. So adaptkv gets B plus the memtable Bloom's
 * bits spread over recordcount records (one live memtable: the run phase's
 * usual case), and both report their totals (filter_bits_per_key) to check
 * the match. */
static void equal_filter_memory(args *a, const akv_kb_workload *w)
{
    if (strcmp(a->cfg.engine, "adaptkv") || !w || !w->recordcount)
        return;
    double add = a->cfg.memtable_bloom_ratio * (double)a->cfg.memtable_bytes * 8 / (double)w->recordcount;
    double b = a->cfg.bits_per_key + add;
    a->cfg.bits_per_key = b > 64 ? 64 : b;
    if (!a->quiet)
        fprintf(stderr,
                "kvbench: --equal-filter-memory: adaptkv at %.2f bits/key (RocksDB's memtable Bloom "
                "filter adds %.2f bits per record to its SST filters' bits)\n",
                a->cfg.bits_per_key, add);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--version") == 0) {
            printf("kvbench (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
            return 0;
        }
    args a;
    defaults(&a);
    akv_kb_workload w = {0};
    akv_kb_trace t = {0};
    akv_kb_engine e = {0};
    akv_kb_argv yv;
    int rc =
        akv_kb_ycsb_argv(&yv, argc, argv, long_opts) ? die("%s", yv.err) : parse_args(&a, yv.argc, yv.argv);
    if (rc == 0 && a.workload_name) {
        if (akv_kb_workload_load(&w, &a.props))
            rc = die("%s", a.props.err);
        else
            snprintf(w.name, sizeof w.name, "%s", a.workload_name);
        if (rc == 0 && !a.quiet)
            akv_kb_props_warn_unknown(&a.props, stderr);
    }
    if (rc == 0 && akv_kb_clientopts_load(&a.opts, &a.props))
        rc = die("%s", a.props.err);
    if (rc == 0)
        rc = apply_ycsb(&a);
    if (rc == 0 && a.negative_stream) {
        rc = a.workload_name ? akv_kb_negative_stream(&w, a.negative_stream, a.seed, stdout)
                             : die("--negative-stream needs a workload (-P)%s", "");
        akv_kb_workload_free(&w);
        akv_kb_props_free(&a.props);
        akv_kb_argv_free(&yv);
        return rc;
    }
    if (rc == 0 && a.equal_memory)
        equal_filter_memory(&a, a.workload_name ? &w : NULL);
    if (rc == 0 && !a.threads_given && a.opts.threadcount)
        a.threads = (unsigned)a.opts.threadcount;
    for (int i = 0; rc == 0 && i < a.ntraces; i++)
        rc = load_trace(&t, a.traces[i], a.quiet);
    if (rc == 0)
        rc = open_engine(&e, &a);
    if (rc == 0) {
        rc = check_scans(&e, &a, a.workload_name ? &w : NULL, &t);
        if (rc == 0 && a.replace_cost) {
            akv_kb_settle_result sr;
            rc = akv_kb_settle(&e, 3600, a.quiet ? NULL : stderr, &sr);
            if (rc == 0)
                rc = akv_kb_replace_cost(&e, a.cfg.dir, a.replace_cost, a.json, a.quiet ? NULL : stdout);
        } else if (rc == 0 && a.absent_cpu)
            rc = akv_kb_absent_cpu(&e, a.absent_cpu, a.seed, (unsigned)w.zeropadding, a.json,
                                   a.quiet ? NULL : stdout);
        else if (rc == 0)
            rc = run_all(&a, &e, &w, &t);
        e.close(&e);
    }
    akv_kb_trace_free(&t);
    akv_kb_workload_free(&w);
    akv_kb_props_free(&a.props);
    akv_kb_argv_free(&yv);
    return rc;
}
