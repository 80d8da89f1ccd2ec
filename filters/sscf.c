/*
 * sscf.c — Seesaw Counting Filter with ada-SSCF (kind `sscf`; Li et al.,
 * WWW 2022; docs/filters.md, "Cost-aware filters"), the engine's memtable
 * guard.
 *
 * A counting Bloom filter whose counters also carry a negative cell (nc):
 * vulnerable negatives seal the counters they hit, and a positive key whose
 * first initial function lands on a sealed counter is moved ("modulated")
 * to one of two backup functions; the choice is recorded in a small
 * HashModulator (HM) cell that the key also locks (mc), so the choice stays
 * readable and deletion can repeat it exactly. ada-SSCF adds an adaptive
 * bit (ab) per counter: absorb() marks a learned negative's counters, and a
 * marked counter seals (nc = 1) as soon as its positive count is zero.
 *
 * Counter layouts. The paper's ("wide", AKV_SSCF_WIDE) stores pc as a 4-bit
 * nibble next to an nc bit and, for ada-SSCF, an ab bit: 6 bits a counter
 * (5 static). The default ("packed") stores one 4-bit state code per
 * counter, because the three fields are far from independent: nc is only
 * ever set where pc = 0 and sealed counters hold few keys, ab matters only
 * until its counter empties. Codes:
 *
 *   0..6    pc = code                  (unsealed, unmarked)
 *   7       pc ≥ 7, sticky             (unsealed; a mark is dropped)
 *   8, 9    pc = 1, 2, marked (ab)     (seals when it empties)
 *   10..15  pc = code − 10, sealed     (15: pc ≥ 5, sticky)
 *
 * An absorbed negative's counter holding 3..6 keys is not marked, and a
 * marked one that reaches 3 turns sticky: such counters never seal, which
 * only forgoes a little protection. Sticky counts only add false
 * positives, as in any CBF. So at equal memory the packed filter has 5/4
 * (static) or 6/4 (ada) as many counters as the paper's layout — which is
 * what the cost-weighted FPR of the negatives the filter does not know
 * about depends on. HM cells are nibbles in both layouts (bit 0 = backup
 * index mi, bits 1..3 = lock count mc). Memory = bits_per_key × capacity:
 * 10% HM, the rest counters.
 *
 * Concurrency: one mutator at a time (a mutex), queries lock-free. Every
 * byte is read and written atomically (relaxed), and no state a present key
 * depends on ever changes while it is present — its counters stay ≥ 1, its
 * sealed skipped counter stays sealed, its locked HM cell keeps its index,
 * and nc is only ever set where pc = 0 — so a query racing with any
 * insert/remove/absorb of other keys cannot return a false negative.
 *
 * Saturation is sticky: a pc at 15 or an mc at 7 never moves again. That
 * can only add false positives; it keeps every decision deletion repeats.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "filters/sscf.h"
#include "util/bits.h"
#include "util/codec.h"
#include "util/order.h"

#define SSCF_MAX_K      16
#define SSCF_KHAT       2  /* backup functions (η2 = 1 bit) */
#define SSCF_PC_MAX     15 /* θ2 = 4 bits (wide layout; sticky) */
#define SSCF_MC_MAX     7  /* η1 = 3 bits */
#define SSCF_HM_SHARE   0.10
#define SSCF_SEAL_SHARE 0.10 /* default encoding stops at this share of sealed counters */
#define LAYOUT_PACKED   1    /* payload's layout field: 0 = wide */

typedef struct sscf {
    akv_filter base;
    uint64_t m;   /* counters */
    uint64_t nhm; /* HashModulator cells */
    uint32_t k;
    bool adaptive;
    bool wide; /* the paper's layout: pc nibbles + nc (+ ab) bitsets */
    uint64_t capacity;
    uint8_t *pc, *nc, *ab, *hm;
    pthread_mutex_t wlock;
    uint64_t encoded, absorbed, modulated, mod_failed, pc_sat, mc_sat;
} sscf;

