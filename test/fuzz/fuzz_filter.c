/*
 * fuzz_filter.c — every filter kind's loader, through akv_filter_deserialize,
 * and the ShBF_A / ShBF_X blob loaders.
 *
 * Input: one mode byte, then
 *   0  raw       a whole filter file (envelope included), loaded as is: the
 *                envelope checks (magic, lengths, checksum, versions)
 *   1  payload   u16 kind id, u8 payload version, the kind's payload; the
 *                harness wraps it in an envelope with a correct checksum, so
 *                every input reaches the kind's load(). The version byte is
 *                taken modulo (the kind's version + 1), version 0 included
 *   2  shbfa     a ShBF_A payload, sealed with a correct checksum
 *   3  shbfx     a ShBF_X payload, likewise
 *   4  bound     a whole filter file as the engine reads it (the binding to
 *                its SST, then the envelope; docs/format.md §8), through
 *                akvi_slot_file_filter and akvi_slot_describe, from a memfd
 * (the mode byte modulo 5).
 *
 * For every filter that loads: queries on fixed hashes (including the
 * extreme ones that reduce to the first and the last position), the batch
 * query agrees with single ones, memory/describe/stats/fpr/words_touched run,
 * and the filter survives a round trip: serialize, deserialize (must load),
 * same answers, byte-identical second serialization. Kinds with insert get
 * a few keys, which must then answer "maybe" (also after absorbing other
 * hashes), and are removed again. A loader that accepts state its own
 * structure cannot hold shows up as a crash, a sanitizer report, or one of
 * these properties failing.
 */
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "adaptkv/filter.h"
#include "engine/internal.h"
#include "filters/shbf.h"
#include "test/fuzz/fuzz.h"
#include "util/codec.h"

#define NPROBE 24

/* Fixed probe hashes: the extremes (akv_reduce of 0 / UINT64_MAX is the
 * first / last position), then well-mixed ones. */
static akv_hash probe_hash(size_t i)
{
    static const uint64_t edge[][2] = {
        {0, 0}, {UINT64_MAX, UINT64_MAX}, {0, UINT64_MAX}, {UINT64_MAX, 0}, {1ULL << 63, 1}, {UINT64_MAX, 1},
    };
    if (i < sizeof edge / sizeof *edge)
        return (akv_hash){edge[i][0], edge[i][1]};
    return (akv_hash){akv_mix64(i * 0x9e3779b97f4a7c15ULL), akv_mix64(i ^ 0x5bd1e995ULL)};
}

static uint8_t *wrap(const char *magic, size_t hdr, uint16_t id, uint16_t pver, const uint8_t *p, size_t n,
                     size_t *len)
{
    uint8_t *buf = malloc(hdr + n + 8);
    FUZZ_CHECK(buf != NULL, "out of memory");
    akvi_wbuf w = {buf, 0};
    akvi_w_bytes(&w, magic, 4);
    if (hdr == AKV_FILTER_HEADER_BYTES) { /* filter envelope */
        akvi_w_u16(&w, AKV_FILTER_FORMAT_VERSION);
        akvi_w_u16(&w, id);
        akvi_w_u16(&w, pver);
        akvi_w_u16(&w, 0);
    } else { /* seal.h blob */
        akvi_w_u16(&w, 1);
        akvi_w_u16(&w, 0);
    }
    akvi_w_u64(&w, n);
    akvi_w_bytes(&w, p, n);
    akvi_w_u64(&w, XXH64(buf, w.len, 0));
    *len = w.len;
    return buf;
}

static void exercise_mutations(akv_filter *g, const akv_hash *hs)
{
    const akv_filter_kind *k = g->kind;
    bool in[4] = {false};
    for (size_t i = 0; i < 4; i++) {
        int rc = akv_filter_insert(g, hs[NPROBE - 1 - i]);
        in[i] = rc == AKV_OK;
        if (in[i])
            FUZZ_CHECK(akv_filter_may_contain(g, hs[NPROBE - 1 - i]), "%s: inserted key answers no", k->name);
    }
    if (k->absorb)
        for (size_t i = 0; i < 3; i++)
            (void)akv_filter_absorb(g, hs[i]);
    for (size_t i = 0; i < 4; i++)
        if (in[i])
            FUZZ_CHECK(akv_filter_may_contain(g, hs[NPROBE - 1 - i]),
                       "%s: false negative after inserts/absorbs", k->name);
    for (size_t i = 4; i-- > 0;)
        if (in[i])
            (void)akv_filter_remove(g, hs[NPROBE - 1 - i]);
    for (size_t i = 0; i < NPROBE; i++)
        (void)akv_filter_may_contain(g, hs[i]);
}

