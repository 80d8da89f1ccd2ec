/*
 * commands.c — kvshell's commands, one function each, against the public API
 * only (adaptkv/adaptkv.h). A command returns KVS_OK, KVS_FAIL, KVS_NOTFOUND
 * or KVS_QUIT; it prints results on stdout and failures on stderr.
 */
#include "tools/kvshell/kvshell.h"
#include "util/order.h"

#include <stdlib.h>
#include <string.h>

static int engine_fail(const kvs_ctx *c, const char *cmd, int rc)
{
    kvs_error(c, cmd, "%s", kvs_engine_msg(rc));
    return KVS_FAIL;
}

static int interrupted(const kvs_ctx *c, const char *cmd)
{
    kvs_error(c, cmd, "interrupted");
    return KVS_FAIL;
}

/* Commands that take an exact number of words after the command name. */
static bool want_args(const kvs_ctx *c, const kvs_words *w, size_t n, const char *usage)
{
    if (w->n - 1 == n)
        return true;
    kvs_error(c, w->v[0].data, "expects %zu argument%s: %s", n, n == 1 ? "" : "s", usage);
    return false;
}

static int cmd_put(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 2, "put KEY VALUE"))
        return KVS_FAIL;
    int rc = akv_put(c->db, w->v[1].data, w->v[1].len, w->v[2].data, w->v[2].len);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, "put", rc);
}

static int cmd_get(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 1, "get KEY"))
        return KVS_FAIL;
    akv_pinned *pin = NULL; /* printed in place, without a copy */
    int rc = akv_get_pinned(c->db, w->v[1].data, w->v[1].len, &pin);
    if (rc == AKV_NOTFOUND) {
        /* On stderr so that `v=$(kvshell DIR get k)` never captures it. */
        kvs_error_begin(c, NULL);
        fputs("not found: ", stderr);
        kvs_print_escaped(stderr, w->v[1].data, w->v[1].len);
        fputc('\n', stderr);
        return KVS_NOTFOUND;
    }
    if (rc != AKV_OK)
        return engine_fail(c, "get", rc);
    size_t vlen = 0;
    const void *val = akv_pinned_value(pin, &vlen);
    kvs_print_escaped(stdout, val, vlen);
    putchar('\n');
    akv_pinned_release(pin);
    return KVS_OK;
}

static int cmd_del(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 1, "del KEY"))
        return KVS_FAIL;
    int rc = akv_delete(c->db, w->v[1].data, w->v[1].len);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, "del", rc);
}

static int iter_open(kvs_ctx *c, const char *cmd, akv_iter **it)
{
    int rc = akv_iter_create(c->db, it);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, cmd, rc);
}

/* Print pairs from `from` (inclusive; NULL = first) to `to` (exclusive:
 * the iterator's upper bound). */
static int print_range(kvs_ctx *c, const char *cmd, const kvs_word *from, const kvs_word *to, uint64_t limit)
{
    akv_iter *it;
    int st = iter_open(c, cmd, &it);
    if (st != KVS_OK)
        return st;
    int rc = to ? akv_iter_set_upper_bound(it, to->data, to->len) : AKV_OK;
    if (rc != AKV_OK) {
        akv_iter_destroy(it);
        return engine_fail(c, cmd, rc);
    }
    if (from && from->len > 0)
        akv_iter_seek(it, from->data, from->len);
    else
        akv_iter_seek_first(it);
    bool stopped = false;
    for (uint64_t n = 0; n < limit && akv_iter_valid(it); n++, akv_iter_next(it)) {
        if ((stopped = kvs_interrupted()))
            break;
        size_t kl, vl;
        const void *k = akv_iter_key(it, &kl);
        const void *v = akv_iter_value(it, &vl);
        kvs_print_escaped(stdout, k, kl);
        putchar('\t');
        kvs_print_escaped(stdout, v, vl);
        putchar('\n');
    }
    rc = akv_iter_status(it);
    akv_iter_destroy(it);
    if (rc != AKV_OK)
        return engine_fail(c, cmd, rc);
    return stopped ? interrupted(c, cmd) : KVS_OK;
}