extern const akv_filter_kind akvi_kind_sscf;

/* ---- atomic cell access ------------------------------------------------- */

static inline uint8_t ld(const uint8_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void st(uint8_t *p, uint8_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline unsigned nib_get(const uint8_t *a, uint64_t i)
{
    return (ld(&a[i >> 1]) >> ((i & 1) * 4)) & 15u;
}
static inline void nib_set(uint8_t *a, uint64_t i, unsigned v)
{
    unsigned sh = (unsigned)(i & 1) * 4;
    st(&a[i >> 1], (uint8_t)((ld(&a[i >> 1]) & ~(15u << sh)) | (v << sh)));
}
static inline bool bit_get(const uint8_t *a, uint64_t i)
{
    return (ld(&a[i >> 3]) >> (i & 7)) & 1;
}
static inline void bit_set(uint8_t *a, uint64_t i)
{
    st(&a[i >> 3], (uint8_t)(ld(&a[i >> 3]) | 1u << (i & 7)));
}

/* ---- hash functions ------------------------------------------------------ */

/* Initial functions: double hashing, as the Bloom and CBF kinds. */
static inline uint64_t ipos(const sscf *s, akv_hash h, uint32_t i)
{
    return akv_reduce(h.hi + (uint64_t)i * (h.lo | 1), s->m);
}
static inline uint64_t bpos(const sscf *s, akv_hash h, unsigned t)
{
    return akv_reduce(akv_hash_nth(h, 32 + t), s->m);
}
static inline uint64_t hmpos(const sscf *s, akv_hash h)
{
    return akv_reduce(akv_hash_nth(h, 31), s->nhm);
}

/* ---- counters ------------------------------------------------------------ */

/* Packed state codes (see the top of the file). */
enum { CODE_A_MAX = 6, CODE_SAT = 7, CODE_B1 = 8, CODE_B2 = 9, CODE_C0 = 10, CODE_C_STICKY = 15 };
static const uint8_t code_pc[16] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 0, 1, 2, 3, 4, 5};

typedef struct cell {
    unsigned pc; /* keys counted (a sticky count is ≥ 1) */
    bool sealed; /* nc */
    bool sticky; /* saturated: never moves again */
} cell;

/* One counter, read as a whole: the packed code is one atomic byte load. */
static inline cell cell_at(const sscf *s, uint64_t j)
{
    unsigned v = nib_get(s->pc, j);
    if (s->wide)
        return (cell){v, bit_get(s->nc, j), v == SSCF_PC_MAX};
    return (cell){code_pc[v], v >= CODE_C0, v == CODE_SAT || v == CODE_C_STICKY};
}

static unsigned packed_inc(unsigned v)
{
    if (v == CODE_A_MAX || v == CODE_B2)
        return CODE_SAT; /* a marked counter at 3 keys drops its mark */
    return v == CODE_SAT || v == CODE_C_STICKY ? v : v + 1;
}

static unsigned packed_dec(unsigned v)
{
    if (v == CODE_B1)
        return CODE_C0; /* a marked counter seals as it empties (transport) */
    if (v == 0 || v == CODE_SAT || v == CODE_C0 || v == CODE_C_STICKY)
        return v;
    return v - 1;
}

static void inc_pc(sscf *s, uint64_t j)
{
    unsigned v = nib_get(s->pc, j), n;
    if (s->wide)
        n = v == SSCF_PC_MAX ? v : v + 1;
    else
        n = packed_inc(v);
    if (n == v)
        return;
    nib_set(s->pc, j, n);
    s->pc_sat += s->wide ? n == SSCF_PC_MAX : n == CODE_SAT || n == CODE_C_STICKY;
}

/* A learned negative's counter seals the moment it empties (transport). */
static void dec_pc(sscf *s, uint64_t j)
{
    unsigned v = nib_get(s->pc, j);
    if (!s->wide) {
        nib_set(s->pc, j, packed_dec(v));
        return;
    }
    if (v == SSCF_PC_MAX || v == 0)
        return;
    nib_set(s->pc, j, v - 1);
    if (v == 1 && s->adaptive && bit_get(s->ab, j))
        bit_set(s->nc, j);
}

/* A negative's counter: sealed now if empty; with `mark` (ada-SSCF) a
 * non-empty one is marked so that it seals when it empties. */
static void seal_or_mark(sscf *s, uint64_t j, bool mark)
{
    unsigned v = nib_get(s->pc, j);
    if (s->wide) {
        if (mark)
            bit_set(s->ab, j);
        if (v == 0)
            bit_set(s->nc, j);
    } else if (v == 0) {
        nib_set(s->pc, j, CODE_C0);
    } else if (mark && (v == 1 || v == 2)) {
        nib_set(s->pc, j, v - 1 + CODE_B1);
    }
}

static inline unsigned mc_of(unsigned cell)
{
    return cell >> 1;
}

static void inc_mc(sscf *s, uint64_t c)
{
    unsigned cell = nib_get(s->hm, c);
    if (mc_of(cell) == SSCF_MC_MAX)
        return;
    nib_set(s->hm, c, cell + 2);
    s->mc_sat += mc_of(cell) + 1 == SSCF_MC_MAX;
}

static void dec_mc(sscf *s, uint64_t c)
{
    unsigned cell = nib_get(s->hm, c);
    if (mc_of(cell) != SSCF_MC_MAX && mc_of(cell) > 0)
        nib_set(s->hm, c, cell - 2);
}

/* ---- insert / query / remove / absorb ------------------------------------ */

/* First initial function hitting a sealed counter, or −1 (one-modulating). */
static int first_sealed(const sscf *s, akv_hash h, uint64_t *pos)
{
    int idx = -1;
    for (uint32_t i = 0; i < s->k; i++) {
        pos[i] = ipos(s, h, i);
        if (idx < 0 && cell_at(s, pos[i]).sealed)
            idx = (int)i;
    }
    return idx;
}

/* Algorithm 2: the HM lock is taken even when modulation fails, so the
 * cell's index is frozen while this key is present. */
static void do_insert(sscf *s, akv_hash h)
{
    uint64_t pos[SSCF_MAX_K];
    int old = first_sealed(s, h, pos);
    for (uint32_t i = 0; i < s->k; i++)
        if ((int)i != old)
            inc_pc(s, pos[i]);
    if (old < 0)
        return;
    uint64_t c = hmpos(s, h);
    unsigned cell = nib_get(s->hm, c);
    int t = -1;
    if (mc_of(cell) == 0) {
        for (unsigned b = 0; b < SSCF_KHAT && t < 0; b++)
            if (!cell_at(s, bpos(s, h, b)).sealed)
                t = (int)b;
        if (t >= 0)
            nib_set(s->hm, c, (cell & ~1u) | (unsigned)t);
    } else if (!cell_at(s, bpos(s, h, cell & 1)).sealed) {
        t = (int)(cell & 1);
    }
    if (t >= 0) {
        inc_pc(s, bpos(s, h, (unsigned)t));
        s->modulated++;
    } else {
        inc_pc(s, pos[old]);
        s->mod_failed++;
    }
    inc_mc(s, c);
}

/* Algorithm 3 with both tightenings: the one empty counter a modulated key
 * may leave must be sealed, and its backup must be positive and unsealed. */
static bool sscf_may_contain(const akv_filter *f, akv_hash h)
{
    const sscf *s = (const sscf *)f;
    bool skipped = false;
    for (uint32_t i = 0; i < s->k; i++) {
        cell c = cell_at(s, ipos(s, h, i));
        if (c.pc != 0)
            continue;
        if (skipped || !c.sealed)
            return false;
        skipped = true;
    }
    if (!skipped)
        return true;
    unsigned hm = nib_get(s->hm, hmpos(s, h));
    if (mc_of(hm) == 0)
        return false;
    cell b = cell_at(s, bpos(s, h, hm & 1));
    return !b.sealed && b.pc != 0;
}

/* The counters INSERT incremented for h (with multiplicity) and its HM cell
 * (or UINT64_MAX). Repeats INSERT's decision from state frozen since then. */
static unsigned removal_plan(const sscf *s, akv_hash h, uint64_t *dec, uint64_t *cell_out)
{
    uint64_t pos[SSCF_MAX_K];
    int old = first_sealed(s, h, pos);
    unsigned n = 0;
    for (uint32_t i = 0; i < s->k; i++)
        if ((int)i != old)
            dec[n++] = pos[i];
    *cell_out = UINT64_MAX;
    if (old < 0)
        return n;
    uint64_t c = hmpos(s, h);
    unsigned cell = nib_get(s->hm, c);
    if (mc_of(cell) == 0) { /* no lock: cannot happen with sticky mc; CBF fallback */
        dec[n++] = pos[old];
        return n;
    }
    uint64_t b = bpos(s, h, cell & 1);
    dec[n++] = cell_at(s, b).sealed ? pos[old] : b;
    *cell_out = c;
    return n;
}

/* Every planned decrement must find a count to take (or a saturated one). */
static bool plan_feasible(const sscf *s, const uint64_t *dec, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        unsigned need = 0;
        cell c = cell_at(s, dec[i]);
        for (unsigned j = 0; j < n; j++)
            need += dec[j] == dec[i];
        if (!c.sticky && c.pc < need)
            return false;
    }
    return true;
}

