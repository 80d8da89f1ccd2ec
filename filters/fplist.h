/*
 * fplist.h — the verified list of fixed false positives (filters/fplist.c)
 * that kinds `ablocked` and `afuse` put in front of a static filter. Internal.
 */
#ifndef AKV_FPLIST_H
#define AKV_FPLIST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/filter.h"
#include "util/codec.h"

#define AKVI_FPLIST_BUCKET 16 /* cells of a bucket: 64 bytes, one cache line */

typedef struct akvi_fplist {
    uint32_t *cells; /* nbuckets × AKVI_FPLIST_BUCKET, cache-line aligned */
    uint64_t nbuckets, count, unfixable, adaptations, evictions, preadapted;
    uint64_t tick; /* in memory only: where CLOCK starts */
    /* The exact table: allocated at its first entry; entries below n_exact
     * are complete (each written before n_exact is raised, with release;
     * queries load n_exact with acquire and never see a half-written one). */
    akv_hash *exact;
    unsigned n_exact;
    pthread_mutex_t mu;
    /* build only: the negatives given to create and the keys' fingerprints */
    akv_negative *neg;
    size_t n_neg;
    uint32_t *kfp;
    size_t n_kfp, cap_kfp;
} akvi_fplist;

/* Buckets of a list for n keys: max(16, n/256) cells in whole buckets. */
uint64_t akvi_fplist_buckets_for(uint64_t n);
/* Bits of that list: what a kind takes out of its budget for it. */
double akvi_fplist_bits_for(uint64_t n);
/* An empty list of `nbuckets` buckets. AKV_OK or AKV_ENOMEM. */
int akvi_fplist_init(akvi_fplist *l, uint64_t nbuckets);
void akvi_fplist_free(akvi_fplist *l);
/* Build: keep the negatives to pre-adapt to (copied). AKV_OK, AKV_ENOMEM. */
int akvi_fplist_expect(akvi_fplist *l, const akv_negative *neg, size_t n_neg);
/* Build: a key of the set (kept only while negatives are pending). */
int akvi_fplist_add_key(akvi_fplist *l, akv_hash h);
/* End of build: list each negative, heaviest first, that `passes` (the
 * inner filter's answer) and no key's fingerprint equals; then drop the
 * build state. */
void akvi_fplist_preadapt(akvi_fplist *l, bool (*passes)(const akv_filter *, akv_hash),
                          const akv_filter *inner);
/* h is a fixed false positive: its value is listed or its hash is in the
 * exact table. Lock-free; marks a listed value referenced. */
bool akvi_fplist_rejects(const akvi_fplist *l, akv_hash h);
/* Fix the false positive y (the caller saw the inner filter pass it and
 * the list not reject it): AKV_OK, AKV_NOTFOUND (a stored key, already
 * fixed, or unfixable), the reverse map's error, AKV_EINVAL. */
int akvi_fplist_adapt(akvi_fplist *l, akv_hash y, akv_revmap *rm);
size_t akvi_fplist_memory(const akvi_fplist *l);
/* Payload part: u64 buckets, u64 count, u64 unfixable, u64 adaptations,
 * u64 evictions, u64 preadapted, buckets × 16 × u32 cells. */
void akvi_fplist_save(akvi_fplist *l, akvi_wbuf *w);
/* Reads that part from r (v1: ablocked's version-1 layout, whose values
 * are dropped) into an initialised l. AKV_OK, AKV_ECORRUPT, AKV_ENOMEM;
 * on error l holds nothing to free. */
int akvi_fplist_load(akvi_fplist *l, akvi_rbuf *r, bool v1);
/* JSON fields "list_cells" … "unfixable" (no trailing comma). */
int akvi_fplist_describe(akvi_fplist *l, char *buf, size_t cap);
void akvi_fplist_stats(akvi_fplist *l, akv_filter_stats *out);

#endif