static int parse_count(const kvs_ctx *c, const char *cmd, const kvs_word *w, uint64_t *out)
{
    if (kvs_parse_size(w->data, out) == 0 && memchr(w->data, '\0', w->len) == NULL)
        return 0;
    kvs_error(c, cmd, "--limit expects a number, got '%s'", w->data);
    return -1;
}

static int cmd_scan(kvs_ctx *c, const kvs_words *w)
{
    const kvs_word *pos[2] = {NULL, NULL};
    size_t npos = 0;
    uint64_t limit = UINT64_MAX;
    for (size_t i = 1; i < w->n; i++) {
        if (kvs_word_is(&w->v[i], "--limit")) {
            if (i + 1 >= w->n) {
                kvs_error(c, "scan", "--limit expects a number");
                return KVS_FAIL;
            }
            if (parse_count(c, "scan", &w->v[++i], &limit) != 0)
                return KVS_FAIL;
        } else if (w->v[i].plain && w->v[i].len > 2 && memcmp(w->v[i].data, "--", 2) == 0) {
            kvs_error(c, "scan", "unknown option %s (quote a key that starts with --)", w->v[i].data);
            return KVS_FAIL;
        } else if (npos < 2) {
            pos[npos++] = &w->v[i];
        } else {
            kvs_error(c, "scan", "usage: scan [FROM [TO]] [--limit N]");
            return KVS_FAIL;
        }
    }
    if (npos > 0 && c->layout == AKV_LAYOUT_HASH) {
        kvs_error(c, "scan",
                  "FROM and TO need the ordered layout: the hash layout keeps keys in hash order "
                  "(`scan` without them lists every pair in that order; create the database with "
                  "--layout ordered for key ranges)");
        return KVS_FAIL;
    }
    return print_range(c, "scan", pos[0], pos[1], limit);
}

static int cmd_dump(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 0, "dump"))
        return KVS_FAIL;
    return print_range(c, "dump", NULL, NULL, UINT64_MAX);
}

/* Counts by iterating: exact in both layouts (the statistics' estimate
 * counts shadowed versions and tombstones). */
static int cmd_count(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 0, "count"))
        return KVS_FAIL;
    akv_iter *it;
    int st = iter_open(c, "count", &it);
    if (st != KVS_OK)
        return st;
    uint64_t n = 0;
    bool stopped = false;
    for (akv_iter_seek_first(it); akv_iter_valid(it) && !(stopped = kvs_interrupted()); akv_iter_next(it))
        n++;
    int rc = akv_iter_status(it);
    akv_iter_destroy(it);
    if (rc != AKV_OK)
        return engine_fail(c, "count", rc);
    if (stopped)
        return interrupted(c, "count");
    printf("%llu\n", (unsigned long long)n);
    return KVS_OK;
}

/* The per-level arrays of akv_stats, one row per level that holds or has
 * written anything: runs_per_level, ssts_per_level, keys_per_level,
 * bytes_written_per_level and write_amp_per_level (as --json has them). */
static void print_levels(const akv_stats *s)
{
    printf("%-8s %6s %6s %14s %16s %10s %12s\n", "level", "runs", "ssts", "keys", "bytes_written",
           "write_amp", "filter_bytes");
    for (int i = 0; i < AKV_MAX_LEVELS; i++) {
        uint64_t written = s->bytes_written_per_level[i];
        if (!s->runs_per_level[i] && !s->ssts_per_level[i] && !s->keys_per_level[i] && !written)
            continue;
        double amp = s->bytes_written_user ? (double)written / (double)s->bytes_written_user : 0.0;
        printf("L%-7d %6u %6u %14llu %16llu %10.3f %12llu\n", i, s->runs_per_level[i], s->ssts_per_level[i],
               (unsigned long long)s->keys_per_level[i], (unsigned long long)written, amp,
               (unsigned long long)s->filter_bytes_per_level[i]);
    }
}

