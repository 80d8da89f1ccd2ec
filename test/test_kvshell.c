/*
 * test_kvshell.c — kvshell as a user drives it: piped commands, command
 * mode, exit statuses, binary-safe escaping and round trips, plus its word
 * splitter on its own (tools/kvshell/escape.c is compiled into this test).
 *
 * The binary is $AKV_BUILD/kvshell when AKV_BUILD is set, else the kvshell
 * next to this test's build directory (BUILD/test/test_kvshell ->
 * BUILD/kvshell), so sanitizer builds test their own kvshell.
 */
#include <criterion/criterion.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/kvmodel.h"
#include "tools/kvshell/escape.c"

/* ---- running the binary ---------------------------------------------------- */

static void kvshell_path(char *buf, size_t cap)
{
    const char *b = getenv("AKV_BUILD");
    if (b && *b) {
        snprintf(buf, cap, "%s/kvshell", b);
        return;
    }
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *testdir = dirname(exe); /* BUILD/test */
        snprintf(buf, cap, "%s/../kvshell", testdir);
        if (access(buf, X_OK) == 0)
            return;
    }
    snprintf(buf, cap, "build/kvshell");
}

typedef struct result {
    int status; /* exit status, or -1 if it did not exit normally */
    char *out, *err;
    size_t outlen;
} result;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    size_t cap = 4096, n = 0, r;
    char *s = malloc(cap);
    cr_assert_not_null(s);
    while ((r = fread(s + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n < 2) {
            char *t = realloc(s, cap *= 2);
            cr_assert_not_null(t);
            s = t;
        }
    }
    fclose(f);
    s[n] = '\0';
    if (len)
        *len = n;
    return s;
}

static void spit(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs(data, f);
    fclose(f);
}

/* Run "kvshell ARGS" (ARGS is shell syntax, formatted) with `input` on stdin
 * (NULL: /dev/null). The work directory `tmp` holds the captured streams. */
static result run(const char *tmp, const char *input, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static result run(const char *tmp, const char *input, const char *fmt, ...)
{
    char exe[1100], args[4096], cmd[8192], in[600], out[600], err[600];
    kvshell_path(exe, sizeof exe);
    cr_assert_eq(access(exe, X_OK), 0, "kvshell binary not found at %s (build it: make tools)", exe);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(in, sizeof in, "%s/stdin", tmp);
    snprintf(out, sizeof out, "%s/stdout", tmp);
    snprintf(err, sizeof err, "%s/stderr", tmp);
    spit(in, input ? input : "");
    snprintf(cmd, sizeof cmd, "'%s' %s <'%s' >'%s' 2>'%s'", exe, args, in, out, err);
    int st = system(cmd);
    result r = {.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1};
    r.out = slurp(out, &r.outlen);
    r.err = slurp(err, NULL);
    return r;
}

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
}

static void expect(result r, int status, const char *out, const char *err_has, const char *what)
{
    cr_assert_eq(r.status, status, "%s: exit status %d, expected %d; stderr: %s", what, r.status, status,
                 r.err);
    if (out)
        cr_assert_str_eq(r.out, out, "%s: stdout is '%s', expected '%s'", what, r.out, out);
    if (err_has)
        cr_assert_not_null(strstr(r.err, err_has), "%s: stderr '%s' lacks '%s'", what, r.err, err_has);
    else
        cr_assert_str_empty(r.err, "%s: unexpected stderr '%s'", what, r.err);
    result_free(&r);
}

typedef struct fixture {
    char tmp[512], db[600];
} fixture;

static void fixture_init(fixture *f)
{
    akvt_tmpdir(f->tmp, sizeof f->tmp, "kvshell");
    snprintf(f->db, sizeof f->db, "%s/db", f->tmp);
}

/* ---- the checks from the issue --------------------------------------------- */

