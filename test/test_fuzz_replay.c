/*
 * test_fuzz_replay.c — every committed fuzz input (test/fuzz/TARGET/: the
 * seeds and regressions/, the inputs fuzzing once crashed on) through the
 * same harness code the fuzzers run, compiled in here without libFuzzer.
 * A harness property that fails aborts, which fails the test.
 *
 * The inputs are found from the working directory (make test runs from the
 * source tree), else from AKV_SRC, else upwards from this binary.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define AKV_FUZZ_NO_MAIN
#include "test/fuzz/fuzz_catalog.c"
#include "test/fuzz/fuzz_filter.c"
#include "test/fuzz/fuzz_kvbench.c"
#include "test/fuzz/fuzz_kvshell.c"
#include "test/fuzz/fuzz_misslog.c"

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The directory holding test/fuzz. */
static void source_root(char *out, size_t cap)
{
    const char *env = getenv("AKV_SRC");
    if (is_dir("test/fuzz")) {
        snprintf(out, cap, ".");
        return;
    }
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0, "cannot find test/fuzz: run from the source tree or set AKV_SRC");
    exe[n] = 0;
    for (char *slash; (slash = strrchr(exe, '/')) != NULL;) {
        *slash = 0;
        char probe[PATH_MAX + 16];
        snprintf(probe, sizeof probe, "%s/test/fuzz", exe);
        if (is_dir(probe)) {
            snprintf(out, cap, "%s", exe);
            return;
        }
    }
    cr_assert_fail("cannot find test/fuzz: run from the source tree or set AKV_SRC");
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t cap = 4096, n = 0, r;
    uint8_t *buf = malloc(cap);
    cr_assert_not_null(buf);
    while ((r = fread(buf + n, 1, cap - n, f)) > 0)
        if ((n += r) == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            cr_assert_not_null(bigger);
            buf = bigger;
        }
    fclose(f);
    *len = n;
    return buf;
}

/* Feeds every regular file under dir (recursively); returns how many. */
static size_t replay_dir(const char *dir, int (*fn)(const uint8_t *, size_t))
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (is_dir(path)) {
            n += replay_dir(path, fn);
            continue;
        }
        size_t len;
        uint8_t *buf = slurp(path, &len);
        fprintf(stderr, "replay %s\n", path);
        fn(buf, len);
        free(buf);
        n++;
    }
    closedir(d);
    return n;
}

static void replay(const char *target, int (*fn)(const uint8_t *, size_t))
{
    char root[PATH_MAX], dir[PATH_MAX + 32];
    source_root(root, sizeof root);
    snprintf(dir, sizeof dir, "%s/test/fuzz/%s", root, target);
    size_t n = replay_dir(dir, fn);
    cr_assert_gt(n, 0, "no inputs under %s", dir);
}

Test(fuzz_replay, filter)
{
    replay("filter", fuzz_filter);
}

Test(fuzz_replay, catalog)
{
    replay("catalog", fuzz_catalog);
}

Test(fuzz_replay, misslog)
{
    replay("misslog", fuzz_misslog);
}

Test(fuzz_replay, kvshell)
{
    replay("kvshell", fuzz_kvshell);
}

Test(fuzz_replay, kvbench)
{
    replay("kvbench", fuzz_kvbench);
}
