/*
 * kvbench.h — the pieces of the YCSB replayer (tools/kvbench.c): property
 * files, YCSB's generators, workloads, traces, latency histograms, the engine
 * vtable and the reports. Everything here is internal to the tool; names carry
 * the akv_kb_ prefix so they never collide with the library's.
 */
#ifndef AKV_KVBENCH_H
#define AKV_KVBENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define AKV_KB_ERRLEN 512

/* ---- property files (props.c) ------------------------------------------ */

/* One name=value with where it came from, so a bad value can be reported as
 * "FILE:LINE: name: problem". Command-line -p values use file "-p". */
typedef struct akv_kb_prop {
    char *name, *value, *file;
    int line;
} akv_kb_prop;

typedef struct akv_kb_props {
    akv_kb_prop *v;
    size_t n, cap;
    char err[AKV_KB_ERRLEN];
} akv_kb_props;

int akv_kb_props_load(akv_kb_props *p, const char *path);
int akv_kb_props_parse(akv_kb_props *p, const char *file, const char *buf, size_t len);
int akv_kb_props_set_arg(akv_kb_props *p, const char *arg, int argno);
const akv_kb_prop *akv_kb_props_find(const akv_kb_props *p, const char *name);
int akv_kb_props_str(akv_kb_props *p, const char *name, const char *def, const char **out);
int akv_kb_props_u64(akv_kb_props *p, const char *name, uint64_t def, uint64_t *out);
int akv_kb_props_f64(akv_kb_props *p, const char *name, double def, double lo, double hi, double *out);
int akv_kb_props_bool(akv_kb_props *p, const char *name, bool def, bool *out);
int akv_kb_props_choice(akv_kb_props *p, const char *name, const char *def, const char *const *choices,
                        int *out);
void akv_kb_props_warn_unknown(const akv_kb_props *p, FILE *out);
void akv_kb_props_free(akv_kb_props *p);

/* ---- random numbers and YCSB generators (generators.c) ----------------- */

typedef struct akv_kb_rng {
    uint64_t s[4];
} akv_kb_rng;

void akv_kb_rng_seed(akv_kb_rng *r, uint64_t seed);
uint64_t akv_kb_rng_next(akv_kb_rng *r);
double akv_kb_rng_double(akv_kb_rng *r);              /* [0, 1) */
uint64_t akv_kb_rng_below(akv_kb_rng *r, uint64_t n); /* [0, n) */

/* YCSB's Utils.fnvhash64: FNV-1a over the 8 little-endian bytes, then abs. */
uint64_t akv_kb_fnv64(uint64_t v);

/* zeta(n, theta) = sum_{i=1..n} 1/i^theta, starting from a partial sum over
 * the first `st` items (YCSB's incremental form). */
double akv_kb_zeta(uint64_t st, uint64_t n, double theta, double initial);

/* YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record
 * synthetic databases"): `items` items from `base`, base the most popular.
 * Asked for more items than it was built for (SkewedLatest), it grows zetan
 * incrementally and recomputes eta with the item count it was built for. */
typedef struct akv_kb_zipf {
    uint64_t base, items, count_for_zeta;
    double theta, zeta2, alpha, zetan, eta;
} akv_kb_zipf;

void akv_kb_zipf_init(akv_kb_zipf *z, uint64_t base, uint64_t items, double theta);
void akv_kb_zipf_init_zeta(akv_kb_zipf *z, uint64_t base, uint64_t items, double theta, double zetan);
uint64_t akv_kb_zipf_next(akv_kb_zipf *z, akv_kb_rng *r);
/* YCSB's nextLong(itemcount). */
uint64_t akv_kb_zipf_next_n(akv_kb_zipf *z, akv_kb_rng *r, uint64_t itemcount);

/* YCSB's ScrambledZipfianGenerator: a Zipfian over 0 .. 10^10 (10^10 + 1
 * items), each draw hashed into [min, max], so popular items are spread
 * over the key space. */
typedef struct akv_kb_scrambled {
    akv_kb_zipf z;
    uint64_t min, items;
} akv_kb_scrambled;

#define AKV_KB_SCRAMBLED_ITEMS 10000000000ull
#define AKV_KB_ZIPF_THETA      0.99
#define AKV_KB_ZETAN_1E10_099  26.46902820178302 /* YCSB's precomputed zeta(10^10, 0.99) */

