/* The shim's runner: runs every registered test in order, in-process,
 * and prints Criterion's synthesis line. A failed assertion ends that test
 * (longjmp) and the run continues. */
#include <setjmp.h>
#include <stdarg.h>

#include "criterion/criterion.h"

typedef struct shim_test {
    const char *suite, *name;
    akvt_shim_fn fn;
} shim_test;

static shim_test g_tests[512];
static int g_ntests;
static jmp_buf g_jmp;

void akvt_shim_register(const char *suite, const char *name, akvt_shim_fn fn)
{
    if (g_ntests < 512)
        g_tests[g_ntests++] = (shim_test){suite, name, fn};
}

void akvt_shim_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s:%d: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    longjmp(g_jmp, 1);
}

void akvt_shim_skip(void) { longjmp(g_jmp, 2); }

/* 0 passed, 1 failed, 2 skipped; kept out of main so no local lives across the longjmp. */
static int run_one(const shim_test *t)
{
    int r = setjmp(g_jmp);
    if (r == 0)
        t->fn();
    return r;
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    int pass = 0, fail = 0;
    for (int i = 0; i < g_ntests; i++) {
        if (run_one(&g_tests[i]) == 1) {
            fprintf(stderr, "[FAIL] %s::%s\n", g_tests[i].suite, g_tests[i].name);
            fail++;
        } else {
            pass++;
        }
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: 0\n", pass + fail, pass,
            fail);
    return fail ? 1 : 0;
}
