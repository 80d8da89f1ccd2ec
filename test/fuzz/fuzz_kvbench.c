/*
 * fuzz_kvbench.c — kvbench's parsers of what users hand it: YCSB property
 * files (props.c), traces of YCSB's basic binding (trace.c) and field-length
 * histograms (lenhist.c), compiled in from tools/kvbench.
 *
 * Input: one mode byte (modulo 3), then the file's bytes.
 *   0  properties: akv_kb_props_parse, then (the first 32) parsed names through the
 *      typed getters (string, integer, number, boolean, choice), the
 *      unknown-name warning, and akv_kb_workload_load (what kvbench makes of
 *      the properties; skipped when they name a histogram file, which it
 *      would open)
 *   1  trace: line by line as akv_kb_trace_load feeds them (a NUL ends the
 *      input there), then akv_kb_trace_end; every operation holds a key of
 *      at most 64 KiB and a known operation code
 *   2  histogram: akv_kb_lenhist_parse; an accepted histogram has a
 *      positive block size and area, and draws stay within its maximum
 */
#include <string.h>

#include "test/fuzz/fuzz.h"
#include "tools/kvbench/generators.c"
#include "tools/kvbench/rng.c"
#include "tools/kvbench/lenhist.c"
#include "tools/kvbench/props.c"
#include "tools/kvbench/trace.c"
#include "tools/kvbench/workload.c"

static void kvbench_props(const char *s, size_t n)
{
    akv_kb_props p = {0};
    if (akv_kb_props_parse(&p, "fuzz", s, n) != 0) {
        FUZZ_CHECK(p.err[0] != 0, "props: failed without a message");
    } else {
        static const char *const choices[] = {"uniform", "zipfian", "latest", NULL};
        /* Each getter searches all names: the first 32 keep this linear. */
        for (size_t i = 0; i < p.n && i < 32; i++) {
            FUZZ_CHECK(p.v[i].name[0] != 0, "props: empty name accepted");
            const char *name = p.v[i].name, *str;
            uint64_t u;
            double d;
            bool b;
            int c;
            FUZZ_CHECK(akv_kb_props_find(&p, name) != NULL, "props: parsed name not found");
            (void)akv_kb_props_str(&p, name, "", &str);
            (void)akv_kb_props_u64(&p, name, 0, &u);
            (void)akv_kb_props_f64(&p, name, 0, -1e300, 1e300, &d);
            (void)akv_kb_props_bool(&p, name, false, &b);
            (void)akv_kb_props_choice(&p, name, "uniform", choices, &c);
        }
        static FILE *null;
        if (!null)
            null = fopen("/dev/null", "w");
        if (null)
            akv_kb_props_warn_unknown(&p, null);
        const akv_kb_prop *fl = akv_kb_props_find(&p, "fieldlengthdistribution");
        akv_kb_workload w;
        if (!(fl && strcmp(fl->value, "histogram") == 0) && akv_kb_workload_load(&w, &p) == 0)
            akv_kb_workload_free(&w);
    }
    akv_kb_props_free(&p);
}

static void kvbench_trace(const char *s, size_t n)
{
    akv_kb_trace t = {0};
    const char *nul = memchr(s, 0, n);
    if (nul)
        n = (size_t)(nul - s);
    int rc = 0, line = 0;
    for (size_t pos = 0; rc == 0 && pos < n;) {
        const char *nl = memchr(s + pos, '\n', n - pos);
        size_t end = nl ? (size_t)(nl - s) : n;
        rc = akv_kb_trace_parse_line(&t, "fuzz", ++line, s + pos, end - pos);
        pos = end + 1;
    }
    if (rc == 0)
        rc = akv_kb_trace_end(&t, "fuzz");
    if (rc != 0)
        FUZZ_CHECK(t.err[0] != 0, "trace: failed without a message");
    for (size_t i = 0; i < t.n; i++) {
        FUZZ_CHECK(t.ops[i].key != NULL && t.ops[i].klen <= 65536, "trace: op %zu key", i);
        FUZZ_CHECK(t.ops[i].op == AKV_KB_READ || t.ops[i].op == AKV_KB_UPDATE ||
                       t.ops[i].op == AKV_KB_INSERT || t.ops[i].op == AKV_KB_SCAN ||
                       t.ops[i].op == AKV_KB_DELETE,
                   "trace: op %zu code %u", i, t.ops[i].op);
    }
    akv_kb_trace_free(&t);
}

static void kvbench_lenhist(const char *s, size_t n)
{
    akv_kb_lenhist h;
    char err[AKV_KB_ERRLEN] = "";
    if (akv_kb_lenhist_parse(&h, "fuzz", s, n, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != 0, "lenhist: failed without a message");
        return;
    }
    FUZZ_CHECK(h.block >= 1 && h.area > 0 && h.n >= 1, "lenhist: accepted an empty histogram");
    akv_kb_rng r;
    akv_kb_rng_seed(&r, n);
    uint64_t max = akv_kb_lenhist_max(&h);
    for (int i = 0; i < 16; i++) {
        uint64_t v = akv_kb_lenhist_next(&h, &r);
        FUZZ_CHECK(v <= max, "lenhist: draw %llu above the maximum %llu", (unsigned long long)v,
                   (unsigned long long)max);
    }
    akv_kb_lenhist_free(&h);
}

int fuzz_kvbench(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] % 3;
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    if (mode == 0)
        kvbench_props(s, n);
    else if (mode == 1)
        kvbench_trace(s, n);
    else
        kvbench_lenhist(s, n);
    return 0;
}

AKV_FUZZ_ENTRY(fuzz_kvbench)
