/*
 * merge.c — merging iterator over column-family iterators and run-file
 * iterators (runstore.c), newest first.
 *
 * Yields each distinct key once, with the entry of the newest input that
 * holds it (the lowest index). Shadowing by tags is left to the caller:
 * flush/compaction keep or drop tombstones, user iterators skip them.
 * A linear scan over inputs is enough: a version has a handful of
 * memtables and runs, far fewer than a heap would pay off for.
 *
 * An input that is a run can be checked against its catalog entry
 * (akvi_merge_expect): RocksDB's iterator has been seen to end at an SST
 * whose data block fails its checksum and report OK, so a merge that
 * trusted it would lose the rest of the run without a word. Checked input
 * must not end before the run's last key, and a full pass (from
 * akvi_merge_seek_first to the end) must read exactly the entries the
 * catalog records for each SST; otherwise the status is AKV_ECORRUPT,
 * naming the run and SST.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/runstore.h"
#include "util/order.h"

typedef struct expect {
    const akvi_cat_run *run; /* NULL: not checked */
    size_t j;                /* the SST the input is in (entries come in key order) */
    uint64_t *counts;        /* entries read per SST in this pass */
    uint64_t stray;          /* entries outside every SST's range */
} expect;

struct akvi_merge {
    size_t n;
    rocksdb_iterator_t **its; /* its[i] NULL: input i reads files[i] */
    akvi_rs_iter **files;     /* NULL until the first akvi_merge_use_files */
    expect *exp; /* NULL until the first akvi_merge_expect */
    bool full;   /* positioned by seek_first: a full pass is counted */
    bool reverse; /* moving backwards: every input at or before the current key */
    long cur;
    int status;
    uint8_t *kbuf; /* the current key, copied when the direction changes */
    size_t kcap;
};

akvi_merge *akvi_merge_create(rocksdb_iterator_t **its, size_t n)
{
    akvi_merge *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->its = its;
    m->n = n;
    m->cur = -1;
    return m;
}

