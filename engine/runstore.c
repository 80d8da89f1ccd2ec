/*
 * runstore.c — the readers of runs' SST files (docs/design.md, "Run
 * files"): open and keep a reader per SST, a point lookup in one SST, an
 * iterator over one SST or a run's SSTs, verification. Errors from
 * RocksDB's reader (sstreader.cc) become AKV_E* codes with a message
 * naming the file.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "engine/runstore.h"

struct akvi_rs {
    akvi_sstr_env *env;
};

struct akvi_rs_sst {
    akvi_sstr *r;
    char *path;
};

struct akvi_rs_iter {
    akvi_rs_sst *const *files;
    size_t n, at; /* files[at] is current; at == n: at the end */
    bool scan;
    akvi_sstr_it *cur; /* over files[at] */
    akvi_rs_sst *one;  /* files for a point lookup: this one SST */
};

/* A reader's failure code and message as AKV_E* and akv_errmsg. */
static int sst_err(int code, char *msg, const char *what, const char *path)
{
    int rc = code == AKVI_SSTR_CORRUPT ? AKV_ECORRUPT : code == AKVI_SSTR_NOMEM ? AKV_ENOMEM : AKV_EIO;
    rc = akvi_err(rc, "%s SST file %s: %s", what, path, msg ? msg : "out of memory");
    free(msg);
    return rc;
}

int akvi_rs_open(struct rocksdb_cache_t *cache, size_t cache_bytes, bool direct_reads, akvi_rs **out)
{
    *out = NULL;
    akvi_rs *s = calloc(1, sizeof *s);
    if (!s)
        return akvi_err(AKV_ENOMEM, "out of memory opening the run store");
    char *err = NULL;
    s->env = akvi_sstr_env_create(cache, cache_bytes, direct_reads, &err);
    if (!s->env) {
        free(s);
        int rc = akvi_err(AKV_ENOMEM, "opening the run store: %s", err ? err : "out of memory");
        free(err);
        return rc;
    }
    *out = s;
    return AKV_OK;
}

void akvi_rs_close(akvi_rs *s)
{
    if (!s)
        return;
    akvi_sstr_env_destroy(s->env);
    free(s);
}

size_t akvi_rs_cache_usage(const akvi_rs *s)
{
    return akvi_sstr_env_cache_usage(s->env);
}

int akvi_rs_sst_open(akvi_rs *s, const char *path, akvi_rs_sst **out)
{
    *out = NULL;
    akvi_rs_sst *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return akvi_err(AKV_ENOMEM, "out of memory opening SST file %s", path);
    }
    char *err = NULL;
    int code = akvi_sstr_open(s->env, path, &f->r, &err);
    if (code != AKVI_SSTR_OK) {
        free(f->path);
        free(f);
        return sst_err(code, err, "opening", path);
    }
    *out = f;
    return AKV_OK;
}

void akvi_rs_sst_close(akvi_rs_sst *f)
{
    if (!f)
        return;
    akvi_sstr_close(f->r);
    free(f->path);
    free(f);
}

const char *akvi_rs_sst_path(const akvi_rs_sst *f)
{
    return f->path;
}

void akvi_rs_sst_props(const akvi_rs_sst *f, akvi_sstr_props *p)
{
    akvi_sstr_props_get(f->r, p);
}

int akvi_rs_sst_verify(akvi_rs_sst *f)
{
    char *err = NULL;
    int code = akvi_sstr_verify(f->r, &err);
    return code == AKVI_SSTR_OK ? AKV_OK : sst_err(code, err, "verifying", f->path);
}

int akvi_rs_verify_run(akvi_rs_sst *const *files, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = akvi_rs_sst_verify(files[i]);
        if (rc != AKV_OK)
            return rc;
    }
    return AKV_OK;
}

/* The current file's iterator ended: AKV_OK at its true end, else its
 * error. */
static int iter_status(akvi_rs_iter *it)
{
    char *err = NULL;
    int code = akvi_sstr_it_status(it->cur, &err);
    return code == AKVI_SSTR_OK ? AKV_OK : sst_err(code, err, "reading", it->files[it->at]->path);
}

/* Moves to files[at] (at < n), an iterator of its own. */
static int iter_open_at(akvi_rs_iter *it, size_t at)
{
    akvi_sstr_it_destroy(it->cur);
    it->cur = NULL;
    it->at = at;
    if (at >= it->n)
        return AKV_OK;
    it->cur = akvi_sstr_iter(it->files[at]->r, it->scan);
    if (!it->cur) {
        it->at = it->n;
        return akvi_err(AKV_ENOMEM, "out of memory iterating SST file %s", it->files[at]->path);
    }
    return AKV_OK;
}

/* After a positioning of files[at]: while it is at its end, the next file
 * from its first key. */
static int iter_settle(akvi_rs_iter *it)
{
    while (it->at < it->n && !akvi_sstr_it_valid(it->cur)) {
        int rc = iter_status(it);
        if (rc == AKV_OK)
            rc = iter_open_at(it, it->at + 1);
        if (rc != AKV_OK) {
            iter_open_at(it, it->n);
            return rc;
        }
        if (it->at < it->n)
            akvi_sstr_it_seek_first(it->cur);
    }
    return AKV_OK;
}

