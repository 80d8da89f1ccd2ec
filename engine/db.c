/*
 * db.c — the database handle's life: an akv_db made with its options,
 * paths and RocksDB options, each part initialised by the file that owns
 * it (docs/design.md, "Headers and owned state"), the directory's lock,
 * and everything freed again in the one order that is safe: background
 * threads stopped, versions and filters released, RocksDB closed, the lock
 * released last. Open (recover.c) and repair (repair.c) both start here;
 * akv_close (what a clean close saves, then the same freeing) ends here,
 * and the handle's read-only accessors live here too.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "engine/internal.h"

void akvi_db_free(akv_db *db)
{
    akvi_bg_stop(db);
    akvi_reclaim(db, true); /* no reader is left: every retired version goes */
    if (db->vs.cur)
        akvi_version_unref(db->vs.cur);
    db->vs.cur = NULL;
    if (db->guard.stats.ctr)
        akvi_slot_destroy(&db->guard.stats);
    akvi_guard_free(db);
    akvi_fronts_free(db);
    akvi_pool_free(db);
    akvi_rocks_teardown(db);
    pthread_mutex_destroy(&db->pool.mu);
    if (db->lock_fd >= 0) /* released last: RocksDB is closed */
        close(db->lock_fd);
    akvi_misslog_destroy(db->ml);
    akvi_vset_destroy(&db->vs);
    akvi_stats_destroy(&db->st);
    akvi_writer_destroy(&db->wr);
    akvi_bg_destroy(&db->bg);
    akvi_catstate_destroy(&db->cat);
    akvi_grave_destroy(&db->grave);
    akvi_adapt_rule_destroy(&db->ad);
    pthread_rwlock_destroy(&db->guard.lock);
    free((char *)db->opt.slot_policy);
    free(db->dir);
    free(db->rdir);
    free(db->fdir);
    free(db->tdir);
    free(db->sdir);
    free(db);
}

static int setup(akv_db *db, const char *dir, const akv_options *opt)
{
    db->opt = *opt;
    db->opt.slot_policy = opt->slot_policy ? strdup(opt->slot_policy) : NULL;
    /* What the options say (checked before anything is read); an existing
     * database replaces what they leave unset with its own (adopt_policy).
     * A successful open prints nothing unless the policy changed: the
     * policy in effect is in akv_db_slot_policy and kvshell's `filters`. */
    db->policy_given = opt->slot_policy && *opt->slot_policy;
    db->bits_given = opt->bits_per_key != 0;
    if (!db->bits_given)
        db->opt.bits_per_key = AKVI_DEFAULT_BITS_PER_KEY;
    int rc = akvi_policy_parse(opt->slot_policy, db->opt.bits_per_key, &db->policy, NULL, 0);
    if (rc == AKV_OK)
        rc = akvi_policy_format(&db->policy, db->policy_text, sizeof db->policy_text);
    if (rc != AKV_OK)
        return rc;
    db->dir = strdup(dir);
    db->rdir = akvi_path_join(dir, "rocksdb");
    db->fdir = akvi_path_join(dir, "filters");
    db->tdir = akvi_path_join(dir, "tmp");
    db->sdir = akvi_path_join(dir, "runs");
    db->ml = akvi_misslog_create(opt->miss_log_bytes);
    if (!db->dir || !db->rdir || !db->fdir || !db->tdir || !db->sdir || !db->ml)
        return akvi_err(AKV_ENOMEM, "out of memory");
    return akvi_rocks_setup(db);
}

akv_db *akvi_db_new(const char *dir, const akv_options *opt, int *rc)
{
    akv_db *db = calloc(1, sizeof *db);
    if (!db) {
        *rc = akvi_err(AKV_ENOMEM, "out of memory");
        return NULL;
    }
    /* Each part initialises its own fields and locks; a get's pin and
     * counters take one cache line or two per thread slot. */
    int vs_rc = akvi_vset_init(&db->vs), st_rc = akvi_stats_init(&db->st),
        ad_rc = akvi_adapt_rule_init(&db->ad);
    if (vs_rc != AKV_OK || st_rc != AKV_OK || ad_rc != AKV_OK) {
        if (vs_rc == AKV_OK)
            akvi_vset_destroy(&db->vs);
        if (st_rc == AKV_OK)
            akvi_stats_destroy(&db->st);
        if (ad_rc == AKV_OK)
            akvi_adapt_rule_destroy(&db->ad);
        free(db);
        *rc = akvi_err(AKV_ENOMEM, "out of memory");
        return NULL;
    }
    akvi_writer_init(&db->wr);
    akvi_pool_init(db);
    akvi_bg_init(&db->bg);
    akvi_catstate_init(&db->cat);
    akvi_grave_init(&db->grave);
    pthread_rwlock_init(&db->guard.lock, NULL);
    akvi_fronts_init(db);
    db->lock_fd = -1;
    *rc = setup(db, dir, opt);
    if (*rc != AKV_OK) {
        akvi_db_free(db);
        return NULL;
    }
    return db;
}

