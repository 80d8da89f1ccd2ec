/*
 * fuzz.h — shared by the libFuzzer harnesses of test/fuzz (docs/reliability.md,
 * "Fuzzing").
 *
 * Each harness fuzz_NAME.c defines `int fuzz_NAME(const uint8_t *, size_t)`
 * holding all its logic, and LLVMFuzzerTestOneInput calling it unless
 * AKV_FUZZ_NO_MAIN is defined: test/test_fuzz_replay.c includes the harnesses
 * that way and feeds them every committed seed and regression input, so the
 * inputs a fuzzer once crashed on stay in `make test` with the same checks.
 *
 * A failed property aborts (libFuzzer records the input as a crash; the
 * replay test reports the crash).
 */
#ifndef AKV_FUZZ_H
#define AKV_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                                                                \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                                    \
            fputc('\n', stderr);                                                                             \
            abort();                                                                                         \
        }                                                                                                    \
    } while (0)

#ifdef AKV_FUZZ_NO_MAIN
#define AKV_FUZZ_ENTRY(fn)
#else
#define AKV_FUZZ_ENTRY(fn)                                                                                   \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                                            \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                             \
    {                                                                                                        \
        fn(data, size);                                                                                      \
        return 0;                                                                                            \
    }
#endif

#endif
