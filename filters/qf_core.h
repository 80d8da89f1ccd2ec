/*
 * qf_core.h — the quotient-filter core shared by the `qf` and `aqf` kinds.
 *
 * Layout (docs/filters.md, "Layout and hash bits"; CQF/RSQF style): N home slots (any N >= 64) plus
 * an overflow tail, grouped in blocks of 64 slots. A block is packed bytes:
 *
 *     occupieds | runends | extensions (aqf only) | offset byte | 64 r-bit slots
 *
 * (r + 2.125 bits a slot for qf, r + 3.125 for aqf, as in the paper), so one
 * query touches one or two blocks. `offset` is the number of slots at the
 * start of the block taken by runs whose home lies in an earlier block
 * (saturating at 255: then it is computed from the previous block); with
 * rank/select over occupieds and runends it finds a run without walking
 * the cluster.
 *
 * Hash bits (docs/design.md, "Data layout"): the filter reads the 128-bit hash as one number x =
 * h.hi ‖ h.lo with the shard's `pbits` prefix bits dropped, and multiplies it
 * by N: the integer part of x·N/2^128 is the home slot (the quotient), the
 * fraction is the stream of fingerprint bits: the remainder is its first r
 * bits, extension chunk j the r bits after that. The filter keeps both in
 * one 128-bit "stream" s: the quotient in the top q = ceil(log2 N) bits,
 * then the fraction. For N = 2^q, s is x itself (the quotient is the top q
 * bits, as in earlier versions). x -> s is monotone, so slot order is the
 * hash order of the data, and the keys of a minirun are one interval of
 * h.hi: for N = 2^q exactly the keys whose top pbits+q+r bits agree (one
 * revmap prefix scan), otherwise a range (akv_revmap.scan_range when the
 * reverse map has it, else at most two prefix scans, filtered).
 *
 * Fingerprint records: [remainder][ext_1]…[ext_k]; the remainder slot has
 * extension bit 0, extension slots have extension bit 1 and runend bit 0;
 * the run-end mark sits on the remainder slot of a run's last record
 * (as in the AQF authors' code). Counter slots (extension = runend = 1) are not used.
 *
 * Records inside a run are in ascending hash order of their owners, so the
 * i-th record of a minirun belongs to the i-th key a revmap scan returns.
 * Invariant N (qf_core.c explains why it makes inserts, removes and merges
 * safe without the owners' hashes): inside a minirun, two fingerprints are
 * either identical or incomparable — never is one a proper prefix of the
 * other.
 *
 * Thread safety: the table is read and written only through relaxed atomic
 * word accesses, so a reader racing a writer sees torn but not undefined
 * state; akvi_qf_lookup() reports an inconsistent walk instead of trusting it,
 * and the aqf kind wraps it in a sequence lock. The core itself holds no lock:
 * mutations must be serialised by the caller.
 */
#ifndef AKV_QF_CORE_H
#define AKV_QF_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/filter.h"

typedef unsigned __int128 akvi_u128;

typedef struct akvi_qf {
    uint32_t q, r, pbits; /* q: bits of the quotient in the stream, ceil(log2 nslots) */
    uint32_t mwords;      /* metadata words per block: 2 (qf) or 3 (aqf: + extensions) */
    uint32_t bbytes;      /* bytes per block: 8 * mwords + 1 (offset) + 8 * r (slots) */
    uint32_t max_ext;     /* extension chunks the 128-bit hash can supply */
    bool pow2;            /* nslots == 2^q: the stream is the hash itself */
    uint64_t nslots, xnslots, nblocks;
    uint8_t *t;         /* nblocks * bbytes bytes + 8 bytes of padding */
    uint64_t used;      /* slots in use (remainders + extensions) */
    uint64_t nitems;    /* records = keys */
    uint64_t ext_slots; /* extension slots */
    uint64_t insert_limit, adapt_limit;
    uint64_t adaptations;
    uint64_t prefix; /* the shard prefix (top pbits of h.hi) of the stored keys */
    /* streaming bulk writer: valid while every record lies before `bl_cur` */
    bool bl_ok;
    uint64_t bl_cur, bl_home, bl_last_rem;
    akvi_u128 bl_last;
    /* writer scratch */
    void *scratch;
    size_t scratch_cap;
    /* the build of qf_nav.h this filter uses (portable or POPCNT/BMI2;
     * the insert also per layout, qf or aqf), chosen when it is allocated */
    int (*lookup_fn)(const struct akvi_qf *f, akv_hash h);
    int (*insert_fn)(struct akvi_qf *f, akv_hash h);
} akvi_qf;

