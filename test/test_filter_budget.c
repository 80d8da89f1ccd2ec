/*
 * test_filter_budget.c — all filter memory stays at bits_per_key.
 *
 * bits_per_key (B) bounds every filter's memory per key, the memtable
 * guard's included (docs/design.md, "Filter memory by level"): slots are
 * built with what the budget leaves them after every other slot and the
 * guard, grown filters included; a full adaptive filter grows only while
 * the total stays within grown_filter_share over the budget, and is
 * refilled in place past it. These tests drive a database through a seeded
 * random mix of writes (flushes, compactions, L0 merges) and absent-key
 * lookups that make slots adapt and grow, and check the total against
 * akv_stats.filter_budget_bytes all along, and that no key is lost.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "engine/internal.h" /* the guard's averaging period */
#include "support/filter_props.h"
#include "support/kvmodel.h"

static int key_of(char *k, size_t cap, uint64_t i)
{
    return snprintf(k, cap, "budget-%09llu", (unsigned long long)i);
}

/* Background work caught up: no compaction due. */
static void settle(akv_db *db)
{
    akv_stats st;
    for (int w = 0; w < 12000; w++) {
        cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
        if (st.compaction_debt_bytes == 0)
            return;
        usleep(10000);
    }
    cr_assert_fail("compactions did not catch up in 120 s");
}

/* filter_bytes over filter_budget_bytes, with the parts logged. */
static double ratio(akv_db *db, const char *when)
{
    akv_stats st;
    cr_assert_eq(akv_get_stats(db, &st), AKV_OK);
    uint64_t slots = 0;
    for (int l = 0; l < AKV_MAX_LEVELS; l++)
        slots += st.filter_bytes_per_level[l];
    cr_assert_eq(slots + st.guard_filter_bytes, st.filter_bytes, "the parts do not add up to filter_bytes");
    double r = (double)st.filter_bytes / (double)st.filter_budget_bytes;
    cr_log_info("%s: %llu keys, filters %llu bytes (slots %llu, grown %llu, guard %llu) against %llu: %.3f",
                when, (unsigned long long)st.live_keys_estimate, (unsigned long long)st.filter_bytes,
                (unsigned long long)slots, (unsigned long long)st.filter_grown_bytes,
                (unsigned long long)st.guard_filter_bytes, (unsigned long long)st.filter_budget_bytes, r);
    return r;
}

/*
 * 200,000 keys at 12 bits per key (AQF slots), small SSTs so that slots
 * fill up with adaptations and grow, then rounds of writes (new keys and
 * overwrites) and absent keys (fresh ones, each asked again if it cost a
 * probe, so that its second false positive is fixed), with the total
 * checked after every round: within 5 % of the budget on average, within
 * 8 % at every check.
 */
