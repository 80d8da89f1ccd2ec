/*
 * trace.c — reads the output of YCSB's `basic` binding (BasicDB with
 * basicdb.verbose=true), which prints one line per operation:
 *
 *     READ usertable user6284781860667377211 [ <all fields>]
 *     UPDATE usertable user3 [ field4=... ]
 *     INSERT usertable user9 [ field0=... field1=... ]
 *     SCAN usertable user5 37 [ <all fields>]
 *     DELETE usertable user2
 *
 * The rest of YCSB's console output (banner, status lines, the [OVERALL]
 * summary) is skipped; any other line is an error naming file and line.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

static int trace_fail(akv_kb_trace *t, const char *file, int line, const char *fmt, ...)
{
    char msg[AKV_KB_ERRLEN - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(t->err, sizeof t->err, "%s:%d: %s", file, line, msg);
    return -1;
}

/* YCSB's client prints these around the operations. */
static bool is_chatter(const char *s, size_t n)
{
    static const char *const prefixes[] = {
        "[",          "YCSB Client", "Command line:",   "Loading workload",  "Starting test",
        "DBWrapper:", "**",          "Adding shutdown", "Maximum execution", "#",
        "SLF4J",      NULL};
    for (int i = 0; prefixes[i]; i++) {
        size_t l = strlen(prefixes[i]);
        if (n >= l && memcmp(s, prefixes[i], l) == 0)
            return true;
    }
    /* status lines: "2024-01-01 12:00:00:000 10 sec: 1000 operations; ..." */
    return n > 0 && isdigit((unsigned char)s[0]) && memmem(s, n, " sec: ", 6) != NULL;
}

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

/* The "[ ... ]" field list: required for every operation but DELETE. */
static int fields(akv_kb_trace *t, const char *file, int line, const char *s, size_t n, size_t i,
                  akv_kb_trace_op *op)
{
    while (i < n && s[i] == ' ')
        i++;
    if (op->op == AKV_KB_DELETE) {
        if (i < n)
            return trace_fail(t, file, line, "unexpected text after DELETE's key: '%.*s'", (int)(n - i),
                              s + i);
        return 0;
    }
    if (i == n || s[i] != '[')
        return trace_fail(t, file, line, "expected '[' (field list) after the key");
    if (s[n - 1] != ']')
        return trace_fail(t, file, line, "field list does not end with ']' (truncated line?)");
    op->vlen = (uint32_t)(n - i - 2);
    return 0;
}

int akv_kb_trace_parse_line(akv_kb_trace *t, const char *file, int line, const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        n--;
    if (n == 0 || is_chatter(s, n))
        return 0;
    size_t i = 0, tl, kl;
    const char *tok, *key;
    token(s, n, &i, &tok, &tl);
    akv_kb_trace_op op = {0};
    int o = op_of(tok, tl);
    if (o < 0)
        return trace_fail(t, file, line,
                          "unrecognized line '%.*s' (expected READ, UPDATE, INSERT, SCAN or DELETE)",
                          (int)(n > 60 ? 60 : n), s);
    op.op = (uint8_t)o;
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
        if (*end || errno || c == 0 || c > 1000000 || num[0] == '-')
            return trace_fail(t, file, line, "SCAN record count '%s' is not a number in [1, 1000000]", num);
        op.count = (uint32_t)c;
    }
    if (fields(t, file, line, s, n, i, &op))
        return -1;
    return push(t, file, line, &op, key, kl);
}

int akv_kb_trace_load(akv_kb_trace *t, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(t->err, sizeof t->err, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int lineno = 0, rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (memchr(line, '\0', (size_t)len))
            rc = trace_fail(t, path, lineno, "NUL byte (is this a binary file?)");
        else
            rc = akv_kb_trace_parse_line(t, path, lineno, line, (size_t)len);
    }
    free(line);
    fclose(f);
    if (rc == 0 && t->n == 0) {
        snprintf(t->err, sizeof t->err, "%s: no operations found (is it YCSB basic binding output?)", path);
        rc = -1;
    }
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
