/*
 * fuse.c — kind `fuse` (id 7): a binary fuse filter, 3- or 4-wise (Graf &
 * Lemire, "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022).
 * A static filter whose false-positive rate is 2^-f for f-bit fingerprints
 * at about 1.125·f bits a key (3-wise) or 1.075·f (4-wise) for large n,
 * against a Bloom filter's 1.44·log2(1/ε) (docs/filters.md, "Binary fuse
 * filter").
 *
 * Layout: an array of m = (segments + k − 1) · L cells of f bits each, k
 * the arity, packed into a bit array (f is any width from 1 to 32, so the
 * budget is used to the bit); L, the segment length, is a power of two. A
 * key's 64-bit value x = mix64(h.hi + seed) ^ h.lo names k cells: p0 in
 * the first `segments` segments (multiply-shift of x over segments · L),
 * then one in each of the next k − 1 segments (p0 + L, p0 + 2L, p0 + 3L,
 * each with its offset inside the segment flipped by 18 bits of x, or of
 * mix64(x) for the fourth), and a fingerprint fp(x) = the low f bits of
 * x ^ (x >> 32). The filter holds a key when its k cells xor to fp(x): a
 * stored key always matches (no false negatives); another key matches
 * with probability 2^-f.
 *
 * Build (finish): the keys' values are sorted and deduplicated (equal
 * values name the same cells and fingerprint, so one entry answers for
 * all of them), then peeled: every cell counts the keys that name it and
 * xors their values; a cell named by one key gives that key to a stack
 * and the key leaves its other cells, which may become single in turn.
 * When every key is on the stack, the cells are assigned in reverse stack
 * order, each key's own cell set so that its k cells xor to its
 * fingerprint. When some remain (a cycle, rare at the paper's sizes), the
 * build retries with a new seed, and every 32 failed seeds with one more
 * segment. Sorting the values first makes p0 ascend, so the peeling walks
 * the array nearly in order (the paper's cache argument).
 *
 * Sizing (the paper's, n distinct keys): 3-wise, L = 2^⌊ln n / ln 3.33 +
 * 2.25⌋ and capacity n · max(1.125, 0.875 + 0.25 · ln 10^6 / ln n); 4-wise,
 * L = 2^⌊ln n / ln 2.91 − 0.5⌋ and capacity n · max(1.075, 0.77 + 0.305 ·
 * ln 600000 / ln n); L within 4..2^18, segments = max(1, ⌈capacity / L⌉ −
 * (k − 1)). The fingerprint width f is the largest whose m · f bits fit
 * bits_per_key · n (at least 1: a tiny budget builds a 1-bit filter, over
 * budget, rather than fail). The arity is the one that leaves the wider f,
 * 3 on a tie: the fourth cell costs a query one more cache line, and pays
 * when it halves the false-positive rate (at 10 bits a key, from ~300k
 * keys: docs/filters.md).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "fuse.h"
#include "util/codec.h"
#include "util/grow.h"

#define MAX_F       32u
#define MAX_ARITY   4
#define MAX_SEGLEN  (1u << 18)
#define MAX_SEEDS   1024u /* seeds tried before the build gives up */
#define GROW_EVERY  32u   /* failed seeds before one more segment */
#define SEED_STRIDE 0x9e3779b97f4a7c15ULL

typedef struct fuse {
    akv_filter base;
    double bpk;        /* build only: the budget */
    uint64_t seed;     /* mixes h.hi into x */
    uint32_t f;        /* fingerprint bits, 1..32; 0 with no keys */
    uint32_t arity;    /* cells a key names: 3 or 4 */
    uint32_t seglen;   /* L, a power of two */
    uint64_t segments; /* p0 ranges over segments · L cells */
    uint64_t cells;    /* m = (segments + arity − 1) · L; 0 when empty */
    uint8_t *bits;     /* m · f bits, then 8 bytes of padding */
    uint64_t distinct; /* keys after deduplication */
    akv_hash *hs;      /* build only: the added hashes */
    size_t n_hs, cap_hs;
    bool finished;
} fuse;

/* ---- hashing ----------------------------------------------------------- */

static inline uint64_t key_value(uint64_t seed, akv_hash h)
{
    return akv_mix64(h.hi + seed) ^ h.lo;
}

