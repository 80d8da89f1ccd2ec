/*
 * filter.h — the filter slot interface (docs/design.md, "Filter slots"; docs/filters.md).
 *
 * Every SSTable (and the memtable set) has one slot; a slot holds one filter
 * of some *kind* behind this interface. A kind is a table of functions,
 * registered by name and by a stable numeric id that is written into every
 * serialized filter. Built-in kinds register themselves on first use of the
 * registry; applications may add their own with akv_filter_register().
 *
 * Life cycle of a filter:
 *
 *     akv_filter_params p; akv_filter_params_init(&p);
 *     p.expected_keys = n; p.bits_per_key = 10;
 *     akv_filter *f;
 *     akv_filter_create(kind, &p, negatives, n_negatives, &f); // begin build
 *     for each key: akv_filter_add(f, hash);                  // stream of keys
 *     akv_filter_finish(f);                                   // seal the build
 *     akv_filter_may_contain(f, hash);                        // queries
 *     akv_filter_serialize(f, &buf, &len); ... akv_filter_deserialize(buf, len, &g);
 *     akv_filter_destroy(f);
 *
 * Negative keys (with costs) are handed over at create time because some
 * kinds must see them before the first insert (SSCF encodes them first; HABF
 * optimises its hash choice against them; AQF pre-adapts). Kinds that do not
 * use negatives ignore them.
 *
 * Guarantee every kind must keep: after finish (and after any sequence of
 * insert/remove/adapt/absorb), may_contain(h) is true for every h that was
 * added or inserted and not removed. A "no" is always right.
 *
 * Thread safety: may_contain on a sealed filter may run from many threads at
 * once. Mutating calls (insert/remove/adapt/absorb) on kinds flagged
 * AKV_FK_CONCURRENT may run concurrently with queries (the kind locks
 * internally); on other kinds the caller serialises them.
 *
 * Public API: the functions declared AKV_API below (registry, wrappers,
 * envelope). The built-in kinds' tables and their helpers (the headers in
 * filters/) are internal; reach a built-in kind through
 * akv_filter_kind_by_name().
 */
#ifndef AKV_FILTER_H
#define AKV_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/hash.h"

