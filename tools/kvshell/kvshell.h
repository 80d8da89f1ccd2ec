/*
 * kvshell.h — pieces of the kvshell tool (docs/kvshell.md).
 *
 * One file per concept; the calls between them go one way, top to bottom:
 *
 *   kvshell.c     options, opening the database, choosing a mode
 *   repl.c        the read loops: libedit on a terminal, plain lines otherwise
 *   complete.c    Tab completion (libedit)
 *   commands.c    one function per command, against adaptkv/adaptkv.h
 *   load.c        the `load` command
 *   interrupt.c   Ctrl-C in an interactive session
 *   history.c     the history file (no libedit)
 *   report.c      failure messages on stderr
 *   escape.c      words, escapes and sizes; no engine dependency, so the
 *                 tests can exercise it alone (history.c too)
 *
 * repl.c calls complete.c, commands.c and the files below them; complete.c
 * calls commands.c for the command names; commands.c calls load.c; both call
 * interrupt.c, report.c and escape.c, which call nothing of kvshell.
 */
#ifndef KVSHELL_H
#define KVSHELL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "adaptkv/adaptkv.h"

/* Exit statuses (docs/kvshell.md, "Exit status"). */
enum {
    KVS_OK = 0,       /* every command succeeded */
    KVS_FAIL = 1,     /* a command failed */
    KVS_USAGE = 2,    /* bad command-line options, or the database did not open */
    KVS_NOTFOUND = 3, /* command mode: `get` found nothing */
    KVS_QUIT = 100,   /* internal: `quit` was read */
};

/* One word of a command: bytes (may hold NUL) plus whether it was written
 * plainly, i.e. without quotes or escapes. Only plain words can be options
 * such as --limit, so a key spelled "\x2d-limit" or "--limit" in quotes is a key. */
typedef struct kvs_word {
    char *data; /* NUL-terminated for convenience; len is authoritative */
    size_t len;
    bool plain;
} kvs_word;

typedef struct kvs_words {
    kvs_word *v;
    size_t n, cap;
} kvs_words;

/* Split a command line into words: blanks separate words; '…' and "…" group;
 * backslash escapes (\xNN \n \t \r \0 \\ \" \' \<space>) work everywhere.
 * Returns 0, or -1 with a message in err. */
int kvs_split(const char *line, size_t len, kvs_words *out, char *err, size_t errcap);

/* Decode backslash escapes of one whole word (quotes are ordinary bytes).
 * Used for command-line arguments and for `load` key<TAB>value lines. */
int kvs_unescape(const char *s, size_t len, kvs_word *out, char *err, size_t errcap);

int kvs_words_push(kvs_words *w, kvs_word word);
void kvs_words_free(kvs_words *w);

/* Print bytes with printable ASCII as is, '\\' as "\\\\", the rest as \xNN. */
void kvs_print_escaped(FILE *f, const void *p, size_t n);

/* "4096", "64K", "4M", "1G" (powers of 1024; an optional trailing B/iB). */
int kvs_parse_size(const char *s, uint64_t *out);

/* A word equal to the NUL-free string s (and plain, when want_plain). */
bool kvs_word_is(const kvs_word *w, const char *s);

/* ---- commands ------------------------------------------------------------ */

typedef struct kvs_ctx {
    akv_db *db;
    akv_layout layout;
    int sync;
    const char *where; /* "line 12" in stdin mode, NULL otherwise (for messages) */
} kvs_ctx;

/* ---- report.c: failures ---------------------------------------------------- */

/* Report a failure of command `cmd` (NULL: none) on stderr: "line 3: put: message". */
void kvs_error(const kvs_ctx *c, const char *cmd, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Flush stdout and print the prefixes of kvs_error, for messages that go on
 * with escaped bytes; the caller ends the line. */
void kvs_error_begin(const kvs_ctx *c, const char *cmd);

/* The engine's last message for rc (akv_errmsg, or akv_strerror if empty). */
const char *kvs_engine_msg(int rc);

/* ---- commands.c, load.c ------------------------------------------------------ */

/* Run one command; returns KVS_OK, KVS_FAIL, KVS_NOTFOUND or KVS_QUIT. */
int kvs_run(kvs_ctx *c, const kvs_words *w);

int kvs_cmd_load(kvs_ctx *c, const char *path);

/* The command list (cmd NULL), or one command's usage; -1 if there is no
 * command `cmd`. */
int kvs_help(FILE *f, const char *cmd);

/* The name of command i (aliases included), NULL past the last: for completion. */
const char *kvs_command_name(size_t i);

/* ---- interrupt.c: Ctrl-C in an interactive session --------------------------- */

/* Catch SIGINT and hold it in the calling (main) thread. Call it before the
 * database opens, so that the engine's threads never take the signal. */
int kvs_interrupt_setup(void);

/* The terminal on stdin, opened anew for libedit to read: Ctrl-C makes a
 * read on it return. NULL if it cannot be opened. */
FILE *kvs_interrupt_input(void);

/* Around reading a line: let SIGINT through while reading, hold it again after.
 * Starting to read forgets a Ctrl-C pressed during the last command. */
void kvs_interrupt_reading(bool reading);

/* Whether Ctrl-C was pressed while reading, or is pending since the command
 * began: commands that loop over records check it and stop. Always false
 * unless kvs_interrupt_setup was called. */
bool kvs_interrupted(void);

/* ---- history.c: the history file --------------------------------------------- */

enum { KVS_HISTORY_LEGACY = 1 };

/* $KVSHELL_HISTORY (empty: no history), else ~/.kvshell_history; NULL: none. */
char *kvs_history_path(void);

/* Call add() with each of the newest `keep` saved commands, oldest first; a
 * file holding more than 2 * keep is rewritten with those. Returns 0 (also
 * when there is no file), KVS_HISTORY_LEGACY for a file in libedit's own
 * format (nothing added), or -1 with errno. */
int kvs_history_read(const char *path, size_t keep, void (*add)(const char *line, void *arg), void *arg);

/* Append one command (a line holding a newline is not saved); 0 or -1 with errno. */
int kvs_history_append(const char *path, const char *line);

/* Replace the file with these commands, atomically; 0 or -1 with errno. */
int kvs_history_write(const char *path, const char *const *lines, size_t n);

/* ---- complete.c, repl.c: the read loops ---------------------------------------- */

/* Tab completion of command names (and of file names after load). */
void kvs_complete_setup(void);

/* Commands from a non-TTY stream, one per line; returns the exit status. */
int kvs_loop_stream(kvs_ctx *c, FILE *in);
/* Interactive loop with line editing, completion and history; Ctrl-C cancels
 * the line when kvs_interrupt_setup was called first. */
int kvs_loop_tty(kvs_ctx *c, const char *dir);

#endif