Test(kvshell, piped_put_get_del_get)
{
    fixture f;
    fixture_init(&f);
    result r = run(f.tmp, "put a 1\nget a\ndel a\nget a\n", "'%s'", f.db);
    /* A missing key is an answer, not a failure: the session still exits 0. */
    expect(r, 0, "1\n", "not found: a", "piped");
    akvt_rmrf(f.tmp);
}

Test(kvshell, command_mode_put_get_del_get)
{
    fixture f;
    fixture_init(&f);
    expect(run(f.tmp, NULL, "'%s' put a 1", f.db), 0, "", NULL, "put");
    expect(run(f.tmp, NULL, "'%s' get a", f.db), 0, "1\n", NULL, "get");
    expect(run(f.tmp, NULL, "'%s' del a", f.db), 0, "", NULL, "del");
    expect(run(f.tmp, NULL, "'%s' get a", f.db), 3, "", "not found: a", "get after del");
    akvt_rmrf(f.tmp);
}

/* ---- escaping ------------------------------------------------------------- */

Test(kvshell, binary_keys_and_values_round_trip)
{
    fixture f;
    fixture_init(&f);
    /* Key: k NUL 0xff backslash space; value: 0x01 LF TAB quote. */
    const char *in = "put \"k\\x00\\xff\\\\ \" '\\x01\\n\\t\"'\nget 'k\\x00\\xFF\\\\ '\n";
    expect(run(f.tmp, in, "--layout ordered '%s'", f.db), 0, "\\x01\\x0a\\x09\"\n", NULL, "binary put/get");
    /* The printed forms are valid input: feed them back in command mode. */
    expect(run(f.tmp, NULL, "'%s' get 'k\\x00\\xff\\\\ '", f.db), 0, "\\x01\\x0a\\x09\"\n", NULL,
           "argv escapes");
    expect(run(f.tmp, NULL, "'%s' dump", f.db), 0, "k\\x00\\xff\\\\ \t\\x01\\x0a\\x09\"\n", NULL, "dump");
    akvt_rmrf(f.tmp);
}

Test(kvshell, dump_load_round_trip)
{
    fixture f;
    fixture_init(&f);
    char file[700], db2[700];
    snprintf(file, sizeof file, "%s/pairs.txt", f.tmp);
    snprintf(db2, sizeof db2, "%s/db2", f.tmp);
    spit(
        file,
        "# a comment\nalpha\t1\nbin\\x00ary\tv\\x7f\\\\\n\nput \"with space\" 'x y'\nput gone 1\ndel gone\n");
    expect(run(f.tmp, NULL, "--layout ordered '%s' load '%s'", f.db, file), 0, "loaded 5 records\n", NULL,
           "load");
    const char *want = "alpha\t1\nbin\\x00ary\tv\\x7f\\\\\nwith space\tx y\n";
    expect(run(f.tmp, NULL, "'%s' dump", f.db), 0, want, NULL, "dump 1");
    expect(run(f.tmp, NULL, "'%s' count", f.db), 0, "3\n", NULL, "count");
    result r = run(f.tmp, NULL, "'%s' dump", f.db);
    spit(file, r.out);
    result_free(&r);
    expect(run(f.tmp, NULL, "--layout ordered '%s' load '%s'", db2, file), 0, "loaded 3 records\n", NULL,
           "reload");
    expect(run(f.tmp, NULL, "'%s' dump", db2), 0, want, NULL, "dump 2");
    akvt_rmrf(f.tmp);
}

Test(kvshell, scan_ranges_and_limit)
{
    fixture f;
    fixture_init(&f);
    expect(run(f.tmp, "put a 1\nput b 2\nput c 3\nput d 4\n", "--layout ordered '%s'", f.db), 0, "", NULL,
           "fill");
    expect(run(f.tmp, NULL, "'%s' scan b d", f.db), 0, "b\t2\nc\t3\n", NULL, "scan b d");
    expect(run(f.tmp, NULL, "'%s' scan --limit 2", f.db), 0, "a\t1\nb\t2\n", NULL, "scan --limit");
    expect(run(f.tmp, NULL, "'%s' scan c --limit 5", f.db), 0, "c\t3\nd\t4\n", NULL, "scan from");
    expect(run(f.tmp, NULL, "'%s' scan --limit x", f.db), 1, "", "--limit", "bad limit");
    akvt_rmrf(f.tmp);
}

