/*
 * repl.c — kvshell's read loops: plain lines from a pipe or file (no prompt,
 * errors reported with their line number, keep going), and an interactive
 * loop with libedit line editing, completion (complete.c), a history file
 * saved after every command (history.c) and Ctrl-C that cancels the line
 * (interrupt.c).
 */
#include "tools/kvshell/kvshell.h"

#include <editline/readline.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Run one line; fold its result into the session status. Returns 1 on quit. */
static int run_line(kvs_ctx *c, const char *line, size_t len, int *status)
{
    char err[256];
    kvs_words w = {0};
    int rc;
    if (kvs_split(line, len, &w, err, sizeof err) != 0) {
        kvs_error(c, NULL, "%s", err);
        rc = KVS_FAIL;
    } else if (w.n > 0 && w.v[0].plain && w.v[0].data[0] == '#') {
        rc = KVS_OK; /* a comment line, handy in scripts */
    } else {
        rc = kvs_run(c, &w);
    }
    kvs_words_free(&w);
    fflush(stdout);
    /* In a session only failures count; a missing key is an answer. */
    if (rc == KVS_FAIL)
        *status = KVS_FAIL;
    return rc == KVS_QUIT;
}

int kvs_loop_stream(kvs_ctx *c, FILE *in)
{
    char *line = NULL, where[48];
    size_t cap = 0;
    ssize_t n;
    unsigned long long lineno = 0;
    int status = KVS_OK;
    c->where = where;
    while ((n = getline(&line, &cap, in)) >= 0) {
        snprintf(where, sizeof where, "line %llu", ++lineno);
        if (run_line(c, line, (size_t)n, &status))
            break;
    }
    c->where = NULL;
    free(line);
    return status;
}

enum { HISTORY_KEEP = 1000 };

static void remember(const char *line, void *arg)
{
    (void)arg;
    add_history(line);
}

/* A history file written by libedit at exit (older kvshell): libedit reads
 * it, and it is rewritten one command per line. */
static int convert_legacy(const char *path)
{
    if (read_history(path) != 0)
        return -1;
    int n = history_length;
    const char **v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    if (!v)
        return -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        const HIST_ENTRY *e = history_get(history_base + i);
        if (e && e->line)
            v[k++] = e->line;
    }
    int rc = kvs_history_write(path, v, (size_t)k);
    free(v);
    return rc;
}

static void load_history(const char *path)
{
    int rc = kvs_history_read(path, HISTORY_KEEP, remember, NULL);
    if (rc == KVS_HISTORY_LEGACY)
        rc = convert_legacy(path);
    if (rc != 0)
        fprintf(stderr, "kvshell: cannot read history %s: %s\n", path, strerror(errno));
}

/* Saved right away, so that a session that is killed keeps its commands.
 * A failure is reported once per session. */
static void save_history(const char *path, const char *line, bool *warned)
{
    if (kvs_history_append(path, line) != 0 && !*warned) {
        fprintf(stderr, "kvshell: cannot save history to %s: %s\n", path, strerror(errno));
        *warned = true;
    }
}

static bool blank_line(const char *s)
{
    return s[strspn(s, " \t")] == '\0';
}

int kvs_loop_tty(kvs_ctx *c, const char *dir)
{
    if (kvs_interrupted()) { /* Ctrl-C while the database was opening */
        fputs("kvshell: interrupted\n", stderr);
        return KVS_FAIL;
    }
    char *hist = kvs_history_path();
    bool warned = false;
    int status = KVS_OK;
    FILE *in = kvs_interrupt_input();
    if (in)
        rl_instream = in;
    else
        fputs("kvshell: cannot reopen the terminal; Ctrl-C may need a key press to take effect\n", stderr);
    kvs_complete_setup();
    using_history(); /* sets libedit up, reading rl_instream */
    stifle_history(HISTORY_KEEP);
    if (hist)
        load_history(hist);
    printf("kvshell: %s (%s layout). Type help for commands, quit or Ctrl-D to leave.\n", dir,
           c->layout == AKV_LAYOUT_ORDERED ? "ordered" : "hash");
    for (;;) {
        fflush(stdout);
        kvs_interrupt_reading(true);
        char *line = readline("kvshell> ");
        kvs_interrupt_reading(false);
        if (kvs_interrupted()) {
            /* Ctrl-C: drop the line, start a fresh one. */
            free(line);
            fputs("^C\n", stdout);
            continue;
        }
        if (!line) { /* Ctrl-D or end of input */
            putchar('\n');
            break;
        }
        if (!blank_line(line)) {
            add_history(line);
            if (hist)
                save_history(hist, line, &warned);
        }
        int quit = run_line(c, line, strlen(line), &status);
        free(line);
        if (quit)
            break;
    }
    free(hist);
    if (in)
        fclose(in);
    return status;
}