/* Every scalar of akv_stats, one "name value" line each, named and ordered
 * as --json (akv_stats_json) has them, then the per-level table. */
static void print_stats(const akv_stats *s)
{
#define ROW(name) printf("%-20s %llu\n", #name, (unsigned long long)s->name)
    ROW(puts);
    ROW(deletes);
    ROW(gets);
    ROW(negative_lookups);
    ROW(probes);
    ROW(wasted_probes);
    ROW(slot_queries);
    ROW(slot_filtered);
    ROW(false_positives);
    ROW(adaptations);
    ROW(block_reads);
    ROW(flushes);
    ROW(compactions);
    ROW(write_stalls);
    ROW(write_slowdowns);
    ROW(bytes_written_user);
    ROW(bytes_written_disk);
    ROW(filter_bytes);
    ROW(live_keys_estimate);
    ROW(levels);
    ROW(memtables);
    ROW(compaction_debt_bytes);
    ROW(filter_grows);
    ROW(filter_refills);
    ROW(l0_merges);
    ROW(family_ops);
    ROW(family_op_us);
    ROW(family_creates);
    ROW(family_drops);
    ROW(memtable_empties);
    ROW(memtable_empty_us);
    ROW(wal_damaged_recoveries);
    ROW(wal_records_dropped);
    ROW(filter_grown_bytes);
    ROW(guard_filter_bytes);
    ROW(guard_filter_bytes_avg);
    ROW(filter_budget_bytes);
#undef ROW
    printf("%-20s %.4f\n", "filter_budget_bits_per_key", s->filter_budget_bits_per_key);
    printf("%-20s %.4f\n", "miss_log_coverage", s->miss_log_coverage);
    print_levels(s);
}

static int cmd_stats(kvs_ctx *c, const kvs_words *w)
{
    bool json = w->n == 2 && kvs_word_is(&w->v[1], "--json");
    if (w->n > 2 || (w->n == 2 && !json)) {
        kvs_error(c, "stats", "usage: stats [--json]");
        return KVS_FAIL;
    }
    int rc;
    if (json) {
        char *s = NULL;
        if ((rc = akv_stats_json(c->db, &s)) != AKV_OK)
            return engine_fail(c, "stats", rc);
        /* The API promises one line; strip a trailing newline if any. */
        size_t n = strlen(s);
        while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
            n--;
        printf("%.*s\n", (int)n, s);
        akv_free(s);
        return KVS_OK;
    }
    akv_stats st;
    if ((rc = akv_get_stats(c->db, &st)) != AKV_OK)
        return engine_fail(c, "stats", rc);
    print_stats(&st);
    return KVS_OK;
}

/* "3 aqf, 1 bloom": the kinds of the slots at `level`, by name; "-" when
 * it has none. */
typedef struct kind_count {
    const char *kind; /* a row's kind[16], not necessarily NUL-terminated */
    size_t n;
} kind_count;

static int by_kind(const void *a, const void *b)
{
    return strncmp(((const kind_count *)a)->kind, ((const kind_count *)b)->kind, sizeof ((akv_slot_info *)0)->kind);
}

static void level_kinds(const akv_slot_info *rows, size_t n, int level, char *out, size_t cap)
{
    enum { MAX_KINDS = 32 };
    kind_count kc[MAX_KINDS];
    size_t k = 0, other = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].level != level)
            continue;
        size_t j = 0;
        while (j < k && strncmp(kc[j].kind, rows[i].kind, sizeof rows[i].kind) != 0)
            j++;
        if (j == MAX_KINDS)
            other++;
        else if (j == k)
            kc[k++] = (kind_count){rows[i].kind, 1};
        else
            kc[j].n++;
    }
    akvi_sort(kc, k, sizeof *kc, by_kind);
    size_t off = 0;
    snprintf(out, cap, "-");
    for (size_t j = 0; j < k && off < cap; j++) {
        int m = snprintf(out + off, cap - off, "%s%zu %.16s", j ? ", " : "", kc[j].n, kc[j].kind);
        off += m > 0 ? (size_t)m : 0;
    }
    if (other && off < cap)
        snprintf(out + off, cap - off, ", %zu of other kinds", other);
}

