/*
 * fuse.c — kind `fuse` (id 7): a 3-wise binary fuse filter (Graf & Lemire,
 * "Binary Fuse Filters: Fast and Smaller Than Xor Filters", 2022). A
 * static filter whose false-positive rate is 2^-f for f-bit fingerprints
 * at about 1.125·f bits a key for large n, against a Bloom filter's
 * 1.44·log2(1/ε) (docs/filters.md, "Binary fuse filter").
 *
 * Layout: an array of m = (segments + 2) · L cells of f bits each, packed
 * into a bit array (f is any width from 1 to 32, so the budget is used to
 * the bit); L, the segment length, is a power of two. A key's 64-bit
 * value x = mix64(h.hi + seed) ^ h.lo names three cells: p0 in the first
 * `segments` segments (multiply-shift of x over segments · L), p1 in the
 * next segment and p2 in the one after (p0 + L and p0 + 2L, each with
 * its offset inside the segment flipped by 18 bits of x), and a
 * fingerprint fp(x) = the low f bits of x ^ (x >> 32). The filter holds a
 * key when cell[p0] ^ cell[p1] ^ cell[p2] == fp(x): a stored key always
 * matches (no false negatives); another key matches with probability 2^-f.
 *
 * Build (finish): the keys' values are sorted and deduplicated (equal
 * values name the same cells and fingerprint, so one entry answers for
 * all of them), then peeled: every cell counts the keys that name it and
 * xors their values; a cell named by one key gives that key to a stack
 * and the key leaves its two other cells, which may become single in
 * turn. When every key is on the stack, the cells are assigned in reverse
 * stack order, each key's own cell set so that its three cells xor to its
 * fingerprint. When some remain (a cycle, rare at the paper's sizes), the
 * build retries with a new seed, and every 32 failed seeds with one more
 * segment. Sorting the values first makes p0 ascend, so the peeling walks
 * the array nearly in order (the paper's cache argument).
 *
 * Sizing (the paper's, for arity 3, n distinct keys): L = 2^⌊ln n / ln 3.33
 * + 2.25⌋ capped at 2^18; capacity n · max(1.125, 0.875 + 0.25 · ln 10^6 /
 * ln n); segments = max(1, ⌈capacity / L⌉ − 2). The fingerprint width f
 * is the largest whose m · f bits fit bits_per_key · n (at least 1: a tiny
 * budget builds a 1-bit filter, over budget, rather than fail).
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
#define MAX_SEGLEN  (1u << 18)
#define MAX_SEEDS   1024u /* seeds tried before the build gives up */
#define GROW_EVERY  32u   /* failed seeds before one more segment */
#define SEED_STRIDE 0x9e3779b97f4a7c15ULL