/* The lock is DIR itself, flock()ed: no file is created for it (a refused
 * open changes nothing), it is released when the process dies, and it
 * belongs to the open file description, so two handles in one process
 * exclude each other as two processes do. RocksDB's own rocksdb/LOCK is
 * taken only when RocksDB opens for writing, after open's read-only checks
 * and repair's first steps: a second opener used to read a database in the
 * middle of a commit and call it corrupt, and a second repair moved live
 * SSTs away (docs/reliability.md, "One handle at a time"). */
int akvi_dir_lock(akv_db *db)
{
    if (db->lock_fd >= 0)
        return AKV_OK;
    int fd = open(db->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return AKV_NOTFOUND;
        return akvi_err(errno == ENOTDIR ? AKV_EINVAL : AKV_EIO, "cannot open database directory %s: %s",
                        db->dir, strerror(errno));
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            return akvi_err(AKV_EBUSY,
                            "database %s is in use: another handle (in this process or another) holds its "
                            "lock; nothing was read or changed",
                            db->dir);
        return akvi_err(AKV_EIO, "cannot lock database directory %s: %s", db->dir, strerror(e));
    }
    db->lock_fd = fd;
    return AKV_OK;
}

/* ---- the handle seen from outside, and its end ------------------------- */

akv_layout akv_db_layout(const akv_db *db)
{
    return db->layout;
}

const char *akv_db_slot_policy(const akv_db *db)
{
    return db->policy_text;
}

const char *akv_db_policy_kind(const akv_db *db, int level)
{
    if (level < -1 || level >= AKV_MAX_LEVELS)
        return NULL;
    const akv_filter_kind *k = level < 0 ? db->policy.mem : db->policy.level[level];
    return k ? k->name : "none";
}

double akv_db_bits_per_key(const akv_db *db)
{
    return db->opt.bits_per_key;
}

int akv_close(akv_db *db)
{
    if (!db)
        return AKV_OK;
    akvi_bg_stop(db);
    /* A failed save loses only what the filters learned since the last
     * save (the file on disk is still a complete filter), but is reported. */
    int saved = akvi_save_adapted_slots(db);
    int rc = AKV_OK;
    uint8_t *buf = NULL;
    size_t len;
    /* After a failed write RocksDB has stopped (its log may be torn): a
     * synced write now would trip its own assertions. The miss log is only
     * a hint; the error that stopped the database is reported instead. */
    int stopped = atomic_load(&db->bg.error);
    if (stopped)
        rc = akvi_err(stopped,
                      "akv_close: the database stopped after a failed write; the miss log was not saved");
    else if ((rc = akvi_rest_credit_save(db)) == AKV_OK &&
             akvi_misslog_encode(db->ml, &buf, &len) == AKV_OK) {
        /* (this synced put also syncs the credit's, before it in the log) */
        rc = akvi_meta_put(db, "misslog", buf, len, true);
        free(buf);
        /* A background flush of the meta family that failed is otherwise
         * silent (RocksDB's close reports nothing): a waited flush reports
         * it, through the log hook. */
        if (rc == AKV_OK)
            akvi_meta_flush(db, true);
    }
    if (rc == AKV_OK && saved != AKV_OK)
        rc = akvi_err(saved, "akv_close: could not save adapted filters; see the log");
    /* RocksDB's own background work (a flush of the meta family, a new log
     * file, a compaction of the meta family that the last flush started)
     * reports its failures nowhere but here. It is stopped first, and waited
     * for, so that none of it writes after the check: rocksdb_close would
     * otherwise wait for it and drop what it reported. */
    rocksdb_cancel_all_background_work(db->rk.rdb, 1);
    uint64_t bg_errors = 0;
    if (rc == AKV_OK && rocksdb_property_int(db->rk.rdb, "rocksdb.background-errors", &bg_errors) == 0 &&
        bg_errors > 0)
        rc = akvi_err(AKV_EIO, "akv_close: RocksDB reported %llu background error(s); see its LOG",
                      (unsigned long long)bg_errors);
    akvi_db_free(db);
    return rc;
}
