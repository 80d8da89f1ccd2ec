/*
 * test_kvshell_history.c — kvshell's history file on its own
 * (tools/kvshell/history.c is compiled into this test): one command per
 * line, appended one at a time, read back newest `keep`, trimmed when it
 * grows past twice that, and the file of older versions recognised.
 * test_kvshell_tty.c checks the same file through a real session.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/kvmodel.h"
#include "tools/kvshell/history.c"

typedef struct fixture {
    char tmp[512], path[600];
} fixture;

static void fixture_init(fixture *f)
{
    akvt_tmpdir(f->tmp, sizeof f->tmp, "kvshell-history");
    snprintf(f->path, sizeof f->path, "%s/hist", f->tmp);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s: %s", path, strerror(errno));
    char *s = calloc(1, 1 << 16);
    cr_assert_not_null(s);
    size_t n = fread(s, 1, (1 << 16) - 1, f);
    s[n] = '\0';
    fclose(f);
    return s;
}

static void spit(const char *path, const char *data)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s: %s", path, strerror(errno));
    fputs(data, f);
    fclose(f);
}

static void expect_file(const char *path, const char *want)
{
    char *got = slurp(path);
    cr_assert_str_eq(got, want, "%s holds '%s', expected '%s'", path, got, want);
    free(got);
}

/* What kvs_history_read passed on, one command a line. */
typedef struct seen {
    char text[4096];
    int calls;
} seen;

static void collect(const char *line, void *arg)
{
    seen *s = arg;
    s->calls++;
    strncat(s->text, line, sizeof s->text - strlen(s->text) - 2);
    strcat(s->text, "\n");
}

static seen read_ok(const char *path, size_t keep)
{
    seen s = {0};
    int rc = kvs_history_read(path, keep, collect, &s);
    cr_assert_eq(rc, 0, "reading %s: %d (%s)", path, rc, strerror(errno));
    return s;
}

Test(history, a_missing_file_is_an_empty_history)
{
    fixture f;
    fixture_init(&f);
    seen s = read_ok(f.path, 10);
    cr_assert_eq(s.calls, 0);
    cr_assert_eq(access(f.path, F_OK), -1, "reading created the file");
    akvt_rmrf(f.tmp);
}

Test(history, appended_commands_read_back_in_order)
{
    fixture f;
    fixture_init(&f);
    cr_assert_eq(kvs_history_append(f.path, "put a 1"), 0);
    cr_assert_eq(kvs_history_append(f.path, "get 'a b' \\x00"), 0);
    /* Not savable as one line, or nothing to save: skipped, not an error. */
    cr_assert_eq(kvs_history_append(f.path, "put \"a\nb\" 1"), 0);
    cr_assert_eq(kvs_history_append(f.path, ""), 0);
    cr_assert_eq(kvs_history_append(f.path, "del a"), 0);
    expect_file(f.path, "put a 1\nget 'a b' \\x00\ndel a\n");
    struct stat st;
    cr_assert_eq(stat(f.path, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0600, "history file mode %o", st.st_mode & 0777);
    seen s = read_ok(f.path, 10);
    cr_assert_str_eq(s.text, "put a 1\nget 'a b' \\x00\ndel a\n");
    akvt_rmrf(f.tmp);
}

Test(history, reading_keeps_the_newest_and_skips_empty_lines)
{
    fixture f;
    fixture_init(&f);
    spit(f.path, "one\n\ntwo\nthree\nfour\nfive"); /* no newline at the end */
    seen s = read_ok(f.path, 3);
    cr_assert_str_eq(s.text, "three\nfour\nfive\n");
    /* Five commands are not more than twice three: the file stays. */
    expect_file(f.path, "one\n\ntwo\nthree\nfour\nfive");
    akvt_rmrf(f.tmp);
}

Test(history, a_file_past_twice_keep_is_trimmed)
{
    fixture f;
    fixture_init(&f);
    spit(f.path, "c1\nc2\nc3\nc4\nc5\nc6\nc7\n");
    seen s = read_ok(f.path, 3);
    cr_assert_str_eq(s.text, "c5\nc6\nc7\n");
    expect_file(f.path, "c5\nc6\nc7\n");
    /* Appending goes on after the trim. */
    cr_assert_eq(kvs_history_append(f.path, "c8"), 0);
    expect_file(f.path, "c5\nc6\nc7\nc8\n");
    akvt_rmrf(f.tmp);
}

Test(history, trimming_a_link_rewrites_its_target)
{
    fixture f;
    fixture_init(&f);
    char target[700];
    snprintf(target, sizeof target, "%s/real", f.tmp);
    spit(target, "a\nb\nc\nd\ne\n");
    cr_assert_eq(symlink(target, f.path), 0, "symlink: %s", strerror(errno));
    seen s = read_ok(f.path, 2);
    cr_assert_str_eq(s.text, "d\ne\n");
    struct stat st;
    cr_assert_eq(lstat(f.path, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced by a file");
    expect_file(target, "d\ne\n");
    akvt_rmrf(f.tmp);
}

Test(history, the_format_of_older_versions_is_reported)
{
    fixture f;
    fixture_init(&f);
    spit(f.path, "_HiStOrY_V2_\nput\\040a\\0401\n");
    seen s = {0};
    cr_assert_eq(kvs_history_read(f.path, 10, collect, &s), KVS_HISTORY_LEGACY);
    cr_assert_eq(s.calls, 0, "commands of an old-format file were passed on");
    /* The header only counts on the first line. */
    spit(f.path, "put a 1\n_HiStOrY_V2_\n");
    s = read_ok(f.path, 10);
    cr_assert_str_eq(s.text, "put a 1\n_HiStOrY_V2_\n");
    akvt_rmrf(f.tmp);
}

Test(history, write_replaces_the_file)
{
    fixture f;
    fixture_init(&f);
    spit(f.path, "old\n");
    const char *lines[] = {"put a 1", "two\nlines", "get a"};
    cr_assert_eq(kvs_history_write(f.path, lines, 3), 0, "%s", strerror(errno));
    expect_file(f.path, "put a 1\nget a\n");
    akvt_rmrf(f.tmp);
}

Test(history, failures_come_back_with_errno)
{
    fixture f;
    fixture_init(&f);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/no/such/dir/hist", f.tmp);
    errno = 0;
    cr_assert_eq(kvs_history_append(missing, "put a 1"), -1);
    cr_assert_eq(errno, ENOENT, "errno %d", errno);
    const char *lines[] = {"a"};
    errno = 0;
    cr_assert_eq(kvs_history_write(missing, lines, 1), -1);
    cr_assert_eq(errno, ENOENT, "errno %d", errno);
    /* A directory where the file should be. */
    seen s = {0};
    errno = 0;
    cr_assert_eq(kvs_history_read(f.tmp, 10, collect, &s), -1);
    cr_assert_eq(errno, EISDIR, "errno %d", errno);
    akvt_rmrf(f.tmp);
}

Test(history, where_the_file_is)
{
    setenv("HOME", "/home/someone", 1);
    unsetenv("KVSHELL_HISTORY");
    char *p = kvs_history_path();
    cr_assert_str_eq(p, "/home/someone/.kvshell_history");
    free(p);
    setenv("KVSHELL_HISTORY", "/elsewhere/h", 1);
    p = kvs_history_path();
    cr_assert_str_eq(p, "/elsewhere/h");
    free(p);
    setenv("KVSHELL_HISTORY", "", 1); /* empty: no history */
    cr_assert_null(kvs_history_path());
    unsetenv("KVSHELL_HISTORY");
    unsetenv("HOME");
    cr_assert_null(kvs_history_path());
}