void akv_kb_scrambled_init(akv_kb_scrambled *s, uint64_t min, uint64_t max, double theta);
uint64_t akv_kb_scrambled_next(akv_kb_scrambled *s, akv_kb_rng *r);

/* YCSB's HistogramGenerator (fieldlengthdistribution=histogram): a file
 * "BlockSize<TAB>B" then "i<TAB>count" for i = 0, 1, 2, ... (lenhist.c). */
typedef struct akv_kb_lenhist {
    uint64_t block, area;
    uint64_t *buckets;
    size_t n;
} akv_kb_lenhist;

int akv_kb_lenhist_load(akv_kb_lenhist *h, const char *path, char *err, size_t errlen);
int akv_kb_lenhist_parse(akv_kb_lenhist *h, const char *file, const char *buf, size_t len, char *err,
                         size_t errlen);
uint64_t akv_kb_lenhist_next(const akv_kb_lenhist *h, akv_kb_rng *r);
uint64_t akv_kb_lenhist_max(const akv_kb_lenhist *h);
void akv_kb_lenhist_free(akv_kb_lenhist *h);

/* The distributions of YCSB's CoreWorkload. The first six are request
 * distributions (requestdistribution=NAME, in this order). */
typedef enum akv_kb_dist {
    AKV_KB_UNIFORM,
    AKV_KB_ZIPFIAN, /* scrambled */
    AKV_KB_LATEST,
    AKV_KB_HOTSPOT,
    AKV_KB_SEQUENTIAL,
    AKV_KB_EXPONENTIAL,
    AKV_KB_CONSTANT,
    AKV_KB_PLAIN_ZIPFIAN, /* scan and field lengths */
    AKV_KB_HISTOGRAM,     /* field lengths */
} akv_kb_dist;

extern const char *const akv_kb_dist_names[]; /* NULL-terminated, enum order */

/* A number generator of any of them. */
typedef struct akv_kb_gen {
    akv_kb_dist dist;
    uint64_t lo, hi; /* inclusive range (uniform, hotspot, sequential, zipfians); constant's value */
    akv_kb_scrambled sz;
    akv_kb_zipf z; /* plain zipfian; latest */
    uint64_t hot, seq;
    double hot_opn, exp_gamma;
    _Atomic uint64_t *counter; /* sequential: shared by the threads (NULL: seq) */
    const akv_kb_lenhist *hist;
} akv_kb_gen;

void akv_kb_gen_uniform(akv_kb_gen *g, uint64_t lo, uint64_t hi);
void akv_kb_gen_constant(akv_kb_gen *g, uint64_t v);
void akv_kb_gen_zipfian(akv_kb_gen *g, uint64_t lo, uint64_t hi, double theta);
void akv_kb_gen_plain_zipfian(akv_kb_gen *g, uint64_t lo, uint64_t hi, double theta);
/* `last`: the newest acknowledged key number when the workload starts. */
void akv_kb_gen_latest(akv_kb_gen *g, uint64_t last, double theta);
void akv_kb_gen_hotspot(akv_kb_gen *g, uint64_t lo, uint64_t hi, double hot_data, double hot_opn);
void akv_kb_gen_sequential(akv_kb_gen *g, uint64_t lo, uint64_t hi, _Atomic uint64_t *counter);
void akv_kb_gen_exponential(akv_kb_gen *g, double percentile, double range);
void akv_kb_gen_histogram(akv_kb_gen *g, const akv_kb_lenhist *h);
/* `last` is the newest acknowledged item (latest, exponential). */
uint64_t akv_kb_gen_next(akv_kb_gen *g, akv_kb_rng *r, uint64_t last);

/* "user" + (hashed) number, zero-padded to `pad` digits: YCSB's buildKeyName. */
size_t akv_kb_key(char *buf, size_t cap, uint64_t keynum, bool hashed, unsigned pad);

/* ---- YCSB client properties (clientopts.c) ------------------------------ */

#define AKV_KB_MAX_PCTS 32

enum { AKV_KB_MEASURE_OP, AKV_KB_MEASURE_INTENDED, AKV_KB_MEASURE_BOTH }; /* measurement.interval */