static inline uint32_t fingerprint(const fuse *u, uint64_t x)
{
    uint64_t v = x ^ (x >> 32);
    return (uint32_t)(v & (((uint64_t)1 << u->f) - 1));
}

/* The key's cells: p0 from the high bits of x, one cell in each of the
 * next arity − 1 segments, offsets flipped by bits of x the high bits do
 * not feed (bits 0–17 and 18–35; the fourth cell's from a second mix). */
static inline void positions(const fuse *u, uint64_t x, uint64_t p[MAX_ARITY])
{
    uint64_t mask = u->seglen - 1, L = u->seglen;
    p[0] = akv_reduce(x, u->segments * L);
    p[1] = (p[0] + L) ^ ((x >> 18) & mask);
    p[2] = (p[0] + 2 * L) ^ (x & mask);
    if (u->arity == 4)
        p[3] = (p[0] + 3 * L) ^ (akv_mix64(x) & mask);
}

/* ---- the packed array --------------------------------------------------- */

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static inline void store_le64(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    memcpy(p, &v, 8);
}

/* Cell i: f bits at bit i·f; f + 7 ≤ 39 bits fit one unaligned 64-bit load. */
static inline uint32_t cell_get(const fuse *u, uint64_t i)
{
    uint64_t bit = i * u->f;
    return (uint32_t)((load_le64(u->bits + bit / 8) >> (bit % 8)) & (((uint64_t)1 << u->f) - 1));
}

static inline void cell_set(fuse *u, uint64_t i, uint32_t v)
{
    uint64_t bit = i * u->f, mask = (((uint64_t)1 << u->f) - 1) << (bit % 8);
    uint64_t w = load_le64(u->bits + bit / 8);
    store_le64(u->bits + bit / 8, (w & ~mask) | ((uint64_t)v << (bit % 8)));
}

static size_t bits_bytes(uint64_t cells, uint32_t f)
{
    return (size_t)((cells * f + 7) / 8) + 8;
}

/* ---- sizing ------------------------------------------------------------- */

static uint32_t seglen_for(uint64_t n, uint32_t arity)
{
    if (n < 2)
        return 4;
    double ln = log((double)n);
    double e = floor(arity == 4 ? ln / log(2.91) - 0.5 : ln / log(3.33) + 2.25);
    return e <= 2 ? 4 : e >= 18 ? MAX_SEGLEN : (uint32_t)1 << (int)e;
}

static uint64_t segments_for(uint64_t n, uint32_t seglen, uint32_t arity)
{
    double ln = log((double)n);
    double factor = n < 2        ? 4
                    : arity == 4 ? fmax(1.075, 0.77 + 0.305 * log(6e5) / ln)
                                 : fmax(1.125, 0.875 + 0.25 * log(1e6) / ln);
    double cap = ceil((double)n * factor);
    uint64_t s = (uint64_t)ceil(cap / seglen);
    return s > arity ? s - (arity - 1) : 1;
}

/* Largest f whose cells fit the budget; at least 1. */
static uint32_t width_for(double budget_bits, uint64_t cells)
{
    double w = floor(budget_bits / (double)cells);
    return w < 1 ? 1 : w > MAX_F ? MAX_F : (uint32_t)w;
}

/* ---- construction ------------------------------------------------------- */

static int fuse_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    fuse *u = calloc(1, sizeof *u);
    if (!u)
        return AKV_ENOMEM;
    u->base.kind = &akvi_kind_fuse;
    u->bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    u->arity = 3;
    u->seed = p->seed;
    size_t want = p->expected_keys && p->expected_keys < (1u << 20) ? (size_t)p->expected_keys : 1024;
    u->hs = malloc(want * sizeof *u->hs);
    if (!u->hs) {
        free(u);
        return AKV_ENOMEM;
    }
    u->cap_hs = want;
    *out = &u->base;
    return AKV_OK;
}

static int fuse_add(akv_filter *f, akv_hash h)
{
    fuse *u = (fuse *)f;
    if (u->finished)
        return AKV_EINVAL;
    akv_hash *v = akvi_grow(u->hs, &u->cap_hs, u->n_hs + 1, sizeof *v, 1024);
    if (!v)
        return AKV_ENOMEM;
    u->hs = v;
    u->hs[u->n_hs++] = h;
    f->n_keys++;
    return AKV_OK;
}

