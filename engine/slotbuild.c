/*
 * slotbuild.c — building an SST's filter slot: its keys' slot hashes, the
 * miss-log negatives in its range, the kind the policy names, and the
 * fallbacks when that kind cannot be built. Shared by flush and compaction
 * (runwriter.c), recovery (a missing or damaged file) and growth (adapt.c).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "engine/runstore.h"
#include "util/grow.h"
#include "util/order.h"

/* At most this many miss-log negatives per build; a costed kind (HABF),
 * whose memory does not grow with them and whose point is to steer its
 * keys' hash functions away from them, takes up to COSTED_NEGATIVES. */
#define MAX_NEGATIVES 4096
#define COSTED_NEGATIVES 65536

static void sort_hashes(akv_hash *h, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (akvi_hash_cmp(h[i - 1], h[i]) > 0) {
            akvi_sort(h, n, sizeof *h, akvi_hash_cmp_ptr);
            return;
        }
}

/* The keys' hashes as the run's slots see them, sorted. */
static void slot_keys(akv_db *db, const akvi_cat_run *run, akv_hash *hashes, size_t n)
{
    for (size_t i = 0; db->layout == AKV_LAYOUT_HASH && i < n; i++)
        hashes[i] = akvi_run_slot_hash(db, run, hashes[i]);
    sort_hashes(hashes, n);
}

/* Negatives for this SST, minus any that are now keys of it. */
static size_t negatives_for(akv_db *db, const akv_filter_kind *kind, const akvi_cat_run *run,
                            const akvi_cat_sst *sst, const akv_hash *keys, size_t n, akv_negative **out)
{
    akvi_sst_ref ra = {db, run, sst};
    /* At most a quarter as many negatives as keys: pre-adapting costs the
     * filter room that its keys need. A costed kind spends no room on
     * them: as many as keys. */
    size_t max = n / 4 < MAX_NEGATIVES ? n / 4 : MAX_NEGATIVES;
    if (kind->flags & AKV_FK_COSTED)
        max = n < COSTED_NEGATIVES ? n : COSTED_NEGATIVES;
    size_t k = akvi_misslog_collect(db->ml, akvi_sst_holds_user_key, &ra, max, out);
    size_t j = 0;
    for (size_t i = 0; i < k; i++)
        (*out)[i].h = akvi_run_slot_hash(db, run, (*out)[i].h);
    for (size_t i = 0; i < k; i++)
        if (!bsearch(&(*out)[i].h, keys, n, sizeof *keys, akvi_hash_cmp_ptr))
            (*out)[j++] = (*out)[i];
    return j;
}

/*
 * A slot must exist for every SST, so a kind that cannot be built (a
 * quotient filter that runs out of room pre-adapting to negatives, say) is
 * retried without negatives, then with twice the capacity, and finally
 * replaced by a plain Bloom filter, with a warning. A flush never fails
 * because of a filter.
 */
static int build_with_fallback(akv_db *db, const akv_filter_kind *k, akv_filter_params *p,
                               const akv_hash *hashes, size_t n, const akv_negative *neg, size_t n_neg,
                               akv_filter **out)
{
    int rc = akv_filter_build(k, p, hashes, n, neg, n_neg, out);
    if (rc == AKV_OK)
        return rc;
    int first = rc;
    const char *how = "no fallback worked";
    if (n_neg) {
        rc = akv_filter_build(k, p, hashes, n, NULL, 0, out);
        how = "built it without pre-adapted negatives";
    }
    if (rc != AKV_OK) {
        p->expected_keys = 2 * n + 64;
        rc = akv_filter_build(k, p, hashes, n, NULL, 0, out);
        p->expected_keys = n;
        how = "built it at twice the capacity";
    }
    const akv_filter_kind *bloom = akv_filter_kind_by_name("bloom");
    if (rc != AKV_OK && bloom && bloom != k) {
        rc = akv_filter_build(bloom, p, hashes, n, NULL, 0, out);
        how = "built a bloom filter instead";
    }
    akvi_log(db, "warning: building a %s filter over %zu keys failed (%s); %s", k->name, n,
             akv_strerror(first), rc == AKV_OK ? how : "no fallback worked");
    return rc;
}

/* A unit of the tree that an absent key's lookup probes once: each L0 run,
 * and each deeper level (one run of it is probed). */
typedef struct units {
    double n, n_ln; /* keys, and the sum of keys · ln(keys) */
    int count;
} units;

/* A unit of `keys` whose false positives count `w` times (1; an L0 run
 * behind a front: the front's rate, l0front.c). */
