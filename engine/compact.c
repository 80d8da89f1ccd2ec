/*
 * compact.c — leveled compaction at the grain of runs (docs/design.md,
 * "LSM shape").
 *
 * L0 holds whole flushed memtables, newest first. Every level >= 1 is a
 * set of runs with disjoint key ranges (hash ranges in the hash layout),
 * each cut at about sst_target_bytes of raw data, so a lookup consults one
 * run, and one slot, per level. A compaction picks part of a level and
 * merges it into the overlapping part of the next, as RocksDB's leveled
 * compaction picks files:
 *   - which level: the highest score (due_level), L0's being its run count
 *     over the trigger, a deeper level's its size over its capacity;
 *   - L0 -> L1: every L0 run (they span the whole key space) and the L1
 *     runs their ranges overlap;
 *   - Li -> Li+1: one run of Li, chosen round-robin by key range, and the
 *     Li+1 runs its range overlaps.
 * The output is cut into runs again; tombstones are dropped only when no
 * run lies below the output level. At rest (nothing written since the last
 * flush) and with nothing else due, the tree is pushed down one step at a
 * time, until the levels above the deepest keep gaps that most lookups
 * fall in, within a budget of the bytes users wrote (compaction at rest).
 *
 * While a compaction runs, L0 keeps filling. The flush thread, when it has
 * no memtable to flush, merges the newest L0 runs the compaction does not
 * hold into one L0 run (RocksDB's intra-L0 compaction), so a lookup checks
 * fewer L0 filters.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/order.h"

static uint64_t level_capacity(const akv_db *db, int level)
{
    uint64_t cap = db->opt.memtable_bytes;
    for (int i = 0; i < level; i++)
        cap *= (uint64_t)db->opt.level_multiplier;
    return cap;
}

static uint64_t level_bytes(const akvi_version *v, int level)
{
    uint64_t b = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level == level)
            b += v->runs[i]->info.raw_bytes;
    return b;
}

static uint64_t l0_run_weight(const akv_db *db, const akvi_run *r)
{
    uint64_t m = db->opt.memtable_bytes, w = (r->info.raw_bytes + m / 2) / m;
    return w ? w : 1;
}

size_t akvi_l0_weight(const akv_db *db, const akvi_version *v)
{
    size_t w = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if (v->runs[i]->info.level == 0)
            w += (size_t)l0_run_weight(db, v->runs[i]);
    return w;
}

/*
 * The level whose compaction is due (-1: none), scored as RocksDB scores
 * them: L0 by its memtables' worth (akvi_l0_weight) over the trigger,
 * deeper levels by their bytes over their capacity; the highest score at
 * or above 1 wins (L0 on a tie). Giving L0 priority whatever the rest
 * scored starved the deeper levels during a long load: everything piled up
 * in L1, and since L0 runs span the whole key range each L0 compaction
 * rewrote all of it, longer every time, while L0 filled up behind it.
 */
static int due_level(const akv_db *db, const akvi_version *v)
{
    int best = -1;
    double best_score = 0;
    size_t l0 = akvi_l0_weight(db, v);
    if (l0 >= (size_t)db->opt.l0_compaction_trigger) {
        best = 0;
        best_score = (double)l0 / (double)db->opt.l0_compaction_trigger;
    }
    for (int l = 1; l < AKV_MAX_LEVELS - 1; l++) {
        double score = (double)level_bytes(v, l) / (double)level_capacity(db, l);
        if (score > 1.0 && score > best_score) {
            best = l;
            best_score = score;
        }
    }
    return best;
}

static const akvi_cat_sst *first_sst(const akvi_run *r)
{
    return &r->info.ssts[0];
}

static const akvi_cat_sst *last_sst(const akvi_run *r)
{
    return &r->info.ssts[r->info.n_sst - 1];
}

/* A key range [lo, hi] of internal keys (pointers into catalog entries). */
typedef struct range {
    const uint8_t *lo, *hi;
    size_t lo_len, hi_len;
} range;

