/*
 * report.c — results as YCSB-style text (so existing YCSB parsers read it:
 * "[SECTION], metric, number" lines, and '#' lines for what is not a
 * number), one JSON object, or a CSV row. Every format carries the same
 * numbers.
 */
#include <string.h>

#include "tools/kvbench/kvbench.h"

static double per(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}
static double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static double throughput(const akv_kb_result *r)
{
    return r->seconds > 0 ? (double)r->ops / r->seconds : 0;
}

/* The filter memory per key an engine is held to: adaptkv its bits_per_key
 * (with --equal-filter-memory, RocksDB's figure below); RocksDB its bits per
 * key plus its memtable Bloom filter (one live memtable) spread over the
 * records. 0 when unknown. */
static double budget_bits(const akv_kb_result *r)
{
    const akv_kb_cfg *c = r->cfg;
    if (!c || !r->engine)
        return 0;
    if (strcmp(r->engine, "rocksdb") == 0)
        return c->bits_per_key +
               (r->records ? c->memtable_bloom_ratio * (double)c->memtable_bytes * 8 / (double)r->records
                           : 0);
    return c->bits_per_key;
}

/* Filter memory over that budget, at the end and averaged over the run (0
 * unknown), and whether both are within 5 %. */
typedef struct mem_ratio {
    double budget, end, mean;
    bool within;
} mem_ratio;

static mem_ratio memory_ratio(const akv_kb_result *r)
{
    mem_ratio m = {budget_bits(r), 0, 0, false};
    if (m.budget > 0) {
        m.end = r->es.filter_bits_per_key / m.budget;
        m.mean = r->filter_bits_mean / m.budget;
        m.within = m.end >= 0.95 && m.end <= 1.05 && (m.mean == 0 || (m.mean >= 0.95 && m.mean <= 1.05));
    }
    return m;
}

static const char *const ret_names[AKV_KB_NRET] = {"OK", "NOT_FOUND", "ERROR"};

/* One measurement as YCSB's OneMeasurementHdrHistogram exports it. */
static void measurement(const akv_kb_result *r, const char *name, const akv_kb_hist *h, const uint64_t *ret,
                        FILE *out)
{
    static const double defaults[] = {50, 95, 99};
    const double *pcts = r->opts ? r->opts->pcts : defaults;
    size_t npcts = r->opts ? r->opts->npcts : 3;
    fprintf(out, "[%s], Operations, %llu\n", name, (unsigned long long)h->count);
    fprintf(out, "[%s], AverageLatency(us), %.2f\n", name, us(h->sum_ns) / (double)h->count);
    fprintf(out, "[%s], MinLatency(us), %.2f\n", name, us(h->min_ns));
    fprintf(out, "[%s], MaxLatency(us), %.2f\n", name, us(h->max_ns));
    for (size_t i = 0; i < npcts; i++) {
        char pn[48];
        akv_kb_pct_name(pn, sizeof pn, pcts[i]);
        fprintf(out, "[%s], %sPercentileLatency(us), %.2f\n", name, pn, us(akv_kb_hist_pct(h, pcts[i])));
    }
    for (int k = 0; ret && k < AKV_KB_NRET; k++)
        if (ret[k])
            fprintf(out, "[%s], Return=%s, %llu\n", name, ret_names[k], (unsigned long long)ret[k]);
}

/* Which state of the tree a run phase measured (the JSON's "state"). */
static const char *state_name(const akv_kb_result *r)
{
    if (strcmp(r->phase, "run"))
        return "load";
    return !r->settle.requested ? "as found" : r->settle.settled ? "steady" : "not settled";
}

/* What is not a number goes on lines of its own that start with '#', so that
 * a YCSB report parser, which reads "[SECTION], metric, number" lines and
 * skips the rest (YCSB's own report.py matches each line against that
 * pattern), reads every other line as a number. */
static void facts(const akv_kb_result *r, FILE *out)
{
    fprintf(out, "# Engine: %s\n", r->label ? r->label : "");
    if (r->workload)
        fprintf(out, "# Workload: %s\n", r->workload);
    if (r->phase)
        fprintf(out, "# Phase: %s\n", r->phase);
}

/* The process's CPU time that no client thread spent: the engine's
 * background work (flushes, compactions, filter builds) and kvbench's own
 * sampler, which wakes once per --interval. */
static double background_cpu(const akv_kb_result *r)
{
    double b = r->cpu_seconds - r->client_cpu_seconds;
    return b > 0 ? b : 0;
}