typedef struct akv_kb_clientopts {
    uint64_t threadcount;   /* 0: not given */
    double target;          /* operations per second over all threads; 0: no limit */
    const char *exportfile; /* the text report goes there (NULL: stdout) */
    int interval;           /* AKV_KB_MEASURE_* */
    double pcts[AKV_KB_MAX_PCTS];
    size_t npcts;
    bool keep_going; /* core_workload_insertion_keep_going_on_error */
    uint64_t retry_limit, retry_interval;
    int dotransactions;       /* -1: not given; else YCSB's dotransactions (-load: 0, -t: 1) */
    bool status;              /* -s: status lines on stderr */
    uint64_t status_interval; /* status.interval, seconds */
    const char *label;        /* -l: the status lines' prefix */
    const char *db;           /* -db, or bin/ycsb's binding name: an engine name, or NULL */
} akv_kb_clientopts;

int akv_kb_clientopts_load(akv_kb_clientopts *o, akv_kb_props *p);
/* The phase dotransactions asks for ("load" or "run"), or NULL when no
 * property, -load, -t or bin/ycsb command set it. */
const char *akv_kb_clientopts_phase(const akv_kb_clientopts *o);
/* How YCSB names a percentile: "50th", "1st", "99.9". */
void akv_kb_pct_name(char *out, size_t cap, double pct);

/* ---- YCSB's command line (ycsbcli.c) ------------------------------------ */

/* argv with YCSB's words (bin/ycsb's load|run [DB], -load, -t, -run, -s,
 * -threads N, -target N, -l L, -db D) turned into the -p settings of the
 * properties they set; the words of kvbench's own options are kept. */
typedef struct akv_kb_argv {
    int argc, nowned;
    char **argv, **owned;
    char err[AKV_KB_ERRLEN];
} akv_kb_argv;

struct option;
int akv_kb_ycsb_argv(akv_kb_argv *v, int argc, char **argv, const struct option *longopts);
void akv_kb_argv_free(akv_kb_argv *v);
/* -1 with p->err naming the first YCSB property set to a value kvbench
 * cannot honour (workload, exporter, measurementtype, ...). */
int akv_kb_ycsb_refuse(akv_kb_props *p);

/* ---- status lines (status.c) --------------------------------------------- */

/* One line of YCSB's StatusThread on `out`: LABEL DATE SECS sec: OPS
 * operations; CUR current ops/sec; est completion in ...; `todo` is what is
 * left (0: unknown or nothing). */
void akv_kb_status_line(FILE *out, const char *label, double secs, uint64_t ops, uint64_t prev_ops,
                        double interval_secs, uint64_t todo);

/* ---- latency histogram (histogram.c) ----------------------------------- */

/* Log-bucketed: 32 linear sub-buckets per power of two of nanoseconds, so a
 * percentile is within 1/32 (3%) of the true value. */
#define AKV_KB_HIST_SUB     32
#define AKV_KB_HIST_BUCKETS (AKV_KB_HIST_SUB * 60)

/* READ latencies kept apart by block reads: 0, 1, 2 or more. */
#define AKV_KB_RHIST 3

typedef struct akv_kb_hist {
    uint64_t count, sum_ns, min_ns, max_ns;
    uint64_t b[AKV_KB_HIST_BUCKETS];
} akv_kb_hist;

void akv_kb_hist_reset(akv_kb_hist *h);
void akv_kb_hist_add(akv_kb_hist *h, uint64_t ns);
void akv_kb_hist_merge(akv_kb_hist *into, const akv_kb_hist *h);
uint64_t akv_kb_hist_pct(const akv_kb_hist *h, double pct); /* ns, pct in [0, 100] */
size_t akv_kb_hist_index(uint64_t ns);
uint64_t akv_kb_hist_lower(size_t idx);

/* ---- engines (engine_akv.c, engine_rocksdb.c) --------------------------- */

/* RocksDB's memtable Bloom filter as its OptimizeForPointLookup() sets it:
 * whole-key filtering, 2% of the write buffer. */
#define AKV_KB_MEMTABLE_BLOOM_RATIO 0.02

typedef struct akv_kb_cfg {
    const char *engine; /* "adaptkv" | "rocksdb" */
    const char *dir;
    bool ordered;       /* adaptkv layout */
    const char *policy; /* adaptkv slot policy (NULL = default) */
    const char *filter; /* rocksdb: "bloom" | "ribbon" */
    double memtable_bloom_ratio; /* rocksdb: memtable Bloom, x write buffer size (0 = off) */
    double bits_per_key;
    uint64_t memtable_bytes, cache_bytes;
    uint64_t miss_log_bytes; /* adaptkv: 0 = its default */
    uint64_t sst_target_bytes; /* adaptkv: 0 = its default */
    int l0_trigger;            /* adaptkv: l0_compaction_trigger, 0 = its default */
    double grown_share;      /* adaptkv: grown_filter_share, when grown_share_set */
    bool grown_share_set;
    bool direct_reads, sync;
    int rest_compaction; /* adaptkv: rest_compaction (-1: the engine's default) */
    bool no_l0_front;    /* adaptkv: l0_front = 0 */
    uint64_t seed;
} akv_kb_cfg;

