/*
 * filter_props.h — property checks every filter kind's tests share:
 * no false negatives, FPR against the kind's own formula, serialization
 * round trips, rejection of truncated and altered bytes.
 */
#ifndef AKV_TEST_FILTER_PROPS_H
#define AKV_TEST_FILTER_PROPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/filter.h"

/* Deterministic key i of a key space `space` (members and non-members come
 * from different spaces); hashed the way the engine hashes keys. */
akv_hash akvt_key(uint64_t space, uint64_t i);
akv_hash *akvt_keys(uint64_t space, size_t n);

/* splitmix64 PRNG for seeded tests. */
uint64_t akvt_rand(uint64_t *state);

/* Build a filter of `kind` over n keys of space `seed`. Asserts success. */
akv_filter *akvt_build(const char *kind, const akv_filter_params *p, uint64_t seed, size_t n);

/* Asserts: every one of the n member keys answers maybe. */
void akvt_check_no_false_negatives(const akv_filter *f, uint64_t seed, size_t n);

/* Measured FPR over q non-member keys. */
double akvt_measure_fpr(const akv_filter *f, uint64_t seed, size_t q);

/* Asserts measured FPR within tolerance of the kind's fpr_theory():
 * |fpr - theory| <= rel*theory + 5 standard errors. */
void akvt_check_fpr_theory(const akv_filter *f, uint64_t seed, size_t q, double rel);

/* Asserts: serialize → deserialize answers identically on members and
 * q non-members, and every truncation and `flips` random byte changes are
 * rejected with AKV_ECORRUPT (or AKV_ENOTSUP for a changed kind/version). */
void akvt_check_serialization(const akv_filter *f, uint64_t seed, size_t n, size_t q, size_t flips);

/* Rewrite the trailing xxh64 checksum of a serialized filter after a test
 * altered its bytes on purpose, so that only the altered field is wrong. */
void akvt_reseal(uint8_t *buf, size_t len);

/* Asserts: each one-byte edit of f's serialized payload (byte off[e] of
 * the payload set to val[e], or xor'ed with it when xor is true), under a
 * resealed checksum, is refused with AKV_ECORRUPT and no filter. */
void akvt_check_edits_rejected(const akv_filter *f, const size_t *off, const uint8_t *val, size_t n, bool xor);

/* kind->load on randomly damaged payloads (the envelope checksum bypassed,
 * as if a checksum collided): asserts it answers AKV_OK or AKV_ECORRUPT and
 * never crashes, and that a filter it accepts can answer queries. */
void akvt_check_payload_damage(const akv_filter *f, uint64_t seed, size_t trials);

#endif