void akv_kb_report_text(const akv_kb_result *r, FILE *out)
{
    facts(r, out);
    fprintf(out, "[OVERALL], RunTime(ms), %.0f\n", r->seconds * 1000);
    fprintf(out, "[OVERALL], Throughput(ops/sec), %.1f\n", throughput(r));
    fprintf(out, "[CPU], Seconds, %.2f\n[CPU], ClientSeconds, %.2f\n[CPU], BackgroundSeconds, %.2f\n",
            r->cpu_seconds, r->client_cpu_seconds, background_cpu(r));
    if (r->ops)
        fprintf(out, "[CPU], PerOp(us), %.2f\n", r->cpu_seconds * 1e6 / (double)r->ops);
    if (r->io_known)
        fprintf(out, "[IO], DeviceReadMB, %.1f\n[IO], DeviceWriteMB, %.1f\n",
                (double)r->io_read_bytes / 1048576.0, (double)r->io_write_bytes / 1048576.0);
    if (strcmp(r->phase, "run") == 0) {
        fprintf(out, "# State: %s\n", state_name(r));
        if (r->settle.requested)
            fprintf(out, "[STATE], SettleSeconds, %.1f\n", r->settle.seconds);
        fprintf(out, "[STATE], L0FilesAtStart, %llu\n[STATE], PendingCompactionMBAtStart, %.1f\n",
                (unsigned long long)r->start_l0_files, (double)r->start_pending_bytes / 1048576.0);
    }
    bool both = r->opts && r->opts->interval == AKV_KB_MEASURE_BOTH;
    for (int i = 0; i < AKV_KB_NOPS; i++) {
        if (!r->hist[i].count)
            continue;
        /* Read-modify-writes report no status of their own (their read and
         * update do), as in YCSB. */
        measurement(r, akv_kb_op_names[i], &r->hist[i], i == AKV_KB_RMW ? NULL : r->ret[i], out);
    }
    for (int i = 0; both && i < AKV_KB_NOPS; i++) {
        char name[48];
        snprintf(name, sizeof name, "Intended-%s", akv_kb_op_names[i]);
        if (r->ihist[i].count)
            measurement(r, name, &r->ihist[i], NULL, out);
    }
    fprintf(out, "[NEGATIVE], Lookups, %llu\n", (unsigned long long)r->negative_lookups);
    fprintf(out, "[NEGATIVE], WastedProbesPerLookup, %.4f\n", per(r->negative_wasted, r->negative_lookups));
    fprintf(out, "[NEGATIVE], MemtableWastedProbesPerLookup, %.4f\n",
            per(r->negative_mem_wasted, r->negative_lookups));
    fprintf(out, "[NEGATIVE], FiltersPerLookup, %.4f\n", per(r->negative_filters, r->negative_lookups));
    if (r->adversary_reads)
        fprintf(out, "[ADVERSARY], Reads, %llu\n[ADVERSARY], WastedProbesPerRead, %.4f\n",
                (unsigned long long)r->adversary_reads, per(r->adversary_wasted, r->adversary_reads));
    if (r->recon_lookups)
        fprintf(out, "[ADVERSARY], ReconLookups, %llu\n[ADVERSARY], PoolAfterRecon, %llu\n",
                (unsigned long long)r->recon_lookups, (unsigned long long)r->recon_pool);
    fprintf(out, "[IO], BlockReadsPerOp, %.4f\n", per(r->block_reads, r->ops));
    if (r->first_pass)
        fprintf(out, "[FIRST PASS], WastedProbesPerNegative, %.4f\n",
                per(r->first_negative_wasted, r->first_negative_lookups));
    fprintf(out, "[FILTER], BitsPerKey, %.2f\n", r->es.filter_bits_per_key);
    if (r->filter_bits_mean > 0)
        fprintf(out, "[FILTER], BitsPerKeyMean, %.2f\n", r->filter_bits_mean);
    fprintf(out, "[FILTER], SstBitsPerKey, %.2f\n", r->es.sst_filter_bits_per_key);
    mem_ratio m = memory_ratio(r);
    if (m.budget > 0) {
        fprintf(out, "[FILTER], BudgetBitsPerKey, %.2f\n[FILTER], MemoryRatio, %.3f\n", m.budget, m.end);
        if (m.mean > 0)
            fprintf(out, "[FILTER], MemoryRatioMean, %.3f\n", m.mean);
        fprintf(out, "# Filter memory: %.2f bits/key at the end", r->es.filter_bits_per_key);
        if (m.mean > 0)
            fprintf(out, ", %.2f averaged over the run", r->filter_bits_mean);
        fprintf(out, ", against %.2f (%.3fx", m.budget, m.end);
        if (m.mean > 0)
            fprintf(out, ", %.3fx averaged", m.mean);
        fprintf(out, "): %s 5 %%\n", m.within ? "within" : "NOT within");
    }
    if (r->es.n_levels) /* adaptkv: its parts */
        fprintf(out,
                "[FILTER], GuardBytes, %llu\n[FILTER], GuardBytesAvg, %llu\n[FILTER], GrownBytes, %llu\n",
                (unsigned long long)r->es.guard_bytes, (unsigned long long)r->es.guard_bytes_avg,
                (unsigned long long)r->es.grown_bytes);
    fprintf(out, "[FILTER], Adaptations, %llu\n", (unsigned long long)r->adaptations);
    if (r->es.filter_grows || r->es.filter_refills)
        fprintf(out, "[FILTER], Grows, %llu\n[FILTER], Refills, %llu\n",
                (unsigned long long)r->es.filter_grows, (unsigned long long)r->es.filter_refills);
    if (r->es.write_amp > 0)
        fprintf(out, "[WRITE], Amplification, %.3f\n", r->es.write_amp);
    if (r->insert_retries)
        fprintf(out, "[OVERALL], InsertRetries, %llu\n", (unsigned long long)r->insert_retries);
    if (r->errors)
        fprintf(out, "[OVERALL], Errors, %llu\n", (unsigned long long)r->errors);
}

