/*
 * recover.c — akv_open and akv_close.
 *
 * Opening reconciles three sources: the RocksDB column families that exist,
 * the catalog in `meta` (the truth), and the filter files. Families and
 * files the catalog does not name are leftovers of an interrupted flush or
 * compaction and are removed; memtable families newer than the catalog's
 * flushed generation hold acknowledged writes (recovered by RocksDB from its
 * WAL) and become the memtables again; a slot whose file is missing or
 * corrupt is rebuilt from its SST's data.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "util/codec.h"

#if defined(__SANITIZE_THREAD__)
/* tsan.c: referenced here so that every program that opens a database
 * links it, statically too. */
const char *__tsan_default_suppressions(void);
__attribute__((used)) static const char *(*const keep_tsan_suppressions)(void) = __tsan_default_suppressions;
#endif

#define ID_MAGIC   "AKVI"
#define ID_VERSION 1

static const char *layout_name(uint32_t l)
{
    return l == AKV_LAYOUT_ORDERED ? "ordered" : "hash";
}

static char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", a, b);
    return p;
}

static int make_dir(const char *p)
{
    if (mkdir(p, 0755) != 0 && errno != EEXIST)
        return akvi_err(AKV_EIO, "cannot create directory %s: %s", p, strerror(errno));
    return AKV_OK;
}

/* ---- identity ------------------------------------------------------------ */

static int write_identity(akv_db *db)
{
    uint8_t buf[32];
    akv_wbuf w = {buf, 0};
    akv_w_bytes(&w, ID_MAGIC, 4);
    akv_w_u32(&w, ID_VERSION);
    akv_w_u32(&w, (uint32_t)db->layout);
    akv_w_u64(&w, db->seed);
    akv_w_u64(&w, XXH64(buf, w.len, 0));
    return akvi_meta_put(db, "identity", buf, w.len, true);
}

static int check_identity(akv_db *db, const uint8_t *buf, size_t len)
{
    akv_rbuf t = {buf, len, 20, false};
    if (len != 28 || memcmp(buf, ID_MAGIC, 4) != 0 || akv_r_u64(&t) != XXH64(buf, 20, 0))
        return akvi_err(AKV_ECORRUPT, "database identity record is damaged");
    akv_rbuf r = {buf, 20, 4, false};
    uint32_t ver = akv_r_u32(&r), layout = akv_r_u32(&r);
    uint64_t seed = akv_r_u64(&r);
    if (ver != ID_VERSION)
        return akvi_err(AKV_ENOTSUP, "database identity version %u is not supported", ver);
    if (layout != AKV_LAYOUT_HASH && layout != AKV_LAYOUT_ORDERED)
        return akvi_err(AKV_ECORRUPT, "database identity names unknown layout %u", layout);
    if (db->opt.layout != AKV_LAYOUT_AUTO && layout != (uint32_t)db->opt.layout)
        return akvi_err(AKV_EINVAL, "database was created with layout '%s', opened with '%s'",
                        layout_name(layout), layout_name((uint32_t)db->opt.layout));
    if (db->opt.seed && db->opt.seed != seed)
        return akvi_err(AKV_EINVAL, "database was created with hash seed %llu, opened with seed %llu",
                        (unsigned long long)seed, (unsigned long long)db->opt.seed);
    db->layout = (akv_layout)layout;
    db->seed = seed;
    return AKV_OK;
}

/* ---- column families ----------------------------------------------------- */

typedef struct cf_set {
    char **names;
    rocksdb_column_family_handle_t **h;
    size_t n;
    bool *used;
} cf_set;

static rocksdb_column_family_handle_t *take_cf(cf_set *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!s->used[i] && strcmp(s->names[i], name) == 0) {
            s->used[i] = true;
            return s->h[i];
        }
    return NULL;
}

