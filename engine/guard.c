/*
 * guard.c — the memtable guard: one dynamic filter (sscf/cbf) over the keys
 * of all live memtables (docs/design.md, "The memtable guard").
 *
 * A write inserts its key's hash before the RocksDB write, so a reader that
 * can see the value can also see the hash. When a memtable has been flushed
 * and its run installed, its hashes are removed again; readers still
 * holding an older version then see `flushed` and probe that memtable
 * directly, so a removal can never turn into a false negative.
 *
 * Sized by what the memtables hold, not by a worst case: 3/2 of the keys of
 * the live memtables, at least GUARD_MIN, and at least 5/4 of the keys the
 * last flushed memtable held (or 3/4 of the figure before, after a small
 * flush), so that once a memtable has been flushed the
 * guard keeps one size while the next one fills (its memory counts in the
 * filter budget: a constant size is one the runs can leave room for). An
 * insert that finds it full rebuilds it at 3/2 of the keys right away (from
 * the hashes each memtable remembers; amortised, like a growing array),
 * and a flush that leaves it more than 5/4 of that size rebuilds it
 * smaller. If a rebuild fails the
 * guard is marked broken (all memtables probed) and rebuilt at the next
 * flush.
 */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/clock.h"
#include "util/grow.h"

#define GUARD_MIN AKVI_GUARD_MIN

/* The guard's memory is averaged over about this long for the runs'
 * budget (akvi_guard_memory_parts). Tests shorten it. */
_Atomic double akvi_guard_avg_seconds = 60.0;

/* Under guard.lock: the guard's memory averaged over time, up to `now`
 * (an exponential average; the guard's size changes only when swapped). */
static double guard_avg_at(const akv_db *db, double now)
{
    double cur = db->guard.f ? (double)akv_filter_memory(db->guard.f) : 0;
    double w = 1 - exp(-(now - db->guard.avg_since) / atomic_load(&akvi_guard_avg_seconds));
    return db->guard.avg + w * (cur - db->guard.avg);
}

/* Keys a guard is made for when the live memtables hold `needed`. */
static uint64_t guard_capacity(const akv_db *db, size_t needed)
{
    uint64_t mem = atomic_load_explicit(&db->guard.mem_keys, memory_order_relaxed);
    uint64_t cap = (uint64_t)needed + needed / 2, last = mem + mem / 4;
    cap = cap < last ? last : cap;
    return cap < GUARD_MIN ? GUARD_MIN : cap;
}

/* The heaviest miss-log negatives, for a guard to encode before its first
 * insert (ada-SSCF); kinds without negatives ignore them. */
#define GUARD_NEGATIVES 1024

static int guard_new(akv_db *db, uint64_t cap, akv_filter **out)
{
    akv_negative *neg = NULL;
    size_t n_neg = db->ml ? akvi_misslog_collect(db->ml, NULL, NULL, GUARD_NEGATIVES, &neg) : 0;
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = cap;
    /* Counting kinds spend several bits per counter. A guard false
     * positive costs a memtable probe in memory, not a disk read, so the
     * guard gets 3 × bits_per_key bits per key of capacity: 7.5 counters
     * per key at 10 bits/key, 15 per key it holds just after it grew
     * (docs/design.md, "The memtable guard"). */
    p.bits_per_key = db->opt.bits_per_key * 3;
    p.seed = db->seed;
    akv_filter *f = NULL;
    int rc = akv_filter_create(db->policy.mem, &p, neg, n_neg, &f);
    if (rc != AKV_OK && n_neg) /* never fail for the sake of a hint */
        rc = akv_filter_create(db->policy.mem, &p, NULL, 0, &f);
    free(neg);
    if (rc == AKV_OK)
        rc = akv_filter_finish(f);
    if (rc != AKV_OK) {
        akv_filter_destroy(f);
        return akvi_err(rc, "creating the memtable guard (%s): %s", db->policy.mem->name, akv_strerror(rc));
    }
    *out = f;
    return AKV_OK;
}

int akvi_guard_init(akv_db *db)
{
    akvi_slot_init(&db->guard.stats, NULL);
    if (!db->policy.mem)
        return AKV_OK;
    db->guard.cap = guard_capacity(db, 0);
    akv_filter *g = NULL;
    int rc = guard_new(db, db->guard.cap, &g);
    atomic_store(&db->guard.f, g);
    db->guard.avg = db->guard.f ? (double)akv_filter_memory(db->guard.f) : 0;
    db->guard.avg_since = akvi_mono_seconds();
    return rc;
}