Test(budget, total_filter_memory_stays_within_5_percent)
{
    const char *policy = "mem=sscf,l0+=aqf";
    akv_options o;
    akv_options_init(&o);
    if (!akv_filter_kind_by_name("aqf") || !akv_filter_kind_by_name("sscf"))
        cr_skip_test("aqf or sscf is not registered");
    /* The guard's memory comes off the runs' budget averaged over about a
     * minute; this test lasts seconds. */
    atomic_store(&akvi_guard_avg_seconds, 0.5);
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "budget");
    o.layout = AKV_LAYOUT_HASH;
    o.slot_policy = policy;
    o.bits_per_key = 12;
    o.memtable_bytes = 128u << 10;
    o.sst_target_bytes = 64u << 10;
    o.level_multiplier = 4;
    o.seed = 0xb0d6e7;
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    enum { LOAD = 200000, ROUNDS = 8, WRITES = 10000, ABSENT = 50000 };
    uint64_t st = 0x5eedb0d6, n = 0;
    char k[40], v[8];
    memset(v, 'v', sizeof v);
    for (; n < LOAD; n++) {
        int kl = key_of(k, sizeof k, n);
        cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
    }
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    settle(db);
    double lo = ratio(db, "loaded"), hi = lo, sum = lo;
    int points = 1;
    uint64_t absent = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < WRITES + ABSENT; i++) {
            if (akvt_rand(&st) % (WRITES + ABSENT) < WRITES) { /* a third overwrites */
                uint64_t id = akvt_rand(&st) % 3 == 0 ? akvt_rand(&st) % n : n++;
                int kl = key_of(k, sizeof k, id);
                cr_assert_eq(akv_put(db, k, (size_t)kl, v, sizeof v), AKV_OK, "%s", akv_errmsg());
                continue;
            }
            int kl = snprintf(k, sizeof k, "absent-%llu", (unsigned long long)absent++);
            akv_get_info info;
            cr_assert_eq(akv_get_ex(db, k, (size_t)kl, NULL, NULL, &info), AKV_NOTFOUND);
            if (info.wasted_probes > 0)
                cr_assert_eq(akv_get_ex(db, k, (size_t)kl, NULL, NULL, &info), AKV_NOTFOUND);
        }
        char when[32];
        snprintf(when, sizeof when, "round %d", round);
        double r = ratio(db, when);
        lo = r < lo ? r : lo;
        hi = r > hi ? r : hi;
        sum += r, points++;
        if (round % 4 == 3) { /* and once background work has caught up */
            settle(db);
            r = ratio(db, "settled");
            lo = r < lo ? r : lo;
            hi = r > hi ? r : hi;
            sum += r, points++;
        }
    }
    akv_stats end;
    cr_assert_eq(akv_get_stats(db, &end), AKV_OK);
    double mean = sum / points;
    cr_log_info("ratio %.3f .. %.3f, mean %.3f; %llu adaptations, %llu grows, %llu refills, %llu compactions",
                lo, hi, mean, (unsigned long long)end.adaptations, (unsigned long long)end.filter_grows,
                (unsigned long long)end.filter_refills, (unsigned long long)end.compactions);
    /* the workload did what it is for */
    cr_assert_gt(end.adaptations, 1000, "%llu adaptations", (unsigned long long)end.adaptations);
    cr_assert_gt(end.filter_grows + end.filter_refills, 0, "no slot filled up");
    cr_assert_gt(end.compactions, 0);
    /* Within 5 % on average over the run (what the engines are compared
     * on: kvbench's time-averaged total). A single instant may be a little
     * further over, between a build and the compaction that follows it:
     * 1.02-1.047 was the highest in most runs, 1.053 once, so an instant
     * is held to 8 %. Under it by more at times: a compaction that merges
     * an upper level into the deepest drops the upper units' extra bits
     * (the Monkey share), and the slots built in its place take B again
     * only as the tree's shape comes back; measured 0.92 at the lowest. */
    cr_assert_leq(mean, 1.05, "filter memory %.3f of its budget on average", mean);
    cr_assert_geq(mean, 0.95, "filter memory %.3f of its budget on average", mean);
    cr_assert_leq(hi, 1.08, "filter memory %.3f of its budget", hi);
    cr_assert_geq(lo, 0.90, "filter memory %.3f of its budget", lo);
    /* no key lost */
    for (uint64_t i = 0; i < n; i++) {
        int kl = key_of(k, sizeof k, i);
        cr_assert_eq(akv_get(db, k, (size_t)kl, NULL, NULL), AKV_OK, "%s lost", k);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}

/*
 * A slot of a handful of keys may cover a wide share of the hash space (a
 * small flush pushed into L1 at rest is cut per shard), so every slot gets
 * at least 512 bits in all (engine/slotbuild.c): at its level's share a
 * fuse filter's cells outnumber five keys several times, and such slots
 * answered 6-12 % of the fresh keys they met. No L0 front here: the run's
 * own slot is what is measured.
 */
Test(budget, a_slot_of_a_few_keys_still_filters)
{
    akv_options o;
    akv_options_init(&o);
    o.l0_front = 0;
    o.seed = 0xf1f;
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "fewkeys");
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_OK, "%s", akv_errmsg());
    char k[32];
    for (uint64_t i = 0; i < 5; i++)
        cr_assert_eq(akv_put(db, k, (size_t)key_of(k, sizeof k, i), "v", 1), AKV_OK, "%s", akv_errmsg());
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
    enum { Q = 20000 };
    uint64_t wasted = 0, checked = 0;
    for (uint64_t i = 0; i < Q; i++) {
        akv_get_info info;
        int n = key_of(k, sizeof k, 1000000 + i);
        cr_assert_eq(akv_get_ex(db, k, (size_t)n, NULL, NULL, &info), AKV_NOTFOUND, "%s", akv_errmsg());
        wasted += info.wasted_probes;
        checked += info.slots_checked;
    }
    cr_assert_geq(checked, Q, "the run's slot was not checked (%llu)", (unsigned long long)checked);
    cr_assert_leq(wasted, Q / 200, "a 5-key slot let %llu of %d absent keys through",
                  (unsigned long long)wasted, Q);
    for (uint64_t i = 0; i < 5; i++) {
        void *v = NULL;
        size_t vl = 0;
        cr_assert_eq(akv_get(db, k, (size_t)key_of(k, sizeof k, i), &v, &vl), AKV_OK, "%s", akv_errmsg());
        akv_free(v);
    }
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());
    akvt_rmrf(dir);
}
