/*
 * ycsbcli.c — YCSB's own command line, as bin/ycsb and site.ycsb.Client take
 * it: `load`/`run` (bin/ycsb's commands), -load, -t, -threads N, -target N,
 * -s, -l LABEL and -db NAME, next to kvbench's long options. Each of them sets
 * the property YCSB's Client sets for it (dotransactions, threadcount, target,
 * status, label, db), so it weighs as a -p setting does. And the YCSB
 * properties that change what runs but that kvbench cannot honour (another
 * workload class, exporter or measurement type, ...) are refused by name,
 * rather than silently ignored.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/kvbench/kvbench.h"

/* YCSB's single-dash words and the property each one sets: a value of NULL
 * takes the next argument as the value. */
static const struct ycsb_word {
    const char *word, *prop, *value;
} words[] = {
    {"-load", "dotransactions", "false"},
    {"-t", "dotransactions", "true"},
    {"-run", "dotransactions", "true"},
    {"-s", "status", "true"},
    {"-threads", "threadcount", NULL},
    {"-target", "target", NULL},
    {"-l", "label", NULL},
    {"-db", "db", NULL},
};

static const struct ycsb_word *find_word(const char *w)
{
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcmp(words[i].word, w) == 0)
            return &words[i];
    return NULL;
}

/* Does kvbench's option word take the next argument as its value? */
static bool takes_value(const char *w, const struct option *longopts)
{
    if (strcmp(w, "-P") == 0 || strcmp(w, "-p") == 0)
        return true;
    if (strncmp(w, "--", 2) != 0 || strchr(w, '=') || !w[2])
        return false;
    /* getopt_long takes an exact name or an unambiguous prefix of one. */
    const struct option *hit = NULL;
    size_t n = strlen(w + 2), hits = 0;
    for (const struct option *o = longopts; o->name; o++) {
        if (strcmp(o->name, w + 2) == 0)
            return o->has_arg == required_argument;
        if (strncmp(o->name, w + 2, n) == 0) {
            hit = o;
            hits++;
        }
    }
    return hits == 1 && hit->has_arg == required_argument;
}

static int push(akv_kb_argv *v, char *s, bool owned)
{
    v->argv[v->argc++] = s;
    if (owned)
        v->owned[v->nowned++] = s;
    return 0;
}

/* "-p" "prop=value" for one YCSB word. */
static int push_prop(akv_kb_argv *v, const char *prop, const char *value)
{
    size_t n = strlen(prop) + strlen(value) + 2;
    char *s = malloc(n);
    if (!s) {
        snprintf(v->err, sizeof v->err, "out of memory");
        return -1;
    }
    snprintf(s, n, "%s=%s", prop, value);
    push(v, "-p", false);
    return push(v, s, true);
}

int akv_kb_ycsb_argv(akv_kb_argv *v, int argc, char **argv, const struct option *longopts)
{
    memset(v, 0, sizeof *v);
    /* Each word becomes at most two. */
    v->argv = calloc(2 * (size_t)argc + 1, sizeof *v->argv);
    v->owned = calloc(2 * (size_t)argc + 1, sizeof *v->owned);
    if (!v->argv || !v->owned) {
        snprintf(v->err, sizeof v->err, "out of memory");
        return -1;
    }
    int i = 1;
    push(v, argv[0], false);
    /* bin/ycsb load|run [DB] ...: its command, then the binding's name. */
    if (argc > 1 && (strcmp(argv[1], "load") == 0 || strcmp(argv[1], "run") == 0)) {
        if (push_prop(v, "dotransactions", strcmp(argv[1], "run") == 0 ? "true" : "false"))
            return -1;
        i = 2;
        if (argc > 2 && argv[2][0] != '-') {
            if (push_prop(v, "db", argv[2]))
                return -1;
            i = 3;
        }
    }
    for (; i < argc; i++) {
        const char *w = argv[i];
        const struct ycsb_word *y = find_word(w);
        if (strcmp(w, "--") == 0) {
            while (i < argc)
                push(v, argv[i++], false);
            break;
        }
        if (takes_value(w, longopts)) {
            push(v, argv[i], false);
            if (i + 1 < argc)
                push(v, argv[++i], false);
            continue;
        }
        if (!y) {
            push(v, argv[i], false);
            continue;
        }
        /* A value never starts with '-' (a number of threads, a rate, an
         * engine, a label): "-threads --db D" lacks the number. */
        if (!y->value && (i + 1 == argc || argv[i + 1][0] == '-')) {
            snprintf(v->err, sizeof v->err, "%s needs a value (it sets YCSB's '%s' property)", w, y->prop);
            return -1;
        }
        if (push_prop(v, y->prop, y->value ? y->value : argv[++i]))
            return -1;
    }
    v->argv[v->argc] = NULL;
    return 0;
}

