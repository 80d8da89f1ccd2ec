/*
 * A minimal stand-in for Criterion's test macros, used only by `make tsan`.
 *
 * Criterion cannot start under ThreadSanitizer (its shared inheritable arena
 * collides with TSan's memory layout), so sanitizer builds of the tests link
 * against this shim instead: the same test sources, run sequentially in one
 * process, with the same "Synthesis:" summary line. Only the macros the
 * project's tests use are provided; `.init`/`.fini`/`.timeout` test options
 * are accepted and ignored.
 */
#ifndef AKV_TEST_SHIM_CRITERION_H
#define AKV_TEST_SHIM_CRITERION_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*akvt_shim_fn)(void);
void akvt_shim_register(const char *suite, const char *name, akvt_shim_fn fn);
_Noreturn void akvt_shim_fail(const char *file, int line, const char *fmt, ...);
_Noreturn void akvt_shim_skip(void);

#define Test(suite, name, ...)                                                                                    \
    static void suite##_##name##_impl(void);                                                                     \
    __attribute__((constructor)) static void suite##_##name##_reg(void)                                          \
    {                                                                                                            \
        akvt_shim_register(#suite, #name, suite##_##name##_impl);                                                \
    }                                                                                                            \
    static void suite##_##name##_impl(void)
#define TestSuite(...)

#define AKVT_MSG_(...) "" __VA_ARGS__
#define cr_assert(cond, ...)                                                                                      \
    do {                                                                                                         \
        if (!(cond))                                                                                             \
            akvt_shim_fail(__FILE__, __LINE__, "assert(" #cond ") " AKVT_MSG_(__VA_ARGS__));                    \
    } while (0)
#define cr_assert_not(cond, ...) cr_assert(!(cond), __VA_ARGS__)
#define cr_assert_eq(a, b, ...) cr_assert((a) == (b), __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_assert((a) != (b), __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_assert((a) < (b), __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_assert((a) <= (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_assert((a) > (b), __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_assert((a) >= (b), __VA_ARGS__)
#define cr_assert_null(p, ...) cr_assert((p) == NULL, __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_assert((p) != NULL, __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_assert(strcmp((a), (b)) == 0, __VA_ARGS__)
#define cr_assert_str_neq(a, b, ...) cr_assert(strcmp((a), (b)) != 0, __VA_ARGS__)
#define cr_assert_str_empty(a, ...) cr_assert((a)[0] == 0, __VA_ARGS__)
#define cr_assert_str_not_empty(a, ...) cr_assert((a)[0] != 0, __VA_ARGS__)
#define cr_assert_float_eq(a, b, eps, ...) cr_assert(((a) - (b)) <= (eps) && ((b) - (a)) <= (eps), __VA_ARGS__)
#define cr_assert_arr_eq(a, b, n, ...) cr_assert(memcmp((a), (b), (n)) == 0, __VA_ARGS__)
#define cr_assert_fail(...) akvt_shim_fail(__FILE__, __LINE__, "fail " AKVT_MSG_(__VA_ARGS__))
#define cr_fail(...) cr_assert_fail(__VA_ARGS__)
#define cr_expect(cond, ...) cr_assert(cond, __VA_ARGS__)
#define cr_expect_not(cond, ...) cr_assert_not(cond, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_assert_eq(a, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) cr_assert_neq(a, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) cr_assert_lt(a, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) cr_assert_leq(a, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) cr_assert_gt(a, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) cr_assert_geq(a, b, __VA_ARGS__)
#define cr_expect_null(p, ...) cr_assert_null(p, __VA_ARGS__)
#define cr_expect_not_null(p, ...) cr_assert_not_null(p, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) cr_assert_str_eq(a, b, __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, "[info] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_warn(...) (fprintf(stderr, "[warn] " __VA_ARGS__), fputc('\n', stderr))
#define cr_log_error(...) (fprintf(stderr, "[error] " __VA_ARGS__), fputc('\n', stderr))
#define cr_skip_test(...) akvt_shim_skip()

#endif
