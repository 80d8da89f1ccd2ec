/*
 * misslog.c — a bounded summary of negative lookups (docs/design.md, "The miss log").
 *
 * A Space-Saving style heavy-hitter table: each entry holds a key (bytes and
 * hash), how often it was looked up in vain, and its cost (wasted probes it
 * caused plus costs declared with akv_hint_negative). When the byte budget
 * is spent, a new key replaces the lightest of a few sampled entries and
 * inherits its count, so a key that keeps coming back climbs over keys that
 * were seen once. Sampling keeps eviction O(1); the summary is a hint for
 * filter builds, not an exact count.
 *
 * The miss path is cheap. Once a shard is full, a get records a negative
 * that cost no probe (its filters said no) one time in AKVI_MISSLOG_SAMPLE,
 * at random per thread, counted that many times, and one that cost a probe
 * always (akvi_misslog_negative): most absent lookups then touch nothing
 * shared here. A key already in the table costs a lookup under
 * its shard's lock; a lookup that cost no probe (its filters said no) does
 * not wait for a contended shard (it is dropped, as a sample); once the
 * table is full, a new such key is admitted one time in ADMIT_ONE_IN, with
 * that many lookups to its count, so a key that keeps coming back still
 * gets in quickly; and keys of up to INLINE_KEY bytes live in a slab
 * allocated with the table, so recording allocates nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/codec.h"
#include "util/order.h"

#define ENTRY_OVERHEAD 64 /* bytes charged per entry besides its key */
#define SAMPLE         8
#define ML_MAGIC       "AKVM"
#define ML_VERSION     1
#define INLINE_KEY     32 /* key bytes stored in the slab; longer keys are malloc'd */
#define ADMIT_ONE_IN   8  /* new, probe-free negatives admitted at this rate */

typedef struct ml_entry {
    akv_hash h;
    uint64_t count;
    double cost;
    uint8_t *key;
    uint32_t klen;
} ml_entry;

typedef struct ml_shard {
    pthread_mutex_t mu;
    uint64_t budget, used;
    ml_entry *e;
    size_t n, cap;
    int32_t *index; /* open addressing on h.hi; -1 = empty */
    size_t index_mask;
    uint64_t rng;
    uint8_t (*slab)[INLINE_KEY]; /* entry i's key when it fits */
    /* Coverage: absent keys met (each lookup or hint), and how many times
     * the table lost one (a new key dropped, or an entry evicted for it);
     * both halved when `met` passes 64 tables' worth, so they follow the
     * recent stream. */
    uint64_t met, lost;
    /* Set once the shard is full (under mu, never cleared): from then on
     * the get path samples its free negatives without taking mu. */
    _Atomic bool full;
} ml_shard;

/* Negative lookups come from every reader thread: the table is split into
 * shards by hash, each with its own lock and an equal share of the budget
 * (one shard when the budget is small, so tiny budgets stay exact). */
#define MAX_SHARDS      16
#define MIN_SHARD_BYTES (64u << 10)

struct akvi_misslog {
    size_t n;
    ml_shard *s[MAX_SHARDS];
};

static size_t slot_of(const ml_shard *ml, akv_hash h)
{
    return (size_t)(akv_mix64(h.hi) & ml->index_mask);
}