/* LSD radix sort of x[0..n) by 16-bit digits, tmp as scratch; drops
 * duplicates and returns how many distinct values remain in x. */
static size_t sort_unique(uint64_t *x, uint64_t *tmp, size_t n)
{
    static const unsigned digit = 16, radix = 1u << 16;
    size_t *count = malloc(radix * sizeof *count);
    if (!count)
        return SIZE_MAX;
    uint64_t *src = x, *dst = tmp;
    for (unsigned shift = 0; shift < 64; shift += digit) {
        memset(count, 0, radix * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(src[i] >> shift) & (radix - 1)]++;
        size_t sum = 0;
        for (unsigned d = 0; d < radix; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i] >> shift) & (radix - 1)]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    free(count);
    /* four passes: the sorted values are back in x */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (m == 0 || x[i] != x[m - 1])
            x[m++] = x[i];
    return m;
}

/* One attempt at the current seed and size: true when every key peeled
 * and the cells are assigned. xs: the n distinct values, sorted. */
static bool peel_and_assign(fuse *u, const uint64_t *xs, size_t n, uint32_t *count, uint64_t * xor,
                            uint64_t *queue, uint64_t *stack, uint8_t *which)
{
    uint64_t m = u->cells;
    memset(count, 0, (size_t)m * sizeof *count);
    memset(xor, 0, (size_t)m * sizeof *xor);
    const int k = (int)u->arity;
    for (size_t i = 0; i < n; i++) {
        uint64_t p[MAX_ARITY];
        positions(u, xs[i], p);
        for (int j = 0; j < k; j++) {
            count[p[j]]++;
            xor[p[j]] ^= xs[i];
        }
    }
    size_t qn = 0, sn = 0;
    for (uint64_t c = 0; c < m; c++)
        if (count[c] == 1)
            queue[qn++] = c;
    while (qn) {
        uint64_t c = queue[--qn];
        if (count[c] != 1)
            continue;
        uint64_t x = xor[c], p[MAX_ARITY];
        positions(u, x, p);
        int own = 0;
        while (p[own] != c)
            own++;
        stack[sn] = x;
        which[sn++] = (uint8_t)own;
        for (int j = 0; j < k; j++) {
            count[p[j]]--;
            xor[p[j]] ^= x;
            if (j != own && count[p[j]] == 1)
                queue[qn++] = p[j];
        }
    }
    if (sn != n)
        return false;
    memset(u->bits, 0, bits_bytes(m, u->f));
    while (sn--) {
        uint64_t x = stack[sn], p[MAX_ARITY];
        positions(u, x, p);
        int own = which[sn];
        uint32_t v = fingerprint(u, x);
        for (int j = 0; j < k; j++)
            if (j != own)
                v ^= cell_get(u, p[j]);
        cell_set(u, p[own], v);
    }
    return true;
}

/* Size u for n distinct keys. segments 0: the paper's sizing, at the arity
 * whose cells leave the wider fingerprint in the budget (3 on a tie: one
 * cell less to read); else that many segments at the arity chosen. */
static int size_cells(fuse *u, uint64_t n, uint64_t segments)
{
    double budget = u->bpk * (double)u->base.n_keys;
    if (!segments) {
        uint32_t best_f = 0;
        for (uint32_t a = 3; a <= MAX_ARITY; a++) {
            uint32_t L = seglen_for(n, a);
            uint64_t s = segments_for(n, L, a);
            uint32_t fw = width_for(budget, (s + a - 1) * L);
            if (fw > best_f) {
                best_f = fw;
                u->arity = a;
                u->seglen = L;
                u->segments = s;
            }
        }
    } else {
        u->segments = segments;
    }
    u->cells = (u->segments + u->arity - 1) * u->seglen;
    u->f = width_for(budget, u->cells);
    free(u->bits);
    u->bits = malloc(bits_bytes(u->cells, u->f));
    return u->bits ? AKV_OK : AKV_ENOMEM;
}