/* Hashes taken out of the guard per hold of wr.mu (akvi_guard_remove_mem). */
#define GUARD_REMOVE_CHUNK 4096

/* Mutations take the lock exclusively unless the kind locks internally. */
static void guard_lock_mut(akv_db *db)
{
    if (db->policy.mem->flags & AKV_FK_CONCURRENT)
        akvi_rw_rdlock(&db->guard.lock, AKVI_RANK_GUARD);
    else
        akvi_rw_wrlock(&db->guard.lock, AKVI_RANK_GUARD);
}

static int remember(akvi_mem *m, akv_hash h)
{
    akv_hash *p = akvi_grow(m->hashes, &m->cap_hashes, m->n_hashes + 1, sizeof *p, 1024);
    if (!p)
        return AKV_ENOMEM;
    m->hashes = p;
    m->hashes[m->n_hashes++] = h;
    return AKV_OK;
}

static bool in_version(const akvi_version *v, const akvi_mem *m)
{
    for (size_t i = 0; i < v->n_mem; i++)
        if (v->mems[i] == m)
            return true;
    return false;
}

static void retire(akv_db *db, akv_filter *old);

/* Under wr.mu (or alone, at open): a fresh guard over the hashes the guard
 * must hold: every memtable of the current version, the flushed one whose
 * hashes akvi_guard_remove_mem has not taken out yet (it will remove them
 * from this guard), and `also` (a memtable being recovered, in no version
 * yet). False, and the old guard kept, when it cannot be built. */
static bool guard_rebuild(akv_db *db, const akvi_mem *also)
{
    akvi_version *v = akvi_current(db);
    const akvi_mem *draining = db->guard.draining;
    size_t n = v->n_mem, need = 0;
    const akvi_mem **mems = malloc((n + 2) * sizeof *mems);
    if (!mems) {
        akvi_version_unref(v);
        return false;
    }
    memcpy(mems, v->mems, n * sizeof *mems);
    if (draining && !in_version(v, draining))
        mems[n++] = draining;
    if (also && also != draining && !in_version(v, also))
        mems[n++] = also;
    for (size_t i = 0; i < n; i++)
        need += mems[i]->n_hashes;
    akv_filter *f = NULL;
    uint64_t cap = guard_capacity(db, need);
    bool ok = guard_new(db, cap, &f) == AKV_OK;
    for (size_t i = 0; ok && i < n; i++)
        for (size_t j = 0; ok && j < mems[i]->n_hashes; j++)
            ok = akv_filter_insert(f, mems[i]->hashes[j]) == AKV_OK;
    free(mems);
    akvi_version_unref(v);
    db->guard.keys = need;
    if (!ok) {
        akv_filter_destroy(f);
        akvi_log(db, "memtable guard rebuild failed; memtables are probed directly");
        return false;
    }
    akvi_rw_wrlock(&db->guard.lock, AKVI_RANK_GUARD);
    double now = akvi_mono_seconds();
    db->guard.avg = guard_avg_at(db, now);
    db->guard.avg_since = now;
    /* Odd while the guard and its flag change together (akvi_guard_may_contain). */
    atomic_fetch_add(&db->guard.gen, 1);
    akv_filter *old = atomic_exchange(&db->guard.f, f);
    db->guard.cap = cap;
    atomic_store(&db->guard.broken, false);
    atomic_fetch_add(&db->guard.gen, 1);
    akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
    retire(db, old);
    return true;
}

/* ---- replaced guards ------------------------------------------------------ */

/* A replaced guard that gets pinned by hazard may still query: freed once
 * the pins taken before its replacement have ended. Under wr.mu (or alone). */
typedef struct akvi_guard_retired {
    akv_filter *f;
    akvi_pin_snapshot pins;
    struct akvi_guard_retired *next;
} akvi_guard_retired;

static void sweep(akv_db *db)
{
    for (akvi_guard_retired **p = &db->guard.retired; *p;) {
        akvi_guard_retired *r = *p;
        if (akvi_pins_passed(db, &r->pins)) {
            *p = r->next;
            akv_filter_destroy(r->f);
            free(r);
        } else {
            p = &r->next;
        }
    }
}

