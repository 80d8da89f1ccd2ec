/*
 * l0front.c — the L0 front: one blocked Bloom filter in front of the L0
 * runs flushed since it was made (docs/design.md, "The L0 front").
 *
 * Each L0 run covers the whole key space, so an absent key checked one slot
 * per L0 run, and under a steady write load L0 holds several. A flush
 * inserts its memtable's hashes (the guard's: every key written, deletions
 * included, so a front never hides a tombstone) into the current front
 * before its run is published, and the run points to the front. A lookup
 * checks each front once and skips every L0 run pointing to a front that
 * said no; a "maybe" sends it to those runs' own slots, as before.
 *
 * Why no key is lost: a front's bits are only ever set, by the flush
 * thread, before the run that needs them is published (the release of the
 * version install), so every reader that sees the run sees its bits. The
 * keys of runs that have left L0 stay in the front until it is dropped:
 * more false positives, never fewer keys. An L0 merge's output points to
 * its inputs' front when they all share one (it holds their keys, and no
 * other). A run whose memtable's hashes are incomplete (the guard off, or
 * out of memory remembering one), and every L0 run after an open (fronts
 * are not kept on disk), points to none and is checked on its own.
 *
 * A new front is started after a compaction has picked L0 runs (they all
 * leave together, and the runs flushed meanwhile, which an L0 merge takes,
 * share the new front), when the current one would pass the keys it was
 * sized for, or when most of its keys belong to runs that have left L0, so
 * that one or two fronts are live. A front lives while a run points to it.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/lockorder.h"

struct akvi_front {
    _Atomic int refs;
    uint64_t blocks; /* of FRONT_BLOCK_BITS */
    uint64_t cap;    /* keys it was sized for */
    uint64_t keys;   /* hashes inserted (fronts.mu) */
    unsigned k;      /* bits set per key, all in one block */
    _Atomic uint64_t *words;
};

#define FRONT_BLOCK_WORDS 8 /* a 64-byte cache line */
#define FRONT_BLOCK_BITS  (64 * FRONT_BLOCK_WORDS)
#define FRONT_MIN_KEYS    64
#define FRONT_FLUSHES     4 /* a larger L0 trigger gets more fronts, not larger ones */
#define FRONT_MAX_K       7 /* 9 bits of position each from one 64-bit word */

/* The front's own hash: independent of the slots' and the guard's use of h,
 * so that their false positives do not coincide. */
static inline uint64_t front_hash(akv_hash h)
{
    return akv_mix64(h.hi ^ akv_mix64(h.lo + 0x9e3779b97f4a7c15ULL));
}

static inline uint64_t block_of(const akvi_front *f, uint64_t x)
{
    return (uint64_t)(((unsigned __int128)x * f->blocks) >> 64);
}

/* The bits of one key within its block. */
static void key_mask(const akvi_front *f, uint64_t x, uint64_t mask[FRONT_BLOCK_WORDS])
{
    memset(mask, 0, FRONT_BLOCK_WORDS * sizeof *mask);
    uint64_t y = akv_mix64(x);
    for (unsigned i = 0; i < f->k; i++) {
        unsigned pos = (unsigned)(y >> (9 * i)) & (FRONT_BLOCK_BITS - 1);
        mask[pos >> 6] |= 1ULL << (pos & 63);
    }
}

static unsigned front_k(double bits_per_key)
{
    unsigned k = (unsigned)(bits_per_key * 0.69 + 0.5);
    return k < 1 ? 1 : k > FRONT_MAX_K ? FRONT_MAX_K : k;
}

/*
 * Half the budget's bits per key: a front's false positive costs a check of
 * the L0 slots behind it, not a probe, and what it costs in memory comes
 * back from those slots (slotbuild.c weighs an L0 run behind a front by the
 * front's rate: at its bits, about as many bits per key fewer). At half the
 * budget, a 5-6 % rate.
 */
