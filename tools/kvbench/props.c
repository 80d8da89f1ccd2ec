/*
 * props.c — YCSB workload files are Java .properties files: `name=value`,
 * `name: value` or `name value`, comments starting with # or !, a trailing
 * backslash continues a line. We parse that format, remember where every
 * value came from, and validate values when they are read, so each error
 * names the file, the line and the problem.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

static int props_fail(akv_kb_props *p, const char *file, int line, const char *fmt, ...)
{
    char msg[AKV_KB_ERRLEN - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(p->err, sizeof p->err, "%s:%d: %s", file, line, msg);
    else
        snprintf(p->err, sizeof p->err, "%s: %s", file, msg);
    return -1;
}

static int add(akv_kb_props *p, const char *file, int line, const char *name, size_t nlen, const char *val,
               size_t vlen)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 32;
        akv_kb_prop *v = realloc(p->v, cap * sizeof *v);
        if (!v)
            return props_fail(p, file, line, "out of memory");
        p->v = v;
        p->cap = cap;
    }
    akv_kb_prop *e = &p->v[p->n];
    e->name = strndup(name, nlen);
    e->value = strndup(val, vlen);
    e->file = strdup(file);
    e->line = line;
    if (!e->name || !e->value || !e->file) {
        free(e->name);
        free(e->value);
        free(e->file);
        return props_fail(p, file, line, "out of memory");
    }
    p->n++;
    return 0;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\f';
}

/* Decode Java escapes (\t \n \r \f \uXXXX, \x = x) of s[0..n) into out. */
static int decode(akv_kb_props *p, const char *file, int line, const char *s, size_t n, char *out,
                  size_t *olen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c != '\\' || i + 1 == n) {
            out[o++] = c;
            continue;
        }
        c = s[++i];
        if (c == 'u') {
            if (n - i < 5)
                return props_fail(p, file, line, "truncated \\u escape");
            char hex[5] = {s[i + 1], s[i + 2], s[i + 3], s[i + 4], 0};
            char *end;
            unsigned long u = strtoul(hex, &end, 16);
            if (*end || u == 0 || u > 0x7f)
                return props_fail(p, file, line, "unsupported escape '\\u%s' (only ASCII)", hex);
            out[o++] = (char)u;
            i += 4;
            continue;
        }
        out[o++] = c == 't' ? '\t' : c == 'n' ? '\n' : c == 'r' ? '\r' : c == 'f' ? '\f' : c;
    }
    *olen = o;
    return 0;
}

/* Split a raw logical line into name and value by Java's rules (the name ends
 * at the first unescaped '=', ':' or blank), then decode both. */
static int split(akv_kb_props *p, const char *file, int line, const char *s, size_t n, char *dec)
{
    size_t i = 0;
    while (i < n && s[i] != '=' && s[i] != ':' && !is_space(s[i]))
        i += (s[i] == '\\' && i + 1 < n) ? 2 : 1;
    size_t kend = i;
    while (i < n && is_space(s[i]))
        i++;
    if (i < n && (s[i] == '=' || s[i] == ':'))
        i++;
    while (i < n && is_space(s[i]))
        i++;
    if (kend == 0)
        return props_fail(p, file, line, "expected 'name=value', found '%.*s'", (int)(n > 40 ? 40 : n), s);
    while (n > i && is_space(s[n - 1]) && !(n - i >= 2 && s[n - 2] == '\\'))
        n--;
    size_t kl, vl;
    if (decode(p, file, line, s, kend, dec, &kl) || decode(p, file, line, s + i, n - i, dec + kl, &vl))
        return -1;
    return add(p, file, line, dec, kl, dec + kl, vl);
}

/* Ends a physical line with an odd number of backslashes (continuation)? */
static bool continues(const char *s, size_t n)
{
    size_t k = 0;
    while (k < n && s[n - 1 - k] == '\\')
        k++;
    return k % 2 == 1;
}

