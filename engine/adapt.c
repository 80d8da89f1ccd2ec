/*
 * adapt.c — adaptation: a slot that let a false positive through learns it.
 *
 * Reverse map first, lock second (docs/design.md, "Adaptation"):
 *
 *   1. read the SST's keys that share the query's fingerprint prefix from
 *      the reverse map on RocksDB (revmap/rocksrevmap.c), holding no lock;
 *   2. take the slot's exclusive lock and adapt against an in-memory copy
 *      of those keys (akvi_memrevmap restricted to that prefix): the filter
 *      re-checks that the fingerprint still matches and extends it.
 *
 * The prefix a kind's adapt scans is learned per slot (scan_bits): the
 * first adaptation of a slot runs against an empty copy, which the filter's
 * scan misses (AKV_EBUSY, filter unchanged); the miss names the prefix, the
 * keys are read, and the adaptation runs again. A kind that scans several
 * prefixes for one adaptation gets as many rounds, up to MAX_ROUNDS; past
 * that the false positive is simply not fixed (adaptation is best effort,
 * never unsafe).
 *
 * A filter with no room left is rebuilt from its SST's keys with twice the
 * room (growth), also outside the slot's lock, and swapped in; once grown
 * filters hold their share of the filter memory, it is refilled in place
 * at its own size instead.
 */
#include <stdint.h>
#include <stdlib.h>

#include "engine/internal.h"
#include "engine/runstore.h"
#include "revmap/revmap.h"

void (*_Atomic akvi_hook_before_revmap_read)(void);

#define MAX_ROUNDS 4

/* Insert a key the map does not hold yet (a prefix read may contain a
 * part read before). */
static int collect(void *arg, akv_hash h)
{
    akvi_memrevmap *m = arg;
    return akvi_memrevmap_covers(m, h.hi, 64) ? AKV_OK : akvi_memrevmap_insert(m, h);
}

/* A run file read as a reverse map (revmap.h's cursor). */
static int cur_seek(void *ctx, const uint8_t *k, size_t len)
{
    return akvi_rs_iter_seek(ctx, k, len);
}
static int cur_next(void *ctx)
{
    return akvi_rs_iter_next(ctx);
}
static bool cur_valid(void *ctx)
{
    return akvi_rs_iter_valid(ctx);
}
static const uint8_t *cur_key(void *ctx, size_t *len)
{
    return akvi_rs_iter_key(ctx, len);
}

/* Add to map m the SST's keys whose slot hash starts with hi's top nbits,
 * read from RocksDB. No lock is held here. */
static int read_owners(akv_db *db, const akvi_run *r, size_t j, uint64_t hi, unsigned nbits,
                       akvi_memrevmap *m)
{
    void (*hook)(void) = atomic_load(&akvi_hook_before_revmap_read);
    if (hook)
        hook();
    akvi_sst_ref arg = {db, &r->info, &r->info.ssts[j]};
    /* Read through the run's files when open (runstore.c): the hash
     * layout's run is its own reverse map (SST j's keys are in its file),
     * the ordered layout's is the run's rmap file. */
    akvi_rs_iter *fi = NULL;
    akvi_revmap_cursor cur = {.seek = cur_seek, .next = cur_next, .valid = cur_valid, .key = cur_key};
    akvi_rs_sst *const *src = db->layout == AKV_LAYOUT_HASH ? (r->files ? &r->files[j] : NULL)
                                                            : (r->rmap_file ? &r->rmap_file : NULL);
    if (src) {
        int rc = akvi_rs_iter_new(src, 1, false, &fi);
        if (rc != AKV_OK)
            return rc;
        cur.ctx = fi;
    }
    akvi_rocksrevmap rr = {
        .db = db->rk.rdb,
        .ro = db->rk.ro,
        .cursor = fi ? &cur : NULL,
        .cf = db->layout == AKV_LAYOUT_HASH ? r->cf : r->rmap_cf,
        .seed = db->seed,
        .prefix_bits = db->layout == AKV_LAYOUT_HASH ? r->info.prefix_bits : 0,
        .prefix = r->info.ssts[j].prefix,
        .in_sst = akvi_sst_holds_user_key,
        .in_sst_arg = &arg,
    };
    int rc = akvi_rocksrevmap_init(&rr)->scan(&rr.rm, hi, nbits, collect, m);
    akvi_rs_iter_destroy(fi);
    return rc == AKV_OK ? akvi_memrevmap_cover_more(m, hi, nbits) : rc;
}

