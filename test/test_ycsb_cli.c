/*
 * test_ycsb_cli.c — kvbench as a YCSB user drives it: property precedence,
 * YCSB's client properties (threadcount, exportfile, hdrhistogram.percentiles,
 * measurement.interval), the load and run counts, read-modify-writes in the
 * report, replaying traces of YCSB's basic binding end to end, and YCSB's own
 * command line (bin/ycsb's load|run, -load, -t, -threads, -target, -s, -l,
 * -db), its refusals, its status lines and a report YCSB's parsers read.
 *
 * The binary is $AKV_BUILD/kvbench when AKV_BUILD is set, else the kvbench
 * next to this test's build directory (BUILD/test/test_ycsb_cli ->
 * BUILD/kvbench), so sanitizer builds test their own kvbench.
 */
#include <criterion/criterion.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void kvbench_path(char *buf, size_t cap)
{
    const char *b = getenv("AKV_BUILD");
    if (b && *b) {
        snprintf(buf, cap, "%s/kvbench", b);
        return;
    }
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        snprintf(buf, cap, "%s/../kvbench", dirname(exe));
        if (access(buf, X_OK) == 0)
            return;
    }
    snprintf(buf, cap, "build/kvbench");
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    while ((r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *t = realloc(s, cap *= 2);
            cr_assert_not_null(t);
            s = t;
        }
    }
    fclose(f);
    s[n] = '\0';
    return s;
}

typedef struct run {
    int status;
    char *out, *err;
    char dir[512];
} run;

/* Run "kvbench ARGS --db DIR/db" from the source tree, with DIR a fresh
 * directory that "{D}" in ARGS stands for (without --db DIR/db when ARGS
 * have a --db of their own). */
static run kvbench(const char *args)
{
    run r = {0};
    snprintf(r.dir, sizeof r.dir, "%s/kvbench-cli-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(r.dir));
    char exe[1100], expanded[8192], cmd[12288];
    kvbench_path(exe, sizeof exe);
    cr_assert_eq(access(exe, X_OK), 0, "kvbench not found at %s (build it: make tools)", exe);
    size_t o = 0;
    for (const char *a = args; *a && o + sizeof r.dir < sizeof expanded;) {
        if (strncmp(a, "{D}", 3) == 0) {
            o += (size_t)snprintf(expanded + o, sizeof expanded - o, "%s", r.dir);
            a += 3;
        } else {
            expanded[o++] = *a++;
        }
    }
    expanded[o] = '\0';
    char dbopt[600] = ""; /* ARGS may name a database of their own (another run's) */
    if (!strstr(expanded, "--db "))
        snprintf(dbopt, sizeof dbopt, " --db '%s/db'", r.dir);
    snprintf(cmd, sizeof cmd, "'%s' %s%s >'%s/out' 2>'%s/err' </dev/null", exe, expanded, dbopt, r.dir,
             r.dir);
    int st = system(cmd);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char p[600];
    snprintf(p, sizeof p, "%s/out", r.dir);
    r.out = slurp(p);
    snprintf(p, sizeof p, "%s/err", r.dir);
    r.err = slurp(p);
    cr_assert(r.out && r.err);
    return r;
}

static void run_free(run *r)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    cr_expect_eq(system(cmd), 0);
    free(r->out);
    free(r->err);
}

/* The number after "[SECTION], NAME, " in a report, or -1. */
static double metric(const char *report, const char *section, const char *name)
{
    char pat[128];
    snprintf(pat, sizeof pat, "[%s], %s, ", section, name);
    const char *p = report ? strstr(report, pat) : NULL;
    return p ? strtod(p + strlen(pat), NULL) : -1;
}

Test(ycsb_cli, read_modify_write_counts_its_read_and_update)
{
    run r = kvbench("-P workloads/workloadf -p recordcount=200 -p operationcount=300");
    cr_assert_eq(r.status, 0, "%s", r.err);
    double rmw = metric(r.out, "READ-MODIFY-WRITE", "Operations");
    cr_expect(rmw > 100 && rmw < 200, "%s", r.out);
    /* Workload F: reads and read-modify-writes only. Every transaction reads;
     * every update is a read-modify-write's. */
    cr_expect_eq(metric(r.out, "READ", "Operations"), 300);
    cr_expect_eq(metric(r.out, "UPDATE", "Operations"), rmw);
    cr_expect_eq(metric(r.out, "READ", "Return=OK"), 300);
    cr_expect_eq(metric(r.out, "READ-MODIFY-WRITE", "Return=OK"), -1); /* YCSB reports none for it */
    cr_expect(metric(r.out, "READ", "MinLatency(us)") >= 0);
    cr_expect(metric(r.out, "READ", "50thPercentileLatency(us)") >= 0); /* YCSB's default: 50,95,99 */
    cr_expect(metric(r.out, "READ", "99thPercentileLatency(us)") >= 0);
    run_free(&r);
}

