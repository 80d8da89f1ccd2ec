/*
 * histogram.c — latency histogram with log-linear buckets (as HdrHistogram):
 * values below 64 ns have their own bucket; above, each power of two is cut
 * into 32 equal sub-buckets. Recording is an index computation and one
 * increment; the relative error of any percentile is at most 1/32.
 */
#include <string.h>

#include "tools/kvbench/kvbench.h"

void akv_kb_hist_reset(akv_kb_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min_ns = UINT64_MAX;
}

size_t akv_kb_hist_index(uint64_t ns)
{
    int msb = ns ? 63 - __builtin_clzll(ns) : 0;
    int shift = msb > 5 ? msb - 5 : 0;
    size_t idx = (size_t)AKV_KB_HIST_SUB * (size_t)shift + (size_t)(ns >> shift);
    return idx < AKV_KB_HIST_BUCKETS ? idx : AKV_KB_HIST_BUCKETS - 1;
}

/* Smallest value that falls in bucket idx. */
uint64_t akv_kb_hist_lower(size_t idx)
{
    if (idx < 2 * AKV_KB_HIST_SUB)
        return idx;
    unsigned shift = (unsigned)(idx / AKV_KB_HIST_SUB) - 1;
    return (uint64_t)(idx - AKV_KB_HIST_SUB * shift) << shift;
}

void akv_kb_hist_add(akv_kb_hist *h, uint64_t ns)
{
    h->b[akv_kb_hist_index(ns)]++;
    h->count++;
    h->sum_ns += ns;
    if (ns < h->min_ns)
        h->min_ns = ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
}

void akv_kb_hist_merge(akv_kb_hist *into, const akv_kb_hist *h)
{
    for (size_t i = 0; i < AKV_KB_HIST_BUCKETS; i++)
        into->b[i] += h->b[i];
    into->count += h->count;
    into->sum_ns += h->sum_ns;
    if (h->min_ns < into->min_ns)
        into->min_ns = h->min_ns;
    if (h->max_ns > into->max_ns)
        into->max_ns = h->max_ns;
}

/* The value at or below which pct% of the samples lie: the middle of the
 * bucket holding that rank, clamped to the exact min and max. */
uint64_t akv_kb_hist_pct(const akv_kb_hist *h, double pct)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(pct / 100.0 * (double)h->count + 0.999999);
    if (rank < 1)
        rank = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < AKV_KB_HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen < rank)
            continue;
        uint64_t lo = akv_kb_hist_lower(i);
        uint64_t hi = i + 1 < AKV_KB_HIST_BUCKETS ? akv_kb_hist_lower(i + 1) - 1 : h->max_ns;
        uint64_t mid = lo + (hi - lo) / 2;
        return mid < h->min_ns ? h->min_ns : mid > h->max_ns ? h->max_ns : mid;
    }
    return h->max_ns;
}