static void widen(range *g, const akvi_run *r, bool first)
{
    const akvi_cat_sst *a = first_sst(r), *b = last_sst(r);
    if (first || akvi_bytes_cmp(a->smallest, a->smallest_len, g->lo, g->lo_len) < 0) {
        g->lo = a->smallest;
        g->lo_len = a->smallest_len;
    }
    if (first || akvi_bytes_cmp(b->largest, b->largest_len, g->hi, g->hi_len) > 0) {
        g->hi = b->largest;
        g->hi_len = b->largest_len;
    }
}

static bool overlaps(const akvi_run *r, const range *g)
{
    const akvi_cat_sst *a = first_sst(r), *b = last_sst(r);
    return akvi_bytes_cmp(b->largest, b->largest_len, g->lo, g->lo_len) >= 0 &&
           akvi_bytes_cmp(a->smallest, a->smallest_len, g->hi, g->hi_len) <= 0;
}

/* ---- compaction at rest ---------------------------------------------------- */

/*
 * At rest: nothing has been written since the last flush (one memtable,
 * never written), so no flush will come to add an L0 run. Every L0 run and
 * every upper-level run whose range holds a key is one more filter an
 * absent key checks, where RocksDB's upper levels are left with gaps by its
 * one-file-at-a-time compactions (docs/design.md, "LSM shape"). So at rest,
 * when nothing else is due, the tree is pushed down one step at a time: L0
 * into L1 (also when L0 is all there is and holds more than one run), then
 * one run of the shallowest level above the deepest into the next, the one
 * that rewrites the fewest bytes for the share of lookups it takes off.
 * A write stops it after the step in progress.
 *
 * rest_compaction 1 (the default) bounds it twice: it stops once the
 * levels above the deepest are checked by at most REST_SHARE of the
 * lookups (RocksDB's upper level at rest: 31-39 % measured), and a step
 * runs only if the raw bytes it rewrites fit in the credit: the raw bytes
 * users have written, less what rests have rewritten, so that over any
 * history compaction at rest rewrites at most as many bytes as were
 * written (one more unit of write amplification, at most). The credit
 * outlives a close in the meta family ("restcredit"). rest_compaction 2
 * pushes everything into the deepest level whatever it costs.
 */
#define REST_SHARE 0.25
/* L0 pushed into L1 at rest is cut into runs of at most an eighth of the
 * hash space each, so that the rest can stop near REST_SHARE: with L1 in
 * two halves it had to push both. */
#define REST_MIN_BITS 3

static bool at_rest(const akv_db *db, const akvi_version *v)
{
    return db->opt.rest_compaction && v->n_mem == 1 &&
           !atomic_load_explicit(&v->mems[0]->written, memory_order_acquire);
}

static uint64_t rest_credit(const akv_db *db)
{
    uint64_t in = db->bg.rest_credit_saved + atomic_load(&db->st.bytes_written_user);
    uint64_t out = atomic_load(&db->bg.rest_spent);
    return in > out ? in - out : 0;
}

/* The share of lookups (of keys spread as the database's are) that check
 * run r: in the hash layout the shards its SSTs hold (a key whose shard has
 * no SST skips the run); in the ordered layout the share of the deepest
 * level's raw bytes in the runs r overlaps. */
static double run_share(const akv_db *db, const akvi_version *v, const akvi_run *r, int deepest,
                        uint64_t deep_bytes)
{
    if (db->layout == AKV_LAYOUT_HASH)
        return ldexp((double)r->info.n_sst, -(int)r->info.prefix_bits);
    range g = {0};
    widen(&g, r, true);
    uint64_t under = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level == deepest && overlaps(v->runs[i], &g))
            under += v->runs[i]->info.raw_bytes;
    return deep_bytes ? (double)under / (double)deep_bytes : 1.0;
}

/* The raw bytes of the runs at `level` that overlap g. */
static uint64_t overlap_bytes(const akvi_version *v, int level, const range *g)
{
    uint64_t b = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if ((int)v->runs[i]->info.level == level && overlaps(v->runs[i], g))
            b += v->runs[i]->info.raw_bytes;
    return b;
}