Test(ycsb_cli, dash_p_wins_whatever_the_order)
{
    run r = kvbench("-p recordcount=150 -P workloads/workloada --phase load");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "INSERT", "Operations"), 150, "%s", r.out);
    run_free(&r);
}

Test(ycsb_cli, insertstart_loads_recordcount_records)
{
    run r = kvbench("-P workloads/workloadc -p recordcount=120 -p insertstart=40 --phase load");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "INSERT", "Operations"), 120, "%s", r.out);
    run_free(&r);
    r = kvbench("-P workloads/workloadc -p recordcount=120 -p insertstart=40 -p insertcount=81");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "insertstart + insertcount (40 + 81) must be between 1 and recordcount (120)"),
              "%s", r.err);
    run_free(&r);
}

Test(ycsb_cli, client_properties)
{
    run r =
        kvbench("-P workloads/workloadb -p recordcount=100 -p operationcount=200 -p threadcount=2 "
                "-p hdrhistogram.percentiles=90,99.9 -p measurement.interval=both -p exportfile={D}/rep.txt "
                "--json {D}/r.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(strstr(r.out, "[OVERALL]"), NULL, "the report goes to exportfile: %s", r.out);
    char p[600];
    snprintf(p, sizeof p, "%s/rep.txt", r.dir);
    char *rep = slurp(p), *json;
    cr_assert_not_null(rep);
    cr_expect(metric(rep, "READ", "90thPercentileLatency(us)") >= 0, "%s", rep);
    cr_expect(metric(rep, "READ", "99.9PercentileLatency(us)") >= 0, "%s", rep);
    cr_expect_eq(metric(rep, "READ", "50thPercentileLatency(us)"), -1);
    cr_expect_eq(metric(rep, "Intended-READ", "Operations"), metric(rep, "READ", "Operations"));
    snprintf(p, sizeof p, "%s/r.json", r.dir);
    json = slurp(p);
    cr_assert_not_null(json);
    cr_expect(strstr(json, "\"threads\":2,") != NULL, "%s", json);
    free(json);
    free(rep);
    run_free(&r);

    r = kvbench(
        "-P workloads/workloadb -p recordcount=100 -p operationcount=100 -p threadcount=2 --threads 1 "
        "--quiet --json -");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"threads\":1,") != NULL, "--threads wins: %s", r.out);
    cr_expect_eq(strstr(r.err, "unknown property"), NULL, "%s", r.err);
    run_free(&r);
}

Test(ycsb_cli, operationcount_zero_runs_until_maxexecutiontime)
{
    run r = kvbench("-P workloads/workloadc -p recordcount=100 -p operationcount=0 -p maxexecutiontime=1");
    cr_assert_eq(r.status, 0, "%s", r.err);
    double ops = metric(r.out, "READ", "Operations");
    cr_expect(ops > 1000, "%.0f reads: operationcount=0 is no limit, not the default 1000", ops);
    run_free(&r);
}

/* The timeline's last column is all filter memory per key at each row;
 * the report's mean is the mean of those rows; the JSON has adaptkv's
 * slots per level. */