static int open_rocks(akv_db *db, bool exists, cf_set *s)
{
    char *err = NULL;
    size_t n = 0;
    char **listed = exists ? rocksdb_list_column_families(db->dbopt, db->rdir, &n, &err) : NULL;
    if (err)
        return akvi_rocks_err(err, "listing column families");
    bool has_meta = false;
    for (size_t i = 0; i < n; i++)
        has_meta |= strcmp(listed[i], "meta") == 0;
    size_t total = n ? n + !has_meta : 2;
    s->names = calloc(total, sizeof *s->names);
    s->h = calloc(total, sizeof *s->h);
    s->used = calloc(total, sizeof *s->used);
    const rocksdb_options_t **opts = calloc(total, sizeof *opts);
    if (!s->names || !s->h || !s->used || !opts) {
        free(opts);
        if (listed)
            rocksdb_list_column_families_destroy(listed, n);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        s->names[k++] = strdup(listed[i]);
    if (!n)
        s->names[k++] = strdup("default");
    if (!has_meta)
        s->names[k++] = strdup("meta");
    if (listed)
        rocksdb_list_column_families_destroy(listed, n);
    s->n = k;
    for (size_t i = 0; i < k; i++)
        opts[i] = akvi_cf_options_for(db, s->names[i]);
    db->rdb = rocksdb_open_column_families(db->dbopt, db->rdir, (int)k, (const char *const *)s->names, opts,
                                           s->h, &err);
    free(opts);
    if (err) {
        db->rdb = NULL;
        return akvi_rocks_err(err, "opening RocksDB");
    }
    db->default_cf = take_cf(s, "default");
    db->meta_cf = take_cf(s, "meta");
    return AKV_OK;
}

/* `drop`: only after a successful recovery may unclaimed families go (a
 * refused open must leave the database exactly as it was). */
static void free_cf_set(akv_db *db, cf_set *s, bool drop)
{
    for (size_t i = 0; i < s->n; i++) {
        if (!s->used[i] && s->h && s->h[i]) {
            /* Unclaimed after recovery: not named by the catalog. */
            if (drop)
                akvi_cf_drop(db, s->h[i]);
            rocksdb_column_family_handle_destroy(s->h[i]);
        }
        free(s->names[i]);
    }
    free(s->names);
    free(s->h);
    free(s->used);
}

/* ---- runs and slots ------------------------------------------------------ */

static int load_slot(akv_db *db, akvi_run *r, size_t j)
{
    const akvi_cat_sst *s = &r->info.ssts[j];
    akv_filter *f = NULL;
    int rc = akvi_slot_read_file(db->fdir, r->info.id, s->id, &f);
    if (rc != AKV_OK) {
        akvi_log(db, "warning: filter slot %llu-%llu unusable (%s); rebuilding it from its SST",
                 (unsigned long long)r->info.id, (unsigned long long)s->id, akv_errmsg());
        rc = akvi_build_from_sst(db, r, j, 0, &f);
        if (rc == AKV_OK)
            rc = akvi_slot_write_file(db->fdir, r->info.id, s->id, f);
        if (rc != AKV_OK) {
            akv_filter_destroy(f);
            return rc;
        }
    }
    akvi_slot_init(&r->slots[j], f);
    return AKV_OK;
}

static int load_run(akv_db *db, akvi_cat_run *cr, cf_set *cfs, akvi_run **out)
{
    char name[64];
    akvi_run *r = calloc(1, sizeof *r);
    if (!r)
        return akvi_err(AKV_ENOMEM, "out of memory");
    atomic_init(&r->refs, 1);
    r->db = db;
    r->info = *cr;
    memset(cr, 0, sizeof *cr); /* ownership moves into the run */
    r->slots = calloc(r->info.n_sst ? r->info.n_sst : 1, sizeof *r->slots);
    snprintf(name, sizeof name, "run.%llu", (unsigned long long)r->info.id);
    r->cf = take_cf(cfs, name);
    snprintf(name, sizeof name, "rmap.%llu", (unsigned long long)r->info.id);
    r->rmap_cf = take_cf(cfs, name);
    int rc = AKV_OK;
    if (!r->slots)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    else if (!r->cf || (db->layout == AKV_LAYOUT_ORDERED && !r->rmap_cf))
        rc = akvi_err(AKV_ECORRUPT, "the catalog names run %llu but its column family is missing",
                      (unsigned long long)r->info.id);
    for (size_t j = 0; rc == AKV_OK && j < r->info.n_sst; j++)
        rc = load_slot(db, r, j);
    if (rc != AKV_OK) {
        akvi_run_unref(r);
        return rc;
    }
    *out = r;
    return AKV_OK;
}

/* Delete filter files the catalog does not name, and temp files. */
static void clean_files(akv_db *db, const akvi_version *v)
{
    DIR *d = opendir(db->fdir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        bool keep = false;
        for (size_t i = 0; !keep && i < v->n_run; i++)
            for (size_t j = 0; !keep && j < v->runs[i]->info.n_sst; j++) {
                char name[64];
                akvi_filter_file_name(v->runs[i]->info.id, v->runs[i]->info.ssts[j].id, name, sizeof name);
                keep = strcmp(name, e->d_name) == 0;
            }
        if (!keep) {
            char *p = path_join(db->fdir, e->d_name);
            if (p)
                unlink(p);
            free(p);
        }
    }
    if (d)
        closedir(d);
    d = opendir(db->tdir);
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = path_join(db->tdir, e->d_name);
        if (p)
            unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
}

/* ---- open ---------------------------------------------------------------- */

static uint64_t parse_gen(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) != 0 || !name[n])
        return 0;
    char *end;
    unsigned long long v = strtoull(name + n, &end, 10);
    return *end ? 0 : (uint64_t)v;
}

