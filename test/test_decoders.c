/*
 * test_decoders.c — the catalog and miss-log decoders refuse records that
 * are well formed byte for byte (valid checksum) but inconsistent, and a
 * refused miss log leaves the summary untouched.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "util/codec.h"

/* ---- catalog ------------------------------------------------------------------ */

typedef struct tsst {
    uint64_t id, prefix;
    const char *kind, *lo, *hi;
    size_t kind_len; /* 0: strlen(kind) */
} tsst;

/* A catalog of one run (id 5, prefix_bits pb) over the given SSTs, encoded
 * by hand so that fields the encoder would never write can be written. */
static uint8_t *catalog(uint32_t layout, uint64_t next_run_id, uint32_t pb, const tsst *s, size_t n,
                        size_t *len)
{
    akvi_wbuf w = {NULL, 0};
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            w.p = malloc(w.len + 8);
            cr_assert_not_null(w.p);
            w.len = 0;
        }
        akvi_w_bytes(&w, "AKVC", 4);
        akvi_w_u32(&w, 1);
        akvi_w_u32(&w, layout);
        akvi_w_u64(&w, 99);
        akvi_w_u64(&w, next_run_id);
        akvi_w_u64(&w, 3);
        akvi_w_u32(&w, 1);
        akvi_w_u64(&w, 5);
        akvi_w_u32(&w, 1);
        akvi_w_u32(&w, pb);
        akvi_w_u64(&w, 10);
        akvi_w_u64(&w, 4096);
        akvi_w_u64(&w, 5000);
        akvi_w_u32(&w, (uint32_t)n);
        for (size_t j = 0; j < n; j++) {
            akvi_w_u64(&w, s[j].id);
            akvi_w_u64(&w, 5);
            akvi_w_u64(&w, 2048);
            akvi_w_u64(&w, s[j].prefix);
            size_t kl = s[j].kind_len ? s[j].kind_len : strlen(s[j].kind);
            akvi_w_u8(&w, (uint8_t)kl);
            akvi_w_bytes(&w, s[j].kind, kl);
            akvi_w_u32(&w, (uint32_t)strlen(s[j].lo));
            akvi_w_bytes(&w, s[j].lo, strlen(s[j].lo));
            akvi_w_u32(&w, (uint32_t)strlen(s[j].hi));
            akvi_w_bytes(&w, s[j].hi, strlen(s[j].hi));
        }
    }
    akvi_w_u64(&w, XXH64(w.p, w.len, 0));
    *len = w.len;
    return w.p;
}

static int decode(uint32_t layout, uint64_t next_run_id, uint32_t pb, const tsst *s, size_t n)
{
    size_t len;
    uint8_t *buf = catalog(layout, next_run_id, pb, s, n, &len);
    akvi_catalog c;
    int rc = akvi_catalog_decode(buf, len, &c);
    if (rc == AKV_OK)
        akvi_catalog_free(&c);
    free(buf);
    return rc;
}

Test(decoders, catalog_control_is_accepted)
{
    tsst s[] = {{0, 0, "aqf", "a", "c", 0}, {1, 1, "aqf", "d", "f", 0}, {2, 3, "bloom", "g", "g", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 2, s, 3), AKV_OK);
    cr_assert_eq(decode(AKV_LAYOUT_ORDERED, 6, 2, s, 3), AKV_OK);
}

Test(decoders, catalog_bad_layout)
{
    tsst s[] = {{0, 0, "aqf", "a", "c", 0}};
    cr_assert_eq(decode(2, 6, 0, s, 1), AKV_ECORRUPT);
    cr_assert_eq(decode(0xffffffffu, 6, 0, s, 1), AKV_ECORRUPT);
}

Test(decoders, catalog_run_id_not_below_next_run_id)
{
    tsst s[] = {{0, 0, "aqf", "a", "c", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 5, 0, s, 1), AKV_ECORRUPT);
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 0, 0, s, 1), AKV_ECORRUPT);
}

Test(decoders, catalog_prefix_outside_prefix_bits)
{
    tsst s[] = {{0, 0, "aqf", "a", "c", 0}, {1, 4, "aqf", "d", "f", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 2, s, 2), AKV_ECORRUPT);
    tsst t[] = {{0, UINT64_MAX, "aqf", "a", "c", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 30, t, 1), AKV_ECORRUPT);
    tsst u[] = {{0, 1, "aqf", "a", "c", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 0, u, 1), AKV_ECORRUPT);
}