int akv_kb_props_parse(akv_kb_props *p, const char *file, const char *buf, size_t len)
{
    char *logical = malloc(len + 1), *dec = malloc(len + 1);
    int rc = 0, lineno = 0;
    size_t pos = 0;
    if (!logical || !dec)
        rc = props_fail(p, file, 0, "out of memory");
    while (rc == 0 && pos < len) {
        int start_line = ++lineno;
        size_t ln = 0;
        bool first = true, more = true;
        while (more) {
            const char *nl = memchr(buf + pos, '\n', len - pos);
            size_t end = nl ? (size_t)(nl - buf) : len, a = pos, b = end;
            if (b > a && buf[b - 1] == '\r')
                b--;
            if (memchr(buf + a, '\0', b - a)) {
                rc = props_fail(p, file, lineno, "NUL byte (is this a binary file?)");
                break;
            }
            while (a < b && is_space(buf[a]))
                a++;
            if (first && (a == b || buf[a] == '#' || buf[a] == '!'))
                more = false, b = a; /* blank or comment line */
            else if ((more = continues(buf + a, b - a)))
                b--;
            memcpy(logical + ln, buf + a, b - a);
            ln += b - a;
            pos = nl ? end + 1 : len;
            if (more && pos >= len) {
                rc = props_fail(p, file, lineno, "line continuation (trailing '\\') at end of file");
                break;
            }
            if (more)
                lineno++;
            first = false;
        }
        if (rc || ln == 0)
            continue;
        rc = split(p, file, start_line, logical, ln, dec);
    }
    free(logical);
    free(dec);
    return rc;
}

int akv_kb_props_load(akv_kb_props *p, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return props_fail(p, path, 0, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(buf, cap *= 2);
        if (!nb)
            free(buf);
        buf = nb;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return props_fail(p, path, 0, bad ? "read error" : "out of memory");
    }
    int rc = akv_kb_props_parse(p, path, buf, n);
    free(buf);
    return rc;
}

int akv_kb_props_set_arg(akv_kb_props *p, const char *arg, int argno)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg)
        return props_fail(p, "-p", 0, "argument %d: expected name=value, got '%s'", argno, arg);
    size_t vlen = strlen(eq + 1);
    return add(p, "-p", argno, arg, (size_t)(eq - arg), eq + 1, vlen);
}

/* As YCSB's Client: a -p setting wins over every -P file, wherever it
 * stands on the command line; among -p settings, and among files, the
 * last one wins. */
const akv_kb_prop *akv_kb_props_find(const akv_kb_props *p, const char *name)
{
    const akv_kb_prop *file = NULL;
    for (size_t i = p->n; i-- > 0;) {
        const akv_kb_prop *e = &p->v[i];
        if (strcmp(e->name, name) != 0)
            continue;
        if (strcmp(e->file, "-p") == 0)
            return e;
        if (!file)
            file = e;
    }
    return file;
}

static int bad_value(akv_kb_props *p, const akv_kb_prop *e, const char *what)
{
    if (strcmp(e->file, "-p") == 0)
        return props_fail(p, "-p", 0, "%s: '%s' is not %s", e->name, e->value, what);
    return props_fail(p, e->file, e->line, "%s: '%s' is not %s", e->name, e->value, what);
}

int akv_kb_props_str(akv_kb_props *p, const char *name, const char *def, const char **out)
{
    const akv_kb_prop *e = akv_kb_props_find(p, name);
    *out = e ? e->value : def;
    return 0;
}

int akv_kb_props_u64(akv_kb_props *p, const char *name, uint64_t def, uint64_t *out)
{
    const akv_kb_prop *e = akv_kb_props_find(p, name);
    if (!e) {
        *out = def;
        return 0;
    }
    const char *s = e->value;
    char *end;
    errno = 0;
    /* Java's Long.parseLong takes digits only; accept 1e6-style too for -p convenience. */
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'e' || *end == 'E' || *end == '.') {
        double d = strtod(s, &end);
        if (*end || d < 0 || d > 1.8e19 || d != floor(d))
            return bad_value(p, e, "a non-negative integer");
        v = (unsigned long long)d;
    }
    if (!*s || *s == '-' || *end || errno)
        return bad_value(p, e, "a non-negative integer");
    *out = v;
    return 0;
}

int akv_kb_props_f64(akv_kb_props *p, const char *name, double def, double lo, double hi, double *out)
{
    const akv_kb_prop *e = akv_kb_props_find(p, name);
    if (!e) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(e->value, &end);
    if (!*e->value || *end || errno || isnan(v))
        return bad_value(p, e, "a number");
    if (v < lo || v > hi) {
        char what[96];
        snprintf(what, sizeof what, "in [%g, %g]", lo, hi);
        return bad_value(p, e, what);
    }
    *out = v;
    return 0;
}

