/*
 * test_install.c — the library as another project consumes it.
 *
 * `make install PREFIX=<temporary directory>`, then, against that prefix only:
 *   - the shared library is libadaptkv.so.<AKV_VERSION_STRING> with SONAME
 *     libadaptkv.so.0, and libadaptkv.so.0 and libadaptkv.so are symlinks to it;
 *   - its dynamic symbol table exports exactly the functions the installed
 *     public headers declare, read from their declarations (not from the
 *     AKV_API marks, so a declaration without the mark fails): no akvi_*
 *     engine symbol, no akv_* helper of filters/ or revmap/;
 *   - a C program taking the address of every one of them builds with
 *     pkg-config against the installed shared library and runs, and
 *     akv_version() there is the header's AKV_VERSION_*;
 *   - every installed tool answers --version with that release;
 *   - every declared function's comment says what it returns;
 *   - test/cxx/every_call.c, which calls every function adaptkv.h declares
 *     (checked against the header), builds against the installed shared
 *     library and runs to its success line;
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
#include "adaptkv/adaptkv.h"
#include "util/order.h"
#include <criterion/criterion.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    char p[2 * PATH_MAX];
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

/* Adds to names[] every function the header at `path` declares, read as a
 * C compiler reads it, not by looking for the AKV_API mark: comments and
 * preprocessor lines dropped, `#ifdef __cplusplus` blocks skipped, then
 * every top-level declaration (outside braces, up to its `;`) that is not a
 * typedef and has a parameter list. Static inline definitions in the header
 * (a body instead of `;`) are not declarations of the library's symbols.
 * Asserts that each one carries AKV_API. */
static void declared_functions(const char *path, char names[][64], size_t *n, size_t cap)
{
    char *text = slurp(path);
    cr_assert(text[0], "cannot read %s", path);
    /* Pass 1: keep the C text (no comments, no preprocessor lines). */
    size_t len = strlen(text);
    char *c = calloc(len + 1, 1);
    cr_assert_not_null(c);
    size_t k = 0;
    bool bol = true, skip_cxx = false;
    for (size_t i = 0; i < len;) {
        if (text[i] == '/' && text[i + 1] == '*') {
            char *e = strstr(text + i + 2, "*/");
            cr_assert_not_null(e, "unterminated comment in %s", path);
            i = (size_t)(e - text) + 2;
            c[k++] = ' ';
            continue;
        }
        if (text[i] == '/' && text[i + 1] == '/') {
            while (i < len && text[i] != '\n')
                i++;
            continue;
        }
        if (bol) {
            size_t j = i;
            while (text[j] == ' ' || text[j] == '\t')
                j++;
            if (text[j] == '#') { /* a directive, with its continuation lines */
                if (strncmp(text + j, "#ifdef __cplusplus", 18) == 0)
                    skip_cxx = true;
                else if (strncmp(text + j, "#endif", 6) == 0)
                    skip_cxx = false;
                while (j < len && !(text[j] == '\n' && text[j - 1] != '\\'))
                    j++;
                i = j;
                continue;
            }
        }
        bol = text[i] == '\n';
        if (!skip_cxx)
            c[k++] = text[i];
        i++;
    }
    /* Pass 2: top-level statements. */
    int depth = 0;
    size_t stmt = 0; /* start of the current statement in c */
    for (size_t i = 0; i < k; i++) {
        if (c[i] == '{') {
            depth++;
            continue;
        }
        if (c[i] == '}') {
            depth--;
            /* The end of a function body ends its statement (no `;`). */
            if (depth == 0 && memchr(c + stmt, '(', i - stmt) && !strstr(c + stmt, "typedef")) {
                char *brace = memchr(c + stmt, '{', i - stmt);
                char *paren = memchr(c + stmt, '(', i - stmt);
                if (brace && paren < brace)
                    stmt = i + 1;
            }
            continue;
        }
        if (c[i] != ';' || depth != 0)
            continue;
        char decl[2048];
        size_t dl = i - stmt < sizeof decl - 1 ? i - stmt : sizeof decl - 1;
        memcpy(decl, c + stmt, dl);
        decl[dl] = '\0';
        stmt = i + 1;
        char *p = decl;
        while (*p == ' ' || *p == '\n' || *p == '\t')
            p++;
        char *paren = strchr(p, '(');
        if (strncmp(p, "typedef", 7) == 0 || !paren || strchr(p, '{'))
            continue;
        char *end = paren;
        while (end > p && (end[-1] == ' ' || end[-1] == '\n'))
            end--;
        char *begin = end;
        while (begin > p &&
               (begin[-1] == '_' || (begin[-1] >= 'a' && begin[-1] <= 'z') ||
                (begin[-1] >= 'A' && begin[-1] <= 'Z') || (begin[-1] >= '0' && begin[-1] <= '9')))
            begin--;
        cr_assert(end - begin > 4 && end - begin < 64, "odd declaration in %s: %s", path, p);
        cr_assert_lt(*n, cap);
        snprintf(names[*n], 64, "%.*s", (int)(end - begin), begin);
        cr_assert(strncmp(p, "AKV_API ", 8) == 0,
                  "%s declares %s without AKV_API: the library does not export it", path, names[*n]);
        (*n)++;
    }
    cr_assert_eq(depth, 0, "unbalanced braces in %s", path);
    free(c);
    free(text);
}

