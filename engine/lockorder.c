/*
 * lockorder.c — the check that each thread takes the engine's locks in
 * rising rank (lockorder.h; docs/design.md, "Concurrency").
 *
 * Per thread: how many locks of each rank it holds, and a mask of the
 * ranks with at least one. Waiting for rank r is allowed when no held rank
 * is above r, and none equals r unless r is a class whose locks the code
 * takes in an order of its own. Only builds with AKVI_LOCK_ORDER call this
 * on every lock; the functions exist in every build so that their test
 * runs everywhere.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "engine/lockorder.h"

static _Thread_local uint32_t t_mask __attribute__((tls_model("initial-exec")));
static _Thread_local uint16_t t_count[AKVI_RANK_COUNT] __attribute__((tls_model("initial-exec")));

static const char *const names[AKVI_RANK_COUNT] = {
    [AKVI_RANK_SAVE] = "bg.savemu",     [AKVI_RANK_PUB] = "vs.pubmu",
    [AKVI_RANK_CAT] = "cat.mu",         [AKVI_RANK_WRITE] = "wr.mu",
    [AKVI_RANK_BG] = "bg.mu",           [AKVI_RANK_GRAVE] = "grave.mu",
    [AKVI_RANK_POOL] = "pool.mu",       [AKVI_RANK_FRONT] = "fronts.mu",
    [AKVI_RANK_GUARD] = "guard.lock",   [AKVI_RANK_VERSION] = "vs.mu",
    [AKVI_RANK_RETIRED] = "vs.retmu",   [AKVI_RANK_SLOT_GROW] = "a slot's grow_mu",
    [AKVI_RANK_SLOT] = "a slot's lock", [AKVI_RANK_MISSLOG] = "a miss-log shard's lock",
};

static bool is_class(akvi_rank r)
{
    return r == AKVI_RANK_MISSLOG;
}

bool akvi_rank_ok(akvi_rank r)
{
    uint32_t above = t_mask & ~((UINT32_C(2) << r) - 1); /* ranks > r */
    if (!is_class(r))
        above |= t_mask & (UINT32_C(1) << r);
    if (!above)
        return true;
    int top = 31 - __builtin_clz(above);
    fprintf(stderr,
            "adaptkv: lock order broken: waiting for %s while holding %s (docs/design.md, \"Concurrency\")\n",
            names[r], names[top]);
    return false;
}

void akvi_rank_taken(akvi_rank r)
{
    t_count[r]++;
    t_mask |= UINT32_C(1) << r;
}

void akvi_rank_dropped(akvi_rank r)
{
    if (t_count[r] > 0 && --t_count[r] == 0)
        t_mask &= ~(UINT32_C(1) << r);
}

void akvi_rank_violated(void)
{
    abort();
}
