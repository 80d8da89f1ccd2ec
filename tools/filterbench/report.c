/* report.c — filterbench output: one JSON object, or a readable table. */
#include <math.h>

#include "tools/filterbench/bench.h"

static void num(FILE *o, const char *name, double v)
{
    if (isfinite(v))
        fprintf(o, ",\"%s\":%.6g", name, v);
    else
        fprintf(o, ",\"%s\":null", name);
}

/* "baseline":{...} plus the ratios against it. */
static void baseline_json(const fb_config *c, const fb_result *r, FILE *o)
{
    fprintf(o, ",\"rounds\":%llu,\"baseline\":{\"filter\":\"%s\",\"memory_bytes\":%llu",
            (unsigned long long)r->rounds, c->baseline, (unsigned long long)r->base.memory_bytes);
    num(o, "bits_per_key", r->base.bits_per_key);
    fprintf(o, ",\"false_negatives\":%llu", (unsigned long long)r->base.false_negatives);
    num(o, "fpr", r->base.fpr);
    num(o, "fpr_theory", r->base.fpr_theory);
    num(o, "query_ns", r->base.query_ns);
    num(o, "batch_query_ns", r->base.batch_query_ns);
    if (isfinite(r->base.words_per_query))
        num(o, "word_reads_per_query", r->base.words_per_query);
    fprintf(o, "}");
    num(o, "query_speedup", r->query_speedup);
    num(o, "batch_query_speedup", r->batch_speedup);
    if (isfinite(r->words_per_query) && isfinite(r->base.words_per_query))
        num(o, "word_reads_ratio", r->words_per_query / r->base.words_per_query);
}

void fb_print_json(const fb_config *c, const fb_result *r, FILE *o)
{
    fprintf(o, "{\"filter\":\"%s\",\"keys\":%llu,\"queries\":%llu", c->filter, (unsigned long long)r->keys,
            (unsigned long long)r->queries);
    if (c->dataset)
        fprintf(o, ",\"dataset\":\"%s\"", c->dataset);
    fprintf(o, ",\"seed\":%llu,\"memory_bytes\":%llu", (unsigned long long)c->seed,
            (unsigned long long)r->memory_bytes);
    num(o, "bits_per_key", r->bits_per_key);
    fprintf(o, ",\"false_negatives\":%llu", (unsigned long long)r->false_negatives);
    num(o, "fpr", r->fpr);
    num(o, "fpr_theory", r->fpr_theory);
    fprintf(o, ",\"clock\":\"%s\"", c->cpu_time ? "cpu" : "wall");
    num(o, "insert_ns", r->insert_ns);
    num(o, "add_ns", r->add_ns);
    num(o, "build_ns", r->build_ns);
    num(o, "query_ns", r->query_ns);
    num(o, "batch_query_ns", r->batch_query_ns);
    num(o, "member_query_ns", r->member_query_ns);
    if (isfinite(r->words_per_query))
        num(o, "word_reads_per_query", r->words_per_query);
    if (c->adapt) {
        num(o, "fpr_before", r->fpr_before);
        num(o, "fpr_during", r->fpr_during);
        num(o, "fpr_after", r->fpr_after);
        num(o, "extra_bits_per_key", r->extra_bits_per_key);
        num(o, "adapt_query_ns", r->adapt_query_ns);
        fprintf(o, ",\"adaptations\":%llu,\"adapt_errors\":%llu", (unsigned long long)r->adaptations,
                (unsigned long long)r->adapt_errors);
    }
    if (r->negatives) {
        fprintf(o, ",\"negatives\":%llu", (unsigned long long)r->negatives);
        num(o, "weighted_fpr", r->weighted_fpr);
        num(o, "negative_fpr", r->neg_fpr);
    }
    if (c->churn) {
        fprintf(o, ",\"churn_rounds\":%llu", (unsigned long long)r->churn_rounds);
        num(o, "churn_fpr", r->churn_fpr);
    }
    if (r->describe[0])
        fprintf(o, ",\"params\":{%s}", r->describe);
    if (c->baseline_kind)
        baseline_json(c, r, o);
    fprintf(o, "}\n");
}

void fb_print_table(const fb_config *c, const fb_result *r, FILE *o)
{
    fprintf(o, "%-22s %s\n", "filter", c->filter);
    fprintf(o, "%-22s %llu\n", "keys", (unsigned long long)r->keys);
    fprintf(o, "%-22s %.3f\n", "bits/key (measured)", r->bits_per_key);
    fprintf(o, "%-22s %llu\n", "false negatives", (unsigned long long)r->false_negatives);
    fprintf(o, "%-22s %.6f\n", "FPR", r->fpr);
    if (isfinite(r->fpr_theory))
        fprintf(o, "%-22s %.6f (measured/theory %.3f)\n", "FPR theory", r->fpr_theory,
                r->fpr / r->fpr_theory);
    fprintf(o, "%-22s %.1f\n", "insert ns", r->insert_ns);
    fprintf(o, "%-22s %.1f\n", "query ns", r->query_ns);
    fprintf(o, "%-22s %.1f\n", "query ns (batched)", r->batch_query_ns);
    fprintf(o, "%-22s %.1f\n", "member query ns", r->member_query_ns);
    if (isfinite(r->words_per_query))
        fprintf(o, "%-22s %.3f\n", "words/query", r->words_per_query);
    if (c->adapt) {
        fprintf(o, "%-22s before %.6f  during %.6f  after %.6f  (%llu adaptations, %.5f extra bits/key)\n",
                "adaptivity", r->fpr_before, r->fpr_during, r->fpr_after, (unsigned long long)r->adaptations,
                r->extra_bits_per_key);
        fprintf(o, "%-22s %.1f\n", "adapting query ns", r->adapt_query_ns);
    }
    if (r->negatives)
        fprintf(o, "%-22s %.6f over %llu negatives (unweighted %.6f)\n", "weighted FPR", r->weighted_fpr,
                (unsigned long long)r->negatives, r->neg_fpr);
    if (c->churn)
        fprintf(o, "%-22s %llu rounds, mean FPR %.6f\n", "churn", (unsigned long long)r->churn_rounds,
                r->churn_fpr);
    if (!c->baseline_kind)
        return;
    fprintf(o, "\nbaseline %s, same keys and queries, %llu alternating rounds (ns are medians)\n",
            c->baseline, (unsigned long long)r->rounds);
    fprintf(o, "%-22s %.3f\n", "bits/key (measured)", r->base.bits_per_key);
    fprintf(o, "%-22s %llu\n", "false negatives", (unsigned long long)r->base.false_negatives);
    fprintf(o, "%-22s %.6f\n", "FPR", r->base.fpr);
    fprintf(o, "%-22s %.1f (%s is %.2fx as fast)\n", "query ns", r->base.query_ns, c->filter,
            r->query_speedup);
    fprintf(o, "%-22s %.1f (%.2fx)\n", "query ns (batched)", r->base.batch_query_ns, r->batch_speedup);
    if (isfinite(r->words_per_query) && isfinite(r->base.words_per_query))
        fprintf(o, "%-22s %.3f (%s reads %.3fx as many)\n", "words/query", r->base.words_per_query, c->filter,
                r->words_per_query / r->base.words_per_query);
}