/* ---- errors and exit statuses --------------------------------------------- */

Test(kvshell, errors_and_exit_statuses)
{
    fixture f;
    fixture_init(&f);
    expect(run(f.tmp, NULL, "'%s' frobnicate", f.db), 1, "", "unknown command", "unknown command");
    expect(run(f.tmp, NULL, "--frobnicate '%s' get a", f.db), 2, "", "unknown option", "unknown option");
    expect(run(f.tmp, NULL, "--layout sideways '%s' get a", f.db), 2, "", "--layout", "bad layout");
    expect(run(f.tmp, NULL, "--memtable-bytes 4Q '%s' get a", f.db), 2, "", "--memtable-bytes", "bad size");
    expect(run(f.tmp, NULL, "%s", ""), 2, "", "missing DIR", "no DIR");
    expect(run(f.tmp, NULL, "'%s' put onlykey", f.db), 1, "", "put", "missing value");
    expect(run(f.tmp, NULL, "'%s' get 'bad\\q'", f.db), 1, "", "escape", "bad escape");
    expect(run(f.tmp, NULL, "'%s' put '' v", f.db), 1, "", "put", "empty key");
    /* A failing line does not stop a piped session, but sets the status. */
    expect(run(f.tmp, "put x 1\nnope\nget x\nput \"open\n", "'%s'", f.db), 1, "1\n",
           "line 2: unknown command", "piped errors");
    expect(run(f.tmp, NULL, "--help"), 0, NULL, NULL, "--help");
    akvt_rmrf(f.tmp);
}

Test(kvshell, help_for_one_command_or_an_error)
{
    fixture f;
    fixture_init(&f);
    expect(run(f.tmp, NULL, "'%s' help put", f.db), 0, "put KEY VALUE\n    store VALUE under KEY\n", NULL,
           "help put");
    expect(run(f.tmp, NULL, "'%s' help exit", f.db), 0, "exit\n    leave the shell (same as quit)\n", NULL,
           "help exit");
    expect(run(f.tmp, NULL, "'%s' help nope", f.db), 1, "", "help: no command 'nope' (try: help)",
           "help nope");
    expect(run(f.tmp, NULL, "'%s' help 'pu\\x00t'", f.db), 1, "", "no command 'pu\\x00t'", "help NUL");
    expect(run(f.tmp, NULL, "'%s' help put get", f.db), 1, "", "usage: help [COMMAND]", "help two words");
    /* The full list names every command but not the exit alias. */
    result r = run(f.tmp, NULL, "'%s' help", f.db);
    cr_assert_eq(r.status, 0, "help: %s", r.err);
    cr_assert_not_null(strstr(r.out, "  load FILE"), "help lacks load: %s", r.out);
    cr_assert_null(strstr(r.out, "  exit"), "help lists the exit alias: %s", r.out);
    result_free(&r);
    /* In a session an unknown topic fails that line only. */
    expect(run(f.tmp, "help nope\nput a 1\nget a\n", "'%s'", f.db), 1, "1\n",
           "line 1: help: no command 'nope'", "piped help nope");
    akvt_rmrf(f.tmp);
}

static int cmp_line(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of `text` sorted, joined again (the text is modified). */
static char *sorted_lines(char *text)
{
    size_t n = 0, cap = 64;
    char **v = malloc(cap * sizeof *v);
    cr_assert_not_null(v);
    for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
        if (n == cap) {
            char **t = realloc(v, (cap *= 2) * sizeof *v);
            cr_assert_not_null(t);
            v = t;
        }
        v[n++] = l;
    }
    qsort(v, n, sizeof *v, cmp_line);
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
        len += strlen(v[i]) + 1;
    char *out = calloc(len, 1);
    cr_assert_not_null(out);
    for (size_t i = 0; i < n; i++) {
        strcat(out, v[i]);
        strcat(out, "\n");
    }
    free(v);
    return out;
}