void akv_kb_argv_free(akv_kb_argv *v)
{
    for (int i = 0; i < v->nowned; i++)
        free(v->owned[i]);
    free(v->owned);
    free(v->argv);
    memset(v, 0, sizeof *v);
}

/* ---- what kvbench cannot honour -------------------------------------------- */

/* A YCSB property and the values kvbench honours (compared without case for
 * booleans, as Java's Boolean.valueOf does); anything else is refused with
 * the reason. */
static const struct honoured {
    const char *prop;
    const char *values[3];
    bool nocase;
    const char *why;
} honoured[] = {
    {"workload",
     {"site.ycsb.workloads.CoreWorkload", "com.yahoo.ycsb.workloads.CoreWorkload"},
     false,
     "kvbench generates YCSB's CoreWorkload only"},
    {"exporter",
     {"site.ycsb.measurements.exporter.TextMeasurementsExporter",
      "com.yahoo.ycsb.measurements.exporter.TextMeasurementsExporter"},
     false,
     "kvbench writes YCSB's text format only (--json and --csv write its own)"},
    {"measurementtype",
     {"hdrhistogram"},
     false,
     "kvbench measures one latency histogram per operation and reports it as YCSB's hdrhistogram does"},
    {"measurement.trackjvm", {"false"}, true, "kvbench runs no JVM"},
    {"hdrhistogram.fileoutput", {"false"}, true, "kvbench writes no HdrHistogram log files"},
    {"measurement.histogram.verbose", {"false"}, true, "kvbench exports no histogram buckets"},
    {"reportlatencyforeacherror", {"false"}, true, "kvbench reports no latency per error code"},
    {"latencytrackederrors", {""}, false, "kvbench reports no latency per error code"},
    {"dataintegrity", {"false"}, true, "kvbench does not verify the values it reads"},
};

/* p->err from a format: vsnprintf, so that a long path in the message is
 * cut at the buffer's end like every other kvbench message. */
static int refuse(akv_kb_props *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(akv_kb_props *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    return -1;
}

static bool value_is(const char *v, const char *want, bool nocase)
{
    return nocase ? strcasecmp(v, want) == 0 : strcmp(v, want) == 0;
}

static void where(char *out, size_t cap, const akv_kb_prop *e)
{
    if (strcmp(e->file, "-p") == 0)
        snprintf(out, cap, "the command line");
    else
        snprintf(out, cap, "%s:%d", e->file, e->line);
}

int akv_kb_ycsb_refuse(akv_kb_props *p)
{
    for (size_t i = 0; i < sizeof honoured / sizeof *honoured; i++) {
        const struct honoured *h = &honoured[i];
        const akv_kb_prop *e = akv_kb_props_find(p, h->prop);
        if (!e)
            continue;
        bool ok = false;
        char accepted[256] = "";
        for (int k = 0; k < 3 && h->values[k]; k++) {
            ok = ok || value_is(e->value, h->values[k], h->nocase);
            size_t l = strlen(accepted);
            snprintf(accepted + l, sizeof accepted - l, "%s'%s'", k ? " or " : "", h->values[k]);
        }
        if (ok)
            continue;
        char at[300];
        where(at, sizeof at, e);
        return refuse(p, "%s: %s=%s cannot be honoured: %s (accepted: %s)", at, h->prop, e->value, h->why,
                      accepted);
    }
    return 0;
}