static void json_str(FILE *out, const char *k, const char *v)
{
    fprintf(out, "\"%s\":\"", k);
    for (const char *p = v ? v : ""; *p; p++)
        fprintf(out, *p == '"' || *p == '\\' ? "\\%c" : (unsigned char)*p < 0x20 ? "\\u%04x" : "%c", *p);
    fputs("\",", out);
}

static void json_u64(FILE *out, const char *k, uint64_t v)
{
    fprintf(out, "\"%s\":%llu,", k, (unsigned long long)v);
}
static void json_f64(FILE *out, const char *k, double v)
{
    fprintf(out, "\"%s\":%.6g,", k, v);
}

/* adaptkv's live slots per level at the end (-1: the memtable guard). */
static void json_levels(const akv_kb_result *r, FILE *out)
{
    if (!r->es.n_levels)
        return;
    fputs("\"slot_levels\":[", out);
    for (int i = 0; i < r->es.n_levels; i++) {
        const struct akv_kb_level *v = &r->es.levels[i];
        fprintf(out,
                "%s{\"level\":%d,\"slots\":%llu,\"keys\":%llu,\"bits_per_key\":%.4g,\"queries\":%llu,"
                "\"false_positives\":%llu,\"adaptations\":%llu}",
                i ? "," : "", v->level, (unsigned long long)v->slots, (unsigned long long)v->keys,
                v->keys ? v->bits / (double)v->keys : 0, (unsigned long long)v->queries, (unsigned long long)v->false_positives,
                (unsigned long long)v->adaptations);
    }
    fputs("],", out);
}

static void json_hist(FILE *out, const akv_kb_hist *h)
{
    fprintf(
        out,
        "{\"count\":%llu,\"mean\":%.3f,\"p50\":%.3f,\"p95\":%.3f,\"p99\":%.3f,\"p999\":%.3f,\"max\":%.3f}",
        (unsigned long long)h->count, h->count ? us(h->sum_ns) / (double)h->count : 0,
        us(akv_kb_hist_pct(h, 50)), us(akv_kb_hist_pct(h, 95)), us(akv_kb_hist_pct(h, 99)),
        us(akv_kb_hist_pct(h, 99.9)), us(h->max_ns));
}

/* READ latencies by block reads: [0, 1, 2 or more]. */
static void json_read_by_block_reads(const akv_kb_result *r, FILE *out)
{
    fputs("\"read_latency_by_block_reads_us\":[", out);
    for (int i = 0; i < AKV_KB_RHIST; i++) {
        if (i)
            fputc(',', out);
        json_hist(out, &r->rhist[i]);
    }
    fputs("],", out);
}

static void json_latency(const akv_kb_result *r, FILE *out)
{
    fputs("\"latency_us\":{", out);
    bool first = true;
    for (int i = 0; i < AKV_KB_NOPS; i++) {
        const akv_kb_hist *h = &r->hist[i];
        if (!h->count)
            continue;
        fprintf(out, "%s\"%s\":", first ? "" : ",", akv_kb_op_names[i]);
        json_hist(out, h);
        first = false;
    }
    fputs("}", out);
}

