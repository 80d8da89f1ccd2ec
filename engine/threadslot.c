/*
 * threadslot.c — a small index per thread, so that readers write only cache
 * lines of their own (docs/design.md, "Concurrency").
 *
 * Every thread that calls into the read path gets one of AKVI_THREAD_SLOTS
 * indexes, unique among the live threads, on its first call; it is given
 * back when the thread exits. The read path uses it to pick its stripe of
 * the statistics counters and its version pin. Once every index is taken, a
 * thread has none (-1): its counters go to a shared stripe with atomic
 * additions, and it pins versions with the refcounted path, so counts and
 * pins stay exact at any number of threads; only the cache lines are
 * shared then.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "engine/internal.h"

static _Atomic uint64_t g_taken; /* bit i: index i belongs to a live thread */
static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_key_ok;
/* -2: not asked yet; -1: none free when asked; else the index. */
static _Thread_local int t_slot __attribute__((tls_model("initial-exec"))) = -2;

/* Runs on the exiting thread. Its slot is cleared first: a get from a
 * later thread-exit destructor then pins by refcount rather than through
 * an index another thread may already have taken. */
static void give_back(void *p)
{
    t_slot = -1;
    unsigned i = (unsigned)((uintptr_t)p - 1);
    atomic_fetch_and(&g_taken, ~(UINT64_C(1) << i));
}

static void key_init(void)
{
    g_key_ok = pthread_key_create(&g_key, give_back) == 0;
}

static int take(void)
{
    pthread_once(&g_once, key_init);
    if (!g_key_ok)
        return -1;
    uint64_t cur = atomic_load(&g_taken);
    while (~cur) {
        unsigned i = (unsigned)__builtin_ctzll(~cur);
        if (atomic_compare_exchange_weak(&g_taken, &cur, cur | (UINT64_C(1) << i))) {
            if (pthread_setspecific(g_key, (void *)(uintptr_t)(i + 1)) != 0) {
                atomic_fetch_and(&g_taken, ~(UINT64_C(1) << i));
                return -1;
            }
            return (int)i;
        }
    }
    return -1;
}

int akvi_thread_slot(void)
{
    if (__builtin_expect(t_slot == -2, 0))
        t_slot = take();
    return t_slot;
}