static int cmp_mem_desc(const void *a, const void *b)
{
    const akvi_mem *x = *(akvi_mem *const *)a, *y = *(akvi_mem *const *)b;
    return (x->gen < y->gen) - (x->gen > y->gen);
}

/* Memtable families newer than the catalog's flushed generation. */
static int load_mems(akv_db *db, cf_set *cfs, akvi_mem ***out, size_t *n_out)
{
    akvi_mem **mems = calloc(cfs->n + 1, sizeof *mems);
    if (!mems)
        return akvi_err(AKV_ENOMEM, "out of memory");
    size_t n = 0;
    uint64_t maxgen = db->flushed_mem_gen;
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < cfs->n; i++) {
        uint64_t gen = parse_gen(cfs->names[i], "mem.");
        if (gen == 0 || gen <= db->flushed_mem_gen || cfs->used[i])
            continue;
        cfs->used[i] = true;
        rc = akvi_mem_create(db, gen, cfs->h[i], &mems[n]);
        if (rc == AKV_OK)
            rc = akvi_mem_recover(db, mems[n++]);
        if (gen > maxgen)
            maxgen = gen;
    }
    db->next_mem_gen = maxgen + 1;
    if (rc == AKV_OK && n == 0) {
        char name[64];
        rocksdb_column_family_handle_t *cf;
        uint64_t gen = db->next_mem_gen++;
        snprintf(name, sizeof name, "mem.%llu", (unsigned long long)gen);
        rc = akvi_cf_create(db, name, -1, &cf);
        if (rc == AKV_OK)
            rc = akvi_mem_create(db, gen, cf, &mems[n++]);
    }
    qsort(mems, n, sizeof *mems, cmp_mem_desc);
    *out = mems;
    *n_out = n;
    return rc;
}

static int load_state(akv_db *db, bool exists, cf_set *cfs)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_meta_get(db, "identity", &buf, &len);
    bool fresh = rc == AKV_NOTFOUND;
    if (fresh) {
        if (exists && cfs->n > 2)
            return akvi_err(AKV_ECORRUPT, "%s holds RocksDB data but no adaptkv identity", db->dir);
        db->layout = db->opt.layout == AKV_LAYOUT_AUTO ? AKV_LAYOUT_HASH : db->opt.layout;
        db->seed = db->opt.seed;
        while (db->seed == 0 && getrandom(&db->seed, sizeof db->seed, 0) != sizeof db->seed)
            ;
        db->next_run_id = 1;
        /* Catalog first: a crash before the identity is written leaves a
         * directory that still opens as fresh. */
        rc = akvi_commit(db, NULL, 0, 0);
        if (rc == AKV_OK)
            rc = write_identity(db);
    } else if (rc == AKV_OK) {
        rc = check_identity(db, buf, len);
    }
    free(buf);
    if (rc != AKV_OK || fresh)
        return rc;
    if ((rc = akvi_meta_get(db, "misslog", &buf, &len)) == AKV_OK) {
        if (akvi_misslog_decode(db->ml, buf, len) != AKV_OK)
            akvi_log(db, "warning: miss log record unreadable (%s); starting empty", akv_errmsg());
        free(buf);
    }
    return AKV_OK;
}