static void add_unit_w(units *u, double keys, double w)
{
    if (keys >= 1) {
        u->n += keys;
        u->n_ln += keys * log(keys / w);
        u->count++;
    }
}

static void add_unit(units *u, double keys)
{
    add_unit_w(u, keys, 1);
}

/*
 * The guard in the budget (docs/design.md, "Filter memory by level"):
 * bits_per_key bounds all filter memory per key, the memtable guard's
 * included, so the guard's memory (averaged over about a minute, or the
 * size it keeps while a memtable fills, if more) comes off
 * what the runs' slots share. Its fixed minimum (a guard for 4096 keys)
 * counts only up to GUARD_FLOOR_SHARE of the budget, so that a tiny
 * database keeps its runs' bits; and at most a quarter of B comes off, so
 * that a small database whose memtables are a large part of it keeps three
 * quarters of B in its runs. What grown slots hold beyond their build is
 * not taken here: it is in the slots' memory that level_bits counts.
 */
#define GUARD_FLOOR_SHARE 0.02

static double guard_counted(const akvi_guard_mem *g, double b_bytes)
{
    double floor = g->floor < GUARD_FLOOR_SHARE * b_bytes ? g->floor : GUARD_FLOOR_SHARE * b_bytes;
    double over = g->avg - g->floor;
    return (over > 0 ? over : 0) + floor;
}

/* For the runs' share: the guard's average, or the size it keeps while a
 * memtable fills if more (after a flush it may be small, and grows back as
 * the next memtable fills). Not its size now: memtables waiting for a
 * flush make it larger for a while, and have a budget of their own
 * (akvi_filter_budget). */
static double guard_taken(const akvi_guard_mem *g, double b_bytes)
{
    akvi_guard_mem m = *g;
    m.avg = g->planned > g->avg ? g->planned : g->avg;
    return guard_counted(&m, b_bytes);
}

double akvi_runs_budget(akv_db *db, double keys)
{
    double b = db->opt.bits_per_key;
    akvi_guard_mem g;
    akvi_guard_memory_parts(db, &g);
    double off = keys >= 1 ? guard_taken(&g, b * keys / 8) * 8 / keys : 0;
    return b - (off < b / 4 ? off : b / 4);
}

double akvi_filter_budget(akv_db *db, double keys, size_t mems, const akvi_guard_mem *g)
{
    double b = db->opt.bits_per_key * keys / 8, counted = guard_counted(g, b);
    /* Over B by what of the guard does not count; by the guard beyond a
     * quarter of B on a small database; and by what the guard grew beyond
     * the size it keeps while memtables wait for their flush (as RocksDB
     * has a Bloom filter per memtable). */
    double exempt = g->avg - counted > 0 ? g->avg - counted : 0;
    double small = 0.75 * b + g->avg;
    double waiting = mems > 1 && (double)g->now > g->planned ? (double)g->now - g->planned : 0;
    return (small > b + exempt ? small : b + exempt) + waiting;
}

void akvi_filter_account(akv_db *db, akvi_filter_total *t)
{
    memset(t, 0, sizeof *t);
    akvi_guard_mem g;
    akvi_guard_memory_parts(db, &g);
    akvi_version *v = akvi_current(db);
    for (size_t i = 0; v && i < v->n_run; i++) {
        akvi_run *r = v->runs[i];
        t->keys += (double)r->info.keys;
        for (size_t j = 0; r->slots && j < r->info.n_sst; j++)
            t->held += (double)akvi_slot_memory(&r->slots[j]);
    }
    t->held += (double)akvi_fronts_memory(v, NULL, 0);
    akvi_version_unref(v);
    t->held += (double)g.now;
    t->budget = akvi_filter_budget(db, t->keys, 1, &g); /* none for memtables waiting */
}

/*
 * The kind a new run's slots get at `level`: the policy's, except that a
 * costed kind (HABF) learns only the negatives the miss log hands it, and
 * its rate on the others is about twice a Bloom filter's (docs/filters.md,
 * "HABF in the engine"). While the miss log loses the keys of more than a
 * tenth of the negative lookups it meets (a stream larger than
 * miss_log_bytes holds), such a slot is built as `afuse` instead (or
 * `ablocked` where afuse is not registered): both pre-adapt to the same
 * negatives and fix the rest when they come back, with the same list of
 * fixed false positives; afuse's base rate is the lower (docs/filters.md,
 * "Binary fuse filter"). Measured with ablocked (200k records, zipfian
 * negatives): at 38 % and 63 % HABF wasted as much as a static filter or
 * more, ablocked less; at 100 % HABF wasted 1/90 of it. Said once in the
 * log.
 */
