/*
 * faultfs.c — an LD_PRELOAD shim that makes one file-system call fail.
 *
 * Loaded into a test's child process (LD_PRELOAD=build/test/faultfs.so), it
 * wraps the calls RocksDB and the engine make to write files — open, write,
 * pwrite, writev, pwritev, fsync, fdatasync, sync_file_range, fallocate,
 * posix_fallocate, ftruncate, rename, link — and counts those that touch a
 * path under one directory (file-descriptor calls are matched through an
 * fd → path table filled at open and cleared at close). The N-th counted
 * call fails with EIO or ENOSPC without reaching the kernel. An open that
 * appends to a file without truncating it is reported as "reopen" (RocksDB
 * reopens files that way: the last WAL at open, to cut its preallocated
 * tail; an ingested SST, to sync it).
 *
 * Environment:
 *   AKV_FAULT_DIR     count only calls on paths under this directory (required)
 *   AKV_FAULT_N       fail the N-th counted call (1-based); 0 or unset: count only
 *   AKV_FAULT_TIMES   fail this many counted calls from the N-th on (default 1;
 *                     -1: every call from the N-th on, a disk that stays broken)
 *   AKV_FAULT_ERRNO   EIO (default) or ENOSPC
 *   AKV_FAULT_OPS     comma-separated classes to count (default: all):
 *                     open, write (write, pwrite, writev, pwritev), sync (fsync,
 *                     fdatasync, sync_file_range), alloc (fallocate,
 *                     posix_fallocate, ftruncate), rename (rename, link)
 *   AKV_FAULT_REPORT  append one line per injected fault and, on request, a summary:
 *                       fault N=<n> op=<call> errno=<E> phase=<phase> path=<path> prev=<path>
 *                     (prev: the path of the thread's previous counted call)
 *                       calls <total> phase <name> <first> <last> ...
 *   AKV_FAULT_TRACE   1: also one line per counted call: call <n> <call> <phase> <path>
 *   AKV_FAULT_SKIP    comma-separated file-name prefixes never counted nor failed
 *                     (e.g. LOG: RocksDB 7.8 aborts on an assertion at the info
 *                     log's next write after a failed one)
 *
 * The test program can call, through dlsym (they are absent without the shim):
 *   void akv_faultfs_phase(const char *name)  label the calls that follow
 *   long akv_faultfs_calls(void)              calls counted so far
 *   long akv_faultfs_fired(void)              faults injected so far
 *   void akv_faultfs_disarm(void)             inject nothing more
 *   void akv_faultfs_summary(void)            append the "calls" line to the report
 *
 * Reads, opens for reading, close, unlink and mkdir are never failed (opens
 * for reading are not counted either); stdio (fopen/fwrite) goes through
 * glibc's internal calls and is not seen.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define FD_MAX     65536
#define MAX_PHASES 32

enum { C_OPEN = 1, C_WRITE = 2, C_SYNC = 4, C_ALLOC = 8, C_RENAME = 16 };

static char g_dir[PATH_MAX];
static size_t g_dirlen;
static long g_n, g_times = 1;
static int g_errno = EIO, g_classes = C_OPEN | C_WRITE | C_SYNC | C_ALLOC | C_RENAME;
static char g_report[PATH_MAX];
static bool g_trace;
static char g_skip[256];
static atomic_long g_calls, g_fired;
static atomic_bool g_disarmed;
static _Atomic(char *) g_fd_path[FD_MAX];

typedef struct phase {
    char name[32];
    long first, last;
} phase;
static phase g_phase[MAX_PHASES];
static atomic_int g_nphase, g_cur_phase = -1;

#define REAL(ret, name, ...)                                                                                 \
    static ret (*real_##name)(__VA_ARGS__);                                                                  \
    static ret (*get_##name(void))(__VA_ARGS__)                                                              \
    {                                                                                                        \
        if (!real_##name)                                                                                    \
            real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                                      \
        return real_##name;                                                                                  \
    }

REAL(int, open, const char *, int, ...)
REAL(int, open64, const char *, int, ...)
REAL(int, openat, int, const char *, int, ...)
REAL(int, openat64, int, const char *, int, ...)
REAL(int, close, int)
REAL(ssize_t, write, int, const void *, size_t)
REAL(ssize_t, pwrite, int, const void *, size_t, off_t)
REAL(ssize_t, pwrite64, int, const void *, size_t, off_t)
REAL(ssize_t, writev, int, const struct iovec *, int)
REAL(ssize_t, pwritev, int, const struct iovec *, int, off_t)
REAL(int, fsync, int)
REAL(int, fdatasync, int)
REAL(int, sync_file_range, int, off_t, off_t, unsigned int)
REAL(int, fallocate, int, int, off_t, off_t)
REAL(int, fallocate64, int, int, off_t, off_t)
REAL(int, posix_fallocate, int, off_t, off_t)
REAL(int, posix_fallocate64, int, off_t, off_t)
REAL(int, ftruncate, int, off_t)
REAL(int, ftruncate64, int, off_t)
REAL(int, rename, const char *, const char *)
REAL(int, renameat, int, const char *, int, const char *)
REAL(int, link, const char *, const char *)

/* ---- configuration and the report ------------------------------------------ */

