/*
 * test_ycsb_trace.c — kvbench --trace reads what `bin/ycsb load|run basic`
 * prints.
 *
 * test/data/ycsb/real/ holds traces recorded from real YCSB (the release
 * 0.17.0 and a master commit; its README says how each was made): every
 * operation line in them must be parsed, and every other line skipped and
 * counted — checked against counts this test makes itself from the files.
 *
 * The samples in test/data/ycsb/ were written by hand in the exact format of
 * YCSB's BasicDB (properties block, "name"="value" lines, operation lines with
 * field lists in HashMap order and values of printable ASCII up to DEL) and
 * Client (command lines, banner, status lines, the exported summary), for what
 * the real traces lack (DELETE lines, scans of 0 records, values holding
 * " fieldN=" or " ]"):
 *
 *   basic-load.txt        bin/ycsb load basic -P workloads/workloada -p recordcount=8
 *                         -p fieldcount=3 -p fieldlength=12 > basic-load.txt
 *   basic-run.txt         bin/ycsb run basic ... -p threadcount=2 (two properties
 *                         blocks), reads, updates, read-modify-writes, scans of 4
 *                         and 0 records, inserts, -s status lines, 2>&1; plus one
 *                         DELETE line (CoreWorkload never deletes; BasicDB prints it so)
 *   basic-run-fields.txt  readallfields=false, writeallfields=true and uniform field
 *                         lengths 4..12, with values holding ' ', '=', ']' and "field7"
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/kvbench/generators.c"
#include "tools/kvbench/lenhist.c"
#include "tools/kvbench/props.c"
#include "tools/kvbench/rng.c"
#include "tools/kvbench/trace.c"
#include "tools/kvbench/workload.c"

#define DATA "test/data/ycsb/"

static int count_op(const akv_kb_trace *t, size_t from, size_t to, int op)
{
    int n = 0;
    for (size_t i = from; i < to; i++)
        n += t->ops[i].op == op;
    return n;
}

static void expect_key(const akv_kb_trace_op *op, int kind, uint64_t keynum)
{
    char want[48];
    akv_kb_key(want, sizeof want, keynum, true, 1);
    cr_expect_eq(op->op, kind);
    cr_expect_str_eq(op->key, want);
    cr_expect_eq(op->klen, strlen(want));
}

Test(ycsb_trace, load_output_replays_every_insert)
{
    akv_kb_trace t = {0};
    cr_assert_eq(akv_kb_trace_load(&t, DATA "basic-load.txt"), 0, "%s", t.err);
    cr_assert_eq(t.n, 8);
    for (size_t i = 0; i < 8; i++) {
        expect_key(&t.ops[i], AKV_KB_INSERT, i); /* YCSB's load: user + fnv(0), fnv(1), ... */
        cr_expect_eq(t.ops[i].vlen, 3 * 12, "insert %zu: %u bytes of values", i, t.ops[i].vlen);
    }
    cr_expect_eq(t.skipped_props, 14);
    cr_expect_eq(t.skipped_commands, 0);
    cr_expect_eq(t.skipped_banner, 2 + 26); /* the block's two frames; the exported summary */
    akv_kb_trace_free(&t);
}

Test(ycsb_trace, run_output_with_stderr_replays_every_operation)
{
    akv_kb_trace t = {0};
    cr_assert_eq(akv_kb_trace_load(&t, DATA "basic-run.txt"), 0, "%s", t.err);
    cr_assert_eq(t.n, 17);
    cr_expect_eq(count_op(&t, 0, t.n, AKV_KB_READ), 6);
    cr_expect_eq(count_op(&t, 0, t.n, AKV_KB_UPDATE), 6);
    cr_expect_eq(count_op(&t, 0, t.n, AKV_KB_SCAN), 2);
    cr_expect_eq(count_op(&t, 0, t.n, AKV_KB_INSERT), 2);
    cr_expect_eq(count_op(&t, 0, t.n, AKV_KB_DELETE), 1);
    expect_key(&t.ops[0], AKV_KB_READ, 3);
    expect_key(&t.ops[1], AKV_KB_UPDATE, 5);
    cr_expect_eq(t.ops[1].vlen, 12); /* one field */
    expect_key(&t.ops[4], AKV_KB_SCAN, 2);
    cr_expect_eq(t.ops[4].count, 4);
    expect_key(&t.ops[5], AKV_KB_INSERT, 8);
    cr_expect_eq(t.ops[5].vlen, 36);
    expect_key(&t.ops[7], AKV_KB_SCAN, 6);
    cr_expect_eq(t.ops[7].count, 0); /* minscanlength=0: YCSB scans 0 records */
    expect_key(&t.ops[16], AKV_KB_DELETE, 9);
    /* Two properties blocks of 19 properties (one per client thread), the
     * java and "Command line:" lines, and the rest: the banner and the first
     * status line, the blocks' frames, DBWrapper, the last status line, the
     * summary. */
    cr_expect_eq(t.skipped_props, 38);
    cr_expect_eq(t.skipped_commands, 2);
    cr_expect_eq(t.skipped_banner, 5 + 4 + 1 + 1 + 31);
    akv_kb_trace_free(&t);
}