#define COSTED_MIN_COVERAGE 0.9

const akv_filter_kind *akvi_build_kind(akv_db *db, int level)
{
    const akv_filter_kind *k = db->policy.level[level < AKV_MAX_LEVELS ? level : AKV_MAX_LEVELS - 1];
    if (!(k->flags & AKV_FK_COSTED))
        return k;
    double c = akvi_misslog_coverage(db->ml);
    const akv_filter_kind *alt = akv_filter_kind_by_name("afuse");
    if (!alt)
        alt = akv_filter_kind_by_name("ablocked");
    if (c >= COSTED_MIN_COVERAGE || !alt)
        return k;
    if (!atomic_exchange(&db->said_costed_fallback, true))
        akvi_log(db,
                 "note: %s slots are built as %s while the miss log keeps the keys of %.0f%% of the "
                 "negative lookups it meets (%.0f%% needed; raise miss_log_bytes)",
                 k->name, alt->name, 100 * c, 100 * COSTED_MIN_COVERAGE);
    return alt;
}

/* r is one of the runs a compaction's output replaces. */
static bool replaced(const akvi_run *r, const akvi_run *const *replaces, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (r == replaces[i])
            return true;
    return false;
}

/*
 * Filter memory by level (docs/design.md, "Filter memory by level"). A
 * lookup of an absent key probes every L0 run and one run per deeper
 * level, so the wasted probes are the sum of the units' false-positive
 * rates, and a bit buys the most where a unit holds few keys. Minimising
 * that sum at a fixed total (the Monkey allocation) makes each unit's rate
 * proportional to its keys: bits_i = B + (mean ln n - ln n_i) / ln²2, the
 * mean weighted by keys, so the units' bits average B. The units are the
 * current version's, with the output being built (n keys: a flush's whole
 * L0 run, or a compaction's whole output) as an L0 run of its own, or its
 * level at least n keys, and without the runs it replaces; B is what the
 * runs' slots share now (akvi_runs_budget). An L0 run behind a front
 * (l0front.c) is probed by an absent key only when the front lets it
 * through, so its rate counts times the front's: ln n_i becomes
 * ln(n_i / w_i) on both sides, which gives it about ln(1/w)/ln²2 bits
 * fewer (9 at 10 bits per key) and the other units what that frees.
 *
 * The reserve: the units the tree is expected to hold above its deepest
 * level but does not hold now count as if they were there, so that a level
 * built while the upper ones are empty (after a compaction at rest or
 * akv_compact) leaves them their share: L0 counts at least half of
 * l0_compaction_trigger runs of a memtable's keys, and each level between
 * L1 and the deepest at least half its capacity (keys per raw byte as the
 * runs hold them), all scaled down to at most 1 % of the tree's keys when
 * they would hold more: a reserve that goes unused leaves the total below
 * B by that share times the extra bits of the units it stands for (at most
 * 2B: 2 %).
 *
 * Then the output gets at most what the budget leaves it: B over the keys
 * the tree will hold, minus the memory every other slot was built with, so
 * that whatever the shape did since they were built the total comes back
 * to B. A deficit is paid as if spread over at least an eighth of the
 * tree's keys: a small run takes its share of it, not all of it (a flush
 * left with 3 bits per key let a third of the lookups through), and at
 * most 15 % of the build's fair share (its Monkey bits); the total comes
 * back over the next builds. A surplus raises a build by at most 10 % of
 * its fair share, within what the budget leaves it. What slots grew by is not taken
 * from the others: growth has its own allowance over the budget
 * (grown_filter_share, adapt.c), and it leaves with its run. Clamped to
 * [B/2, 3B]; B when there is no version yet (open).
 */
#define RESERVE_SHARE 0.01
#define SPREAD        0.125
#define MAX_CUT       0.15
#define MAX_RAISE     0.10