Test(ycsb_cli, timeline_reports_filter_memory)
{
    run r = kvbench("-P workloads/workloadn -p recordcount=3000 -p operationcount=0 -p maxexecutiontime=2 "
                    "--memtable-mb 1 --interval 250 --timeline {D}/tl.csv --json {D}/r.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    char path[600];
    snprintf(path, sizeof path, "%s/tl.csv", r.dir);
    char *tl = slurp(path);
    cr_assert_not_null(tl);
    const char *line = strchr(tl, '\n');
    cr_assert_not_null(line);
    cr_assert_not_null(strstr(tl, ",filter_bits_per_key\n"), "header: %.*s", (int)(line - tl), tl);
    double sum = 0, lo = 1e9, hi = 0;
    int rows = 0;
    for (line++; *line; rows++) {
        const char *end = strchr(line, '\n');
        cr_assert_not_null(end);
        const char *last = end;
        while (last > line && last[-1] != ',')
            last--;
        double bits = strtod(last, NULL);
        cr_assert(bits > 0 && bits < 1000, "row %d: %.*s", rows, (int)(end - line), line);
        sum += bits;
        lo = bits < lo ? bits : lo;
        hi = bits > hi ? bits : hi;
        line = end + 1;
    }
    free(tl);
    cr_assert_geq(rows, 4, "%d timeline rows in 2 s at 250 ms", rows);
    double mean = metric(r.out, "FILTER", "BitsPerKeyMean");
    cr_assert(mean >= lo - 0.01 && mean <= hi + 0.01, "mean %.2f outside the rows' %.2f..%.2f", mean, lo, hi);
    cr_assert(fabs(mean - sum / rows) < 0.01, "mean %.2f, rows' mean %.2f", mean, sum / rows);
    /* and the JSON sums the live slots per level, the guard first */
    snprintf(path, sizeof path, "%s/r.json", r.dir);
    char *js = slurp(path);
    cr_assert_not_null(js);
    const char *lv = strstr(js, "\"slot_levels\":[{\"level\":-1,\"slots\":1,");
    cr_assert_not_null(lv, "%s", js);
    /* and a row for at least one level of runs (which ones depends on how
     * far compaction got) */
    cr_assert_not_null(strstr(lv + 1, "{\"level\":"), "%s", js);
    /* write amplification per level sums to the whole (3 MB through a
     * 1 MiB memtable: flushes at least) */
    const char *wa = strstr(js, "\"write_amp\":");
    const char *wl = strstr(js, "\"write_amp_per_level\":[");
    cr_assert(wa && wl, "%s", js);
    double total = strtod(wa + strlen("\"write_amp\":"), NULL), lsum = 0;
    int n = 0;
    for (const char *p = wl + strlen("\"write_amp_per_level\":["); *p && *p != ']'; n++) {
        char *end;
        double x = strtod(p, &end);
        cr_assert(end > p && x >= 0, "%s", wl);
        lsum += x;
        p = *end == ',' ? end + 1 : end;
    }
    cr_assert(n >= 1 && total > 0.5, "%d levels, write amplification %.3f: %s", n, total, wl);
    cr_assert(fabs(lsum - total) <= 0.01 * total, "levels sum to %.4f, the whole is %.4f", lsum, total);
    free(js);
    run_free(&r);
}

/* --compact-replay runs the same operations again after a compaction:
 * the same absent keys are asked, on both engines. */
Test(ycsb_cli, compact_replay_asks_the_same_keys_again)
{
    const char *engines[] = {"adaptkv", "rocksdb"};
    for (int i = 0; i < 2; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "--engine %s -P workloads/workloadn -p recordcount=3000 -p operationcount=4000 "
                 "--memtable-mb 1 --threads 1 --compact-replay --json {D}/r.json",
                 engines[i]);
        run r = kvbench(args);
        cr_assert_eq(r.status, 0, "%s: %s", engines[i], r.err);
        double wasted = metric(r.out, "FIRST PASS", "WastedProbesPerNegative");
        cr_assert(wasted >= 0 && wasted < 1, "%s: %s", engines[i], r.out);
        char path[600];
        snprintf(path, sizeof path, "%s/r.json", r.dir);
        char *js = slurp(path);
        cr_assert_not_null(js);
        const char *a = strstr(js, "\"negative_lookups\":"),
                   *b = strstr(js, "\"first_pass_negative_lookups\":");
        cr_assert(a && b, "%s", js);
        unsigned long long n1 = strtoull(a + strlen("\"negative_lookups\":"), NULL, 10);
        unsigned long long n0 = strtoull(b + strlen("\"first_pass_negative_lookups\":"), NULL, 10);
        cr_assert_gt(n0, 2000, "%s: %llu negative lookups in the first pass", engines[i], n0);
        cr_assert_eq(n1, n0, "%s: %llu negative lookups replayed, %llu in the first pass", engines[i], n1,
                     n0);
        free(js);
        run_free(&r);
    }
}

/* --settle waits before the run phase until no flush or compaction is due
 * or running: the run then starts with L0 under the compaction trigger (4)
 * and nothing pending, on both engines, and says it measured the steady
 * state; without it, the report says the tree was measured as found. */