typedef struct rest_step {
    int from;               /* the level pushed: 0 (all of L0) or one run's */
    const akvi_run *victim; /* from >= 1: the run pushed */
    uint64_t cost;          /* raw bytes the step rewrites */
    bool split;             /* the victim is only cut finer, in its level */
} rest_step;

/* The next step of a compaction at rest, if one is due and affordable. */
static bool rest_next(const akv_db *db, const akvi_version *v, rest_step *st)
{
    if (!at_rest(db, v))
        return false;
    bool bounded = db->opt.rest_compaction == 1;
    int deepest = akvi_deepest_level(v);
    size_t l0 = 0;
    range g = {0};
    uint64_t l0_bytes = 0;
    for (size_t i = 0; i < v->n_run; i++)
        if (v->runs[i]->info.level == 0) {
            widen(&g, v->runs[i], l0 == 0);
            l0_bytes += v->runs[i]->info.raw_bytes;
            l0++;
        }
    st->victim = NULL;
    st->split = false;
    if (l0 > 0 && (deepest > 0 || l0 > 1)) {
        st->from = 0;
        st->cost = l0_bytes + overlap_bytes(v, 1, &g);
    } else {
        if (deepest < 2)
            return false;
        uint64_t deep = level_bytes(v, deepest);
        double share = 0, best_score = 0;
        int from = -1;
        for (size_t i = 0; i < v->n_run; i++) { /* search order: shallowest level first */
            const akvi_run *r = v->runs[i];
            int l = (int)r->info.level;
            if (l == 0 || l >= deepest)
                continue;
            double s = run_share(db, v, r, deepest, deep);
            share += s;
            if (from >= 0 && l != from)
                continue;
            range rg = {0};
            widen(&rg, r, true);
            uint64_t cost = r->info.raw_bytes + overlap_bytes(v, l + 1, &rg);
            double score = (double)cost / (s > 1e-9 ? s : 1e-9);
            if (!st->victim || score < best_score) {
                st->victim = r;
                st->cost = cost;
                best_score = score;
                from = l;
            }
        }
        if (!st->victim || (bounded && share <= REST_SHARE))
            return false;
        st->from = from;
        /* A run wider than an eighth of the hash space (a normal
         * compaction's output) is first cut finer in its own level, at the
         * cost of its own bytes only, so that the pushes can stop near
         * REST_SHARE rather than after a whole half. */
        if (bounded && db->layout == AKV_LAYOUT_HASH &&
            run_share(db, v, st->victim, deepest, deep) > ldexp(1.0, -REST_MIN_BITS)) {
            st->split = true;
            st->cost = st->victim->info.raw_bytes;
        }
    }
    return !bounded || st->cost <= rest_credit(db);
}

int akvi_rest_credit_load(akv_db *db)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_meta_get(db, "restcredit", &buf, &len);
    db->bg.rest_credit_saved = 0;
    if (rc == AKV_OK && len == 8)
        for (int i = 7; i >= 0; i--)
            db->bg.rest_credit_saved = db->bg.rest_credit_saved << 8 | buf[i];
    else if (rc == AKV_OK)
        akvi_log(db, "warning: the rest compaction credit record is %zu bytes, not 8; starting at 0", len);
    free(buf);
    return rc == AKV_NOTFOUND || rc == AKV_OK ? AKV_OK : rc;
}

int akvi_rest_credit_save(akv_db *db)
{
    uint64_t c = rest_credit(db);
    uint8_t buf[8];
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)(c >> (8 * i));
    return akvi_meta_put(db, "restcredit", buf, sizeof buf, false);
}

bool akvi_compaction_needed(akv_db *db, const akvi_version *v)
{
    rest_step rs;
    return due_level(db, v) >= 0 || rest_next(db, v, &rs);
}