int akv_kb_props_bool(akv_kb_props *p, const char *name, bool def, bool *out)
{
    const akv_kb_prop *e = akv_kb_props_find(p, name);
    if (!e) {
        *out = def;
        return 0;
    }
    if (strcasecmp(e->value, "true") == 0 || strcmp(e->value, "1") == 0)
        *out = true;
    else if (strcasecmp(e->value, "false") == 0 || strcmp(e->value, "0") == 0)
        *out = false;
    else
        return bad_value(p, e, "true or false");
    return 0;
}

int akv_kb_props_choice(akv_kb_props *p, const char *name, const char *def, const char *const *choices,
                        int *out)
{
    const akv_kb_prop *e = akv_kb_props_find(p, name);
    const char *v = e ? e->value : def;
    char what[256] = "one of";
    for (int i = 0; choices[i]; i++) {
        if (strcmp(v, choices[i]) == 0) {
            *out = i;
            return 0;
        }
        size_t l = strlen(what);
        snprintf(what + l, sizeof what - l, "%s %s", i ? "," : "", choices[i]);
    }
    return bad_value(p, e, what);
}

/* YCSB silently ignores unknown names; a typo then runs the wrong workload,
 * so we warn (but accept, since YCSB's client has many more properties).
 * Known: what kvbench honours, and YCSB's client properties that do not
 * apply to it (docs: workloads/README.md). */
static const char *const known[] = {"workload",
                                    "db",
                                    "exporter",
                                    "exportfile",
                                    "threadcount",
                                    "target",
                                    "table",
                                    "recordcount",
                                    "operationcount",
                                    "fieldcount",
                                    "fieldlength",
                                    "fieldlengthdistribution",
                                    "fieldlengthhistogram",
                                    "fieldnameprefix",
                                    "minfieldlength",
                                    "readallfields",
                                    "readallfieldsbyname",
                                    "writeallfields",
                                    "dataintegrity",
                                    "readproportion",
                                    "updateproportion",
                                    "insertproportion",
                                    "scanproportion",
                                    "readmodifywriteproportion",
                                    "deleteproportion",
                                    "requestdistribution",
                                    "zipfianconstant",
                                    "minscanlength",
                                    "maxscanlength",
                                    "scanlengthdistribution",
                                    "insertorder",
                                    "zeropadding",
                                    "insertstart",
                                    "insertcount",
                                    "hotspotdatafraction",
                                    "hotspotopnfraction",
                                    "exponential.percentile",
                                    "exponential.frac",
                                    "maxexecutiontime",
                                    "measurementtype",
                                    "measurement.interval",
                                    "measurement.trackjvm",
                                    "measurement.histogram.verbose",
                                    "hdrhistogram.percentiles",
                                    "hdrhistogram.fileoutput",
                                    "hdrhistogram.output.path",
                                    "reportlatencyforeacherror",
                                    "latencytrackederrors",
                                    "dotransactions",
                                    "status",
                                    "label",
                                    "core_workload_insertion_keep_going_on_error",
                                    "histogram.buckets",
                                    "timeseries.granularity",
                                    "core_workload_insertion_retry_limit",
                                    "core_workload_insertion_retry_interval",
                                    "status.interval",
                                    "negativeproportion",
                                    "negativekeycount",
                                    "negativedistribution",
                                    "adversaryproportion",
                                    "adversaryexplore",
                                    "adversarypoolsize",
                                    "adversaryrecon",
                                    "basicdb.verbose",
                                    "basicdb.simulatedelay",
                                    "basicdb.randomizedelay",
                                    "basicdb.count",
                                    "debug",
                                    NULL};

void akv_kb_props_warn_unknown(const akv_kb_props *p, FILE *out)
{
    for (size_t i = 0; i < p->n; i++) {
        bool ok = false;
        for (int k = 0; known[k] && !ok; k++)
            ok = strcmp(known[k], p->v[i].name) == 0;
        if (!ok)
            fprintf(out, "kvbench: warning: %s:%d: unknown property '%s' (ignored)\n", p->v[i].file,
                    p->v[i].line, p->v[i].name);
    }
}

void akv_kb_props_free(akv_kb_props *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->v[i].name);
        free(p->v[i].value);
        free(p->v[i].file);
    }
    free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
}
