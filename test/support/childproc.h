/* Child processes for the crash and fault tests: re-execute the test binary
 * with extra environment, and wait for it with a bound. */
#ifndef AKVT_CHILDPROC_H
#define AKVT_CHILDPROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Start this test binary again (/proc/self/exe, no arguments) with `env_add`
 * ("NAME=VALUE" strings, NULL-terminated) added to the environment. The new
 * process finds its orders there in a constructor, before the test runner's
 * main() starts: a multi-threaded parent (RocksDB's threads) may not run
 * library code after fork(), and ThreadSanitizer refuses outright. Every
 * descriptor the child needs must lack FD_CLOEXEC. Returns the pid. */
pid_t akvt_spawn_self(const char *const *env_add);

/* Wait for `pid`, at most `seconds`: true with its status, or false after
 * killing it (SIGKILL) when it did not end in time (a hang). */
bool akvt_wait_bounded(pid_t pid, int seconds, int *status);

/* The environment that preloads the fault shim (test/shim/faultfs.c,
 * built beside the test binaries; AKV_FAULTFS overrides its path) into a
 * child: "LD_PRELOAD=..." into preload, and "ASAN_OPTIONS=..." into asan
 * (an AddressSanitizer build wants its runtime first; the shim, which only
 * forwards calls, is preloaded before it). */
void akvt_faultfs_env(char *preload, size_t preload_cap, char *asan, size_t asan_cap);

/* CLOCK_MONOTONIC in seconds (for deadlines that detect hangs, never for asserting speed). */
double akvt_now(void);

#endif