static void report(const char *fmt, ...)
{
    if (!g_report[0])
        return;
    char line[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    if ((size_t)n >= sizeof line)
        n = (int)sizeof line - 1;
    int fd = get_open()(g_report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    ssize_t w = get_write()(fd, line, (size_t)n);
    (void)w;
    get_close()(fd);
}

static int parse_classes(const char *s)
{
    static const struct {
        const char *name;
        int bit;
    } names[] = {
        {"open", C_OPEN}, {"write", C_WRITE}, {"sync", C_SYNC}, {"alloc", C_ALLOC}, {"rename", C_RENAME}};
    int c = 0;
    while (s && *s) {
        size_t len = strcspn(s, ",");
        for (size_t i = 0; i < sizeof names / sizeof *names; i++)
            if (len == strlen(names[i].name) && strncmp(s, names[i].name, len) == 0)
                c |= names[i].bit;
        if (len == 3 && strncmp(s, "all", 3) == 0)
            c |= C_OPEN | C_WRITE | C_SYNC | C_ALLOC | C_RENAME;
        s += len + (s[len] == ',');
    }
    return c;
}

__attribute__((constructor)) static void faultfs_init(void)
{
    const char *d = getenv("AKV_FAULT_DIR");
    if (d && *d && strlen(d) < sizeof g_dir) {
        snprintf(g_dir, sizeof g_dir, "%s", d);
        g_dirlen = strlen(g_dir);
        while (g_dirlen > 1 && g_dir[g_dirlen - 1] == '/')
            g_dir[--g_dirlen] = '\0';
    }
    const char *e = getenv("AKV_FAULT_N");
    g_n = e ? atol(e) : 0;
    e = getenv("AKV_FAULT_TIMES");
    g_times = e && *e ? atol(e) : 1;
    e = getenv("AKV_FAULT_ERRNO");
    g_errno = e && strcmp(e, "ENOSPC") == 0 ? ENOSPC : EIO;
    e = getenv("AKV_FAULT_OPS");
    if (e && *e)
        g_classes = parse_classes(e);
    e = getenv("AKV_FAULT_SKIP");
    if (e && strlen(e) < sizeof g_skip)
        snprintf(g_skip, sizeof g_skip, "%s", e);
    e = getenv("AKV_FAULT_TRACE");
    g_trace = e && *e == '1';
    e = getenv("AKV_FAULT_REPORT");
    if (e && strlen(e) < sizeof g_report)
        snprintf(g_report, sizeof g_report, "%s", e);
}

void akv_faultfs_phase(const char *name);
long akv_faultfs_calls(void);
long akv_faultfs_fired(void);
void akv_faultfs_disarm(void);
void akv_faultfs_summary(void);

/* The "calls" line of the report; the test calls it before _exit (a child
 * that leaves with _exit runs no destructors). */
void akv_faultfs_summary(void)
{
    char line[64 * MAX_PHASES + 64];
    size_t off = (size_t)snprintf(line, sizeof line, "calls %ld", atomic_load(&g_calls));
    int np = atomic_load(&g_nphase);
    for (int i = 0; i < np && off < sizeof line - 64; i++)
        off += (size_t)snprintf(line + off, sizeof line - off, " phase %s %ld %ld", g_phase[i].name,
                                g_phase[i].first, g_phase[i].last);
    report("%s\n", line);
}

void akv_faultfs_phase(const char *name)
{
    int i = atomic_load(&g_nphase);
    if (i >= MAX_PHASES)
        return;
    snprintf(g_phase[i].name, sizeof g_phase[i].name, "%s", name);
    g_phase[i].first = atomic_load(&g_calls) + 1;
    g_phase[i].last = g_phase[i].first - 1;
    atomic_store(&g_nphase, i + 1);
    atomic_store(&g_cur_phase, i);
}

long akv_faultfs_calls(void)
{
    return atomic_load(&g_calls);
}

long akv_faultfs_fired(void)
{
    return atomic_load(&g_fired);
}

void akv_faultfs_disarm(void)
{
    atomic_store(&g_disarmed, true);
}

/* ---- paths ------------------------------------------------------------------- */

/* Is `path` (relative to dirfd, or the cwd) under the directory? `abs` gets
 * the absolute path when it is. */
static bool under_dir(int dirfd, const char *path, char *abs, size_t cap)
{
    if (!g_dirlen || !path)
        return false;
    char base[PATH_MAX];
    if (path[0] == '/') {
        snprintf(abs, cap, "%s", path);
    } else {
        if (dirfd == AT_FDCWD || dirfd < 0) {
            if (!getcwd(base, sizeof base))
                return false;
        } else {
            char *p = dirfd < FD_MAX ? atomic_load(&g_fd_path[dirfd]) : NULL;
            if (!p)
                return false;
            snprintf(base, sizeof base, "%s", p);
        }
        int k = snprintf(abs, cap, "%s/%s", base, path);
        if (k < 0 || (size_t)k >= cap)
            return false;
    }
    return strncmp(abs, g_dir, g_dirlen) == 0 && (abs[g_dirlen] == '/' || abs[g_dirlen] == '\0');
}

static const char *fd_path(int fd)
{
    return fd >= 0 && fd < FD_MAX ? atomic_load(&g_fd_path[fd]) : NULL;
}

static void fd_set_path(int fd, const char *abs)
{
    if (fd < 0 || fd >= FD_MAX)
        return;
    char *old = atomic_exchange(&g_fd_path[fd], abs ? strdup(abs) : NULL);
    free(old);
}

/* Does the file name (the last component of path) start with a prefix
 * listed in AKV_FAULT_SKIP? */
static bool skipped(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *s = g_skip; *s;) {
        size_t len = strcspn(s, ",");
        if (len && strncmp(base, s, len) == 0)
            return true;
        s += len + (s[len] == ',');
    }
    return false;
}

/* Count a call of `cls`; true if it must fail. */
static bool inject(int cls, const char *op, const char *path)
{
    if (!(g_classes & cls) || skipped(path))
        return false;
    long n = atomic_fetch_add(&g_calls, 1) + 1;
    int p = atomic_load(&g_cur_phase);
    if (p >= 0)
        g_phase[p].last = n;
    if (g_trace)
        report("call %ld %s %s %s\n", n, op, p >= 0 ? g_phase[p].name : "-", path);
    /* The path of this thread's previous counted call: a directory's fsync
     * says what it makes durable only through the call before it. */
    static __thread char prev[PATH_MAX];
    bool fail = g_n > 0 && n >= g_n && !atomic_load(&g_disarmed) && (g_times < 0 || n < g_n + g_times);
    if (fail) {
        atomic_fetch_add(&g_fired, 1);
        report("fault N=%ld op=%s errno=%s phase=%s path=%s prev=%s\n", n, op,
               g_errno == ENOSPC ? "ENOSPC" : "EIO", p >= 0 ? g_phase[p].name : "-", path,
               prev[0] ? prev : "-");
    }
    snprintf(prev, sizeof prev, "%s", path);
    return fail;
}

static bool inject_fd(int cls, const char *op, int fd)
{
    const char *p = fd_path(fd);
    return p && inject(cls, op, p);
}

#define FAIL_WITH(ret)                                                                                       \
    do {                                                                                                     \
        errno = g_errno;                                                                                     \
        return ret;                                                                                          \
    } while (0)

/* ---- opens and close --------------------------------------------------------- */

static bool for_writing(int flags)
{
    return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0;
}

static int do_open(int dirfd, const char *path, int flags, mode_t mode, const char *op,
                   int (*real)(const char *, int, ...), int (*real_at)(int, const char *, int, ...))
{
    char abs[PATH_MAX];
    bool mine = under_dir(dirfd, path, abs, sizeof abs);
    if ((flags & O_APPEND) && !(flags & O_TRUNC))
        op = "reopen";
    if (mine && for_writing(flags) && inject(C_OPEN, op, abs))
        FAIL_WITH(-1);
    int fd = real ? real(path, flags, mode) : real_at(dirfd, path, flags, mode);
    if (fd >= 0)
        fd_set_path(fd, mine ? abs : NULL);
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, m, "open", get_open(), NULL);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(AT_FDCWD, path, flags, m, "open", get_open64(), NULL);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, m, "open", NULL, get_openat());
}