/* Adapt filter f of slot j to h: read, then lock and extend; each scan the
 * filter asks for that the copy does not hold is read and added. */
static int adapt_filter(akv_db *db, akvi_run *r, size_t j, akv_filter *f, akv_hash h)
{
    akvi_slot *s = &r->slots[j];
    unsigned bits = atomic_load(&s->scan_bits);
    akvi_memrevmap *m = NULL;
    int rc = akvi_memrevmap_create(NULL, 0, &m);
    if (rc == AKV_OK)
        rc = akvi_memrevmap_restrict(m, 0, AKV_MEMREVMAP_NOTHING);
    if (rc == AKV_OK && bits)
        rc = read_owners(db, r, j, h.hi, bits, m);
    for (int round = 0; rc == AKV_OK; round++) {
        rc = akvi_slot_adapt(s, f, h, akvi_memrevmap_revmap(m));
        uint64_t hi;
        unsigned nbits;
        if (rc != AKV_EBUSY || round + 1 == MAX_ROUNDS || !akvi_memrevmap_missed(m, &hi, &nbits))
            break;
        atomic_store(&s->scan_bits, nbits);
        rc = read_owners(db, r, j, hi, nbits, m);
    }
    akvi_memrevmap_destroy(m);
    return rc;
}

/*
 * Growth stays within bits_per_key (docs/design.md, "A full adaptive filter
 * grows"): a full filter grows while all filter memory, with this growth,
 * stays within the option grown_filter_share (default 3 %) over the budget
 * (bits_per_key over the runs' keys, akvi_filter_account); on a database
 * whose budget is under 8 × GROWN_FLOOR, GROWN_FLOOR bytes over it, so
 * that a few thousand keys under an attacker's replays can still grow a
 * slot or two (as the guard's minimum, this puts a tiny database's total
 * over B). The grown filters leave with their runs. Past it a full filter is refilled
 * in place: rebuilt at its own size from its SST's
 * keys, pre-adapted to the miss log's negatives in its range with half its
 * room, the rest of what it had learned forgotten.
 */
#define GROWN_FLOOR (16u << 10)

static bool may_grow(akv_db *db, size_t more)
{
    double share = db->opt.grown_filter_share;
    if (!(share > 0))
        return false;
    akvi_filter_total t;
    akvi_filter_account(db, &t);
    double over = share * t.budget;
    if (t.budget < 8.0 * GROWN_FLOOR && over < GROWN_FLOOR)
        over = GROWN_FLOOR;
    return t.held + (double)more <= t.budget + over;
}

/*
 * A filter's room for adaptations is fixed when it is built; a small SST
 * under a steady stream of fresh false positives uses it up, and from then
 * on every replayed key would cost a probe again. So a full filter is
 * rebuilt from the keys its SST holds (never a key it does not hold) with
 * twice the room, pre-adapted to the miss log's negatives in its range, and
 * swapped in. `full` is the filter that reported AKV_EFULL; if another
 * thread already replaced it, there is nothing to do.
 */
#define MAX_GROWS 6 /* at most 2^6 times the size it was built with */