/* The policy in effect, then per level the kind it gives new slots and the
 * kinds the existing slots have: they differ after the policy changed,
 * since existing SSTs keep their kinds (docs/design.md, "Slot policy"). */
static void print_policy(kvs_ctx *c, const akv_slot_info *rows, size_t n)
{
    printf("slot policy  %s\n", akv_db_slot_policy(c->db));
    printf("bits/key     %g\n", akv_db_bits_per_key(c->db));
    int deepest = 0;
    for (size_t i = 0; i < n; i++)
        deepest = rows[i].level > deepest ? rows[i].level : deepest;
    printf("%-5s %-10s %s\n", "level", "new slots", "existing slots");
    for (int l = -1; l <= deepest; l++) {
        char lvl[16], kinds[512];
        if (l < 0)
            snprintf(lvl, sizeof lvl, "mem");
        else
            snprintf(lvl, sizeof lvl, "L%d", l);
        level_kinds(rows, n, l, kinds, sizeof kinds);
        const char *k = akv_db_policy_kind(c->db, l);
        printf("%-5s %-10s %s\n", lvl, k ? k : "?", kinds);
    }
    putchar('\n');
}

static int cmd_filters(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 0, "filters"))
        return KVS_FAIL;
    akv_slot_info *rows = NULL;
    size_t n = 0;
    int rc = akv_slots(c->db, &rows, &n);
    if (rc != AKV_OK)
        return engine_fail(c, "filters", rc);
    print_policy(c, rows, n);
    printf("%-5s %8s %8s %-8s %12s %8s %12s %12s %10s %8s %8s\n", "level", "run", "sst", "kind", "keys",
           "bits/key", "queries", "filtered", "probes", "fp", "adapt");
    for (size_t i = 0; i < n; i++) {
        const akv_slot_info *r = &rows[i];
        char lvl[16];
        if (r->level < 0)
            snprintf(lvl, sizeof lvl, "mem");
        else
            snprintf(lvl, sizeof lvl, "L%d", r->level);
        printf("%-5s %8llu %8llu %-8.16s %12llu %8.2f %12llu %12llu %10llu %8llu %8llu\n", lvl,
               (unsigned long long)r->run, (unsigned long long)r->sst, r->kind, (unsigned long long)r->keys,
               r->bits_per_key, (unsigned long long)r->queries, (unsigned long long)r->filtered,
               (unsigned long long)r->probes, (unsigned long long)r->false_positives,
               (unsigned long long)r->adaptations);
    }
    akv_free(rows);
    return KVS_OK;
}

static int cmd_flush(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 0, "flush"))
        return KVS_FAIL;
    int rc = akv_flush(c->db);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, "flush", rc);
}

static int cmd_compact(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 0, "compact"))
        return KVS_FAIL;
    int rc = akv_compact(c->db);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, "compact", rc);
}

/* A consistent copy of the open database in a new directory. */
static int cmd_backup(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 1, "backup DIR"))
        return KVS_FAIL;
    if (memchr(w->v[1].data, '\0', w->v[1].len)) {
        kvs_error(c, "backup", "a directory name cannot hold a NUL byte");
        return KVS_FAIL;
    }
    int rc = akv_checkpoint(c->db, w->v[1].data);
    return rc == AKV_OK ? KVS_OK : engine_fail(c, "backup", rc);
}

static int cmd_load(kvs_ctx *c, const kvs_words *w)
{
    if (!want_args(c, w, 1, "load FILE"))
        return KVS_FAIL;
    if (memchr(w->v[1].data, '\0', w->v[1].len)) {
        kvs_error(c, "load", "a file name cannot contain a NUL byte");
        return KVS_FAIL;
    }
    return kvs_cmd_load(c, w->v[1].data);
}

