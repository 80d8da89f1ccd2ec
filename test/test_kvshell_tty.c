/*
 * test_kvshell_tty.c — kvshell at a terminal: the test opens a pseudo-terminal,
 * runs build/kvshell on its other side and types at it, Ctrl-C and Tab
 * included, the way a person would.
 *
 * Nothing here measures time. Each wait reads the terminal until an expected
 * text shows up; its 10 s limit only turns a hang into a failure that shows
 * what kvshell printed. TERM is "dumb", so libedit redraws a changed line in
 * full ("\rkvshell> help ") and the tests can look for plain text.
 *
 * The binary is found as in test_kvshell.c: $AKV_BUILD/kvshell, else the
 * kvshell next to this test's build directory, else build/kvshell.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "support/kvmodel.h"

extern char **environ;

enum { WAIT_MS = 10000 };

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

/* ---- a session at a pseudo-terminal ---------------------------------------- */

typedef struct session {
    pid_t pid;
    int fd;    /* the terminal's master side: what kvshell prints, what we type */
    char *out; /* everything read so far, NUL-terminated */
    size_t len, cap;
    size_t seen; /* wait_for looks after this */
    int status;  /* wait status once it ended, else -1 */
} session;

typedef struct fixture {
    char tmp[512], db[600], home[600], hist[700];
} fixture;

static void fixture_init(fixture *f)
{
    akvt_tmpdir(f->tmp, sizeof f->tmp, "kvshell-tty");
    snprintf(f->db, sizeof f->db, "%s/db", f->tmp);
    snprintf(f->home, sizeof f->home, "%s/home", f->tmp);
    snprintf(f->hist, sizeof f->hist, "%s/.kvshell_history", f->home);
    cr_assert_eq(mkdir(f->home, 0700), 0, "mkdir %s: %s", f->home, strerror(errno));
}

/* The environment minus what would let the user's own settings in, plus `add`. */
static char **child_env(const char *const *add)
{
    static const char *const drop[] = {"HOME=", "TERM=", "KVSHELL_HISTORY=", "EDITRC=", "COLUMNS=", "LINES="};
    size_t n = 0, k = 0;
    while (environ[n])
        n++;
    while (add[k])
        k++;
    char **env = calloc(n + k + 1, sizeof *env);
    cr_assert_not_null(env);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        bool keep = true;
        for (size_t d = 0; d < sizeof drop / sizeof *drop; d++)
            keep = keep && strncmp(environ[i], drop[d], strlen(drop[d])) != 0;
        if (keep)
            env[m++] = environ[i];
    }
    for (size_t i = 0; i < k; i++)
        env[m++] = (char *)add[i];
    return env;
}

/* Start kvshell DB at a new terminal with HOME=home, TERM=dumb and, when
 * `hist_env` is not NULL, KVSHELL_HISTORY=hist_env. */