static void retire(akv_db *db, akv_filter *old)
{
    if (!old)
        return;
    akvi_guard_retired *r = malloc(sizeof *r);
    if (!r) { /* no room to keep it: wait for the gets that may hold it (short) */
        akvi_pin_snapshot s;
        akvi_pins_snapshot(db, &s);
        while (!akvi_pins_passed(db, &s))
            sched_yield();
        akv_filter_destroy(old);
        return;
    }
    r->f = old;
    akvi_pins_snapshot(db, &r->pins);
    r->next = db->guard.retired;
    db->guard.retired = r;
    sweep(db);
}

void akvi_guard_free(akv_db *db)
{
    akv_filter_destroy(atomic_exchange(&db->guard.f, NULL));
    while (db->guard.retired) {
        akvi_guard_retired *r = db->guard.retired;
        db->guard.retired = r->next;
        akv_filter_destroy(r->f);
        free(r);
    }
}

/* h into the guard for memtable m. Past its capacity (counting kinds
 * accept more, at a rising false positive rate) or full, the guard is
 * rebuilt at twice the keys right away when `grow` (a live database, under
 * wr.mu), else marked broken (memtables being re-read at open, which are in
 * no version yet: akvi_guard_refit follows). Precedes the RocksDB write. */
static void guard_add(akv_db *db, akvi_mem *m, akv_hash h, bool grow)
{
    if (!db->policy.mem)
        return;
    if (remember(m, h) != AKV_OK) {
        atomic_store(&m->hashes_lost, true);
        atomic_store(&db->guard.broken, true);
        return;
    }
    bool over = ++db->guard.keys > db->guard.cap;
    if (over || atomic_load(&db->guard.broken)) {
        if (!(grow && over && guard_rebuild(db, m)))
            atomic_store(&db->guard.broken, true);
        return;
    }
    guard_lock_mut(db);
    int rc = akv_filter_insert(db->guard.f, h);
    akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
    if (rc != AKV_OK && !(grow && guard_rebuild(db, m)))
        atomic_store(&db->guard.broken, true);
}

int akvi_guard_insert(akv_db *db, akvi_mem *m, akv_hash h)
{
    guard_add(db, m, h, true);
    return AKV_OK;
}

void akvi_guard_recover_insert(akv_db *db, akvi_mem *m, akv_hash h)
{
    guard_add(db, m, h, false);
}

void akvi_guard_refit(akv_db *db)
{
    if (db->policy.mem && (atomic_load(&db->guard.broken) || db->guard.keys > db->guard.cap))
        (void)guard_rebuild(db, NULL);
}

/* A "no" is trusted only if, read after the query, the guard was not
 * broken and the memtable not flushed (its keys may be leaving the guard).
 * The fence pairs with the one in akvi_guard_remove_mem: kinds that mutate
 * with relaxed atomics give no ordering of their own. */
static bool query(akv_db *db, const akvi_mem *m, akv_hash h)
{
    if (akv_filter_may_contain(atomic_load(&db->guard.f), h))
        return true;
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load(&db->guard.broken) || atomic_load(&m->flushed);
}

bool akvi_guard_may_contain(akv_db *db, const akvi_mem *m, akv_hash h, bool pinned)
{
    if (!db->policy.mem)
        return true;
    akvi_slot_ctr *c = akvi_slot_ctr_of(&db->guard.stats);
    atomic_fetch_add_explicit(&c->queries, 1, memory_order_relaxed);
    bool yes = false, done = false;
    /* Without the lock (a concurrent kind, a hazard-pinned get): the guard
     * and the flag are read between two even, equal values of guard_gen,
     * so they belong together; the pin keeps the guard read alive (retire). */
    if (pinned && (db->policy.mem->flags & AKV_FK_CONCURRENT)) {
        uint64_t gen = atomic_load(&db->guard.gen);
        if (!(gen & 1)) {
            yes = query(db, m, h);
            done = atomic_load(&db->guard.gen) == gen;
        }
    }
    if (!done) { /* under the lock: a rebuild swaps guard and flag together */
        akvi_rw_rdlock(&db->guard.lock, AKVI_RANK_GUARD);
        yes = query(db, m, h);
        akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
    }
    if (!yes)
        atomic_fetch_add_explicit(&c->filtered, 1, memory_order_relaxed);
    return yes;
}

