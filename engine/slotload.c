/*
 * slotload.c — a run's filter slots as open loads them (slotload.h): each
 * from its filter file, checked against the catalog through the file's
 * binding, or rebuilt in memory from its SST's keys
 * (docs/reliability.md, "Damage and what open does").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/slotload.h"
#include "util/order.h"

/* A version-1 filter file names no SST: trusted only if it holds every key
 * of the SST it sits beside. */
static bool holds_all(akv_db *db, const akvi_cat_run *r, const akv_filter *f, const akv_hash *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!akv_filter_may_contain(f, akvi_run_slot_hash(db, r, h[i])))
            return false;
    return true;
}

/* What the previous catalog generation (the other slot) records for run
 * `run` (its level, or SST `sst`'s shard), for a refusal's message. */
static void previous_generation(akv_db *db, uint64_t run, uint64_t sst, bool level, char *out, size_t cap)
{
    unsigned slot = (unsigned)((db->cat.seq + 1) & 1);
    akvi_catalog c;
    if (akvi_catalog_load_slot(db->dir, slot, &c) != AKV_OK) {
        snprintf(out, cap, "the previous catalog (CATALOG.%u) is unusable", slot);
        return;
    }
    const akvi_cat_run *r = akvi_catalog_run(&c, run);
    snprintf(out, cap, "the previous catalog (CATALOG.%u, sequence %llu) does not name run %llu", slot,
             (unsigned long long)c.seq, (unsigned long long)run);
    for (size_t j = 0; r && j < r->n_sst; j++)
        if (level || r->ssts[j].id == sst)
            snprintf(out, cap, "the previous catalog (CATALOG.%u, sequence %llu) records %s %llu", slot,
                     (unsigned long long)c.seq, level ? "level" : "shard prefix",
                     (unsigned long long)(level ? r->level : r->ssts[j].prefix));
    akvi_catalog_free(&c);
}

/* The SST's filter file is bound to it (run, SST, keys, size, key digest
 * and range all the catalog's) and records the run's level and shard: an
 * independent witness of the catalog's. Where the two disagree on a field
 * that steers lookups, one of them is wrong and open cannot tell which:
 * refused, naming the field. A file bound to another SST (copied) or
 * unreadable is no witness, and is rebuilt. */
static int check_binding(akv_db *db, const akvi_run *r, size_t j)
{
    const akvi_cat_sst *s = &r->info.ssts[j];
    char name[64];
    akvi_filter_file_name(r->info.id, s->id, name, sizeof name);
    char *path = akvi_path_join(db->fdir, name);
    if (!path)
        return akvi_err(AKV_ENOMEM, "out of memory");
    akvi_cat_run d = {0};
    int rc = akvi_slot_describe(path, &d);
    free(path);
    if (rc != AKV_OK || d.n_sst != 1) {
        akvi_cat_run_free(&d);
        return rc == AKV_ENOMEM ? rc : AKV_OK;
    }
    const akvi_cat_sst *b = &d.ssts[0];
    bool same_sst = d.id == r->info.id && b->id == s->id && b->keys == s->keys && b->bytes == s->bytes &&
                    b->digest == s->digest &&
                    akvi_bytes_cmp(b->smallest, b->smallest_len, s->smallest, s->smallest_len) == 0 &&
                    akvi_bytes_cmp(b->largest, b->largest_len, s->largest, s->largest_len) == 0;
    const char *field = !same_sst                                                        ? NULL
                        : d.level != r->info.level                                       ? "level"
                        : d.prefix_bits != r->info.prefix_bits || b->prefix != s->prefix ? "shard prefix"
                                                                                         : NULL;
    if (field) {
        bool level = strcmp(field, "level") == 0;
        char prev[200];
        previous_generation(db, r->info.id, s->id, level, prev, sizeof prev);
        rc = akvi_refuse(
            AKVI_DMG_FILTER_FIELD_CONFLICT, AKV_ECORRUPT,
            "run %llu: the catalog (CATALOG.%u, sequence %llu) records %s %llu (shard of %u bits), but "
            "its SST %llu's filter file %s, bound to that SST, records %s %llu (%u bits); %s: the "
            "catalog or the filter file is wrong",
            (unsigned long long)r->info.id, (unsigned)(db->cat.seq & 1), (unsigned long long)db->cat.seq,
            field, (unsigned long long)(level ? r->info.level : s->prefix), r->info.prefix_bits,
            (unsigned long long)s->id, name, field, (unsigned long long)(level ? d.level : b->prefix),
            d.prefix_bits, prev);
    }
    akvi_cat_run_free(&d);
    return rc;
}

int akvi_slot_load(akv_db *db, akvi_run *r, size_t j, bool *upgraded)
{
    akvi_cat_sst *s = &r->info.ssts[j];
    akv_filter *f = NULL;
    bool unbound = false, dirty = false;
    int rc = akvi_slot_read_file(db->fdir, &r->info, j, &unbound, &f);
    if (rc != AKV_OK && rc != AKV_ENOMEM) {
        int brc = check_binding(db, r, j);
        if (brc != AKV_OK)
            return brc;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", rc == AKV_OK ? "" : akv_errmsg());
    if (rc != AKV_OK || unbound || s->digest == 0) {
        akv_hash *h = NULL;
        size_t n = 0;
        int hrc = akvi_sst_hashes(db, r, s, &h, &n);
        if (hrc == AKV_OK && s->digest == 0) {
            s->digest = akvi_key_digest(h, n);
            *upgraded = true;
        }
        if (hrc == AKV_OK && rc == AKV_OK && unbound && !holds_all(db, &r->info, f, h, n)) {
            snprintf(why, sizeof why,
                     "version-1 filter file %llu-%llu.akf does not hold every key of its SST",
                     (unsigned long long)r->info.id, (unsigned long long)s->id);
            akv_filter_destroy(f);
            f = NULL;
            rc = AKV_ECORRUPT;
        }
        if (hrc == AKV_OK && rc != AKV_OK) {
            akvi_damage_warn(db, AKVI_DMG_FILTER_UNUSABLE,
                             "filter slot %llu-%llu unusable (%s); rebuilt from its SST",
                             (unsigned long long)r->info.id, (unsigned long long)s->id, why);
            rc = akvi_build_filter(db, (int)r->info.level, &r->info, s, h, n, n, NULL, 0, &f);
        } else if (hrc != AKV_OK && (rc != AKV_OK || unbound)) {
            /* No filter rather than one that might answer "no" wrongly:
             * every lookup probes this SST, and reads of its damaged part
             * fail with AKV_EIO. */
            akvi_log(
                db,
                "warning: filter slot %llu-%llu unusable (%s) and its SST unreadable (%s): lookups probe "
                "the SST unfiltered; akv_repair salvages what is readable",
                (unsigned long long)r->info.id, (unsigned long long)s->id, rc == AKV_OK ? "version 1" : why,
                akv_errmsg());
            akv_filter_destroy(f);
            f = NULL;
            rc = AKV_OK;
        }
        dirty = rc == AKV_OK && f && (unbound || why[0]);
        free(h);
    }
    if (rc != AKV_OK) {
        akv_filter_destroy(f);
        return rc;
    }
    akvi_slot_init(&r->slots[j], f);
    akvi_slot_bind(&r->slots[j], &r->info, j);
    atomic_store(&r->slots[j].dirty, dirty);
    return AKV_OK;
}
