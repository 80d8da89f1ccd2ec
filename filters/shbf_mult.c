/*
 * shbf_mult.c — ShBF_X, multiplicity queries (Yang et al., PVLDB 2016, its
 * §5; docs/filters.md, "Bloom family").
 *
 * A key with count z ∈ [1, c] sets its k bits at offset z - 1: bit
 * h_i + z - 1. A query ANDs the k windows of c bits; bit j of the result
 * survives iff every probe has its bit at offset j, and the answer is the
 * highest surviving offset + 1. The true offset always survives, so the
 * answer is never below the true count (no false negatives).
 *
 * Updatable filters keep, besides the bits, a saturating 16-bit counter per
 * bit and an exact table {key → count} (the paper's §5.3.2 design, the one
 * without false negatives): an update takes z from the table — never from
 * the possibly over-reporting query — removes the z-th occurrence's k
 * counters (clearing bits that reach 0) and adds the (z±1)-th. A saturated
 * counter is never decremented, so its bit stays set: safe, only a slightly
 * higher false-positive rate.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "seal.h"
#include "shbf.h"
#include "util/bits.h"
#include "util/codec.h"

#define MAX_C 57u /* a window holds 57 valid bits */
#define MAX_K 64u
#define SAT   UINT16_MAX

/* Open-addressing table {hash → count}, linear probing, backward-shift
 * deletion (no tombstones); count 0 marks an empty slot. */
typedef struct ctable {
    akv_hash *key;
    uint32_t *cnt;
    size_t cap, used; /* cap is a power of two */
} ctable;

struct akvi_shbfx {
    uint64_t m, n; /* hashed range; distinct keys stored */
    uint32_t k, c;
    uint8_t *bits; /* m + c - 1 bits + padding */
    uint16_t *ctr; /* updatable only: one counter per bit */
    ctable *tab;   /* updatable only */
};

/* ---- exact count table ------------------------------------------------- */

static inline size_t slot_of(const ctable *t, akv_hash h)
{
    return (size_t)akv_mix64(h.hi ^ h.lo) & (t->cap - 1);
}

static int ct_init(ctable *t, size_t n)
{
    t->cap = 16;
    while (t->cap < 2 * n)
        t->cap <<= 1;
    t->used = 0;
    t->key = malloc(t->cap * sizeof *t->key);
    t->cnt = calloc(t->cap, sizeof *t->cnt);
    return t->key && t->cnt ? AKV_OK : AKV_ENOMEM;
}

static void ct_free(ctable *t)
{
    if (!t)
        return;
    free(t->key);
    free(t->cnt);
}

/* Slot holding h, or the empty slot where it would go. */
static size_t ct_find(const ctable *t, akv_hash h)
{
    size_t i = slot_of(t, h);
    while (t->cnt[i] && (t->key[i].hi != h.hi || t->key[i].lo != h.lo))
        i = (i + 1) & (t->cap - 1);
    return i;
}

static uint32_t ct_get(const ctable *t, akv_hash h)
{
    return t->cnt[ct_find(t, h)];
}

static int ct_grow(ctable *t)
{
    ctable g;
    if (ct_init(&g, t->cap) != AKV_OK) { /* 2·cap slots */
        ct_free(&g);
        return AKV_ENOMEM;
    }
    for (size_t i = 0; i < t->cap; i++)
        if (t->cnt[i]) {
            size_t j = ct_find(&g, t->key[i]);
            g.key[j] = t->key[i];
            g.cnt[j] = t->cnt[i];
            g.used++;
        }
    ct_free(t);
    *t = g;
    return AKV_OK;
}

/* Sets h's count (0 deletes). */
static int ct_set(ctable *t, akv_hash h, uint32_t v)
{
    size_t i = ct_find(t, h);
    if (v && !t->cnt[i]) {
        if (2 * (t->used + 1) > t->cap) {
            if (ct_grow(t) != AKV_OK)
                return AKV_ENOMEM;
            i = ct_find(t, h);
        }
        t->key[i] = h;
        t->used++;
    }
    if (v || !t->cnt[i]) {
        t->cnt[i] = v;
        return AKV_OK;
    }
    /* Delete, then shift later members of the cluster back into the hole
     * when their home slot allows it, so lookups never stop early. */
    t->cnt[i] = 0;
    t->used--;
    for (size_t j = (i + 1) & (t->cap - 1); t->cnt[j]; j = (j + 1) & (t->cap - 1)) {
        size_t home = slot_of(t, t->key[j]);
        if (((j - home) & (t->cap - 1)) >= ((j - i) & (t->cap - 1))) {
            t->key[i] = t->key[j];
            t->cnt[i] = t->cnt[j];
            t->cnt[j] = 0;
            i = j;
        }
    }
    return AKV_OK;
}