static int grow_slot(akv_db *db, akvi_run *r, size_t j, akv_filter *full)
{
    akvi_slot *s = &r->slots[j];
    const akvi_cat_sst *sst = &r->info.ssts[j];
    uint64_t grows = atomic_load(&s->grows);
    if (atomic_load(&s->f) != full)
        return AKV_OK;
    /* Sized for 2^(g+1) times its keys, so each growth doubles the room; a
     * filter grown before a restart (the count starts over) is already
     * larger, so keep doubling until the new one is bigger than the full. */
    size_t old_bytes = akv_filter_memory(full);
    akv_filter *f = NULL;
    int rc = AKV_OK;
    for (uint64_t g = grows + 1; rc == AKV_OK && !f; g++) {
        if (g > MAX_GROWS)
            return akvi_err(AKV_EFULL, "filter slot %llu-%llu is full and cannot grow further",
                            (unsigned long long)r->info.id, (unsigned long long)sst->id);
        rc = akvi_build_from_sst(db, r, j, (sst->keys + 64) << g, &f);
        if (rc == AKV_OK && f->kind != full->kind) { /* a fallback kind: keep the adaptive one */
            akv_filter_destroy(f);
            return akvi_err(AKV_EFULL, "could not grow a %s filter", full->kind->name);
        }
        if (rc == AKV_OK && akv_filter_memory(f) <= old_bytes) {
            akv_filter_destroy(f);
            f = NULL;
        }
    }
    if (rc != AKV_OK)
        return rc;
    /* Built at what the budget leaves its run now, it may be more than
     * twice the full one: checked again at its size. */
    size_t bytes = akv_filter_memory(f);
    if (!may_grow(db, bytes)) {
        akv_filter_destroy(f);
        return AKV_EFULL;
    }
    /* Two readers may have grown the same full filter at once: the first
     * swap wins, the other's work is dropped. */
    rc = akvi_slot_swap(s, full, f);
    if (rc != AKV_OK) {
        akv_filter_destroy(f);
    } else {
        atomic_fetch_add(&s->grows, 1);
        atomic_fetch_add(&db->st.filter_grows, 1);
        /* Within bits_per_key: what the slot holds beyond its build is in
         * its memory, which the slots built from now on leave room for
         * (level_bits); counted here for the statistics, given back when
         * the run is freed (grave.c). */
        atomic_fetch_add(&s->grown_bytes, bytes);
        atomic_fetch_add(&db->grown_bytes, bytes);
    }
    return rc == AKV_NOTFOUND ? AKV_OK : rc;
}

/* One thread refills a slot's filter at a time; the others' false
 * positives meanwhile are left unfixed (adaptation is best effort). */
static int refill_slot(akv_db *db, akvi_run *r, size_t j, akv_filter *full)
{
    akvi_slot *s = &r->slots[j];
    if (atomic_load(&s->f) != full || atomic_exchange(&s->refilling, true))
        return AKV_EBUSY;
    int rc = akvi_refill_from_sst(db, r, j, full);
    atomic_store(&s->refilling, false);
    if (rc == AKV_OK) {
        atomic_fetch_add(&s->refills, 1);
        atomic_fetch_add(&db->st.filter_refills, 1);
        atomic_store(&s->dirty, true);
    }
    return rc;
}

/* Room for one more adaptation of a full filter: grown, or refilled (only
 * a kind whose mutations may run beside queries is refilled: queries hold
 * no lock on it). */
static int make_room(akv_db *db, akvi_run *r, size_t j, akv_filter *full)
{
    if (may_grow(db, 2 * akv_filter_memory(full))) {
        int rc = grow_slot(db, r, j, full);
        if (rc != AKV_EFULL) /* grown, or failed; full: refilled below */
            return rc;
    }
    bool refillable = full->kind->refill && (full->kind->flags & AKV_FK_CONCURRENT);
    return refillable ? refill_slot(db, r, j, full) : AKV_EFULL;
}