/* What one operation cost. probes: SSTs read; wasted: SST probes that did
 * not hold the key (a disk read at worst: the attacker's side channel);
 * mem_wasted: memtables probed in vain (in memory), counted apart. */
typedef struct akv_kb_cost {
    uint32_t probes, wasted, mem_wasted;
    uint32_t filters; /* filters consulted, memtable filters included */
    uint64_t block_reads;
} akv_kb_cost;

/* Levels a report shows (adaptkv has AKV_MAX_LEVELS, RocksDB 7 by default). */
#define AKV_KB_MAX_LEVELS 8

typedef struct akv_kb_estats {
    uint64_t adaptations, filter_bytes, keys;
    uint64_t filter_grows, filter_refills; /* adaptkv: full filters grown, refilled in place */
    char slot_policy[160];                 /* adaptkv: the policy in effect ("" unknown) */
    double filter_bits_per_key;     /* all filter memory (memtable guard too) per key */
    double sst_filter_bits_per_key; /* SST filters only: what RocksDB's figure measures */
    /* adaptkv: its filter memory by part, bytes (akv_stats): the memtable
     * guard now and averaged over about a minute, what slots grew by since
     * open, the engine's own budget; the SST slots by level are in levels[]. */
    uint64_t guard_bytes, guard_bytes_avg, grown_bytes, budget_bytes;
    /* Write amplification: SST bytes written by flushes and compactions
     * over the key+value bytes the application wrote (each engine's own
     * statistics); 0 when unknown. */
    double write_amp;
    /* The same per level (the bytes each level's flushes or compactions
     * wrote over the application's bytes), levels 0..n_write_amp_levels-1;
     * RocksDB's from its compaction-stats table (0.1 GB resolution). */
    double write_amp_level[AKV_KB_MAX_LEVELS];
    int n_write_amp_levels;
    uint64_t write_stalls, write_slowdowns; /* adaptkv: writes stopped / delayed */
    double stall_seconds;                   /* rocksdb: cumulative stall time */
    /* adaptkv: families created and dropped and ingestions, and the time
     * they took (RocksDB holds its writers meanwhile); the creates and the
     * drops among them */
    uint64_t family_ops, family_creates, family_drops;
    double family_op_seconds;
    /* adaptkv: memtable families of the pool emptied after their flush,
     * and the time that took (on a background thread) */
    uint64_t memtable_empties;
    double memtable_empty_seconds;
    uint64_t l0_merges; /* adaptkv: L0 runs merged among themselves (RocksDB: 0) */
    /* Background work still owed, each engine's own figure (so compare
     * when each reaches 0, not their sizes): L0 files (adaptkv: L0 runs),
     * and pending compaction bytes (adaptkv: its compaction debt, raw bytes
     * over the levels' capacities; RocksDB: its estimate of the bytes its
     * due compactions will rewrite, next levels included). */
    uint64_t l0_files, pending_compaction_bytes;
    /* adaptkv: its live slots summed per level (-1: the memtable guard),
     * counters since each slot was made; n_levels 0 for RocksDB. */
    struct akv_kb_level {
        int level;
        uint64_t slots, keys, queries, false_positives, adaptations;
        double bits; /* filter memory of its slots, in bits */
    } levels[AKV_KB_MAX_LEVELS + 1]; /* the guard, then levels 0.. */
    int n_levels;
} akv_kb_estats;

enum { AKV_KB_FOUND = 0, AKV_KB_NOTFOUND = 1, AKV_KB_ENOTSUP = -4 };

