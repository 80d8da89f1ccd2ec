/*
 * absentcpu.c — kvbench --absent-cpu N: what one absent lookup costs in CPU,
 * and how absent lookups scale from one thread to two (docs/kvbench.md,
 * docs/benchmarks.md "The absent path").
 *
 * N fresh absent keys (never inserted, drawn from the attacker's range, so
 * none repeats in practice) are made before the clock starts; one thread
 * looks them up, then two threads look up N each at once. Each thread
 * measures its own CPU time (CLOCK_THREAD_CPUTIME_ID) and the wall time
 * from a common start, so the figures are the lookups' own, not the key
 * generation's. A warm-up of N/10 other keys runs first. Every lookup is
 * counted with its wasted probes: a lookup that a filter let through costs
 * a RocksDB read, which is in the CPU time too.
 *
 * Then the same again on keys every filter answers "no" (the absent path
 * alone, with no RocksDB read): candidates are looked up once, untimed, and
 * those that cost no probe are kept; these lookups are then the second of
 * their key.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/kvbench/kvbench.h"

#define KEYCAP 48

typedef struct ac_keys {
    char (*k)[KEYCAP];
    uint8_t *len;
    uint64_t n;
} ac_keys;

typedef struct ac_thread {
    akv_kb_engine *e;
    const ac_keys *keys;
    pthread_barrier_t *go;
    double cpu_s, wall_s;
    uint64_t wasted, found, errors;
    pthread_t th;
} ac_thread;

static int make_keys(ac_keys *k, uint64_t n, uint64_t seed, unsigned pad)
{
    k->n = n;
    k->k = malloc(n * sizeof *k->k);
    k->len = malloc(n);
    if (!k->k || !k->len)
        return -1;
    akv_kb_rng r;
    akv_kb_rng_seed(&r, seed);
    for (uint64_t i = 0; i < n; i++)
        k->len[i] = (uint8_t)akv_kb_key(k->k[i], KEYCAP,
                                        AKV_KB_ADV_BASE + akv_kb_rng_below(&r, AKV_KB_ADV_BASE), true, pad);
    return 0;
}

static void free_keys(ac_keys *k)
{
    free(k->k);
    free(k->len);
}

/* Keep the keys of k that no filter let through (one untimed lookup each). */
static void screen(akv_kb_engine *e, ac_keys *k)
{
    void *tls = e->thread_begin ? e->thread_begin(e) : NULL;
    uint64_t kept = 0;
    for (uint64_t i = 0; i < k->n; i++) {
        akv_kb_cost c = {0};
        int rc = e->read(e, tls, k->k[i], k->len[i], &c);
        if (rc == AKV_KB_NOTFOUND && c.probes == 0 && c.wasted == 0 && c.mem_wasted == 0) {
            if (kept != i) {
                memcpy(k->k[kept], k->k[i], KEYCAP);
                k->len[kept] = k->len[i];
            }
            kept++;
        }
    }
    k->n = kept;
    if (e->thread_end)
        e->thread_end(e, tls);
}

static void *lookups(void *p)
{
    ac_thread *t = p;
    void *tls = t->e->thread_begin ? t->e->thread_begin(t->e) : NULL;
    if (t->go)
        pthread_barrier_wait(t->go);
    double w0 = akv_kb_clock_seconds(CLOCK_MONOTONIC), c0 = akv_kb_clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; i < t->keys->n; i++) {
        akv_kb_cost c = {0};
        int rc = t->e->read(t->e, tls, t->keys->k[i], t->keys->len[i], &c);
        t->wasted += c.wasted;
        t->found += rc == AKV_KB_FOUND;
        t->errors += rc < 0;
    }
    t->cpu_s = akv_kb_clock_seconds(CLOCK_THREAD_CPUTIME_ID) - c0;
    t->wall_s = akv_kb_clock_seconds(CLOCK_MONOTONIC) - w0;
    if (t->e->thread_end)
        t->e->thread_end(t->e, tls);
    return NULL;
}

/* `nt` threads, thread i on keys[i], started together. */
static int run_threads(akv_kb_engine *e, const ac_keys *keys, unsigned nt, ac_thread *t)
{
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, nt);
    unsigned started = 0;
    for (unsigned i = 0; i < nt; i++) {
        t[i] = (ac_thread){.e = e, .keys = &keys[i], .go = &go};
        if (pthread_create(&t[i].th, NULL, lookups, &t[i]) != 0)
            break;
        started++;
    }
    if (started < nt) { /* the started ones wait at the barrier forever: give up */
        fprintf(stderr, "kvbench: --absent-cpu: cannot start %u threads\n", nt);
        exit(1);
    }
    for (unsigned i = 0; i < nt; i++)
        pthread_join(t[i].th, NULL);
    pthread_barrier_destroy(&go);
    return 0;
}

typedef struct ac_result {
    uint64_t n, found, errors;
    double cpu1, tput1, waste1, cpu2, tput2, waste2;
} ac_result;

