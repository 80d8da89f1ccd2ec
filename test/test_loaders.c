/*
 * test_loaders.c — every filter loader against hostile size fields.
 *
 * For each kind a valid filter is built and its payload taken apart: the
 * fixed header (which holds the sizes) and the tail (bit arrays, counters).
 * Each size field is then patched to huge or wrapping values (near 2^64,
 * 2^63, values whose byte count wraps to 0 or to a small number), the tail
 * cut to a few lengths (including empty, which is what a length check that
 * wraps to 0 would accept), and the result wrapped in a valid envelope with a
 * correct checksum, so only the loader stands between the bytes and a
 * query. akv_filter_deserialize must answer AKV_ECORRUPT and hand back no
 * filter. The unpatched payload must still load (the test's own control).
 * A filter wrongly accepted is never queried: the assertion stops the test
 * before any query could touch the bad arrays.
 *
 * The same for the sealed ShBF_A / ShBF_X blobs (akvi_shbfa/x_deserialize).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "filters/shbf.h"
#include "filters/sscf.h"
#include "support/filter_props.h"
#include "util/codec.h"

/* ---- building envelopes by hand --------------------------------------------- */

static uint8_t *envelope(uint16_t id, uint16_t pver, const uint8_t *payload, size_t plen, size_t *len)
{
    size_t total = AKV_FILTER_HEADER_BYTES + plen + AKV_FILTER_TRAILER_BYTES;
    uint8_t *buf = malloc(total);
    cr_assert_not_null(buf);
    akvi_wbuf w = {buf, 0};
    akvi_w_bytes(&w, AKV_FILTER_MAGIC, 4);
    akvi_w_u16(&w, AKV_FILTER_FORMAT_VERSION);
    akvi_w_u16(&w, id);
    akvi_w_u16(&w, pver);
    akvi_w_u16(&w, 0);
    akvi_w_u64(&w, plen);
    akvi_w_bytes(&w, payload, plen);
    akvi_w_u64(&w, XXH64(buf, w.len, 0));
    *len = total;
    return buf;
}

/* A sealed blob (filters/seal.h) around a payload. */
static uint8_t *sealed(const char magic[4], const uint8_t *payload, size_t plen, size_t *len)
{
    size_t total = 16 + plen + 8;
    uint8_t *buf = malloc(total);
    cr_assert_not_null(buf);
    akvi_wbuf w = {buf, 0};
    akvi_w_bytes(&w, magic, 4);
    akvi_w_u16(&w, 1);
    akvi_w_u16(&w, 0);
    akvi_w_u64(&w, plen);
    akvi_w_bytes(&w, payload, plen);
    akvi_w_u64(&w, XXH64(buf, w.len, 0));
    *len = total;
    return buf;
}

