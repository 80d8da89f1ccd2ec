/*
 * convert.c — an older format's run, kept in column families run.<id> and
 * rmap.<id>, named as a run of files in DIR/runs (convert.h). One
 * mechanism under two policies: open's, which converts only a run whose
 * families hold exactly what the catalog records, and repair's, which
 * names whatever is there and lets the reading that follows count what is
 * lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "engine/convert.h"
#include "util/order.h"

/* The SST of desc that starts at key k (NULL: none); only the j-th when
 * strict (both are in key order). */
static const akvi_cat_sst *starting_at(const akvi_cat_run *desc, size_t j, bool strict, const uint8_t *k,
                                       size_t kl)
{
    for (size_t m = strict ? j : 0; m < (strict ? j + 1 : desc->n_sst); m++)
        if (akvi_bytes_cmp(desc->ssts[m].smallest, desc->ssts[m].smallest_len, k, kl) == 0)
            return &desc->ssts[m];
    return NULL;
}

/* Links file f of a family as SST sst of run id; a file that is gone is
 * skipped unless strict. */
static int link_one(akv_db *db, const akvi_live_sst *f, uint64_t id, uint64_t sst, bool strict)
{
    char *live = akvi_path_join(db->rdir, f->name + (f->name[0] == '/'));
    struct stat st;
    int rc = AKV_OK;
    if (!live)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    else if (strict || stat(live, &st) == 0)
        rc = akvi_run_link_file(db, live, id, sst);
    free(live);
    return rc;
}

int akvi_convert_run(akv_db *db, const akvi_live_sst *l, size_t nl, uint64_t id, const akvi_cat_run *desc,
                     bool strict)
{
    char name[64];
    snprintf(name, sizeof name, "run.%llu", (unsigned long long)id);
    size_t first, k = akvi_live_ssts_of(l, nl, name, &first);
    if (strict && k != desc->n_sst)
        return akvi_err(AKV_ECORRUPT, "its family holds %zu SST files, its catalog entry %zu", k,
                        desc->n_sst);
    uint64_t fresh = 0;
    for (size_t j = 0; j < desc->n_sst; j++)
        fresh = desc->ssts[j].id >= fresh ? desc->ssts[j].id + 1 : fresh;
    int rc = AKV_OK;
    for (size_t j = 0; rc == AKV_OK && j < k; j++) {
        const akvi_live_sst *f = &l[first + j];
        const akvi_cat_sst *s = starting_at(desc, j, strict, f->smallest, f->smallest_len);
        if (!s && strict)
            return akvi_err(AKV_ECORRUPT, "its family's SST %zu does not start where the catalog says", j);
        rc = link_one(db, f, id, s ? s->id : fresh++, strict);
    }
    if (rc != AKV_OK || db->layout != AKV_LAYOUT_ORDERED)
        return rc;
    snprintf(name, sizeof name, "rmap.%llu", (unsigned long long)id);
    k = akvi_live_ssts_of(l, nl, name, &first);
    if (k == 1)
        return link_one(db, &l[first], id, AKVI_RMAP_SST, strict);
    return strict ? akvi_err(AKV_ECORRUPT, "its reverse map family holds %zu SST files, not 1", k) : AKV_OK;
}