static int load_catalog(akv_db *db, cf_set *cfs, akvi_run ***runs, size_t *n_run)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_meta_get(db, "catalog", &buf, &len);
    if (rc == AKV_NOTFOUND)
        return akvi_err(AKV_ECORRUPT, "catalog record is missing from %s", db->dir);
    if (rc != AKV_OK)
        return rc;
    akvi_catalog c;
    rc = akvi_catalog_decode(buf, len, &c);
    free(buf);
    if (rc != AKV_OK)
        return rc;
    db->next_run_id = c.next_run_id;
    db->flushed_mem_gen = c.flushed_mem_gen;
    *runs = calloc(c.n_run + 1, sizeof **runs);
    *n_run = 0;
    if (!*runs)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; rc == AKV_OK && i < c.n_run; i++) {
        rc = load_run(db, &c.runs[i], cfs, &(*runs)[i]);
        if (rc == AKV_OK)
            (*n_run)++;
    }
    akvi_catalog_free(&c);
    return rc;
}

static void db_free(akv_db *db)
{
    akvi_bg_stop(db);
    if (db->cur)
        akvi_version_unref(db->cur);
    db->cur = NULL;
    if (db->guard)
        akv_filter_destroy(db->guard);
    akvi_rocks_teardown(db);
    akvi_misslog_destroy(db->ml);
    pthread_rwlock_destroy(&db->vmu);
    pthread_mutex_destroy(&db->wmu);
    pthread_mutex_destroy(&db->bgmu);
    pthread_mutex_destroy(&db->catmu);
    pthread_cond_destroy(&db->stall_cv);
    pthread_cond_destroy(&db->bg_cv);
    pthread_cond_destroy(&db->done_cv);
    pthread_rwlock_destroy(&db->guard_lock);
    free((char *)db->opt.slot_policy);
    free(db->dir);
    free(db->rdir);
    free(db->fdir);
    free(db->tdir);
    free(db);
}

static int setup(akv_db *db, const char *dir, const akv_options *opt)
{
    db->opt = *opt;
    db->opt.slot_policy = opt->slot_policy ? strdup(opt->slot_policy) : NULL;
    /* A successful open prints nothing: the policy chosen is in akv_slots
     * and kvshell's `filters`, not on stderr. */
    int rc = akvi_policy_parse(opt->slot_policy, &db->policy, NULL, 0);
    if (rc != AKV_OK)
        return rc;
    db->dir = strdup(dir);
    db->rdir = path_join(dir, "rocksdb");
    db->fdir = path_join(dir, "filters");
    db->tdir = path_join(dir, "tmp");
    db->ml = akvi_misslog_create(opt->miss_log_bytes);
    if (!db->dir || !db->rdir || !db->fdir || !db->tdir || !db->ml)
        return akvi_err(AKV_ENOMEM, "out of memory");
    return AKV_OK;
}

static int open_dirs(akv_db *db, bool *exists)
{
    struct stat st;
    char *cur = path_join(db->rdir, "CURRENT");
    *exists = cur && stat(cur, &st) == 0;
    free(cur);
    if (!*exists && !db->opt.create_if_missing)
        return akvi_err(AKV_EINVAL, "database %s does not exist (create_if_missing is off)", db->dir);
    if (*exists && db->opt.error_if_exists)
        return akvi_err(AKV_EEXIST, "database %s already exists (error_if_exists is on)", db->dir);
    int rc = make_dir(db->dir);
    if (rc == AKV_OK)
        rc = make_dir(db->fdir);
    if (rc == AKV_OK)
        rc = make_dir(db->tdir);
    return rc;
}