static long find(const ml_shard *ml, akv_hash h, const void *key, size_t klen)
{
    for (size_t i = slot_of(ml, h);; i = (i + 1) & ml->index_mask) {
        int32_t x = ml->index[i];
        if (x < 0)
            return -(long)i - 1;
        const ml_entry *e = &ml->e[x];
        if (e->h.hi == h.hi && e->h.lo == h.lo && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return (long)i;
    }
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void index_delete(ml_shard *ml, size_t i)
{
    size_t j = i;
    for (;;) {
        j = (j + 1) & ml->index_mask;
        if (ml->index[j] < 0)
            break;
        size_t home = slot_of(ml, ml->e[ml->index[j]].h);
        bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            ml->index[i] = ml->index[j];
            i = j;
        }
    }
    ml->index[i] = -1;
}

static ml_shard *shard_create(uint64_t budget)
{
    ml_shard *ml = calloc(1, sizeof *ml);
    if (!ml)
        return NULL;
    ml->budget = budget < 4096 ? 4096 : budget;
    ml->cap = (size_t)(ml->budget / ENTRY_OVERHEAD);
    size_t isz = 16;
    while (isz < ml->cap * 2)
        isz <<= 1;
    ml->e = calloc(ml->cap, sizeof *ml->e);
    ml->index = malloc(isz * sizeof *ml->index);
    ml->slab = malloc(ml->cap * sizeof *ml->slab);
    if (!ml->e || !ml->index || !ml->slab) {
        free(ml->e);
        free(ml->index);
        free(ml->slab);
        free(ml);
        return NULL;
    }
    memset(ml->index, 0xff, isz * sizeof *ml->index);
    ml->index_mask = isz - 1;
    ml->rng = 0x9e3779b97f4a7c15ULL;
    pthread_mutex_init(&ml->mu, NULL);
    return ml;
}

static void shard_destroy(ml_shard *ml)
{
    if (!ml)
        return;
    for (size_t i = 0; i < ml->n; i++)
        if (ml->e[i].klen > INLINE_KEY)
            free(ml->e[i].key);
    free(ml->e);
    free(ml->index);
    free(ml->slab);
    pthread_mutex_destroy(&ml->mu);
    free(ml);
}

static double weight(const ml_entry *e)
{
    return (double)e->count + e->cost;
}

static size_t pick_victim(ml_shard *ml)
{
    size_t best = 0;
    double bw = 0;
    for (int s = 0; s < SAMPLE; s++) {
        ml->rng = akv_mix64(ml->rng + 0x9e3779b97f4a7c15ULL);
        size_t i = (size_t)akv_reduce(ml->rng, ml->n);
        if (s == 0 || weight(&ml->e[i]) < bw) {
            best = i;
            bw = weight(&ml->e[i]);
        }
    }
    return best;
}

/* Remove entry x (swap the last entry into its place). */
static void remove_entry(ml_shard *ml, size_t x)
{
    ml_entry *e = &ml->e[x];
    long pos = find(ml, e->h, e->key, e->klen);
    index_delete(ml, (size_t)pos);
    ml->used -= ENTRY_OVERHEAD + e->klen;
    if (e->klen > INLINE_KEY)
        free(e->key);
    size_t last = ml->n - 1;
    if (x != last) {
        ml->e[x] = ml->e[last];
        if (ml->e[x].klen <= INLINE_KEY) { /* the slab slot moves with it */
            memcpy(ml->slab[x], ml->slab[last], ml->e[x].klen);
            ml->e[x].key = ml->slab[x];
        }
        long lp = find(ml, ml->e[x].h, ml->e[x].key, ml->e[x].klen);
        ml->index[lp] = (int32_t)x;
    }
    ml->n--;
}

/* `sampled`: once the table is full, a new key is admitted only one time in
 * ADMIT_ONE_IN, with that many lookups (each admission evicts). */
static void add_locked(ml_shard *ml, akv_hash h, const void *key, size_t klen, uint64_t count, double cost,
                       bool sampled)
{
    if (klen > ml->budget / 4)
        return; /* a single huge key would evict everything */
    if (++ml->met > 64 * (uint64_t)ml->cap) {
        ml->met /= 2;
        ml->lost /= 2;
    }
    long pos = find(ml, h, key, klen);
    if (pos >= 0) {
        ml_entry *e = &ml->e[ml->index[pos]];
        e->count += count;
        e->cost += cost;
        return;
    }
    bool full = ml->n == ml->cap || ml->used + ENTRY_OVERHEAD + klen > ml->budget;
    if (sampled && full) {
        ml->rng = akv_mix64(ml->rng + h.lo);
        if (ml->rng % ADMIT_ONE_IN) {
            ml->lost++;
            return;
        }
        count *= ADMIT_ONE_IN;
    }
    uint64_t inherited = 0;
    while (ml->n > 0 && (ml->n == ml->cap || ml->used + ENTRY_OVERHEAD + klen > ml->budget)) {
        ml->lost++;
        size_t v = pick_victim(ml);
        if (ml->e[v].count > inherited)
            inherited = ml->e[v].count;
        remove_entry(ml, v);
    }
    size_t x = ml->n;
    uint8_t *copy = klen <= INLINE_KEY ? ml->slab[x] : malloc(klen);
    if (!copy)
        return;
    memcpy(copy, key, klen);
    pos = find(ml, h, key, klen);
    ml->n++;
    ml->e[x] = (ml_entry){h, count + inherited, cost, copy, (uint32_t)klen};
    ml->index[-pos - 1] = (int32_t)x;
    ml->used += ENTRY_OVERHEAD + klen;
    if (ml->n == ml->cap || ml->used + ENTRY_OVERHEAD + INLINE_KEY > ml->budget)
        atomic_store_explicit(&ml->full, true, memory_order_relaxed);
}

/* ---- the sharded summary -------------------------------------------------- */

static ml_shard *shard_of(akvi_misslog *m, akv_hash h)
{
    return m->s[akv_reduce(h.lo, m->n)];
}

akvi_misslog *akvi_misslog_create(uint64_t budget)
{
    akvi_misslog *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->n = (size_t)(budget / MIN_SHARD_BYTES);
    m->n = m->n < 1 ? 1 : m->n > MAX_SHARDS ? MAX_SHARDS : m->n;
    for (size_t i = 0; i < m->n; i++)
        if (!(m->s[i] = shard_create(budget / m->n))) {
            akvi_misslog_destroy(m);
            return NULL;
        }
    return m;
}

void akvi_misslog_destroy(akvi_misslog *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        shard_destroy(m->s[i]);
    free(m);
}

void akvi_misslog_record(akvi_misslog *m, akv_hash h, const void *key, size_t klen, double wasted)
{
    ml_shard *ml = shard_of(m, h);
    if (wasted == 0) {
        if (!akvi_mutex_trylock(&ml->mu, AKVI_RANK_MISSLOG))
            return;
    } else {
        akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
    }
    add_locked(ml, h, key, klen, 1, wasted, wasted == 0);
    akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
}

/* This thread's sampler (xorshift64*; seeded from its address). */
static _Thread_local uint64_t t_sample_rng;

bool akvi_misslog_sampled(void)
{
    uint64_t x = t_sample_rng;
    if (x == 0)
        x = akv_mix64((uint64_t)(uintptr_t)&t_sample_rng) | 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t_sample_rng = x;
    return ((x * 0x2545f4914f6cdd1dULL) >> 58) % AKVI_MISSLOG_SAMPLE == 0;
}

void akvi_misslog_negative(akvi_misslog *m, akv_hash h, const void *key, size_t klen, double wasted)
{
    ml_shard *ml = shard_of(m, h);
    uint64_t count = 1;
    if (wasted == 0 && atomic_load_explicit(&ml->full, memory_order_relaxed)) {
        if (!akvi_misslog_sampled())
            return;
        count = AKVI_MISSLOG_SAMPLE;
    }
    if (wasted == 0) {
        if (!akvi_mutex_trylock(&ml->mu, AKVI_RANK_MISSLOG))
            return;
    } else {
        akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
    }
    add_locked(ml, h, key, klen, count, wasted, wasted == 0);
    akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
}

void akvi_misslog_hint(akvi_misslog *m, akv_hash h, const void *key, size_t klen, double cost)
{
    ml_shard *ml = shard_of(m, h);
    akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
    add_locked(ml, h, key, klen, 0, cost, false);
    akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
}

bool akvi_misslog_holds(akvi_misslog *m, akv_hash h, const void *key, size_t klen)
{
    ml_shard *ml = shard_of(m, h);
    akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
    bool yes = find(ml, h, key, klen) >= 0;
    akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
    return yes;
}

size_t akvi_misslog_count(akvi_misslog *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        akvi_mutex_lock(&m->s[i]->mu, AKVI_RANK_MISSLOG);
        n += m->s[i]->n;
        akvi_mutex_unlock(&m->s[i]->mu, AKVI_RANK_MISSLOG);
    }
    return n;
}