double akvi_front_bits(const akv_db *db)
{
    return db->opt.bits_per_key / 2;
}

/* A full front's false-positive rate: a Bloom filter's, averaged over the
 * Poisson number of keys its 512-bit blocks get. */
double akvi_front_rate(double bits_per_key)
{
    if (bits_per_key <= 0)
        return 1;
    double lambda = FRONT_BLOCK_BITS / bits_per_key, k = front_k(bits_per_key), sum = 0;
    double p = exp(-lambda); /* P(j = 0) */
    for (int j = 0; j <= (int)(lambda + 12 * sqrt(lambda) + 12); j++) {
        if (j > 0)
            p *= lambda / j;
        sum += p * pow(1 - exp(-k * j / FRONT_BLOCK_BITS), k);
    }
    return sum > 1 ? 1 : sum < 1e-9 ? 1e-9 : sum;
}

static akvi_front *front_new(uint64_t cap, double bits_per_key)
{
    akvi_front *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    double bits = (double)cap * bits_per_key;
    f->blocks = (uint64_t)(bits / FRONT_BLOCK_BITS) + 1;
    f->cap = cap;
    f->k = front_k(bits_per_key);
    f->words = calloc(f->blocks * FRONT_BLOCK_WORDS, sizeof *f->words);
    if (!f->words) {
        free(f);
        return NULL;
    }
    atomic_init(&f->refs, 1);
    return f;
}

void akvi_front_ref(akvi_front *f)
{
    if (f)
        atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void akvi_front_unref(akvi_front *f)
{
    if (f && atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) == 1) {
        free((void *)f->words);
        free(f);
    }
}

/* Under fronts.mu: the flush thread is the only writer. A relaxed load and
 * store per word is enough: readers only load, and the run that needs the
 * bits is published after them. */
static void insert(akvi_front *f, akv_hash h)
{
    uint64_t x = front_hash(h), mask[FRONT_BLOCK_WORDS];
    key_mask(f, x, mask);
    _Atomic uint64_t *w = f->words + block_of(f, x) * FRONT_BLOCK_WORDS;
    for (unsigned i = 0; i < FRONT_BLOCK_WORDS; i++)
        if (mask[i]) {
            uint64_t old = atomic_load_explicit(&w[i], memory_order_relaxed);
            if ((old & mask[i]) != mask[i])
                atomic_store_explicit(&w[i], old | mask[i], memory_order_relaxed);
        }
    f->keys++;
}

uint64_t akvi_front_key(akv_hash h)
{
    return front_hash(h);
}

bool akvi_front_may_contain(const akvi_front *f, uint64_t x)
{
    uint64_t y = akv_mix64(x);
    const _Atomic uint64_t *w = f->words + block_of(f, x) * FRONT_BLOCK_WORDS;
    for (unsigned i = 0; i < f->k; i++) {
        unsigned pos = (unsigned)(y >> (9 * i)) & (FRONT_BLOCK_BITS - 1);
        if (!(atomic_load_explicit(&w[pos >> 6], memory_order_relaxed) & (1ULL << (pos & 63))))
            return false;
    }
    return true;
}

size_t akvi_front_memory(const akvi_front *f)
{
    return f ? sizeof *f + f->blocks * FRONT_BLOCK_WORDS * sizeof *f->words : 0;
}

static bool left_out(const akvi_run *r, const akvi_run *const *except, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r == except[i])
            return true;
    return false;
}

size_t akvi_fronts_memory(const akvi_version *v, const akvi_run *const *except, size_t n_except)
{
    size_t sum = 0;
    for (size_t i = 0; v && i < v->n_run && v->runs[i]->info.level == 0; i++) {
        const akvi_front *f = v->runs[i]->front;
        if (!f || left_out(v->runs[i], except, n_except))
            continue;
        bool seen = false; /* each front once: a few L0 runs to look back at */
        for (size_t j = 0; j < i && !seen; j++)
            seen = v->runs[j]->front == f && !left_out(v->runs[j], except, n_except);
        if (!seen)
            sum += akvi_front_memory(f);
    }
    return sum;
}

