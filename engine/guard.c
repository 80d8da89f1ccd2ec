/*
 * guard.c — the memtable guard: one dynamic filter (sscf/cbf) over the keys
 * of all live memtables (docs/design.md, "The memtable guard").
 *
 * A write inserts its key's hash before the RocksDB write, so a reader that
 * can see the value can also see the hash. When a memtable has been flushed
 * and its run installed, its hashes are removed again; readers still
 * holding an older version then see `flushed` and probe that memtable
 * directly, so a removal can never turn into a false negative. If the guard
 * ever refuses an insert (full), it is marked broken (all memtables probed)
 * and rebuilt at the next flush.
 */
#include <stdlib.h>

#include "engine/internal.h"
#include "util/grow.h"

/*
 * Keys the guard should hold: two live memtables (one filling, one being
 * flushed). Before the first flush the entry size is unknown, so guess
 * 256-byte entries; a guard that overflows is not wrong, only "broken"
 * (memtables are probed directly) until the next flush rebuilds it from the
 * key counts actually seen, with 25% headroom.
 */
static uint64_t guard_capacity(const akv_db *db, size_t needed)
{
    uint64_t seen = atomic_load(&db->guard_observed);
    uint64_t cap = seen ? seen * 2 + seen / 2 : db->opt.memtable_bytes / 256 * 2;
    if (cap < (1u << 12))
        cap = 1u << 12;
    if (cap < 2 * (uint64_t)needed)
        cap = 2 * (uint64_t)needed;
    return cap;
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
    /* Counting kinds spend several bits per counter: give the guard as
     * many counters per key as a plain filter gets bits, so its false
     * positive rate is comparable to the run slots'. */
    p.bits_per_key = db->opt.bits_per_key * 6;
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
    akvi_slot_init(&db->guard_stats, NULL);
    if (!db->policy.mem)
        return AKV_OK;
    db->guard_cap = guard_capacity(db, 0);
    return guard_new(db, db->guard_cap, &db->guard);
}

/* Mutations take the lock exclusively unless the kind locks internally. */
static void guard_lock_mut(akv_db *db)
{
    if (db->policy.mem->flags & AKV_FK_CONCURRENT)
        pthread_rwlock_rdlock(&db->guard_lock);
    else
        pthread_rwlock_wrlock(&db->guard_lock);
}

static int remember(akvi_mem *m, akv_hash h)
{
    akv_hash *p = akv_grow(m->hashes, &m->cap_hashes, m->n_hashes + 1, sizeof *p, 1024);
    if (!p)
        return AKV_ENOMEM;
    m->hashes = p;
    m->hashes[m->n_hashes++] = h;
    return AKV_OK;
}

int akvi_guard_insert(akv_db *db, akvi_mem *m, akv_hash h)
{
    if (!db->policy.mem)
        return AKV_OK;
    if (remember(m, h) != AKV_OK) {
        atomic_store(&db->guard_broken, true);
        return AKV_OK;
    }
    if (atomic_load(&db->guard_broken))
        return AKV_OK;
    guard_lock_mut(db);
    int rc = akv_filter_insert(db->guard, h);
    pthread_rwlock_unlock(&db->guard_lock);
    if (rc != AKV_OK)
        atomic_store(&db->guard_broken, true); /* must precede the RocksDB write */
    return AKV_OK;
}

bool akvi_guard_may_contain(akv_db *db, const akvi_mem *m, akv_hash h)
{
    if (!db->policy.mem)
        return true;
    atomic_fetch_add_explicit(&db->guard_stats.queries, 1, memory_order_relaxed);
    pthread_rwlock_rdlock(&db->guard_lock);
    bool yes = akv_filter_may_contain(db->guard, h);
    /* A "no" is trusted only if, read after the query, the guard was not
     * broken (read under the lock: a rebuild swaps guard and flag together)
     * and the memtable not flushed (its keys may be leaving the guard). The
     * fence pairs with the one in akvi_guard_remove_mem: kinds that mutate
     * with relaxed atomics give no ordering of their own. */
    if (!yes) {
        atomic_thread_fence(memory_order_seq_cst);
        yes = atomic_load(&db->guard_broken) || atomic_load(&m->flushed);
    }
    pthread_rwlock_unlock(&db->guard_lock);
    if (!yes)
        atomic_fetch_add_explicit(&db->guard_stats.filtered, 1, memory_order_relaxed);
    return yes;
}

void akvi_guard_absorb(akv_db *db, akv_hash h)
{
    if (!db->policy.mem || !db->policy.mem->absorb || atomic_load(&db->guard_broken))
        return;
    guard_lock_mut(db);
    (void)akv_filter_absorb(db->guard, h);
    pthread_rwlock_unlock(&db->guard_lock);
}

/* Under wmu: a fresh guard over every memtable of the current version. */
static void guard_rebuild(akv_db *db)
{
    akvi_version *v = akvi_current(db);
    size_t need = 0;
    for (size_t i = 0; i < v->n_mem; i++)
        need += v->mems[i]->n_hashes;
    akv_filter *f = NULL;
    uint64_t cap = guard_capacity(db, need);
    bool ok = guard_new(db, cap, &f) == AKV_OK;
    for (size_t i = 0; ok && i < v->n_mem; i++)
        for (size_t j = 0; ok && j < v->mems[i]->n_hashes; j++)
            ok = akv_filter_insert(f, v->mems[i]->hashes[j]) == AKV_OK;
    akvi_version_unref(v);
    if (!ok) {
        akv_filter_destroy(f);
        akvi_log(db, "memtable guard rebuild failed; memtables are probed directly");
        return;
    }
    pthread_rwlock_wrlock(&db->guard_lock);
    akv_filter *old = db->guard;
    db->guard = f;
    db->guard_cap = cap;
    atomic_store(&db->guard_broken, false);
    pthread_rwlock_unlock(&db->guard_lock);
    akv_filter_destroy(old);
}

void akvi_guard_remove_mem(akv_db *db, akvi_mem *m)
{
    atomic_store(&m->flushed, true);
    atomic_thread_fence(memory_order_seq_cst); /* see akvi_guard_may_contain */
    if (!db->policy.mem)
        return;
    if (!atomic_load(&db->guard_broken)) {
        guard_lock_mut(db);
        for (size_t i = 0; i < m->n_hashes; i++)
            (void)akv_filter_remove(db->guard, m->hashes[i]);
        pthread_rwlock_unlock(&db->guard_lock);
    }
    uint64_t seen = atomic_load(&db->guard_observed);
    if (m->n_hashes > seen)
        atomic_store(&db->guard_observed, (uint64_t)m->n_hashes);
    /* 2×: YCSB-style 1 KB values against the 256-byte guess leave a guard
     * ~3.5× too big, which dominated filter memory in the benchmarks. */
    bool oversized = !seen && db->guard_cap > 2 * guard_capacity(db, 0);
    free(m->hashes);
    m->hashes = NULL;
    m->n_hashes = m->cap_hashes = 0;
    /* Rebuild when broken, or once after the first flush when the initial
     * guess proved far too large (its memory is wasted otherwise). */
    if (atomic_load(&db->guard_broken) || oversized) {
        pthread_mutex_lock(&db->wmu);
        guard_rebuild(db);
        pthread_mutex_unlock(&db->wmu);
    }
}

size_t akvi_guard_memory(akv_db *db)
{
    if (!db->policy.mem)
        return 0;
    pthread_rwlock_rdlock(&db->guard_lock);
    size_t m = db->guard ? akv_filter_memory(db->guard) : 0;
    pthread_rwlock_unlock(&db->guard_lock);
    return m;
}