Test(ycsb_trace, field_lists_of_varying_lengths)
{
    akv_kb_trace t = {0};
    cr_assert_eq(akv_kb_trace_load(&t, DATA "basic-run-fields.txt"), 0, "%s", t.err);
    cr_assert_eq(t.n, 4);
    expect_key(&t.ops[0], AKV_KB_READ, 1); /* "[ field2 ]" */
    expect_key(&t.ops[1], AKV_KB_UPDATE, 1);
    /* "a=b ]c", "x field7 y] " and 9 random bytes: split at " fieldN=", not
     * at the blanks, '=' or ']' inside the values. */
    cr_expect_eq(t.ops[1].vlen, 6 + 12 + 9, "%u", t.ops[1].vlen);
    cr_expect_eq(t.ops[3].vlen, 4 + 12 + 7, "%u", t.ops[3].vlen);
    akv_kb_trace_free(&t);
}

/* ---- traces recorded from real YCSB ---------------------------------------------------- */

#define REAL DATA "real/"

/* What a real trace's lines say, counted here without kvbench's parser. */
typedef struct expected {
    size_t ops[AKV_KB_NOPS]; /* by kind; none is AKV_KB_RMW */
    size_t n, lines, props, commands;
} expected;

static const char *const kinds[AKV_KB_NOPS] = {
    [AKV_KB_READ] = "READ ", [AKV_KB_UPDATE] = "UPDATE ", [AKV_KB_INSERT] = "INSERT ",
    [AKV_KB_SCAN] = "SCAN ", [AKV_KB_DELETE] = "DELETE ",
};

static int kind_of(const char *line)
{
    for (int k = 0; k < AKV_KB_NOPS; k++)
        if (kinds[k] && strncmp(line, kinds[k], strlen(kinds[k])) == 0)
            return k;
    return -1;
}

/* Checks every operation kvbench parsed from `path` against its line: kind,
 * key, scan length and (for writes) the bytes of values, which are the line's
 * length less "OP usertable KEY [ " and "]" and, for each of its `wfields`
 * fields (YCSB's fieldN names, N < 10), "fieldN=" and a blank. `fixed`: each
 * value has fieldlength (100) bytes. */
static expected check_real(const char *path, const akv_kb_trace *t, int wfields_update, bool fixed)
{
    expected e = {0};
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        e.lines++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (line[0] == '"' && strstr(line, "\"=\""))
            e.props++;
        if (strncmp(line, "java ", 5) == 0 || strncmp(line, "Command line: ", 14) == 0)
            e.commands++;
        int k = kind_of(line);
        if (k < 0)
            continue;
        e.ops[k]++;
        size_t i = e.n++;
        if (i >= t->n)
            continue;
        const akv_kb_trace_op *op = &t->ops[i];
        char key[128];
        long scan = -1;
        if (sscanf(line + strlen(kinds[k]), "usertable %127s %ld", key, &scan) < 1) {
            cr_expect(false, "%s, operation %zu: no key in '%s'", path, i, line);
            continue;
        }
        cr_expect_eq(op->op, k, "%s, operation %zu: %s", path, i, line);
        cr_expect_str_eq(op->key, key, "%s, operation %zu", path, i);
        if (k == AKV_KB_SCAN)
            cr_expect_eq(op->count, scan, "%s, operation %zu", path, i);
        if (k == AKV_KB_INSERT || k == AKV_KB_UPDATE) {
            size_t fields = k == AKV_KB_INSERT ? 10 : (size_t)wfields_update;
            size_t overhead = strlen(kinds[k]) + strlen("usertable ") + strlen(key) + 3 + 1 + fields * 8;
            cr_expect_eq(op->vlen, (size_t)len - overhead, "%s, operation %zu: %u bytes of values", path, i,
                         op->vlen);
            if (fixed)
                cr_expect_eq(op->vlen, fields * 100, "%s, operation %zu", path, i);
        }
    }
    free(line);
    fclose(f);
    return e;
}