static int sscf_insert(akv_filter *f, akv_hash h)
{
    sscf *s = (sscf *)f;
    pthread_mutex_lock(&s->wlock);
    do_insert(s, h);
    f->n_keys++;
    pthread_mutex_unlock(&s->wlock);
    return AKV_OK;
}

/* Removing a key that is not present is refused (AKV_NOTFOUND) rather than
 * corrupting counters other keys rely on. */
static int sscf_remove(akv_filter *f, akv_hash h)
{
    sscf *s = (sscf *)f;
    uint64_t dec[SSCF_MAX_K + 1], c;
    int rc = AKV_NOTFOUND;
    pthread_mutex_lock(&s->wlock);
    unsigned n = removal_plan(s, h, dec, &c);
    if (sscf_may_contain(f, h) && plan_feasible(s, dec, n)) {
        for (unsigned i = 0; i < n; i++)
            dec_pc(s, dec[i]);
        if (c != UINT64_MAX)
            dec_mc(s, c);
        if (f->n_keys)
            f->n_keys--;
        rc = AKV_OK;
    }
    pthread_mutex_unlock(&s->wlock);
    return rc;
}

/* ada-SSCF: seal what can be sealed now; the rest seals when it empties. */
static void do_absorb(sscf *s, akv_hash h)
{
    for (uint32_t i = 0; i < s->k; i++)
        seal_or_mark(s, ipos(s, h, i), s->adaptive);
}

