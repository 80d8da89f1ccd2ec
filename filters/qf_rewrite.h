/*
 * qf_rewrite.h — operations that rewrite a quotient filter from its records
 * (filters/qf_rewrite.c), reached only from tools and tests through
 * filters/aqf.h: merge without keys, rebuild with the reverse map (resize,
 * exact merge), exact removal by rank. The core (qf_core.c) never calls them.
 */
#ifndef AKV_QF_REWRITE_H
#define AKV_QF_REWRITE_H

#include "filters/qf_core.h"

/* Remove the key h exactly (its own rank, found with the reverse map, which
 * must still hold h), and when `shorten` is set cut the extensions of the
 * remaining minirun members down to what keeps them apart from each other
 * and from h. Shortening forgets adaptations to queries that are not stored
 * keys: it trades monotonicity for space (docs/filters.md, "Rank order, the
 * shadowing hazard, ..."). */
int akvi_qf_remove_exact(akvi_qf *f, akv_hash h, akv_revmap *rm, bool shorten);

/* Merge a and b (same slot count N) into an empty `out` of N·2^d slots,
 * d = out->q - a->q, in one pass. out->q >= a->q (= b->q),
 * out->r = a->r - (out->q - a->q): the fingerprints keep their bits and are
 * re-split (the reverse map is unchanged). Where the union breaks invariant
 * N, a fingerprint is cut back to the shortest fingerprint of its minirun
 * that is its prefix (never a false negative; it can forget adaptations). */
int akvi_qf_merge(const akvi_qf *a, const akvi_qf *b, akvi_qf *out);

/* Rebuild `in` into an empty `out` of another size using every key of the
 * reverse map (one sorted pass; must hold exactly the filter's keys). Each
 * fingerprint keeps at least the bits it had (never forgets an adaptation);
 * out->r may differ. */
int akvi_qf_rebuild(const akvi_qf *in, akv_revmap *rm, akvi_qf *out);
/* The same over one or two inputs (exact merge): records interleave by
 * owner hash. */
int akvi_qf_rebuild2(const akvi_qf *const *in, akv_revmap *const *rm, int nin, akvi_qf *out);

#endif
