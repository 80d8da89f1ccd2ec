/*
 * habf.c — Hash Adaptive Bloom Filter and its fast variant (kinds `habf`,
 * `fhabf`; Xie et al., ICDE 2021; docs/filters.md, "Cost-aware filters").
 *
 * A static filter built at finish from the buffered key hashes plus the
 * costed negatives handed to create. Every key uses the shared initial
 * functions H_0 = {1..k}; TPJO moves single-owner bits of a few positive
 * keys to other functions so that costly negatives stop colliding, and
 * records each moved key's function sequence in the HashExpressor. A query
 * tests H_0, then (if that fails) the sequence the expressor returns.
 *
 * Memory: bits_per_key × n in total (n = expected_keys, else keys added),
 * split HashExpressor : Bloom = 1 : 4. k defaults to the Bloom optimum for
 * the Bloom share, within 3..5 (the paper fixes 3). Without costed negatives the
 * expressor is useless, so the whole budget goes to the Bloom bits and k is
 * the Bloom optimum (capped at |H|): the filter is then a plain Bloom filter.
 *
 * Deviations from the authors' code (docs/filters.md, "How they are
 * built", "Differences from the authors' code"): every
 * function of H is a candidate (Q1); negatives turned into false positives
 * by a commit go back on the queue (Q2); a queued negative already fixed is
 * re-registered as optimized (Q3); a candidate mapping back to the vacated
 * bit is skipped (Q5); Γ tracks exactly the negatives that currently pass
 * round 1 as negative, including ones fixed as a side effect of a commit;
 * among equally cheap moves HABF takes the one whose expressor chain reuses
 * the most written cells (the paper's tie-break), f-HABF the first free one.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "filters/hash_expressor.h"
#include "util/bits.h"
#include "util/codec.h"
#include "util/order.h"

#define NIL            UINT32_MAX
#define HABF_K_MIN     3 /* default k range with negatives (see habf_default_k) */
#define HABF_K_MAX     5
#define HABF_HE_SHARE  0.2 /* Δ = HE/BF = 0.25, i.e. 1/5 of the total */
#define BUILD_PREFETCH 16  /* keys ahead when prefetching V */

typedef struct habf {
    akv_filter base;
    akvi_hfam fam;
    uint64_t m;     /* Bloom bits */
    uint32_t k;     /* functions per key */
    uint32_t nfunc; /* |H| = 2^(α−1) − 1 */
    uint8_t h0[AKV_HE_MAX_K];
    akvi_he he;
    uint8_t *bf; /* NULL until finish */
    /* build input */
    akv_hash *keys;
    size_t nkeys, capkeys;
    akv_negative *neg;
    uint32_t nneg;
    double bpk;
    uint64_t expected;
    bool broken; /* construction failed after the keys were released */
    /* build outcome, for describe/stats */
    uint64_t adjusted, queued, negatives;
    double fp_cost_before, fp_cost_after, total_cost;
} habf;

extern const akv_filter_kind akvi_kind_habf, akvi_kind_fhabf;

static unsigned habf_alpha(bool fast)
{
    return fast ? 5 : 4;
}

static int habf_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out,
                       bool fast)
{
    unsigned alpha = habf_alpha(fast);
    unsigned nfunc = (1u << (alpha - 1)) - 1;
    if (p->num_hashes > AKV_HE_MAX_K || p->num_hashes >= nfunc || n_neg >= NIL)
        return AKV_EINVAL;
    habf *f = calloc(1, sizeof *f);
    if (!f)
        return AKV_ENOMEM;
    f->base.kind = fast ? &akvi_kind_fhabf : &akvi_kind_habf;
    f->fam = (akvi_hfam){p->seed, fast};
    f->nfunc = nfunc;
    f->k = p->num_hashes;
    f->bpk = p->bits_per_key;
    f->expected = p->expected_keys;
    f->he.alpha = alpha;
    /* Reserve the announced key count: growing a large buffer by copying
     * would cost a visible share of the build. */
    if (p->expected_keys && p->expected_keys < NIL) {
        f->keys = malloc(p->expected_keys * sizeof *f->keys);
        f->capkeys = f->keys ? p->expected_keys : 0;
    }
    f->neg = malloc((n_neg ? n_neg : 1) * sizeof *f->neg);
    if (!f->neg) {
        free(f->keys);
        free(f);
        return AKV_ENOMEM;
    }
    /* Zero-cost negatives never change the weighted FPR: drop them (Q9). */
    for (size_t i = 0; i < n_neg; i++)
        if (neg[i].cost > 0 && isfinite(neg[i].cost))
            f->neg[f->nneg++] = neg[i];
    *out = &f->base;
    return AKV_OK;
}