int akv_kb_report_json(const akv_kb_result *r, FILE *out)
{
    const akv_kb_cfg *c = r->cfg;
    fputc('{', out);
    json_str(out, "engine", r->engine);
    json_str(out, "label", r->label);
    json_str(out, "workload", r->workload);
    json_str(out, "phase", r->phase);
    json_str(out, "state", state_name(r));
    if (r->settle.requested)
        json_f64(out, "settle_seconds", r->settle.seconds);
    json_u64(out, "start_l0_files", r->start_l0_files);
    json_f64(out, "start_pending_compaction_mb", (double)r->start_pending_bytes / 1048576.0);
    json_str(out, "layout", strcmp(r->engine, "adaptkv") ? "" : c->ordered ? "ordered" : "hash");
    json_str(out, "slot_policy", strcmp(r->engine, "adaptkv") ? "" : c->policy ? c->policy : "default");
    json_str(out, "slot_policy_in_effect", r->es.slot_policy);
    json_str(out, "rocksdb_filter", strcmp(r->engine, "rocksdb") ? "" : c->filter ? c->filter : "bloom");
    json_f64(out, "bits_per_key", c->bits_per_key);
    json_u64(out, "block_cache_bytes", c->cache_bytes);
    json_u64(out, "memtable_bytes", c->memtable_bytes);
    fprintf(out, "\"direct_reads\":%s,", c->direct_reads ? "true" : "false");
    json_u64(out, "threads", r->threads);
    json_u64(out, "records", r->records);
    json_u64(out, "load_ops", r->load_ops);
    json_f64(out, "load_seconds", r->load_seconds);
    json_f64(out, "load_throughput_ops", r->load_seconds > 0 ? (double)r->load_ops / r->load_seconds : 0);
    json_u64(out, "ops", r->ops);
    json_u64(out, "errors", r->errors);
    json_f64(out, "seconds", r->seconds);
    json_f64(out, "throughput_ops", throughput(r));
    json_f64(out, "cpu_seconds", r->cpu_seconds);
    json_f64(out, "client_cpu_seconds", r->client_cpu_seconds);
    json_f64(out, "background_cpu_seconds", background_cpu(r));
    json_f64(out, "cpu_us_per_op", r->ops ? r->cpu_seconds * 1e6 / (double)r->ops : 0);
    if (r->io_known) {
        json_f64(out, "io_read_mb", (double)r->io_read_bytes / 1048576.0);
        json_f64(out, "io_write_mb", (double)r->io_write_bytes / 1048576.0);
    }
    json_u64(out, "reads_found", r->reads_found);
    json_u64(out, "negative_lookups", r->negative_lookups);
    json_u64(out, "intended_negatives", r->intended_negatives);
    json_u64(out, "probes", r->probes);
    json_u64(out, "wasted_probes", r->wasted_probes);
    json_f64(out, "wasted_probes_per_negative_lookup", per(r->negative_wasted, r->negative_lookups));
    json_f64(out, "memtable_wasted_probes_per_negative_lookup",
             per(r->negative_mem_wasted, r->negative_lookups));
    json_f64(out, "filters_per_negative_lookup", per(r->negative_filters, r->negative_lookups));
    json_u64(out, "block_reads", r->block_reads);
    json_f64(out, "block_reads_per_op", per(r->block_reads, r->ops));
    json_f64(out, "filter_bits_per_key", r->es.filter_bits_per_key);
    if (r->filter_bits_mean > 0)
        json_f64(out, "filter_bits_per_key_mean", r->filter_bits_mean);
    json_f64(out, "sst_filter_bits_per_key", r->es.sst_filter_bits_per_key);
    mem_ratio m = memory_ratio(r);
    if (m.budget > 0) {
        json_f64(out, "filter_budget_bits_per_key", m.budget);
        json_f64(out, "filter_memory_ratio", m.end);
        if (m.mean > 0)
            json_f64(out, "filter_memory_ratio_mean", m.mean);
        fprintf(out, "\"filter_memory_within_5pct\":%s,", m.within ? "true" : "false");
    }
    if (r->es.n_levels) {
        json_u64(out, "guard_filter_bytes", r->es.guard_bytes);
        json_u64(out, "guard_filter_bytes_avg", r->es.guard_bytes_avg);
        json_u64(out, "filter_grown_bytes", r->es.grown_bytes);
    }
    json_u64(out, "filter_bytes", r->es.filter_bytes);
    json_f64(out, "write_amp", r->es.write_amp);
    if (r->es.n_write_amp_levels > 0) {
        fputs("\"write_amp_per_level\":[", out);
        for (int i = 0; i < r->es.n_write_amp_levels; i++)
            fprintf(out, "%s%.4g", i ? "," : "", r->es.write_amp_level[i]);
        fputs("],", out);
    }
    json_u64(out, "write_stalls", r->es.write_stalls);
    json_u64(out, "write_slowdowns", r->es.write_slowdowns);
    json_f64(out, "stall_seconds", r->es.stall_seconds);
    json_u64(out, "family_ops", r->es.family_ops);
    json_f64(out, "family_op_seconds", r->es.family_op_seconds);
    json_u64(out, "family_creates", r->es.family_creates);
    json_u64(out, "family_drops", r->es.family_drops);
    json_u64(out, "memtable_empties", r->es.memtable_empties);
    json_f64(out, "memtable_empty_seconds", r->es.memtable_empty_seconds);
    json_u64(out, "l0_merges", r->es.l0_merges);
    json_u64(out, "adaptations", r->adaptations);
    json_u64(out, "filter_grows", r->es.filter_grows);
    json_u64(out, "filter_refills", r->es.filter_refills);
    json_u64(out, "adversary_reads", r->adversary_reads);
    json_f64(out, "adversary_wasted_probes_per_read", per(r->adversary_wasted, r->adversary_reads));
    json_u64(out, "adversary_pool", r->adversary_pool);
    json_u64(out, "adversary_recon_lookups", r->recon_lookups);
    json_u64(out, "adversary_recon_pool", r->recon_pool);
    json_u64(out, "scans_unsupported", r->scans_unsupported);
    if (r->first_pass) {
        json_f64(out, "first_pass_throughput_ops",
                 r->first_seconds > 0 ? (double)r->first_ops / r->first_seconds : 0);
        json_u64(out, "first_pass_negative_lookups", r->first_negative_lookups);
        json_f64(out, "first_pass_wasted_probes_per_negative_lookup",
                 per(r->first_negative_wasted, r->first_negative_lookups));
    }
    json_levels(r, out);
    if (r->hist[AKV_KB_READ].count)
        json_read_by_block_reads(r, out);
    json_latency(r, out);
    fputs("}\n", out);
    return ferror(out) ? -1 : 0;
}

