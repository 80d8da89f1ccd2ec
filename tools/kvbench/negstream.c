/*
 * negstream.c — what any adaptive filter could save on a workload's stream
 * of negative keys (kvbench --negative-stream N).
 *
 * An adaptive filter fixes a false positive once it has happened: a key's
 * first false positive on a filter is paid whatever the filter does, unless
 * the filter was told about that key before (pre-adaptation from the miss
 * log). This draws the workload's own negative keys (the generator and seed
 * of kvbench's first client) and prints, per sixth of the stream:
 *   - the share of draws whose key comes for the first time: the floor of
 *     a perfect learner's wasted probes on a filter that lives the whole
 *     stream, relative to a static filter of the same false-positive rate;
 *   - the share whose key was not drawn within the last tenth of the
 *     stream: the same floor for a filter that lives a tenth (an L0 slot);
 *   - of those, the share left after pre-adapting to the M most frequent
 *     keys of the whole stream (an oracle miss log of M entries), for a few
 *     M: the floor for such a short-lived slot with a miss log that size.
 * And how much of the stream the M most frequent keys carry.
 * docs/benchmarks.md, "What bounds workloadn's wasted probes".
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "tools/kvbench/kvbench.h"

#define PARTS   6
#define N_COVER 4
/* Key spaces past this are refused: 16 bytes of state per key. */
#define MAX_KEYS (1ull << 30)

static const uint32_t cover[N_COVER] = {4096, 16384, 65536, 262144};

typedef struct tally {
    uint64_t first[PARTS], unseen[PARTS], missed[N_COVER][PARTS], distinct;
} tally;

typedef struct kc {
    uint32_t count, key;
} kc;

static int by_count_desc(const void *a, const void *b)
{
    uint32_t x = ((const kc *)a)->count, y = ((const kc *)b)->count;
    return (x < y) - (x > y);
}

/* One pass over the stream. Counting (count given): each key's draws, and
 * nothing else. Tallying (rank given, 0 = most frequent): the shares. */
static void draw(const akv_kb_workload *w, uint64_t draws, uint64_t seed, int64_t *last, uint32_t *count,
                 const uint32_t *rank, tally *t)
{
    akv_kb_shared sh = {0};
    akv_kb_client c;
    akv_kb_client_init(&c, w, &sh, seed, 0);
    if (count) {
        for (uint64_t i = 0; i < draws; i++) {
            uint64_t k = akv_kb_gen_next(&c.neg, &c.rng, 0);
            if (count[k] < UINT32_MAX)
                count[k]++;
        }
        return;
    }
    for (uint64_t k = 0; k < w->negative_keys; k++)
        last[k] = -1;
    uint64_t part = draws / PARTS, tenth = draws / 10;
    for (uint64_t i = 0; i < draws; i++) {
        uint64_t k = akv_kb_gen_next(&c.neg, &c.rng, 0);
        unsigned p = i / part < PARTS ? (unsigned)(i / part) : PARTS - 1;
        bool fresh = last[k] < 0 || i - (uint64_t)last[k] > tenth;
        if (last[k] < 0) {
            t->first[p]++;
            t->distinct++;
        }
        t->unseen[p] += fresh;
        for (int m = 0; fresh && m < N_COVER; m++)
            t->missed[m][p] += rank[k] >= cover[m];
        last[k] = (int64_t)i;
    }
}

int akv_kb_negative_stream(const akv_kb_workload *w, uint64_t draws, uint64_t seed, FILE *out)
{
    uint64_t keys = w->negative_keys;
    if (keys == 0 || keys > MAX_KEYS) {
        fprintf(stderr, "kvbench: --negative-stream: negativekeycount must be in [1, %llu]\n",
                (unsigned long long)MAX_KEYS);
        return 2;
    }
    if (draws < 10) {
        fprintf(stderr, "kvbench: --negative-stream: draw at least 10 keys\n");
        return 2;
    }
    int64_t *last = malloc(keys * sizeof *last);
    uint32_t *count = calloc(keys, sizeof *count), *rank = malloc(keys * sizeof *rank);
    kc *order = malloc(keys * sizeof *order);
    tally *t = calloc(1, sizeof *t);
    if (!last || !count || !rank || !order || !t) {
        free(last);
        free(count);
        free(rank);
        free(order);
        free(t);
        fprintf(stderr, "kvbench: --negative-stream: out of memory for %llu keys\n", (unsigned long long)keys);
        return 1;
    }
    /* First pass: the counts; the same draws again, with each key's rank. */
    draw(w, draws, seed, last, count, NULL, t);
    for (uint64_t k = 0; k < keys; k++)
        order[k] = (kc){count[k], (uint32_t)k};
    qsort(order, keys, sizeof *order, by_count_desc);
    for (uint64_t r = 0; r < keys; r++)
        rank[order[r].key] = (uint32_t)r;
    draw(w, draws, seed, last, NULL, rank, t);

    fprintf(out, "negative stream: %llu draws over %llu keys (%s), %llu distinct\n", (unsigned long long)draws,
            (unsigned long long)keys, w->negdist == AKV_KB_ZIPFIAN ? "zipfian" : "uniform",
            (unsigned long long)t->distinct);
    fprintf(out, "%-6s %10s %12s", "sixth", "first-ever", "unseen-10%");
    for (int m = 0; m < N_COVER; m++)
        fprintf(out, " %9s%-6u", "not-top-", cover[m]);
    fputc('\n', out);
    uint64_t part = draws / PARTS;
    for (unsigned p = 0; p < PARTS; p++) {
        double n = (double)(p == PARTS - 1 ? draws - part * (PARTS - 1) : part);
        fprintf(out, "%-6u %10.3f %12.3f", p + 1, (double)t->first[p] / n, (double)t->unseen[p] / n);
        for (int m = 0; m < N_COVER; m++)
            fprintf(out, " %15.3f", (double)t->missed[m][p] / n);
        fputc('\n', out);
    }
    uint64_t sum = 0;
    for (uint64_t r = 0, m = 0; r < keys && m < N_COVER; r++) {
        sum += order[r].count;
        if (r + 1 == cover[m])
            fprintf(out, "the %u most frequent keys: %.3f of the draws\n", cover[m++], (double)sum / (double)draws);
    }
    free(last);
    free(count);
    free(rank);
    free(order);
    free(t);
    return 0;
}
