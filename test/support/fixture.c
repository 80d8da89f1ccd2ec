/*
 * fixture.c — the migration fixture's content as a function of key and
 * phase (fixture.h), shared by its writer and its test.
 */
#include "fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A fixed 32-bit mix (the values must never change: they are on disk). */
static uint32_t mix(uint32_t a, uint32_t b)
{
    uint32_t x = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu;
    x ^= x >> 15;
    x *= 0x2c1b3c6du;
    x ^= x >> 12;
    x *= 0x297a2d39u;
    x ^= x >> 15;
    return x;
}

int akvf_op(unsigned phase, unsigned i)
{
    switch (phase) {
    case 1: /* the base: every one of the first 3000 */
        return i < 3000 ? AKVF_PUT : AKVF_NONE;
    case 2: /* overwrites and deletes, compacted with phase 1 */
        if (i % 7 == 1)
            return AKVF_DEL;
        return i % 3 == 0 || (i >= 3000 && i < 3200) ? AKVF_PUT : AKVF_NONE;
    case 3: /* an L0 run: overwrites, deletes, resurrections */
        if (i % 11 == 2)
            return AKVF_DEL;
        return i % 5 == 0 || i % 7 == 1 ? AKVF_PUT : AKVF_NONE;
    case 4: /* a second L0 run */
        if (i % 13 == 3)
            return AKVF_DEL;
        return i % 4 == 1 || (i >= 3200 && i < 3300) ? AKVF_PUT : AKVF_NONE;
    case 5: /* the memtable: open must replay it from the WAL */
        if (i % 17 == 5 || (i >= 3450 && i < 3500))
            return AKVF_DEL; /* some of them never written */
        return i % 6 == 2 || (i >= 3300 && i < 3400) ? AKVF_PUT : AKVF_NONE;
    case 6: /* the test, into the opened fixture, then flushed */
        if (i % 19 == 7)
            return AKVF_DEL;
        return i % 8 == 3 || (i >= 3400 && i < 3450) ? AKVF_PUT : AKVF_NONE;
    case 7: /* the test, left in the memtable across its reopen */
        if (i % 23 == 11)
            return AKVF_DEL;
        return i % 9 == 4 || (i >= 3500 && i < 3550) ? AKVF_PUT : AKVF_NONE;
    default:
        return AKVF_NONE;
    }
}

size_t akvf_key(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "fixture-%05u", i);
}

size_t akvf_value(char *buf, unsigned phase, unsigned i)
{
    int n = snprintf(buf, 32, "p%u:%u:", phase, i);
    uint32_t x = mix(phase, i);
    size_t len = 8 + x % 24;
    for (size_t j = (size_t)n; j < len; j++) {
        x = mix(x, (uint32_t)j);
        buf[j] = (char)('a' + x % 16);
    }
    return len;
}

unsigned akvf_state(unsigned phases_done, unsigned i)
{
    unsigned holds = 0;
    for (unsigned p = 1; p <= phases_done; p++) {
        int op = akvf_op(p, i);
        if (op == AKVF_PUT)
            holds = p;
        else if (op == AKVF_DEL)
            holds = 0;
    }
    return holds;
}

long akvf_key_index(const void *key, size_t klen)
{
    static const char prefix[] = "fixture-";
    size_t pl = sizeof prefix - 1;
    if (klen != pl + 5 || memcmp(key, prefix, pl) != 0)
        return -1;
    long v = 0;
    for (size_t j = pl; j < klen; j++) {
        char c = ((const char *)key)[j];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    return v < (long)AKVF_KEYS ? v : -1;
}

int akvf_write_phase(akv_db *db, unsigned p, unsigned *failed)
{
    char k[32], v[32];
    for (unsigned i = 0; i < AKVF_KEYS; i++) {
        int op = akvf_op(p, i), rc = AKV_OK;
        size_t kl = akvf_key(k, i);
        if (op == AKVF_PUT)
            rc = akv_put(db, k, kl, v, akvf_value(v, p, i));
        else if (op == AKVF_DEL)
            rc = akv_delete(db, k, kl);
        if (rc != AKV_OK) {
            *failed = i;
            return rc;
        }
    }
    return AKV_OK;
}

void akvf_options(akv_options *o, akv_layout layout)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 1 << 20;    /* only explicit flushes make runs */
    o->sst_target_bytes = 32 << 10; /* several SSTs per run */
    o->block_cache_bytes = 1 << 20;
    o->miss_log_bytes = 64 << 10;
    o->l0_compaction_trigger = 8; /* the two L0 runs stay in L0 */
    o->l0_stall_runs = 16;
    o->rest_compaction = 0;
    o->seed = 0x0f1c7e5eedULL;
}