static void put_le(uint8_t *p, uint64_t v, int width)
{
    for (int i = 0; i < width; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- the cases -------------------------------------------------------------- */

typedef struct field {
    size_t off;
    int width; /* bytes: 1, 4 or 8 */
} field;

typedef struct kcase {
    const char *kind;
    uint32_t flags;
    bool costed; /* build with costed negatives (HABF's expressor) */
    field fields[3];
    size_t nfields;
    /* Where the tail (arrays) starts, given the valid payload. */
    size_t (*header)(const uint8_t *payload);
} kcase;

static size_t hdr20(const uint8_t *p)
{
    return (void)p, 20;
}
static size_t hdr28(const uint8_t *p)
{
    return (void)p, 28;
}
static size_t hdr36(const uint8_t *p)
{
    return (void)p, 36;
}
static size_t hdr84(const uint8_t *p)
{
    return (void)p, 84;
}
/* vsbbf: u64 m, u64 n_plan, u32 flags, u64 keys, u8 J, J x 20 bytes. */
static size_t hdr_vsbbf(const uint8_t *p)
{
    return 29 + 20 * (size_t)p[28];
}
/* habf: 4 bytes, k bytes of h0, then 10 x 8 bytes. */
static size_t hdr_habf(const uint8_t *p)
{
    return 4 + (size_t)p[1] + 80;
}

/* Values a hostile size field takes: around 2^64 (so that "+ 7" or "* 64"
 * wraps), around 2^63 and 2^62, 2^58 (x 64 = 2^64), 2^61 (/ 8 still huge). */
static const uint64_t huge64[] = {
    UINT64_MAX,       UINT64_MAX - 1,      UINT64_MAX - 6,       UINT64_MAX - 7,   UINT64_MAX - 8,
    1ULL << 63,       (1ULL << 63) + 1,    (1ULL << 62) + 1,     1ULL << 62,       1ULL << 61,
    (1ULL << 61) + 8, 1ULL << 58,          (1ULL << 58) + 1,     (1ULL << 57) + 1, 0x100000000ULL,
    0xffffffffULL,    UINT64_MAX / 64 + 1, UINT64_MAX / 512 + 1, UINT64_MAX / 2,   UINT64_MAX / 4 + 1,
};
static const uint64_t huge32[] = {UINT32_MAX, 0x80000000u, 0x10000u, 65, 1000};
static const size_t tails[] = {0, 1, 7, 8, 9, 63, 64, 65, 128};

/* Patch one field of the payload to v, keep `t` bytes of tail (zero-filled
 * past the original), wrap, and require AKV_ECORRUPT. */
static void expect_rejected(const akv_filter_kind *k, uint16_t pver, const uint8_t *payload, size_t hdr,
                            size_t orig_tail, field fl, uint64_t v, size_t t)
{
    uint8_t *p = calloc(1, hdr + t + 1);
    cr_assert_not_null(p);
    memcpy(p, payload, hdr);
    memcpy(p + hdr, payload + hdr, t < orig_tail ? t : orig_tail);
    put_le(p + fl.off, v, fl.width);
    size_t len;
    uint8_t *buf = envelope(k->id, pver, p, hdr + t, &len);
    akv_filter *f = (akv_filter *)(uintptr_t)1;
    int rc = akv_filter_deserialize(buf, len, &f);
    cr_assert_eq(rc, AKV_ECORRUPT, "%s: field at %zu = %#llx with a %zu-byte tail: rc %d, want AKV_ECORRUPT",
                 k->name, fl.off, (unsigned long long)v, t, rc);
    cr_assert_null(f, "%s: a filter was returned with an error", k->name);
    free(buf);
    free(p);
}

static akv_negative *negatives(size_t n)
{
    akv_negative *neg = malloc(n * sizeof *neg);
    cr_assert_not_null(neg);
    for (size_t i = 0; i < n; i++)
        neg[i] = (akv_negative){akvt_key(0x6e6567, i), 1.0 + (double)(i % 7)};
    return neg;
}

static void check_kind(const kcase *c)
{
    const akv_filter_kind *k = akv_filter_kind_by_name(c->kind);
    cr_assert_not_null(k, "kind %s not registered", c->kind);
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = 200;
    p.flags = c->flags;
    akv_filter *f = NULL;
    akv_hash *keys = akvt_keys(7, 200);
    akv_negative *neg = c->costed ? negatives(400) : NULL;
    cr_assert_eq(akv_filter_build(k, &p, keys, 200, neg, c->costed ? 400 : 0, &f), AKV_OK, "build %s",
                 c->kind);
    free(keys);
    free(neg);

    size_t plen = 0;
    cr_assert_eq(k->save(f, NULL, &plen), AKV_OK);
    uint8_t *payload = malloc(plen);
    cr_assert_not_null(payload);
    cr_assert_eq(k->save(f, payload, &plen), AKV_OK);
    size_t hdr = c->header(payload);
    cr_assert(hdr <= plen);
    size_t orig_tail = plen - hdr;

    /* Control: the payload as saved loads and answers like the original. */
    size_t len;
    uint8_t *buf = envelope(k->id, k->payload_version, payload, plen, &len);
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK, "%s: valid payload refused", c->kind);
    for (uint64_t i = 0; i < 200; i++)
        cr_assert(akv_filter_may_contain(g, akvt_key(7, i)), "%s: false negative after load", c->kind);
    akv_filter_destroy(g);
    free(buf);

    for (size_t fi = 0; fi < c->nfields; fi++) {
        field fl = c->fields[fi];
        const uint64_t *vals = fl.width == 8 ? huge64 : huge32;
        size_t nv = fl.width == 8 ? sizeof huge64 / sizeof *huge64 : sizeof huge32 / sizeof *huge32;
        for (size_t vi = 0; vi < nv; vi++) {
            for (size_t ti = 0; ti < sizeof tails / sizeof *tails; ti++)
                expect_rejected(k, k->payload_version, payload, hdr, orig_tail, fl, vals[vi], tails[ti]);
            expect_rejected(k, k->payload_version, payload, hdr, orig_tail, fl, vals[vi], orig_tail);
        }
    }
    free(payload);
    akv_filter_destroy(f);
}

/* The reproduction from the issue: a bloom payload of only its 20-byte
 * header with m = 2^64 - 1. (m + 7) / 8 wraps to 0, which matched the empty
 * tail, the loader allocated 8 bytes and the first query indexed ~2^61 bytes
 * past them (SIGSEGV). */
Test(loaders, bloom_wrapping_bit_count_issue)
{
    uint8_t p[20];
    akvi_wbuf w = {p, 0};
    akvi_w_u64(&w, UINT64_MAX);
    akvi_w_u32(&w, 7);
    akvi_w_u64(&w, 1000);
    size_t len;
    uint8_t *buf = envelope(1, 1, p, sizeof p, &len);
    akv_filter *f = NULL;
    int rc = akv_filter_deserialize(buf, len, &f);
    cr_assert_eq(rc, AKV_ECORRUPT, "bloom with m = 2^64-1 and no bits: rc %d", rc);
    cr_assert_null(f);
    free(buf);
}

Test(loaders, bloom)
{
    check_kind(&(kcase){"bloom", 0, false, {{0, 8}, {8, 4}}, 2, hdr20});
}

Test(loaders, blocked)
{
    check_kind(&(kcase){"blocked", 0, false, {{0, 8}, {8, 4}}, 2, hdr20});
}

Test(loaders, rbf)
{
    check_kind(&(kcase){"rbf", 0, false, {{0, 8}, {8, 4}}, 2, hdr36});
}

Test(loaders, vsbbf)
{
    check_kind(&(kcase){"vsbbf", 0, false, {{0, 8}, {8, 8}}, 2, hdr_vsbbf});
}

Test(loaders, shbf)
{
    check_kind(&(kcase){"shbf", 0, false, {{0, 8}, {8, 4}, {12, 4}}, 3, hdr28});
    check_kind(&(kcase){"shbf", AKV_SHBF_SHIFTS(3), false, {{0, 8}, {16, 4}}, 2, hdr28});
}

Test(loaders, cbf)
{
    check_kind(&(kcase){"cbf", 0, false, {{0, 8}, {8, 4}, {20, 8}}, 3, hdr28});
}

/* m and omega (HashExpressor cells) sit after the k bytes of h0: the
 * offsets below hold for the default k of 3 (with negatives) checked by
 * hdr_habf. */
static void check_habf(const char *kind)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.num_hashes = 3;
    p.expected_keys = 200;
    akv_hash *keys = akvt_keys(7, 200);
    akv_negative *neg = negatives(400);
    akv_filter *f = NULL;
    cr_assert_eq(akv_filter_build(akv_filter_kind_by_name(kind), &p, keys, 200, neg, 400, &f), AKV_OK);
    uint8_t *b;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &b, &len), AKV_OK);
    cr_assert_eq(b[AKV_FILTER_HEADER_BYTES + 1], 3, "habf k");
    free(b);
    free(keys);
    free(neg);
    akv_filter_destroy(f);
    /* u8 fast, k, alpha, nfunc; h0[3]; u64 seed @7, m @15, omega @23 */
    check_kind(&(kcase){kind, 0, true, {{15, 8}, {23, 8}}, 2, hdr_habf});
}

