/*
 * test_catalog.c — the catalog record: round trip, and every kind of damage
 * is refused (never a crash, never a half-decoded catalog).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"

static void fill_sst(akvi_cat_sst *s, uint64_t id, const char *lo, const char *hi)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    s->keys = 100 + id;
    s->bytes = 4096 * (id + 1);
    s->prefix = id;
    strcpy(s->kind, "aqf");
    s->smallest_len = strlen(lo);
    s->largest_len = strlen(hi);
    s->smallest = (uint8_t *)strdup(lo);
    s->largest = (uint8_t *)strdup(hi);
}

static void sample(akvi_catalog *c)
{
    memset(c, 0, sizeof *c);
    c->layout = AKV_LAYOUT_ORDERED;
    c->seed = 0x1234567890abcdefULL;
    c->next_run_id = 42;
    c->flushed_mem_gen = 7;
    c->n_run = 2;
    c->runs = calloc(2, sizeof *c->runs);
    c->runs[0] = (akvi_cat_run){
        .id = 41, .level = 0, .prefix_bits = 0, .keys = 100, .bytes = 4096, .raw_bytes = 9000, .files = true};
    c->runs[0].n_sst = 1;
    c->runs[0].ssts = calloc(1, sizeof(akvi_cat_sst));
    fill_sst(&c->runs[0].ssts[0], 0, "a", "m");
    c->runs[1] = (akvi_cat_run){.id = 40, .level = 2, .prefix_bits = 1, .keys = 203, .bytes = 12288};
    c->runs[1].n_sst = 2;
    c->runs[1].ssts = calloc(2, sizeof(akvi_cat_sst));
    fill_sst(&c->runs[1].ssts[0], 0, "", "k");
    fill_sst(&c->runs[1].ssts[1], 1, "l", "zzzz");
}

Test(catalog, round_trip)
{
    akvi_catalog c, d;
    sample(&c);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_OK);
    cr_assert_eq(d.layout, c.layout);
    cr_assert_eq(d.seed, c.seed);
    cr_assert_eq(d.next_run_id, 42);
    cr_assert_eq(d.flushed_mem_gen, 7);
    cr_assert_eq(d.n_run, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_assert_eq(d.runs[i].id, c.runs[i].id);
        cr_assert_eq(d.runs[i].level, c.runs[i].level);
        cr_assert_eq(d.runs[i].prefix_bits, c.runs[i].prefix_bits);
        cr_assert_eq(d.runs[i].raw_bytes, c.runs[i].raw_bytes);
        cr_assert_eq(d.runs[i].files, c.runs[i].files);
        cr_assert_eq(d.runs[i].n_sst, c.runs[i].n_sst);
        for (size_t j = 0; j < c.runs[i].n_sst; j++) {
            akvi_cat_sst *x = &c.runs[i].ssts[j], *y = &d.runs[i].ssts[j];
            cr_assert_eq(x->keys, y->keys);
            cr_assert_eq(x->bytes, y->bytes);
            cr_assert_eq(x->prefix, y->prefix);
            cr_assert_str_eq(x->kind, y->kind);
            cr_assert_eq(x->smallest_len, y->smallest_len);
            cr_assert_eq(x->largest_len, y->largest_len);
            cr_assert(memcmp(x->smallest, y->smallest, x->smallest_len) == 0);
            cr_assert(memcmp(x->largest, y->largest, x->largest_len) == 0);
        }
    }
    akvi_catalog_free(&d);
    akvi_catalog_free(&c);
    free(buf);
}

/* Older versions, as their code wrote them, still decode: version 3 has no
 * run files (every run a family's) and refuses to record them. */
Test(catalog, older_versions_decode_and_record_no_run_files)
{
    akvi_catalog c, d;
    sample(&c);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode_version(&c, 3, &buf, &len), AKV_EINVAL);
    c.runs[0].files = false;
    for (uint32_t v = 2; v <= 3; v++) {
        cr_assert_eq(akvi_catalog_encode_version(&c, v, &buf, &len), AKV_OK);
        cr_assert_eq(buf[4], v);
        cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_OK, "%s", akv_errmsg());
        cr_assert_eq(d.n_run, 2);
        cr_assert(!d.runs[0].files && !d.runs[1].files);
        cr_assert_eq(d.runs[1].n_sst, 2);
        akvi_catalog_free(&d);
        free(buf);
    }
    /* An unknown run flag is damage, not a newer feature to ignore. */
    c.runs[0].files = true;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    size_t at = 4 + 4 + 4 + 8 * 4 + 8 + 2 + 4 + 8 + 4 + 4 + 8 * 3; /* run 0's flags */
    cr_assert_eq(buf[at], 1);
    buf[at] = 3;
    uint64_t h = XXH64(buf, len - 8, 0);
    for (int i = 0; i < 8; i++)
        buf[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_ECORRUPT);
    free(buf);
    akvi_catalog_free(&c);
}