#ifdef __cplusplus
extern "C" {
#endif


/* A negative (absent) key the filter should learn to reject, with its cost:
 * how much a false positive on it hurts (e.g. wasted disk probes). */
typedef struct akv_negative {
    akv_hash h;
    double cost;
} akv_negative;

/* Construction parameters. Zero/NaN fields mean "kind's default". */
typedef struct akv_filter_params {
    uint64_t expected_keys;  /* n: keys that will be added (capacity for dynamic kinds) */
    double bits_per_key;     /* memory budget; default 10 */
    uint32_t num_hashes;     /* k override; 0 = optimal for bits_per_key */
    uint32_t remainder_bits; /* quotient filters: r; 0 = derived from bits_per_key */
    double load_factor;      /* quotient filters: target fill of the slots; 0 = 0.9 */
    uint32_t prefix_bits;    /* top bits of h.hi fixed for this filter (hash-layout shard) */
    uint64_t seed;           /* per-filter salt for kinds that choose hash functions */
    uint32_t flags;          /* kind-specific switches (documented per kind) */
} akv_filter_params;

/* Fill with "kind's default" everywhere (bits_per_key 10). Cannot fail
 * (`p` must not be NULL). */
AKV_API void akv_filter_params_init(akv_filter_params *p);

/* Adaptation counters of a filter (zero for static kinds). */
typedef struct akv_filter_stats {
    uint64_t adaptations; /* false positives fixed (adapt calls that changed the filter) */
    uint64_t adapt_bits;  /* bits of the structure spent on adaptation (e.g. AQF extension slots × r) */
    uint64_t absorbed;    /* negatives learned at runtime (ada-SSCF) */
    uint64_t capacity;    /* keys the structure can hold (dynamic kinds), 0 if unbounded/static */
} akv_filter_stats;

typedef struct akv_filter akv_filter;
typedef struct akv_filter_kind akv_filter_kind;
/*
 * The reverse map an adaptive kind uses to fix a false positive
 * (implementations in revmap/). When a query hash y matches a stored
 * fingerprint, the filter needs the full hashes of the stored keys that own
 * that fingerprint, to extend them with bits where they differ from y.
 *
 * Contract:
 *   - `scan` calls `fn(arg, h)` for every key of the filter's set (and only
 *     those: a key outside the set must never be reported, or the filter
 *     would adapt to a key it does not hold and later answer "no" for a key it
 *     does) whose top `nbits` bits of h.hi equal those of `hi`, in ascending
 *     (hi, lo) order. 1 <= nbits <= 64.
 *   - If fn returns non-zero, the scan stops and returns that value.
 *   - Returns AKV_OK, or a negative AKV_E* code (I/O failure; AKV_EBUSY from
 *     a reverse map that holds only part of the set and was asked outside
 *     it). The filter then leaves itself unchanged: adaptation is best
 *     effort, never unsafe.
 */
typedef struct akv_revmap akv_revmap;
typedef int (*akv_revmap_fn)(void *arg, akv_hash h);
struct akv_revmap {
    int (*scan)(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg);
    void *ctx;
};

/* Kind flags. */
enum {
    AKV_FK_DYNAMIC = 1u << 0,    /* insert/remove after finish */
    AKV_FK_ADAPTIVE = 1u << 1,   /* adapt() fixes a false positive */
    AKV_FK_COSTED = 1u << 2,     /* uses negatives with costs at build */
    AKV_FK_SORTED = 1u << 3,     /* add() wants hashes in ascending (hi, lo) order (faster) */
    AKV_FK_CONCURRENT = 1u << 4, /* mutations may run concurrently with queries */
    AKV_FK_ABSORB = 1u << 5,     /* absorb() learns a negative at runtime */
};

/*
 * What a kind implements. Required: name, id, create, add, finish,
 * may_contain, memory_bytes, save, load, destroy. Optional (NULL when not
 * supported; the wrappers then return AKV_ENOTSUP): insert, remove, adapt,
 * absorb, words_touched, describe, stats, fpr_theory.
 *
 * `save` writes only the kind's payload; the envelope (magic, version, kind
 * id, length, checksum) is added by akv_filter_serialize(). `load` must
 * validate every field it reads against `len` and return AKV_ECORRUPT on
 * anything inconsistent; it never trusts the bytes.
 */
struct akv_filter_kind {
    const char *name; /* "bloom", "aqf", … */
    uint16_t id;      /* stable on-disk id; 1..999 built-in, ≥1000 for applications */
    uint16_t payload_version;
    uint32_t flags;
    const char *summary; /* one line for help output */

    int (*create)(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out);
    int (*add)(akv_filter *f, akv_hash h);
    int (*finish)(akv_filter *f);
    bool (*may_contain)(const akv_filter *f, akv_hash h);
    size_t (*memory_bytes)(const akv_filter *f);
    /* Serialize payload: first call with buf == NULL returns the size in *len. */
    int (*save)(const akv_filter *f, uint8_t *buf, size_t *len);
    int (*load)(const uint8_t *buf, size_t len, uint16_t payload_version, akv_filter **out);
    void (*destroy)(akv_filter *f);

    int (*insert)(akv_filter *f, akv_hash h);
    int (*remove)(akv_filter *f, akv_hash h);
    /* `h` was a false positive: the filter said maybe, the set does not hold
     * it. Fix it using `rm` to recover stored keys' hashes. Returns AKV_OK if
     * adapted, AKV_NOTFOUND if h is not (or no longer) a false positive. */
    int (*adapt)(akv_filter *f, akv_hash h, akv_revmap *rm);
    int (*absorb)(akv_filter *f, akv_hash h);
    /* Optional: 64-bit memory words may_contain(h) touches (instrumentation
     * for filterbench; not on the query path). */
    unsigned (*words_touched)(const akv_filter *f, akv_hash h);
    /* Optional extra statistics as a JSON object body ("\"k\":7,…"). */
    int (*describe)(const akv_filter *f, char *buf, size_t cap);
    /* Optional: adaptation counters. */
    void (*stats)(const akv_filter *f, akv_filter_stats *out);
    /* Optional: the exact expected FPR of this filter as built (NAN if none). */
    double (*fpr_theory)(const akv_filter *f);
    /* Optional: start loading the memory a query for h reads first (a
     * cache hint, no answer). akv_filter_may_contain_many issues it a few
     * keys ahead so that independent queries' cache misses overlap. */
    void (*prefetch)(const akv_filter *f, akv_hash h);
    /* Optional: rebuild f in place, at its own size, from `keys` (every
     * key f holds), pre-adapted to as many of `neg` (heaviest first) as
     * leave room for later adaptations; what else f had learned is
     * forgotten. Concurrent queries see f before or after, never between.
     * The engine refills only kinds flagged AKV_FK_CONCURRENT (queries take
     * no lock on them); a full filter of another kind stays full. */
    int (*refill)(akv_filter *f, const akv_hash *keys, size_t n, const akv_negative *neg, size_t n_neg);
};

/*
 * Every filter object starts with this header so generic code can find its
 * kind. Kinds embed it as their first member.
 */
struct akv_filter {
    const akv_filter_kind *kind;
    uint64_t n_keys; /* keys added/inserted and not removed */
};

/* Registry. The built-in kinds are registered on first use. */
/* Register an application's kind (`k` must stay valid for the process).
 * Returns AKV_OK, or AKV_EINVAL (NULL, a required op missing, id 0),
 * AKV_EEXIST (its name or id is taken), AKV_EFULL (the registry holds 64
 * kinds). */
AKV_API int akv_filter_register(const akv_filter_kind *k);
/* Returns the kind registered under `name` or `id`; NULL when none is. */
AKV_API const akv_filter_kind *akv_filter_kind_by_name(const char *name);
AKV_API const akv_filter_kind *akv_filter_kind_by_id(uint16_t id);
/* Iterate: returns the i-th registered kind or NULL past the end. */
AKV_API const akv_filter_kind *akv_filter_kind_at(size_t i);

/* Wrappers (argument checks + dispatch). Each returns AKV_EINVAL for a
 * NULL filter or kind and, beyond that, what the kind's op returns. */
/* A new, empty filter of kind `k` sized by `p` (NULL: defaults), pre-adapted
 * to neg[0..n_neg) for costed kinds. Returns AKV_OK, or AKV_EINVAL (NULL
 * k or out, NULL neg with n_neg > 0, parameters the kind refuses),
 * AKV_ENOMEM. */
AKV_API int akv_filter_create(const akv_filter_kind *k, const akv_filter_params *p, const akv_negative *neg,
                      size_t n_neg, akv_filter **out);
/* Add a key before finish. Returns AKV_OK, or AKV_EINVAL (after finish),
 * AKV_EFULL (a fixed-capacity kind is full), AKV_ENOMEM. */
AKV_API int akv_filter_add(akv_filter *f, akv_hash h);
/* Seal the filter: queries may start. Returns AKV_OK, or AKV_EINVAL
 * (finished twice), AKV_EFULL, AKV_ENOMEM. */
AKV_API int akv_filter_finish(akv_filter *f);
static inline bool akv_filter_may_contain(const akv_filter *f, akv_hash h)
{
    return f->kind->may_contain(f, h);
}
/*
 * Answers for n hashes at once: out[i] = may_contain(hs[i]). Same answers as
 * n single calls; faster for kinds with a prefetch op, which is issued a few
 * keys ahead (a batch lookup such as a multi-get). Returns how many said maybe.
 */
AKV_API size_t akv_filter_may_contain_many(const akv_filter *f, const akv_hash *hs, size_t n, bool *out);
/* Bytes of memory the filter holds (0 for NULL). Cannot fail. */
AKV_API size_t akv_filter_memory(const akv_filter *f);
/* Dynamic kinds (AKV_FK_DYNAMIC), after finish: add or remove one key.
 * Returns AKV_OK, or AKV_ENOTSUP (a static kind), AKV_EFULL (insert into
 * a full filter), AKV_NOTFOUND (remove of a key the filter does not
 * hold; nothing changed), AKV_EINVAL, AKV_ENOMEM. */
AKV_API int akv_filter_insert(akv_filter *f, akv_hash h);
AKV_API int akv_filter_remove(akv_filter *f, akv_hash h);
/* Fix the false positive `h` (adaptive kinds), reading stored keys'
 * hashes through `rm`. Returns AKV_OK when adapted; AKV_NOTFOUND when h is
 * not (or no longer) a false positive; AKV_ENOTSUP (not adaptive); AKV_EFULL
 * (no room left to adapt); the reverse map's error (AKV_EIO, AKV_EBUSY),
 * the filter then unchanged; AKV_EINVAL; AKV_ENOMEM. */
AKV_API int akv_filter_adapt(akv_filter *f, akv_hash h, akv_revmap *rm);
/* Learn the negative `h` at run time (AKV_FK_ABSORB kinds). Returns AKV_OK,
 * AKV_NOTFOUND (nothing to learn), AKV_ENOTSUP, AKV_EINVAL. */
AKV_API int akv_filter_absorb(akv_filter *f, akv_hash h);
/*
 * Forget f's adaptations without growing: rebuild f in place from keys[0..n)
 * (all the keys f holds; any order) at its own memory, pre-adapted to
 * neg[0..n_neg) (heaviest first) while room for later adaptations is left.
 * Queries may run meanwhile (for kinds with AKV_FK_CONCURRENT) and never
 * see a key missing. Returns AKV_OK, or AKV_EINVAL (f NULL, not finished,
 * or an array NULL with a count), AKV_ENOTSUP (the kind cannot), AKV_EFULL
 * (more keys than f was built for), AKV_ENOMEM.
 */
AKV_API int akv_filter_refill(akv_filter *f, const akv_hash *keys, size_t n, const akv_negative *neg,
                              size_t n_neg);
/* Free the filter. NULL is a no-op. */
AKV_API void akv_filter_destroy(akv_filter *f);
/* Zeroed stats when the kind has none. Cannot fail. */
AKV_API void akv_filter_get_stats(const akv_filter *f, akv_filter_stats *out);

/* Build in one call from an array of hashes: create, add each, finish.
 * *out is NULL unless AKV_OK. Returns what those return. */
AKV_API int akv_filter_build(const akv_filter_kind *k, const akv_filter_params *p, const akv_hash *keys, size_t n,
                     const akv_negative *neg, size_t n_neg, akv_filter **out);

/*
 * Envelope: "AKVF" magic, u16 format version, u16 kind id, u16 payload
 * version, u16 reserved, u64 payload length, payload, u64 xxh64 of all
 * preceding bytes. Little-endian. See docs/format.md.
 */
#define AKV_FILTER_MAGIC "AKVF"
#define AKV_FILTER_FORMAT_VERSION 1
#define AKV_FILTER_HEADER_BYTES 20
#define AKV_FILTER_TRAILER_BYTES 8

/* Serialize into a malloc'd buffer (caller frees with akv_free).
 * Returns AKV_OK, or AKV_EINVAL (NULL argument, a filter not finished),
 * AKV_ENOMEM. */
AKV_API int akv_filter_serialize(const akv_filter *f, uint8_t **buf, size_t *len);
/* Validate and load. Never crashes on bad input. Returns AKV_OK, or
 * AKV_EINVAL (NULL argument), AKV_ECORRUPT on damage (magic, checksum,
 * lengths, any field the kind's load refuses), AKV_ENOTSUP on an unknown
 * kind or a newer version, AKV_ENOMEM. */
AKV_API int akv_filter_deserialize(const uint8_t *buf, size_t len, akv_filter **out);

#ifdef __cplusplus
}
#endif
#endif
