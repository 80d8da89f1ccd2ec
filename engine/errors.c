/*
 * errors.c — per-thread error messages and the log hook.
 *
 * Each failing call leaves a human message in thread-local storage so that
 * concurrent threads never see each other's errors (SQLite/LMDB style).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

static _Thread_local char t_errmsg[512];

const char *akv_errmsg(void)
{
    return t_errmsg;
}

void akv_free(void *p)
{
    free(p);
}

int akvi_err(int rc, const char *fmt, ...)
{
    /* Through a copy: callers pass the previous message as an argument
     * ("%s; ...", akv_errmsg()), and vsnprintf may clear its output first. */
    char msg[sizeof t_errmsg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(t_errmsg, msg, sizeof msg);
    return rc;
}

int akvi_rocks_err(char *err, const char *what)
{
    int rc = akvi_err(AKV_EIO, "%s: %s", what, err ? err : "unknown RocksDB error");
    /* RocksDB error strings come from its own malloc. */
    rocksdb_free(err);
    return rc;
}

void akvi_log(const akv_db *db, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (db && db->opt.log)
        db->opt.log(db->opt.log_arg, msg);
    else
        fprintf(stderr, "adaptkv: %s\n", msg);
}
