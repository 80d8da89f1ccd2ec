/*
 * datasets.h — deterministic stand-ins for the HABF/SSCF papers' datasets,
 * generated from a seed and hashed the way the engine hashes keys.
 *
 *   shalla  URL-like strings (domains, some with paths), as the Shalla
 *           blacklist: 1,491,178 positives and 1,435,527 negatives
 *   ycsb    YCSB-style keys "user" + FNV-1a-64 of a key number:
 *           12,500,611 positives and 11,574,201 negatives
 *
 * Positives and negatives are disjoint: shalla strings embed a distinct id;
 * ycsb key numbers are distinct and their FNV hashes collide with
 * probability ~1e-5 over the whole set (YCSB itself has the same property).
 */
#ifndef AKV_FILTERBENCH_DATASETS_H
#define AKV_FILTERBENCH_DATASETS_H

#include <stddef.h>
#include <stdint.h>

#include "adaptkv/hash.h"

/* Generate dataset `name` with `seed` (also the XXH3 seed of the hashes).
 * On success *pos and *neg are malloc'd arrays the caller frees.
 * AKV_OK, AKV_EINVAL (unknown name) or AKV_ENOMEM. */
int akv_dataset_generate(const char *name, uint64_t seed, akv_hash **pos, size_t *npos, akv_hash **neg,
                         size_t *nneg);

/* Write key string i of the dataset into buf (NUL-terminated, truncated to
 * cap); i < npos are positives, the rest negatives. Returns its length, or
 * -1 for an unknown name. For inspection and for tests. */
int akv_dataset_key(const char *name, uint64_t seed, uint64_t i, char *buf, size_t cap);

#endif
