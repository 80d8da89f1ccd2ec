/*
 * test_install.c — the library as another project consumes it.
 *
 * `make install PREFIX=<temporary directory>`, then, against that prefix only:
 *   - the shared library is libadaptkv.so.0.1.0 with SONAME libadaptkv.so.0,
 *     and libadaptkv.so.0 and libadaptkv.so are symlinks to it;
 *   - its dynamic symbol table exports exactly the functions the installed
 *     public headers declare AKV_API (no akvi_* engine symbol, no akv_*
 *     helper of filters/ or revmap/);
 *   - `pkg-config --libs adaptkv` (and --static) resolve with
 *     PKG_CONFIG_PATH=<prefix>/lib/pkgconfig;
 *   - test/cxx/smoke.cpp compiles with `c++ $(pkg-config --cflags --libs adaptkv)`,
 *     links the shared library, and runs without LD_LIBRARY_PATH: exit 0,
 *     exactly its one success line on stdout and nothing on stderr (so the
 *     library printed nothing when it created and when it reopened the
 *     database).
 *
 * Run from the source tree (as `make test` does) or with AKV_SRC set to it;
 * `make install` uses $AKV_BUILD as BUILD when that is set. Sanitizer builds
 * skip it: their library needs the sanitizer runtime in every program.
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/order.h"

#define SMOKE_OK "smoke: ok; error -1 is \"invalid argument\"\n"

static char src[PATH_MAX];    /* the source tree, absolute */
static char prefix[PATH_MAX]; /* the temporary install prefix */

static bool is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static void find_source(void)
{
    const char *env = getenv("AKV_SRC");
    const char *root = is_file("include/adaptkv/adaptkv.h") && is_file("Makefile") ? "." : env;
    cr_assert(root && *root, "run from the source tree or set AKV_SRC to it");
    cr_assert_not_null(realpath(root, src), "AKV_SRC=%s does not exist", root);
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/test/cxx/smoke.cpp", src);
    cr_assert(is_file(probe), "%s is not the adaptkv source tree", src);
}

/* Reads a whole file into a malloc'd string ("" if absent). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    size_t r;
    while ((r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap) {
            cap *= 2;
            char *t = realloc(s, cap);
            cr_assert_not_null(t);
            s = t;
        }
    }
    fclose(f);
    s[n] = '\0';
    return s;
}

/* Runs `cmd` with /bin/sh, stdout to <prefix>/NAME.out and stderr to
 * <prefix>/NAME.err; returns the exit status (-1 if it did not exit). */
static int run(const char *name, const char *cmd)
{
    size_t cap = strlen(cmd) + 2 * strlen(prefix) + 2 * strlen(name) + 64;
    char *full = malloc(cap);
    cr_assert_not_null(full);
    snprintf(full, cap, "(%s) >'%s/%s.out' 2>'%s/%s.err'", cmd, prefix, name, prefix, name);
    int st = system(full);
    free(full);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *output(const char *name, const char *stream)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s.%s", prefix, name, stream);
    return slurp(p);
}

/* Asserts `cmd` exits 0, showing its stderr if it does not. */
static void run_ok(const char *name, const char *cmd)
{
    int rc = run(name, cmd);
    if (rc != 0) {
        char *err = output(name, "err");
        cr_assert_fail("%s: exit %d: %s\nstderr:\n%s", name, rc, cmd, err);
    }
}

/* Adds the function names the header at `path` declares AKV_API to names[]. */
static void declared_api(const char *path, char names[][64], size_t *n, size_t cap)
{
    char *text = slurp(path);
    cr_assert(text[0], "cannot read %s", path);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "AKV_API ", 8) != 0)
            continue;
        char *paren = strchr(line, '(');
        cr_assert_not_null(paren, "no '(' in %s: %s", path, line);
        char *end = paren;
        while (end > line && end[-1] == ' ')
            end--;
        char *begin = end;
        while (begin > line && (begin[-1] == '_' || (begin[-1] >= 'a' && begin[-1] <= 'z') ||
                                (begin[-1] >= '0' && begin[-1] <= '9')))
            begin--;
        cr_assert_lt(*n, cap);
        cr_assert(end - begin > 4 && end - begin < 64, "odd declaration in %s: %s", path, line);
        snprintf(names[*n], 64, "%.*s", (int)(end - begin), begin);
        (*n)++;
    }
    free(text);
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

#define MAX_NAMES 256