static int sscf_absorb(akv_filter *f, akv_hash h)
{
    sscf *s = (sscf *)f;
    if (!s->adaptive)
        return AKV_ENOTSUP;
    pthread_mutex_lock(&s->wlock);
    do_absorb(s, h);
    s->absorbed++;
    pthread_mutex_unlock(&s->wlock);
    return AKV_OK;
}

/* ---- create: sizing and encoding ----------------------------------------- */

static sscf *sscf_alloc(uint64_t m, uint64_t nhm, bool adaptive, bool wide)
{
    sscf *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->m = m;
    s->nhm = nhm;
    s->adaptive = adaptive;
    s->wide = wide;
    s->pc = calloc(1, (size_t)(m + 1) / 2 + 1);
    s->nc = wide ? calloc(1, akvi_bits_bytes(m)) : NULL;
    s->ab = wide && adaptive ? calloc(1, akvi_bits_bytes(m)) : NULL;
    s->hm = calloc(1, (size_t)(nhm + 1) / 2 + 1);
    pthread_mutex_init(&s->wlock, NULL);
    s->base.kind = &akvi_kind_sscf;
    if (!s->pc || (wide && !s->nc) || (wide && adaptive && !s->ab) || !s->hm) {
        akvi_kind_sscf.destroy(&s->base);
        return NULL;
    }
    return s;
}