static void start(session *s, const fixture *f, const char *hist_env)
{
    char exe[1100], home[700], hist[800], slave[256];
    kvshell_path(exe, sizeof exe);
    cr_assert_eq(access(exe, X_OK), 0, "kvshell binary not found at %s (build it: make tools)", exe);
    snprintf(home, sizeof home, "HOME=%s", f->home);
    snprintf(hist, sizeof hist, "KVSHELL_HISTORY=%s", hist_env ? hist_env : "");
    const char *add[] = {home, "TERM=dumb", hist_env ? hist : NULL, NULL};
    char **env = child_env(add);
    char *argv[] = {exe, (char *)f->db, NULL};

    memset(s, 0, sizeof *s);
    s->status = -1;
    s->fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    cr_assert_geq(s->fd, 0, "posix_openpt: %s", strerror(errno));
    cr_assert_eq(grantpt(s->fd), 0, "grantpt: %s", strerror(errno));
    cr_assert_eq(unlockpt(s->fd), 0, "unlockpt: %s", strerror(errno));
    cr_assert_eq(ptsname_r(s->fd, slave, sizeof slave), 0, "ptsname_r: %s", strerror(errno));
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    cr_assert_eq(ioctl(s->fd, TIOCSWINSZ, &ws), 0, "TIOCSWINSZ: %s", strerror(errno));

    s->pid = fork();
    cr_assert_geq(s->pid, 0, "fork: %s", strerror(errno));
    if (s->pid == 0) {
        /* A new session whose controlling terminal is the slave side, so a
         * 0x03 typed there sends SIGINT to kvshell (and to nothing else).
         * Only async-signal-safe calls until exec. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGINT, SIG_DFL);
        if (setsid() < 0)
            _exit(126);
        int t = open(slave, O_RDWR);
        if (t < 0 || ioctl(t, TIOCSCTTY, 0) != 0)
            _exit(126);
        dup2(t, 0);
        dup2(t, 1);
        dup2(t, 2);
        if (t > 2)
            close(t);
        execve(exe, argv, env);
        _exit(127);
    }
    free(env);
    s->cap = 4096;
    s->out = calloc(1, s->cap);
    cr_assert_not_null(s->out);
}

static void type(session *s, const char *keys)
{
    size_t n = strlen(keys);
    while (n > 0) {
        ssize_t w = write(s->fd, keys, n);
        cr_assert_gt(w, 0, "typing: %s", strerror(errno));
        keys += w;
        n -= (size_t)w;
    }
}

/* What kvshell printed, with control characters made visible. */
static char *shown(const char *p, size_t n)
{
    char *v = malloc(4 * n + 1), *q = v;
    cr_assert_not_null(v);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch == '\n')
            q += sprintf(q, "\\n\n");
        else if (ch < 0x20 || ch >= 0x7f)
            q += sprintf(q, "\\x%02x", ch);
        else
            *q++ = (char)ch;
    }
    *q = '\0';
    return v;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read one chunk within the time left; returns the bytes read, 0 at the end
 * of the session (kvshell exited), -1 when the time ran out. */
static ssize_t read_some(session *s, long long deadline)
{
    long long left = deadline - now_ms();
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    int r = left > 0 ? poll(&p, 1, (int)left) : 0;
    if (r < 0 && errno == EINTR)
        return read_some(s, deadline);
    cr_assert_geq(r, 0, "poll: %s", strerror(errno));
    if (r == 0)
        return -1;
    if (s->cap - s->len < 1025) {
        char *o = realloc(s->out, s->cap *= 2);
        cr_assert_not_null(o);
        s->out = o;
    }
    ssize_t n = read(s->fd, s->out + s->len, 1024);
    if (n < 0 && errno == EIO) /* Linux: the slave side is closed */
        n = 0;
    cr_assert_geq(n, 0, "reading the terminal: %s", strerror(errno));
    s->len += (size_t)n;
    s->out[s->len] = '\0';
    return n;
}

/* Read until `text` appears after what earlier waits matched. */
static void wait_for(session *s, const char *text)
{
    long long deadline = now_ms() + WAIT_MS;
    size_t tl = strlen(text);
    for (;;) {
        const char *hit = memmem(s->out + s->seen, s->len - s->seen, text, tl);
        if (hit) {
            s->seen = (size_t)(hit - s->out) + tl;
            return;
        }
        ssize_t n = read_some(s, deadline);
        if (n <= 0) {
            char *want = shown(text, tl), *before = shown(s->out, s->seen),
                 *after = shown(s->out + s->seen, s->len - s->seen);
            cr_assert_fail("%s waiting for \"%s\"; kvshell printed:\n%s\n---- last match ----\n%s",
                           n == 0 ? "kvshell ended" : "no more output", want, before, after);
        }
    }
}

/* Wait for `text` (which ends with the prompt), then for libedit to take the
 * terminal out of canonical mode. It prints the prompt first, and a control
 * key typed before the switch is handled by the terminal, not by libedit.
 * On Linux the master side reports the slave side's modes. */
static void wait_prompt(session *s, const char *text)
{
    wait_for(s, text);
    long long deadline = now_ms() + WAIT_MS;
    struct termios t;
    for (;;) {
        cr_assert_eq(tcgetattr(s->fd, &t), 0, "tcgetattr: %s", strerror(errno));
        if (!(t.c_lflag & ICANON))
            return;
        cr_assert_lt(now_ms(), deadline, "libedit never took over the terminal after \"%s\"", text);
        poll(NULL, 0, 1);
    }
}

/* How often `text` occurs in everything read so far. */
static int count_of(const session *s, const char *text)
{
    int n = 0;
    size_t tl = strlen(text);
    for (const char *p = s->out; (p = memmem(p, s->len - (size_t)(p - s->out), text, tl)) != NULL; p += tl)
        n++;
    return n;
}

static bool alive(session *s)
{
    int st;
    pid_t r = waitpid(s->pid, &st, WNOHANG);
    if (r == s->pid)
        s->status = st;
    return r == 0;
}

/* Read to the end of the session (kvshell exits after quit or Ctrl-D) and
 * return its exit status. */
static int wait_exit(session *s)
{
    long long deadline = now_ms() + WAIT_MS;
    ssize_t n;
    while ((n = read_some(s, deadline)) > 0)
        ;
    if (n < 0) {
        char *got = shown(s->out + s->seen, s->len - s->seen);
        cr_assert_fail("kvshell did not exit; it printed after the last match:\n%s", got);
    }
    int st;
    cr_assert_eq(waitpid(s->pid, &st, 0), s->pid);
    close(s->fd);
    free(s->out);
    cr_assert(WIFEXITED(st), "kvshell did not exit normally (wait status %#x)", st);
    return WEXITSTATUS(st);
}

static void kill_session(session *s)
{
    cr_assert(alive(s), "kvshell is not running (wait status %#x)", s->status);
    cr_assert_eq(kill(s->pid, SIGKILL), 0);
    int st;
    cr_assert_eq(waitpid(s->pid, &st, 0), s->pid);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "wait status %#x", st);
    close(s->fd);
    free(s->out);
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
    cr_assert_str_eq(got, want, "%s holds:\n%s\nexpected:\n%s", path, got, want);
    free(got);
}