typedef struct fuse {
    akv_filter base;
    double bpk;        /* build only: the budget */
    uint64_t seed;     /* mixes h.hi into x */
    uint32_t f;        /* fingerprint bits, 1..32; 0 with no keys */
    uint32_t seglen;   /* L, a power of two */
    uint64_t segments; /* p0 ranges over segments · L cells */
    uint64_t cells;    /* m = (segments + 2) · L; 0 when empty */
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

static inline void positions(const fuse *u, uint64_t x, uint64_t p[3])
{
    uint64_t mask = u->seglen - 1;
    p[0] = akv_reduce(x, u->segments * u->seglen);
    p[1] = (p[0] + u->seglen) ^ ((x >> 18) & mask);
    p[2] = (p[0] + 2 * (uint64_t)u->seglen) ^ (x & mask);
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

static uint32_t seglen_for(uint64_t n)
{
    if (n < 2)
        return 4;
    double e = floor(log((double)n) / log(3.33) + 2.25);
    return e >= 18 ? MAX_SEGLEN : (uint32_t)1 << (int)e;
}

static uint64_t segments_for(uint64_t n, uint32_t seglen)
{
    double factor = n < 2 ? 4 : fmax(1.125, 0.875 + 0.25 * log(1e6) / log((double)n));
    double cap = ceil((double)n * factor);
    uint64_t s = (uint64_t)ceil(cap / seglen);
    return s > 3 ? s - 2 : 1;
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
    for (size_t i = 0; i < n; i++) {
        uint64_t p[3];
        positions(u, xs[i], p);
        for (int j = 0; j < 3; j++) {
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
        uint64_t x = xor[c], p[3];
        positions(u, x, p);
        int own = p[0] == c ? 0 : p[1] == c ? 1 : 2;
        stack[sn] = x;
        which[sn++] = (uint8_t)own;
        for (int j = 0; j < 3; j++) {
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
        uint64_t x = stack[sn], p[3];
        positions(u, x, p);
        int own = which[sn];
        uint32_t v = fingerprint(u, x);
        for (int j = 0; j < 3; j++)
            if (j != own)
                v ^= cell_get(u, p[j]);
        cell_set(u, p[own], v);
    }
    return true;
}

/* Size u for n distinct keys at `segments` segments (0: the paper's). */
static int size_cells(fuse *u, uint64_t n, uint64_t segments)
{
    u->seglen = seglen_for(n);
    u->segments = segments ? segments : segments_for(n, u->seglen);
    u->cells = (u->segments + 2) * u->seglen;
    u->f = width_for(u->bpk * (double)u->base.n_keys, u->cells);
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
    uint64_t x = key_value(u->seed, h), p[3];
    positions(u, x, p);
    return (cell_get(u, p[0]) ^ cell_get(u, p[1]) ^ cell_get(u, p[2])) == fingerprint(u, x);
}

static void fuse_prefetch(const akv_filter *f, akv_hash h)
{
    const fuse *u = (const fuse *)f;
    if (!u->cells)
        return;
    uint64_t p[3];
    positions(u, key_value(u->seed, h), p);
    for (int j = 0; j < 3; j++)
        __builtin_prefetch(u->bits + p[j] * u->f / 8);
}

static unsigned fuse_words_touched(const akv_filter *f, akv_hash h)
{
    (void)h;
    return ((const fuse *)f)->cells ? 3 : 0;
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
                    "\"fingerprint_bits\":%u,\"segment_length\":%u,\"segments\":%llu,\"cells\":%llu,"
                    "\"distinct\":%llu",
                    u->f, u->seglen, (unsigned long long)u->segments, (unsigned long long)u->cells,
                    (unsigned long long)u->distinct);
}

/* ---- serialization ------------------------------------------------------ */

/* Payload version 1: u64 keys, u64 distinct, u64 seed, u32 f, u32 segment
 * length, u64 segments, then ⌈m · f / 8⌉ bytes of packed cells, m = (segments
 * + 2) · segment length (cell i at bit i · f, little-endian). An empty
 * filter has f = 0, segment length 0, segments 0 and no cell bytes. */
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
    if (u->cells)
        akvi_w_bytes(&w, u->bits, (size_t)((u->cells * u->f + 7) / 8));
    *len = w.len;
    return AKV_OK;
}

static int fuse_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    if (ver != 1)
        return AKV_ENOTSUP;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t n = akvi_r_u64(&r), distinct = akvi_r_u64(&r), seed = akvi_r_u64(&r);
    uint32_t fw = akvi_r_u32(&r), seglen = akvi_r_u32(&r);
    uint64_t segments = akvi_r_u64(&r);
    if (r.err || distinct > n)
        return AKV_ECORRUPT;
    uint64_t left = akvi_r_left(&r), cells = 0;
    if (fw == 0) {
        if (seglen || segments || left || distinct)
            return AKV_ECORRUPT;
    } else {
        /* each cell takes at least one bit: bound segments before multiplying */
        if (fw > MAX_F || seglen < 4 || seglen > MAX_SEGLEN || (seglen & (seglen - 1)) || segments < 1 ||
            segments > left * 8 / seglen || distinct == 0)
            return AKV_ECORRUPT;
        cells = (segments + 2) * seglen;
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
    .payload_version = 1,
    .flags = 0,
    .summary = "3-wise binary fuse filter (f-bit fingerprints, FPR 2^-f at ~1.125 f bits/key)",
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