/* A C program that takes the address of every declared function (so each
 * must resolve at link time), built against the installed shared library
 * only, with pkg-config, and run: it prints how many it holds. */
static void link_every_function(char names[][64], size_t n)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/every.c", prefix);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fputs("#include <adaptkv/adaptkv.h>\n#include <adaptkv/filter.h>\n#include <adaptkv/hash.h>\n"
          "#include <stdio.h>\n#include <string.h>\n\nint main(void)\n{\n    void (*volatile fns[])(void) = "
          "{\n",
          f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "        (void (*)(void))%s,\n", names[i]);
    /* The library's release is the header's. */
    fputs("    };\n    size_t n = 0;\n    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)\n"
          "        n += fns[i] != NULL;\n    printf(\"%zu\\n\", n);\n"
          "    int ma = -1, mi = -1, pa = -1;\n    const char *v = akv_version(&ma, &mi, &pa);\n"
          "    return strcmp(v, AKV_VERSION_STRING) != 0 || ma != AKV_VERSION_MAJOR || mi != "
          "AKV_VERSION_MINOR ||\n"
          "           pa != AKV_VERSION_PATCH || AKV_VERSION_NUMBER != ma * 10000 + mi * 100 + pa;\n}\n",
          f);
    cr_assert_eq(fclose(f), 0);
    char cmd[4 * PATH_MAX];
    snprintf(
        cmd, sizeof cmd,
        "export PKG_CONFIG_PATH='%s/lib/pkgconfig' && "
        "cc -std=c17 -Wall -Wextra -Werror -o '%s/every' '%s/every.c' $(pkg-config --cflags --libs adaptkv)",
        prefix, prefix, prefix);
    run_ok("compile-every", cmd);
    snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH '%s/every'", prefix);
    run_ok("every", cmd);
    char *out = output("every", "out");
    cr_assert_eq(strtoul(out, NULL, 10), n, "the program holds %s functions of the %zu declared", out, n);
    free(out);
}

/* Every function declared AKV_API in the header at `path` has a comment
 * right above its declaration (or above the group of declarations it
 * belongs to) that says what it returns: "Returns"/"returns", "Cannot
 * fail" or "no-op" (docs/design.md: each public function lists its return
 * codes in the header). */
static void check_documented(const char *path)
{
    char *text = slurp(path);
    cr_assert(text[0], "cannot read %s", path);
    size_t n = 0, cap = 4096;
    char **lines = malloc(cap * sizeof *lines);
    cr_assert_not_null(lines);
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
        cr_assert_lt(n, cap);
        lines[n++] = l;
    }
    for (size_t i = 0; i < n; i++) {
        if (strncmp(lines[i], "AKV_API ", 8) != 0)
            continue;
        /* Back over the group's other declarations and their continuation
         * lines to the comment's last line. */
        size_t j = i;
        while (j > 0 && (strncmp(lines[j - 1], "AKV_API ", 8) == 0 || lines[j - 1][0] == ' ') &&
               !strstr(lines[j - 1], "*/"))
            j--;
        cr_assert(j > 0 && strstr(lines[j - 1], "*/"), "%s: no comment above %s", path, lines[i]);
        bool says = false;
        for (size_t k = j; k-- > 0;) {
            says = says || strstr(lines[k], "eturn") || strstr(lines[k], "Cannot fail") ||
                   strstr(lines[k], "no-op");
            if (strstr(lines[k], "/*"))
                break;
        }
        cr_assert(says, "%s: the comment above '%s' does not say what it returns", path, lines[i]);
    }
    free(lines);
    free(text);
}

/* test/cxx/every_call.c calls every function adaptkv.h declares (checked
 * here against the installed header's declarations: each name followed by
 * '(' in its source), built with pkg-config against the installed shared
 * library, and must run to its success line. */