void akvi_guard_absorb(akv_db *db, akv_hash h)
{
    if (!db->policy.mem || !db->policy.mem->absorb || atomic_load(&db->guard.broken))
        return;
    guard_lock_mut(db);
    (void)akv_filter_absorb(db->guard.f, h);
    akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
}

void akvi_guard_draining(akv_db *db, akvi_mem *m)
{
    akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
    db->guard.draining = m;
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
}

void akvi_guard_remove_mem(akv_db *db, akvi_mem *m)
{
    atomic_store(&m->flushed, true);
    atomic_thread_fence(memory_order_seq_cst); /* see akvi_guard_may_contain */
    if (!db->policy.mem)
        return;
    /* In chunks under wr.mu, so that writers wait for one chunk at a time
     * rather than for the whole memtable (130,000 hashes of 100-byte
     * records held them 20-56 ms). While m is draining, a rebuild between
     * two chunks (a writer's, when the guard fills) puts all of m's hashes
     * into the new guard: the removal then starts over on it, so a hash is
     * never taken out of a guard that does not hold it. */
    akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
    uint64_t gen = atomic_load(&db->guard.gen); /* a rebuild moves it on */
    for (size_t i = 0; i < m->n_hashes && !atomic_load(&db->guard.broken);) {
        if (atomic_load(&db->guard.gen) != gen) {
            gen = atomic_load(&db->guard.gen);
            i = 0;
        }
        size_t end = m->n_hashes - i > GUARD_REMOVE_CHUNK ? i + GUARD_REMOVE_CHUNK : m->n_hashes;
        guard_lock_mut(db);
        for (; i < end; i++)
            (void)akv_filter_remove(db->guard.f, m->hashes[i]);
        akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
        if (i < m->n_hashes) { /* let a waiting writer in */
            akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
            sched_yield();
            akvi_mutex_lock(&db->wr.mu, AKVI_RANK_WRITE);
        }
    }
    sweep(db); /* replaced guards whose readers are gone */
    if (db->guard.draining == m)
        db->guard.draining = NULL;
    /* Rebuild when broken, or smaller when it is more than 5/4 of the size
     * what is left in the memtables needs (it grew while memtables waited
     * for their flush). */
    db->guard.keys -= db->guard.keys < m->n_hashes ? db->guard.keys : m->n_hashes;
    /* A small flush (akv_flush, a settle) lowers it a quarter at a time. */
    uint64_t mem = atomic_load_explicit(&db->guard.mem_keys, memory_order_relaxed);
    mem -= mem / 4;
    atomic_store_explicit(&db->guard.mem_keys, m->n_hashes > mem ? m->n_hashes : mem, memory_order_relaxed);
    free(m->hashes);
    m->hashes = NULL;
    m->n_hashes = m->cap_hashes = 0;
    uint64_t fit = guard_capacity(db, db->guard.keys);
    if (atomic_load(&db->guard.broken) || db->guard.cap > fit + fit / 4)
        (void)guard_rebuild(db, NULL);
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
}

void akvi_guard_memory_parts(akv_db *db, akvi_guard_mem *out)
{
    memset(out, 0, sizeof *out);
    if (!db->policy.mem)
        return;
    akvi_rw_rdlock(&db->guard.lock, AKVI_RANK_GUARD);
    out->avg = guard_avg_at(db, akvi_mono_seconds());
    out->now = db->guard.f ? akv_filter_memory(db->guard.f) : 0;
    /* A guard's memory is proportional to the keys it is sized for. */
    if (db->guard.f && db->guard.cap) {
        out->floor = (double)out->now * GUARD_MIN / (double)db->guard.cap;
        out->planned = (double)out->now * (double)guard_capacity(db, 0) / (double)db->guard.cap;
    }
    akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
}

size_t akvi_guard_memory(akv_db *db)
{
    if (!db->policy.mem)
        return 0;
    akvi_rw_rdlock(&db->guard.lock, AKVI_RANK_GUARD);
    size_t m = db->guard.f ? akv_filter_memory(db->guard.f) : 0;
    akvi_rw_unlock(&db->guard.lock, AKVI_RANK_GUARD);
    return m;
}
