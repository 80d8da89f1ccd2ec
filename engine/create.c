/*
 * create.c — a new database (create.h): its directories, RocksDB with the
 * memtable pool, the catalog in both slots, the first memtable, and the
 * identity last, so that a crash before the identity leaves a directory
 * that opens as new (docs/design.md, "Recovery"). A create that fails
 * removes everything it made.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/create.h"
#include "engine/lockorder.h"

int (*_Atomic akvi_hook_create_step)(const char *step);

static int hook(const char *step)
{
    int (*h)(const char *) = atomic_load(&akvi_hook_create_step);
    return h ? h(step) : AKV_OK;
}

int akvi_make_dir(const char *p, bool *made)
{
    if (mkdir(p, 0755) == 0) {
        *made = true;
        return AKV_OK;
    }
    struct stat st;
    if (errno == EEXIST && stat(p, &st) == 0 && S_ISDIR(st.st_mode))
        return AKV_OK;
    return akvi_err(AKV_EIO, "cannot create directory %s: %s", p,
                    strerror(errno == EEXIST ? ENOTDIR : errno));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

void akvi_uncreate(akv_db *db, const akvi_created *m)
{
    if (m->rocksdb)
        nftw(db->rdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (m->filters)
        nftw(db->fdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (m->tmp)
        nftw(db->tdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    if (m->catalog)
        for (int i = 0; i < 2; i++) {
            char name[32];
            snprintf(name, sizeof name, "CATALOG.%d", i);
            char *p = akvi_path_join(db->dir, name);
            if (p)
                unlink(p);
            free(p);
        }
    if (m->identity) { /* written, or half-written (a failed fsync after its rename) */
        char *p = akvi_path_join(db->dir, "IDENTITY");
        if (p)
            unlink(p);
        free(p);
    }
    if (m->dir)
        rmdir(db->dir);
}

int akvi_create(akv_db *db, akvi_cf_set *cfs, akvi_mem ***mems, size_t *n_mem, akvi_created *m)
{
    bool had_rocks = akvi_path_exists(db->rdir);
    int rc = akvi_make_dir(db->dir, &m->dir);
    if (rc == AKV_OK)
        rc = akvi_make_dir(db->fdir, &m->filters);
    if (rc == AKV_OK)
        rc = akvi_make_dir(db->tdir, &m->tmp);
    if (rc != AKV_OK)
        return rc;
    rc = akvi_cf_set_open(db, false, true, cfs);
    m->rocksdb = !had_rocks && akvi_path_exists(db->rdir);
    if (rc != AKV_OK)
        return rc;
    db->layout = db->opt.layout == AKV_LAYOUT_AUTO ? AKV_LAYOUT_HASH : db->opt.layout;
    db->seed = db->opt.seed;
    while (db->seed == 0 && getrandom(&db->seed, sizeof db->seed, 0) != sizeof db->seed)
        ;
    db->vs.next_run_id = 1;
    db->vs.flushed_mem_gen = 0;
    for (size_t i = 0; i < cfs->n; i++) { /* memtables of an interrupted create: empty */
        uint64_t p = akvi_parse_id(cfs->names[i], "pool.");
        if (cfs->state[i] == AKVI_CF_FREE && akvi_parse_id(cfs->names[i], "mem."))
            cfs->state[i] = AKVI_CF_LEFTOVER;
        else if (cfs->state[i] == AKVI_CF_FREE && p && p <= AKVI_POOL_MAX) {
            cfs->state[i] = AKVI_CF_USED;
            akvi_pool_set(db, p - 1, cfs->h[i], AKVI_POOL_FREE);
        }
    }
    rc = hook("rocksdb");
    if (rc == AKV_OK)
        rc = akvi_guard_init(db);
    /* The catalog in both slots, then the identity: a crash before the
     * identity is written leaves a directory that opens as new. */
    if (rc == AKV_OK) {
        akvi_catalog c = {.layout = (uint32_t)db->layout, .seed = db->seed, .next_run_id = 2};
        m->catalog = true;
        akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
        rc = akvi_catalog_store(db, &c);
        if (rc == AKV_OK)
            rc = akvi_catalog_store(db, &c);
        akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    }
    if (rc == AKV_OK)
        rc = hook("catalog");
    *mems = calloc(1, sizeof **mems);
    if (rc == AKV_OK && !*mems)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    db->wr.next_mem_gen = 1;
    if (rc == AKV_OK)
        rc = akvi_pool_fill(db);
    if (rc == AKV_OK)
        rc = akvi_mem_add_active(db, *mems, n_mem);
    if (rc == AKV_OK)
        rc = hook("identity");
    if (rc == AKV_OK) {
        m->identity = true;
        rc = akvi_identity_write(db);
    }
    return rc;
}