static void exercise(akv_filter *f)
{
    const akv_filter_kind *k = f->kind;
    akv_hash hs[NPROBE];
    bool one[NPROBE], many[NPROBE];
    for (size_t i = 0; i < NPROBE; i++) {
        hs[i] = probe_hash(i);
        one[i] = akv_filter_may_contain(f, hs[i]);
        if (k->words_touched)
            (void)k->words_touched(f, hs[i]);
    }
    size_t maybe = akv_filter_may_contain_many(f, hs, NPROBE, many);
    size_t count = 0;
    for (size_t i = 0; i < NPROBE; i++) {
        FUZZ_CHECK(one[i] == many[i], "%s: batch answer %zu differs", k->name, i);
        count += one[i];
    }
    FUZZ_CHECK(maybe == count, "%s: batch count %zu, answers %zu", k->name, maybe, count);
    (void)akv_filter_memory(f);
    akv_filter_stats st;
    akv_filter_get_stats(f, &st);
    if (k->describe) {
        char d[2048];
        (void)k->describe(f, d, sizeof d);
    }
    if (k->fpr_theory)
        (void)k->fpr_theory(f);

    uint8_t *b1 = NULL, *b2 = NULL;
    size_t l1 = 0, l2 = 0;
    int rc = akv_filter_serialize(f, &b1, &l1);
    FUZZ_CHECK(rc == AKV_OK, "%s: a loaded filter does not serialize (rc %d)", k->name, rc);
    akv_filter *g = NULL;
    rc = akv_filter_deserialize(b1, l1, &g);
    FUZZ_CHECK(rc == AKV_OK, "%s: its own serialization does not load (rc %d)", k->name, rc);
    FUZZ_CHECK(g->kind == k, "%s: reloaded as %s", k->name, g->kind->name);
    for (size_t i = 0; i < NPROBE; i++)
        FUZZ_CHECK(akv_filter_may_contain(g, hs[i]) == one[i], "%s: answer %zu changed by a round trip",
                   k->name, i);
    rc = akv_filter_serialize(g, &b2, &l2);
    FUZZ_CHECK(rc == AKV_OK && l1 == l2 && memcmp(b1, b2, l1) == 0, "%s: second serialization differs",
               k->name);
    free(b1);
    free(b2);
    exercise_mutations(g, hs);
    akv_filter_destroy(g);
}

static void load_filter(const uint8_t *buf, size_t len)
{
    akv_filter *f = NULL;
    int rc = akv_filter_deserialize(buf, len, &f);
    FUZZ_CHECK(rc == AKV_OK || rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "deserialize returned %d", rc);
    FUZZ_CHECK((rc == AKV_OK) == (f != NULL), "rc %d with filter %p", rc, (void *)f);
    if (f) {
        exercise(f);
        akv_filter_destroy(f);
    }
}

static void load_shbfa(const uint8_t *buf, size_t len)
{
    akvi_shbfa *a = NULL;
    int rc = akvi_shbfa_deserialize(buf, len, &a);
    FUZZ_CHECK((rc == AKV_OK && a) || (rc == AKV_ECORRUPT && !a), "shbfa: rc %d", rc);
    if (!a)
        return;
    akvi_shbfa_answer ans[NPROBE];
    unsigned words;
    for (size_t i = 0; i < NPROBE; i++)
        ans[i] = akvi_shbfa_query(a, probe_hash(i), &words);
    akvi_shbf_info info;
    akvi_shbfa_info(a, &info);
    uint8_t *b;
    size_t l;
    FUZZ_CHECK(akvi_shbfa_serialize(a, &b, &l) == AKV_OK, "shbfa: serialize");
    akvi_shbfa *c = NULL;
    FUZZ_CHECK(akvi_shbfa_deserialize(b, l, &c) == AKV_OK, "shbfa: own serialization refused");
    for (size_t i = 0; i < NPROBE; i++)
        FUZZ_CHECK(akvi_shbfa_query(c, probe_hash(i), NULL) == ans[i], "shbfa: answer %zu changed", i);
    free(b);
    akvi_shbfa_destroy(c);
    akvi_shbfa_destroy(a);
}