/* ---- bits and counters --------------------------------------------------- */

static inline uint64_t probe(const akvi_shbfx *f, akv_hash h, uint32_t i)
{
    return akv_reduce(h.hi + (uint64_t)i * (h.lo | 1), f->m);
}

/* Adds (d = +1) or removes (d = -1) the k bits of h at offset z - 1. */
static void occurrence(akvi_shbfx *f, akv_hash h, uint32_t z, int d)
{
    for (uint32_t i = 0; i < f->k; i++) {
        uint64_t pos = probe(f, h, i) + z - 1;
        if (!f->ctr) {
            akvi_bit_set(f->bits, pos);
        } else if (d > 0) {
            if (f->ctr[pos] < SAT)
                f->ctr[pos]++;
            akvi_bit_set(f->bits, pos);
        } else if (f->ctr[pos] < SAT && --f->ctr[pos] == 0) {
            akvi_bit_clear(f->bits, pos);
        }
    }
}

static int check_params(const akvi_shbfx_params *p, uint32_t *c)
{
    *c = p->c ? p->c : MAX_C;
    if (p->k < 1 || p->k > MAX_K || *c > MAX_C || !(p->bits_per_key >= 0) || p->bits_per_key > 1024)
        return AKV_EINVAL;
    return AKV_OK;
}

/* Aggregate repeated hashes into the table; AKV_EINVAL on a bad count. */
static int count_items(ctable *t, const akvi_shbfx_item *items, size_t n, uint32_t c)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t have = ct_get(t, items[i].h);
        if (items[i].count == 0 || items[i].count > c - have)
            return AKV_EINVAL;
        if (ct_set(t, items[i].h, have + items[i].count) != AKV_OK)
            return AKV_ENOMEM;
    }
    return AKV_OK;
}

static int alloc_arrays(akvi_shbfx *f, double bits_per_key, bool updatable)
{
    double d = f->n ? (double)f->n : 1.0;
    double mb = bits_per_key > 0 ? ceil(bits_per_key * d) : ceil(d * f->k / M_LN2);
    f->m = mb < 64 ? 64 : (uint64_t)mb;
    f->bits = calloc(1, akvi_bits_bytes(f->m + f->c - 1));
    if (updatable)
        f->ctr = calloc((size_t)(f->m + f->c - 1), sizeof *f->ctr);
    return f->bits && (!updatable || f->ctr) ? AKV_OK : AKV_ENOMEM;
}

int akvi_shbfx_build(const akvi_shbfx_item *items, size_t n, const akvi_shbfx_params *p, akvi_shbfx **out)
{
    uint32_t c;
    if (!out || !p || (n && !items) || check_params(p, &c) != AKV_OK)
        return AKV_EINVAL;
    *out = NULL;
    akvi_shbfx *f = calloc(1, sizeof *f);
    ctable *t = calloc(1, sizeof *t);
    int rc = f && t ? ct_init(t, n) : AKV_ENOMEM;
    if (rc == AKV_OK)
        rc = count_items(t, items, n, c);
    if (rc == AKV_OK) {
        f->k = p->k;
        f->c = c;
        f->n = t->used;
        rc = alloc_arrays(f, p->bits_per_key, p->updatable);
    }
    if (rc == AKV_OK) {
        for (size_t i = 0; i < t->cap; i++)
            if (t->cnt[i])
                occurrence(f, t->key[i], t->cnt[i], +1);
        if (p->updatable) {
            f->tab = t;
            t = NULL;
        }
        *out = f;
        f = NULL;
    }
    ct_free(t);
    free(t);
    akvi_shbfx_destroy(f);
    return rc;
}