Test(ycsb_cli, settle_starts_the_run_in_steady_state)
{
    const char *engines[] = {"adaptkv", "rocksdb"};
    for (int i = 0; i < 2; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "--engine %s -P workloads/workloadc -p recordcount=20000 -p operationcount=2000 "
                 "--memtable-mb 1 --threads 2 --settle 120 --json {D}/r.json",
                 engines[i]);
        run r = kvbench(args);
        cr_assert_eq(r.status, 0, "%s: %s", engines[i], r.err);
        cr_assert_not_null(strstr(r.out, "# State: steady\n"), "%s: %s%s", engines[i], r.out, r.err);
        cr_assert_not_null(strstr(r.err, "kvbench: settled after "), "%s: %s", engines[i], r.err);
        double l0 = metric(r.out, "STATE", "L0FilesAtStart");
        double pending = metric(r.out, "STATE", "PendingCompactionMBAtStart");
        cr_assert(l0 >= 0 && l0 < 4, "%s: %.0f L0 files at the start", engines[i], l0);
        cr_assert(pending == 0, "%s: %.1f MiB of compaction pending at the start", engines[i], pending);
        char path[600];
        snprintf(path, sizeof path, "%s/r.json", r.dir);
        char *js = slurp(path);
        cr_assert_not_null(js);
        cr_assert_not_null(strstr(js, "\"state\":\"steady\""), "%s", js);
        cr_assert_not_null(strstr(js, "\"settle_seconds\":"), "%s", js);
        free(js);
        run_free(&r);
    }
    run r = kvbench("-P workloads/workloadc -p recordcount=100 -p operationcount=100");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_assert_not_null(strstr(r.out, "# State: as found\n"), "%s", r.out);
    cr_assert_null(strstr(r.out, "SettleSeconds"), "%s", r.out);
    run_free(&r);
}

/* --equal-filter-memory: adaptkv's bits per key cover RocksDB's memtable
 * Bloom filter too (0.02 x 1 MiB x 8 bits over 20,000 records: 8.39 bits
 * per record more); RocksDB keeps its own. */
Test(ycsb_cli, equal_filter_memory_matches_rocksdbs_memtable_bloom)
{
    const char *engines[] = {"adaptkv", "rocksdb"};
    const double want[] = {10 + 0.02 * 1048576 * 8 / 20000, 10};
    for (int i = 0; i < 2; i++) {
        char args[512];
        snprintf(args, sizeof args,
                 "--engine %s -P workloads/workloadc -p recordcount=20000 -p insertcount=100 -p "
                 "operationcount=100 "
                 "--memtable-mb 1 --equal-filter-memory --json {D}/r.json",
                 engines[i]);
        run r = kvbench(args);
        cr_assert_eq(r.status, 0, "%s: %s", engines[i], r.err);
        char path[600];
        snprintf(path, sizeof path, "%s/r.json", r.dir);
        char *js = slurp(path);
        cr_assert_not_null(js);
        const char *b = strstr(js, "\"bits_per_key\":");
        cr_assert_not_null(b, "%s", js);
        double got = strtod(b + strlen("\"bits_per_key\":"), NULL);
        cr_assert(fabs(got - want[i]) < 0.01, "%s: %.4f bits per key, want %.4f", engines[i], got, want[i]);
        free(js);
        run_free(&r);
    }
}

/* adversaryrecon: the attacker's pool is filled before the clock starts and
 * the reconnaissance is not counted as operations. Against RocksDB's static
 * filters (2 bits per key: many false positives) the pool's keys stay
 * costly, so pure replays waste probes. */
Test(ycsb_cli, recon_fills_the_attackers_pool_first)
{
    run r = kvbench("--engine rocksdb -P workloads/workloadx -p recordcount=3000 -p operationcount=2000 "
                    "-p adversaryproportion=1 -p adversaryexplore=0 -p adversarypoolsize=100000 "
                    "-p adversaryrecon=5000 --bits-per-key 2 --threads 1");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "ADVERSARY", "ReconLookups"), 5000, "%s", r.out);
    double pool = metric(r.out, "ADVERSARY", "PoolAfterRecon");
    cr_expect(pool > 100 && pool < 5000, "%g keys in the pool after 5000 lookups: %s", pool, r.out);
    cr_expect_eq(metric(r.out, "ADVERSARY", "Reads"), metric(r.out, "READ", "Operations"), "%s", r.out);
    double w = metric(r.out, "ADVERSARY", "WastedProbesPerRead");
    cr_expect(w > 0.5, "replays of costly keys wasted %g probes per read: %s", w, r.out);
    cr_expect(strstr(r.err, "reconnaissance: 5000 fresh absent keys") != NULL, "%s", r.err);
    run_free(&r);

    r = kvbench("-P workloads/workloada -p recordcount=100 -p operationcount=100 -p adversaryrecon=10");
    cr_expect_neq(r.status, 0);
    cr_expect(strstr(r.err, "adversaryrecon needs an attacker") != NULL, "%s", r.err);
    run_free(&r);
}

