/*
 * shard.h — the hash a shard's filter slot sees.
 *
 * In the hash layout every key of an SST shares the top `pb` bits of h.hi
 * (its shard), so those bits carry no information for that SST's filter;
 * kinds that map h.hi over their whole table would use only 1/2^pb of it
 * (the blocked filter's false-positive rate went from ~1% to ~60% at 4
 * shards). The slot hash shifts the shard prefix out and refills the low
 * bits from h.lo, so every kind sees uniform bits. Build, query, miss-log
 * negatives and reverse maps all go through this one function
 * (docs/design.md, "Filter slots"; docs/format.md §8).
 */
#ifndef AKV_SHARD_H
#define AKV_SHARD_H

#include <stdint.h>

#include "adaptkv/hash.h"

static inline akv_hash akvi_slot_hash(akv_hash h, uint32_t pb)
{
    if (pb == 0)
        return h;
    return (akv_hash){(h.hi << pb) | (akv_mix64(h.lo) >> (64 - pb)), h.lo};
}

/* The shard of a hash when a run splits on its top pb bits. */
static inline uint64_t akvi_shard_of(akv_hash h, uint32_t pb)
{
    return pb ? h.hi >> (64 - pb) : 0;
}

#endif