void akv_kb_csv_label(char *out, size_t cap, const char *label)
{
    snprintf(out, cap, "%s", label);
    for (char *c = out; *c; c++)
        if (*c == ',' || *c == '"')
            *c = ';';
}

static const char *const csv_ops[] = {"read", "update", "insert", "scan", "rmw"};

int akv_kb_report_csv(const akv_kb_result *r, FILE *out, bool header)
{
    if (header) {
        fputs("engine,label,workload,threads,records,ops,seconds,throughput_ops,negative_lookups,"
              "wasted_probes_per_negative_lookup,block_reads_per_op,filter_bits_per_key,sst_filter_bits_per_"
              "key,"
              "adaptations,"
              "adversary_wasted_probes_per_read",
              out);
        for (int i = 0; i < 5; i++)
            fprintf(out, ",%s_p50_us,%s_p95_us,%s_p99_us,%s_p999_us", csv_ops[i], csv_ops[i], csv_ops[i],
                    csv_ops[i]);
        fputc('\n', out);
    }
    char label[128];
    akv_kb_csv_label(label, sizeof label, r->label);
    fprintf(out, "%s,%s,%s,%u,%llu,%llu,%.3f,%.1f,%llu,%.4f,%.4f,%.2f,%.2f,%llu,%.4f", r->engine, label,
            r->workload, r->threads, (unsigned long long)r->records, (unsigned long long)r->ops, r->seconds,
            throughput(r), (unsigned long long)r->negative_lookups,
            per(r->negative_wasted, r->negative_lookups), per(r->block_reads, r->ops),
            r->es.filter_bits_per_key, r->es.sst_filter_bits_per_key, (unsigned long long)r->adaptations,
            per(r->adversary_wasted, r->adversary_reads));
    for (int i = 0; i < 5; i++) {
        const akv_kb_hist *h = &r->hist[i];
        fprintf(out, ",%.2f,%.2f,%.2f,%.2f", us(akv_kb_hist_pct(h, 50)), us(akv_kb_hist_pct(h, 95)),
                us(akv_kb_hist_pct(h, 99)), us(akv_kb_hist_pct(h, 99.9)));
    }
    fputc('\n', out);
    return ferror(out) ? -1 : 0;
}
