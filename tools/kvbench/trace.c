/*
 * trace.c — reads what `bin/ycsb load|run basic ...` prints (stdout, or
 * stdout and stderr together), i.e. the output of YCSB's BasicDB with
 * basicdb.verbose=true, its default:
 *
 *     ***************** properties *****************
 *     "fieldcount"="10"
 *     ...
 *     **********************************************
 *     INSERT usertable user6284781860667377211 [ field1=<value> field0=<value> ... ]
 *     READ usertable user3 [ <all fields>]
 *     READ usertable user3 [ field4 ]
 *     UPDATE usertable user3 [ field4=<value> ]
 *     SCAN usertable user5 37 [ <all fields>]
 *     DELETE usertable user2
 *
 * Each client thread prints its own properties block. A value is printable
 * ASCII (' ' to DEL) and may contain blanks, '=' and ']', so a field list is
 * split at " NAME=" where NAME is the list's field prefix and a number; and
 * when the block says every field has the same length (fieldlengthdistribution
 * constant, the default), every value must have exactly fieldlength bytes. A
 * line cut inside a value (a trace cut short, or output interleaved) is an
 * error naming the file and line.
 *
 * Everything else YCSB and bin/ycsb print — the properties blocks, the
 * command lines, the banner, status lines, the [OVERALL] summary or the JSON
 * exporters' summary — is skipped and counted. A Java exception (YCSB failed
 * and stopped) is an error that says so; any other line is an error.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

#define MAX_RECORD (64u << 20)

static int trace_fail(akv_kb_trace *t, const char *file, int line, const char *fmt, ...)
{
    char msg[AKV_KB_ERRLEN - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(t->err, sizeof t->err, "%s:%d: %s", file, line, msg);
    else
        snprintf(t->err, sizeof t->err, "%s: %s", file, msg);
    return -1;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
    size_t l = strlen(prefix);
    return n >= l && memcmp(s, prefix, l) == 0;
}

/* The first `needle` in s[0..n), or NULL. */
static const char *find(const char *s, size_t n, const char *needle)
{
    size_t l = strlen(needle);
    for (size_t i = 0; i + l <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, l) == 0)
            return s + i;
    return NULL;
}

/* ---- what is not an operation ---------------------------------------------- */

/* What YCSB's client, bin/ycsb and Maven print around the operations. */
static bool is_banner(const char *s, size_t n)
{
    static const char *const prefixes[] = {"[", /* [OVERALL], [READ], ... and bin/ycsb's [WARN], [DEBUG] */
                                           "YCSB Client",
                                           "Loading workload",
                                           "Starting test",
                                           "DBWrapper:",
                                           " (might take a few minutes",
                                           "Maximum execution time",
                                           "Maximum time elapsed",
                                           "Stop requested for workload",
                                           "Still waiting for thread",
                                           "Could not wait until max",
                                           "Warning: the threadcount",
                                           "Data integrity is enabled",
                                           "Retrying insertion",
                                           "Error inserting",
                                           "Unable to retrieve client version",
                                           "Picked up ",
                                           "WARNING:", /* the JVM's */
                                           "SLF4J",
                                           "#",
                                           NULL};
    if (n == 0)
        return true;
    for (int i = 0; prefixes[i]; i++)
        if (starts(s, n, prefixes[i]))
            return true;
    size_t stars = 0;
    while (stars < n && s[stars] == '*')
        stars++;
    if (stars == n)
        return true;
    /* status lines: "[label]2024-01-01 12:00:00:000 10 sec: 1000 operations; ..." */
    return find(s, n, " sec: ") && find(s, n, " operations;");
}

/* The summary of YCSB's JSON exporters (-p exporter=...JSONMeasurementsExporter
 * or JSONArrayMeasurementsExporter without exportfile) on stdout: records
 *
 *     [ {                             (the array's; "{" for the other)
 *       "metric" : "OVERALL",
 *       "measurement" : "RunTime(ms)",
 *       "value" : 98
 *     }, {                            ("} {" for the other)
 *     ...
 *     } ]                             ("}" for the other, with no end of line)
 */
static bool is_json_summary(const char *s, size_t n)
{
    static const char *const frames[] = {"{", "[ {", "}", "}, {", "} {", "} ]", NULL};
    for (int i = 0; frames[i]; i++)
        if (n == strlen(frames[i]) && memcmp(s, frames[i], n) == 0)
            return true;
    static const char *const members[] = {"  \"metric\" : ", "  \"measurement\" : ", "  \"value\" : ", NULL};
    for (int i = 0; members[i]; i++)
        if (starts(s, n, members[i]) && n > strlen(members[i]))
            return true;
    return false;
}