Test(catalog, empty_catalog)
{
    akvi_catalog c = {.layout = 0, .seed = 9, .next_run_id = 1}, d;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_OK);
    cr_assert_eq(d.n_run, 0);
    akvi_catalog_free(&d);
    free(buf);
}

Test(catalog, every_bit_flip_and_truncation_is_refused)
{
    akvi_catalog c;
    sample(&c);
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    akvi_catalog_free(&c);
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 8; b += 3) {
            buf[i] ^= (uint8_t)(1u << b);
            akvi_catalog d;
            cr_assert_neq(akvi_catalog_decode(buf, len, &d), AKV_OK, "flip at byte %zu bit %d accepted", i,
                          b);
            buf[i] ^= (uint8_t)(1u << b);
        }
    for (size_t n = 0; n < len; n++) {
        akvi_catalog d;
        cr_assert_neq(akvi_catalog_decode(buf, n, &d), AKV_OK, "truncation to %zu accepted", n);
    }
    free(buf);
}

static void rechecksum(uint8_t *buf, size_t len)
{
    uint64_t h = XXH64(buf, len - 8, 0);
    for (int i = 0; i < 8; i++)
        buf[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
}

/* Version 3: the slot policy and bits per key, both or neither; a field
 * that is not what the encoder writes is refused even under a valid
 * checksum. Offsets: bits (f64) 44, policy length (u16) 52, text 54. */
Test(catalog, slot_policy_round_trip_and_damage)
{
    akvi_catalog c, d;
    sample(&c);
    strcpy(c.policy, "mem=sscf,l0=aqf,l1+=blocked");
    c.bits_per_key = 12.5;
    uint8_t *buf;
    size_t len;
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    akvi_catalog_free(&c);
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_OK);
    cr_assert_str_eq(d.policy, "mem=sscf,l0=aqf,l1+=blocked");
    cr_assert_eq(d.bits_per_key, 12.5);
    cr_assert_eq(d.n_run, 2);
    akvi_catalog_free(&d);
    cr_assert_eq(buf[52], strlen("mem=sscf,l0=aqf,l1+=blocked"));
    const double bad_bits[] = {0, -1, 64.5, NAN};
    for (size_t i = 0; i < sizeof bad_bits / sizeof *bad_bits; i++) {
        uint8_t *b = malloc(len);
        memcpy(b, buf, len);
        memcpy(b + 44, &bad_bits[i], 8);
        rechecksum(b, len);
        cr_assert_eq(akvi_catalog_decode(b, len, &d), AKV_ECORRUPT, "bits %g accepted", bad_bits[i]);
        free(b);
    }
    const uint8_t bad_chars[] = {' ', 0, '\n', 0x7f, 0xc3};
    for (size_t i = 0; i < sizeof bad_chars; i++) {
        buf[60] = bad_chars[i]; /* a byte of the text */
        rechecksum(buf, len);
        cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_ECORRUPT, "byte 0x%02x accepted", bad_chars[i]);
    }
    free(buf);
    /* Neither recorded: fine. Only one of them: refused. */
    sample(&c);
    cr_assert_eq(akvi_catalog_encode(&c, &buf, &len), AKV_OK);
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_OK);
    cr_assert_str_eq(d.policy, "");
    cr_assert_eq(d.bits_per_key, 0);
    akvi_catalog_free(&d);
    double ten = 10;
    memcpy(buf + 44, &ten, 8);
    rechecksum(buf, len);
    cr_assert_eq(akvi_catalog_decode(buf, len, &d), AKV_ECORRUPT, "bits without a policy accepted");
    free(buf);
    akvi_catalog_free(&c);
}

Test(catalog, filter_file_names)
{
    char name[64];
    akvi_filter_file_name(12, 3, name, sizeof name);
    cr_assert_str_eq(name, "12-3.akf");
}

/* Random bodies with a valid magic, version and checksum reach the parser
 * itself: it must reject or accept without reading out of bounds (run it
 * under AddressSanitizer). */
Test(catalog, random_bodies_with_valid_checksum)
{
    uint64_t x = 12345;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = 48 + (size_t)(iter % 400);
        uint8_t *buf = malloc(len);
        for (size_t i = 0; i < len; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* mostly small numbers, so counts and lengths look plausible */
            buf[i] = (uint8_t)((x & 3) == 0 ? x >> 8 : (x >> 8) & 3);
        }
        memcpy(buf, "AKVC", 4);
        buf[4] = 1, buf[5] = buf[6] = buf[7] = 0;
        uint64_t h = XXH64(buf, len - 8, 0);
        for (int i = 0; i < 8; i++)
            buf[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
        akvi_catalog c;
        if (akvi_catalog_decode(buf, len, &c) == AKV_OK)
            akvi_catalog_free(&c);
        free(buf);
    }
}