uint64_t akvi_compaction_debt(const akv_db *db, const akvi_version *v)
{
    uint64_t debt = 0;
    if (akvi_l0_weight(db, v) >= (size_t)db->opt.l0_compaction_trigger)
        debt += level_bytes(v, 0);
    for (int l = 1; l < AKV_MAX_LEVELS - 1; l++) {
        uint64_t b = level_bytes(v, l), cap = level_capacity(db, l);
        debt += b > cap ? b - cap : 0;
    }
    rest_step rs;
    if (debt == 0 && rest_next(db, v, &rs))
        debt = rs.cost;
    return debt;
}

/* Round-robin over a level's runs: the first run after the last one
 * compacted at that level (by range), else the level's first. */
static const akvi_run *next_victim(akv_db *db, const akvi_version *v, int level)
{
    const akvi_run *first = NULL, *after = NULL;
    const compact_cursor *c = &db->bg.cursor[level];
    for (size_t i = 0; i < v->n_run; i++) {
        const akvi_run *r = v->runs[i];
        if ((int)r->info.level != level)
            continue;
        if (!first)
            first = r;
        const akvi_cat_sst *a = first_sst(r);
        if (!after && c->len && akvi_bytes_cmp(a->smallest, a->smallest_len, c->key, c->len) > 0)
            after = r;
    }
    return after ? after : first;
}

static void remember_victim(akv_db *db, int level, const akvi_run *r)
{
    const akvi_cat_sst *b = last_sst(r);
    compact_cursor *c = &db->bg.cursor[level];
    uint8_t *k = realloc(c->key, b->largest_len ? b->largest_len : 1);
    if (!k)
        return; /* the round-robin restarts from the level's first run */
    memcpy(k, b->largest, b->largest_len);
    c->key = k;
    c->len = b->largest_len;
}

typedef struct pick {
    akvi_run **in;
    size_t n;
    int out_level;
    uint64_t est;
    akvi_shards shards;
    bool rest; /* a step of a compaction at rest */
    bool fine; /* its output cut into one run per shard (hash layout) */
} pick;

static void take(pick *p, akvi_run *r)
{
    p->in[p->n++] = r;
    p->est += r->info.raw_bytes;
    akvi_shards_add(&p->shards, &r->info);
}

/* Inputs newest first: the search order of v already is (L0 newest first,
 * then level by level). */
static void choose(akv_db *db, const akvi_version *v, bool full, pick *p)
{
    int deepest = akvi_deepest_level(v);
    if (full) {
        /* The deepest level, or the first one deep enough to hold it all:
         * a full compaction leaves no compaction due (one into a level
         * over its capacity went on in the background afterwards,
         * rebuilding the filters it had just built). */
        uint64_t total = 0;
        for (size_t i = 0; i < v->n_run; i++)
            total += v->runs[i]->info.raw_bytes;
        int fit = 1;
        while (fit < AKV_MAX_LEVELS - 1 && level_capacity(db, fit) < total)
            fit++;
        p->out_level = deepest > fit ? deepest : fit;
        for (size_t i = 0; i < v->n_run; i++)
            take(p, v->runs[i]);
        return;
    }
    int from = due_level(db, v);
    const akvi_run *victim = from > 0 ? next_victim(db, v, from) : NULL;
    rest_step rs;
    if (from < 0) {
        if (!rest_next(db, v, &rs))
            return;
        from = rs.from;
        victim = rs.victim;
        p->rest = true;
        if (rs.split) { /* the victim alone, cut per shard, in its level */
            p->out_level = from;
            p->fine = true;
            take(p, (akvi_run *)victim);
            if (p->shards.min_bits < REST_MIN_BITS)
                p->shards.min_bits = REST_MIN_BITS;
            return;
        }
    }
    p->out_level = from + 1;
    range g = {0};
    bool any = false;
    for (size_t i = 0; i < v->n_run; i++) {
        const akvi_run *r = v->runs[i];
        if ((int)r->info.level == from && (from == 0 || r == victim)) {
            widen(&g, r, !any);
            any = true;
        }
    }
    if (!any)
        return;
    if (victim && !p->rest)
        remember_victim(db, from, victim);
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        int l = (int)r->info.level;
        if ((l == from && (from == 0 || r == victim)) || (l == from + 1 && overlaps(r, &g)))
            take(p, r);
    }
    if (p->rest && from == 0 && db->layout == AKV_LAYOUT_HASH) {
        p->fine = true;
        if (p->shards.min_bits < REST_MIN_BITS)
            p->shards.min_bits = REST_MIN_BITS;
    }
}