Test(ycsb_cli, replays_basic_binding_traces)
{
    run r = kvbench("--trace test/data/ycsb/basic-load.txt --trace test/data/ycsb/basic-run.txt "
                    "--trace test/data/ycsb/basic-run-fields.txt --layout ordered");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "INSERT", "Operations"), 10, "%s", r.out);
    cr_expect_eq(metric(r.out, "READ", "Operations"), 8);
    cr_expect_eq(metric(r.out, "UPDATE", "Operations"), 8);
    cr_expect_eq(metric(r.out, "SCAN", "Operations"), 2);
    cr_expect_eq(metric(r.out, "DELETE", "Operations"), 1);
    cr_expect_eq(metric(r.out, "READ", "Return=OK"), 8); /* every traced read finds its record */
    cr_expect(strstr(r.err,
                     "basic-run.txt: 17 operations; skipped 38 properties, 2 command lines and 42 other "
                     "lines") != NULL,
              "%s", r.err);
    run_free(&r);

    r = kvbench("--trace test/data/ycsb/fieldlengths.hist");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "fieldlengths.hist:1: unrecognized line 'BlockSize") != NULL, "%s", r.err);
    run_free(&r);
}

/* ---- traces recorded from real YCSB (test/data/ycsb/real/README.md) ------------------------ */

#define REAL "test/data/ycsb/real/"

/* Lines of `path` that start with `prefix`. */
static long count_lines(const char *path, const char *prefix)
{
    char *s = slurp(path);
    cr_assert_not_null(s, "%s", path);
    long n = 0;
    size_t pl = strlen(prefix);
    for (const char *p = s; *p;) {
        n += strncmp(p, prefix, pl) == 0;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : p + strlen(p);
    }
    free(s);
    return n;
}

Test(ycsb_cli, replays_every_operation_of_real_ycsb_traces)
{
    static const char *const pairs[][3] = {
        {"0.17.0/workloada-load.txt", "0.17.0/workloada-run.txt", ""},
        {"0.17.0/workloada-load.txt", "0.17.0/workloada-run-stderr.txt", ""},
        {"0.17.0/workloadf-load.txt", "0.17.0/workloadf-run.txt", ""},
        {"0.17.0/workloade-load.txt", "0.17.0/workloade-run.txt", "--layout ordered"},
        {"0.17.0/fields-load.txt", "0.17.0/fields-run.txt", ""},
        {"0.17.0/workloada-load.txt", "0.17.0/workloadb-run-json.txt", ""},
        {"0.17.0/workloada-load.txt", "0.17.0/workloadc-run-json.txt", ""},
        {"master/workloada-load.txt", "master/workloada-run.txt", ""},
    };
    static const char *const ops[] = {"READ", "UPDATE", "INSERT", "SCAN", "DELETE"};
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        char args[1024];
        snprintf(args, sizeof args, "--trace " REAL "%s --trace " REAL "%s %s", pairs[i][0], pairs[i][1],
                 pairs[i][2]);
        run r = kvbench(args);
        cr_expect_eq(r.status, 0, "%s: %s", args, r.err);
        if (r.status != 0) {
            run_free(&r);
            continue;
        }
        long total[2] = {0, 0};
        for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
            char prefix[16], path[2][256];
            snprintf(prefix, sizeof prefix, "%s ", ops[k]);
            long want = 0;
            for (int f = 0; f < 2; f++) {
                snprintf(path[f], sizeof path[f], REAL "%s", pairs[i][f]);
                long n = count_lines(path[f], prefix);
                total[f] += n;
                want += n;
            }
            /* Every traced operation is replayed, and every one succeeds:
             * the reads and updates find what the load trace inserted. */
            double expect = want ? (double)want : -1;
            cr_expect_eq(metric(r.out, ops[k], "Operations"), expect, "%s: %s: %ld in the traces\n%s", args,
                         ops[k], want, r.out);
            cr_expect_eq(metric(r.out, ops[k], "Return=OK"), expect, "%s: %s", args, ops[k]);
            cr_expect_eq(metric(r.out, ops[k], "Return=NOT_FOUND"), -1, "%s: %s", args, ops[k]);
        }
        for (int f = 0; f < 2; f++) {
            char said[512];
            snprintf(said, sizeof said, "%s: %ld operations; skipped ", pairs[i][f], total[f]);
            cr_expect(total[f] > 0 && strstr(r.err, said) != NULL, "%s: %s", said, r.err);
        }
        run_free(&r);
    }

    /* A run in which YCSB failed (master's CoreWorkload divides by the 0
     * records BasicDB's scans return): refused, naming the exception's line. */
    run r = kvbench("--trace " REAL "0.17.0/workloade-load.txt --trace " REAL
                    "master/workloade-run-crash.txt --layout ordered");
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "workloade-run-crash.txt:25: YCSB failed here with a Java exception: "
                            "'java.lang.ArithmeticException: / by zero'") != NULL,
              "%s", r.err);
    run_free(&r);
}