typedef struct akv_kb_engine akv_kb_engine;
struct akv_kb_engine {
    const char *name;
    void *db;
    int (*open)(akv_kb_engine *e, const akv_kb_cfg *c, char *err, size_t n);
    void (*close)(akv_kb_engine *e);
    /* Per-thread state (RocksDB perf context); NULL is fine. */
    void *(*thread_begin)(akv_kb_engine *e);
    void (*thread_end)(akv_kb_engine *e, void *t);
    /* AKV_KB_FOUND, AKV_KB_NOTFOUND or < 0; cost is filled for reads. */
    int (*read)(akv_kb_engine *e, void *t, const char *k, size_t kn, akv_kb_cost *c);
    int (*write)(akv_kb_engine *e, void *t, const char *k, size_t kn, const char *v, size_t vn);
    int (*remove)(akv_kb_engine *e, void *t, const char *k, size_t kn);
    /* Records visited, or AKV_KB_ENOTSUP when the layout has no order. */
    int (*scan)(akv_kb_engine *e, void *t, const char *k, size_t kn, uint32_t count, akv_kb_cost *c);
    bool (*can_scan)(akv_kb_engine *e);
    int (*flush)(akv_kb_engine *e);
    int (*compact)(akv_kb_engine *e); /* everything into the last level, and wait */
    int (*stats)(akv_kb_engine *e, akv_kb_estats *s);
    /* Background work still owed: 1 (and what, in `what`) while a flush or
     * compaction is due or running, 0 when none is, < 0 on an error. */
    int (*backlog)(akv_kb_engine *e, char *what, size_t n);
    const char *(*errmsg)(akv_kb_engine *e, int rc);
    char label[96]; /* "adaptkv hash default", "rocksdb bloom" */
};

int akv_kb_engine_akv(akv_kb_engine *e);
int akv_kb_engine_rocksdb(akv_kb_engine *e);

/* ---- steady state (settle.c) ------------------------------------------- */

/* How the wait before a run phase ended. requested false: no wait (the
 * run measures the tree as it was found). */
typedef struct akv_kb_settle_result {
    bool requested, settled;
    double seconds; /* waited */
    char last[160]; /* what was still owed at the last busy poll */
} akv_kb_settle_result;

/* Poll e->backlog until it reports nothing owed twice in a row, or until
 * max_seconds; progress and the outcome go to `log` (NULL: silent). 0, or
 * the backlog hook's error. */
int akv_kb_settle(akv_kb_engine *e, double max_seconds, FILE *log, akv_kb_settle_result *out);

/* clock.c: seconds on clock clk (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID,
 * CLOCK_PROCESS_CPUTIME_ID); the monotonic clock in nanoseconds. */
double akv_kb_clock_seconds(clockid_t clk);
uint64_t akv_kb_mono_ns(void);

/* procio.c: this process's storage traffic so far (/proc/self/io): bytes
 * read from and written to the storage layer, and written bytes dropped
 * before they were written back (a file deleted or truncated while still
 * in the page cache). False when the kernel does not say. */
typedef struct akv_kb_io {
    uint64_t read_bytes, write_bytes, cancelled_write_bytes;
} akv_kb_io;
bool akv_kb_proc_io(akv_kb_io *io);

/* ---- workloads (workload.c) --------------------------------------------- */

typedef enum akv_kb_op {
    AKV_KB_READ,
    AKV_KB_UPDATE,
    AKV_KB_INSERT,
    AKV_KB_SCAN,
    AKV_KB_RMW,
    AKV_KB_DELETE,
    AKV_KB_NOPS
} akv_kb_op;

extern const char *const akv_kb_op_names[]; /* "READ", "UPDATE", … */

typedef struct akv_kb_workload {
    char name[64];
    /* operationcount 0: no limit. loadcount: records the load phase inserts
     * (insertcount if given, else recordcount). expectednewkeys: YCSB's
     * room for the run's inserts in the zipfian key range. */
    uint64_t recordcount, operationcount, insertstart, insertcount, loadcount, expectednewkeys;
    double prop[AKV_KB_NOPS]; /* proportion per op type */
    akv_kb_dist reqdist, fieldlendist, scanlendist, negdist;
    double theta, hot_data, hot_opn, exp_percentile, exp_frac;
    uint64_t fieldcount, fieldlength, minfieldlength, minscan, maxscan, zeropadding;
    uint64_t max_value; /* the largest record a write can carry */
    akv_kb_lenhist fieldhist;
    bool hashed_inserts;
    double negative, adversary, adv_explore;
    uint64_t negative_keys, adv_pool, adv_recon, maxexecutiontime;
} akv_kb_workload;

int akv_kb_workload_load(akv_kb_workload *w, akv_kb_props *p);
void akv_kb_workload_free(akv_kb_workload *w);

/* Keys never inserted: key numbers from their own range, far above any
 * record, for negative reads and for the attacker's exploration. */