/* What the JVM prints when YCSB fails: "java.lang.ArithmeticException: / by
 * zero" (a dotted class name ending in Exception or Error, and its message),
 * "Exception in thread ...", the stack frames "\tat ..." and "Caused by: ...".
 * YCSB's client thread prints the exception and exits: the run did not finish. */
static bool is_java_exception(const char *s, size_t n)
{
    if (starts(s, n, "Exception in thread ") || starts(s, n, "Caused by: ") || starts(s, n, "\tat "))
        return true;
    size_t i = 0, dots = 0;
    while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '$' || s[i] == '.'))
        dots += s[i++] == '.';
    if (dots == 0 || (i < n && s[i] != ':'))
        return false;
    return (i >= 9 && memcmp(s + i - 9, "Exception", 9) == 0) ||
           (i >= 5 && memcmp(s + i - 5, "Error", 5) == 0);
}

/* "Command line: -db site.ycsb.BasicDB ..." (Client) and the java command
 * bin/ycsb prints before running it. */
static bool is_command(const char *s, size_t n)
{
    if (starts(s, n, "Command line:"))
        return true;
    const char *sp = memchr(s, ' ', n);
    size_t first = sp ? (size_t)(sp - s) : n;
    bool java = (first >= 4 && memcmp(s + first - 4, "java", 4) == 0) ||
                (first >= 8 && memcmp(s + first - 8, "java.exe", 8) == 0);
    return java && find(s, n, " site.ycsb.") != NULL;
}

/* A line of BasicDB's properties block: "name"="value". Remembers what
 * fixes the length of every value. */
static void block_property(akv_kb_trace *t, const char *s, size_t n)
{
    const char *sep = find(s, n, "\"=\"");
    if (!sep)
        return;
    size_t nl = (size_t)(sep - s) - 1;
    const char *v = sep + 3;
    size_t vl = (size_t)(s + n - v);
    if (vl > 0 && v[vl - 1] == '"')
        vl--;
    if (nl == 23 && memcmp(s + 1, "fieldlengthdistribution", 23) == 0)
        t->fl_constant = vl == 8 && memcmp(v, "constant", 8) == 0;
    if (nl == 11 && memcmp(s + 1, "fieldlength", 11) == 0) {
        char num[24] = {0}, *end;
        memcpy(num, v, vl < sizeof num - 1 ? vl : sizeof num - 1);
        unsigned long long x = strtoull(num, &end, 10);
        t->fl_length = *end || !*num ? 0 : x;
    }
}

/* Inside a block, until its closing line of stars. */
static void block_line(akv_kb_trace *t, const char *s, size_t n)
{
    size_t stars = 0;
    while (stars < n && s[stars] == '*')
        stars++;
    if (n > 0 && stars == n) {
        t->block_line = 0;
        t->field_bytes = t->fl_constant ? t->fl_length : 0;
        t->skipped_banner++;
    } else if (n > 0 && s[0] == '"') {
        block_property(t, s, n);
        t->skipped_props++;
    } else {
        t->skipped_banner++; /* the rest of a value that spans lines */
    }
}

/* ---- operations ------------------------------------------------------------------ */

/* Next blank-separated token of s[*i..n). */
static bool token(const char *s, size_t n, size_t *i, const char **tok, size_t *tlen)
{
    while (*i < n && s[*i] == ' ')
        (*i)++;
    size_t a = *i;
    while (*i < n && s[*i] != ' ')
        (*i)++;
    *tok = s + a;
    *tlen = *i - a;
    return *tlen > 0;
}

static int op_of(const char *tok, size_t n)
{
    static const struct {
        const char *name;
        int op;
    } ops[] = {{"READ", AKV_KB_READ},
               {"UPDATE", AKV_KB_UPDATE},
               {"INSERT", AKV_KB_INSERT},
               {"SCAN", AKV_KB_SCAN},
               {"DELETE", AKV_KB_DELETE}};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (strlen(ops[i].name) == n && memcmp(ops[i].name, tok, n) == 0)
            return ops[i].op;
    return -1;
}

static int push(akv_kb_trace *t, const char *file, int line, akv_kb_trace_op *op, const char *key,
                size_t klen)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        akv_kb_trace_op *v = realloc(t->ops, cap * sizeof *v);
        if (!v)
            return trace_fail(t, file, line, "out of memory");
        t->ops = v;
        t->cap = cap;
    }
    op->key = strndup(key, klen);
    op->klen = (uint32_t)klen;
    if (!op->key)
        return trace_fail(t, file, line, "out of memory");
    t->ops[t->n++] = *op;
    return 0;
}