/* Merge the picked runs into runs at p->out_level, cut at run_bytes, and
 * publish them in place of the inputs. */
static int merge_and_publish(akv_db *db, pick *p, uint64_t run_bytes, bool drop_tombstones)
{
    akvi_run **out = NULL;
    size_t n_out = 0;
    int rc = akvi_rw_merge(db, NULL, p->in, p->n, p->out_level, p->est, &p->shards, run_bytes,
                           drop_tombstones, &out, &n_out);
    if (rc == AKV_OK && p->out_level == 0) /* an L0 merge keeps its inputs' front */
        akvi_front_cover_merge(p->in, p->n, out, n_out);
    if (rc == AKV_OK)
        rc = akvi_publish(db, NULL, p->in, p->n, out, n_out);
    for (size_t i = 0; rc != AKV_OK && i < n_out; i++)
        akvi_run_unref(out[i]);
    free(out);
    return rc;
}

void (*_Atomic akvi_hook_before_compaction)(void);

/* Under bg.mu: mark the picked inputs held, so the flush thread merges only
 * L0 runs newer than them; and wake it, as a merge may now be due. */
static void hold_inputs(akv_db *db, const pick *p)
{
    uint64_t below = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->in[i]->info.level == 0 && p->in[i]->info.id >= below)
            below = p->in[i]->info.id + 1;
    if (below > 0) /* L0 leaves: later flushes start a new front (l0front.c) */
        akvi_fronts_rotate(db);
    db->bg.compacting = true;
    db->bg.l0_held_below = below;
    pthread_cond_broadcast(&db->bg.cv);
}

int akvi_compact_step(akv_db *db, bool full)
{
    /* Pick while no L0 merge runs (one replaces the L0 runs it merges). */
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    while (db->bg.l0_merging)
        pthread_cond_wait(&db->bg.done_cv, &db->bg.mu);
    akvi_version *v = akvi_current(db);
    pick p = {calloc(v->n_run + 1, sizeof *p.in), 0, 0, 0, AKVI_SHARDS_NONE, false, false};
    int rc = p.in ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    if (rc == AKV_OK)
        choose(db, v, full, &p);
    bool trivial = p.n == 0 || (full && p.n == 1 && (int)p.in[0]->info.level == p.out_level);
    if (rc == AKV_OK && !trivial)
        hold_inputs(db, &p);
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    if (rc == AKV_OK && !trivial) {
        void (*hook)(void) = atomic_load(&akvi_hook_before_compaction);
        if (hook)
            hook();
        /* Tombstones can go only when nothing older lies below the output
         * (flushes and L0 merges only add to L0, so this holds until the
         * publish). */
        bool last = akvi_deepest_level(v) <= p.out_level;
        /* The inputs, not the version, held through the merge: a version
         * also holds its memtables, whose pool families a flush meanwhile
         * must be able to empty and reuse (mempool.c). */
        for (size_t i = 0; i < p.n; i++)
            akvi_run_ref(p.in[i]);
        akvi_version_unref(v);
        v = NULL;
        /* At rest, L0 pushed into L1 and a run cut finer in its level
         * come out as one run per shard (at least 2^REST_MIN_BITS of them),
         * so that the rest can push a part at a time and stop with gaps
         * (the ordered layout cuts by size, as always). */
        rc = merge_and_publish(db, &p, p.fine ? 1 : db->opt.sst_target_bytes, last);
        if (rc == AKV_OK)
            atomic_fetch_add(&db->st.compactions, 1);
        if (rc == AKV_OK && p.rest)
            atomic_fetch_add(&db->bg.rest_spent, p.est);
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        db->bg.compacting = false;
        db->bg.l0_held_below = 0;
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
        for (size_t i = 0; i < p.n; i++)
            akvi_run_unref(p.in[i]);
    }
    free(p.in);
    if (v)
        akvi_version_unref(v);
    return rc;
}

