/*
 * clock.h — the one monotonic clock adaptkv measures durations with.
 */
#ifndef AKV_CLOCK_H
#define AKV_CLOCK_H

#include <time.h>

static inline double akvi_mono_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#endif