static int fuse_finish(akv_filter *f)
{
    fuse *u = (fuse *)f;
    if (u->finished)
        return AKV_EINVAL;
    size_t n = u->n_hs;
    u->finished = true;
    if (n == 0) {
        free(u->hs);
        u->hs = NULL;
        u->cap_hs = 0;
        return AKV_OK; /* no cells: every query answers no */
    }
    int rc = AKV_ENOMEM;
    uint64_t *xs = malloc(n * sizeof *xs), *tmp = malloc(n * sizeof *tmp);
    uint32_t *count = NULL;
    uint64_t *xr = NULL, *queue = NULL, *stack = NULL;
    uint8_t *which = NULL;
    if (!xs || !tmp)
        goto out;
    uint64_t seed = u->seed, segments = 0;
    for (unsigned attempt = 0; attempt < MAX_SEEDS; attempt++) {
        for (size_t i = 0; i < n; i++)
            xs[i] = key_value(seed, u->hs[i]);
        size_t d = sort_unique(xs, tmp, n);
        if (d == SIZE_MAX)
            goto out;
        if (attempt == 0 || attempt % GROW_EVERY == 0) {
            if (attempt)
                segments = u->segments + 1;
            if ((rc = size_cells(u, d, segments)) != AKV_OK)
                goto out;
            rc = AKV_ENOMEM;
            free(count);
            free(xr);
            free(queue);
            count = malloc((size_t)u->cells * sizeof *count);
            xr = malloc((size_t)u->cells * sizeof *xr);
            queue = malloc((size_t)u->cells * sizeof *queue);
            if (!count || !xr || !queue)
                goto out;
        }
        if (!stack) {
            stack = malloc(n * sizeof *stack);
            which = malloc(n);
            if (!stack || !which)
                goto out;
        }
        u->seed = seed;
        u->distinct = d;
        if (peel_and_assign(u, xs, d, count, xr, queue, stack, which)) {
            rc = AKV_OK;
            goto out;
        }
        seed += SEED_STRIDE;
    }
    rc = AKV_EFULL; /* unreachable in practice: the array grows every 32 seeds */
out:
    free(xs);
    free(tmp);
    free(count);
    free(xr);
    free(queue);
    free(stack);
    free(which);
    free(u->hs);
    u->hs = NULL;
    u->n_hs = u->cap_hs = 0;
    if (rc != AKV_OK) {
        free(u->bits);
        u->bits = NULL;
        u->cells = 0;
    }
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

static bool fuse_may_contain(const akv_filter *f, akv_hash h)
{
    const fuse *u = (const fuse *)f;
    if (!u->cells)
        return false;
    uint64_t x = key_value(u->seed, h), p[MAX_ARITY];
    positions(u, x, p);
    uint32_t v = cell_get(u, p[0]) ^ cell_get(u, p[1]) ^ cell_get(u, p[2]);
    if (u->arity == 4)
        v ^= cell_get(u, p[3]);
    return v == fingerprint(u, x);
}

static void fuse_prefetch(const akv_filter *f, akv_hash h)
{
    const fuse *u = (const fuse *)f;
    if (!u->cells)
        return;
    uint64_t p[MAX_ARITY];
    positions(u, key_value(u->seed, h), p);
    for (uint32_t j = 0; j < u->arity; j++)
        __builtin_prefetch(u->bits + p[j] * u->f / 8);
}

static unsigned fuse_words_touched(const akv_filter *f, akv_hash h)
{
    (void)h;
    const fuse *u = (const fuse *)f;
    return u->cells ? u->arity : 0;
}

static size_t fuse_memory(const akv_filter *f)
{
    const fuse *u = (const fuse *)f;
    return u->cells ? (size_t)((u->cells * u->f + 7) / 8) : 0;
}

/* 2^-f; 0 with no keys. */
static double fuse_fpr_theory(const akv_filter *f)
{
    const fuse *u = (const fuse *)f;
    return u->cells ? ldexp(1.0, -(int)u->f) : 0.0;
}

static int fuse_describe(const akv_filter *f, char *buf, size_t cap)
{
    const fuse *u = (const fuse *)f;
    return snprintf(buf, cap,
                    "\"fingerprint_bits\":%u,\"arity\":%u,\"segment_length\":%u,\"segments\":%llu,"
                    "\"cells\":%llu,\"distinct\":%llu",
                    u->f, u->arity, u->seglen, (unsigned long long)u->segments, (unsigned long long)u->cells,
                    (unsigned long long)u->distinct);
}

/* ---- serialization ------------------------------------------------------ */

/* Payload version 2: u64 keys, u64 distinct, u64 seed, u32 f, u32 segment
 * length, u64 segments, u32 arity, then ⌈m · f / 8⌉ bytes of packed cells,
 * m = (segments + arity − 1) · segment length (cell i at bit i · f,
 * little-endian). An empty filter has f = 0, segment length 0, segments 0,
 * arity 0 and no cell bytes. Version 1 (written until 2026-11-27) has no
 * arity field: always 3. */
static int fuse_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    const fuse *u = (const fuse *)f;
    if (!u->finished)
        return AKV_EINVAL;
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, f->n_keys);
    akvi_w_u64(&w, u->distinct);
    akvi_w_u64(&w, u->seed);
    akvi_w_u32(&w, u->cells ? u->f : 0);
    akvi_w_u32(&w, u->cells ? u->seglen : 0);
    akvi_w_u64(&w, u->cells ? u->segments : 0);
    akvi_w_u32(&w, u->cells ? u->arity : 0);
    if (u->cells)
        akvi_w_bytes(&w, u->bits, (size_t)((u->cells * u->f + 7) / 8));
    *len = w.len;
    return AKV_OK;
}