static void call_every_function(char names[][64], size_t n)
{
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/test/cxx/every_call.c", src);
    char *source = slurp(p);
    cr_assert(source[0], "cannot read %s", p);
    for (size_t i = 0; i < n; i++) {
        char call[80];
        snprintf(call, sizeof call, "%s(", names[i]);
        cr_assert_not_null(strstr(source, call),
                           "test/cxx/every_call.c does not call %s, which adaptkv.h declares", names[i]);
    }
    free(source);
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "export PKG_CONFIG_PATH='%s/lib/pkgconfig' && "
             "cc -std=c17 -Wall -Wextra -Werror -o '%s/every_call' '%s/test/cxx/every_call.c' "
             "$(pkg-config --cflags --libs adaptkv)",
             prefix, prefix, src);
    run_ok("compile-every-call", cmd);
    snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH '%s/every_call' '%s/every-call-dbs'", prefix, prefix);
    int rc = run("every-call", cmd);
    char *out = output("every-call", "out"), *err = output("every-call", "err");
    cr_assert_eq(rc, 0, "every_call exited %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
    cr_assert_str_eq(out, "every_call: ok\n");
    free(out);
    free(err);
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
    size_t n_main = 0; /* the first n_main are adaptkv.h's */
    for (size_t i = 0; i < sizeof headers / sizeof *headers; i++) {
        char p[PATH_MAX + 64];
        snprintf(p, sizeof p, "%s/include/adaptkv/%s", prefix, headers[i]);
        declared_functions(p, declared, &nd, MAX_NAMES);
        check_documented(p);
        if (i == 0)
            n_main = nd;
    }
    call_every_function(declared, n_main);
    cr_assert_gt(nd, 40, "only %zu functions found declared in the installed headers", nd);

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

    akvi_sort(declared, nd, sizeof *declared, cmp_name);
    akvi_sort(exported, ne, sizeof *exported, cmp_name);
    for (size_t i = 0, j = 0; i < nd || j < ne;) {
        int c = i == nd ? 1 : j == ne ? -1 : strcmp(declared[i], exported[j]);
        cr_assert(c >= 0, "%s is declared in a public header but libadaptkv.so does not export it",
                  declared[i]);
        cr_assert(c <= 0, "libadaptkv.so exports %s, which no public header declares", exported[j]);
        i++, j++;
    }
    link_every_function(declared, nd);
}

static void check_soname(void)
{
    char p[PATH_MAX + 64], target[PATH_MAX];
    snprintf(p, sizeof p, "%s/lib/libadaptkv.so.%s", prefix, AKV_VERSION_STRING);
    struct stat st;
    cr_assert(lstat(p, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", p);

    snprintf(p, sizeof p, "%s/lib/libadaptkv.so.0", prefix);
    ssize_t n = readlink(p, target, sizeof target - 1);
    cr_assert_gt(n, 0, "%s is not a symlink", p);
    target[n] = '\0';
    char want[64];
    snprintf(want, sizeof want, "libadaptkv.so.%s", AKV_VERSION_STRING);
    cr_assert_str_eq(target, want);

    snprintf(p, sizeof p, "%s/lib/libadaptkv.so", prefix);
    cr_assert(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "%s is not a symlink", p);
    cr_assert(stat(p, &st) == 0 && S_ISREG(st.st_mode), "%s does not lead to the library", p);

    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "readelf -d '%s/lib/libadaptkv.so.%s'", prefix, AKV_VERSION_STRING);
    run_ok("readelf-lib", cmd);
    char *dyn = output("readelf-lib", "out");
    cr_assert_not_null(strstr(dyn, "Library soname: [libadaptkv.so.0]"), "no SONAME libadaptkv.so.0:\n%s",
                       dyn);
    free(dyn);
}

/* Every installed tool answers --version with its name and the release. */
static void check_tool_versions(void)
{
    static const char *tools[] = {"kvshell", "kvbench", "filterbench", "costbench", "aqfbench"};
    for (size_t i = 0; i < sizeof tools / sizeof *tools; i++) {
        char cmd[PATH_MAX + 64], name[64], want[128];
        snprintf(cmd, sizeof cmd, "'%s/bin/%s' --version", prefix, tools[i]);
        snprintf(name, sizeof name, "version-%s", tools[i]);
        run_ok(name, cmd);
        char *out = output(name, "out");
        snprintf(want, sizeof want, "%s (adaptkv) %s\n", tools[i], AKV_VERSION_STRING);
        cr_assert_str_eq(out, want, "%s --version", tools[i]);
        free(out);
    }
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
    check_tool_versions();
    check_cxx_program();

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", prefix);
    cr_assert_eq(system(cmd), 0);
}