static int cmd_help(kvs_ctx *c, const kvs_words *w)
{
    if (w->n > 2) {
        kvs_error(c, "help", "usage: help [COMMAND]");
        return KVS_FAIL;
    }
    if (w->n == 1) {
        kvs_help(stdout, NULL);
        return KVS_OK;
    }
    const kvs_word *name = &w->v[1];
    if (!memchr(name->data, '\0', name->len) && kvs_help(stdout, name->data) == 0)
        return KVS_OK;
    kvs_error_begin(c, "help");
    fputs("no command '", stderr);
    kvs_print_escaped(stderr, name->data, name->len);
    fputs("' (try: help)\n", stderr);
    return KVS_FAIL;
}

static int cmd_quit(kvs_ctx *c, const kvs_words *w)
{
    return want_args(c, w, 0, w->v[0].data) ? KVS_QUIT : KVS_FAIL;
}

typedef struct command {
    const char *name;
    int (*run)(kvs_ctx *c, const kvs_words *w);
    const char *usage;
    const char *summary;
    bool alias; /* left out of the command list */
} command;

static const command commands[] = {
    {"put", cmd_put, "put KEY VALUE", "store VALUE under KEY", false},
    {"get", cmd_get, "get KEY", "print the value of KEY (\"not found: KEY\" on stderr if absent)", false},
    {"del", cmd_del, "del KEY", "delete KEY (deleting an absent key is not an error)", false},
    {"scan", cmd_scan, "scan [FROM [TO]] [--limit N]",
     "pairs with FROM <= key < TO (FROM and TO: ordered layout; hash layout: hash order)", false},
    {"count", cmd_count, "count", "number of live keys", false},
    {"stats", cmd_stats, "stats [--json]", "engine statistics; --json prints one line", false},
    {"filters", cmd_filters, "filters", "slot policy, kinds per level, then one row per filter slot", false},
    {"flush", cmd_flush, "flush", "write the memtable out as an L0 run", false},
    {"compact", cmd_compact, "compact", "flush, then compact every level into the last", false},
    {"load", cmd_load, "load FILE", "bulk load \"key<TAB>value\" or \"put K V\" lines", false},
    {"backup", cmd_backup, "backup DIR",
     "a consistent copy of the database in the new directory DIR, a database of its own", false},
    {"dump", cmd_dump, "dump", "every pair as key<TAB>value (key order, or hash order on the hash layout)",
     false},
    {"help", cmd_help, "help [COMMAND]", "this list, or one command's usage", false},
    {"quit", cmd_quit, "quit", "leave the shell (also: exit, end of input)", false},
    {"exit", cmd_quit, "exit", "leave the shell (same as quit)", true},
};

#define NCOMMANDS (sizeof commands / sizeof *commands)

const char *kvs_command_name(size_t i)
{
    return i < NCOMMANDS ? commands[i].name : NULL;
}

int kvs_help(FILE *f, const char *cmd)
{
    if (cmd) {
        for (size_t i = 0; i < NCOMMANDS; i++)
            if (strcmp(cmd, commands[i].name) == 0) {
                fprintf(f, "%s\n    %s\n", commands[i].usage, commands[i].summary);
                return 0;
            }
        return -1;
    }
    fputs("commands:\n", f);
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!commands[i].alias)
            fprintf(f, "  %-30s %s\n", commands[i].usage, commands[i].summary);
    fputs("keys and values may be quoted ('a b', \"a b\") and escaped: \\xNN \\n \\t \\r \\0 \\\\ \\\" \\'\n"
          "output escapes every byte outside printable ASCII as \\xNN and a backslash as \\\\\n",
          f);
    return 0;
}

int kvs_run(kvs_ctx *c, const kvs_words *w)
{
    if (w->n == 0)
        return KVS_OK;
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (kvs_word_is(&w->v[0], commands[i].name))
            return commands[i].run(c, w);
    kvs_error_begin(c, NULL);
    fputs("unknown command '", stderr);
    kvs_print_escaped(stderr, w->v[0].data, w->v[0].len);
    fputs("' (try: help)\n", stderr);
    return KVS_FAIL;
}