static int habf_create_slow(const akv_filter_params *p, const akv_negative *neg, size_t n_neg,
                            akv_filter **out)
{
    return habf_create(p, neg, n_neg, out, false);
}

static int habf_create_fast(const akv_filter_params *p, const akv_negative *neg, size_t n_neg,
                            akv_filter **out)
{
    return habf_create(p, neg, n_neg, out, true);
}

static int habf_add(akv_filter *base, akv_hash h)
{
    habf *f = (habf *)base;
    if (f->bf)
        return AKV_EINVAL; /* static: sealed at finish */
    if (f->nkeys == f->capkeys) {
        size_t cap = f->capkeys ? 2 * f->capkeys : 1024;
        if (cap >= NIL)
            return AKV_EFULL;
        akv_hash *k = realloc(f->keys, cap * sizeof *k);
        if (!k)
            return AKV_ENOMEM;
        f->keys = k;
        f->capkeys = cap;
    }
    f->keys[f->nkeys++] = h;
    base->n_keys++;
    return AKV_OK;
}

/* ---- query -------------------------------------------------------------- */

static inline bool bf_test(const habf *f, akv_hash h, const uint8_t *phi)
{
    for (uint32_t i = 0; i < f->k; i++)
        if (!akvi_bit_get(f->bf, akvi_hfam_bit(f->fam, h, phi[i], f->m)))
            return false;
    return true;
}

static bool habf_may_contain(const akv_filter *base, akv_hash h)
{
    const habf *f = (const habf *)base;
    if (!f->bf)
        return true; /* not built yet: "maybe" is always safe */
    if (bf_test(f, h, f->h0))
        return true;
    uint8_t phi[AKV_HE_MAX_K];
    if (!f->he.omega || !akvi_he_query(&f->he, f->fam, h, f->k, phi))
        return false;
    return bf_test(f, h, phi);
}

/* ---- TPJO construction ---------------------------------------------------- */

typedef struct build {
    habf *f;
    uint32_t n, nn, k;
    uint32_t *keyid; /* V: the positive key owning each bit, NIL if none */
    uint8_t *shared; /* V: bit owned by more than one (key, function) pair */
    uint8_t *phi;    /* current functions of each positive (n × k) */
    uint64_t *npos;  /* H_0 bits of each negative (nn × k) */
    uint8_t *ing;    /* negative currently rejected by round 1 (Γ member) */
    uint32_t *boff;  /* Γ as CSR over all negatives: bucket b = bent[boff[b]..boff[b+1]) */
    uint32_t *bent;
    uint32_t *cq; /* collision queue */
    size_t cqn, cqcap;
} build;

static void v_insert(build *b, uint64_t u, uint32_t e)
{
    if (b->keyid[u] == NIL)
        b->keyid[u] = e;
    else
        akvi_bit_set(b->shared, u);
}

static bool neg_is_fp(const build *b, uint32_t e)
{
    for (uint32_t j = 0; j < b->k; j++)
        if (b->keyid[b->npos[(size_t)e * b->k + j]] == NIL)
            return false;
    return true;
}