int akv_open(const char *dir, const akv_options *opt_in, akv_db **out)
{
    if (!out)
        return akvi_err(AKV_EINVAL, "akv_open: NULL output handle");
    *out = NULL;
    if (!dir || !*dir)
        return akvi_err(AKV_EINVAL, "akv_open: no directory given");
    akv_options defaults;
    akv_options_init(&defaults);
    const akv_options *opt = opt_in ? opt_in : &defaults;
    int rc = akvi_check_options(opt);
    if (rc != AKV_OK)
        return rc;
    akv_db *db = calloc(1, sizeof *db);
    if (!db)
        return akvi_err(AKV_ENOMEM, "out of memory");
    /* Writer-preferring: a stream of readers pinning versions must not
     * starve the background thread's installs. */
    pthread_rwlockattr_t va;
    pthread_rwlockattr_init(&va);
    pthread_rwlockattr_setkind_np(&va, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&db->vmu, &va);
    pthread_rwlockattr_destroy(&va);
    pthread_mutex_init(&db->wmu, NULL);
    pthread_mutex_init(&db->bgmu, NULL);
    pthread_mutex_init(&db->catmu, NULL);
    pthread_cond_init(&db->stall_cv, NULL);
    pthread_cond_init(&db->bg_cv, NULL);
    pthread_cond_init(&db->done_cv, NULL);
    pthread_rwlock_init(&db->guard_lock, NULL);
    bool exists = false;
    cf_set cfs = {0};
    akvi_run **runs = NULL;
    akvi_mem **mems = NULL;
    size_t n_run = 0, n_mem = 0;
    rc = setup(db, dir, opt);
    if (rc == AKV_OK)
        rc = open_dirs(db, &exists);
    if (rc == AKV_OK)
        rc = akvi_rocks_setup(db);
    if (rc == AKV_OK)
        rc = open_rocks(db, exists, &cfs);
    if (rc == AKV_OK)
        rc = load_state(db, exists, &cfs);
    if (rc == AKV_OK) /* after the miss log is loaded: the guard encodes its negatives */
        rc = akvi_guard_init(db);
    if (rc == AKV_OK)
        rc = load_catalog(db, &cfs, &runs, &n_run);
    if (rc == AKV_OK)
        rc = load_mems(db, &cfs, &mems, &n_mem);
    if (rc == AKV_OK) {
        db->cur = akvi_version_new(n_mem, n_run);
        if (!db->cur)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
    }
    if (db->cur) {
        memcpy(db->cur->mems, mems, n_mem * sizeof *mems);
        memcpy(db->cur->runs, runs, n_run * sizeof *runs);
        n_mem = n_run = 0;
        if (rc == AKV_OK)
            clean_files(db, db->cur);
    }
    for (size_t i = 0; i < n_mem; i++)
        akvi_mem_unref(mems[i]);
    for (size_t i = 0; i < n_run; i++)
        akvi_run_unref(runs[i]);
    free(mems);
    free(runs);
    if (db->rdb)
        free_cf_set(db, &cfs, rc == AKV_OK);
    if (rc == AKV_OK)
        rc = akvi_bg_start(db);
    if (rc != AKV_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", akv_errmsg());
        db_free(db);
        return akvi_err(rc, "%s", msg);
    }
    *out = db;
    return AKV_OK;
}

akv_layout akv_db_layout(const akv_db *db)
{
    return db->layout;
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
    if (akvi_misslog_encode(db->ml, &buf, &len) == AKV_OK) {
        rc = akvi_meta_put(db, "misslog", buf, len, true);
        free(buf);
    }
    if (rc == AKV_OK && saved != AKV_OK)
        rc = akvi_err(saved, "akv_close: could not save adapted filters; see the log");
    db_free(db);
    return rc;
}