/* Does s[0..n) start with "PREFIX<digits>="? */
static bool field_name_at(const char *s, size_t n, const char *prefix, size_t pl)
{
    if (n < pl + 2 || memcmp(s, prefix, pl) != 0)
        return false;
    size_t i = pl;
    while (i < n && isdigit((unsigned char)s[i]))
        i++;
    return i > pl && i < n && s[i] == '=';
}

/* Where the value starting at s[v] ends (the blank before the next field or
 * before the closing ']'), or n when the line ends first. */
static size_t value_end(const char *s, size_t n, size_t v, const char *prefix, size_t pl)
{
    for (size_t e = v; e + 1 < n; e++) {
        if (s[e] != ' ')
            continue;
        if (e + 2 == n && s[e + 1] == ']')
            return e;
        if (field_name_at(s + e + 1, n - e - 1, prefix, pl))
            return e;
    }
    return n;
}

/* INSERT and UPDATE: "[ name=value name=value ]". Sets op->vlen to the bytes
 * of all values. */
static int write_fields(akv_kb_trace *t, const char *file, int line, const char *s, size_t n, size_t i,
                        akv_kb_trace_op *op)
{
    const char *what = akv_kb_op_names[op->op];
    char prefix[64] = "";
    size_t pl = 0;
    uint64_t bytes = 0;
    for (bool first = true;; first = false) {
        if (i + 1 == n && s[i] == ']')
            break;
        size_t j = i;
        while (j < n && s[j] != '=' && s[j] != ' ')
            j++;
        if (j == n)
            return trace_fail(t, file, line, "%s: the line ends inside the field list (cut short?)", what);
        if (s[j] == ' ' || j == i)
            return trace_fail(t, file, line, "%s: expected 'name=value' at column %zu", what, i + 1);
        if (first) { /* field names are this prefix and a number */
            pl = j - i;
            while (pl > 0 && isdigit((unsigned char)s[i + pl - 1]))
                pl--;
            if (pl >= sizeof prefix)
                return trace_fail(t, file, line, "%s: field name of %zu bytes", what, pl);
            memcpy(prefix, s + i, pl);
        }
        size_t v = j + 1, e;
        if (t->field_bytes) {
            e = v + t->field_bytes;
            if (e + 2 > n)
                return trace_fail(t, file, line,
                                  "%s: the line ends inside the value of %.*s, which has %zu of its %llu "
                                  "bytes (fieldlength in the properties block): the trace was cut",
                                  what, (int)(j - i), s + i, n > v ? n - v : 0,
                                  (unsigned long long)t->field_bytes);
            if (s[e] != ' ')
                return trace_fail(t, file, line,
                                  "%s: the value of %.*s is not %llu bytes long (fieldlength in the "
                                  "properties block)",
                                  what, (int)(j - i), s + i, (unsigned long long)t->field_bytes);
        } else if ((e = value_end(s, n, v, prefix, pl)) == n) {
            return trace_fail(
                t, file, line,
                "%s: the line ends inside the value of %.*s (no ' ]' after it): the trace was cut", what,
                (int)(j - i), s + i);
        }
        bytes += e - v;
        if (bytes > MAX_RECORD)
            return trace_fail(t, file, line, "%s: more than %u bytes of values", what, MAX_RECORD);
        i = e + 1;
    }
    op->vlen = (uint32_t)bytes;
    return 0;
}

/* READ and SCAN: "[ <all fields>]" or "[ name name ]". */
static int read_fields(akv_kb_trace *t, const char *file, int line, const char *s, size_t n, size_t i,
                       const akv_kb_trace_op *op)
{
    static const char all[] = "<all fields>]";
    bool ok = (n - i == sizeof all - 1 && memcmp(s + i, all, n - i) == 0) ||
              (n - i >= 2 && s[n - 1] == ']' && s[n - 2] == ' ' && s[i] != ' ');
    if (!ok)
        return trace_fail(t, file, line,
                          "%s: the field list is neither '[ <all fields>]' nor '[ name ... ]' (cut short?)",
                          akv_kb_op_names[op->op]);
    return 0;
}

static int fields(akv_kb_trace *t, const char *file, int line, const char *s, size_t n, size_t i,
                  akv_kb_trace_op *op)
{
    if (op->op == AKV_KB_DELETE) {
        if (i < n)
            return trace_fail(t, file, line, "unexpected text after DELETE's key: '%.*s'",
                              (int)(n - i > 40 ? 40 : n - i), s + i);
        return 0;
    }
    if (n - i < 3 || s[i] != ' ' || s[i + 1] != '[' || s[i + 2] != ' ')
        return trace_fail(t, file, line, "%s: expected ' [ ' (the field list) after the %s",
                          akv_kb_op_names[op->op], op->op == AKV_KB_SCAN ? "record count" : "key");
    if (op->op == AKV_KB_READ || op->op == AKV_KB_SCAN)
        return read_fields(t, file, line, s, n, i + 3, op);
    return write_fields(t, file, line, s, n, i + 3, op);
}