/* --negative-stream opens no database and reports the stream's first
 * occurrences: every share is in [0, 1]; after the first sixth the share of
 * first-ever keys falls (keys come back), and each oracle miss log leaves
 * at most the keys unseen within the last tenth, fewer as it grows. */
Test(ycsb_cli, negative_stream_reports_first_occurrences)
{
    run r = kvbench("-P workloads/workloadn -p recordcount=20000 --negative-stream 120000");
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.err);
    cr_assert_not_null(strstr(r.out, "negative stream: 120000 draws over 20000 keys (zipfian)"), "%s", r.out);
    char dbpath[600];
    snprintf(dbpath, sizeof dbpath, "%s/db", r.dir);
    cr_assert_neq(access(dbpath, F_OK), 0, "a database was created");
    const char *p = strstr(r.out, "\n1 ");
    cr_assert_not_null(p, "%s", r.out);
    double prev_first = 2;
    for (int s = 1; s <= 6; s++) {
        int sixth;
        double first, unseen, top[4];
        cr_assert_eq(sscanf(p + 1, "%d %lf %lf %lf %lf %lf %lf", &sixth, &first, &unseen, &top[0], &top[1], &top[2],
                            &top[3]),
                     7, "%s", r.out);
        cr_assert_eq(sixth, s);
        cr_assert(first >= 0 && first <= 1 && unseen >= 0 && unseen <= 1, "%s", r.out);
        if (s >= 2)
            cr_assert_lt(first, prev_first, "sixth %d: first-ever %.3f after %.3f\n%s", s, first, prev_first, r.out);
        prev_first = first;
        double bound = unseen;
        for (int m = 0; m < 4; m++) {
            cr_assert(top[m] >= 0 && top[m] <= bound + 1e-9, "sixth %d: %s", s, r.out);
            bound = top[m];
        }
        p = strchr(p + 1, '\n');
        cr_assert_not_null(p);
    }
    run_free(&r);

    r = kvbench("--negative-stream 1000");
    cr_assert_eq(r.status, 2);
    cr_assert_not_null(strstr(r.err, "workload"), "%s", r.err);
    run_free(&r);
    r = kvbench("-P workloads/workloadn --negative-stream 5");
    cr_assert_neq(r.status, 0);
    cr_assert_not_null(strstr(r.err, "--negative-stream"), "%s", r.err);
    run_free(&r);
}

/* ---- YCSB's own command line ------------------------------------------------ */

/* Every line of a text report is "[SECTION], metric, number" (what YCSB's
 * TextMeasurementsExporter writes and its report parsers read) or a '#'
 * line, which they skip. Returns the number of metric lines. */
static int assert_ycsb_report(const char *out)
{
    int metrics = 0;
    cr_assert_not_null(out);
    for (const char *l = out; *l;) {
        const char *nl = strchr(l, '\n');
        cr_assert_not_null(nl, "the report's last line has no end: '%s'", l);
        char line[512];
        size_t n = (size_t)(nl - l);
        cr_assert_lt(n, sizeof line);
        memcpy(line, l, n);
        line[n] = '\0';
        l = nl + 1;
        if (line[0] == '#')
            continue;
        /* [SECTION], metric, number: no comma inside the section or the
         * metric, and the number is all that follows. */
        char *close = strstr(line, "], ");
        cr_assert(line[0] == '[' && close && !memchr(line, ',', (size_t)(close - line)),
                  "not a YCSB line: '%s'", line);
        char *metric = close + 3, *comma = strstr(metric, ", ");
        cr_assert(comma && comma > metric, "not a YCSB line: '%s'", line);
        char *num = comma + 2, *end;
        double v = strtod(num, &end);
        cr_assert(end != num && *end == '\0' && !isnan(v), "not a number at the end of '%s'", line);
        metrics++;
    }
    return metrics;
}

/* The status lines of -s on stderr ("[LABEL]yyyy-MM-dd HH:mm:ss:SSS N sec: N
 * operations; ..."), each starting with `label`: how many, and the last
 * one's operation count. */