static double level_bits(akv_db *db, int level, uint64_t n, const akvi_run *const *replaces,
                         size_t n_replaces)
{
    double b = db->opt.bits_per_key;
    akvi_version *v = akvi_current(db);
    if (!v || n == 0) {
        akvi_version_unref(v);
        return b;
    }
    double level_keys[AKV_MAX_LEVELS] = {0}, run_keys = 0, all_keys = 0, raw = 0, held = 0;
    /* L0 runs behind a front (and the L0 runs to come, while the guard
     * gives flushes their hashes) are probed only when it says yes. */
    double front_w = akvi_front_rate(akvi_front_bits(db)),
           l0_w = db->policy.mem && db->opt.l0_front ? front_w : 1;
    int l0_runs = 0, deepest = level > 0 && level < AKV_MAX_LEVELS ? level : 0;
    units u = {0, 0, 0};
    for (size_t i = 0; i < v->n_run; i++) {
        const akvi_cat_run *r = &v->runs[i]->info;
        all_keys += (double)r->keys; /* keys per raw byte: the replaced runs' too */
        raw += (double)r->raw_bytes;
        if (replaced(v->runs[i], replaces, n_replaces))
            continue;
        run_keys += (double)r->keys;
        for (size_t j = 0; v->runs[i]->slots && j < r->n_sst; j++) /* as built: growth is apart */
            held += (double)akvi_slot_memory(&v->runs[i]->slots[j]) -
                    (double)atomic_load(&v->runs[i]->slots[j].grown_bytes);
        if (r->level == 0) {
            add_unit_w(&u, (double)r->keys, v->runs[i]->front ? front_w : 1);
            l0_runs += r->keys >= 1;
        } else if (r->level < AKV_MAX_LEVELS) {
            level_keys[r->level] += (double)r->keys;
            deepest = (int)r->level > deepest ? (int)r->level : deepest;
        }
    }
    held += (double)akvi_fronts_memory(v, replaces, n_replaces); /* L0's fronts share the budget */
    akvi_version_unref(v);
    double keys = run_keys + (double)n; /* once the output replaces its inputs */
    b = akvi_runs_budget(db, keys);
    /* Keys a memtable's worth of raw bytes holds, as the runs hold them. */
    double per_mem = raw > 0 ? all_keys / raw * (double)db->opt.memtable_bytes : 0;
    /* Before a memtable has been flushed since the open, the guard has
     * not grown to the size it keeps (5/4 of a memtable's keys, at 3B bits
     * each): leave room for that. */
    if (db->policy.mem && keys >= 1) {
        double full = db->opt.bits_per_key, per_key = 3 * full / keys; /* a guard key's bits, per tree key */
        double over = 1.25 * per_mem - AKVI_GUARD_MIN, floor = AKVI_GUARD_MIN * per_key;
        double want = (over > 0 ? over * per_key : 0) +
                      (floor < GUARD_FLOOR_SHARE * full ? floor : GUARD_FLOOR_SHARE * full);
        want = want < full / 4 ? want : full / 4;
        b = full - want < b ? full - want : b;
    }
    if (level > 0 && level < AKV_MAX_LEVELS && level_keys[level] < (double)n)
        level_keys[level] = (double)n;
    /* The reserve, from the keys a memtable's worth of raw bytes holds, and
     * at most RESERVE_SHARE of the tree's keys. */
    if (per_mem >= 1) {
        int want = (db->opt.l0_compaction_trigger + 1) / 2, more = 0;
        for (int i = l0_runs + (level <= 0); i < want; i++)
            more++;
        double add[AKV_MAX_LEVELS] = {0}, sum = more * per_mem, cap = per_mem;
        for (int l = 1; l < deepest; l++) {
            cap *= db->opt.level_multiplier;
            if (l != level && level_keys[l] < cap / 2)
                sum += add[l] = cap / 2 - level_keys[l];
        }
        double scale = sum > RESERVE_SHARE * keys ? RESERVE_SHARE * keys / sum : 1;
        for (int i = 0; i < more; i++)
            add_unit_w(&u, per_mem * scale, l0_w);
        for (int l = 1; l < deepest; l++)
            level_keys[l] += add[l] * scale;
    }
    for (int l = 1; l < AKV_MAX_LEVELS; l++)
        add_unit(&u, level_keys[l]);
    double mine = level > 0 && level < AKV_MAX_LEVELS ? level_keys[level] : (double)n;
    double mine_w = level <= 0 ? l0_w : 1;
    if (level <= 0)
        add_unit_w(&u, mine, mine_w);
    double bits = b;
    if (u.count >= 2) {
        bits = b + (u.n_ln / u.n - log(mine / mine_w)) / (M_LN2 * M_LN2);
        bits = bits > 3 * b ? 3 * b : bits;
    }
    /* What the budget leaves the output: a surplus caps it; a deficit (the
     * other slots hold more than B over their keys) takes the output's
     * share of it, over at least SPREAD of the tree's keys, so that a small
     * run is not left with a useless filter: the total comes back to B
     * over the next few builds. */
    double room = (b * keys - 8 * held) / (double)n, fair = bits;
    if (room < b) {
        double over = (double)n > SPREAD * keys ? (double)n : SPREAD * keys;
        room = b - (b - room) * (double)n / over;
    }
    /* A surplus (the others were built with less than the budget gave
     * them: a fuse filter's fingerprint is whole bits, and at 10 bits a key
     * its floor left 8.8 where 9.7 was given) raises the build by at most
     * MAX_RAISE of its fair share, within the room: the total comes back
     * up to B over the next builds as it comes down after a deficit. */
    double raised = (1 + MAX_RAISE) * fair;
    bits = room > fair ? (room < raised ? room : raised) : room;
    /* A deficit takes at most MAX_CUT of a build's fair share: a quotient
     * filter's remainder is whole bits, and a few bits less than its
     * share can quadruple its rate. */
    bits = bits < (1 - MAX_CUT) * fair ? (1 - MAX_CUT) * fair : bits;
    bits = bits < b / 2 ? b / 2 : bits;
    return bits > 64 ? 64 : bits;
}

