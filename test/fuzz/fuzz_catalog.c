/*
 * fuzz_catalog.c — the catalog record decoder (akvi_catalog_decode).
 *
 * Input: one mode byte (modulo 2), then
 *   0  raw       the whole record, checksum included, decoded as is
 *   1  body      the record without its trailing xxh64, which the harness
 *                appends, so every input reaches the field decoder
 * A record that decodes must encode back, as its own version, to exactly
 * the same bytes (the decoder accepts only what the encoder writes: every
 * field is kept, no slack), and its encoding as the current version must
 * decode again.
 */
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "test/fuzz/fuzz.h"

int fuzz_catalog(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0] % 2;
    data++, size--;
    uint8_t *rec = malloc(size + 8);
    FUZZ_CHECK(rec != NULL, "out of memory");
    memcpy(rec, data, size);
    size_t len = size;
    if (mode == 1) {
        uint64_t h = XXH64(rec, size, 0);
        for (int i = 0; i < 8; i++)
            rec[size + (size_t)i] = (uint8_t)(h >> (8 * i));
        len += 8;
    }
    akvi_catalog c;
    int rc = akvi_catalog_decode(rec, len, &c);
    FUZZ_CHECK(rc == AKV_OK || rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "decode returned %d", rc);
    if (rc == AKV_OK) {
        uint8_t *enc = NULL;
        size_t elen = 0;
        FUZZ_CHECK(akvi_catalog_encode(&c, &enc, &elen) == AKV_OK, "encode failed");
        /* A record re-encodes byte for byte as its own version (version 1,
         * with no sequence and no key digests, is never written again: only
         * its decoded content must survive), and is written as the current
         * version. */
        uint32_t version = len >= 8 ? (uint32_t)rec[4] | (uint32_t)rec[5] << 8 | (uint32_t)rec[6] << 16 |
                                          (uint32_t)rec[7] << 24
                                    : 0;
        uint8_t *cur = NULL;
        size_t clen = 0;
        FUZZ_CHECK(akvi_catalog_encode(&c, &cur, &clen) == AKV_OK, "encode failed");
        if (version >= 2) {
            uint8_t *own = NULL;
            size_t olen = 0;
            FUZZ_CHECK(akvi_catalog_encode_version(&c, version, &own, &olen) == AKV_OK, "encode as %u failed",
                       version);
            FUZZ_CHECK(olen == len && memcmp(own, rec, len) == 0, "re-encoding differs (%zu vs %zu bytes)",
                       olen, len);
            free(own);
        }
        FUZZ_CHECK(clen == elen && memcmp(cur, enc, elen) == 0, "encoding is not deterministic");
        free(cur);
        akvi_catalog d;
        FUZZ_CHECK(akvi_catalog_decode(enc, elen, &d) == AKV_OK, "own encoding refused");
        FUZZ_CHECK(d.n_run == c.n_run, "run count changed");
        akvi_catalog_free(&d);
        free(enc);
        akvi_catalog_free(&c);
    }
    free(rec);
    return 0;
}

AKV_FUZZ_ENTRY(fuzz_catalog)