#define PROMPT "kvshell> "

/* ---- Ctrl-C and the history file -------------------------------------------- */

Test(kvshell_tty, ctrl_c_cancels_the_line_and_history_survives_sigkill)
{
    fixture f;
    fixture_init(&f);
    session s;
    start(&s, &f, NULL); /* history in $HOME/.kvshell_history */
    wait_prompt(&s, PROMPT);
    type(&s, "put a 1\r");
    wait_prompt(&s, "put a 1\r\n" PROMPT);
    type(&s, "get a\r");
    wait_prompt(&s, "1\r\n" PROMPT);

    /* Half a line, then Ctrl-C: the line is dropped, not run. */
    type(&s, "put cancelled 1");
    wait_for(&s, "put cancelled 1");
    type(&s, "\x03");
    wait_prompt(&s, "^C\r\n" PROMPT);
    cr_assert(alive(&s), "Ctrl-C ended kvshell (wait status %#x)", s.status);
    /* Ctrl-C at an empty prompt too. */
    type(&s, "\x03");
    wait_prompt(&s, "^C\r\n" PROMPT);
    cr_assert(alive(&s), "Ctrl-C ended kvshell (wait status %#x)", s.status);

    type(&s, "get cancelled\r");
    wait_prompt(&s, "not found: cancelled\r\n" PROMPT);
    type(&s, "get a\r");
    wait_prompt(&s, "1\r\n" PROMPT);

    /* Killed, it cannot save anything on the way out: what is in the file was
     * written command by command. The cancelled line is not there. */
    kill_session(&s);
    expect_file(f.hist, "put a 1\nget a\nget cancelled\nget a\n");
    akvt_rmrf(f.tmp);
}

Test(kvshell_tty, history_is_recalled_and_ctrl_d_leaves)
{
    fixture f;
    fixture_init(&f);
    char hist[800];
    snprintf(hist, sizeof hist, "%s/hist", f.tmp); /* KVSHELL_HISTORY wins over HOME */
    spit(hist, "put old 1\n");
    session s;
    start(&s, &f, hist);
    wait_prompt(&s, PROMPT);
    type(&s, "\x10"); /* Ctrl-P: the previous command */
    wait_for(&s, PROMPT "put old 1");
    type(&s, "\r");
    wait_prompt(&s, "\r\n" PROMPT);
    type(&s, "get old\r");
    wait_prompt(&s, "1\r\n" PROMPT);
    type(&s, "\x04"); /* Ctrl-D at an empty prompt */
    cr_assert_eq(wait_exit(&s), 0);
    expect_file(hist, "put old 1\nput old 1\nget old\n");
    cr_assert_eq(access(f.hist, F_OK), -1, "history went to $HOME despite KVSHELL_HISTORY");
    akvt_rmrf(f.tmp);
}

Test(kvshell_tty, history_of_older_versions_is_converted)
{
    fixture f;
    fixture_init(&f);
    /* What libedit's write_history left at exit: a header, then each command
     * with blanks as octal escapes. */
    spit(f.hist, "_HiStOrY_V2_\nput\\040old\\0401\n");
    session s;
    start(&s, &f, NULL);
    wait_prompt(&s, PROMPT);
    expect_file(f.hist, "put old 1\n");
    type(&s, "\x10");
    wait_for(&s, PROMPT "put old 1");
    type(&s, "\r");
    wait_prompt(&s, "\r\n" PROMPT);
    type(&s, "quit\r");
    cr_assert_eq(wait_exit(&s), 0);
    expect_file(f.hist, "put old 1\nput old 1\nquit\n");
    akvt_rmrf(f.tmp);
}