static int cq_push(build *b, uint32_t e)
{
    if (b->cqn == b->cqcap) {
        size_t cap = b->cqcap ? 2 * b->cqcap : 1024;
        uint32_t *q = realloc(b->cq, cap * sizeof *q);
        if (!q)
            return AKV_ENOMEM;
        b->cq = q;
        b->cqcap = cap;
    }
    b->cq[b->cqn++] = e;
    return AKV_OK;
}

typedef struct costed_id {
    double cost;
    uint32_t id;
} costed_id;

/* Costliest first; ties by negative id so builds are deterministic. */
static int cmp_cost_desc(const void *a, const void *b)
{
    const costed_id *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int sort_cq(build *b)
{
    costed_id *t = malloc((b->cqn ? b->cqn : 1) * sizeof *t);
    if (!t)
        return AKV_ENOMEM;
    for (size_t i = 0; i < b->cqn; i++)
        t[i] = (costed_id){b->f->neg[b->cq[i]].cost, b->cq[i]};
    akvi_sort(t, b->cqn, sizeof *t, cmp_cost_desc);
    for (size_t i = 0; i < b->cqn; i++)
        b->cq[i] = t[i].id;
    free(t);
    return AKV_OK;
}

/* Γ holds every negative once per distinct H_0 bit; membership is ing[]. */
static int build_gamma(build *b, uint64_t m)
{
    b->boff = calloc(m + 2, sizeof *b->boff);
    b->bent = malloc(((size_t)b->nn * b->k + 1) * sizeof *b->bent);
    if (!b->boff || !b->bent)
        return AKV_ENOMEM;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t e = 0; e < b->nn; e++) {
            const uint64_t *p = &b->npos[(size_t)e * b->k];
            for (uint32_t j = 0; j < b->k; j++) {
                bool dup = false;
                for (uint32_t i = 0; i < j; i++)
                    dup |= p[i] == p[j];
                if (dup)
                    continue;
                if (pass == 0)
                    b->boff[p[j] + 2]++;
                else
                    b->bent[b->boff[p[j] + 1]++] = e;
            }
        }
        if (pass == 0)
            for (uint64_t u = 2; u < m + 2; u++)
                b->boff[u] += b->boff[u - 1];
    }
    return AKV_OK;
}

/* Cost of the Γ negatives of bucket u2 that setting bit u2 would turn into
 * false positives, with bit u (being vacated) counted as 0: the paper's
 * Algorithm 1, refined by that vacated bit. Stops once the cost reaches
 * `limit`. */
static double detect_conflict(const build *b, uint64_t u2, uint64_t u, double limit)
{
    double cost = 0;
    for (uint32_t x = b->boff[u2]; x < b->boff[u2 + 1]; x++) {
        uint32_t e = b->bent[x];
        if (!b->ing[e])
            continue;
        bool all = true;
        for (uint32_t j = 0; j < b->k && all; j++) {
            uint64_t p = b->npos[(size_t)e * b->k + j];
            if (p != u2 && (p == u || b->keyid[p] == NIL))
                all = false;
        }
        if (all && (cost += b->f->neg[e].cost) >= limit)
            return cost;
    }
    return cost;
}

typedef struct move {
    uint32_t pk;
    unsigned overlap; /* chain cells already holding the needed index */
    uint64_t u, u2;
    uint8_t seq[AKV_HE_MAX_K];
} move;