#define AKV_KB_NEG_BASE (1ull << 48)
#define AKV_KB_ADV_BASE (1ull << 56)

/* Shared by all clients of one phase: the insert key sequence, the
 * acknowledged-insert tracker ("latest" reads only keys that exist) and the
 * attacker's pool of keys that cost a probe. */
typedef struct akv_kb_shared {
    _Atomic uint64_t next_insert;
    _Atomic uint64_t seq; /* requestdistribution=sequential */
    uint64_t load_end;
    pthread_mutex_t ack_mu;
    uint64_t acked; /* every key number below this was acknowledged */
    uint8_t *window;
    pthread_mutex_t pool_mu;
    uint64_t *pool;
    size_t pool_n, pool_cap;
} akv_kb_shared;

enum { AKV_KB_REQ_NORMAL, AKV_KB_REQ_NEGATIVE, AKV_KB_REQ_EXPLORE, AKV_KB_REQ_REPLAY };

/* One request: what to do and to which key. */
typedef struct akv_kb_req {
    akv_kb_op op;
    int kind; /* AKV_KB_REQ_* (reads) */
    uint64_t keynum;
    uint32_t scan;
    uint64_t vlen;
    char key[48];
    const char *ext; /* key owned by someone else (a trace), used instead of key */
    size_t klen;
    size_t pool_at; /* a replay: where its key was in the attacker's pool */
} akv_kb_req;

typedef struct akv_kb_client {
    const akv_kb_workload *w;
    akv_kb_shared *sh;
    akv_kb_rng rng;
    akv_kb_gen keys, scanlen, fieldlen, neg;
    double cum[AKV_KB_NOPS];
} akv_kb_client;

int akv_kb_shared_init(akv_kb_shared *s, const akv_kb_workload *w, bool load);
void akv_kb_shared_free(akv_kb_shared *s);
uint64_t akv_kb_last_acked(akv_kb_shared *s);
void akv_kb_client_init(akv_kb_client *c, const akv_kb_workload *w, akv_kb_shared *s, uint64_t seed,
                        unsigned thread);
bool akv_kb_client_load_next(akv_kb_client *c, akv_kb_req *r);
/* --negative-stream: draws the workload's negative keys as client 0 would,
 * prints first-occurrence shares (negstream.c); 0, or an exit status. */
int akv_kb_negative_stream(const akv_kb_workload *w, uint64_t draws, uint64_t seed, FILE *out);
/* --absent-cpu: N fresh absent lookups on one thread, then N on each of
 * two, on the open database; CPU ns per lookup and the 2-vs-1 throughput
 * ratio as text (out, may be NULL) and JSON (path or "-", may be NULL)
 * (absentcpu.c); 0, or an exit status. */
int akv_kb_absent_cpu(akv_kb_engine *e, uint64_t n, uint64_t seed, unsigned pad, const char *json, FILE *out);

/* ---- the cost of one run replacement (replacecost.c) --------------------- */

/* kvbench --replace-cost N (adaptkv only): on the database as it is, N
 * flushes of a small memtable into a new L0 run (each creates a run family
 * and ingests into it, drops the flushed memtable's family and creates the
 * next one: the family operations of replacing a run), while one writer
 * puts at a steady rate. Per flush: its wall time, the time in family
 * operations (akv_stats), RocksDB's OPTIONS file size and MANIFEST growth,
 * and the writer's latency meanwhile (docs/kvbench.md). 0, 1 on a failed
 * operation, 2 on the wrong engine. */
int akv_kb_replace_cost(akv_kb_engine *e, const char *dir, uint64_t n, const char *json, FILE *out);
void akv_kb_client_next(akv_kb_client *c, akv_kb_req *r);
void akv_kb_client_recon_next(akv_kb_client *c, akv_kb_req *r);
uint64_t akv_kb_value_len(akv_kb_client *c);
void akv_kb_client_done(akv_kb_client *c, const akv_kb_req *r, int rc, const akv_kb_cost *cost);

/* ---- traces of YCSB's basic binding (trace.c) --------------------------- */

typedef struct akv_kb_trace_op {
    uint8_t op;
    uint32_t count; /* scan length */
    uint32_t vlen;  /* bytes of field data for writes */
    char *key;
    uint32_t klen;
} akv_kb_trace_op;