#define SLOT_MIN_BITS 512 /* 64 bytes */

int akvi_build_filter(akv_db *db, int level, const akvi_cat_run *run, const akvi_cat_sst *sst,
                      akv_hash *hashes, size_t n, size_t capacity, const akvi_run *const *replaces,
                      size_t n_replaces, akv_filter **out)
{
    const akv_filter_kind *k = akv_filter_kind_by_name(sst->kind);
    if (!k)
        k = db->policy.level[level < AKV_MAX_LEVELS ? level : AKV_MAX_LEVELS - 1];
    slot_keys(db, run, hashes, n);
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = capacity > n ? capacity : n;
    /* By the whole output's keys (a lookup probes one SST of a run, one
     * run of a level): the run writer's estimate, else the run's count. */
    p.bits_per_key = level_bits(db, level, run->keys ? run->keys : n, replaces, n_replaces);
    /* A slot of a few keys can cover a wide share of the hash space (a
     * small flush pushed into L1 at rest is cut per shard), and a fuse
     * filter's cells outnumber a handful of keys several times: slots of
     * 1-8 keys at their level's share answered 6-12 % of the fresh keys
     * they met. Each slot gets at least SLOT_MIN_BITS in all (at most 64
     * per key, level_bits' bound). */
    double least = (double)SLOT_MIN_BITS / (double)(n ? n : 1);
    least = least < 64 ? least : 64;
    p.bits_per_key = p.bits_per_key > least ? p.bits_per_key : least;
    /* The shard prefix is already shifted out (akvi_slot_hash). */
    p.prefix_bits = 0;
    p.seed = db->seed;
    akv_negative *neg = NULL;
    size_t n_neg = negatives_for(db, k, run, sst, hashes, n, &neg);
    int rc = build_with_fallback(db, k, &p, hashes, n, neg, n_neg, out);
    free(neg);
    if (rc != AKV_OK)
        return akvi_err(rc, "building a %s filter over %zu keys: %s", k->name, n, akv_strerror(rc));
    return AKV_OK;
}

uint64_t akvi_key_digest(const akv_hash *h, size_t n)
{
    /* Chunks of 256 hashes through a stack buffer: one-shot XXH64 per
     * chunk chained by seed keeps this allocation-free. */
    uint64_t d = 0;
    uint8_t b[256 * 16];
    for (size_t i = 0; i < n;) {
        size_t m = n - i < 256 ? n - i : 256;
        for (size_t j = 0; j < m; j++)
            for (int k = 0; k < 8; k++) {
                b[16 * j + (size_t)k] = (uint8_t)(h[i + j].hi >> (8 * k));
                b[16 * j + 8 + (size_t)k] = (uint8_t)(h[i + j].lo >> (8 * k));
            }
        d = XXH64(b, 16 * m, d);
        i += m;
    }
    if (n == 0)
        d = XXH64("", 0, 0);
    return d ? d : 1; /* 0 means "not recorded" */
}

/* The range scan reads the SST's keys in order: the hash layout's internal
 * keys and the ordered layout's keys compare bytewise like the catalog's
 * smallest/largest. */