/* Backwards: while files[at] is before its first key, the previous file
 * from its last key. */
static int iter_settle_back(akvi_rs_iter *it)
{
    while (it->at < it->n && !akvi_sstr_it_valid(it->cur)) {
        int rc = iter_status(it);
        if (rc == AKV_OK && it->at == 0)
            return iter_open_at(it, it->n);
        if (rc == AKV_OK)
            rc = iter_open_at(it, it->at - 1);
        if (rc != AKV_OK) {
            iter_open_at(it, it->n);
            return rc;
        }
        akvi_sstr_it_seek_last(it->cur);
    }
    return AKV_OK;
}

int akvi_rs_iter_new(akvi_rs_sst *const *files, size_t n, bool scan, akvi_rs_iter **out)
{
    *out = NULL;
    akvi_rs_iter *it = calloc(1, sizeof *it);
    if (!it)
        return akvi_err(AKV_ENOMEM, "out of memory creating a run iterator");
    it->files = files;
    it->n = n;
    it->at = n;
    it->scan = scan;
    *out = it;
    return AKV_OK;
}

void akvi_rs_iter_destroy(akvi_rs_iter *it)
{
    if (!it)
        return;
    akvi_sstr_it_destroy(it->cur);
    free(it);
}

int akvi_rs_iter_seek_first(akvi_rs_iter *it)
{
    int rc = iter_open_at(it, 0);
    if (rc != AKV_OK || it->at >= it->n)
        return rc;
    akvi_sstr_it_seek_first(it->cur);
    return iter_settle(it);
}

int akvi_rs_iter_seek(akvi_rs_iter *it, const void *key, size_t klen)
{
    /* The files' ranges are disjoint and in order: the first file with a
     * key >= key holds the answer. A file whose keys all sort before it
     * answers from its index alone. */
    for (size_t at = 0; at < it->n; at++) {
        int rc = iter_open_at(it, at);
        if (rc != AKV_OK)
            return rc;
        akvi_sstr_it_seek(it->cur, key, klen);
        if (akvi_sstr_it_valid(it->cur))
            return AKV_OK;
        rc = iter_status(it);
        if (rc != AKV_OK) {
            iter_open_at(it, it->n);
            return rc;
        }
    }
    return iter_open_at(it, it->n);
}

int akvi_rs_iter_next(akvi_rs_iter *it)
{
    if (it->at >= it->n)
        return AKV_OK;
    akvi_sstr_it_next(it->cur);
    return iter_settle(it);
}

int akvi_rs_iter_seek_last(akvi_rs_iter *it)
{
    if (it->n == 0)
        return iter_open_at(it, 0);
    int rc = iter_open_at(it, it->n - 1);
    if (rc != AKV_OK)
        return rc;
    akvi_sstr_it_seek_last(it->cur);
    return iter_settle_back(it);
}

int akvi_rs_iter_prev(akvi_rs_iter *it)
{
    if (it->at >= it->n)
        return AKV_OK;
    akvi_sstr_it_prev(it->cur);
    return iter_settle_back(it);
}

bool akvi_rs_iter_valid(const akvi_rs_iter *it)
{
    return it->at < it->n;
}

const uint8_t *akvi_rs_iter_key(const akvi_rs_iter *it, size_t *len)
{
    return akvi_sstr_it_key(it->cur, len);
}

const uint8_t *akvi_rs_iter_value(const akvi_rs_iter *it, size_t *len)
{
    return akvi_sstr_it_value(it->cur, len);
}

int akvi_rs_get(akvi_rs_sst *f, const void *key, size_t klen, akvi_rs_val *out)
{
    memset(out, 0, sizeof *out);
    akvi_rs_iter *it = calloc(1, sizeof *it);
    if (!it)
        return akvi_err(AKV_ENOMEM, "out of memory reading SST file %s", f->path);
    it->one = f;
    it->files = &it->one;
    it->n = 1;
    int rc = iter_open_at(it, 0);
    if (rc == AKV_OK) {
        akvi_sstr_it_seek(it->cur, key, klen);
        if (!akvi_sstr_it_valid(it->cur)) {
            rc = iter_status(it);
            if (rc == AKV_OK)
                rc = AKV_NOTFOUND;
        } else {
            size_t kl;
            const void *k = akvi_sstr_it_key(it->cur, &kl);
            if (kl != klen || memcmp(k, key, klen) != 0)
                rc = AKV_NOTFOUND;
        }
    }
    if (rc != AKV_OK) {
        akvi_rs_iter_destroy(it);
        return rc;
    }
    out->it = it;
    out->v = akvi_sstr_it_value(it->cur, &out->len);
    return AKV_OK;
}

void akvi_rs_val_release(akvi_rs_val *v)
{
    akvi_rs_iter_destroy(v->it);
    memset(v, 0, sizeof *v);
}