/* One fingerprint: its stream bits (left-aligned, zero past the end) and
 * its extension count k; its length in bits is q + r + k*r. */
typedef struct akvi_qf_fp {
    akvi_u128 s;
    uint32_t k;
} akvi_qf_fp;

/* Allocate an empty filter with `nslots` home slots (64 <= nslots <= 2^40)
 * and r-bit remainders. `ext` selects the AQF layout (extension bits). */
int akvi_qf_init_n(akvi_qf *f, uint64_t nslots, uint32_t r, uint32_t pbits, bool ext);
/* The same with 2^q home slots. */
int akvi_qf_init(akvi_qf *f, uint32_t q, uint32_t r, uint32_t pbits, bool ext);
/* Slots of the overflow tail past nslots (no wrap-around), and the blocks
 * of a table of nslots home slots. */
uint64_t akvi_qf_blocks_for(uint64_t nslots);
/* Bytes of the table for nslots home slots, r-bit remainders, qf or aqf
 * layout (what akvi_qf_memory reports once allocated). */
uint64_t akvi_qf_bytes_for(uint64_t nslots, uint32_t r, bool ext);
/* Geometry for n keys under the parameters: with remainder_bits, r is that
 * and nslots = n / load_factor; otherwise the budget bits_per_key·n buys
 * the table, and r is the largest remainder for which the n keys fill at
 * most load_factor + 0.035 of the slots the budget then buys (the rest
 * of the budget, to the byte, is slots). */
void akvi_qf_geometry(const akv_filter_params *p, uint64_t n, bool ext, uint64_t *nslots, uint32_t *r);
void akvi_qf_free(akvi_qf *f);
/* An empty table of like's geometry (slots, blocks, r, prefix bits, layout). */
int akvi_qf_init_like(akvi_qf *f, const akvi_qf *like);
/* Overwrite dst's records with src's (same geometry: akvi_qf_init_like).
 * The caller holds dst's writer section; queries may run meanwhile. */
void akvi_qf_assign(akvi_qf *dst, const akvi_qf *src);
/* Choose q for n keys at fill `lf` (0 = 0.9), at least 64 slots. */
uint32_t akvi_qf_q_for(uint64_t n, double lf);
/* Home slots for n keys at fill lf (0 = 0.9): ceil(n / lf), at least 64. */
uint64_t akvi_qf_slots_for(uint64_t n, double lf);

size_t akvi_qf_memory(const akvi_qf *f);

static inline akvi_u128 akvi_qf_stream(const akvi_qf *f, akv_hash h)
{
    akvi_u128 x = (((akvi_u128)h.hi << 64) | h.lo) << f->pbits;
    if (f->pow2)
        return x;
    /* x·N = quotient · 2^128 + fraction */
    akvi_u128 lo = (akvi_u128)(uint64_t)x * f->nslots, hi = (x >> 64) * f->nslots;
    akvi_u128 mid = (akvi_u128)(uint64_t)hi + (uint64_t)(lo >> 64);
    uint64_t quo = (uint64_t)(hi >> 64) + (uint64_t)(mid >> 64);
    akvi_u128 frac = (mid << 64) | (uint64_t)lo;
    return ((akvi_u128)quo << (128 - f->q)) | (frac >> f->q);
}

/* Quotient and remainder of h with 64-bit arithmetic only (the query path;
 * equal to quo/rem of akvi_qf_stream, since q + r + pbits <= 64). */
static inline void akvi_qf_qr(const akvi_qf *f, akv_hash h, uint64_t *quo, uint64_t *rem)
{
    uint64_t xh = f->pbits ? (h.hi << f->pbits) | (h.lo >> (64 - f->pbits)) : h.hi;
    if (f->pow2) {
        *quo = xh >> (64 - f->q);
        *rem = (xh << f->q) >> (64 - f->r);
        return;
    }
    uint64_t xl = h.lo << f->pbits;
    akvi_u128 hi = (akvi_u128)xh * f->nslots, mid = (uint64_t)hi + (((akvi_u128)xl * f->nslots) >> 64);
    *quo = (uint64_t)(hi >> 64) + (uint64_t)(mid >> 64);
    *rem = (uint64_t)mid >> (64 - f->r);
}