static void load_shbfx(const uint8_t *buf, size_t len)
{
    akvi_shbfx *x = NULL;
    int rc = akvi_shbfx_deserialize(buf, len, &x);
    FUZZ_CHECK((rc == AKV_OK && x) || (rc == AKV_ECORRUPT && !x), "shbfx: rc %d", rc);
    if (!x)
        return;
    uint32_t ans[NPROBE];
    unsigned words;
    for (size_t i = 0; i < NPROBE; i++) {
        ans[i] = akvi_shbfx_query(x, probe_hash(i), &words);
        FUZZ_CHECK(akvi_shbfx_insert(x, probe_hash(i)) == AKV_ENOTSUP,
                   "shbfx: a loaded filter is not updatable");
    }
    akvi_shbf_info info;
    akvi_shbfx_info(x, &info);
    (void)akvi_shbfx_f0(x);
    uint8_t *b;
    size_t l;
    FUZZ_CHECK(akvi_shbfx_serialize(x, &b, &l) == AKV_OK, "shbfx: serialize");
    akvi_shbfx *c = NULL;
    FUZZ_CHECK(akvi_shbfx_deserialize(b, l, &c) == AKV_OK, "shbfx: own serialization refused");
    for (size_t i = 0; i < NPROBE; i++)
        FUZZ_CHECK(akvi_shbfx_query(c, probe_hash(i), NULL) == ans[i], "shbfx: answer %zu changed", i);
    free(b);
    akvi_shbfx_destroy(c);
    akvi_shbfx_destroy(x);
}

/* The engine reads filter files by path: hand it the bytes in a memfd. */
static void load_bound(const uint8_t *data, size_t size)
{
    int fd = memfd_create("akf", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create");
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        FUZZ_CHECK(w > 0, "write");
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    akvi_cat_run desc;
    int rc = akvi_slot_describe(path, &desc);
    FUZZ_CHECK(rc == AKV_OK || rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "describe returned %d", rc);
    if (rc == AKV_OK) {
        FUZZ_CHECK(desc.n_sst == 1 && desc.ssts[0].kind[sizeof desc.ssts[0].kind - 1] == 0, "bad binding");
        akvi_cat_run_free(&desc);
    }
    akv_filter *f = NULL;
    rc = akvi_slot_file_filter(path, &f);
    close(fd);
    FUZZ_CHECK(rc == AKV_OK || rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "file_filter returned %d", rc);
    FUZZ_CHECK((rc == AKV_OK) == (f != NULL), "rc %d with filter %p", rc, (void *)f);
    if (f) {
        exercise(f);
        akv_filter_destroy(f);
    }
}

int fuzz_filter(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] % 5;
    data++, size--;
    uint8_t *buf = NULL;
    size_t len = 0;
    switch (mode) {
    case 0:
        load_filter(data, size);
        break;
    case 1: {
        if (size < 3)
            return 0;
        uint16_t id = (uint16_t)(data[0] | data[1] << 8);
        const akv_filter_kind *k = akv_filter_kind_by_id(id);
        uint16_t ver = k ? (uint16_t)(data[2] % (k->payload_version + 1u)) : data[2];
        buf = wrap(AKV_FILTER_MAGIC, AKV_FILTER_HEADER_BYTES, id, ver, data + 3, size - 3, &len);
        load_filter(buf, len);
        break;
    }
    case 2:
        buf = wrap("AKSA", 16, 0, 0, data, size, &len);
        load_shbfa(buf, len);
        break;
    case 3:
        buf = wrap("AKSX", 16, 0, 0, data, size, &len);
        load_shbfx(buf, len);
        break;
    default:
        load_bound(data, size);
        break;
    }
    free(buf);
    return 0;
}

AKV_FUZZ_ENTRY(fuzz_filter)
