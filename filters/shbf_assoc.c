/*
 * shbf_assoc.c — ShBF_A, association queries over two sets (Yang et al.,
 * PVLDB 2016, its §4; docs/filters.md, "Bloom family").
 *
 * Every key of S1 ∪ S2 sets k bits at h_i + o, where the offset o encodes
 * its category: 0 for S1 − S2, o1 ∈ [1, 28] for S1 ∩ S2, o2 ∈ [o1+1, o1+28]
 * for S2 − S1 (w̄ = 57, half = 28). A query reads one 57-bit window per
 * probe and keeps three running ANDs (bits 0, o1, o2); the surviving
 * pattern is the answer. The build needs exact membership of both sets: it
 * sorts copies of the two hash lists and merge-joins them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"
#include "seal.h"
#include "shbf.h"
#include "util/bits.h"
#include "util/codec.h"
#include "util/order.h"

#define WBAR    57u
#define HALF    ((WBAR - 1) / 2)
#define MAX_K   64u
#define SALT_O1 0x41736f6331ULL
#define SALT_O2 0x41736f6332ULL

struct akvi_shbfa {
    uint64_t m, n;
    uint32_t k;
    uint8_t *bits; /* m + WBAR - 1 bits + padding */
};

typedef struct offsets {
    uint64_t o1, o2;
} offsets;

static inline offsets key_offsets(akv_hash h)
{
    uint64_t o1 = akv_reduce(akv_mix64(h.lo ^ SALT_O1), HALF) + 1;
    return (offsets){o1, o1 + akv_reduce(akv_mix64(h.lo ^ SALT_O2), HALF) + 1};
}

static inline uint64_t probe(const akvi_shbfa *f, akv_hash h, uint32_t i)
{
    return akv_reduce(h.hi + (uint64_t)i * (h.lo | 1), f->m);
}

static int cmp_hash(const void *a, const void *b)
{
    const akv_hash *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static inline bool hash_eq(akv_hash a, akv_hash b)
{
    return a.hi == b.hi && a.lo == b.lo;
}

/* Sorted, deduplicated copy; returns its length, or SIZE_MAX on ENOMEM. */
static size_t sorted_unique(const akv_hash *v, size_t n, akv_hash **out)
{
    akv_hash *c = malloc((n ? n : 1) * sizeof *c);
    if (!c)
        return SIZE_MAX;
    if (n)
        memcpy(c, v, n * sizeof *c);
    akvi_sort(c, n, sizeof *c, cmp_hash);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || !hash_eq(c[u - 1], c[i]))
            c[u++] = c[i];
    *out = c;
    return u;
}

static void set_key(akvi_shbfa *f, akv_hash h, uint64_t o)
{
    for (uint32_t i = 0; i < f->k; i++)
        akvi_bit_set(f->bits, probe(f, h, i) + o);
}

/* Merge-join the sorted sets: each key of the union is stored once, at the
 * offset of its category. */
static void insert_all(akvi_shbfa *f, const akv_hash *a, size_t na, const akv_hash *b, size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        int c = i == na ? 1 : j == nb ? -1 : cmp_hash(&a[i], &b[j]);
        if (c < 0) {
            set_key(f, a[i++], 0);
        } else if (c > 0) {
            set_key(f, b[j], key_offsets(b[j]).o2);
            j++;
        } else {
            set_key(f, a[i], key_offsets(a[i]).o1);
            i++, j++;
        }
    }
}

static uint64_t choose_m(uint64_t distinct, uint32_t k, double bits_per_key)
{
    double d = distinct ? (double)distinct : 1.0;
    double mb = bits_per_key > 0 ? ceil(bits_per_key * d) : ceil(d * k / M_LN2);
    return mb < 64 ? 64 : (uint64_t)mb;
}