Test(kvshell_tty, a_history_that_cannot_be_saved_is_reported_once)
{
    fixture f;
    fixture_init(&f);
    char hist[800];
    snprintf(hist, sizeof hist, "%s/missing/hist", f.tmp);
    session s;
    start(&s, &f, hist);
    wait_prompt(&s, PROMPT);
    type(&s, "put a 1\r");
    wait_for(&s, "cannot save history to");
    wait_prompt(&s, PROMPT);
    type(&s, "get a\r");
    wait_prompt(&s, "1\r\n" PROMPT);
    cr_assert_eq(count_of(&s, "cannot save history"), 1, "%s", s.out);
    type(&s, "quit\r");
    cr_assert_eq(wait_exit(&s), 0, "a history that cannot be saved made the session fail");
    akvt_rmrf(f.tmp);
}

/* ---- Tab and help ---------------------------------------------------------- */

Test(kvshell_tty, tab_completes_command_names)
{
    fixture f;
    fixture_init(&f);
    session s;
    start(&s, &f, NULL);
    wait_prompt(&s, PROMPT);
    type(&s, "he\t");
    wait_for(&s, PROMPT "help ");
    type(&s, "\r");
    wait_for(&s, "commands:\r\n");
    wait_prompt(&s, PROMPT);
    /* The word after help is a command name too. */
    type(&s, "help pu\t");
    wait_for(&s, PROMPT "help put ");
    type(&s, "\r");
    wait_for(&s, "put KEY VALUE\r\n");
    wait_prompt(&s, PROMPT);
    /* Two candidates: a second Tab lists them. */
    type(&s, "d\t\t");
    wait_for(&s, "del");
    wait_for(&s, "dump");
    type(&s, "\x03");
    wait_prompt(&s, "^C\r\n" PROMPT);
    /* Keys are data: "he" after get stays "he". */
    type(&s, "get he\t\r");
    wait_prompt(&s, "not found: he\r\n" PROMPT);
    type(&s, "help nope\r");
    wait_prompt(&s, "help: no command 'nope' (try: help)\r\n" PROMPT);
    type(&s, "quit\r");
    /* A session's status is 1 when any command failed: help nope did. */
    cr_assert_eq(wait_exit(&s), 1);
    expect_file(f.hist, "help \nhelp put \nget he\nhelp nope\nquit\n");
    akvt_rmrf(f.tmp);
}

/* ---- Ctrl-C during a command ----------------------------------------------- */

/* Open the write side of a FIFO once kvshell has opened it for reading. */
static int open_fifo_writer(const char *path)
{
    long long deadline = now_ms() + WAIT_MS;
    for (;;) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd >= 0)
            return fd;
        cr_assert_eq(errno, ENXIO, "open %s: %s", path, strerror(errno));
        cr_assert_lt(now_ms(), deadline, "kvshell never opened %s", path);
        poll(NULL, 0, 10);
    }
}

Test(kvshell_tty, ctrl_c_stops_a_load_and_the_shell_goes_on)
{
    fixture f;
    fixture_init(&f);
    char fifo[800], cmd[900];
    snprintf(fifo, sizeof fifo, "%s/fifo", f.tmp);
    cr_assert_eq(mkfifo(fifo, 0600), 0, "mkfifo: %s", strerror(errno));
    session s;
    start(&s, &f, NULL);
    wait_prompt(&s, PROMPT);
    snprintf(cmd, sizeof cmd, "load %s\r", fifo);
    type(&s, cmd);
    /* Once this opens, load is running and waits for its first line. */
    int w = open_fifo_writer(fifo);
    type(&s, "\x03");
    /* The terminal echoes ^C after it has signalled kvshell. */
    wait_for(&s, "^C");
    const char *lines = "put x 1\nput y 2\n";
    cr_assert_eq(write(w, lines, strlen(lines)), (ssize_t)strlen(lines));
    close(w);
    wait_for(&s, "load: ");
    wait_for(&s, ": interrupted\r\n");
    wait_prompt(&s, "stopped at line 1; 0 records before it are stored\r\n" PROMPT);
    cr_assert(alive(&s), "Ctrl-C ended kvshell (wait status %#x)", s.status);
    /* The Ctrl-C that stopped load does not cancel the next line. */
    type(&s, "get x\r");
    wait_prompt(&s, "not found: x\r\n" PROMPT);
    type(&s, "put z 3\r");
    wait_prompt(&s, "\r\n" PROMPT);
    type(&s, "get z\r");
    wait_prompt(&s, "3\r\n" PROMPT);
    type(&s, "quit\r");
    cr_assert_eq(wait_exit(&s), 1, "the interrupted load should count as a failed command");
    akvt_rmrf(f.tmp);
}