/* Apply a move: pk's function on bit u is replaced, its chain stored. */
static int commit(build *b, const move *mv)
{
    habf *f = b->f;
    akvi_he_write(&f->he, f->fam, f->keys[mv->pk], mv->seq, b->k);
    memcpy(&b->phi[(size_t)mv->pk * b->k], mv->seq, b->k);
    b->keyid[mv->u] = NIL;
    f->adjusted++;
    if (b->boff) /* everything on the cleared bit is now rejected by round 1 */
        for (uint32_t x = b->boff[mv->u]; x < b->boff[mv->u + 1]; x++)
            b->ing[b->bent[x]] = 1;
    if (b->keyid[mv->u2] != NIL) {
        akvi_bit_set(b->shared, mv->u2);
        return AKV_OK;
    }
    b->keyid[mv->u2] = mv->pk;
    if (!b->boff)
        return AKV_OK;
    for (uint32_t x = b->boff[mv->u2]; x < b->boff[mv->u2 + 1]; x++) {
        uint32_t e = b->bent[x];
        if (b->ing[e] && neg_is_fp(b, e)) { /* new collision key: queue it again */
            b->ing[e] = 0;
            if (cq_push(b, e) != AKV_OK)
                return AKV_ENOMEM;
        }
    }
    return AKV_OK;
}

/* Phase I + II for one collision key: over its single-owner bits and every
 * replacement function of the owner that fits the expressor, take the first
 * move onto an already-set bit, else (HABF only) the cheapest one whose new
 * collisions cost less than ck. Returns whether a move was committed. */
static int fix_collision(build *b, uint32_t ck, bool *fixed)
{
    habf *f = b->f;
    double theta = f->neg[ck].cost, best_cost = INFINITY;
    move best = {0}, mv;
    bool have = false;
    *fixed = false;
    for (uint32_t j = 0; j < b->k; j++) {
        mv.u = b->npos[(size_t)ck * b->k + j];
        if (akvi_bit_get(b->shared, mv.u))
            continue;
        mv.pk = b->keyid[mv.u];
        akv_hash hk = f->keys[mv.pk];
        uint8_t phi[AKV_HE_MAX_K];
        memcpy(phi, &b->phi[(size_t)mv.pk * b->k], b->k);
        uint32_t slot = 0;
        while (slot < b->k && akvi_hfam_bit(f->fam, hk, phi[slot], f->m) != mv.u)
            slot++;
        if (slot == b->k)
            continue; /* cannot happen: the owner maps to its bit */
        for (uint8_t c = 1; c <= f->nfunc; c++) {
            if (memchr(phi, c, b->k))
                continue;
            mv.u2 = akvi_hfam_bit(f->fam, hk, c, f->m);
            if (mv.u2 == mv.u)
                continue;
            uint8_t cand[AKV_HE_MAX_K];
            memcpy(cand, phi, b->k);
            cand[slot] = c;
            if (!akvi_he_find_seq(&f->he, f->fam, hk, cand, b->k, mv.seq))
                continue;
            double cost = 0;
            if (b->keyid[mv.u2] == NIL) {
                if (f->fam.fast)
                    continue; /* f-HABF: no Γ, only collision-free moves */
                /* stop early only once it is surely worse than the best (ties count) */
                cost = detect_conflict(b, mv.u2, mv.u, fmin(theta, nextafter(best_cost, INFINITY)));
                if (!(cost < theta))
                    continue;
            }
            /* Cheapest first; among equals the chain that reuses the most
             * written cells, which keeps the expressor sparse (the paper's
             * tie-break; docs/filters.md, "How they are built"). */
            mv.overlap = f->fam.fast ? 0 : akvi_he_overlap(&f->he, f->fam, hk, mv.seq, b->k);
            if (cost < best_cost || (cost == best_cost && mv.overlap > best.overlap)) {
                best = mv;
                best_cost = cost;
                have = true;
                /* Nothing beats a free move on existing cells; f-HABF takes
                 * the first free move that fits, as the paper's fast variant. */
                if (cost == 0 && (mv.overlap == b->k || f->fam.fast))
                    goto done;
            }
        }
    }
done:
    if (!have)
        return AKV_OK;
    *fixed = true;
    return commit(b, &best);
}

static void build_free(build *b)
{
    free(b->keyid);
    free(b->shared);
    free(b->phi);
    free(b->npos);
    free(b->ing);
    free(b->boff);
    free(b->bent);
    free(b->cq);
}