int akvi_shbfa_build(const akv_hash *s1, size_t n1, const akv_hash *s2, size_t n2, uint32_t k,
                     double bits_per_key, akvi_shbfa **out)
{
    if (!out || (n1 && !s1) || (n2 && !s2) || !(bits_per_key >= 0) || bits_per_key > 1024 ||
        (k == 0 && bits_per_key == 0))
        return AKV_EINVAL;
    *out = NULL;
    if (k == 0)
        k = (uint32_t)lround(bits_per_key * M_LN2) ? (uint32_t)lround(bits_per_key * M_LN2) : 1;
    if (k > MAX_K)
        return AKV_EINVAL;
    akv_hash *a = NULL, *b = NULL;
    size_t na = sorted_unique(s1, n1, &a), nb = na == SIZE_MAX ? SIZE_MAX : sorted_unique(s2, n2, &b);
    akvi_shbfa *f = (na == SIZE_MAX || nb == SIZE_MAX) ? NULL : calloc(1, sizeof *f);
    int rc = AKV_ENOMEM;
    if (f) {
        size_t both = 0;
        for (size_t i = 0, j = 0; i < na && j < nb;) {
            int c = cmp_hash(&a[i], &b[j]);
            both += c == 0;
            i += c <= 0;
            j += c >= 0;
        }
        f->n = na + nb - both;
        f->k = k;
        f->m = choose_m(f->n, k, bits_per_key);
        f->bits = calloc(1, akvi_bits_bytes(f->m + WBAR - 1));
        if (f->bits) {
            insert_all(f, a, na, b, nb);
            *out = f;
            f = NULL;
            rc = AKV_OK;
        }
    }
    akvi_shbfa_destroy(f);
    free(a);
    free(b);
    return rc;
}

/* Pattern of (bit 0, bit o1, bit o2) after k windows → answer. */
static const akvi_shbfa_answer k_answer[8] = {
    [0] = AKV_SHBFA_NEITHER,     [1] = AKV_SHBFA_S1_ONLY,     [2] = AKV_SHBFA_BOTH,
    [4] = AKV_SHBFA_S2_ONLY,     [3] = AKV_SHBFA_S1_MAYBE_S2, [6] = AKV_SHBFA_S2_MAYBE_S1,
    [5] = AKV_SHBFA_EXACTLY_ONE, [7] = AKV_SHBFA_UNKNOWN,
};

akvi_shbfa_answer akvi_shbfa_query(const akvi_shbfa *f, akv_hash h, unsigned *words)
{
    offsets o = key_offsets(h);
    uint64_t acc = 1 | (1ULL << o.o1) | (1ULL << o.o2);
    uint32_t i = 0;
    while (i < f->k && acc) /* stop once all three patterns are ruled out */
        acc &= akvi_win64(f->bits, probe(f, h, i++));
    if (words)
        *words = i;
    unsigned pat = (unsigned)((acc & 1) | ((acc >> o.o1) & 1) << 1 | ((acc >> o.o2) & 1) << 2);
    return k_answer[pat];
}

void akvi_shbfa_info(const akvi_shbfa *f, akvi_shbf_info *out)
{
    *out = (akvi_shbf_info){f->m, f->k, WBAR, f->n, (size_t)((f->m + WBAR - 1 + 7) / 8)};
}

void akvi_shbfa_destroy(akvi_shbfa *f)
{
    if (!f)
        return;
    free(f->bits);
    free(f);
}

/* ---- serialization --------------------------------------------------------- */

static void put_assoc(const void *p, akvi_wbuf *w)
{
    const akvi_shbfa *f = p;
    akvi_w_u64(w, f->m);
    akvi_w_u32(w, f->k);
    akvi_w_u64(w, f->n);
    akvi_w_bytes(w, f->bits, (size_t)((f->m + WBAR - 1 + 7) / 8));
}

int akvi_shbfa_serialize(const akvi_shbfa *f, uint8_t **buf, size_t *len)
{
    if (!f || !buf || !len)
        return AKV_EINVAL;
    return akvi_seal("AKSA", f, put_assoc, buf, len);
}

int akvi_shbfa_deserialize(const uint8_t *buf, size_t len, akvi_shbfa **out)
{
    if (!out)
        return AKV_EINVAL;
    *out = NULL;
    akvi_rbuf r;
    if (akvi_unseal("AKSA", buf, len, &r) != AKV_OK)
        return AKV_ECORRUPT;
    uint64_t m = akvi_r_u64(&r);
    uint32_t k = akvi_r_u32(&r);
    uint64_t n = akvi_r_u64(&r);
    if (r.err || m < 1 || m > (1ULL << 62) || k < 1 || k > MAX_K ||
        akvi_bytes_of_bits(m + WBAR - 1) != akvi_r_left(&r))
        return AKV_ECORRUPT;
    akvi_shbfa *f = calloc(1, sizeof *f);
    uint8_t *bits = calloc(1, akvi_bits_bytes(m + WBAR - 1));
    if (!f || !bits) {
        free(f);
        free(bits);
        return AKV_ENOMEM;
    }
    akvi_r_bytes(&r, bits, (size_t)((m + WBAR - 1 + 7) / 8));
    *f = (akvi_shbfa){m, n, k, bits};
    *out = f;
    return AKV_OK;
}