/* ---- L0 merges ------------------------------------------------------------ */

/* A merge takes at least this many L0 runs (RocksDB's minimum for an
 * intra-L0 compaction) and at most this many memtables' worth of data, so
 * that it ends before more than a memtable or two wait for the flush
 * thread, and a merged run is not merged again and again. It waits for a
 * backlog: L0 holding L0_MERGE_BACKLOG times the compaction trigger's runs
 * (RocksDB waits for its trigger plus two files). Below that, as in a
 * steady mixed load where each L0 compaction finds a trigger's worth or a
 * little more, a merge only reads and rewrites what the next compaction
 * takes anyway: at 1M records, merging from 4 newest runs on made 19 merges
 * a minute of workloada and doubled the bytes written into L0, and the
 * reads behind that traffic had 2-3x the p99 (docs/benchmarks.md). */
#define L0_MERGE_MIN_RUNS      4
#define L0_MERGE_MAX_MEMTABLES 5
#define L0_MERGE_BACKLOG       2

/* Under bg.mu: the newest L0 runs (search order: L0 first, newest first)
 * newer than what the compaction holds, up to the size limit, into in[] if
 * not NULL; their count if a merge is due, else 0. Only while a compaction
 * runs (otherwise the next one takes L0 as it is) and L0 is backlogged. */
static size_t l0_merge_pick(const akv_db *db, const akvi_version *v, akvi_run **in)
{
    if (!db->bg.compacting || db->bg.l0_merging)
        return 0;
    size_t l0 = 0;
    for (size_t i = 0; i < v->n_run; i++)
        l0 += v->runs[i]->info.level == 0;
    if (l0 < (size_t)L0_MERGE_BACKLOG * (size_t)db->opt.l0_compaction_trigger)
        return 0;
    uint64_t bytes = 0, cap = L0_MERGE_MAX_MEMTABLES * db->opt.memtable_bytes;
    size_t n = 0;
    for (size_t i = 0; i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        if (r->info.level != 0 || r->info.id < db->bg.l0_held_below || bytes + r->info.raw_bytes > cap)
            break;
        bytes += r->info.raw_bytes;
        if (in)
            in[n] = r;
        n++;
    }
    return n >= L0_MERGE_MIN_RUNS ? n : 0;
}

bool akvi_l0_merge_due(const akv_db *db, const akvi_version *v)
{
    return l0_merge_pick(db, v, NULL) > 0;
}

int akvi_compact_l0(akv_db *db)
{
    akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
    akvi_version *v = akvi_current(db);
    pick p = {calloc(v->n_run + 1, sizeof *p.in), 0, 0, 0, AKVI_SHARDS_NONE, false, false};
    size_t n = p.in ? l0_merge_pick(db, v, p.in) : 0;
    db->bg.l0_merging = n > 0;
    akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    int rc = p.in ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) /* held instead of the version, as above */
        akvi_run_ref(p.in[i]);
    akvi_version_unref(v);
    if (n > 0) {
        for (size_t i = 0; i < n; i++)
            take(&p, p.in[i]); /* in[i] stays; bytes and shards follow */
        p.out_level = 0;
        /* One run (no size cut), tombstones kept: older runs lie below. */
        rc = merge_and_publish(db, &p, UINT64_MAX, false);
        if (rc == AKV_OK)
            atomic_fetch_add(&db->st.l0_merges, 1);
        akvi_mutex_lock(&db->bg.mu, AKVI_RANK_BG);
        db->bg.l0_merging = false;
        pthread_cond_broadcast(&db->bg.done_cv);
        akvi_mutex_unlock(&db->bg.mu, AKVI_RANK_BG);
    }
    for (size_t i = 0; i < n; i++)
        akvi_run_unref(p.in[i]);
    free(p.in);
    return rc;
}