int akvi_sst_hashes(akv_db *db, const akvi_run *r, const akvi_cat_sst *s, akv_hash **out, size_t *n)
{
    /* Sized from the catalog's count but capped, so that a count that
     * passed the catalog's checks yet is wrong cannot allocate more than
     * the data itself needs; the array grows as keys arrive. */
    size_t cap = s->keys ? (s->keys < 65536 ? (size_t)s->keys : 65536) : 16, k = 0;
    bool oom = false;
    akv_hash *h = malloc(cap * sizeof *h);
    if (!h)
        return akvi_err(AKV_ENOMEM, "out of memory");
    /* Its file when the run has its readers (runstore.c), else its family. */
    akvi_rs_sst *file = r->files ? r->files[s - r->info.ssts] : NULL;
    akvi_rs_iter *fi = NULL;
    rocksdb_iterator_t *it = NULL;
    int rc = AKV_OK;
    if (file) {
        rc = akvi_rs_iter_new(&file, 1, true, &fi);
        if (rc == AKV_OK)
            rc = akvi_rs_iter_seek(fi, s->smallest, s->smallest_len);
    } else {
        it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, r->cf);
        rocksdb_iter_seek(it, (const char *)s->smallest, s->smallest_len);
    }
    while (rc == AKV_OK && (fi ? akvi_rs_iter_valid(fi) : rocksdb_iter_valid(it))) {
        size_t kl, ul;
        const uint8_t *key = fi ? akvi_rs_iter_key(fi, &kl) : (const uint8_t *)rocksdb_iter_key(it, &kl);
        if (akvi_bytes_cmp(key, kl, s->largest, s->largest_len) > 0)
            break;
        const uint8_t *uk = akvi_ukey(db, key, kl, &ul);
        akv_hash *p = akvi_grow(h, &cap, k + 1, sizeof *h, 16);
        if (!p) { /* a partial key set would be a filter with false negatives */
            oom = true;
            break;
        }
        h = p;
        h[k++] = akv_hash_key(uk, ul, db->seed);
        if (fi)
            rc = akvi_rs_iter_next(fi);
        else
            rocksdb_iter_next(it);
    }
    akvi_rs_iter_destroy(fi);
    char *err = NULL;
    if (it) {
        rocksdb_iter_get_error(it, &err);
        rocksdb_iter_destroy(it);
    }
    if (rc != AKV_OK) {
        free(h);
        return akvi_err(rc, "reading an SST to rebuild its filter: %s", akv_errmsg());
    }
    if (err) {
        free(h);
        return akvi_rocks_err(err, "reading an SST to rebuild its filter");
    }
    if (oom) {
        free(h);
        return akvi_err(AKV_ENOMEM, "out of memory reading an SST to rebuild its filter");
    }
    if (k != s->keys) {
        free(h);
        return akvi_err(AKV_ECORRUPT, "SST %llu-%llu holds %zu keys; the catalog says %llu",
                        (unsigned long long)r->info.id, (unsigned long long)s->id, k,
                        (unsigned long long)s->keys);
    }
    if (s->digest && akvi_key_digest(h, k) != s->digest) {
        free(h);
        return akvi_err(AKV_ECORRUPT,
                        "SST %llu-%llu holds %zu keys, but not the keys the catalog records (digest)",
                        (unsigned long long)r->info.id, (unsigned long long)s->id, k);
    }
    *out = h;
    *n = k;
    return AKV_OK;
}

int akvi_build_from_sst(akv_db *db, const akvi_run *r, size_t j, size_t capacity, akv_filter **out)
{
    akv_hash *h = NULL;
    size_t n = 0;
    int rc = akvi_sst_hashes(db, r, &r->info.ssts[j], &h, &n);
    /* r itself counts once in its level's share: as the output. */
    if (rc == AKV_OK)
        rc = akvi_build_filter(db, (int)r->info.level, &r->info, &r->info.ssts[j], h, n,
                               capacity > n ? capacity : n, &r, 1, out);
    free(h);
    return rc;
}

int akvi_refill_from_sst(akv_db *db, const akvi_run *r, size_t j, akv_filter *f)
{
    akv_hash *h = NULL;
    size_t n = 0;
    int rc = akvi_sst_hashes(db, r, &r->info.ssts[j], &h, &n);
    if (rc != AKV_OK)
        return rc;
    slot_keys(db, &r->info, h, n);
    akv_negative *neg = NULL;
    size_t n_neg = negatives_for(db, f->kind, &r->info, &r->info.ssts[j], h, n, &neg);
    rc = akv_filter_refill(f, h, n, neg, n_neg);
    free(neg);
    free(h);
    return rc == AKV_OK
               ? rc
               : akvi_err(rc, "refilling a %s filter over %zu keys: %s", f->kind->name, n, akv_strerror(rc));
}