Test(loaders, habf)
{
    check_habf("habf");
}

Test(loaders, fhabf)
{
    check_habf("fhabf");
}

Test(loaders, sscf)
{
    /* u8 adaptive, u8 k, u16 layout, u64 m @4, u64 nhm @12 */
    check_kind(&(kcase){"sscf", 0, false, {{4, 8}, {12, 8}}, 2, hdr84});
    check_kind(&(kcase){"sscf", AKV_SSCF_WIDE, false, {{4, 8}, {12, 8}}, 2, hdr84});
}

/* ---- ShBF_A / ShBF_X blobs ---------------------------------------------------- */

/* Patch the payload's u64 m (offset 0) of a sealed blob; keep t tail bytes. */
static void check_sealed(const char magic[4], const uint8_t *blob, size_t blen, size_t hdr,
                         int (*load)(const uint8_t *, size_t, void **), void (*destroy)(void *))
{
    const uint8_t *payload = blob + 16;
    size_t plen = blen - 24, orig_tail = plen - hdr;
    void *o = NULL;
    cr_assert_eq(load(blob, blen, &o), AKV_OK, "%.4s: valid blob refused", magic);
    destroy(o);
    for (size_t vi = 0; vi < sizeof huge64 / sizeof *huge64; vi++)
        for (size_t ti = 0; ti <= sizeof tails / sizeof *tails; ti++) {
            size_t t = ti < sizeof tails / sizeof *tails ? tails[ti] : orig_tail;
            uint8_t *p = calloc(1, hdr + t + 1);
            cr_assert_not_null(p);
            memcpy(p, payload, hdr);
            memcpy(p + hdr, payload + hdr, t < orig_tail ? t : orig_tail);
            put_le(p, huge64[vi], 8);
            size_t len;
            uint8_t *buf = sealed(magic, p, hdr + t, &len);
            o = NULL;
            int rc = load(buf, len, &o);
            cr_assert_eq(rc, AKV_ECORRUPT, "%.4s: m = %#llx, tail %zu: rc %d", magic,
                         (unsigned long long)huge64[vi], t, rc);
            cr_assert_null(o);
            free(buf);
            free(p);
        }
}