/* keys[0] on one thread, then keys[1] and keys[2] on two at once. */
static void measure(akv_kb_engine *e, const ac_keys *keys, ac_result *r)
{
    ac_thread one, two[2];
    run_threads(e, &keys[0], 1, &one);
    run_threads(e, &keys[1], 2, two);
    uint64_t n2 = keys[1].n + keys[2].n;
    r->n = keys[0].n;
    r->found = one.found + two[0].found + two[1].found;
    r->errors = one.errors + two[0].errors + two[1].errors;
    r->cpu1 = one.cpu_s * 1e9 / (double)keys[0].n;
    r->tput1 = (double)keys[0].n / one.wall_s;
    r->waste1 = (double)one.wasted / (double)keys[0].n;
    double wall2 = two[0].wall_s > two[1].wall_s ? two[0].wall_s : two[1].wall_s;
    r->cpu2 = (two[0].cpu_s + two[1].cpu_s) * 1e9 / (double)n2;
    r->tput2 = (double)n2 / wall2;
    r->waste2 = (double)(two[0].wasted + two[1].wasted) / (double)n2;
}

static void print_text(FILE *out, const char *what, const ac_result *r)
{
    fprintf(out, "[ABSENT-CPU], %s, lookups per thread, %llu\n", what, (unsigned long long)r->n);
    fprintf(out,
            "[ABSENT-CPU], %s, 1 thread, CPU ns/lookup, %.0f, lookups/s, %.0f, wasted probes/lookup, %.5f\n",
            what, r->cpu1, r->tput1, r->waste1);
    fprintf(out,
            "[ABSENT-CPU], %s, 2 threads, CPU ns/lookup, %.0f, lookups/s, %.0f, wasted probes/lookup, %.5f\n",
            what, r->cpu2, r->tput2, r->waste2);
    fprintf(out, "[ABSENT-CPU], %s, 2 threads / 1 thread, %.2f\n", what, r->tput2 / r->tput1);
}

static void print_json(FILE *f, const char *name, const ac_result *r)
{
    fprintf(f,
            "\"%s\":{\"lookups_per_thread\":%llu,\"cpu_ns_per_lookup_1t\":%.1f,\"lookups_per_s_1t\":%.0f,"
            "\"wasted_per_lookup_1t\":%.6f,\"cpu_ns_per_lookup_2t\":%.1f,\"lookups_per_s_2t\":%.0f,"
            "\"wasted_per_lookup_2t\":%.6f,\"scaling_2t_over_1t\":%.3f}",
            name, (unsigned long long)r->n, r->cpu1, r->tput1, r->waste1, r->cpu2, r->tput2, r->waste2,
            r->tput2 / r->tput1);
}

int akv_kb_absent_cpu(akv_kb_engine *e, uint64_t n, uint64_t seed, unsigned pad, const char *json, FILE *out)
{
    ac_keys warm = {0}, keys[3] = {{0}}, rejected[3] = {{0}};
    int rc = make_keys(&warm, n / 10 + 1, seed ^ 0x3a3a, pad);
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = make_keys(&keys[i], n, seed + 1 + (uint64_t)i, pad);
    for (int i = 0; rc == 0 && i < 3; i++)
        rc = make_keys(&rejected[i], n, seed + 11 + (uint64_t)i, pad);
    ac_result fresh = {0}, filtered = {0};
    if (rc == 0) {
        ac_thread w;
        run_threads(e, &warm, 1, &w);
        measure(e, keys, &fresh);
        for (int i = 0; i < 3; i++)
            screen(e, &rejected[i]);
        measure(e, rejected, &filtered);
    }
    for (int i = 0; i < 3; i++) {
        free_keys(&keys[i]);
        free_keys(&rejected[i]);
    }
    free_keys(&warm);
    if (rc != 0) {
        fprintf(stderr, "kvbench: --absent-cpu: out of memory for %llu keys\n", (unsigned long long)n);
        return 1;
    }
    uint64_t found = fresh.found + filtered.found, errors = fresh.errors + filtered.errors;
    if (out) {
        fprintf(out, "[ABSENT-CPU], Engine, %s\n", e->label);
        print_text(out, "fresh keys", &fresh);
        print_text(out, "every filter said no", &filtered);
        if (found || errors)
            fprintf(out, "[ABSENT-CPU], Found (should be 0), %llu, errors, %llu\n", (unsigned long long)found,
                    (unsigned long long)errors);
    }
    if (json) {
        FILE *f = strcmp(json, "-") == 0 ? stdout : fopen(json, "w");
        if (!f) {
            fprintf(stderr, "kvbench: cannot write --json %s\n", json);
            return 1;
        }
        fprintf(f, "{\"engine\":\"%s\",\"absent_cpu\":{", e->label);
        print_json(f, "fresh", &fresh);
        fputc(',', f);
        print_json(f, "filtered", &filtered);
        fprintf(f, ",\"found\":%llu,\"errors\":%llu}}\n", (unsigned long long)found,
                (unsigned long long)errors);
        if (f != stdout && fclose(f) != 0) {
            fprintf(stderr, "kvbench: cannot write --json %s\n", json);
            return 1;
        }
    }
    return found || errors ? 1 : 0;
}
