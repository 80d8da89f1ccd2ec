/*
 * kvshell — an interactive and scriptable shell over one adaptkv database.
 *
 *   kvshell [OPTIONS] DIR [COMMAND [ARG ...]]
 *
 * With a command: run it and exit. Otherwise read commands from the terminal
 * (line editing, completion, history saved as it goes, Ctrl-C cancels the
 * line) or, when stdin is not a terminal, one per line.
 * Full reference: docs/kvshell.md.
 */
#include "tools/kvshell/kvshell.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct shell_args {
    akv_options opt;
    bool layout_given;
    bool verbose;
    bool repair; /* --repair DIR: akv_repair, print its report */
    const char *dir;
    char **cmd; /* command words from the command line, or NULL */
    int ncmd;
} shell_args;

static void usage(FILE *f)
{
    fputs("usage: kvshell [--layout hash|ordered] [--filters POLICY] [--bits-per-key B]\n"
          "               [--memtable-bytes N[K|M|G]] [--sync] [--verbose] DIR [COMMAND [ARG ...]]\n"
          "       kvshell --repair DIR\n"
          "       kvshell --version\n"
          "Opens (or creates) the adaptkv database in DIR. With COMMAND, runs it and exits;\n"
          "otherwise reads commands from the terminal or, when piped, from stdin.\n"
          "--repair salvages a damaged database (akv_repair) and prints what was lost.\n\n",
          f);
    kvs_help(f, NULL);
}

/* "--name=value" or "--name value": returns the value or NULL if `arg` is not --name. */
static const char *opt_value(int argc, char **argv, int *i, const char *name, bool *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = true;
        return NULL;
    }
    return argv[++*i];
}

static int bad_value(const char *name, const char *v, const char *want)
{
    fprintf(stderr, "kvshell: %s: '%s' is not %s\n", name, v, want);
    return -1;
}

static int set_layout(shell_args *a, const char *v)
{
    if (strcmp(v, "hash") == 0)
        a->opt.layout = AKV_LAYOUT_HASH;
    else if (strcmp(v, "ordered") == 0)
        a->opt.layout = AKV_LAYOUT_ORDERED;
    else
        return bad_value("--layout", v, "hash or ordered");
    a->layout_given = true;
    return 0;
}

static int set_bits(shell_args *a, const char *v)
{
    char *end;
    double b = strtod(v, &end);
    if (end == v || *end || !(b > 0 && b <= 64))
        return bad_value("--bits-per-key", v, "a number in (0, 64]");
    a->opt.bits_per_key = b;
    return 0;
}

static int set_memtable(shell_args *a, const char *v)
{
    uint64_t n;
    if (kvs_parse_size(v, &n) != 0 || n == 0)
        return bad_value("--memtable-bytes", v, "a positive size such as 65536, 64K or 4M");
    a->opt.memtable_bytes = n;
    return 0;
}

/* One option at argv[*i]; returns 1 if handled, 0 if not an option, -1 on error. */
static int parse_option(shell_args *a, int argc, char **argv, int *i)
{
    bool missing = false;
    const char *v;
    if (strcmp(argv[*i], "--sync") == 0) {
        a->opt.sync = 1;
        return 1;
    }
    if (strcmp(argv[*i], "--repair") == 0) {
        a->repair = true;
        return 1;
    }
    if (strcmp(argv[*i], "-v") == 0 || strcmp(argv[*i], "--verbose") == 0) {
        a->verbose = true;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--layout", &missing)))
        return set_layout(a, v) == 0 ? 1 : -1;
    if ((v = opt_value(argc, argv, i, "--filters", &missing))) {
        a->opt.slot_policy = v;
        return 1;
    }
    if ((v = opt_value(argc, argv, i, "--bits-per-key", &missing)))
        return set_bits(a, v) == 0 ? 1 : -1;
    if ((v = opt_value(argc, argv, i, "--memtable-bytes", &missing)))
        return set_memtable(a, v) == 0 ? 1 : -1;
    if (missing) {
        fprintf(stderr, "kvshell: %s expects a value\n", argv[*i]);
        return -1;
    }
    return 0;
}

/* Returns -1 on a usage error, 1 when --help was asked, 2 for --version, 0
 * otherwise. */
static int parse_args(int argc, char **argv, shell_args *a)
{
    akv_options_init(&a->opt);
    /* An inspection tool leaves the levels as it finds them: a one-off
     * command would otherwise start a compaction at rest at every open of
     * a quiet database (`compact` still compacts). */
    a->opt.rest_compaction = 0;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "-", 1) == 0 && strcmp(argv[i], "-") != 0; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0)
            return 1;
        if (strcmp(argv[i], "--version") == 0)
            return 2;
        int r = parse_option(a, argc, argv, &i);
        if (r < 0)
            return -1;
        if (r == 0) {
            fprintf(stderr, "kvshell: unknown option %s (try --help)\n", argv[i]);
            return -1;
        }
    }
    if (i >= argc) {
        fputs("kvshell: missing DIR (try --help)\n", stderr);
        return -1;
    }
    a->dir = argv[i++];
    a->cmd = i < argc ? argv + i : NULL;
    a->ncmd = argc - i;
    return 0;
}