typedef struct akv_kb_trace {
    akv_kb_trace_op *ops;
    size_t n, cap;
    /* Lines skipped, over all files: "name"="value" lines of BasicDB's
     * properties blocks, other non-operation output (banner, status, the
     * blocks' frames, the summary), and the command lines. */
    uint64_t skipped_props, skipped_banner, skipped_commands;
    /* Parse state of the current file. */
    int block_line;       /* > 0: inside the properties block opened on this line */
    bool fl_constant;     /* the block's fieldlengthdistribution is constant */
    uint64_t fl_length;   /* the block's fieldlength */
    uint64_t field_bytes; /* > 0: every traced value has this many bytes */
    char err[AKV_KB_ERRLEN];
} akv_kb_trace;

int akv_kb_trace_load(akv_kb_trace *t, const char *path);
/* One line (without its newline) of file `file`; *then* akv_kb_trace_end. */
int akv_kb_trace_parse_line(akv_kb_trace *t, const char *file, int line, const char *s, size_t len);
int akv_kb_trace_end(akv_kb_trace *t, const char *file);
void akv_kb_trace_free(akv_kb_trace *t);

/* ---- results (report.c) ------------------------------------------------- */

/* Per operation type, how each ended (YCSB's Return= lines). */
enum { AKV_KB_RET_OK, AKV_KB_RET_NOT_FOUND, AKV_KB_RET_ERROR, AKV_KB_NRET };

typedef struct akv_kb_result {
    const char *engine, *label, *workload, *phase;
    const akv_kb_cfg *cfg;
    const akv_kb_clientopts *opts;
    unsigned threads;
    uint64_t ops, errors, records;
    double seconds, load_seconds;
    /* CPU time over the phase: the whole process's, and the client threads'
     * own (their calls into the engine); the rest is background work. */
    double cpu_seconds, client_cpu_seconds;
    /* Storage traffic over the phase (procio.c); io_known false when the
     * kernel does not report it. */
    bool io_known;
    uint64_t io_read_bytes, io_write_bytes;
    uint64_t load_ops;
    uint64_t reads_found, negative_lookups, wasted_probes, negative_wasted, probes, block_reads;
    uint64_t negative_mem_wasted; /* memtables probed in vain by lookups that found nothing */
    uint64_t negative_filters; /* filters consulted by lookups that found nothing */
    uint64_t intended_negatives, adversary_reads, adversary_wasted, adversary_pool;
    uint64_t recon_lookups, recon_pool; /* adversaryrecon: keys asked before the run, pool after */
    uint64_t scans_unsupported;
    akv_kb_estats es;
    /* The wait for steady state before the run phase (--settle), and the
     * background work the run started with (each engine's own figures). */
    akv_kb_settle_result settle;
    uint64_t start_l0_files, start_pending_bytes;
    /* All filter memory per key averaged over the run (sampled every
     * --interval; the memtable filters come and go with flushes); 0 when
     * the run was shorter than one interval. */
    double filter_bits_mean;
    uint64_t adaptations; /* during the run phase */
    /* --compact-replay: the first pass, before the compaction. */
    bool first_pass;
    uint64_t first_ops, first_negative_lookups, first_negative_wasted;
    double first_seconds;
    uint64_t insert_retries;
    /* hist: what measurement.interval measures (op, or intended with
     * "intended"); ihist: the intended latencies when it is "both". A
     * read-modify-write also counts as one READ and one UPDATE, as in YCSB. */
    akv_kb_hist hist[AKV_KB_NOPS], ihist[AKV_KB_NOPS];
    /* READ latencies by the device reads the read made (0, 1, 2 or more):
     * a tail of reads that read nothing is CPU or locks, one of reads that
     * read a block is the device's queue. */
    akv_kb_hist rhist[AKV_KB_RHIST];
    uint64_t ret[AKV_KB_NOPS][AKV_KB_NRET];
} akv_kb_result;

/* A label fit for one CSV field: the commas of slot policies become ';'. */
void akv_kb_csv_label(char *out, size_t cap, const char *label);
void akv_kb_report_text(const akv_kb_result *r, FILE *out);
int akv_kb_report_json(const akv_kb_result *r, FILE *out);
int akv_kb_report_csv(const akv_kb_result *r, FILE *out, bool header);

/* ---- progress bar (progress.c) ------------------------------------------ */

void akv_kb_progress(FILE *tty, const char *phase, uint64_t done, uint64_t total, double secs);
void akv_kb_progress_end(FILE *tty);

#endif
