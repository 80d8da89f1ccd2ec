/*
 * options.c — akv_options: defaults and validation.
 *
 * slot_policy (NULL) and bits_per_key (0) default to "not set": an open
 * database keeps the ones it stores, a new one takes the default policy and
 * AKVI_DEFAULT_BITS_PER_KEY (docs/design.md, "Slot policy").
 */
#include <string.h>

#include "engine/internal.h"

void akv_options_init(akv_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->layout = AKV_LAYOUT_HASH;
    opt->memtable_bytes = 64u << 20;
    opt->block_cache_bytes = 64u << 20;
    opt->sst_target_bytes = 64u << 20;
    opt->miss_log_bytes = 1u << 20;
    opt->l0_compaction_trigger = 4;
    opt->l0_stall_runs = 36;
    opt->level_multiplier = 10;
    opt->create_if_missing = 1;
    opt->grown_filter_share = 0.03;
    opt->rest_compaction = 1; /* bounded: docs/design.md, "LSM shape" */
    opt->l0_front = 1;        /* docs/design.md, "The L0 front" */
}

static int check_options(const akv_options *o)
{
    if (o->layout != AKV_LAYOUT_HASH && o->layout != AKV_LAYOUT_ORDERED && o->layout != AKV_LAYOUT_AUTO)
        return akvi_err(AKV_EINVAL, "unknown layout %d", (int)o->layout);
    if (o->bits_per_key != 0 && !(o->bits_per_key > 0 && o->bits_per_key <= 64))
        return akvi_err(AKV_EINVAL, "bits_per_key %g is outside (0, 64] (0: the database's own)",
                        o->bits_per_key);
    if (o->memtable_bytes < 4096)
        return akvi_err(AKV_EINVAL, "memtable_bytes %llu is below 4096",
                        (unsigned long long)o->memtable_bytes);
    if (o->sst_target_bytes < 4096)
        return akvi_err(AKV_EINVAL, "sst_target_bytes %llu is below 4096",
                        (unsigned long long)o->sst_target_bytes);
    if (o->l0_compaction_trigger < 1 || o->l0_stall_runs < o->l0_compaction_trigger)
        return akvi_err(AKV_EINVAL, "need 1 <= l0_compaction_trigger (%d) <= l0_stall_runs (%d)",
                        o->l0_compaction_trigger, o->l0_stall_runs);
    if (o->l0_slowdown_runs < 0 || o->l0_slowdown_runs > o->l0_stall_runs)
        return akvi_err(AKV_EINVAL, "l0_slowdown_runs %d is outside [0, l0_stall_runs = %d]",
                        o->l0_slowdown_runs, o->l0_stall_runs);
    if (o->level_multiplier < 2)
        return akvi_err(AKV_EINVAL, "level_multiplier %d is below 2", o->level_multiplier);
    if (o->rest_compaction < 0 || o->rest_compaction > 2)
        return akvi_err(AKV_EINVAL, "rest_compaction %d is not 0 (off), 1 (bounded) or 2 (all the way down)",
                        o->rest_compaction);
    if (o->l0_front != 0 && o->l0_front != 1)
        return akvi_err(AKV_EINVAL, "l0_front %d is not 0 (off) or 1 (on)", o->l0_front);
    if (!(o->grown_filter_share >= 0 && o->grown_filter_share <= 64))
        return akvi_err(AKV_EINVAL, "grown_filter_share %g is outside [0, 64]", o->grown_filter_share);
    return AKV_OK;
}

int akvi_options_resolve(const akv_options *in, akv_options *out)
{
    if (in)
        *out = *in;
    else
        akv_options_init(out);
    return check_options(out);
}