static int operation(akv_kb_trace *t, const char *file, int line, const char *s, size_t n, int o)
{
    size_t i = 0, tl, kl;
    const char *tok, *key;
    akv_kb_trace_op op = {.op = (uint8_t)o};
    token(s, n, &i, &tok, &tl);
    if (!token(s, n, &i, &tok, &tl))
        return trace_fail(t, file, line, "%s without a table name", akv_kb_op_names[o]);
    if (!token(s, n, &i, &key, &kl) || key[0] == '[')
        return trace_fail(t, file, line, "%s without a key", akv_kb_op_names[o]);
    if (kl > 65536)
        return trace_fail(t, file, line, "key of %zu bytes (the limit is 65536)", kl);
    if (o == AKV_KB_SCAN) {
        char num[24] = {0}, *end;
        if (!token(s, n, &i, &tok, &tl) || tl >= sizeof num)
            return trace_fail(t, file, line, "SCAN without a record count");
        memcpy(num, tok, tl);
        errno = 0;
        unsigned long c = strtoul(num, &end, 10);
        if (*end || errno || c > INT32_MAX || !isdigit((unsigned char)num[0]))
            return trace_fail(t, file, line, "SCAN record count '%s' is not a number in [0, 2^31-1]", num);
        op.count = (uint32_t)c;
    }
    if (fields(t, file, line, s, n, i, &op))
        return -1;
    return push(t, file, line, &op, key, kl);
}

int akv_kb_trace_parse_line(akv_kb_trace *t, const char *file, int line, const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (t->block_line) {
        block_line(t, s, n);
        return 0;
    }
    const char *sp = memchr(s, ' ', n);
    int o = op_of(s, sp ? (size_t)(sp - s) : n);
    if (o >= 0)
        return operation(t, file, line, s, n, o);
    if (starts(s, n, "*") && find(s, n, " properties ")) {
        t->block_line = line;
        t->fl_constant = true; /* YCSB's defaults: constant, 100 bytes */
        t->fl_length = 100;
        t->skipped_banner++;
    } else if (is_command(s, n)) {
        t->skipped_commands++;
    } else if (is_banner(s, n) || is_json_summary(s, n)) {
        t->skipped_banner++;
    } else if (is_java_exception(s, n)) {
        return trace_fail(t, file, line,
                          "YCSB failed here with a Java exception: '%.*s' (its client stopped: the "
                          "trace lacks the rest of the run)",
                          (int)(n > 80 ? 80 : n), s);
    } else {
        return trace_fail(
            t, file, line,
            "unrecognized line '%.*s' (expected READ, UPDATE, INSERT, SCAN or DELETE, or YCSB's "
            "banner, properties or summary)",
            (int)(n > 60 ? 60 : n), s);
    }
    return 0;
}

int akv_kb_trace_end(akv_kb_trace *t, const char *file)
{
    int open = t->block_line;
    t->block_line = 0;
    t->field_bytes = 0;
    if (open)
        return trace_fail(t, file, open,
                          "the properties block opened here does not close: the trace was cut");
    return 0;
}

int akv_kb_trace_load(akv_kb_trace *t, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(t->err, sizeof t->err, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0, before = t->n;
    ssize_t len;
    int lineno = 0, rc = 0;
    t->block_line = 0;
    t->field_bytes = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        bool complete = len > 0 && line[len - 1] == '\n';
        size_t ops = t->n;
        if (complete)
            len--;
        if (memchr(line, '\0', (size_t)len))
            rc = trace_fail(t, path, lineno, "NUL byte (is this a binary file?)");
        else
            rc = akv_kb_trace_parse_line(t, path, lineno, line, (size_t)len);
        if (rc == 0 && !complete && t->n > ops)
            rc = trace_fail(t, path, lineno, "the last operation has no end of line: the trace was cut");
    }
    bool bad = ferror(f);
    free(line);
    fclose(f);
    if (rc == 0 && bad)
        rc = trace_fail(t, path, 0, "read error");
    if (rc == 0)
        rc = akv_kb_trace_end(t, path);
    if (rc == 0 && t->n == before)
        rc = trace_fail(t, path, 0, "no operations found (is it the output of YCSB's basic binding?)");
    return rc;
}

void akv_kb_trace_free(akv_kb_trace *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->ops[i].key);
    free(t->ops);
    t->ops = NULL;
    t->n = t->cap = 0;
}
