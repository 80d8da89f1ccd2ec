/*
 * test_lockorder.c — the check of the engine's lock order
 * (engine/lockorder.h): a thread may wait for a lock only while every lock
 * it holds ranks below it; a class of many locks may be held several at a
 * time; a try-lock is recorded but never refused.
 *
 * The debug builds (make asan, make tsan, make DEBUG=1) run every other
 * test with the check on each lock the engine takes, so an order that
 * could deadlock fails there at once.
 */
#include <criterion/criterion.h>
#include <pthread.h>

#include "engine/lockorder.h"

Test(lockorder, rising_ranks_pass_and_a_lower_one_is_refused)
{
    cr_assert(akvi_rank_ok(AKVI_RANK_PUB));
    akvi_rank_taken(AKVI_RANK_PUB);
    cr_assert(akvi_rank_ok(AKVI_RANK_WRITE));
    akvi_rank_taken(AKVI_RANK_WRITE);
    cr_assert(akvi_rank_ok(AKVI_RANK_VERSION), "vs.pubmu -> wr.mu -> vs.mu is the documented order");
    cr_assert(!akvi_rank_ok(AKVI_RANK_CAT), "cat.mu under wr.mu could deadlock against a commit");
    cr_assert(!akvi_rank_ok(AKVI_RANK_SAVE));
    cr_assert(!akvi_rank_ok(AKVI_RANK_WRITE), "wr.mu is one lock: not taken twice");
    akvi_rank_dropped(AKVI_RANK_WRITE);
    cr_assert(akvi_rank_ok(AKVI_RANK_CAT), "with wr.mu released, cat.mu may follow vs.pubmu");
    akvi_rank_dropped(AKVI_RANK_PUB);
    cr_assert(akvi_rank_ok(AKVI_RANK_SAVE), "nothing held: any lock");
}

Test(lockorder, a_class_is_held_several_at_once)
{
    akvi_rank_taken(AKVI_RANK_MISSLOG);
    akvi_rank_taken(AKVI_RANK_MISSLOG);
    cr_assert(akvi_rank_ok(AKVI_RANK_MISSLOG), "the miss log takes its shards by index");
    cr_assert(!akvi_rank_ok(AKVI_RANK_SLOT));
    akvi_rank_dropped(AKVI_RANK_MISSLOG);
    cr_assert(!akvi_rank_ok(AKVI_RANK_SLOT), "one shard is still held");
    akvi_rank_dropped(AKVI_RANK_MISSLOG);
    cr_assert(akvi_rank_ok(AKVI_RANK_SLOT));
}

#ifdef AKVI_LOCK_ORDER
Test(lockorder, a_trylock_breaks_no_order_and_is_recorded)
{
    pthread_mutex_t lo = PTHREAD_MUTEX_INITIALIZER, hi = PTHREAD_MUTEX_INITIALIZER;
    akvi_mutex_lock(&hi, AKVI_RANK_RETIRED);
    cr_assert(akvi_mutex_trylock(&lo, AKVI_RANK_BG),
              "a try-lock never waits, so it may go against the order");
    cr_assert(!akvi_rank_ok(AKVI_RANK_GRAVE), "vs.retmu is held above grave.mu");
    akvi_mutex_unlock(&hi, AKVI_RANK_RETIRED);
    cr_assert(akvi_rank_ok(AKVI_RANK_GRAVE), "bg.mu -> grave.mu is the documented order");
    cr_assert(!akvi_rank_ok(AKVI_RANK_WRITE), "the try-locked bg.mu counts as held");
    akvi_mutex_unlock(&lo, AKVI_RANK_BG);
    cr_assert(akvi_rank_ok(AKVI_RANK_WRITE));
}
#else
Test(lockorder, a_release_build_takes_plain_locks)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    akvi_mutex_lock(&m, AKVI_RANK_RETIRED);
    cr_assert(akvi_rank_ok(AKVI_RANK_PUB), "without AKVI_LOCK_ORDER nothing is recorded");
    cr_assert(!akvi_mutex_trylock(&m, AKVI_RANK_RETIRED), "the mutex itself is held");
    akvi_mutex_unlock(&m, AKVI_RANK_RETIRED);
    cr_assert(akvi_mutex_trylock(&m, AKVI_RANK_RETIRED));
    akvi_mutex_unlock(&m, AKVI_RANK_RETIRED);
}
#endif

static void *other_thread(void *arg)
{
    *(bool *)arg = akvi_rank_ok(AKVI_RANK_PUB);
    return NULL;
}

Test(lockorder, each_thread_has_its_own_ranks)
{
    akvi_rank_taken(AKVI_RANK_VERSION);
    cr_assert(!akvi_rank_ok(AKVI_RANK_PUB));
    bool ok = false;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, &ok), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    cr_assert(ok, "vs.mu held here does not bind another thread");
    akvi_rank_dropped(AKVI_RANK_VERSION);
}
