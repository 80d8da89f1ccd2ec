/*
 * hash.h — the one hash adaptkv computes per key, and the cheap derivations
 * filters take from it.
 *
 * Every key is hashed exactly once, at the API boundary, with XXH3-128 and a
 * per-database seed (docs/design.md, "Data layout"). Filters receive the resulting akv_hash and
 * never look at key bytes again: every probe position, offset, fingerprint
 * and extension chunk is derived from these 128 bits, `hi` first, then `lo`.
 * Derivations that need more than 128 bits (many hash functions, HABF's
 * family) remix the two words with akv_mix64(), which is a bijection, so
 * distinct inputs stay distinct.
 */
#ifndef AKV_HASH_H
#define AKV_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "adaptkv/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct akv_hash {
    uint64_t hi; /* h.high64: ordering bits, quotient, first probe */
    uint64_t lo; /* h.low64: second probe stride, extensions */
} akv_hash;

/* XXH3_128bits_withSeed(key, len, seed). Cannot fail. */
AKV_API akv_hash akv_hash_key(const void *key, size_t len, uint64_t seed);

/* A strong 64-bit finaliser (bijective); used to derive independent values. */
static inline uint64_t akv_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Map a uniform 64-bit value to [0, n) without a division (Lemire). */
static inline uint64_t akv_reduce(uint64_t h, uint64_t n)
{
    return (uint64_t)(((unsigned __int128)h * n) >> 64);
}

/* i-th of a family of independent 64-bit hashes derived from h. */
static inline uint64_t akv_hash_nth(akv_hash h, uint64_t i)
{
    return akv_mix64(h.hi + i * 0x9e3779b97f4a7c15ULL) ^ akv_mix64(h.lo ^ (i * 0xc2b2ae3d27d4eb4fULL));
}

#ifdef __cplusplus
}
#endif
#endif