static double fp_cost(const build *b)
{
    double c = 0;
    for (uint32_t e = 0; e < b->nn; e++)
        if (neg_is_fp(b, e))
            c += b->f->neg[e].cost;
    return c;
}

/* Set up V, the negatives' bits, Γ and the sorted collision queue. */
static int build_init(build *b)
{
    habf *f = b->f;
    uint64_t m = f->m;
    b->keyid = malloc(m * sizeof *b->keyid);
    b->shared = calloc(1, akvi_bits_bytes(m));
    b->phi = malloc((size_t)b->n * b->k + 1);
    b->npos = malloc(((size_t)b->nn * b->k + 1) * sizeof *b->npos);
    b->ing = calloc((size_t)b->nn + 1, 1);
    if (!b->keyid || !b->shared || !b->phi || !b->npos || !b->ing)
        return AKV_ENOMEM;
    memset(b->keyid, 0xff, m * sizeof *b->keyid);
    /* V and the negatives' lookups are random accesses into an array far
     * larger than the caches: prefetch a few keys ahead. */
    for (uint32_t e = 0; e < b->n; e++) {
        if (e + BUILD_PREFETCH < b->n)
            for (uint32_t j = 0; j < b->k; j++)
                __builtin_prefetch(&b->keyid[akvi_hfam_bit(f->fam, f->keys[e + BUILD_PREFETCH], f->h0[j], m)],
                                   1);
        memcpy(&b->phi[(size_t)e * b->k], f->h0, b->k);
        for (uint32_t j = 0; j < b->k; j++)
            v_insert(b, akvi_hfam_bit(f->fam, f->keys[e], f->h0[j], m), e);
    }
    for (uint32_t e = 0; e < b->nn; e++)
        for (uint32_t j = 0; j < b->k; j++)
            b->npos[(size_t)e * b->k + j] = akvi_hfam_bit(f->fam, f->neg[e].h, f->h0[j], m);
    if (!f->fam.fast && build_gamma(b, m) != AKV_OK)
        return AKV_ENOMEM;
    for (uint32_t e = 0; e < b->nn; e++) {
        if (e + BUILD_PREFETCH < b->nn)
            for (uint32_t j = 0; j < b->k; j++)
                __builtin_prefetch(&b->keyid[b->npos[(size_t)(e + BUILD_PREFETCH) * b->k + j]]);
        if (!neg_is_fp(b, e))
            b->ing[e] = 1;
        else if (cq_push(b, e) != AKV_OK)
            return AKV_ENOMEM;
        else
            f->fp_cost_before += f->neg[e].cost;
    }
    return sort_cq(b);
}

static int tpjo(habf *f)
{
    build b = {.f = f, .n = (uint32_t)f->nkeys, .nn = f->nneg, .k = f->k};
    int rc = build_init(&b);
    f->queued = b.cqn;
    /* Each commit strictly lowers the round-1 false-positive cost, so the
     * loop ends; the cap only bounds pathological floating-point cases. */
    size_t cap = 8 * (size_t)b.nn + b.cqn;
    for (size_t i = 0; rc == AKV_OK && i < b.cqn && i < cap; i++) {
        uint32_t ck = b.cq[i];
        bool fixed;
        if (!neg_is_fp(&b, ck)) { /* fixed by an earlier commit (Q3) */
            b.ing[ck] = 1;
            continue;
        }
        rc = fix_collision(&b, ck, &fixed);
    }
    if (rc == AKV_OK) {
        f->fp_cost_after = fp_cost(&b);
        for (uint64_t u = 0; u < f->m; u++)
            if (b.keyid[u] != NIL)
                akvi_bit_set(f->bf, u);
    }
    build_free(&b);
    return rc;
}

/* The Bloom optimum for the Bloom share of the budget, kept within the
 * paper's best range 3..5: a larger k leaves too few replacement functions
 * per key and fills the expressor faster. On the Shalla-like set it halves
 * the weighted FPR of the paper's fixed k = 3 at 8.44 bits/key and divides
 * it by 7 at 11.25, and lowers the FPR on unseen keys too. */
