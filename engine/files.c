/*
 * files.c — whole files, the way every adaptkv record outside RocksDB is
 * kept (docs/format.md): read one whole, write one atomically (a temp name,
 * fsync, rename, fsync of the directory), or rewrite one in place with one
 * fdatasync (the two catalog slots). Filter files are written in batches
 * (a new run's, the adapted ones): each file is replaced (a temp name,
 * fsync, rename) and the directory is synced once for the batch, since
 * every directory sync is a journal commit and a disk cache flush
 * (docs/design.md, "Syncs").
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"

char *akvi_path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int write_all(int fd, const uint8_t *p, size_t n)
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

int akvi_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return akvi_err(AKV_EIO, "opening directory %s: %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    return rc == 0 ? AKV_OK : akvi_err(AKV_EIO, "syncing directory %s: %s", dir, strerror(e));
}

int akvi_file_read(const char *path, uint8_t **buf, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? akvi_err(AKV_NOTFOUND, "%s: no such file", path)
                               : akvi_err(AKV_EIO, "opening %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)1 << 40) {
        close(fd);
        return akvi_err(AKV_ECORRUPT, "%s: not a regular file of a plausible size", path);
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        close(fd);
        return akvi_err(AKV_ENOMEM, "out of memory reading %s", path);
    }
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    int e = errno;
    close(fd);
    if (got != n) {
        free(p);
        return akvi_err(AKV_EIO, "reading %s: %s", path, got < n ? "short read" : strerror(e));
    }
    *buf = p;
    *len = n;
    return AKV_OK;
}

int akvi_file_replace(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
    char path[4096], tmp[4160];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, buf, len) == 0 && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = false;
        e = errno;
    }
    if (!ok) {
        unlink(tmp);
        return akvi_err(AKV_EIO, "writing %s: %s", path, strerror(e));
    }
    return AKV_OK;
}

int akvi_file_write_atomic(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
    int rc = akvi_file_replace(dir, name, buf, len);
    return rc == AKV_OK ? akvi_fsync_dir(dir) : rc;
}

int akvi_file_rewrite(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, buf, len) == 0 && ftruncate(fd, (off_t)len) == 0 && fdatasync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    return ok ? AKV_OK : akvi_err(AKV_EIO, "writing %s: %s", path, strerror(e));
}

bool akvi_path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool akvi_path_exists_in(const char *dir, const char *name)
{
    char *p = akvi_path_join(dir, name);
    bool there = p && akvi_path_exists(p);
    free(p);
    return there;
}