typedef struct neg_rank {
    double cost;
    akv_hash h;
} neg_rank;

static int cmp_neg(const void *a, const void *b)
{
    const neg_rank *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    if (x->h.hi != y->h.hi)
        return x->h.hi < y->h.hi ? -1 : 1;
    return (x->h.lo > y->h.lo) - (x->h.lo < y->h.lo);
}

static void swap_rank(neg_rank *a, neg_rank *b)
{
    neg_rank t = *a;
    *a = *b;
    *b = t;
}

/* Move the `top` first elements in cmp_neg order to r[0..top) (in any
 * order): quickselect, linear on average, instead of sorting every
 * negative when only a few percent are sealed. cmp_neg is a total order,
 * so the selected set does not depend on the input order. */
static void select_top(neg_rank *r, size_t n, size_t top)
{
    size_t lo = 0, hi = n;
    uint64_t rng = 0x5eed;
    while (top > lo && top < hi && hi - lo > 1) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        swap_rank(&r[lo + (size_t)(rng >> 33) % (hi - lo)], &r[hi - 1]);
        size_t store = lo;
        for (size_t i = lo; i + 1 < hi; i++)
            if (cmp_neg(&r[i], &r[hi - 1]) < 0)
                swap_rank(&r[i], &r[store++]);
        swap_rank(&r[store], &r[hi - 1]); /* pivot at its final rank */
        if (store < top)
            lo = store + 1;
        else
            hi = store;
    }
}

static int cmp_rank(const void *a, const void *b)
{
    return cmp_neg(a, b);
}

/* Algorithm 1 on the costliest negatives, before any insert: at most
 * `limit` of them, and with `seal_cap` > 0 only while fewer than seal_cap
 * counters are sealed (costliest first, so the cut is deterministic). */
static int encode_vulnerable(sscf *s, const akv_negative *neg, size_t n_neg, uint64_t limit,
                             uint64_t seal_cap)
{
    neg_rank *r = malloc((n_neg ? n_neg : 1) * sizeof *r);
    if (!r)
        return AKV_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < n_neg; i++)
        if (neg[i].cost > 0 && isfinite(neg[i].cost))
            r[n++] = (neg_rank){neg[i].cost, neg[i].h};
    if (seal_cap) {
        /* Random negatives seal seal_cap counters after about
         * −ln(1 − seal_cap/m)·m/k of them; twice that share bounds the sort. */
        double share = 2.0 * (double)seal_cap / (double)s->m;
        double need = share < 1 ? ceil(-log1p(-share) * (double)s->m / s->k) + 16 : (double)limit;
        limit = need < (double)limit ? (uint64_t)need : limit;
    }
    size_t top = n < limit ? n : (size_t)limit;
    select_top(r, n, top);
    if (seal_cap)
        akvi_sort(r, top, sizeof *r, cmp_rank);
    uint64_t sealed = 0;
    size_t i = 0;
    for (; i < top && (!seal_cap || sealed < seal_cap); i++)
        for (uint32_t t = 0; t < s->k; t++) {
            uint64_t j = ipos(s, r[i].h, t);
            sealed += !cell_at(s, j).sealed;
            seal_or_mark(s, j, s->adaptive);
        }
    s->encoded = i;
    free(r);
    return AKV_OK;
}

