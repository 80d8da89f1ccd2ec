/*
 * aqf.h — extra operations of the quotient-filter kinds `qf` (id 10) and
 * `aqf` (id 11, Adaptive Quotient Filter) beyond the generic slot interface.
 *
 * Both kinds take the quotient from the top of h.hi right after
 * params->prefix_bits shard-prefix bits, so records sit in hash order and
 * every operation here is one sequential pass. The keys of a filter must
 * share their top prefix_bits bits (docs/design.md, "Data layout": hash layout).
 *
 * `aqf` flags: AKV_FK_DYNAMIC | AKV_FK_ADAPTIVE | AKV_FK_SORTED |
 * AKV_FK_CONCURRENT. Queries are lock-free readers of a sequence lock;
 * insert, remove and adapt serialise on a mutex. Negatives given to
 * akv_filter_create() are pre-adapted at finish (static YES/NO build).
 */
#ifndef AKV_AQF_H
#define AKV_AQF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/filter.h"
#include "revmap/revmap.h"

/* Build a `qf` or `aqf` filter (kind) from hashes in ascending (hi, lo)
 * order in one sequential pass: no shifting, no sorting. AKV_EINVAL if the
 * input is not sorted. */
int akvi_aqf_bulk_load(const akv_filter_kind *kind, const akv_filter_params *p, const akv_hash *sorted,
                       size_t n, akv_filter **out);

/* Static YES/NO build (paper §4.3/§5.1): an `aqf` holding `yes` that answers
 * "no" for every hash of `no`. Colliding fingerprints are extended at build
 * time with the bits of their own keys. *unfixable (optional) counts NO
 * hashes that equal a YES hash in all 128 bits (those stay positive). */
int akvi_aqf_build_yesno(const akv_filter_params *p, const akv_hash *yes, size_t n_yes, const akv_hash *no,
                         size_t n_no, akv_filter **out, size_t *unfixable);

/* Merge two filters of the same kind and parameters in one pass, without
 * their keys. out_q = 0 keeps a's quotient bits; out_q = q + d doubles the
 * slots d times and moves d remainder bits into the quotient (the
 * fingerprint bits, and so the reverse map, are unchanged; FPR grows 2^d).
 * A record whose fingerprint nests with one from the other input is cut
 * back to the shorter one: never a false negative, but it may forget an
 * adaptation (use akvi_aqf_merge_exact to keep them all). */
int akvi_aqf_merge(const akv_filter *a, const akv_filter *b, uint32_t out_q, akv_filter **out);

/* Merge with both inputs' reverse maps: records interleave in exact hash
 * order, nested fingerprints are told apart with their owners' bits, every
 * adaptation survives, and the output may have any size (out_q, out_r; 0 =
 * inputs' r; out_q 0 = sized for both at the kind's fill). */
int akvi_aqf_merge_exact(const akv_filter *a, akv_revmap *rm_a, const akv_filter *b, akv_revmap *rm_b,
                         uint32_t out_q, uint32_t out_r, akv_filter **out);

/* Resize into a new filter with 2^new_q slots and new_r-bit remainders (0 =
 * same r), reading every key once from the reverse map (one sorted pass).
 * Extended fingerprints keep at least their bits and growing gives every
 * fingerprint more, so growing loses no adaptation; shrinking keeps bare
 * fingerprints bare (the smaller filter's FPR), so a fixed false positive
 * that differed from a bare one only in the dropped bits can return. */
int akvi_aqf_resize(const akv_filter *f, uint32_t new_q, uint32_t new_r, akv_revmap *rm, akv_filter **out);

/* Remove key h by its exact rank (the reverse map must still hold h). With
 * `shorten`, the remaining members of h's minirun drop the extensions that
 * only told them apart from each other and from h: this can bring back a
 * false positive the filter had fixed (docs/filters.md, "Rank order, the
 * shadowing hazard, ..."). */
int akvi_aqf_remove_exact(akv_filter *f, akv_hash h, akv_revmap *rm, bool shorten);

/* Full structural check of a qf/aqf filter (tests, tools). */
int akvi_aqf_validate(const akv_filter *f);

/* Geometry of a qf/aqf filter. */
typedef struct akvi_aqf_info {
    uint32_t q, r, prefix_bits;
    uint64_t slots, used, items, ext_slots, adaptations;
} akvi_aqf_info;
int akvi_aqf_info_get(const akv_filter *f, akvi_aqf_info *out);

#endif