double akvi_misslog_coverage(akvi_misslog *m)
{
    uint64_t met = 0, lost = 0;
    for (size_t i = 0; i < m->n; i++) {
        akvi_mutex_lock(&m->s[i]->mu, AKVI_RANK_MISSLOG);
        met += m->s[i]->met;
        lost += m->s[i]->lost;
        akvi_mutex_unlock(&m->s[i]->mu, AKVI_RANK_MISSLOG);
    }
    if (met == 0)
        return 1.0;
    return lost >= met ? 0.0 : 1.0 - (double)lost / (double)met;
}

static int by_cost_desc(const void *a, const void *b)
{
    double x = ((const akv_negative *)a)->cost, y = ((const akv_negative *)b)->cost;
    return (x < y) - (x > y);
}

size_t akvi_misslog_collect(akvi_misslog *m, akvi_range_fn in_range, void *arg, size_t max,
                            akv_negative **out)
{
    *out = NULL;
    akv_negative *neg = NULL;
    size_t k = 0, cap = 0;
    for (size_t i = 0; i < m->n; i++) {
        ml_shard *ml = m->s[i];
        akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
        if (k + ml->n > cap) {
            akv_negative *p = realloc(neg, (k + ml->n) * sizeof *p);
            if (!p) {
                akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
                break;
            }
            neg = p;
            cap = k + ml->n;
        }
        for (size_t j = 0; j < ml->n; j++) {
            const ml_entry *e = &ml->e[j];
            if (!in_range || in_range(arg, e->h, e->key, e->klen))
                neg[k++] = (akv_negative){e->h, weight(e)};
        }
        akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
    }
    if (k == 0 || max == 0) {
        free(neg);
        return 0;
    }
    akvi_sort(neg, k, sizeof *neg, by_cost_desc);
    *out = neg;
    return k < max ? k : max;
}