static void replays_real(const char *name, int wfields_update, bool fixed)
{
    char path[256];
    snprintf(path, sizeof path, REAL "%s", name);
    akv_kb_trace t = {0};
    if (akv_kb_trace_load(&t, path) != 0) {
        cr_expect(false, "%s", t.err);
        akv_kb_trace_free(&t);
        return;
    }
    expected e = check_real(path, &t, wfields_update, fixed);
    cr_expect_gt(e.n, 0, "%s", path);
    cr_expect_eq(t.n, e.n, "%s: %zu operations parsed, %zu in the file", path, t.n, e.n);
    for (int k = 0; k < AKV_KB_NOPS; k++)
        cr_expect_eq((size_t)count_op(&t, 0, t.n, k), e.ops[k], "%s: %s", path, kinds[k]);
    cr_expect_eq(t.skipped_props, e.props, "%s", path);
    cr_expect_eq(t.skipped_commands, e.commands, "%s", path);
    /* Every line is an operation or counted as skipped. */
    cr_expect_eq(t.n + t.skipped_props + t.skipped_commands + t.skipped_banner, e.lines,
                 "%s: %zu lines, %zu operations, %llu + %llu + %llu skipped", path, e.lines, t.n,
                 (unsigned long long)t.skipped_props, (unsigned long long)t.skipped_commands,
                 (unsigned long long)t.skipped_banner);
    akv_kb_trace_free(&t);
}

Test(ycsb_trace, real_workloada)
{
    replays_real("0.17.0/workloada-load.txt", 1, true);
    replays_real("0.17.0/workloada-run.txt", 1, true);
    replays_real("0.17.0/workloada-run-stderr.txt", 1, true); /* 2>&1 and -s */
    replays_real("master/workloada-load.txt", 1, true);
    replays_real("master/workloada-run.txt", 1, true);
}

Test(ycsb_trace, real_workloadf_read_modify_write)
{
    replays_real("0.17.0/workloadf-load.txt", 1, true);
    replays_real("0.17.0/workloadf-run.txt", 1, true);
}

Test(ycsb_trace, real_workloade_scans_and_inserts)
{
    replays_real("0.17.0/workloade-load.txt", 1, true);
    replays_real("0.17.0/workloade-run.txt", 1, true); /* two threads, 2>&1 and -s */
}

Test(ycsb_trace, real_field_subsets_of_zipfian_lengths)
{
    replays_real("0.17.0/fields-load.txt", 10, false);
    replays_real("0.17.0/fields-run.txt", 10, false); /* writeallfields=true */
}

Test(ycsb_trace, real_json_exporter_summaries)
{
    replays_real("0.17.0/workloadb-run-json.txt", 1, true);
    replays_real("0.17.0/workloadc-run-json.txt", 1, true);
}

Test(ycsb_trace, real_run_that_failed_is_refused)
{
    akv_kb_trace t = {0};
    cr_expect_neq(akv_kb_trace_load(&t, REAL "master/workloade-run-crash.txt"), 0);
    cr_expect(strstr(t.err, "workloade-run-crash.txt:25: YCSB failed here with a Java exception: "
                            "'java.lang.ArithmeticException: / by zero'") != NULL,
              "%s", t.err);
    akv_kb_trace_free(&t);
}

/* ---- broken traces ------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    static char buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    char *s = malloc(*len + 1);
    memcpy(s, buf, *len);
    s[*len] = 0;
    return s;
}

/* Load the first `len` bytes of `text` as a trace; 0 or -1. */
static int load_bytes(akv_kb_trace *t, const char *text, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/kvbench-trace-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    fwrite(text, 1, len, f);
    fclose(f);
    memset(t, 0, sizeof *t);
    int rc = akv_kb_trace_load(t, path);
    unlink(path);
    return rc;
}

/* The byte offset of the start of line `n` (1-based). */
static size_t line_start(const char *s, int n)
{
    size_t i = 0;
    for (int l = 1; l < n; l++)
        i = (size_t)(strchr(s + i, '\n') - s) + 1;
    return i;
}