/* The default (hash) layout lists, counts and dumps every pair, in hash
 * order; `dump | load` into a new database reproduces it. */
Test(kvshell, hash_layout_dumps_counts_and_round_trips)
{
    fixture f;
    fixture_init(&f);
    /* 400 keys, binary ones among them, some deleted and overwritten, half
     * flushed into a run and half in the memtable. */
    size_t cap = 1 << 16, n = 0;
    char *in = malloc(cap);
    cr_assert_not_null(in);
    for (int i = 0; i < 400; i++) {
        n += (size_t)snprintf(in + n, cap - n,
                              i % 7 ? "put k%03d v%d\n" : "put \"\\x00\\xff\\t%03d\" \"a b\\n%d\"\n", i, i);
        if (i == 199)
            n += (size_t)snprintf(in + n, cap - n, "flush\n");
    }
    size_t live = 400;
    for (int i = 1; i < 400; i += 10) { /* i % 7 == 0 for some: those keys are binary */
        if (i % 7 == 0)
            continue;
        if (i % 20 == 11) {
            n += (size_t)snprintf(in + n, cap - n, "del k%03d\n", i);
            live--;
        } else {
            n += (size_t)snprintf(in + n, cap - n, "put k%03d new%d\n", i, i);
        }
    }
    cr_assert_lt(n, cap);
    expect(run(f.tmp, in, "--memtable-bytes 4M '%s'", f.db), 0, "", NULL, "fill");
    free(in);
    char want[32];
    snprintf(want, sizeof want, "%zu\n", live);
    expect(run(f.tmp, NULL, "'%s' count", f.db), 0, want, NULL, "count");

    result d = run(f.tmp, NULL, "'%s' dump", f.db);
    cr_assert_eq(d.status, 0, "dump: %s", d.err);
    size_t lines = 0;
    for (char *p = d.out; *p; p++)
        lines += *p == '\n';
    cr_assert_eq(lines, live, "dump printed %zu lines for %zu live keys", lines, live);
    cr_assert_not_null(strstr(d.out, "k002\tv2\n"));
    cr_assert_not_null(strstr(d.out, "k041\tnew41\n"));
    cr_assert_null(strstr(d.out, "k011\t"), "a deleted key was dumped");
    cr_assert_not_null(strstr(d.out, "\\x00\\xff\\x09007\ta b\\x0a7\n"), "binary pair missing or mangled");

    result sc = run(f.tmp, NULL, "'%s' scan", f.db);
    cr_assert_eq(sc.status, 0, "scan: %s", sc.err);
    cr_assert_str_eq(sc.out, d.out, "scan and dump differ on the hash layout");
    result_free(&sc);
    result lim = run(f.tmp, NULL, "'%s' scan --limit 5", f.db);
    cr_assert_eq(lim.status, 0);
    cr_assert_eq(strncmp(lim.out, d.out, lim.outlen), 0, "scan --limit 5 is not the start of the dump");
    size_t nl = 0;
    for (char *p = lim.out; *p; p++)
        nl += *p == '\n';
    cr_assert_eq(nl, 5);
    result_free(&lim);
    expect(run(f.tmp, NULL, "'%s' scan k001 k100", f.db), 1, "", "ordered layout", "ranged scan on hash");

    /* kvshell DIR dump | kvshell NEW load /dev/stdin */
    char exe[1100], db2[700];
    kvshell_path(exe, sizeof exe);
    snprintf(db2, sizeof db2, "%s/copy", f.tmp);
    char want_loaded[64];
    snprintf(want_loaded, sizeof want_loaded, "loaded %zu records\n", live);
    char pipeline[8192], loadout[700];
    snprintf(loadout, sizeof loadout, "%s/loadout", f.tmp);
    snprintf(pipeline, sizeof pipeline, "'%s' '%s' dump | '%s' '%s' load /dev/stdin >'%s'", exe, f.db, exe,
             db2, loadout);
    int st = system(pipeline);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "dump | load failed: %s", pipeline);
    char *loaded = slurp(loadout, NULL);
    cr_assert_str_eq(loaded, want_loaded);
    free(loaded);
    result d2 = run(f.tmp, NULL, "'%s' dump", db2);
    cr_assert_eq(d2.status, 0, "dump of the copy: %s", d2.err);
    char *a = sorted_lines(d.out), *b = sorted_lines(d2.out);
    cr_assert_str_eq(a, b, "the copy holds other pairs than the original");
    free(a);
    free(b);
    result_free(&d);
    result_free(&d2);
    expect(run(f.tmp, NULL, "'%s' get k002", db2), 0, "v2\n", NULL, "get from the copy");
    akvt_rmrf(f.tmp);
}

