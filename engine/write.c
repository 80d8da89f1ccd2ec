/*
 * write.c — the write path (docs/design.md, "The memtable guard"; "LSM
 * shape", stalls): under wr.mu a writer passes the stall check, chooses the
 * active memtable and inserts its keys' hashes into the guard; then, with
 * wr.mu let go, its batch is one RocksDB write to that memtable's family,
 * alongside other writers'; a full memtable is rotated and the background
 * thread woken.
 */
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "engine/internal.h"
#include "engine/lockorder.h"

/* Writes while slowed down go at most this fast, times 0.8 for every
 * memtable's worth of L0 runs (akvi_l0_weight) past the slowdown point: the
 * ramp RocksDB's write controller applies, so writers slow before they
 * stop. */
#define SLOW_WRITE_RATE (16.0 * 1024 * 1024) /* bytes per second */

static int l0_slowdown(const akv_db *db)
{
    int t = db->opt.l0_compaction_trigger, s = db->opt.l0_stall_runs;
    if (db->opt.l0_slowdown_runs > 0)
        return db->opt.l0_slowdown_runs;
    return t + (s - t) / 2;
}

/* Under wr.mu: the stalled writer's wait for the background threads, which
 * broadcast stall_cv after every turn. */
static int stall_wait(akv_db *db, bool *counted)
{
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    int err = db->bg.error;
    bool down = db->bg.shutdown;
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    if (err || down)
        return akvi_err(err ? err : AKV_EBUSY, "background flush/compaction failed; writes are stopped");
    if (!*counted) {
        atomic_fetch_add_explicit(&db->st.write_stalls, 1, memory_order_relaxed);
        *counted = true;
    }
    akvi_bg_wake(db);
    pthread_cond_wait(&db->wr.stall_cv, &db->wr.mu);
    return AKV_OK;
}

/* Under wr.mu (which rate-limits every writer while it sleeps): delay a write
 * of `bytes` when the background threads fall behind, stop it while they
 * are far behind (L0 at l0_stall_runs memtables' worth, or three memtables
 * waiting). */
static int stall(akv_db *db, uint64_t bytes)
{
    /* After a failed write or background job RocksDB has stopped: another
     * write (a synced one above all) would trip its assertions. */
    int stopped = atomic_load(&db->bg.error);
    if (stopped)
        return akvi_err(stopped, "an earlier write or background job failed; writes are stopped (reopen to recover)");
    bool counted = false;
    for (;;) {
        akvi_version *v = akvi_current(db);
        int l0 = (int)akvi_l0_weight(db, v), waiting = (int)v->n_mem - 1;
        akvi_version_unref(v);
        if (l0 < db->opt.l0_stall_runs && waiting < AKVI_MEM_WAITING_MAX) {
            int over = l0 - l0_slowdown(db) + 1;
            if (waiting >= 2 && over < 1)
                over = 1;
            if (over < 1)
                return AKV_OK;
            atomic_fetch_add_explicit(&db->st.write_slowdowns, 1, memory_order_relaxed);
            /* RocksDB's write controller steps its rate down by 0.8 */
            double secs = (double)(bytes + 64) / (SLOW_WRITE_RATE * pow(0.8, over - 1));
            struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
            nanosleep(&ts, NULL);
            return AKV_OK;
        }
        int rc = stall_wait(db, &counted);
        if (rc != AKV_OK)
            return rc;
    }
}

/* How long a writer waits for `mu` before the others let it go first. */
#define WRITER_PATIENCE_US 1000

/* A writer takes `mu`: at once when it is free and no writer is starving,
 * else it waits, and past WRITER_PATIENCE_US it counts itself starving, so
 * that the writer ahead of it does not take `mu` back first (write.h). */
