/*
 * clientopts.c — the properties of YCSB's client (Client, ClientThread,
 * Measurements, the insertion retries of CoreWorkload) that kvbench honours:
 * threadcount, target, exportfile, measurement.interval,
 * hdrhistogram.percentiles, the insertion retry / keep-going settings, and
 * what bin/ycsb's words set (ycsbcli.c): dotransactions, status,
 * status.interval, label and db. They apply to generated workloads and to
 * trace replays alike.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

static const char *const intervals[] = {"op", "intended", "both", NULL}; /* AKV_KB_MEASURE_* order */

/* OneMeasurementHdrHistogram reads a comma-separated list of numbers
 * (Double.parseDouble, which ignores surrounding blanks). */
static int load_percentiles(akv_kb_clientopts *o, akv_kb_props *p)
{
    const char *s;
    akv_kb_props_str(p, "hdrhistogram.percentiles", "50,95,99", &s);
    const akv_kb_prop *e = akv_kb_props_find(p, "hdrhistogram.percentiles");
    const char *where = e ? e->file : "default";
    o->npcts = 0;
    while (*s) {
        char *end;
        double v = strtod(s, &end);
        while (*end == ' ' || *end == '\t')
            end++;
        if (end == s || (*end && *end != ',') || !(v >= 0 && v <= 100)) {
            snprintf(p->err, sizeof p->err,
                     "%s: hdrhistogram.percentiles: '%s' is not a list of numbers in [0, 100]", where,
                     e ? e->value : s);
            return -1;
        }
        if (o->npcts == AKV_KB_MAX_PCTS) {
            snprintf(p->err, sizeof p->err, "%s: hdrhistogram.percentiles: more than %d values", where,
                     AKV_KB_MAX_PCTS);
            return -1;
        }
        o->pcts[o->npcts++] = v;
        s = *end ? end + 1 : end;
    }
    return 0;
}

/* What YCSB's -load / -t, -s, -l and -db set. */
static int load_ycsb_words(akv_kb_clientopts *o, akv_kb_props *p)
{
    bool dotx = true;
    o->dotransactions = -1;
    if (akv_kb_props_find(p, "dotransactions")) {
        if (akv_kb_props_bool(p, "dotransactions", true, &dotx))
            return -1;
        o->dotransactions = dotx;
    }
    if (akv_kb_props_bool(p, "status", false, &o->status) ||
        akv_kb_props_u64(p, "status.interval", 10, &o->status_interval) ||
        akv_kb_props_str(p, "label", "", &o->label) || akv_kb_props_str(p, "db", NULL, &o->db))
        return -1;
    if (o->status_interval == 0 || o->status_interval > 86400) {
        snprintf(p->err, sizeof p->err, "status.interval: %llu is not a number of seconds in [1, 86400]",
                 (unsigned long long)o->status_interval);
        return -1;
    }
    return 0;
}

const char *akv_kb_clientopts_phase(const akv_kb_clientopts *o)
{
    return o->dotransactions < 0 ? NULL : o->dotransactions ? "run" : "load";
}

int akv_kb_clientopts_load(akv_kb_clientopts *o, akv_kb_props *p)
{
    memset(o, 0, sizeof *o);
    uint64_t target;
    if (akv_kb_props_u64(p, "threadcount", 0, &o->threadcount) || akv_kb_props_u64(p, "target", 0, &target) ||
        akv_kb_props_str(p, "exportfile", NULL, &o->exportfile) ||
        akv_kb_props_choice(p, "measurement.interval", "op", intervals, &o->interval) ||
        akv_kb_props_bool(p, "core_workload_insertion_keep_going_on_error", false, &o->keep_going) ||
        akv_kb_props_u64(p, "core_workload_insertion_retry_limit", 0, &o->retry_limit) ||
        akv_kb_props_u64(p, "core_workload_insertion_retry_interval", 3, &o->retry_interval) ||
        load_percentiles(o, p) || load_ycsb_words(o, p))
        return -1;
    if (o->threadcount > 256) {
        snprintf(p->err, sizeof p->err, "threadcount: %llu is above kvbench's limit of 256",
                 (unsigned long long)o->threadcount);
        return -1;
    }
    o->target = (double)target;
    return 0;
}

/* Java's Double.toString for 0 < v < 100: the shortest decimal that reads
 * back as v, in plain notation from 10^-3 on, as d.dddE-n below. */
static void java_double(char *out, size_t cap, double v)
{
    char buf[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    char *e = strchr(buf, 'e');
    int exp10 = atoi(e + 1), decimals = prec - 1 - exp10;
    if (v >= 1e-3) {
        snprintf(out, cap, "%.*f", decimals > 1 ? decimals : 1, v);
        return;
    }
    *e = 0;
    snprintf(out, cap, "%s%sE%d", buf, strchr(buf, '.') ? "" : ".0", exp10);
}

/* OneMeasurementHdrHistogram.ordinal: 50 -> "50th", 1 -> "1st", 99.9 -> "99.9". */
void akv_kb_pct_name(char *out, size_t cap, double pct)
{
    if (pct != floor(pct)) {
        java_double(out, cap, pct);
        return;
    }
    static const char *const suffix[] = {"th", "st", "nd", "rd", "th", "th", "th", "th", "th", "th"};
    int j = (int)pct;
    snprintf(out, cap, "%d%s", j, j % 100 >= 11 && j % 100 <= 13 ? "th" : suffix[j % 10]);
}
