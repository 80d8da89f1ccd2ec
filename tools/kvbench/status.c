/*
 * status.c — the status lines of YCSB's -s (its StatusThread), on stderr
 * every status.interval seconds and once at the end of a phase:
 *
 *   [LABEL]2026-11-26 18:00:10:213 10 sec: 5000 operations; 500 current ops/sec; est completion in 1 minute
 *
 * so that tools which follow a YCSB run's progress follow kvbench's. YCSB
 * ends each line with a latency summary per operation ("[READ: Count=…]");
 * kvbench leaves it out (its --timeline has latency over time).
 */
#include <math.h>
#include <string.h>
#include <time.h>

#include "tools/kvbench/kvbench.h"

/* Java's DecimalFormat("#.##"): at most two decimals, no trailing zeros. */
static void two_decimals(char *out, size_t cap, double v)
{
    snprintf(out, cap, "%.2f", v);
    char *dot = strchr(out, '.');
    if (!dot)
        return;
    char *end = out + strlen(out);
    while (end > dot + 1 && end[-1] == '0')
        *--end = '\0';
    if (end == dot + 1)
        *dot = '\0';
}

/* YCSB's RemainingFormatter: days, hours, minutes below a day, and seconds
 * only when none of those is printed. */
static void remaining(FILE *out, uint64_t secs)
{
    uint64_t days = secs / 86400, hours = secs % 86400 / 3600, minutes = secs % 3600 / 60;
    if (days)
        fprintf(out, "%llu day%s ", (unsigned long long)days, days == 1 ? "" : "s");
    if (hours)
        fprintf(out, "%llu hour%s ", (unsigned long long)hours, hours == 1 ? "" : "s");
    if (!days && minutes)
        fprintf(out, "%llu minute%s ", (unsigned long long)minutes, minutes == 1 ? "" : "s");
    if (!days && !hours && !minutes)
        fprintf(out, "%llu second%s ", (unsigned long long)secs, secs == 1 ? "" : "s");
}

void akv_kb_status_line(FILE *out, const char *label, double secs, uint64_t ops, uint64_t prev_ops,
                        double interval_secs, uint64_t todo)
{
    struct timespec now;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &now);
    localtime_r(&now.tv_sec, &tm);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(out, "%s%s:%03ld %llu sec: %llu operations; ", label ? label : "", date, now.tv_nsec / 1000000L,
            (unsigned long long)secs, (unsigned long long)ops);
    if (ops) {
        char cur[64];
        if (interval_secs > 0)
            two_decimals(cur, sizeof cur, (double)(ops - prev_ops) / interval_secs);
        else
            snprintf(cur, sizeof cur, "\xe2\x88\x9e"); /* Java prints an infinite rate as U+221E */
        fprintf(out, "%s current ops/sec; ", cur);
        if (todo && secs > 0) {
            fputs("est completion in ", out);
            remaining(out, (uint64_t)ceil((double)todo * secs / (double)ops));
        }
    }
    fputc('\n', out);
    fflush(out);
}