static int fuse_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1 && ver != 2)
        return AKV_ENOTSUP;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t n = akvi_r_u64(&r), distinct = akvi_r_u64(&r), seed = akvi_r_u64(&r);
    uint32_t fw = akvi_r_u32(&r), seglen = akvi_r_u32(&r);
    uint64_t segments = akvi_r_u64(&r);
    uint32_t arity = ver == 1 ? (fw ? 3 : 0) : akvi_r_u32(&r);
    if (r.err || distinct > n)
        return AKV_ECORRUPT;
    uint64_t left = akvi_r_left(&r), cells = 0;
    if (fw == 0) {
        if (seglen || segments || arity || left || distinct)
            return AKV_ECORRUPT;
    } else {
        /* each cell takes at least one bit: bound segments before multiplying */
        if (fw > MAX_F || (arity != 3 && arity != 4) || seglen < 4 || seglen > MAX_SEGLEN ||
            (seglen & (seglen - 1)) || segments < 1 || segments > left * 8 / seglen || distinct == 0)
            return AKV_ECORRUPT;
        cells = (segments + arity - 1) * seglen;
        if (cells > (uint64_t)SIZE_MAX / 64 || (cells * fw + 7) / 8 != left)
            return AKV_ECORRUPT;
    }
    fuse *u = calloc(1, sizeof *u);
    if (!u)
        return AKV_ENOMEM;
    u->base.kind = &akvi_kind_fuse;
    u->base.n_keys = n;
    u->finished = true;
    u->seed = seed;
    u->distinct = distinct;
    if (cells) {
        u->f = fw;
        u->arity = arity;
        u->seglen = seglen;
        u->segments = segments;
        u->cells = cells;
        u->bits = calloc(1, bits_bytes(cells, fw));
        if (!u->bits) {
            free(u);
            return AKV_ENOMEM;
        }
        akvi_r_bytes(&r, u->bits, (size_t)left);
    }
    *out = &u->base;
    return AKV_OK;
}

static void fuse_destroy(akv_filter *f)
{
    fuse *u = (fuse *)f;
    free(u->bits);
    free(u->hs);
    free(u);
}

const akv_filter_kind akvi_kind_fuse = {
    .name = "fuse",
    .id = 7,
    .payload_version = 2,
    .flags = 0,
    .summary = "binary fuse filter, 3- or 4-wise (f-bit fingerprints, FPR 2^-f at ~1.08-1.13 f bits/key)",
    .create = fuse_create,
    .add = fuse_add,
    .finish = fuse_finish,
    .may_contain = fuse_may_contain,
    .memory_bytes = fuse_memory,
    .save = fuse_save,
    .load = fuse_load,
    .destroy = fuse_destroy,
    .words_touched = fuse_words_touched,
    .describe = fuse_describe,
    .fpr_theory = fuse_fpr_theory,
    .prefetch = fuse_prefetch,
};