Test(ycsb_trace, a_line_cut_inside_a_value_is_an_error)
{
    size_t len;
    char *s = slurp(DATA "basic-run.txt", &len);
    akv_kb_trace t;
    /* Line 56: INSERT with three 12-byte values. Cut it inside field0's value
     * and resume with the next line, as interleaved or damaged output does. */
    size_t l56 = line_start(s, 56), l57 = line_start(s, 57);
    cr_assert(strncmp(s + l56, "INSERT usertable ", 17) == 0, "%.40s", s + l56);
    const char *v = strstr(s + l56, " field0=") + 8;
    char *cut = malloc(len);
    size_t head = (size_t)(v + 5 - s);
    memcpy(cut, s, head);
    cut[head] = '\n';
    memcpy(cut + head + 1, s + l57, len - l57);
    cr_expect_neq(load_bytes(&t, cut, head + 1 + len - l57), 0);
    cr_expect(
        strstr(t.err, ":56: INSERT: the line ends inside the value of field0, which has 5 of its 12 bytes"),
        "%s", t.err);
    akv_kb_trace_free(&t);

    /* The file ends inside that value (the trace was cut short). */
    cr_expect_neq(load_bytes(&t, s, head), 0);
    cr_expect(strstr(t.err, ":56: INSERT: the line ends inside the value of field0") != NULL, "%s", t.err);
    akv_kb_trace_free(&t);

    /* ... or right after a complete-looking DELETE key, without its newline. */
    size_t l67 = line_start(s, 67);
    cr_assert(strncmp(s + l67, "DELETE usertable user", 21) == 0, "%.40s", s + l67);
    cr_expect_neq(load_bytes(&t, s, l67 + 24), 0);
    cr_expect(strstr(t.err, ":67: the last operation has no end of line: the trace was cut") != NULL, "%s",
              t.err);
    akv_kb_trace_free(&t);

    /* ... or inside the properties block. */
    cr_expect_neq(load_bytes(&t, s, line_start(s, 12)), 0);
    cr_expect(strstr(t.err, ":8: the properties block opened here does not close") != NULL, "%s", t.err);
    akv_kb_trace_free(&t);

    /* The whole file, for contrast. */
    cr_expect_eq(load_bytes(&t, s, len), 0, "%s", t.err);
    akv_kb_trace_free(&t);
    free(cut);
    free(s);
}

/* Parse the first n of `lines` as lines 1..n of a trace "tr". */
static int trace_lines(akv_kb_trace *t, const char *const *lines, int n)
{
    memset(t, 0, sizeof *t);
    for (int i = 0; i < n; i++)
        if (akv_kb_trace_parse_line(t, "tr", i + 1, lines[i], strlen(lines[i])))
            return -1;
    return akv_kb_trace_end(t, "tr");
}

Test(ycsb_trace, malformed_lines_name_file_and_line)
{
    const char *const bad[][3] = {
        {"READ usertable", "", "tr:1: READ without a key"},
        {"READ usertable user1 [ <all fields>]", "SCAN usertable user1 x [ ]", "tr:2: SCAN record count 'x'"},
        {"SCAN usertable user1 -1 [ <all fields>]", "", "tr:1: SCAN record count '-1'"},
        {"GET user1", "", "tr:1: unrecognized line 'GET user1'"},
        {"UPDATE usertable user1 [ field0=ab", "", "tr:1: UPDATE: the line ends inside the value of field0"},
        {"UPDATE usertable user1 [ field0", "", "tr:1: UPDATE: the line ends inside the field list"},
        {"UPDATE usertable user1 field0=ab ]", "", "tr:1: UPDATE: expected ' [ '"},
        {"READ usertable user1 [ <all fi", "", "tr:1: READ: the field list is neither"},
        {"DELETE usertable user1 [ ]", "", "tr:1: unexpected text after DELETE's key"},
        {"***************** properties *****************", "\"fieldlength\"=\"4\"",
         "tr:1: the properties block opened here does not close"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        akv_kb_trace t;
        const char *const lines[] = {bad[i][0], bad[i][1]};
        cr_expect_neq(trace_lines(&t, lines, 2), 0, "%s", bad[i][0]);
        cr_expect(strstr(t.err, bad[i][2]) != NULL, "%s", t.err);
        akv_kb_trace_free(&t);
    }
}

Test(ycsb_trace, the_properties_block_fixes_the_value_length)
{
    const char *const ok[] = {"***************** properties *****************", "\"fieldlength\"=\"4\"",
                              "\"fieldnameprefix\"=\"field\"",
                              "**********************************************",
                              "UPDATE usertable user1 [ field0=a ]b field3=]]]] ]"};
    akv_kb_trace t;
    cr_assert_eq(trace_lines(&t, ok, 5), 0, "%s", t.err);
    cr_expect_eq(t.n, 1);
    cr_expect_eq(t.ops[0].vlen, 8);
    akv_kb_trace_free(&t);
    const char *const bad[] = {"***************** properties *****************", "\"fieldlength\"=\"4\"",
                               "**********************************************",
                               "UPDATE usertable user1 [ field0=abc field1=defg ]"};
    cr_expect_neq(trace_lines(&t, bad, 4), 0);
    cr_expect(strstr(t.err, "tr:4: UPDATE: the value of field0 is not 4 bytes long") != NULL, "%s", t.err);
    akv_kb_trace_free(&t);
}