/* `backup DIR` makes a database of its own, as of the command. */
Test(kvshell, backup_is_a_database_of_its_own)
{
    fixture f;
    fixture_init(&f);
    char bk[700];
    snprintf(bk, sizeof bk, "%s/backup", f.tmp);
    expect(run(f.tmp, "put a 1\nput b 2\nflush\nput c 3\n", "'%s'", f.db), 0, "", NULL, "fill");
    expect(run(f.tmp, NULL, "'%s' backup '%s'", f.db, bk), 0, "", NULL, "backup");
    expect(run(f.tmp, NULL, "'%s' put d 4", f.db), 0, "", NULL, "a write after the backup");
    expect(run(f.tmp, NULL, "'%s' count", bk), 0, "3\n", NULL, "count in the backup");
    expect(run(f.tmp, NULL, "'%s' get c", bk), 0, "3\n", NULL, "memtable write in the backup");
    expect(run(f.tmp, NULL, "'%s' get d", bk), 3, "", "not found: d", "later write not in the backup");
    expect(run(f.tmp, NULL, "'%s' backup '%s'", f.db, bk), 1, "", "new directory", "backup over a directory");
    expect(run(f.tmp, NULL, "'%s' backup", f.db), 1, "", "backup DIR", "backup without DIR");
    akvt_rmrf(f.tmp);
}

/* `stats` (text) shows every field `stats --json` has: a scalar as a
 * "name value" line, a NAME_per_level array as the NAME column of the
 * per-level table. */
static void stats_text_has_every_json_field(fixture *f)
{
    result j = run(f->tmp, NULL, "'%s' stats --json", f->db);
    result t = run(f->tmp, NULL, "'%s' stats", f->db);
    cr_assert_eq(j.status, 0, "%s", j.err);
    cr_assert_eq(t.status, 0, "%s", t.err);
    const char *header = strstr(t.out, "\nlevel ");
    cr_assert_not_null(header, "no per-level table: %s", t.out);
    const char *header_end = strchr(header + 1, '\n');
    cr_assert_not_null(header_end);
    int fields = 0;
    for (const char *p = strchr(j.out, '"'); p;) {
        const char *q = strchr(p + 1, '"');
        cr_assert(q && q[1] == ':', "not a JSON name at '%s'", p);
        char name[64], want[80];
        size_t n = (size_t)(q - p - 1);
        cr_assert_lt(n, sizeof name);
        memcpy(name, p + 1, n);
        name[n] = '\0';
        fields++;
        if (q[2] == '[') {
            char *suffix = strstr(name, "_per_level");
            cr_assert_not_null(suffix, "array '%s' is not per level", name);
            *suffix = '\0';
            snprintf(want, sizeof want, " %s", name);
            const char *at = strstr(header, want);
            cr_expect(at && at < header_end && (at[strlen(want)] == ' ' || at[strlen(want)] == '\n'),
                      "stats has no '%s' column for --json's %s_per_level:\n%s", name, name, t.out);
        } else {
            snprintf(want, sizeof want, "\n%s ", name);
            cr_expect(strncmp(t.out, want + 1, strlen(want) - 1) == 0 || strstr(t.out, want),
                      "stats has no '%s' line, which --json has:\n%s", name, t.out);
        }
        p = q[2] == '[' ? strchr(q + 2, ']') : strpbrk(q + 2, ",}"); /* past the value */
        cr_assert_not_null(p);
        p = strchr(p, '"');
    }
    cr_expect_geq(fields, 30, "%s", j.out);
    result_free(&j);
    result_free(&t);
}