/* The engine's log carries both warnings (a filter rebuilt from data) and
 * notes. It has no severity, so scripts see only lines that call themselves
 * warnings or errors, and the one that says --filters or --bits-per-key
 * changed the database's slot policy; a terminal session or --verbose sees
 * everything. */
static void engine_log(void *arg, const char *msg)
{
    const bool *all = arg;
    if (*all || strncmp(msg, "warning", 7) == 0 || strncmp(msg, "error", 5) == 0 || strstr(msg, "corrupt") ||
        strncmp(msg, "slot policy changed", 19) == 0)
        fprintf(stderr, "adaptkv: %s\n", msg);
}

/* mkdir -p: akv_open creates only the last component, if that. */
static int make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p)
        return -1;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = mkdir(p, 0755) != 0 && errno != EEXIST ? -1 : 0;
    free(p);
    return rc;
}

/* Without --layout an existing database opens with the layout it has and a
 * new one is created with the default (hash). */
static int open_db(shell_args *a, akv_db **db)
{
    if (!a->layout_given)
        a->opt.layout = AKV_LAYOUT_AUTO;
    int rc = akv_open(a->dir, &a->opt, db);
    if (rc == AKV_OK)
        a->opt.layout = akv_db_layout(*db);
    return rc;
}

/* Command-line words: the shell already split them, so only escapes are decoded. */
static int run_argv(kvs_ctx *c, char **argv, int n)
{
    kvs_words w = {0};
    char err[256];
    int status = KVS_OK;
    for (int i = 0; i < n && status == KVS_OK; i++) {
        kvs_word word;
        if (kvs_unescape(argv[i], strlen(argv[i]), &word, err, sizeof err) != 0) {
            fprintf(stderr, "kvshell: argument %d: %s\n", i + 1, err);
            status = KVS_FAIL;
        } else if (kvs_words_push(&w, word) != 0) {
            free(word.data);
            status = KVS_FAIL;
        }
    }
    if (status == KVS_OK) {
        status = kvs_run(c, &w);
        if (status == KVS_QUIT)
            status = KVS_OK;
    }
    kvs_words_free(&w);
    return status;
}

/* --repair DIR: the report on stdout; the log (which repeats it) is quiet. */
static int repair(shell_args *a)
{
    if (!a->layout_given)
        a->opt.layout = AKV_LAYOUT_AUTO;
    akv_repair_report r;
    int rc = akv_repair(a->dir, &a->opt, &r);
    if (r.text)
        fputs(r.text, stdout);
    akv_free(r.text);
    if (rc != AKV_OK)
        fprintf(stderr, "kvshell: cannot repair %s: %s\n", a->dir, kvs_engine_msg(rc));
    return rc == AKV_OK ? KVS_OK : KVS_FAIL;
}

static void quiet_log(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

int main(int argc, char **argv)
{
    shell_args a = {0};
    int pr = parse_args(argc, argv, &a);
    if (pr != 0) {
        /* Errors already said what was wrong and pointed at --help. */
        if (pr == 2)
            printf("kvshell (adaptkv) %s\n", akv_version(NULL, NULL, NULL));
        else if (pr > 0)
            usage(stdout);
        return pr > 0 ? KVS_OK : KVS_USAGE;
    }
    if (a.repair) {
        a.opt.log = a.verbose ? engine_log : quiet_log;
        bool all = true;
        a.opt.log_arg = &all;
        return a.cmd ? (fputs("kvshell: --repair takes no command\n", stderr), KVS_USAGE) : repair(&a);
    }
    if (make_dirs(a.dir) != 0) {
        fprintf(stderr, "kvshell: cannot create %s: %s\n", a.dir, strerror(errno));
        return KVS_USAGE;
    }
    bool interactive = !a.cmd && isatty(0);
    /* Before the database opens: its threads inherit the signal mask. */
    if (interactive && kvs_interrupt_setup() != 0) {
        fprintf(stderr, "kvshell: cannot catch Ctrl-C: %s\n", strerror(errno));
        return KVS_USAGE;
    }
    bool log_all = a.verbose || interactive;
    a.opt.log = engine_log;
    a.opt.log_arg = &log_all;
    akv_db *db = NULL;
    int rc = open_db(&a, &db);
    if (rc != AKV_OK) {
        fprintf(stderr, "kvshell: cannot open %s: %s\n", a.dir, kvs_engine_msg(rc));
        return KVS_USAGE;
    }
    kvs_ctx c = {.db = db, .layout = a.opt.layout, .sync = a.opt.sync};
    int status;
    if (a.cmd)
        status = run_argv(&c, a.cmd, a.ncmd);
    else if (interactive)
        status = kvs_loop_tty(&c, a.dir);
    else
        status = kvs_loop_stream(&c, stdin);
    fflush(stdout);
    rc = akv_close(db);
    if (rc != AKV_OK) {
        fprintf(stderr, "kvshell: closing %s: %s\n", a.dir, kvs_engine_msg(rc));
        status = KVS_FAIL;
    }
    return status;
}