int akvi_merge_use_files(akvi_merge *m, size_t i, akvi_rs_iter *it)
{
    if (!m->files && !(m->files = calloc(m->n, sizeof *m->files))) {
        akvi_rs_iter_destroy(it);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    m->files[i] = it;
    return AKV_OK;
}

/* ---- one input, either kind ---------------------------------------------- */

static akvi_rs_iter *file_of(const akvi_merge *m, size_t i)
{
    return m->its[i] ? NULL : m->files[i];
}

/* A run file's read failed: the merge ends with its error (AKV_ECORRUPT
 * for damaged data, naming the run and the file). */
static void file_rc(akvi_merge *m, size_t i, int rc)
{
    if (rc == AKV_OK || m->status != AKV_OK)
        return;
    const akvi_cat_run *r = m->exp ? m->exp[i].run : NULL;
    m->status = r ? akvi_err(rc, "run %llu: %s (akv_repair salvages what is readable)",
                             (unsigned long long)r->id, akv_errmsg())
                  : rc;
}

static bool in_valid(const akvi_merge *m, size_t i)
{
    akvi_rs_iter *f = file_of(m, i);
    return f ? akvi_rs_iter_valid(f) : rocksdb_iter_valid(m->its[i]);
}

static const char *in_key(const akvi_merge *m, size_t i, size_t *len)
{
    akvi_rs_iter *f = file_of(m, i);
    return f ? (const char *)akvi_rs_iter_key(f, len) : rocksdb_iter_key(m->its[i], len);
}

static const char *in_value(const akvi_merge *m, size_t i, size_t *len)
{
    akvi_rs_iter *f = file_of(m, i);
    return f ? (const char *)akvi_rs_iter_value(f, len) : rocksdb_iter_value(m->its[i], len);
}

static void in_seek_first(akvi_merge *m, size_t i)
{
    akvi_rs_iter *f = file_of(m, i);
    if (f)
        file_rc(m, i, akvi_rs_iter_seek_first(f));
    else
        rocksdb_iter_seek_to_first(m->its[i]);
}

static void in_seek_last(akvi_merge *m, size_t i)
{
    akvi_rs_iter *f = file_of(m, i);
    if (f)
        file_rc(m, i, akvi_rs_iter_seek_last(f));
    else
        rocksdb_iter_seek_to_last(m->its[i]);
}

static void in_seek(akvi_merge *m, size_t i, const void *k, size_t len)
{
    akvi_rs_iter *f = file_of(m, i);
    if (f)
        file_rc(m, i, akvi_rs_iter_seek(f, k, len));
    else
        rocksdb_iter_seek(m->its[i], (const char *)k, len);
}

static void in_next(akvi_merge *m, size_t i)
{
    akvi_rs_iter *f = file_of(m, i);
    if (f)
        file_rc(m, i, akvi_rs_iter_next(f));
    else
        rocksdb_iter_next(m->its[i]);
}

static void in_prev(akvi_merge *m, size_t i)
{
    akvi_rs_iter *f = file_of(m, i);
    if (f)
        file_rc(m, i, akvi_rs_iter_prev(f));
    else
        rocksdb_iter_prev(m->its[i]);
}

void akvi_merge_expect(akvi_merge *m, size_t i, const akvi_cat_run *run)
{
    if (!m->exp && !(m->exp = calloc(m->n, sizeof *m->exp))) {
        m->status = akvi_err(AKV_ENOMEM, "out of memory");
        return;
    }
    expect *e = &m->exp[i];
    free(e->counts);
    e->run = run;
    e->counts = calloc(run->n_sst ? run->n_sst : 1, sizeof *e->counts);
    if (!e->counts)
        m->status = akvi_err(AKV_ENOMEM, "out of memory");
}

static void fail(akvi_merge *m, const akvi_cat_run *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(akvi_merge *m, const akvi_cat_run *r, const char *fmt, ...)
{
    if (m->status != AKV_OK)
        return;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    m->status = akvi_err(AKV_ECORRUPT,
                         "run %llu, %s: its data is damaged or RocksDB lost a file; nothing was changed "
                         "(akv_repair salvages what is readable)",
                         (unsigned long long)r->id, what);
}

static void check_errors(akvi_merge *m)
{
    for (size_t i = 0; i < m->n && m->status == AKV_OK; i++) {
        if (!m->its[i])
            continue; /* a run file's error ended the merge when it came */
        char *err = NULL;
        rocksdb_iter_get_error(m->its[i], &err);
        if (err && m->exp && m->exp[i].run) {
            /* A block RocksDB finds damaged is damaged data (AKV_ECORRUPT,
             * as a run read short of the catalog is), not a failed read. */
            char what[64];
            bool corrupt = strstr(err, "Corruption") != NULL;
            snprintf(what, sizeof what, "reading run %llu", (unsigned long long)m->exp[i].run->id);
            m->status = akvi_rocks_err(err, what);
            if (corrupt)
                m->status = akvi_err(AKV_ECORRUPT, "%s (akv_repair salvages what is readable)", akv_errmsg());
        } else if (err)
            m->status = akvi_rocks_err(err, "reading a column family");
    }
}

/* Input i is about to step past `key`: count it; true when it is the run's
 * last key (so the input may end after it). */
static bool account(akvi_merge *m, size_t i, const char *key, size_t kl)
{
    expect *e = m->exp ? &m->exp[i] : NULL;
    if (!e || !e->run)
        return true;
    const akvi_cat_run *r = e->run;
    while (e->j < r->n_sst && akvi_bytes_cmp(key, kl, r->ssts[e->j].largest, r->ssts[e->j].largest_len) > 0)
        e->j++;
    if (e->j < r->n_sst && akvi_bytes_cmp(key, kl, r->ssts[e->j].smallest, r->ssts[e->j].smallest_len) >= 0)
        e->counts[e->j]++;
    else
        e->stray++;
    return r->n_sst == 0 ||
           akvi_bytes_cmp(key, kl, r->ssts[r->n_sst - 1].largest, r->ssts[r->n_sst - 1].largest_len) >= 0;
}

/* Input i just became invalid although it may not end yet. */
static void ended_early(akvi_merge *m, size_t i)
{
    check_errors(m); /* a RocksDB error explains it better */
    const expect *e = &m->exp[i];
    size_t j = e->j < e->run->n_sst ? e->j : e->run->n_sst - 1;
    fail(m, e->run, "SST %llu: reading ended before the run's last key (%llu of the %llu entries read)",
         (unsigned long long)e->run->ssts[j].id, (unsigned long long)e->counts[j],
         (unsigned long long)e->run->ssts[j].keys);
}

/* After a full pass: every SST read in full. */
static void check_counts(akvi_merge *m)
{
    for (size_t i = 0; m->exp && i < m->n; i++) {
        const expect *e = &m->exp[i];
        if (!e->run)
            continue;
        for (size_t j = 0; j < e->run->n_sst; j++)
            if (e->counts[j] != e->run->ssts[j].keys)
                fail(m, e->run, "SST %llu: %llu entries read, the catalog records %llu",
                     (unsigned long long)e->run->ssts[j].id, (unsigned long long)e->counts[j],
                     (unsigned long long)e->run->ssts[j].keys);
        if (e->stray)
            fail(m, e->run, "%llu entries outside the ranges of its SSTs", (unsigned long long)e->stray);
    }
}

static void reset_counts(akvi_merge *m, bool full)
{
    m->full = full;
    for (size_t i = 0; m->exp && i < m->n; i++) {
        if (!m->exp[i].run)
            continue;
        m->exp[i].j = 0;
        m->exp[i].stray = 0;
        memset(m->exp[i].counts, 0, (m->exp[i].run->n_sst ? m->exp[i].run->n_sst : 1) * sizeof(uint64_t));
    }
}

/* The current input: the smallest key (the largest moving backwards), the
 * newest input (lowest index) among equal keys. */
static void pick(akvi_merge *m)
{
    long best = -1;
    const char *bk = NULL;
    size_t bl = 0;
    int want = m->reverse ? 1 : -1;
    for (size_t i = 0; i < m->n; i++) {
        if (!in_valid(m, i))
            continue;
        size_t kl;
        const char *k = in_key(m, i, &kl);
        int c = best < 0 ? 0 : akvi_bytes_cmp(k, kl, bk, bl);
        if (best < 0 || (want < 0 ? c < 0 : c > 0)) {
            best = (long)i;
            bk = k;
            bl = kl;
        }
    }
    m->cur = best;
    if (best < 0) {
        check_errors(m);
        if (m->full)
            check_counts(m);
    }
}

void akvi_merge_seek_first(akvi_merge *m)
{
    reset_counts(m, true);
    m->reverse = false;
    for (size_t i = 0; i < m->n; i++) {
        in_seek_first(m, i);
        if (m->exp && m->exp[i].run && m->exp[i].run->n_sst && !in_valid(m, i))
            ended_early(m, i);
    }
    pick(m);
}

void akvi_merge_seek(akvi_merge *m, const uint8_t *k, size_t len)
{
    reset_counts(m, false);
    m->reverse = false;
    for (size_t i = 0; i < m->n; i++) {
        in_seek(m, i, k, len);
        const akvi_cat_run *r = m->exp ? m->exp[i].run : NULL;
        /* A run whose last key is >= k has an entry at or after k. */
        if (r && r->n_sst && !in_valid(m, i) &&
            akvi_bytes_cmp(k, len, r->ssts[r->n_sst - 1].largest, r->ssts[r->n_sst - 1].largest_len) <= 0)
            ended_early(m, i);
    }
    pick(m);
}

bool akvi_merge_valid(const akvi_merge *m)
{
    return m->cur >= 0 && m->status == AKV_OK;
}

const uint8_t *akvi_merge_key(const akvi_merge *m, size_t *len)
{
    return (const uint8_t *)in_key(m, m->cur, len);
}

const uint8_t *akvi_merge_value(const akvi_merge *m, size_t *len)
{
    return (const uint8_t *)in_value(m, m->cur, len);
}

/* Advance input i past its current entry `key`. */
static void step(akvi_merge *m, size_t i, const char *key, size_t kl)
{
    bool may_end = account(m, i, key, kl);
    in_next(m, i);
    if (!may_end && !in_valid(m, i))
        ended_early(m, i);
}

/* Copies the current key into m->kbuf; false (status set) when out of memory. */
static bool save_key(akvi_merge *m, size_t *len)
{
    size_t kl;
    const char *k = in_key(m, m->cur, &kl);
    if (kl > m->kcap) {
        uint8_t *b = realloc(m->kbuf, kl);
        if (!b) {
            akvi_merge_fail(m, akvi_err(AKV_ENOMEM, "out of memory"));
            return false;
        }
        m->kbuf = b;
        m->kcap = kl;
    }
    memcpy(m->kbuf, k, kl);
    *len = kl;
    return true;
}

/* Every input to its last entry before k (k itself excluded). */
static void position_before(akvi_merge *m, const uint8_t *k, size_t len)
{
    reset_counts(m, false);
    m->reverse = true;
    for (size_t i = 0; i < m->n; i++) {
        in_seek(m, i, k, len);
        if (in_valid(m, i))
            in_prev(m, i);
        else
            in_seek_last(m, i);
    }
}

void akvi_merge_seek_last(akvi_merge *m)
{
    reset_counts(m, false);
    m->reverse = true;
    for (size_t i = 0; i < m->n; i++)
        in_seek_last(m, i);
    pick(m);
}

void akvi_merge_seek_before(akvi_merge *m, const uint8_t *k, size_t len)
{
    position_before(m, k, len);
    pick(m);
}

/* Move every input but the current one that sits on the current key k (a
 * shadowed version of it) one entry on: forward through step(), which checks
 * it against the catalog, or backwards. The current input moves after them,
 * since k is its key buffer. */
static void move_ties(akvi_merge *m, const char *k, size_t kl, bool forward)
{
    for (size_t i = 0; i < m->n; i++) {
        if ((long)i == m->cur || !in_valid(m, i))
            continue;
        size_t ol;
        const char *o = in_key(m, i, &ol);
        if (akvi_bytes_cmp(o, ol, k, kl) != 0)
            continue;
        if (forward)
            step(m, i, o, ol);
        else
            in_prev(m, i);
    }
}

/* Backwards from the current key. The catalog checks (akvi_merge_expect)
 * follow forward passes only. */
void akvi_merge_prev(akvi_merge *m)
{
    if (!m->reverse) {
        size_t kl;
        if (save_key(m, &kl))
            position_before(m, m->kbuf, kl);
        pick(m);
        return;
    }
    size_t kl;
    const char *k = in_key(m, m->cur, &kl);
    move_ties(m, k, kl, false);
    in_prev(m, m->cur);
    pick(m);
}

/* After moving backwards: every input to its first entry after the
 * current key. */
static void turn_forward(akvi_merge *m)
{
    size_t kl;
    if (!save_key(m, &kl))
        return;
    reset_counts(m, false);
    m->reverse = false;
    for (size_t i = 0; i < m->n; i++) {
        in_seek(m, i, m->kbuf, kl);
        if (!in_valid(m, i))
            continue;
        size_t ol;
        const char *o = in_key(m, i, &ol);
        if (akvi_bytes_cmp(o, ol, m->kbuf, kl) == 0)
            in_next(m, i);
    }
    pick(m);
}

void akvi_merge_next(akvi_merge *m)
{
    if (m->reverse) {
        turn_forward(m);
        return;
    }
    size_t kl;
    const char *k = in_key(m, m->cur, &kl);
    move_ties(m, k, kl, true);
    step(m, (size_t)m->cur, k, kl);
    pick(m);
}

void akvi_merge_fail(akvi_merge *m, int rc)
{
    if (m->status == AKV_OK)
        m->status = rc;
}

int akvi_merge_status(const akvi_merge *m)
{
    return m->status;
}

void akvi_merge_destroy(akvi_merge *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        if (m->its[i])
            rocksdb_iter_destroy(m->its[i]);
        if (m->files)
            akvi_rs_iter_destroy(m->files[i]);
        if (m->exp)
            free(m->exp[i].counts);
    }
    free(m->exp);
    free(m->files);
    free(m->its);
    free(m->kbuf);
    free(m);
}