/*
 * Adaptation where it pays (docs/design.md): fixing a false positive costs
 * a reverse-map read and the slot's exclusive lock, and only pays for a key
 * that comes back. A fresh absent key that will never return is not worth
 * it; so, in the spirit of ski rental, a key's first false positive is
 * paid as a wasted probe and remembered (a 32-bit tag of its hash in a
 * direct-mapped table, overwritten by later ones on a coin toss), and its
 * second is fixed. A key the miss log already holds (looked up in vain
 * before: hot, or an earlier false positive the table forgot) is fixed at
 * once.
 *
 * Renting stops when it keeps costing, and whether it does is measured on
 * a sample, so that the measurement does not depend on how many keys come
 * back: a pool of replayed keys many times the table would overwrite every
 * entry before its key came back, and read as a fresh stream. One first
 * false positive in 2^k (a coin; k = SAMPLE_SHIFT + db->ad.thin) is a
 * *sample*: left unfixed and remembered in a region of the table of its
 * own (SAMPLE entries, which only a later sample takes over, on a coin
 * toss), its tag carrying the k it was drawn at. Counted in first false
 * positives (a sample weighs 2^fp_thin): fp_left, the samples left;
 * fp_back, those that came back as a second (then fixed), weighed at the
 * rate they were drawn at, so a change of rate between a sample and its
 * comeback does not tilt the ratio; fp_lost, those a later sample took the
 * place of first. Past WINDOW samples' weight, the rate follows the
 * region's churn: while more is lost than comes back, k grows by one (a
 * sample then stays twice as long: about 2 × SAMPLE × 2^k first false
 * positives), and while less than a quarter as much is lost, it shrinks,
 * to SAMPLE_SHIFT at least; then the three counts are halved. A replayed
 * pool of any size thus ends up sampled slowly enough for its samples to
 * come back while they are remembered. While what came back is at least
 * 1/BACK_ONE_IN of what was left, every first false positive but the
 * samples is fixed at once. An attacker who replays what cost a probe, or
 * a skewed stream, then pays one probe per key (and a sampled key a
 * second); a fresh-key stream, whose keys never come back, pays no
 * adaptation.
 */
#define SAMPLE       (1u << 13) /* entries of db->ad.seen that hold samples: 32 KiB */
#define SAMPLE_SHIFT 3          /* at most one first false positive in 8 is a sample */
#define MAX_THIN     9          /* at least one in 2^12 */
#define THIN_BITS    0xfu       /* a sample's tag: fp_thin + 1 in its low bits, never 0 */
#define WINDOW       256        /* samples */
#define MIN_LEFT     16         /* samples */
#define BACK_ONE_IN  4

_Static_assert(SAMPLE < AKVI_FP_SEEN / 4, "most of the table remembers unsampled keys");
_Static_assert(MAX_THIN + 1 <= THIN_BITS, "a sample's rate fits its tag");

/* This thread's coin for samples and replacements (xorshift64). */
static _Thread_local uint64_t t_coin;

static uint64_t coin(void)
{
    uint64_t x = t_coin ? t_coin : akv_mix64((uint64_t)(uintptr_t)&t_coin) | 1;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    t_coin = x;
    return x;
}

