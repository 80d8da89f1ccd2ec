/* bench.h — filterbench's configuration, results and measurement passes. */
#ifndef AKV_FILTERBENCH_H
#define AKV_FILTERBENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "adaptkv/filter.h"

typedef struct fb_dist {
    bool zipf;
    double s;
} fb_dist;

typedef struct fb_config {
    const char *filter;
    const akv_filter_kind *kind;
    akv_filter_params params;
    uint64_t keys, queries, universe, seed, negatives, churn;
    fb_dist qdist, costs;
    const char *dataset;
    const char *baseline; /* --baseline: a second kind timed side by side */
    const akv_filter_kind *baseline_kind;
    uint64_t rounds; /* alternating timing rounds with --baseline */
    bool adapt, json;
    bool cpu_time;    /* --cpu-time: ns are process CPU time, not wall time */
    bool sscf_static; /* --static: the paper's plain SSCF (wide layout, no absorb) */
    bool sscf_wide;   /* --wide: ada-SSCF in the paper's wide layout */
} fb_config;

typedef struct fb_result {
    char error[256];
    uint64_t keys, memory_bytes, false_negatives, queries;
    /* insert_ns: one akv_filter_insert into a finished, empty filter sized
     * for the keys (kinds with insert; else the add() path); add_ns: the
     * add() of a build, before finish; build_ns: create + adds + finish */
    double bits_per_key, fpr, fpr_theory, insert_ns, add_ns, build_ns, query_ns, batch_query_ns,
        words_per_query;
    /* member_query_ns: one query of each member key, in insertion order
     * (the no-false-negative check, timed); query_ns is for absent keys */
    double member_query_ns;
    /* --adapt; adapt_query_ns: the replay, a query each plus an adapt on
     * every false positive */
    double fpr_before, fpr_during, fpr_after, extra_bits_per_key, adapt_query_ns;
    uint64_t adaptations, adapt_errors;
    /* --negatives */
    uint64_t negatives;
    double weighted_fpr, neg_fpr;
    /* --churn */
    uint64_t churn_rounds;
    double churn_fpr;
    char describe[512];
    /* --baseline: the second filter over the same keys and query stream;
     * ns are medians over the rounds, speed-ups medians of per-round ratios
     * (baseline ns / this filter's ns). */
    struct {
        uint64_t memory_bytes, false_negatives;
        double bits_per_key, fpr, fpr_theory, query_ns, batch_query_ns, words_per_query;
    } base;
    uint64_t rounds;
    double query_speedup, batch_speedup;
} fb_result;

/* Zipfian sampler over ranks 0..n-1 (rank 0 most frequent). */
typedef struct fb_zipf fb_zipf;
fb_zipf *fb_zipf_create(uint64_t n, double s);
uint64_t fb_zipf_sample(const fb_zipf *z, uint64_t *rng);
double fb_zipf_weight(const fb_zipf *z, uint64_t rank); /* probability of rank */
void fb_zipf_destroy(fb_zipf *z);

uint64_t fb_rand(uint64_t *state);

int fb_run(const fb_config *c, fb_result *r);
void fb_print_json(const fb_config *c, const fb_result *r, FILE *out);
void fb_print_table(const fb_config *c, const fb_result *r, FILE *out);

#endif
