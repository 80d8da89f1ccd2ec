/*
 * fuzz_misslog.c — the miss-log record decoder (akvi_misslog_decode).
 *
 * Input: one mode byte, then the record. Mode bit 0: 0 = the record is
 * whole (checksum included), 1 = the harness appends the xxh64, so every
 * input reaches the entry parser. Mode bit 1 picks the summary's budget:
 * 4 KiB (one shard of 64 entries: decoding evicts) or 2 MiB (16 shards).
 *
 * A refused record must leave the summary empty. An accepted one must
 * encode, decode into a fresh summary of the same budget, and encode again
 * to the same bytes (nothing is evicted or merged the second time).
 */
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "test/fuzz/fuzz.h"

int fuzz_misslog(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned mode = data[0];
    data++, size--;
    uint64_t budget = (mode & 2) ? 2u << 20 : 4u << 10;
    uint8_t *rec = malloc(size + 8);
    FUZZ_CHECK(rec != NULL, "out of memory");
    memcpy(rec, data, size);
    size_t len = size;
    if (mode & 1) {
        uint64_t h = XXH64(rec, size, 0);
        for (int i = 0; i < 8; i++)
            rec[size + (size_t)i] = (uint8_t)(h >> (8 * i));
        len += 8;
    }
    akvi_misslog *ml = akvi_misslog_create(budget);
    FUZZ_CHECK(ml != NULL, "create");
    int rc = akvi_misslog_decode(ml, rec, len);
    FUZZ_CHECK(rc == AKV_OK || rc == AKV_ECORRUPT || rc == AKV_ENOTSUP, "decode returned %d", rc);
    if (rc != AKV_OK) {
        FUZZ_CHECK(akvi_misslog_count(ml) == 0, "a refused record left %zu entries", akvi_misslog_count(ml));
    } else {
        akv_negative *neg = NULL;
        size_t n = akvi_misslog_collect(ml, NULL, NULL, 1000, &neg);
        for (size_t i = 1; i < n; i++)
            FUZZ_CHECK(!(neg[i].cost > neg[i - 1].cost), "collect is not by descending weight");
        free(neg);
        uint8_t *e1 = NULL, *e2 = NULL;
        size_t l1 = 0, l2 = 0;
        FUZZ_CHECK(akvi_misslog_encode(ml, &e1, &l1) == AKV_OK, "encode");
        akvi_misslog *m2 = akvi_misslog_create(budget);
        FUZZ_CHECK(m2 != NULL, "create");
        FUZZ_CHECK(akvi_misslog_decode(m2, e1, l1) == AKV_OK, "own encoding refused");
        FUZZ_CHECK(akvi_misslog_count(m2) == akvi_misslog_count(ml), "entry count changed: %zu vs %zu",
                   akvi_misslog_count(m2), akvi_misslog_count(ml));
        FUZZ_CHECK(akvi_misslog_encode(m2, &e2, &l2) == AKV_OK, "encode");
        FUZZ_CHECK(l1 == l2 && memcmp(e1, e2, l1) == 0, "second encoding differs");
        free(e1);
        free(e2);
        akvi_misslog_destroy(m2);
    }
    akvi_misslog_destroy(ml);
    free(rec);
    return 0;
}

AKV_FUZZ_ENTRY(fuzz_misslog)