static int load_a(const uint8_t *b, size_t n, void **o)
{
    return akvi_shbfa_deserialize(b, n, (akvi_shbfa **)o);
}
static void free_a(void *o)
{
    akvi_shbfa_destroy(o);
}
static int load_x(const uint8_t *b, size_t n, void **o)
{
    return akvi_shbfx_deserialize(b, n, (akvi_shbfx **)o);
}
static void free_x(void *o)
{
    akvi_shbfx_destroy(o);
}

Test(loaders, shbf_assoc_and_mult)
{
    akv_hash *s1 = akvt_keys(1, 100), *s2 = akvt_keys(2, 100);
    akvi_shbfa *a = NULL;
    cr_assert_eq(akvi_shbfa_build(s1, 100, s2, 100, 0, 10, &a), AKV_OK);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_shbfa_serialize(a, &buf, &len), AKV_OK);
    check_sealed("AKSA", buf, len, 20, load_a, free_a); /* u64 m, u32 k, u64 n */
    free(buf);
    akvi_shbfa_destroy(a);

    akvi_shbfx_item items[100];
    for (size_t i = 0; i < 100; i++)
        items[i] = (akvi_shbfx_item){s1[i], 1 + (uint32_t)(i % 5)};
    akvi_shbfx *x = NULL;
    cr_assert_eq(akvi_shbfx_build(items, 100, &(akvi_shbfx_params){.k = 4, .bits_per_key = 10, .c = 8}, &x),
                 AKV_OK);
    cr_assert_eq(akvi_shbfx_serialize(x, &buf, &len), AKV_OK);
    check_sealed("AKSX", buf, len, 24, load_x, free_x); /* u64 m, u32 k, u32 c, u64 n */
    free(buf);
    akvi_shbfx_destroy(x);
    free(s1);
    free(s2);
}