Test(kvshell, maintenance_stats_and_filters)
{
    fixture f;
    fixture_init(&f);
    const char *in = "put a 1\nput b 2\nflush\ncompact\nget a\n";
    expect(run(f.tmp, in, "--layout ordered --memtable-bytes 64K --bits-per-key 12 '%s'", f.db), 0, "1\n",
           NULL, "maintenance");
    result r = run(f.tmp, NULL, "'%s' stats --json", f.db);
    cr_assert_eq(r.status, 0, "stats --json: %s", r.err);
    cr_assert(r.outlen > 2 && r.out[0] == '{' && r.out[r.outlen - 2] == '}' &&
                  !memchr(r.out, '\n', r.outlen - 1),
              "stats --json is not one JSON line: %s", r.out);
    result_free(&r);
    r = run(f.tmp, NULL, "'%s' filters", f.db);
    cr_assert_eq(r.status, 0, "filters: %s", r.err);
    cr_assert_not_null(strstr(r.out, "kind"), "filters has no header: %s", r.out);
    cr_assert_not_null(strstr(r.out, "\nL"), "filters shows no run slot after compact: %s", r.out);
    result_free(&r);
    r = run(f.tmp, NULL, "'%s' stats", f.db);
    cr_assert_eq(r.status, 0);
    cr_assert_not_null(strstr(r.out, "live_keys_estimate"));
    result_free(&r);
    stats_text_has_every_json_field(&f);
    akvt_rmrf(f.tmp);
}

/* The database keeps its slot policy; --filters on an existing one applies
 * to new SSTs only, says so on stderr (even in command mode), and `filters`
 * shows the policy next to the kinds the existing slots have. */