Test(decoders, catalog_unsorted_ssts)
{
    tsst by_prefix[] = {{0, 2, "aqf", "a", "c", 0}, {1, 1, "aqf", "d", "f", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 2, by_prefix, 2), AKV_ECORRUPT);
    tsst by_id[] = {{1, 0, "aqf", "a", "c", 0}, {1, 1, "aqf", "d", "f", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 2, by_id, 2), AKV_ECORRUPT);
    tsst overlap[] = {{0, 0, "aqf", "a", "e", 0}, {1, 0, "aqf", "d", "f", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_ORDERED, 6, 0, overlap, 2), AKV_ECORRUPT);
    tsst touching[] = {{0, 0, "aqf", "a", "d", 0}, {1, 0, "aqf", "d", "f", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_ORDERED, 6, 0, touching, 2), AKV_ECORRUPT);
    tsst inverted[] = {{0, 0, "aqf", "z", "a", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_ORDERED, 6, 0, inverted, 1), AKV_ECORRUPT);
}

Test(decoders, catalog_kind_names)
{
    tsst empty[] = {{0, 0, "", "a", "c", 0}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 0, empty, 1), AKV_ECORRUPT);
    tsst nul[] = {{0, 0, "aq\0f", "a", "c", 4}};
    cr_assert_eq(decode(AKV_LAYOUT_HASH, 6, 0, nul, 1), AKV_ECORRUPT);
}

/* ---- miss log ----------------------------------------------------------------- */

static void put_entry(akvi_wbuf *w, uint64_t i, const char *key)
{
    akvi_w_u64(w, 0x1000 + i);
    akvi_w_u64(w, 0x2000 + i);
    akvi_w_u64(w, 3);
    akvi_w_f64(w, 1.5);
    akvi_w_u32(w, (uint32_t)strlen(key));
    akvi_w_bytes(w, key, strlen(key));
}

/* n entries announced, `present` of them written, `extra` trailing bytes. */
static uint8_t *misslog(uint32_t n, uint32_t present, size_t extra, size_t *len)
{
    uint8_t *p = calloc(1, 12 + 64 * (size_t)present + extra + 8);
    cr_assert_not_null(p);
    akvi_wbuf w = {p, 0};
    akvi_w_bytes(&w, "AKVM", 4);
    akvi_w_u32(&w, 1);
    akvi_w_u32(&w, n);
    for (uint32_t i = 0; i < present; i++)
        put_entry(&w, i, "key");
    w.len += extra;
    akvi_w_u64(&w, XXH64(p, w.len, 0));
    *len = w.len;
    return p;
}

Test(decoders, misslog_control_is_accepted)
{
    size_t len;
    uint8_t *buf = misslog(5, 5, 0, &len);
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    cr_assert_eq(akvi_misslog_decode(ml, buf, len), AKV_OK);
    cr_assert_eq(akvi_misslog_count(ml), 5);
    akvi_misslog_destroy(ml);
    free(buf);
}

/* The entries before the damage used to be added, although the caller logs
 * "starting empty". */
Test(decoders, misslog_refused_record_adds_nothing)
{
    size_t len;
    uint8_t *buf = misslog(6, 5, 20, &len); /* sixth entry cut short */
    akvi_misslog *ml = akvi_misslog_create(1 << 16);
    cr_assert_eq(akvi_misslog_decode(ml, buf, len), AKV_ECORRUPT);
    cr_assert_eq(akvi_misslog_count(ml), 0, "a refused record left %zu entries", akvi_misslog_count(ml));
    free(buf);
    buf = misslog(6, 5, 100, &len); /* a sixth (empty) entry, then 64 stray bytes */
    cr_assert_eq(akvi_misslog_decode(ml, buf, len), AKV_ECORRUPT);
    cr_assert_eq(akvi_misslog_count(ml), 0);
    free(buf);
    buf = misslog(5, 5, 3, &len); /* trailing bytes after the last entry */
    cr_assert_eq(akvi_misslog_decode(ml, buf, len), AKV_ECORRUPT);
    cr_assert_eq(akvi_misslog_count(ml), 0);
    free(buf);
    buf = misslog(UINT32_MAX, 2, 0, &len); /* a count the record cannot hold */
    cr_assert_eq(akvi_misslog_decode(ml, buf, len), AKV_ECORRUPT);
    cr_assert_eq(akvi_misslog_count(ml), 0);
    akvi_misslog_destroy(ml);
    free(buf);
}