void akvi_fronts_init(akv_db *db)
{
    pthread_mutex_init(&db->fronts.mu, NULL);
    db->fronts.cur = NULL;
}

void akvi_fronts_free(akv_db *db)
{
    akvi_front_unref(db->fronts.cur);
    db->fronts.cur = NULL;
    pthread_mutex_destroy(&db->fronts.mu);
}

/* Keys v's L0 runs hold of front f's (as inserted). */
static uint64_t live_keys(const akvi_version *v, const akvi_front *f)
{
    uint64_t live = 0;
    for (size_t i = 0; v && i < v->n_run && v->runs[i]->info.level == 0; i++)
        if (v->runs[i]->front == f)
            live += v->runs[i]->front_keys;
    return live;
}

void akvi_front_cover_flush(akv_db *db, const akvi_version *now, const akvi_mem *m, akvi_run **runs, size_t n)
{
    /* The guard's hashes are every key the memtable was given, unless the
     * guard is off or one could not be remembered. */
    if (!db->opt.l0_front || !db->policy.mem || atomic_load(&m->hashes_lost) || n == 0 || m->n_hashes == 0)
        return;
    akvi_mutex_lock(&db->fronts.mu, AKVI_RANK_FRONT);
    akvi_front *f = db->fronts.cur;
    uint64_t add = m->n_hashes;
    if (f && (db->fronts.rotate || f->keys + add > f->cap || 2 * live_keys(now, f) < f->keys)) {
        akvi_front_unref(f);
        f = db->fronts.cur = NULL;
    }
    db->fronts.rotate = false;
    if (!f) {
        /* Room for the L0 compaction trigger's flushes of this size (at
         * most FRONT_FLUSHES): a compaction picks L0 once it holds that
         * many, and the flushes after the pick start the next front. At
         * half the budget's bits per key (akvi_front_bits). */
        uint64_t per = add > FRONT_MIN_KEYS ? add : FRONT_MIN_KEYS;
        int flushes =
            db->opt.l0_compaction_trigger < FRONT_FLUSHES ? db->opt.l0_compaction_trigger : FRONT_FLUSHES;
        f = db->fronts.cur = front_new(per * (uint64_t)flushes, akvi_front_bits(db));
    }
    if (f) {
        for (size_t i = 0; i < m->n_hashes; i++)
            insert(f, m->hashes[i]);
        for (size_t i = 0; i < n; i++) {
            if (runs[i]->info.level != 0)
                continue;
            akvi_front_ref(f);
            runs[i]->front = f;
            runs[i]->front_keys = i == 0 ? add : 0;
        }
    }
    akvi_mutex_unlock(&db->fronts.mu, AKVI_RANK_FRONT);
}

void akvi_fronts_rotate(akv_db *db)
{
    akvi_mutex_lock(&db->fronts.mu, AKVI_RANK_FRONT);
    db->fronts.rotate = true;
    akvi_mutex_unlock(&db->fronts.mu, AKVI_RANK_FRONT);
}

void akvi_front_cover_merge(akvi_run *const *in, size_t n_in, akvi_run **out, size_t n_out)
{
    if (n_in == 0)
        return;
    akvi_front *f = in[0]->front;
    uint64_t keys = 0;
    for (size_t i = 0; f && i < n_in; i++) {
        if (in[i]->front != f || in[i]->info.level != 0)
            f = NULL;
        else
            keys += in[i]->front_keys;
    }
    for (size_t i = 0; f && i < n_out; i++) {
        if (out[i]->info.level != 0)
            continue;
        akvi_front_ref(f);
        out[i]->front = f;
        out[i]->front_keys = i == 0 ? keys : 0;
    }
}