int openat64(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t m = mode_arg(flags, ap);
    va_end(ap);
    return do_open(dirfd, path, flags, m, "open", NULL, get_openat64());
}

int creat(const char *path, mode_t mode)
{
    return do_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, mode, "creat", get_open(), NULL);
}

int creat64(const char *path, mode_t mode)
{
    return creat(path, mode);
}

int close(int fd)
{
    fd_set_path(fd, NULL);
    return get_close()(fd);
}

/* ---- writes, syncs, allocation ------------------------------------------------ */

ssize_t write(int fd, const void *buf, size_t n)
{
    if (inject_fd(C_WRITE, "write", fd))
        FAIL_WITH(-1);
    return get_write()(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (inject_fd(C_WRITE, "pwrite", fd))
        FAIL_WITH(-1);
    return get_pwrite()(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    if (inject_fd(C_WRITE, "pwrite", fd))
        FAIL_WITH(-1);
    return get_pwrite64()(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
    if (inject_fd(C_WRITE, "writev", fd))
        FAIL_WITH(-1);
    return get_writev()(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
    if (inject_fd(C_WRITE, "pwritev", fd))
        FAIL_WITH(-1);
    return get_pwritev()(fd, iov, cnt, off);
}

int fsync(int fd)
{
    if (inject_fd(C_SYNC, "fsync", fd))
        FAIL_WITH(-1);
    return get_fsync()(fd);
}

int fdatasync(int fd)
{
    if (inject_fd(C_SYNC, "fdatasync", fd))
        FAIL_WITH(-1);
    return get_fdatasync()(fd);
}

/* With flags 0 the call does nothing (RocksDB probes support that way at
 * every open and asserts that the probe succeeds); it is not counted. */
int sync_file_range(int fd, off_t off, off_t n, unsigned int flags)
{
    if (flags && inject_fd(C_SYNC, "sync_file_range", fd))
        FAIL_WITH(-1);
    return get_sync_file_range()(fd, off, n, flags);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
    if (inject_fd(C_ALLOC, "fallocate", fd))
        FAIL_WITH(-1);
    return get_fallocate()(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off_t off, off_t len)
{
    if (inject_fd(C_ALLOC, "fallocate", fd))
        FAIL_WITH(-1);
    return get_fallocate64()(fd, mode, off, len);
}

/* posix_fallocate reports its error as the return value, not in errno. */
int posix_fallocate(int fd, off_t off, off_t len)
{
    if (inject_fd(C_ALLOC, "posix_fallocate", fd))
        return g_errno;
    return get_posix_fallocate()(fd, off, len);
}

int posix_fallocate64(int fd, off_t off, off_t len)
{
    if (inject_fd(C_ALLOC, "posix_fallocate", fd))
        return g_errno;
    return get_posix_fallocate64()(fd, off, len);
}

int ftruncate(int fd, off_t len)
{
    if (inject_fd(C_ALLOC, "ftruncate", fd))
        FAIL_WITH(-1);
    return get_ftruncate()(fd, len);
}

int ftruncate64(int fd, off_t len)
{
    if (inject_fd(C_ALLOC, "ftruncate", fd))
        FAIL_WITH(-1);
    return get_ftruncate64()(fd, len);
}

/* ---- names ---------------------------------------------------------------------- */

int rename(const char *from, const char *to)
{
    char abs[PATH_MAX];
    if ((under_dir(AT_FDCWD, to, abs, sizeof abs) || under_dir(AT_FDCWD, from, abs, sizeof abs)) &&
        inject(C_RENAME, "rename", abs))
        FAIL_WITH(-1);
    return get_rename()(from, to);
}

int renameat(int fromfd, const char *from, int tofd, const char *to)
{
    char abs[PATH_MAX];
    if ((under_dir(tofd, to, abs, sizeof abs) || under_dir(fromfd, from, abs, sizeof abs)) &&
        inject(C_RENAME, "rename", abs))
        FAIL_WITH(-1);
    return get_renameat()(fromfd, from, tofd, to);
}

int link(const char *from, const char *to)
{
    char abs[PATH_MAX];
    if (under_dir(AT_FDCWD, to, abs, sizeof abs) && inject(C_RENAME, "link", abs))
        FAIL_WITH(-1);
    return get_link()(from, to);
}