static int status_lines(const char *err, const char *label, unsigned long long *last_ops)
{
    int n = 0;
    size_t ll = strlen(label);
    for (const char *l = err; l && *l;) {
        const char *nl = strchr(l, '\n');
        int y, mo, d, h, mi, sec, ms;
        unsigned long long secs, ops;
        int used = 0;
        if (strncmp(l, label, ll) == 0 &&
            sscanf(l + ll, "%4d-%2d-%2d %2d:%2d:%2d:%3d %llu sec: %llu operations;%n", &y, &mo, &d, &h, &mi,
                   &sec, &ms, &secs, &ops, &used) == 9 &&
            used > 0) {
            n++;
            *last_ops = ops;
        }
        l = nl ? nl + 1 : NULL;
    }
    return n;
}

Test(ycsb_cli, ycsb_load_then_run_as_bin_ycsb)
{
    /* bin/ycsb load: the load phase alone, 2 threads, status on stderr. */
    run l = kvbench("-load -P workloads/workloada -p recordcount=1000 -threads 2 -s --json {D}/load.json");
    cr_assert_eq(l.status, 0, "%s", l.err);
    cr_expect_eq(metric(l.out, "INSERT", "Operations"), 1000);
    cr_expect_eq(metric(l.out, "INSERT", "Return=OK"), 1000);
    cr_expect_eq(metric(l.out, "READ", "Operations"), -1, "-load runs no transactions");
    cr_expect_neq(strstr(l.out, "# Phase: load\n"), NULL, "%s", l.out);
    cr_expect_gt(assert_ycsb_report(l.out), 10);
    unsigned long long ops = 0;
    cr_expect_geq(status_lines(l.err, "", &ops), 2, "a status line at the start and one at the end: %s",
                  l.err);
    cr_expect_eq(ops, 1000, "the last status line counts every insert: %s", l.err);
    char p[600];
    snprintf(p, sizeof p, "%s/load.json", l.dir);
    char *js = slurp(p);
    cr_assert_not_null(js);
    cr_expect_neq(strstr(js, "\"threads\":2,"), NULL, "-threads 2: %s", js);
    free(js);

    /* bin/ycsb run on that database: the transactions alone, paced by -target. */
    char args[1200];
    snprintf(args, sizeof args, "-t -P workloads/workloada -target 500 --db '%s/db'", l.dir);
    run t = kvbench(args);
    cr_assert_eq(t.status, 0, "%s", t.err);
    double reads = metric(t.out, "READ", "Operations"), updates = metric(t.out, "UPDATE", "Operations");
    cr_expect_eq(reads + updates, 1000, "operationcount=1000: %s", t.out);
    cr_expect_eq(metric(t.out, "READ", "Return=OK"), reads, "every read finds a loaded record: %s", t.out);
    cr_expect_eq(metric(t.out, "INSERT", "Operations"), -1, "-t loads nothing: %s", t.out);
    cr_expect_neq(strstr(t.out, "# Phase: run\n"), NULL, "%s", t.out);
    /* 1000 operations at 500 per second cannot end before ~2 s (the pace
     * only delays); nothing is asserted about how late they end. */
    cr_expect_geq(metric(t.out, "OVERALL", "RunTime(ms)"), 1500, "%s", t.out);
    cr_expect_leq(metric(t.out, "OVERALL", "Throughput(ops/sec)"), 667, "%s", t.out);
    cr_expect_eq(status_lines(t.err, "", &ops), 0, "no -s, no status lines: %s", t.err);
    cr_expect_gt(assert_ycsb_report(t.out), 10);
    run_free(&t);
    run_free(&l);
}

