/*
 * slot.c — one filter slot: the filter, its counters, its lock and its file.
 *
 * Static filters are queried lock-free. A filter whose kind can mutate
 * (adapt/insert/remove) and does not lock internally gets a reader-writer
 * lock: queries share it, adaptation takes it exclusively, so a query never
 * sees a half-applied change (which could be a false negative). Nothing
 * here does I/O while holding that lock: adaptations get their reverse map
 * in memory (adapt.c), and a save serializes under the lock and writes after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"

void akvi_slot_init(akvi_slot *s, akv_filter *f)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->f, f);
    uint32_t fl = f ? f->kind->flags : 0;
    s->locked = f && (fl & (AKV_FK_ADAPTIVE | AKV_FK_DYNAMIC | AKV_FK_ABSORB)) && !(fl & AKV_FK_CONCURRENT);
    if (s->locked)
        pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->grow_mu, NULL);
}

void akvi_slot_destroy(akvi_slot *s)
{
    if (s->locked)
        pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->grow_mu);
    akv_filter_destroy(atomic_exchange(&s->f, NULL));
    for (size_t i = 0; i < s->n_retired; i++)
        akv_filter_destroy(s->retired[i]);
    free(s->retired);
    s->retired = NULL;
    s->n_retired = 0;
}

void akvi_slot_lock(akvi_slot *s, bool exclusive)
{
    if (!s->locked)
        return;
    if (exclusive)
        pthread_rwlock_wrlock(&s->lock);
    else
        pthread_rwlock_rdlock(&s->lock);
}

void akvi_slot_unlock(akvi_slot *s)
{
    if (s->locked)
        pthread_rwlock_unlock(&s->lock);
}

bool akvi_slot_may_contain(akvi_slot *s, akv_hash h)
{
    atomic_fetch_add_explicit(&s->queries, 1, memory_order_relaxed);
    bool yes = true;
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    if (f)
        yes = akv_filter_may_contain(f, h);
    akvi_slot_unlock(s);
    if (!yes)
        atomic_fetch_add_explicit(&s->filtered, 1, memory_order_relaxed);
    return yes;
}

int akvi_slot_adapt(akvi_slot *s, akv_filter *f, akv_hash h, akv_revmap *rm)
{
    akvi_slot_lock(s, true);
    /* Grown meanwhile: the caller's filter is retired; it adapts the new
     * one on its next false positive. */
    int rc = atomic_load(&s->f) == f ? akv_filter_adapt(f, h, rm) : AKV_NOTFOUND;
    akvi_slot_unlock(s);
    if (rc == AKV_OK)
        atomic_store(&s->dirty, true);
    return rc;
}

int akvi_slot_swap(akvi_slot *s, const akv_filter *expected, akv_filter *g)
{
    pthread_mutex_lock(&s->grow_mu);
    if (atomic_load(&s->f) != expected) {
        pthread_mutex_unlock(&s->grow_mu);
        return AKV_NOTFOUND;
    }
    akv_filter **ret = realloc(s->retired, (s->n_retired + 1) * sizeof *ret);
    if (!ret) {
        pthread_mutex_unlock(&s->grow_mu);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    s->retired = ret;
    akvi_slot_lock(s, true);
    s->retired[s->n_retired++] = atomic_load(&s->f);
    atomic_store(&s->f, g);
    akvi_slot_unlock(s);
    pthread_mutex_unlock(&s->grow_mu);
    atomic_store(&s->dirty, true);
    return AKV_OK;
}

size_t akvi_slot_memory(akvi_slot *s)
{
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    size_t m = f ? akv_filter_memory(f) : 0;
    akvi_slot_unlock(s);
    return m;
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

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static int serialize(const akv_filter *f, uint64_t run, uint64_t sst, uint8_t **buf, size_t *len)
{
    int rc = akv_filter_serialize(f, buf, len);
    if (rc != AKV_OK)
        return akvi_err(rc, "serializing filter %llu-%llu: %s", (unsigned long long)run,
                        (unsigned long long)sst, akv_strerror(rc));
    return AKV_OK;
}

/* Write a serialized filter (consumed) to its file atomically. */
static int write_bytes(const char *fdir, uint64_t run, uint64_t sst, uint8_t *buf, size_t len)
{
    char name[64], path[4096], tmp[4160];
    akvi_filter_file_name(run, sst, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", fdir, name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(fd, buf, len) == 0 && fsync(fd) == 0;
    if (fd >= 0)
        ok = (close(fd) == 0) && ok;
    free(buf);
    ok = ok && rename(tmp, path) == 0 && fsync_dir(fdir) == 0;
    if (!ok) {
        int e = errno;
        unlink(tmp);
        return akvi_err(AKV_EIO, "writing filter file %s: %s", name, strerror(e));
    }
    return AKV_OK;
}

int akvi_slot_write_file(const char *fdir, uint64_t run, uint64_t sst, const akv_filter *f)
{
    uint8_t *buf;
    size_t len;
    int rc = serialize(f, run, sst, &buf, &len);
    return rc == AKV_OK ? write_bytes(fdir, run, sst, buf, len) : rc;
}

int akvi_slot_save(akvi_slot *s, const char *fdir, uint64_t run, uint64_t sst)
{
    /* Clear the flag first: an adaptation or growth after this sets it
     * again and is saved next time. */
    if (!atomic_exchange(&s->dirty, false))
        return AKV_OK;
    uint8_t *buf = NULL;
    size_t len = 0;
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    int rc = f ? serialize(f, run, sst, &buf, &len) : AKV_OK;
    akvi_slot_unlock(s);
    if (rc == AKV_OK && f)
        rc = write_bytes(fdir, run, sst, buf, len);
    if (rc != AKV_OK)
        atomic_store(&s->dirty, true);
    return rc;
}

int akvi_slot_read_file(const char *fdir, uint64_t run, uint64_t sst, akv_filter **out)
{
    char name[64], path[4096];
    akvi_filter_file_name(run, sst, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", fdir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return akvi_err(AKV_NOTFOUND, "filter file %s: %s", name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > (off_t)1 << 40) {
        close(fd);
        return akvi_err(AKV_ECORRUPT, "filter file %s: bad size", name);
    }
    size_t len = (size_t)st.st_size;
    uint8_t *buf = malloc(len);
    size_t got = 0;
    while (buf && got < len) {
        ssize_t r = read(fd, buf + got, len - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    int rc = (buf && got == len) ? akv_filter_deserialize(buf, len, out) : AKV_EIO;
    free(buf);
    if (rc != AKV_OK)
        return akvi_err(rc == AKV_ENOTSUP ? AKV_ENOTSUP : AKV_ECORRUPT, "filter file %s: %s", name,
                        akv_strerror(rc));
    return AKV_OK;
}