static uint32_t habf_default_k(double bpk)
{
    long k = lround(M_LN2 * bpk * (1 - HABF_HE_SHARE));
    return (uint32_t)(k < HABF_K_MIN ? HABF_K_MIN : k > HABF_K_MAX ? HABF_K_MAX : k);
}

/* Sizing; then either a plain Bloom build (no costed negatives) or TPJO. */
static int habf_finish(akv_filter *base)
{
    habf *f = (habf *)base;
    if (f->bf)
        return AKV_OK;
    uint64_t n = f->expected ? f->expected : (f->nkeys ? f->nkeys : 1);
    double total = ceil(f->bpk * (double)n);
    uint64_t omega = 0;
    if (f->broken)
        return AKV_ENOMEM; /* the buffered keys are gone: stay "maybe" */
    if (f->nneg) {
        uint32_t k = f->k ? f->k : habf_default_k(f->bpk);
        omega = (uint64_t)(total * HABF_HE_SHARE) / f->he.alpha;
        if (omega < 2 * (uint64_t)k + 2)
            omega = 0; /* too small to hold a chain: plain Bloom */
        else
            f->k = k;
    }
    if (!f->k) {
        long k = lround(f->bpk * M_LN2), kmax = f->nfunc < AKV_HE_MAX_K ? (long)f->nfunc : AKV_HE_MAX_K;
        f->k = (uint32_t)(k < 1 ? 1 : k > kmax ? kmax : k);
    }
    double mb = total - (double)(omega * f->he.alpha);
    f->m = mb < 64 ? 64 : (uint64_t)mb;
    for (uint32_t i = 0; i < f->k; i++)
        f->h0[i] = (uint8_t)(i + 1);
    f->bf = calloc(1, akvi_bits_bytes(f->m));
    if (!f->bf || akvi_he_init(&f->he, omega, f->he.alpha) != AKV_OK) {
        free(f->bf); /* unbuilt: keep answering "maybe" */
        f->bf = NULL;
        return AKV_ENOMEM;
    }
    for (uint32_t e = 0; e < f->nneg; e++)
        f->total_cost += f->neg[e].cost;
    f->negatives = f->nneg;
    int rc = AKV_OK;
    if (omega)
        rc = tpjo(f);
    else
        for (size_t i = 0; i < f->nkeys; i++)
            for (uint32_t j = 0; j < f->k; j++)
                akvi_bit_set(f->bf, akvi_hfam_bit(f->fam, f->keys[i], f->h0[j], f->m));
    free(f->keys);
    free(f->neg);
    f->keys = NULL;
    f->neg = NULL;
    f->nkeys = f->capkeys = 0;
    f->nneg = 0;
    if (rc != AKV_OK) { /* a half-built array could answer "no" for a key */
        free(f->bf);
        f->bf = NULL;
        f->broken = true;
    }
    return rc;
}

/* ---- size, stats, serialization ----------------------------------------- */

static size_t habf_memory(const akv_filter *base)
{
    const habf *f = (const habf *)base;
    return (size_t)((f->m + 7) / 8 + akvi_he_bytes(&f->he));
}

static double habf_fpr_theory(const akv_filter *base)
{
    const habf *f = (const habf *)base;
    if (!f->bf || f->he.omega)
        return NAN; /* the optimised filter has no closed form */
    double zero = exp((double)f->k * (double)base->n_keys * log1p(-1.0 / (double)f->m));
    return pow(1.0 - zero, f->k);
}

