/*
 * checkpoint.c — akv_checkpoint: a consistent point-in-time copy of an open
 * database into a new directory, taken while writers run, that opens as a
 * database (RocksDB's Checkpoint, LMDB's mdb_env_copy, SQLite's backup API).
 *
 * What is copied, and why it is consistent:
 *   - DIR/rocksdb by RocksDB's own checkpoint (hard links to its SST files,
 *     copies of its MANIFEST, OPTIONS and live WAL, without a flush): every
 *     run family, every memtable family with the writes its WAL holds, and
 *     the meta family (miss log, identity record), all as of one instant;
 *   - the catalog (both files) after it, under pubmu and cat.mu: no commit
 *     can change which runs exist while the lock is held, so the catalog
 *     names exactly the runs of the current version, each of which is in
 *     the RocksDB copy; a run family in the copy that the catalog does not
 *     name (a flush or compaction not yet committed) lies below the
 *     catalog's reserved run id (ids are reserved before a family is
 *     created), so open drops it as a leftover, as after a crash;
 *   - the filter files of those runs, hard-linked (copied where the
 *     filesystem refuses links): a filter file is only ever replaced by a
 *     rename, never rewritten in place, so a link holds one whole version;
 *   - the files in DIR/runs of the runs that are files only (no family),
 *     hard-linked the same way: a run file is written once, synced, then
 *     renamed into place, and never changed (a family run's names there
 *     are derived again by the copy's open);
 *   - IDENTITY, copied.
 * Writers are not held: a write acknowledged before the call is in the WAL
 * RocksDB copies; one that starts after the call returned is not.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"
#include "engine/lockorder.h"

/* Copies src to dst (created, must not exist) and fsyncs it. */
static int copy_file(const char *src, const char *dst)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_file_read(src, &buf, &len);
    if (rc != AKV_OK)
        return rc;
    int fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    bool ok = fd >= 0;
    for (size_t off = 0; ok && off < len;) {
        ssize_t w = write(fd, buf + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        ok = w > 0;
        off += ok ? (size_t)w : 0;
    }
    ok = ok && fsync(fd) == 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    free(buf);
    return ok ? AKV_OK : akvi_err(AKV_EIO, "checkpoint: writing %s: %s", dst, strerror(e));
}

/* Hard-links src as dst, or copies it where the filesystem has no links
 * between the two (another filesystem, or links not supported). */
static int link_or_copy(const char *src, const char *dst, bool *copied)
{
    if (link(src, dst) == 0)
        return AKV_OK;
    if (errno == EXDEV || errno == EPERM || errno == ENOTSUP || errno == EMLINK) {
        *copied = true;
        return copy_file(src, dst);
    }
    return akvi_err(AKV_EIO, "checkpoint: linking %s as %s: %s", src, dst, strerror(errno));
}

static int copy_named(const char *from_dir, const char *to_dir, const char *name)
{
    char *src = akvi_path_join(from_dir, name), *dst = akvi_path_join(to_dir, name);
    int rc = src && dst ? copy_file(src, dst) : akvi_err(AKV_ENOMEM, "out of memory");
    free(src);
    free(dst);
    return rc;
}

/* The filter files of the runs of version v, linked into fdir_out. A slot
 * without a file (its SST could not be read when it was built) has none to
 * copy: open treats the copy as it treats the database. */
static int link_filters(const akv_db *db, const akvi_version *v, const char *fdir_out, bool *copied)
{
    for (size_t i = 0; i < v->n_run; i++) {
        const akvi_cat_run *r = &v->runs[i]->info;
        for (size_t j = 0; j < r->n_sst; j++) {
            char name[64];
            akvi_filter_file_name(r->id, r->ssts[j].id, name, sizeof name);
            char *src = akvi_path_join(db->fdir, name), *dst = akvi_path_join(fdir_out, name);
            int rc = src && dst ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
            if (rc == AKV_OK && akvi_path_exists(src))
                rc = link_or_copy(src, dst, copied);
            free(src);
            free(dst);
            if (rc != AKV_OK)
                return rc;
        }
    }
    return AKV_OK;
}