uint32_t akvi_shbfx_query(const akvi_shbfx *f, akv_hash h, unsigned *words)
{
    uint64_t acc = (1ULL << f->c) - 1;
    uint32_t i = 0;
    while (i < f->k && acc)
        acc &= akvi_win64(f->bits, probe(f, h, i++));
    if (words)
        *words = i;
    return acc ? 64u - (uint32_t)__builtin_clzll(acc) : 0;
}

int akvi_shbfx_insert(akvi_shbfx *f, akv_hash h)
{
    if (!f || !f->tab)
        return f ? AKV_ENOTSUP : AKV_EINVAL;
    uint32_t z = ct_get(f->tab, h);
    if (z == f->c)
        return AKV_EFULL;
    if (ct_set(f->tab, h, z + 1) != AKV_OK)
        return AKV_ENOMEM;
    /* Add the new occurrence before removing the old one: a concurrent
     * reader (if the caller allows one) never sees neither. */
    occurrence(f, h, z + 1, +1);
    if (z)
        occurrence(f, h, z, -1);
    else
        f->n++;
    return AKV_OK;
}

int akvi_shbfx_remove(akvi_shbfx *f, akv_hash h)
{
    if (!f || !f->tab)
        return f ? AKV_ENOTSUP : AKV_EINVAL;
    uint32_t z = ct_get(f->tab, h);
    if (z == 0)
        return AKV_NOTFOUND;
    if (ct_set(f->tab, h, z - 1) != AKV_OK)
        return AKV_ENOMEM;
    if (z > 1)
        occurrence(f, h, z - 1, +1);
    else
        f->n--;
    occurrence(f, h, z, -1);
    return AKV_OK;
}

double akvi_shbfx_f0(const akvi_shbfx *f)
{
    return pow(1.0 - exp(-(double)f->k * (double)f->n / (double)f->m), f->k);
}

void akvi_shbfx_info(const akvi_shbfx *f, akvi_shbf_info *out)
{
    *out = (akvi_shbf_info){f->m, f->k, f->c, f->n, (size_t)((f->m + f->c - 1 + 7) / 8)};
}

void akvi_shbfx_destroy(akvi_shbfx *f)
{
    if (!f)
        return;
    ct_free(f->tab);
    free(f->tab);
    free(f->bits);
    free(f->ctr);
    free(f);
}

/* ---- serialization --------------------------------------------------------- */

static void put_mult(const void *p, akvi_wbuf *w)
{
    const akvi_shbfx *f = p;
    akvi_w_u64(w, f->m);
    akvi_w_u32(w, f->k);
    akvi_w_u32(w, f->c);
    akvi_w_u64(w, f->n);
    akvi_w_bytes(w, f->bits, (size_t)((f->m + f->c - 1 + 7) / 8));
}

int akvi_shbfx_serialize(const akvi_shbfx *f, uint8_t **buf, size_t *len)
{
    if (!f || !buf || !len)
        return AKV_EINVAL;
    return akvi_seal("AKSX", f, put_mult, buf, len);
}

int akvi_shbfx_deserialize(const uint8_t *buf, size_t len, akvi_shbfx **out)
{
    if (!out)
        return AKV_EINVAL;
    *out = NULL;
    akvi_rbuf r;
    if (akvi_unseal("AKSX", buf, len, &r) != AKV_OK)
        return AKV_ECORRUPT;
    uint64_t m = akvi_r_u64(&r);
    uint32_t k = akvi_r_u32(&r), c = akvi_r_u32(&r);
    uint64_t n = akvi_r_u64(&r);
    if (r.err || m < 1 || m > (1ULL << 62) || k < 1 || k > MAX_K || c < 1 || c > MAX_C ||
        akvi_bytes_of_bits(m + c - 1) != akvi_r_left(&r))
        return AKV_ECORRUPT;
    akvi_shbfx *f = calloc(1, sizeof *f);
    uint8_t *bits = calloc(1, akvi_bits_bytes(m + c - 1));
    if (!f || !bits) {
        free(f);
        free(bits);
        return AKV_ENOMEM;
    }
    akvi_r_bytes(&r, bits, (size_t)((m + c - 1 + 7) / 8));
    f->m = m;
    f->n = n;
    f->k = k;
    f->c = c;
    f->bits = bits;
    *out = f;
    return AKV_OK;
}