/* Entries of every shard; the caller holds all shard locks. Two passes:
 * size with w->p == NULL, then fill. */
static void encode_into(const akvi_misslog *m, size_t total, akvi_wbuf *w)
{
    akvi_w_bytes(w, ML_MAGIC, 4);
    akvi_w_u32(w, ML_VERSION);
    akvi_w_u32(w, (uint32_t)total);
    for (size_t s = 0; s < m->n; s++)
        for (size_t i = 0; i < m->s[s]->n; i++) {
            const ml_entry *e = &m->s[s]->e[i];
            akvi_w_u64(w, e->h.hi);
            akvi_w_u64(w, e->h.lo);
            akvi_w_u64(w, e->count);
            akvi_w_f64(w, e->cost);
            akvi_w_u32(w, e->klen);
            akvi_w_bytes(w, e->key, e->klen);
        }
}

int akvi_misslog_encode(akvi_misslog *m, uint8_t **buf, size_t *len)
{
    size_t total = 0;
    for (size_t s = 0; s < m->n; s++) {
        akvi_mutex_lock(&m->s[s]->mu, AKVI_RANK_MISSLOG);
        total += m->s[s]->n;
    }
    akvi_wbuf w = {NULL, 0};
    encode_into(m, total, &w);
    uint8_t *p = malloc(w.len + 8);
    if (p) {
        w = (akvi_wbuf){p, 0};
        encode_into(m, total, &w);
    }
    for (size_t s = 0; s < m->n; s++)
        akvi_mutex_unlock(&m->s[s]->mu, AKVI_RANK_MISSLOG);
    if (!p)
        return akvi_err(AKV_ENOMEM, "out of memory encoding the miss log");
    akvi_w_u64(&w, XXH64(p, w.len, 0));
    *buf = p;
    *len = w.len;
    return AKV_OK;
}

int akvi_misslog_decode(akvi_misslog *m, const uint8_t *buf, size_t len)
{
    if (len < 20 || memcmp(buf, ML_MAGIC, 4) != 0)
        return akvi_err(AKV_ECORRUPT, "miss log record: bad magic or size");
    akvi_rbuf t = {buf + len - 8, 8, 0, false};
    if (akvi_r_u64(&t) != XXH64(buf, len - 8, 0))
        return akvi_err(AKV_ECORRUPT, "miss log record: checksum mismatch");
    akvi_rbuf r = {buf, len - 8, 4, false};
    if (akvi_r_u32(&r) != ML_VERSION)
        return akvi_err(AKV_ENOTSUP, "miss log record: unknown version");
    uint32_t n = akvi_r_u32(&r);
    size_t first = r.off;
    /* Two passes: the whole record is checked before anything is added, so
     * a record refused as corrupt leaves the summary as it was (the caller
     * then starts empty, as it says). Each entry takes at least 36 bytes. */
    if (r.err || n > (r.len - r.off) / 36)
        return akvi_err(AKV_ECORRUPT, "miss log record: bad entry count");
    for (int pass = 0; pass < 2; pass++) {
        r.off = first;
        for (uint32_t i = 0; i < n && !r.err; i++) {
            akv_hash h;
            h.hi = akvi_r_u64(&r);
            h.lo = akvi_r_u64(&r);
            uint64_t count = akvi_r_u64(&r);
            double cost = akvi_r_f64(&r);
            uint32_t klen = akvi_r_u32(&r);
            const uint8_t *key = akvi_r_take(&r, klen);
            if (pass == 0 || !key || !(cost >= 0)) /* a negative or NaN cost is skipped */
                continue;
            ml_shard *ml = shard_of(m, h);
            akvi_mutex_lock(&ml->mu, AKVI_RANK_MISSLOG);
            add_locked(ml, h, key, klen, count, cost, false);
            akvi_mutex_unlock(&ml->mu, AKVI_RANK_MISSLOG);
        }
        if (r.err || r.off != r.len)
            return akvi_err(AKV_ECORRUPT, "miss log record: truncated or trailing bytes");
    }
    return AKV_OK;
}