static uint32_t load(_Atomic uint32_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

static void store(_Atomic uint32_t *c, uint32_t v)
{
    atomic_store_explicit(c, v, memory_order_relaxed);
}

static void add(_Atomic uint32_t *c, uint32_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* Take entry e out if it holds `was` (a comeback): whether it did. */
static bool take(_Atomic uint32_t *e, uint32_t was)
{
    return atomic_compare_exchange_strong_explicit(e, &was, 0, memory_order_relaxed, memory_order_relaxed);
}

/* One more sample left, weighing w: past WINDOW samples, the rate follows
 * the churn and the counts are halved (approximate under races; only the
 * ratios matter). */
static void sample_left(akv_db *db, uint32_t thin)
{
    uint32_t w = 1u << thin;
    if (atomic_fetch_add_explicit(&db->ad.left, w, memory_order_relaxed) + w <= (uint32_t)WINDOW << thin)
        return;
    uint32_t back = load(&db->ad.back), lost = load(&db->ad.lost), left = load(&db->ad.left);
    if (lost > back && thin < MAX_THIN)
        store(&db->ad.thin, thin + 1);
    else if (4 * lost < back && thin > 0)
        store(&db->ad.thin, thin - 1);
    store(&db->ad.left, left / 2);
    store(&db->ad.back, back / 2);
    store(&db->ad.lost, lost / 2);
}

bool akvi_adapt_pays(akv_db *db, akv_hash h, const void *key, size_t klen)
{
    uint32_t tag = (uint32_t)(h.hi >> 32);
    uint64_t m = akv_mix64(h.lo);
    _Atomic uint32_t *sample = &db->ad.seen[m & (SAMPLE - 1)];
    _Atomic uint32_t *kept = &db->ad.seen[SAMPLE + (size_t)(((m >> 32) * (AKVI_FP_SEEN - SAMPLE)) >> 32)];
    uint32_t was = load(sample);
    if (was != 0 && (was & ~THIN_BITS) == (tag & ~THIN_BITS) && take(sample, was)) {
        /* A sample came back: counted at the rate it was drawn at, and
         * only while what came back does not outweigh what was left (a
         * burst of old samples coming back right after the counts were
         * halved cannot tip the rule alone). */
        if (load(&db->ad.back) < load(&db->ad.left))
            add(&db->ad.back, 1u << ((was & THIN_BITS) - 1));
        return true;
    }
    uint32_t ktag = tag | 1; /* never the empty 0 */
    if (load(kept) == ktag && take(kept, ktag))
        return true; /* a second false positive */
    if (akvi_misslog_holds(db->ml, h, key, klen))
        return true;
    uint64_t x = coin();
    uint32_t thin = load(&db->ad.thin);
    if ((x >> (64 - SAMPLE_SHIFT - thin)) == 0) {
        /* A sample takes an entry another sample holds on a coin toss
         * only, as below; one that loses it is no sample. */
        was = load(sample);
        if (was == 0 || (x & 1)) {
            store(sample, (tag & ~THIN_BITS) | (thin + 1));
            if (was != 0)
                add(&db->ad.lost, 1u << ((was & THIN_BITS) - 1));
            sample_left(db, thin);
            return false;
        }
    }
    /* An entry another key holds is taken over on a coin toss only: with
     * two replayed keys on one entry, always taking it would let each evict
     * the other at every pass, forever; so each pass fixes a share of what
     * is left. */
    if (load(kept) == 0 || (x & 2))
        store(kept, ktag);
    uint32_t left = load(&db->ad.left);
    return left >= (uint32_t)MIN_LEFT << thin &&
           load(&db->ad.back) * BACK_ONE_IN >= left; /* many come back: buy now */
}

int akvi_adapt_slot(akv_db *db, akvi_run *r, size_t j, akv_hash h)
{
    akvi_slot *s = &r->slots[j];
    akv_filter *f = atomic_load(&s->f);
    int rc = adapt_filter(db, r, j, f, h);
    if (rc == AKV_EFULL && make_room(db, r, j, f) == AKV_OK) {
        f = atomic_load(&s->f);
        /* The rebuilt or refilled filter may already reject h (pre-adapted
         * to it). */
        akvi_slot_lock(s, false);
        bool yes = akv_filter_may_contain(f, h);
        akvi_slot_unlock(s);
        rc = yes ? adapt_filter(db, r, j, f, h) : AKV_OK;
    }
    return rc;
}

int akvi_adapt_rule_init(akvi_adapt_rule *ad)
{
    ad->seen = calloc(AKVI_FP_SEEN, sizeof *ad->seen);
    return ad->seen ? AKV_OK : AKV_ENOMEM;
}

void akvi_adapt_rule_destroy(akvi_adapt_rule *ad)
{
    free((void *)ad->seen);
    ad->seen = NULL;
}