Test(kvshell, filters_shows_the_stored_policy_and_mixed_kinds)
{
    fixture f;
    fixture_init(&f);
    expect(run(f.tmp, "put a 1\nflush\n", "--filters l0+=bloom --bits-per-key 12 '%s'", f.db), 0, "", NULL,
           "create");
    result r = run(f.tmp, NULL, "'%s' filters", f.db);
    cr_assert_eq(r.status, 0, "filters: %s", r.err);
    cr_assert_not_null(strstr(r.out, "slot policy  mem=sscf,l0+=bloom\nbits/key     12\n"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\nL0    bloom      1 bloom\n"), "%s", r.out);
    result_free(&r);
    expect(run(f.tmp, NULL, "--filters l0+=blocked '%s' put b 2", f.db), 0, "",
           "slot policy changed from 'mem=sscf,l0+=bloom' (12 bits/key) to 'mem=sscf,l0+=blocked' (12 bits/key)",
           "change");
    expect(run(f.tmp, NULL, "'%s' flush", f.db), 0, "", NULL, "flush after the change");
    r = run(f.tmp, NULL, "'%s' filters", f.db);
    cr_assert_eq(r.status, 0, "filters: %s", r.err);
    cr_assert_str_empty(r.err, "an unchanged reopen said: %s", r.err);
    cr_assert_not_null(strstr(r.out, "slot policy  mem=sscf,l0+=blocked\n"), "%s", r.out);
    cr_assert_not_null(strstr(r.out, "\nL0    blocked    1 blocked, 1 bloom\n"), "%s", r.out);
    result_free(&r);
    expect(run(f.tmp, NULL, "'%s' get a", f.db), 0, "1\n", NULL, "get a");
    expect(run(f.tmp, NULL, "'%s' get b", f.db), 0, "2\n", NULL, "get b");
    akvt_rmrf(f.tmp);
}

/* ---- the word splitter alone ------------------------------------------------ */

static kvs_words split_ok(const char *line)
{
    kvs_words w = {0};
    char err[256] = "";
    cr_assert_eq(kvs_split(line, strlen(line), &w, err, sizeof err), 0, "split '%s': %s", line, err);
    return w;
}

static void word_is(const kvs_words *w, size_t i, const void *bytes, size_t len, bool plain)
{
    cr_assert_lt(i, w->n);
    cr_assert_eq(w->v[i].len, len, "word %zu has %zu bytes, expected %zu", i, w->v[i].len, len);
    cr_assert(memcmp(w->v[i].data, bytes, len) == 0, "word %zu differs", i);
    cr_assert_eq(w->v[i].plain, plain, "word %zu plain flag", i);
}

Test(escape, splitting_quotes_and_escapes)
{
    kvs_words w = split_ok("  put\t'a b'\"c\"d  \\x00\\xfF\\n\\t\\\\\\\"\\' \"\" x\\ y ");
    cr_assert_eq(w.n, 5);
    word_is(&w, 0, "put", 3, true);
    word_is(&w, 1, "a bcd", 5, false);
    word_is(&w, 2, "\0\xff\n\t\\\"'", 7, false);
    word_is(&w, 3, "", 0, false);
    word_is(&w, 4, "x y", 3, false);
    kvs_words_free(&w);
    w = split_ok("   ");
    cr_assert_eq(w.n, 0);
    kvs_words_free(&w);
}

Test(escape, splitting_errors)
{
    static const char *const bad[] = {"put \"a", "put 'a", "get \\", "get \\x4", "get \\xg0", "get \\q"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kvs_words w = {0};
        char err[256] = "";
        cr_assert_eq(kvs_split(bad[i], strlen(bad[i]), &w, err, sizeof err), -1, "'%s' was accepted", bad[i]);
        cr_assert_str_not_empty(err);
        kvs_words_free(&w);
    }
}

Test(escape, print_then_parse_is_identity)
{
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kvs_print_escaped(f, all, sizeof all);
    fclose(f);
    for (size_t i = 0; i < len; i++)
        cr_assert(buf[i] >= 0x20 && buf[i] < 0x7f, "escaped output holds byte 0x%02x", (unsigned char)buf[i]);
    kvs_word w;
    char err[256];
    cr_assert_eq(kvs_unescape(buf, len, &w, err, sizeof err), 0, "%s", err);
    cr_assert_eq(w.len, sizeof all);
    cr_assert(memcmp(w.data, all, sizeof all) == 0);
    free(w.data);
    free(buf);
}

Test(escape, sizes)
{
    uint64_t v;
    cr_assert_eq(kvs_parse_size("4096", &v), 0);
    cr_assert_eq(v, 4096);
    cr_assert_eq(kvs_parse_size("64K", &v), 0);
    cr_assert_eq(v, 65536);
    cr_assert_eq(kvs_parse_size("4M", &v), 0);
    cr_assert_eq(v, 4u << 20);
    cr_assert_eq(kvs_parse_size("1g", &v), 0);
    cr_assert_eq(v, 1u << 30);
    cr_assert_eq(kvs_parse_size("2MiB", &v), 0);
    cr_assert_eq(v, 2u << 20);
    cr_assert_eq(kvs_parse_size("4X", &v), -1);
    cr_assert_eq(kvs_parse_size("", &v), -1);
    cr_assert_eq(kvs_parse_size("-1", &v), -1);
    cr_assert_eq(kvs_parse_size("99999999999999999999G", &v), -1);
}