/* 1 maybe, 0 no, -1 the walk saw an inconsistent (concurrently modified)
 * table. Safe to call while another thread mutates. */
static inline int akvi_qf_lookup(const akvi_qf *f, akv_hash h)
{
    return f->lookup_fn(f, h);
}
/* True when lookups and inserts use the POPCNT/BMI2 build (x86-64 CPUs
 * that have both; decided once at run time). */
bool akvi_qf_hw_select(void);
/* Tests: filters allocated from now on use the portable build even where
 * the hardware one could run. */
void akvi_qf_force_portable(bool on);
/* Memory words a lookup touches (instrumentation). */
unsigned akvi_qf_words_touched(const akvi_qf *f, akv_hash h);

/* Insert/remove one key (hash). Remove takes any record of the group of
 * identical fingerprints matching h; by invariant N that is always the
 * key's own (see qf_core.c). AKV_EFULL when the table is full, AKV_NOTFOUND
 * when nothing matches h. */
static inline int akvi_qf_insert(akvi_qf *f, akv_hash h)
{
    return f->insert_fn(f, h);
}
int akvi_qf_remove(akvi_qf *f, akv_hash h);

/* Fix the false positive h using the reverse map: every fingerprint of the
 * minirun that matches h is extended with its owner's bits until it no
 * longer matches. AKV_NOTFOUND if h matches nothing or is a stored key,
 * AKV_ECORRUPT if the reverse map disagrees with the filter (the filter is
 * then left unchanged), AKV_EFULL if there is no room. */
int akvi_qf_adapt(akvi_qf *f, akv_hash h, akv_revmap *rm);

/* Streaming bulk load of hashes in ascending (hi, lo) order into an empty
 * filter: one sequential pass, no shifting. AKV_EINVAL when h is out of
 * order or the filter was modified otherwise (use akvi_qf_insert then). */
int akvi_qf_bulk_add(akvi_qf *f, akv_hash h);

/* Full structural check (canonical layout, offsets, counters, sorted runs,
 * invariant N between neighbours). AKV_OK or AKV_ECORRUPT. */
int akvi_qf_validate(const akvi_qf *f);

/* Exact FPR for a uniformly random absent hash: Σ 2^-len over distinct
 * fingerprints (their match sets are disjoint under invariant N). */
double akvi_qf_fpr(const akvi_qf *f);

/* Serialization of the table (header + table bytes; payload version 2). */
int akvi_qf_save(const akvi_qf *f, uint8_t *buf, size_t *len);
/* Loads payload versions 1 (word layout, 2^q slots) and 2 (current). Every
 * size is bounded before use: a damaged payload gives AKV_ECORRUPT. */
int akvi_qf_load(akvi_qf *f, const uint8_t *buf, size_t len, bool ext, uint16_t ver);

/* Build helpers shared by the kinds: keys are buffered by add() and
 * bulk-loaded by finish() in one sorted pass. */
typedef struct akvi_qf_build {
    akv_hash *v;
    size_t n, cap;
} akvi_qf_build;
int akvi_qf_build_push(akvi_qf_build *b, akv_hash h);
/* Sort b (ascending (hi, lo)), regrow f if the keys exceed its capacity,
 * bulk-load them. b stays sorted; the caller frees b->v. */
int akvi_qf_build_finish(akvi_qf *f, akvi_qf_build *b, double lf);
void akvi_qf_sort(akv_hash *v, size_t n);

/* Every kind built on the core starts with this head. */
typedef struct akvi_qf_head {
    akv_filter base;
    akvi_qf qf;
} akvi_qf_head;

/* Iterate records in slot (= hash) order. */
typedef int (*akvi_qf_visit_fn)(void *arg, uint64_t home, akvi_qf_fp fp);
int akvi_qf_foreach(const akvi_qf *f, akvi_qf_visit_fn fn, void *arg);

#endif