static void check_exports(void)
{
    static char declared[MAX_NAMES][64], exported[MAX_NAMES][64];
    size_t nd = 0, ne = 0;
    static const char *headers[] = {"adaptkv.h", "filter.h", "hash.h"};
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/include/adaptkv/%s", prefix, headers[i]);
        declared_api(p, declared, &nd, MAX_NAMES);
    }
    cr_assert_gt(nd, 40, "only %zu AKV_API functions found in the installed headers", nd);

    /* Defined dynamic symbols: every line of objdump -T that is not *UND*
     * and names a function or object; the name is the last field. */
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "objdump -T '%s/lib/libadaptkv.so'", prefix);
    run_ok("objdump", cmd);
    char *dump = output("objdump", "out");
    for (char *line = strtok(dump, "\n"); line; line = strtok(NULL, "\n")) {
        if (strstr(line, "*UND*") || !(strstr(line, " DF ") || strstr(line, " DO ")))
            continue;
        char *name = strrchr(line, ' ');
        cr_assert_not_null(name);
        name++;
        cr_assert(strncmp(name, "akv_", 4) == 0, "libadaptkv.so exports %s, which is not akv_*", name);
        cr_assert_lt(ne, MAX_NAMES);
        snprintf(exported[ne++], 64, "%s", name);
    }
    free(dump);

    akv_sort(declared, nd, sizeof *declared, cmp_name);
    akv_sort(exported, ne, sizeof *exported, cmp_name);
    for (size_t i = 0, j = 0; i < nd || j < ne;) {
        int c = i == nd ? 1 : j == ne ? -1 : strcmp(declared[i], exported[j]);
        cr_assert(c >= 0, "%s is declared AKV_API but libadaptkv.so does not export it", declared[i]);
        cr_assert(c <= 0, "libadaptkv.so exports %s, which no public header declares AKV_API", exported[j]);
        i++, j++;
    }
}

static void check_soname(void)
{
    char p[PATH_MAX + 64], target[PATH_MAX];
    snprintf(p, sizeof p, "%s/lib/libadaptkv.so.0.1.0", prefix);
    struct stat st;
    cr_assert(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", p);

    snprintf(p, sizeof p, "%s/lib/libadaptkv.so.0", prefix);
    ssize_t n = readlink(p, target, sizeof target - 1);
    cr_assert_gt(n, 0, "%s is not a symlink", p);
    target[n] = '\0';
    cr_assert_str_eq(target, "libadaptkv.so.0.1.0");

    snprintf(p, sizeof p, "%s/lib/libadaptkv.so", prefix);
    cr_assert(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "%s is not a symlink", p);
    cr_assert(stat(p, &st) == 0 && S_ISREG(st.st_mode), "%s does not lead to the library", p);

    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "readelf -d '%s/lib/libadaptkv.so.0.1.0'", prefix);
    run_ok("readelf-lib", cmd);
    char *dyn = output("readelf-lib", "out");
    cr_assert_not_null(strstr(dyn, "Library soname: [libadaptkv.so.0]"), "no SONAME libadaptkv.so.0:\n%s",
                       dyn);
    free(dyn);
}

static void check_cxx_program(void)
{
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --libs adaptkv", prefix);
    run_ok("pkg-config", cmd);
    snprintf(cmd, sizeof cmd, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --static --libs adaptkv",
             prefix);
    run_ok("pkg-config-static", cmd);

    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH='%s/lib/pkgconfig' && "
             "c++ -std=c++17 -Wall -Wextra -Werror -o '%s/smoke' '%s/test/cxx/smoke.cpp' "
             "$(pkg-config --cflags --libs adaptkv)",
             prefix, prefix, src);
    run_ok("compile", cmd);

    /* Linked against the shared library, not the static one. */
    snprintf(cmd, sizeof cmd, "readelf -d '%s/smoke'", prefix);
    run_ok("readelf-smoke", cmd);
    char *dyn = output("readelf-smoke", "out");
    cr_assert_not_null(strstr(dyn, "Shared library: [libadaptkv.so.0]"),
                       "the program does not load libadaptkv.so.0:\n%s", dyn);
    free(dyn);

    /* No LD_LIBRARY_PATH: the program finds the library by itself. */
    snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH '%s/smoke' '%s/db'", prefix, prefix);
    int rc = run("smoke", cmd);
    char *out = output("smoke", "out"), *err = output("smoke", "err");
    cr_assert_eq(rc, 0, "smoke exited %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
    cr_assert_str_eq(out, SMOKE_OK, "smoke's stdout is not its one success line");
    cr_assert_str_eq(err, "", "something wrote to stderr (a successful open must print nothing):\n%s", err);
    free(out);
    free(err);
}

Test(install, prefix_holds_a_library_cxx_programs_build_against)
{
    const char *san = getenv("AKV_SANITIZER");
    if (san && *san)
        cr_skip_test("sanitizer build: its library needs the sanitizer runtime in every program");
    find_source();

    snprintf(prefix, sizeof prefix, "%s/akvinstall-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    cr_assert_not_null(mkdtemp(prefix));

    /* The child make must not take the parent's jobserver or variables. */
    unsetenv("MAKEFLAGS");
    unsetenv("MFLAGS");
    unsetenv("MAKELEVEL");
    unsetenv("MAKEOVERRIDES");
    unsetenv("DESTDIR");
    const char *build = getenv("AKV_BUILD");
    char cmd[3 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "make -C '%s' --no-print-directory %s%s%s install PREFIX='%s'", src,
             build && *build ? "BUILD='" : "", build && *build ? build : "", build && *build ? "'" : "",
             prefix);
    run_ok("install", cmd);

    check_soname();
    check_exports();
    check_cxx_program();

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", prefix);
    cr_assert_eq(system(cmd), 0);
}