/* The files of v's runs that have no family, linked into sdir_out. */
static int link_run_files(const akv_db *db, const akvi_version *v, const char *sdir_out, bool *copied)
{
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < v->n_run; i++) {
        const akvi_cat_run *r = &v->runs[i]->info;
        if (!r->files)
            continue;
        if (mkdir(sdir_out, 0755) != 0 && errno != EEXIST)
            return akvi_err(AKV_EIO, "checkpoint: creating %s: %s", sdir_out, strerror(errno));
        for (size_t j = 0; rc == AKV_OK && j <= r->n_sst; j++) {
            if (j == r->n_sst && db->layout != AKV_LAYOUT_ORDERED)
                break;
            char name[64];
            akvi_run_file_name(r->id, j < r->n_sst ? r->ssts[j].id : AKVI_RMAP_SST, name, sizeof name);
            char *src = akvi_path_join(db->sdir, name), *dst = akvi_path_join(sdir_out, name);
            rc = src && dst ? link_or_copy(src, dst, copied) : akvi_err(AKV_ENOMEM, "out of memory");
            free(src);
            free(dst);
        }
    }
    return rc;
}

/* RocksDB's checkpoint of every family into rdir_out (which it creates),
 * with the live WAL copied rather than the memtables flushed. */
static int rocks_checkpoint(akv_db *db, const char *rdir_out)
{
    char *err = NULL;
    rocksdb_checkpoint_t *cp = rocksdb_checkpoint_object_create(db->rk.rdb, &err);
    if (err)
        return akvi_rocks_err(err, "checkpoint: preparing RocksDB's checkpoint");
    rocksdb_checkpoint_create(cp, rdir_out, UINT64_MAX, &err);
    rocksdb_checkpoint_object_destroy(cp);
    return err ? akvi_rocks_err(err, "checkpoint: RocksDB's checkpoint") : AKV_OK;
}

static int take(akv_db *db, const char *dir, const char *rdir, const char *fdir, const char *sdir,
                bool *copied)
{
    akvi_mutex_lock(&db->vs.pubmu, AKVI_RANK_PUB);
    int rc = rocks_checkpoint(db, rdir);
    if (rc == AKV_OK) {
        akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
        rc = copy_named(db->dir, dir, "CATALOG.0");
        if (rc == AKV_OK)
            rc = copy_named(db->dir, dir, "CATALOG.1");
        akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    }
    if (rc == AKV_OK) {
        akvi_version *v = akvi_current(db);
        rc = link_filters(db, v, fdir, copied);
        if (rc == AKV_OK)
            rc = link_run_files(db, v, sdir, copied);
        akvi_version_unref(v);
    }
    akvi_mutex_unlock(&db->vs.pubmu, AKVI_RANK_PUB);
    return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int akv_checkpoint(akv_db *db, const char *dir)
{
    if (!db || !dir || !*dir)
        return akvi_err(AKV_EINVAL, "akv_checkpoint: NULL argument");
    if (mkdir(dir, 0755) != 0)
        return akvi_err(errno == EEXIST ? AKV_EEXIST : AKV_EIO, "checkpoint: creating %s: %s%s", dir,
                        strerror(errno), errno == EEXIST ? " (a checkpoint goes into a new directory)" : "");
    char *rdir = akvi_path_join(dir, "rocksdb"), *fdir = akvi_path_join(dir, "filters"),
         *sdir = akvi_path_join(dir, "runs");
    int rc = rdir && fdir && sdir ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
    if (rc == AKV_OK && mkdir(fdir, 0755) != 0)
        rc = akvi_err(AKV_EIO, "checkpoint: creating %s: %s", fdir, strerror(errno));
    bool copied = false;
    if (rc == AKV_OK)
        rc = take(db, dir, rdir, fdir, sdir, &copied);
    /* The identity never changes after create. Written last, as at create:
     * a directory without it is no finished database. */
    if (rc == AKV_OK)
        rc = akvi_fsync_dir(fdir);
    if (rc == AKV_OK && akvi_path_exists(sdir))
        rc = akvi_fsync_dir(sdir);
    if (rc == AKV_OK)
        rc = copy_named(db->dir, dir, "IDENTITY");
    if (rc == AKV_OK)
        rc = akvi_fsync_dir(dir);
    if (rc == AKV_OK && copied)
        akvi_log(db, "checkpoint %s: filter and run files copied, the filesystem refused hard links", dir);
    if (rc != AKV_OK) /* nothing half made stays behind (the directory was new) */
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(rdir);
    free(fdir);
    free(sdir);
    return rc;
}
