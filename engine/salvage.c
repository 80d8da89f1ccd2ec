/*
 * salvage.c — what still reads of a damaged run (salvage.h): every entry
 * of a key range that a run file gives back, stepping over
 * unreadable blocks by probing the rest of the range (repair.c rewrites
 * damaged runs from it; docs/reliability.md, "Repair").
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/salvage.h"
#include "util/order.h"

/* Keys as numbers for probing: the 8 bytes after the common prefix of the
 * range's bounds. */
static uint64_t coord(const uint8_t *k, size_t kl, size_t cp)
{
    uint64_t v = 0;
    for (size_t i = 0; i < 8; i++)
        v = (v << 8) | (cp + i < kl ? k[cp + i] : 0);
    return v;
}

static size_t common_prefix(const uint8_t *a, size_t al, const uint8_t *b, size_t bl)
{
    size_t i = 0;
    while (i < al && i < bl && a[i] == b[i])
        i++;
    return i;
}

typedef struct scanner {
    akvi_rs_sst *file;
    akvi_rs_iter *fit;
    const uint8_t *hi;
    size_t hi_len;
    uint8_t *last; /* last key emitted */
    size_t last_len, last_cap;
    bool have_last, have_best;
    uint8_t target[AKV_MAX_KEY_BYTES + 16];
    uint8_t best[AKV_MAX_KEY_BYTES + 16]; /* smallest key a probe reached */
    size_t best_len;
} scanner;

static void sc_close(scanner *sc)
{
    akvi_rs_iter_destroy(sc->fit);
    sc->fit = NULL;
}

static bool sc_valid(const scanner *sc)
{
    return sc->fit && akvi_rs_iter_valid(sc->fit);
}

static const uint8_t *sc_key(const scanner *sc, size_t *len)
{
    return akvi_rs_iter_key(sc->fit, len);
}

static const uint8_t *sc_value(const scanner *sc, size_t *len)
{
    return akvi_rs_iter_value(sc->fit, len);
}

static void sc_next(scanner *sc)
{
    (void)akvi_rs_iter_next(sc->fit); /* a failure ends it: not valid */
}

/* After an unreadable block an iterator can keep failing seeks that a new
 * iterator answers: every probe starts afresh. */
static void fresh_seek(scanner *sc, const uint8_t *k, size_t kl)
{
    sc_close(sc);
    if (akvi_rs_iter_new(&sc->file, 1, true, &sc->fit) == AKV_OK)
        (void)akvi_rs_iter_seek(sc->fit, k, kl);
}

/* Seek to the key whose coordinate is t; true if that lands on a readable
 * entry after the last one emitted and within the range, which is then
 * remembered in `best` if it is the smallest found so far. */
static bool probe_at(scanner *sc, const uint8_t *pre, size_t cp, uint64_t t)
{
    memcpy(sc->target, pre, cp);
    akvi_be64(sc->target + cp, t);
    fresh_seek(sc, sc->target, cp + 8);
    if (!sc_valid(sc))
        return false;
    size_t kl;
    const uint8_t *k = sc_key(sc, &kl);
    if ((sc->have_last && akvi_bytes_cmp(k, kl, sc->last, sc->last_len) <= 0) ||
        akvi_bytes_cmp(k, kl, sc->hi, sc->hi_len) > 0)
        return false;
    if (!sc->have_best || akvi_bytes_cmp(k, kl, sc->best, sc->best_len) < 0) {
        memcpy(sc->best, k, kl);
        sc->best_len = kl;
        sc->have_best = true;
    }
    return true;
}

/* After reading stopped short of the range's end: find the first readable
 * entry beyond the gap (64 probes across the rest of the range, then
 * bisection back towards the gap's end) and leave the iterator there;
 * false if nothing more can be read. A seek just past the gap may still
 * be sent into the damaged block by the SST's index, so the iterator ends
 * on the smallest key any probe reached, sought exactly. */
static bool step_over_gap(scanner *sc, const uint8_t *lo, size_t lo_len)
{
    const uint8_t *from = sc->have_last ? sc->last : lo;
    size_t from_len = sc->have_last ? sc->last_len : lo_len;
    size_t cp = common_prefix(from, from_len, sc->hi, sc->hi_len);
    if (cp > AKV_MAX_KEY_BYTES + 8)
        return false;
    uint64_t a = coord(from, from_len, cp), b = coord(sc->hi, sc->hi_len, cp);
    if (b <= a)
        return false;
    uint64_t bad = a, good = 0;
    bool found = false;
    sc->have_best = false;
    for (unsigned i = 1; i <= 64 && !found; i++) {
        uint64_t t = a + (uint64_t)(((unsigned __int128)(b - a) * i) / 64);
        if (probe_at(sc, from, cp, t)) {
            good = t;
            found = true;
        } else
            bad = t;
    }
    if (!found)
        return false;
    while (good - bad > 1) {
        uint64_t mid = bad + (good - bad) / 2;
        if (probe_at(sc, from, cp, mid))
            good = mid;
        else
            bad = mid;
    }
    fresh_seek(sc, sc->best, sc->best_len);
    return sc_valid(sc);
}

int akvi_salvage_range(akvi_rs_sst *file, const uint8_t *lo, size_t lo_len, const uint8_t *hi, size_t hi_len,
                       akvi_emit_fn emit, void *arg, uint64_t *count, bool *whole)
{
    *count = 0;
    *whole = false;
    scanner *sc = calloc(1, sizeof *sc);
    if (!sc)
        return akvi_err(AKV_ENOMEM, "out of memory");
    sc->hi = hi;
    sc->hi_len = hi_len;
    sc->file = file;
    bool gap = false, at_end = false;
    int rc = AKV_OK;
    fresh_seek(sc, lo, lo_len);
    while (rc == AKV_OK && !at_end) {
        while (rc == AKV_OK && sc_valid(sc)) {
            size_t kl, vl;
            const uint8_t *k = sc_key(sc, &kl);
            int c = akvi_bytes_cmp(k, kl, hi, hi_len);
            if (c > 0) {
                at_end = true;
                break;
            }
            const uint8_t *v = sc_value(sc, &vl);
            rc = emit(arg, k, kl, v, vl);
            (*count)++;
            if (rc == AKV_OK && kl > sc->last_cap) {
                uint8_t *p = realloc(sc->last, kl);
                if (!p)
                    rc = akvi_err(AKV_ENOMEM, "out of memory");
                else {
                    sc->last = p;
                    sc->last_cap = kl;
                }
            }
            if (rc == AKV_OK) {
                memcpy(sc->last, k, kl);
                sc->last_len = kl;
                sc->have_last = true;
            }
            if (c == 0) {
                at_end = true;
                *whole = !gap;
                break;
            }
            sc_next(sc);
        }
        if (rc != AKV_OK || at_end)
            break;
        /* Stopped before hi: an unreadable block (or data missing). */
        gap = true;
        if (!step_over_gap(sc, lo, lo_len))
            break;
    }
    sc_close(sc);
    free(sc->last);
    free(sc);
    return rc;
}