static void writer_lock(akvi_writer *wr)
{
    while (atomic_load_explicit(&wr->starving, memory_order_acquire))
        sched_yield();
    if (akvi_mutex_trylock(&wr->mu, AKVI_RANK_WRITE))
        return;
    akvi_rank_check(AKVI_RANK_WRITE);
    /* timedlock's clock is the wall clock (a step of it only changes how
     * patient this one wait is); ThreadSanitizer knows timedlock, not
     * clocklock. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += WRITER_PATIENCE_US * 1000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    if (pthread_mutex_timedlock(&wr->mu, &until) != 0) {
        atomic_fetch_add_explicit(&wr->starving, 1, memory_order_acq_rel);
        pthread_mutex_lock(&wr->mu);
        atomic_fetch_sub_explicit(&wr->starving, 1, memory_order_acq_rel);
    }
    akvi_rank_take(AKVI_RANK_WRITE);
}

/* A write between its two halves: the memtable it goes to (pinned by its
 * version, and counted in m->writers) and its RocksDB batch. */
typedef struct pending {
    akvi_version *v;
    akvi_mem *m;
    rocksdb_writebatch_t *wb;
    uint64_t bytes;
} pending;

/* Under wr.mu: the stall check, the active memtable chosen, each key put
 * into its guard and the batch. The RocksDB write comes after wr.mu is let
 * go (finish), so that writers reach RocksDB together and RocksDB groups
 * them into one WAL write, as it does its own writers; a memtable rotated
 * meanwhile is flushed only once its writers are done (akvi_mem_quiesce). */
static int prepare_locked(akv_db *db, const akvi_op *ops, size_t n, pending *p)
{
    uint64_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += ops[i].klen + ops[i].vlen;
    int rc = stall(db, want);
    if (rc != AKV_OK)
        return rc;
    p->v = akvi_current(db);
    p->m = p->v->mems[0];
    p->wb = rocksdb_writebatch_create();
    p->bytes = 0;
    akvi_mem *m = p->m;
    uint8_t stackbuf[256];
    for (size_t i = 0; i < n; i++) {
        const akvi_op *op = &ops[i];
        akv_hash h = akv_hash_key(op->key, op->klen, db->seed);
        uint8_t *ik = op->klen + 8 <= sizeof stackbuf ? stackbuf : malloc(op->klen + 8);
        if (!ik) {
            rc = akvi_err(AKV_ENOMEM, "out of memory");
            break;
        }
        size_t iklen = akvi_ikey(db, h, op->key, op->klen, ik);
        /* The guard learns the key, and readers that the memtable holds
         * something, before RocksDB can show it to a reader. */
        akvi_guard_insert(db, m, h);
        atomic_store_explicit(&m->written, true, memory_order_release);
        const char *kp[1] = {(const char *)ik};
        size_t ks[1] = {iklen};
        const char *vp[2] = {(const char *)&op->tag, (const char *)op->val};
        size_t vs[2] = {1, op->tag == AKVI_TAG_PUT ? op->vlen : 0};
        rocksdb_writebatch_putv_cf(p->wb, m->cf, 1, kp, ks, 2, vp, vs);
        p->bytes += iklen + 1 + vs[1];
        if (ik != stackbuf)
            free(ik);
    }
    if (rc != AKV_OK) {
        rocksdb_writebatch_destroy(p->wb);
        akvi_version_unref(p->v);
        return rc;
    }
    atomic_fetch_add_explicit(&m->writers, 1, memory_order_acq_rel);
    return AKV_OK;
}

/* Without wr.mu: the RocksDB write; a memtable it filled is rotated (under
 * wr.mu again, unless another writer has rotated it already). */
static int finish(akv_db *db, pending *p, size_t n, bool sync)
{
    akvi_mem *m = p->m;
    char *err = NULL;
    rocksdb_write(db->rk.rdb, sync ? db->rk.wo_sync : db->rk.wo, p->wb, &err);
    rocksdb_writebatch_destroy(p->wb);
    int rc = AKV_OK;
    if (err) {
        /* RocksDB has stopped on this error (its WAL failed): so does
         * background work, which would otherwise ingest into a stopped
         * RocksDB (7.8 aborts on an assertion there). Reopen to recover. */
        rc = akvi_stop(db, akvi_rocks_err(err, "writing to the memtable"));
    }
    bool full = false;
    if (rc == AKV_OK) {
        atomic_fetch_add(&m->bytes, p->bytes);
        atomic_fetch_add(&m->entries, n);
        full = atomic_load(&m->bytes) >= db->opt.memtable_bytes;
    }
    uint64_t gen = m->gen;
    atomic_fetch_sub_explicit(&m->writers, 1, memory_order_acq_rel);
    /* Unpinned first: a rotation may wait for a flushed memtable this
     * version still holds. */
    akvi_version_unref(p->v);
    if (!full)
        return rc;
    writer_lock(&db->wr);
    akvi_version *now = akvi_current(db);
    bool active = now->mems[0]->gen == gen;
    akvi_version_unref(now);
    if (active && (rc = akvi_rotate_when_free(db)) == AKV_OK)
        akvi_bg_wake(db); /* flush the memtable just sealed */
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
    return rc;
}

int akvi_write_ops(akv_db *db, const akvi_op *ops, size_t n, bool sync)
{
    writer_lock(&db->wr);
    pending p;
    int rc = prepare_locked(db, ops, n, &p);
    akvi_mutex_unlock(&db->wr.mu, AKVI_RANK_WRITE);
    if (rc == AKV_OK)
        rc = finish(db, &p, n, sync);
    if (rc == AKV_OK)
        for (size_t i = 0; i < n; i++) {
            atomic_fetch_add_explicit(ops[i].tag == AKVI_TAG_PUT ? &db->st.puts : &db->st.deletes, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&db->st.bytes_written_user, ops[i].klen + ops[i].vlen, memory_order_relaxed);
        }
    return rc;
}

int akv_put(akv_db *db, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!db || !key || (!val && vlen))
        return akvi_err(AKV_EINVAL, "akv_put: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc == AKV_OK)
        rc = akvi_check_value(vlen);
    if (rc != AKV_OK)
        return rc;
    akvi_op op = {AKVI_TAG_PUT, key, val ? val : (const void *)"", klen, vlen};
    return akvi_write_ops(db, &op, 1, db->opt.sync);
}

int akv_delete(akv_db *db, const void *key, size_t klen)
{
    if (!db || !key)
        return akvi_err(AKV_EINVAL, "akv_delete: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc != AKV_OK)
        return rc;
    akvi_op op = {AKVI_TAG_DEL, key, (const uint8_t *)"", klen, 0};
    return akvi_write_ops(db, &op, 1, db->opt.sync);
}

void akvi_writer_init(akvi_writer *wr)
{
    pthread_mutex_init(&wr->mu, NULL);
    pthread_cond_init(&wr->stall_cv, NULL);
    atomic_init(&wr->starving, 0);
}

void akvi_writer_destroy(akvi_writer *wr)
{
    pthread_mutex_destroy(&wr->mu);
    pthread_cond_destroy(&wr->stall_cv);
}