static int sscf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    bool adaptive = !(p->flags & AKV_SSCF_STATIC), wide = p->flags & AKV_SSCF_WIDE;
    unsigned cbits = wide ? (adaptive ? 6 : 5) : 4; /* bits per counter */
    unsigned ratio = (p->flags >> 8) & 0xffu;
    if (p->num_hashes > SSCF_MAX_K || ratio > 100)
        return AKV_EINVAL;
    uint64_t cap = p->expected_keys ? p->expected_keys : 1;
    double total = ceil(p->bits_per_key * (double)cap);
    uint64_t nhm = (uint64_t)(total * SSCF_HM_SHARE) / 4;
    nhm = nhm < 16 ? 16 : nhm;
    double sca = total - 4.0 * (double)nhm;
    uint64_t m = sca > 64.0 * cbits ? (uint64_t)(sca / cbits) : 64;
    double per_key = p->bits_per_key * (1 - SSCF_HM_SHARE) / cbits; /* counters per key */
    long k = p->num_hashes ? (long)p->num_hashes : (long)floor(M_LN2 * per_key);
    sscf *s = sscf_alloc(m, nhm, adaptive, wide);
    if (!s)
        return AKV_ENOMEM;
    s->k = (uint32_t)(k < 1 ? 1 : k > SSCF_MAX_K ? SSCF_MAX_K : k);
    s->capacity = cap;
    /* An explicit ratio encodes that share of capacity; by default every
     * given negative is encoded (up to capacity) while fewer than 10% of the
     * counters are sealed, and beyond that only the costliest. */
    uint64_t limit = (uint64_t)ceil((double)cap * (ratio ? ratio : 100) / 100.0);
    uint64_t seal_cap = ratio ? 0 : (uint64_t)ceil(SSCF_SEAL_SHARE * (double)m);
    int rc = encode_vulnerable(s, neg, n_neg, limit, seal_cap);
    if (rc != AKV_OK) {
        akvi_kind_sscf.destroy(&s->base);
        return rc;
    }
    *out = &s->base;
    return AKV_OK;
}

static int sscf_finish(akv_filter *f)
{
    (void)f;
    return AKV_OK; /* dynamic: inserts keep working after the build */
}

/* ---- size, stats, checker, serialization --------------------------------- */

static uint64_t pc_bytes(const sscf *s)
{
    return (s->m + 1) / 2;
}
static uint64_t bitset_bytes(uint64_t n)
{
    return (n + 7) / 8;
}
static uint64_t hm_bytes(const sscf *s)
{
    return (s->nhm + 1) / 2;
}
/* The wide layout's nc (and ab) bitsets; the packed one has none. */
static uint64_t flags_bytes_for(uint64_t m, bool wide, bool adaptive)
{
    return wide ? bitset_bytes(m) * (adaptive ? 2 : 1) : 0;
}
static uint64_t flag_bytes(const sscf *s)
{
    return flags_bytes_for(s->m, s->wide, s->adaptive);
}

/* Every array's bytes: the memory figure, and the payload after its header. */
static uint64_t arrays_bytes(uint64_t m, uint64_t nhm, bool wide, bool adaptive)
{
    return (m + 1) / 2 + flags_bytes_for(m, wide, adaptive) + (nhm + 1) / 2;
}

static size_t sscf_memory(const akv_filter *f)
{
    const sscf *s = (const sscf *)f;
    return (size_t)arrays_bytes(s->m, s->nhm, s->wide, s->adaptive);
}

int akvi_sscf_nonzero(const akv_filter *f, uint64_t *pc_nonzero, uint64_t *mc_nonzero, uint64_t *saturated)
{
    if (!f || f->kind != &akvi_kind_sscf)
        return AKV_EINVAL;
    const sscf *s = (const sscf *)f;
    uint64_t a = 0, b = 0, sat = 0;
    for (uint64_t j = 0; j < s->m; j++) {
        cell c = cell_at(s, j);
        a += c.pc != 0 && !c.sticky;
        sat += c.sticky;
    }
    for (uint64_t c = 0; c < s->nhm; c++) {
        unsigned v = mc_of(nib_get(s->hm, c));
        b += v != 0 && v != SSCF_MC_MAX;
        sat += v == SSCF_MC_MAX;
    }
    *pc_nonzero = a;
    *mc_nonzero = b;
    *saturated = sat;
    return AKV_OK;
}

