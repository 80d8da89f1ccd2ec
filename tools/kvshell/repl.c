/*
 * repl.c — kvshell's read loops: plain lines from a pipe or file (no prompt,
 * errors reported with their line number, keep going), and an interactive
 * loop with libedit line editing and a history file.
 */
#include "tools/kvshell/kvshell.h"

#include <editline/readline.h>
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

/* $KVSHELL_HISTORY (empty: no history), else ~/.kvshell_history. */
static char *history_path(void)
{
    const char *env = getenv("KVSHELL_HISTORY");
    if (env)
        return *env ? strdup(env) : NULL;
    const char *home = getenv("HOME");
    if (!home || !*home)
        return NULL;
    size_t n = strlen(home) + sizeof "/.kvshell_history";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/.kvshell_history", home);
    return p;
}

int kvs_loop_tty(kvs_ctx *c, const char *dir)
{
    char *hist = history_path();
    int status = KVS_OK;
    using_history();
    stifle_history(1000);
    if (hist)
        read_history(hist);
    printf("kvshell: %s (%s layout). Type help for commands, quit or Ctrl-D to leave.\n", dir,
           c->layout == AKV_LAYOUT_ORDERED ? "ordered" : "hash");
    char *line;
    while ((line = readline("kvshell> ")) != NULL) {
        size_t len = strlen(line);
        if (len > 0)
            add_history(line);
        int quit = run_line(c, line, len, &status);
        free(line);
        if (quit)
            break;
    }
    if (!line)
        putchar('\n');
    if (hist) {
        write_history(hist);
        free(hist);
    }
    return status;
}