static int habf_describe(const akv_filter *base, char *buf, size_t cap)
{
    const habf *f = (const habf *)base;
    return snprintf(buf, cap,
                    "\"m\":%llu,\"k\":%u,\"omega\":%llu,\"alpha\":%u,\"functions\":%u,\"negatives\":%llu,"
                    "\"queued\":%llu,\"adjusted\":%llu,\"fp_cost_before\":%.17g,\"fp_cost_after\":%.17g,"
                    "\"total_cost\":%.17g",
                    (unsigned long long)f->m, f->k, (unsigned long long)f->he.omega, f->he.alpha, f->nfunc,
                    (unsigned long long)f->negatives, (unsigned long long)f->queued,
                    (unsigned long long)f->adjusted, f->fp_cost_before, f->fp_cost_after, f->total_cost);
}

static void habf_stats(const akv_filter *base, akv_filter_stats *out)
{
    const habf *f = (const habf *)base;
    out->adaptations = f->adjusted;
    out->adapt_bits = f->he.omega * f->he.alpha;
}

static int habf_save(const akv_filter *base, uint8_t *buf, size_t *len)
{
    const habf *f = (const habf *)base;
    if (!f->bf)
        return AKV_EINVAL; /* only a built filter has a payload */
    akvi_wbuf w = {buf, 0};
    akvi_w_u8(&w, f->fam.fast);
    akvi_w_u8(&w, (uint8_t)f->k);
    akvi_w_u8(&w, (uint8_t)f->he.alpha);
    akvi_w_u8(&w, (uint8_t)f->nfunc);
    akvi_w_bytes(&w, f->h0, f->k);
    akvi_w_u64(&w, f->fam.seed);
    akvi_w_u64(&w, f->m);
    akvi_w_u64(&w, f->he.omega);
    akvi_w_u64(&w, base->n_keys);
    akvi_w_u64(&w, f->negatives);
    akvi_w_u64(&w, f->queued);
    akvi_w_u64(&w, f->adjusted);
    akvi_w_f64(&w, f->fp_cost_before);
    akvi_w_f64(&w, f->fp_cost_after);
    akvi_w_f64(&w, f->total_cost);
    akvi_w_bytes(&w, f->bf, (size_t)((f->m + 7) / 8));
    akvi_w_bytes(&w, f->he.bits, (size_t)akvi_he_bytes(&f->he));
    *len = w.len;
    return AKV_OK;
}

/* Bits past `nbits` in the last byte must be zero (canonical encoding). */
static bool tail_clean(const uint8_t *b, uint64_t nbits)
{
    return (nbits & 7) == 0 || (b[nbits >> 3] >> (nbits & 7)) == 0;
}

static bool h0_valid(const uint8_t *h0, unsigned k, unsigned nfunc)
{
    for (unsigned i = 0; i < k; i++) {
        if (h0[i] < 1 || h0[i] > nfunc)
            return false;
        for (unsigned j = 0; j < i; j++)
            if (h0[j] == h0[i])
                return false;
    }
    return true;
}

static bool he_valid(const akvi_he *he)
{
    if (!tail_clean(he->bits, he->omega * he->alpha))
        return false;
    for (uint64_t c = 0; c < he->omega; c++)
        if (akvi_he_get(he, c) == 1) /* an endbit without an index is never written */
            return false;
    return true;
}

static bool stats_valid(double a, double b, double t)
{
    return isfinite(a) && isfinite(b) && isfinite(t) && a >= 0 && b >= 0 && b <= a && a <= t * (1 + 1e-9);
}

