#include "filter_props.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

uint64_t akvt_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

akv_hash akvt_key(uint64_t space, uint64_t i)
{
    uint64_t k[2] = {space, i};
    return akv_hash_key(k, sizeof k, 0x5eed);
}

akv_hash *akvt_keys(uint64_t space, size_t n)
{
    akv_hash *v = malloc(n * sizeof *v + 1);
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = akvt_key(space, i);
    return v;
}

akv_filter *akvt_build(const char *kind, const akv_filter_params *p, uint64_t seed, size_t n)
{
    const akv_filter_kind *k = akv_filter_kind_by_name(kind);
    cr_assert_not_null(k, "kind %s not registered", kind);
    akv_filter_params q = *p;
    if (!q.expected_keys)
        q.expected_keys = n;
    akv_filter *f = NULL;
    int rc = akv_filter_create(k, &q, NULL, 0, &f);
    cr_assert_eq(rc, AKV_OK, "create %s: %s", kind, akv_strerror(rc));
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(akv_filter_add(f, akvt_key(seed, i)), AKV_OK);
    cr_assert_eq(akv_filter_finish(f), AKV_OK);
    return f;
}

void akvt_check_no_false_negatives(const akv_filter *f, uint64_t seed, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(f, akvt_key(seed, i)), "%s: false negative for key %zu",
                  f->kind->name, i);
}

double akvt_measure_fpr(const akv_filter *f, uint64_t seed, size_t q)
{
    size_t fp = 0;
    for (size_t i = 0; i < q; i++)
        fp += akv_filter_may_contain(f, akvt_key(seed ^ 0xabcdef0123456789ULL, i));
    return (double)fp / (double)q;
}

void akvt_check_fpr_theory(const akv_filter *f, uint64_t seed, size_t q, double rel)
{
    cr_assert_not_null(f->kind->fpr_theory, "%s has no FPR formula", f->kind->name);
    double th = f->kind->fpr_theory(f);
    double fpr = akvt_measure_fpr(f, seed, q);
    double se = sqrt(th * (1 - th) / (double)q);
    cr_assert(fabs(fpr - th) <= rel * th + 5 * se, "%s: fpr %.5f vs theory %.5f (q=%zu)", f->kind->name, fpr,
              th, q);
}

void akvt_check_serialization(const akv_filter *f, uint64_t seed, size_t n, size_t q, size_t flips)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    akv_filter *g = NULL;
    cr_assert_eq(akv_filter_deserialize(buf, len, &g), AKV_OK, "%s: round trip failed", f->kind->name);
    cr_assert_eq(g->kind, f->kind);
    for (size_t i = 0; i < n; i++)
        cr_assert(akv_filter_may_contain(g, akvt_key(seed, i)));
    for (size_t i = 0; i < q; i++) {
        akv_hash h = akvt_key(seed ^ 0x77, i);
        cr_assert_eq(akv_filter_may_contain(f, h), akv_filter_may_contain(g, h));
    }
    akv_filter_destroy(g);

    /* Every truncation (sampled for large buffers) is rejected. */
    size_t step = len > 4096 ? len / 1024 : 1;
    for (size_t cut = 0; cut < len; cut += step) {
        akv_filter *h = NULL;
        int rc = akv_filter_deserialize(buf, cut, &h);
        cr_assert(rc == AKV_ECORRUPT, "%s: truncation to %zu accepted (rc %d)", f->kind->name, cut, rc);
        cr_assert_null(h);
    }
    uint64_t st = seed;
    uint8_t *copy = malloc(len);
    for (size_t t = 0; t < flips; t++) {
        memcpy(copy, buf, len);
        size_t pos = akvt_rand(&st) % len;
        uint8_t x = (uint8_t)(akvt_rand(&st) | 1);
        copy[pos] ^= x;
        akv_filter *h = NULL;
        int rc = akv_filter_deserialize(copy, len, &h);
        cr_assert(rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "%s: flip at %zu accepted (rc %d)", f->kind->name,
                  pos, rc);
        cr_assert_null(h);
    }
    free(copy);
    free(buf);
}

void akvt_check_payload_damage(const akv_filter *f, uint64_t seed, size_t trials)
{
    size_t len = 0;
    cr_assert_eq(f->kind->save(f, NULL, &len), AKV_OK);
    uint8_t *buf = malloc(len + 1), *copy = malloc(len + 1);
    cr_assert_eq(f->kind->save(f, buf, &len), AKV_OK);
    uint64_t st = seed;
    for (size_t t = 0; t < trials; t++) {
        memcpy(copy, buf, len);
        size_t flips = 1 + akvt_rand(&st) % 4;
        for (size_t i = 0; i < flips; i++) {
            /* mostly the header, where the parameters are */
            size_t pos = akvt_rand(&st) % 2 ? akvt_rand(&st) % (len < 96 ? len : 96) : akvt_rand(&st) % len;
            copy[pos] ^= (uint8_t)(akvt_rand(&st) | 1);
        }
        akv_filter *g = NULL;
        int rc = f->kind->load(copy, len, f->kind->payload_version, &g);
        cr_assert(rc == AKV_OK || rc == AKV_ECORRUPT, "%s: load returned %d", f->kind->name, rc);
        for (size_t i = 0; g && i < 200; i++)
            (void)akv_filter_may_contain(g, akvt_key(seed, i));
        akv_filter_destroy(g);
    }
    free(buf);
    free(copy);
}

void akvt_reseal(uint8_t *buf, size_t len)
{
    uint64_t x = XXH64(buf, len - 8, 0);
    for (int i = 0; i < 8; i++)
        buf[len - 8 + i] = (uint8_t)(x >> (8 * i));
}

void akvt_check_edits_rejected(const akv_filter *f, const size_t *off, const uint8_t *val, size_t n, bool xor)
{
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akv_filter_serialize(f, &buf, &len), AKV_OK);
    uint8_t *c = malloc(len);
    cr_assert_not_null(c);
    for (size_t e = 0; e < n; e++) {
        size_t at = AKV_FILTER_HEADER_BYTES + off[e];
        cr_assert_lt(at, len - 8, "edit %zu lies outside the payload", e);
        memcpy(c, buf, len);
        c[at] = xor ? (uint8_t)(c[at] ^ val[e]) : val[e];
        akvt_reseal(c, len);
        akv_filter *g = NULL;
        cr_assert_eq(akv_filter_deserialize(c, len, &g), AKV_ECORRUPT, "edit %zu (byte %zu) accepted", e, off[e]);
        cr_assert_null(g);
    }
    free(c);
    free(buf);
}
