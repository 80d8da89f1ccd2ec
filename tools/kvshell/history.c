/*
 * history.c — the history file of interactive sessions.
 *
 * One command per line, exactly as typed, oldest first. A command is appended
 * as soon as it is read, in one write to a file opened with O_APPEND, so a
 * session that is killed keeps what it typed and sessions running side by
 * side interleave whole lines. Reading keeps the newest `keep` commands and,
 * when the file holds more than twice that, rewrites it with those (a new
 * file renamed over the old one; a line another session appends between the
 * read and the rename is lost, which only a trim at start can cause).
 *
 * Earlier kvshell versions let libedit write the whole history at exit in its
 * own format, which starts with the line "_HiStOrY_V2_"; kvs_history_read
 * reports such a file so that the caller can convert it.
 *
 * No libedit here: the caller passes each command on.
 */
#include "tools/kvshell/kvshell.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LEGACY_COOKIE "_HiStOrY_V2_"

char *kvs_history_path(void)
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

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A command can be saved if it fits on one line of the file. */
static bool savable(const char *line)
{
    return *line && !strchr(line, '\n');
}

int kvs_history_append(const char *path, const char *line)
{
    if (!savable(line))
        return 0;
    size_t n = strlen(line);
    char *buf = malloc(n + 1);
    if (!buf)
        return -1;
    memcpy(buf, line, n);
    buf[n] = '\n';
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    int rc = -1;
    if (fd >= 0) {
        rc = write_all(fd, buf, n + 1); /* one write: lines never interleave */
        int e = errno;
        if (close(fd) != 0 && rc == 0)
            rc = -1;
        else
            errno = e;
    }
    free(buf);
    return rc;
}

static int write_lines(int fd, const char *const *lines, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (savable(lines[i]) &&
            (write_all(fd, lines[i], strlen(lines[i])) != 0 || write_all(fd, "\n", 1) != 0))
            return -1;
    return fsync(fd);
}

int kvs_history_write(const char *path, const char *const *lines, size_t n)
{
    /* Replace the file a symbolic link points to, not the link. */
    char *real = realpath(path, NULL);
    const char *target = real ? real : path;
    size_t tn = strlen(target) + sizeof ".XXXXXX";
    char *tmp = malloc(tn);
    int fd = -1, rc = -1;
    if (tmp) {
        snprintf(tmp, tn, "%s.XXXXXX", target);
        fd = mkstemp(tmp); /* mode 0600 */
    }
    if (fd >= 0) {
        rc = write_lines(fd, lines, n);
        if (close(fd) != 0)
            rc = -1;
        if (rc == 0)
            rc = rename(tmp, target);
        if (rc != 0) {
            int e = errno;
            unlink(tmp);
            errno = e;
        }
    }
    int e = errno;
    free(tmp);
    free(real);
    errno = e;
    return rc;
}

/* The newest `keep` lines, as a ring. */
typedef struct ring {
    char **v;
    size_t keep, n, head; /* head: index of the oldest when full */
    uint64_t total;
} ring;

static int ring_push(ring *r, const char *s, size_t len)
{
    char *c = strndup(s, len);
    if (!c)
        return -1;
    r->total++;
    if (r->n < r->keep) {
        r->v[r->n++] = c;
        return 0;
    }
    free(r->v[r->head]);
    r->v[r->head] = c;
    r->head = (r->head + 1) % r->keep;
    return 0;
}

static const char *ring_at(const ring *r, size_t i)
{
    return r->v[(r->head + i) % r->keep];
}

int kvs_history_read(const char *path, size_t keep, void (*add)(const char *line, void *arg), void *arg)
{
    if (keep == 0)
        return 0;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    ring r = {.v = calloc(keep, sizeof(char *)), .keep = keep};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = r.v ? 0 : -1;
    bool first = true;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (first && strcmp(line, LEGACY_COOKIE) == 0)
            rc = KVS_HISTORY_LEGACY;
        else if (len > 0 && !memchr(line, '\0', (size_t)len))
            rc = ring_push(&r, line, (size_t)len);
        first = false;
    }
    int e = errno;
    if (rc == 0 && ferror(f))
        rc = -1;
    fclose(f);
    free(line);
    if (rc == 0) {
        for (size_t i = 0; i < r.n; i++)
            add(ring_at(&r, i), arg);
        if (r.total > 2 * (uint64_t)keep) {
            const char **v = malloc(r.n * sizeof *v);
            if (v) {
                for (size_t i = 0; i < r.n; i++)
                    v[i] = ring_at(&r, i);
                kvs_history_write(path, v, r.n); /* a file that stays long is no failure */
                free(v);
            }
        }
    }
    for (size_t i = 0; i < r.n; i++)
        free(r.v[i]);
    free(r.v);
    errno = e;
    return rc;
}