Test(ycsb_cli, bin_ycsb_commands_and_labels)
{
    /* bin/ycsb's command and binding name come first; -l prefixes the
     * status lines; dotransactions=false is -load. */
    run r = kvbench("load rocksdb -P workloads/workloadc -p recordcount=100 -s -l lbl7: --json {D}/r.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "INSERT", "Operations"), 100);
    cr_expect_eq(metric(r.out, "READ", "Operations"), -1);
    cr_expect_neq(strstr(r.out, "# Engine: rocksdb"), NULL, "%s", r.out);
    unsigned long long ops = 0;
    cr_expect_geq(status_lines(r.err, "lbl7:", &ops), 2, "%s", r.err);
    cr_expect_eq(ops, 100);
    run_free(&r);
    r = kvbench("-P workloads/workloadc -p recordcount=100 -p dotransactions=false -db adaptkv");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(metric(r.out, "INSERT", "Operations"), 100);
    cr_expect_eq(metric(r.out, "READ", "Operations"), -1);
    cr_expect_neq(strstr(r.out, "# Engine: adaptkv"), NULL, "%s", r.out);
    run_free(&r);
}

Test(ycsb_cli, refuses_what_it_cannot_honour_by_name)
{
    static const struct {
        const char *args, *named;
    } cases[] = {
        {"-p workload=site.ycsb.workloads.TimeSeriesWorkload",
         "workload=site.ycsb.workloads.TimeSeriesWorkload"},
        {"-p measurementtype=timeseries", "measurementtype=timeseries"},
        {"-p measurementtype=histogram", "measurementtype=histogram"},
        {"-p exporter=site.ycsb.measurements.exporter.JSONMeasurementsExporter", "exporter=site.ycsb"},
        {"-p dataintegrity=true", "dataintegrity=true"},
        {"-p measurement.trackjvm=true", "measurement.trackjvm=true"},
        {"-db site.ycsb.BasicDB", "db=site.ycsb.BasicDB"},
        {"run basic", "db=basic"},
        {"-p dotransactions=maybe", "dotransactions"},
        {"-load --phase run", "disagree"},
        {"-db rocksdb --engine adaptkv", "disagree"},
        {"-threads", "-threads needs a value"},
        {"-target x", "target"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[512];
        bool command = strncmp(cases[i].args, "run ", 4) == 0; /* bin/ycsb's command comes first */
        snprintf(args, sizeof args, "%s -P workloads/workloadc -p recordcount=50 %s",
                 command ? cases[i].args : "", command ? "" : cases[i].args);
        run r = kvbench(args);
        cr_expect_eq(r.status, 2, "%s: exit %d, %s", cases[i].args, r.status, r.err);
        cr_expect_neq(strstr(r.err, cases[i].named), NULL, "%s: the message names '%s': %s", cases[i].args,
                      cases[i].named, r.err);
        cr_expect_eq(strstr(r.out, "[OVERALL]"), NULL, "%s: nothing ran: %s", cases[i].args, r.out);
        char db[600];
        snprintf(db, sizeof db, "%s/db", r.dir);
        cr_expect_neq(access(db, F_OK), 0, "%s: no database was opened", cases[i].args);
        run_free(&r);
    }
    /* What a workload file sets is refused with its file and line. */
    char path[512], args[700], named[700];
    snprintf(path, sizeof path, "%s/kvbench-refuse-%d.properties",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("recordcount=50\nmeasurementtype=raw\n", f);
    cr_assert_eq(fclose(f), 0);
    snprintf(args, sizeof args, "-P workloads/workloadc -P '%s'", path);
    run r = kvbench(args);
    cr_expect_eq(r.status, 2, "%s", r.err);
    snprintf(named, sizeof named, "%s:2: measurementtype=raw", path);
    cr_expect_neq(strstr(r.err, named), NULL, "names '%s': %s", named, r.err);
    run_free(&r);
    unlink(path);
}

/* --replace-cost: each flush is one run replacement, whose family
 * operations akv_stats counts: none, since a run is its own files and the
 * memtables reuse the pool's families. Its times are printed, never
 * asserted. */
Test(ycsb_cli, replace_cost_counts_the_family_operations_of_each_flush)
{
    run r = kvbench("--replace-cost 3 --memtable-mb 1 --sst-kb 64 --json {D}/rc.json");
    cr_assert_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.out, "[REPLACE], Engine, adaptkv hash default, runs, 0, ssts, 0") != NULL, "%s",
              r.out);
    unsigned lines = 0;
    for (const char *p = r.out; (p = strstr(p, "family ops, 0 (0 creates, 0 drops)")) != NULL; p++)
        lines++;
    cr_expect_eq(lines, 3, "%s", r.out);
    cr_expect(metric(r.out, "REPLACE", "writer outside, puts") > 0, "%s", r.out);
    char p[700];
    snprintf(p, sizeof p, "%s/rc.json", r.dir);
    char *json = slurp(p);
    cr_assert_not_null(json);
    cr_expect(strstr(json, "\"replace_cost\":{\"runs\":0,\"ssts\":0,\"replacements\":3,") != NULL, "%s",
              json);
    cr_expect(strstr(json, "\"family_ops\":0,\"family_creates\":0,\"family_drops\":0,") != NULL, "%s", json);
    free(json);
    run_free(&r);
    r = kvbench("--replace-cost 1 --engine rocksdb");
    cr_expect_eq(r.status, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--engine adaptkv") != NULL, "%s", r.err);
    run_free(&r);
}