static void sscf_stats(const akv_filter *f, akv_filter_stats *out)
{
    sscf *s = (sscf *)f;
    pthread_mutex_lock(&s->wlock);
    out->absorbed = s->absorbed;
    out->capacity = s->capacity;
    out->adaptations = s->modulated;
    out->adapt_bits = 8 * flag_bytes(s) + 4 * s->nhm;
    pthread_mutex_unlock(&s->wlock);
}

static int sscf_describe(const akv_filter *f, char *buf, size_t cap)
{
    sscf *s = (sscf *)f;
    pthread_mutex_lock(&s->wlock);
    int n = snprintf(
        buf, cap,
        "\"m\":%llu,\"k\":%u,\"hm_cells\":%llu,\"adaptive\":%s,\"layout\":\"%s\",\"capacity\":%llu,"
        "\"encoded\":%llu,"
        "\"absorbed\":%llu,\"modulated\":%llu,\"modulation_failed\":%llu,\"pc_saturations\":%llu,"
        "\"mc_saturations\":%llu",
        (unsigned long long)s->m, s->k, (unsigned long long)s->nhm, s->adaptive ? "true" : "false",
        s->wide ? "wide" : "packed", (unsigned long long)s->capacity, (unsigned long long)s->encoded,
        (unsigned long long)s->absorbed, (unsigned long long)s->modulated, (unsigned long long)s->mod_failed,
        (unsigned long long)s->pc_sat, (unsigned long long)s->mc_sat);
    pthread_mutex_unlock(&s->wlock);
    return n;
}

/* Saving takes the writer lock: the arrays must not move under the copy. */
static int sscf_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    sscf *s = (sscf *)f;
    pthread_mutex_lock(&s->wlock);
    akvi_wbuf w = {buf, 0};
    akvi_w_u8(&w, s->adaptive);
    akvi_w_u8(&w, (uint8_t)s->k);
    akvi_w_u16(&w, s->wide ? 0 : LAYOUT_PACKED);
    akvi_w_u64(&w, s->m);
    akvi_w_u64(&w, s->nhm);
    uint64_t hdr[] = {s->capacity,  f->n_keys,     s->encoded, s->absorbed,
                      s->modulated, s->mod_failed, s->pc_sat,  s->mc_sat};
    for (size_t i = 0; i < sizeof hdr / sizeof *hdr; i++)
        akvi_w_u64(&w, hdr[i]);
    akvi_w_bytes(&w, s->pc, (size_t)pc_bytes(s));
    if (s->wide)
        akvi_w_bytes(&w, s->nc, (size_t)bitset_bytes(s->m));
    if (s->wide && s->adaptive)
        akvi_w_bytes(&w, s->ab, (size_t)bitset_bytes(s->m));
    akvi_w_bytes(&w, s->hm, (size_t)hm_bytes(s));
    pthread_mutex_unlock(&s->wlock);
    *len = w.len;
    return AKV_OK;
}

static bool bits_tail_clean(const uint8_t *b, uint64_t nbits)
{
    return (nbits & 7) == 0 || (b[nbits >> 3] >> (nbits & 7)) == 0;
}

/* Only ada-SSCF marks counters: a static packed payload holding a marked
 * code was altered (e.g. its adaptive flag). */
static bool packed_marks_valid(const sscf *s)
{
    if (s->wide || s->adaptive)
        return true;
    for (uint64_t j = 0; j < s->m; j++) {
        unsigned v = nib_get(s->pc, j);
        if (v == CODE_B1 || v == CODE_B2)
            return false;
    }
    return true;
}

static bool sscf_arrays_valid(const sscf *s)
{
    bool ok = !s->wide || (bits_tail_clean(s->nc, s->m) && (!s->adaptive || bits_tail_clean(s->ab, s->m)));
    ok = ok && (!(s->m & 1) || (s->pc[s->m >> 1] >> 4) == 0) && packed_marks_valid(s);
    return ok && (!(s->nhm & 1) || (s->hm[s->nhm >> 1] >> 4) == 0);
}

