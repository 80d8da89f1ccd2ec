/*
 * clock.c — kvbench's clocks, in one place: the wall clock that times
 * phases and settles, and the CPU clocks that say what a phase cost beside
 * its wall time: a client thread's own (CLOCK_THREAD_CPUTIME_ID) and the
 * whole process's (CLOCK_PROCESS_CPUTIME_ID, which keeps the time of
 * threads already gone), whose difference is the engine's background work
 * (docs/kvbench.md, "What is measured").
 */
#include <time.h>

#include "tools/kvbench/kvbench.h"

double akv_kb_clock_seconds(clockid_t clk)
{
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

uint64_t akv_kb_mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}
