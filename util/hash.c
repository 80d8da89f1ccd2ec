/*
 * hash.c — the one hash adaptkv computes per key (adaptkv/hash.h).
 */
#include <xxhash.h>

#include "adaptkv/hash.h"

akv_hash akv_hash_key(const void *key, size_t len, uint64_t seed)
{
    XXH128_hash_t h = XXH3_128bits_withSeed(key, len, seed);
    return (akv_hash){h.high64, h.low64};
}