/* Payload version 1 (before the packed layout) always holds the wide one. */
static int sscf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    akvi_rbuf r = {buf, len, 0, false};
    uint8_t adaptive = akvi_r_u8(&r), k = akvi_r_u8(&r);
    uint16_t layout = akvi_r_u16(&r);
    bool wide = layout == 0;
    uint64_t m = akvi_r_u64(&r), nhm = akvi_r_u64(&r), hdr[8];
    for (size_t i = 0; i < 8; i++)
        hdr[i] = akvi_r_u64(&r);
    /* The arrays are the tail: bound m and nhm by it (by division, which
     * cannot wrap) before arrays_bytes adds sizes computed from them. */
    uint64_t left = akvi_r_left(&r);
    if (r.err || ver < 1 || adaptive > 1 || k < 1 || k > SSCF_MAX_K || layout > LAYOUT_PACKED ||
        (ver < 2 && !wide) || m < 64 || m / 8 > left || nhm < 16 || nhm / 8 > left || hdr[0] == 0)
        return AKV_ECORRUPT;
    if (arrays_bytes(m, nhm, wide, adaptive) != akvi_r_left(&r) || hdr[2] > hdr[0] || hdr[6] > m ||
        hdr[7] > nhm)
        return AKV_ECORRUPT;
    sscf *s = sscf_alloc(m, nhm, adaptive, wide);
    if (!s)
        return AKV_ENOMEM;
    s->k = k;
    s->capacity = hdr[0];
    s->base.n_keys = hdr[1];
    s->encoded = hdr[2];
    s->absorbed = hdr[3];
    s->modulated = hdr[4];
    s->mod_failed = hdr[5];
    s->pc_sat = hdr[6];
    s->mc_sat = hdr[7];
    akvi_r_bytes(&r, s->pc, (size_t)pc_bytes(s));
    if (wide)
        akvi_r_bytes(&r, s->nc, (size_t)bitset_bytes(m));
    if (wide && adaptive)
        akvi_r_bytes(&r, s->ab, (size_t)bitset_bytes(m));
    akvi_r_bytes(&r, s->hm, (size_t)hm_bytes(s));
    if (!akvi_r_done(&r) || !sscf_arrays_valid(s)) {
        akvi_kind_sscf.destroy(&s->base);
        return AKV_ECORRUPT;
    }
    *out = &s->base;
    return AKV_OK;
}

static void sscf_destroy(akv_filter *f)
{
    sscf *s = (sscf *)f;
    pthread_mutex_destroy(&s->wlock);
    free(s->pc);
    free(s->nc);
    free(s->ab);
    free(s->hm);
    free(s);
}

static double sscf_fpr_theory(const akv_filter *f)
{
    /* With nothing sealed the filter is exactly a CBF over its counters;
     * once negatives are sealed the paper gives no closed form. */
    sscf *s = (sscf *)f;
    pthread_mutex_lock(&s->wlock);
    bool sealed = s->encoded || s->absorbed;
    pthread_mutex_unlock(&s->wlock);
    if (sealed)
        return NAN;
    double q = 1.0 - exp((double)s->k * (double)f->n_keys * log1p(-1.0 / (double)s->m));
    return pow(q, s->k);
}

const akv_filter_kind akvi_kind_sscf = {
    .name = "sscf",
    .id = 30,
    .payload_version = 2,
    .flags = AKV_FK_DYNAMIC | AKV_FK_ABSORB | AKV_FK_COSTED | AKV_FK_CONCURRENT,
    .summary = "Seesaw Counting Filter (ada-SSCF): counting filter guarding costly negatives, learns more at "
               "runtime",
    .create = sscf_create,
    .add = sscf_insert,
    .finish = sscf_finish,
    .may_contain = sscf_may_contain,
    .memory_bytes = sscf_memory,
    .save = sscf_save,
    .load = sscf_load,
    .destroy = sscf_destroy,
    .insert = sscf_insert,
    .remove = sscf_remove,
    .absorb = sscf_absorb,
    .describe = sscf_describe,
    .stats = sscf_stats,
    .fpr_theory = sscf_fpr_theory,
};
