/*
 * adapt.h — adaptation (adapt.c): fixing a slot's false positive, and the
 * rule that decides when that pays, with the rule's part of akv_db.
 */
#ifndef AKVI_ADAPT_H
#define AKVI_ADAPT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/hash.h"

typedef struct akvi_run akvi_run;

/* The adaptation rule's part of akv_db: lock-free, every field an atomic. */
typedef struct akvi_adapt_rule {
    /* Keys whose false positive was not fixed: a 32-bit tag of the hash per
     * entry, direct-mapped, AKVI_FP_SEEN entries, the first 8,192 of them
     * for the sampled ones. */
    _Atomic uint32_t *seen;
    /* Of the sampled first false positives left unfixed lately, how many
     * came back as a second, and how many a later sample took the place of
     * first; the sampling rate's exponent over its least: decide whether a
     * first one is fixed at once. */
    _Atomic uint32_t left, back, lost, thin;
} akvi_adapt_rule;

/* Adapt slot `sst` of run `r` to the false positive `h` (a slot hash): the
 * colliding keys are read from the reverse map first, then the slot's lock
 * is taken and the fingerprint extended. A filter with no room left is
 * rebuilt from its SST with twice the room. */
int akvi_adapt_slot(akv_db *db, akvi_run *r, size_t sst, akv_hash h);
/* Whether fixing a false positive of key (hash h, the key's own) pays: on
 * its second false positive (remembered in db->ad.seen), when the miss log
 * already holds it as a returning absent key, or, while at least a quarter
 * of a random sample of unfixed first false positives come back, on its
 * first unless it is sampled (docs/design.md, "Adaptation where it pays").
 * Records this false positive. */
bool akvi_adapt_pays(akv_db *db, akv_hash h, const void *key, size_t klen);
#define AKVI_FP_SEEN (1u << 16) /* entries of db->ad.seen: 256 KiB */
/* Test hook: called before the reverse map is read, outside every lock. */
extern void (*_Atomic akvi_hook_before_revmap_read)(void);
/* The rule's table (AKV_ENOMEM: nothing to destroy then). */
int akvi_adapt_rule_init(akvi_adapt_rule *ad);
void akvi_adapt_rule_destroy(akvi_adapt_rule *ad);

#endif