static int habf_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out, bool fast)
{
    (void)ver;
    akvi_rbuf r = {buf, len, 0, false};
    uint8_t ffast = akvi_r_u8(&r), k = akvi_r_u8(&r), alpha = akvi_r_u8(&r), nfunc = akvi_r_u8(&r);
    uint8_t h0[AKV_HE_MAX_K] = {0};
    if (r.err || ffast != fast || alpha != habf_alpha(fast) || nfunc != (1u << (alpha - 1)) - 1 || k < 1 ||
        k > AKV_HE_MAX_K || k > nfunc || !akvi_r_bytes(&r, h0, k) || !h0_valid(h0, k, nfunc))
        return AKV_ECORRUPT;
    uint64_t seed = akvi_r_u64(&r), m = akvi_r_u64(&r), omega = akvi_r_u64(&r), n = akvi_r_u64(&r);
    uint64_t negs = akvi_r_u64(&r), queued = akvi_r_u64(&r), adjusted = akvi_r_u64(&r);
    double before = akvi_r_f64(&r), after = akvi_r_f64(&r), total = akvi_r_f64(&r);
    /* Both arrays are the tail: bound m and omega by it (by division, which
     * cannot wrap) before any size is computed from them. */
    uint64_t left = akvi_r_left(&r);
    if (r.err || m < 64 || m / 8 > left || omega / 8 > left || (omega && omega < 2u * k + 2) ||
        akvi_bytes_of_bits(m) + akvi_bytes_of_bits(akvi_size_mul_add(omega, alpha, 0)) != left ||
        queued > negs || adjusted > 8 * negs + queued || !stats_valid(before, after, total))
        return AKV_ECORRUPT;
    habf *f = calloc(1, sizeof *f);
    if (!f)
        return AKV_ENOMEM;
    f->base.kind = fast ? &akvi_kind_fhabf : &akvi_kind_habf;
    f->base.n_keys = n;
    f->fam = (akvi_hfam){seed, fast};
    f->m = m;
    f->k = k;
    f->nfunc = nfunc;
    memcpy(f->h0, h0, k);
    f->negatives = negs;
    f->queued = queued;
    f->adjusted = adjusted;
    f->fp_cost_before = before;
    f->fp_cost_after = after;
    f->total_cost = total;
    f->bf = calloc(1, akvi_bits_bytes(m));
    if (!f->bf || akvi_he_init(&f->he, omega, alpha) != AKV_OK) {
        free(f->bf);
        free(f);
        return AKV_ENOMEM;
    }
    akvi_r_bytes(&r, f->bf, (size_t)((m + 7) / 8));
    akvi_r_bytes(&r, f->he.bits, (size_t)akvi_he_bytes(&f->he));
    if (!akvi_r_done(&r) || !tail_clean(f->bf, m) || !he_valid(&f->he)) {
        akvi_he_free(&f->he);
        free(f->bf);
        free(f);
        return AKV_ECORRUPT;
    }
    *out = &f->base;
    return AKV_OK;
}

static int habf_load_slow(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    return habf_load(buf, len, ver, out, false);
}

static int habf_load_fast(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    return habf_load(buf, len, ver, out, true);
}

static void habf_destroy(akv_filter *base)
{
    habf *f = (habf *)base;
    akvi_he_free(&f->he);
    free(f->bf);
    free(f->keys);
    free(f->neg);
    free(f);
}

const akv_filter_kind akvi_kind_habf = {
    .name = "habf",
    .id = 20,
    .payload_version = 1,
    .flags = AKV_FK_COSTED,
    .summary = "Hash Adaptive Bloom filter: per-key hash choice tuned against costed negatives (TPJO)",
    .create = habf_create_slow,
    .add = habf_add,
    .finish = habf_finish,
    .may_contain = habf_may_contain,
    .memory_bytes = habf_memory,
    .save = habf_save,
    .load = habf_load_slow,
    .destroy = habf_destroy,
    .describe = habf_describe,
    .stats = habf_stats,
    .fpr_theory = habf_fpr_theory,
};

const akv_filter_kind akvi_kind_fhabf = {
    .name = "fhabf",
    .id = 21,
    .payload_version = 1,
    .flags = AKV_FK_COSTED,
    .summary = "fast HABF: double hashing, only collision-free hash moves (no conflict detection)",
    .create = habf_create_fast,
    .add = habf_add,
    .finish = habf_finish,
    .may_contain = habf_may_contain,
    .memory_bytes = habf_memory,
    .save = habf_save,
    .load = habf_load_fast,
    .destroy = habf_destroy,
    .describe = habf_describe,
    .stats = habf_stats,
    .fpr_theory = habf_fpr_theory,
};
