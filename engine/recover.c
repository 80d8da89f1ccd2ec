/*
 * recover.c — akv_open.
 *
 * Opening an existing database reconciles four sources: the identity file,
 * the catalog files (the truth about runs), RocksDB (its families and the
 * SST files its MANIFEST records) and the filter files. It runs in two
 * phases (docs/reliability.md):
 *
 *   1. RocksDB opened read only. Everything is checked and loaded: the
 *      identity, the catalog against RocksDB's files (count, key range,
 *      entries and size of every SST), every family and filter file
 *      accounted for, filters read and checked against their SSTs (or
 *      rebuilt in memory from data), memtables re-read. Any refusal
 *      happens here, and leaves the directory byte for byte as it was.
 *   2. RocksDB reopened for writing (it replays its WAL and writes a new
 *      MANIFEST); leftovers are dropped, rebuilt filters written, formats
 *      of older versions upgraded, the background thread started.
 *
 * Open deletes only what the catalog accounts for: families and filter
 * files of runs it no longer names (ids below its reserved bound),
 * memtables at or below its flushed generation, temp files. Anything newer
 * than the catalog, a missing memtable generation or a run RocksDB does not
 * hold as the catalog records it means the catalog and the data disagree:
 * open refuses and names akv_repair.
 */
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/convert.h"
#include "engine/create.h"
#include "engine/inspect.h"
#include "engine/internal.h"
#include "engine/lockorder.h"
#include "engine/runstore.h"
#include "engine/slotload.h"
#include "util/order.h"

#if defined(__SANITIZE_THREAD__)
/* tsan.c: referenced here so that every program that opens a database
 * links it, statically too. */
const char *__tsan_default_suppressions(void);
__attribute__((used)) static const char *(*const keep_tsan_suppressions)(void) = __tsan_default_suppressions;
#endif

#define CF_FREE     AKVI_CF_FREE
#define CF_USED     AKVI_CF_USED
#define CF_LEFTOVER AKVI_CF_LEFTOVER

static const char *layout_name(uint32_t l)
{
    return l == AKV_LAYOUT_ORDERED ? "ordered" : "hash";
}

/* The identity against the options: a database is never reopened with
 * another layout or seed. */
static int adopt_identity(akv_db *db, uint32_t layout, uint64_t seed)
{
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

/* ---- runs and slots ------------------------------------------------------ */

/* A run that is its files in DIR/runs (no family): their readers, each file
 * what the catalog records (its size and entry count), else refused. */
static int open_files_run(akv_db *db, akvi_run *r)
{
    int rc = akvi_run_open_files(db, r);
    if (rc != AKV_OK)
        return akvi_refuse(AKVI_DMG_RUN_FILE, rc == AKV_ENOMEM ? rc : AKV_ECORRUPT, "run %llu: %s",
                           (unsigned long long)r->info.id, akv_errmsg());
    for (size_t j = 0; j < r->info.n_sst; j++) {
        const akvi_cat_sst *s = &r->info.ssts[j];
        akvi_sstr_props p;
        akvi_rs_sst_props(r->files[j], &p);
        struct stat st;
        const char *path = akvi_rs_sst_path(r->files[j]);
        if (stat(path, &st) != 0 || (uint64_t)st.st_size != s->bytes || p.entries != s->keys)
            return akvi_refuse(AKVI_DMG_RUN_FILE, AKV_ECORRUPT,
                               "run %llu: its file %s (%llu entries, %llu bytes) is not the catalog's record "
                               "of SST %llu (%llu entries, %llu bytes)",
                               (unsigned long long)r->info.id, path, (unsigned long long)p.entries,
                               (unsigned long long)st.st_size, (unsigned long long)s->id,
                               (unsigned long long)s->keys, (unsigned long long)s->bytes);
    }
    return AKV_OK;
}

static int load_run(akv_db *db, akvi_cat_run *cr, akvi_cf_set *cfs, bool *upgraded, akvi_run **out)
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
    if (!r->info.files) {
        snprintf(name, sizeof name, "run.%llu", (unsigned long long)r->info.id);
        r->cf = akvi_cf_take(cfs, name);
        snprintf(name, sizeof name, "rmap.%llu", (unsigned long long)r->info.id);
        r->rmap_cf = akvi_cf_take(cfs, name);
    }
    int rc = AKV_OK;
    if (!r->slots)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    else if (r->info.files)
        rc = open_files_run(db, r);
    else if (!r->cf || (db->layout == AKV_LAYOUT_ORDERED && !r->rmap_cf))
        rc = akvi_refuse(AKVI_DMG_MANIFEST_CUT, AKV_ECORRUPT,
                         "the catalog names run %llu but its column family is missing",
                         (unsigned long long)r->info.id);
    size_t loaded = 0;
    while (rc == AKV_OK && loaded < r->info.n_sst) {
        rc = akvi_slot_load(db, r, loaded, upgraded);
        if (rc == AKV_OK)
            loaded++;
    }
    if (rc != AKV_OK) {
        /* Slots past the failure were never initialised. */
        for (size_t j = loaded; r->slots && j < r->info.n_sst; j++)
            akvi_slot_init(&r->slots[j], NULL);
        akvi_run_unref(r);
        return rc;
    }
    *out = r;
    return AKV_OK;
}

/* Delete filter files of runs the catalog no longer names (ids below its
 * reserve: checked in phase 1), stray temp files, and everything in tmp/. */
static bool run_holds(void *arg, uint64_t run, uint64_t sst)
{
    const akvi_version *v = arg;
    for (size_t i = 0; i < v->n_run; i++)
        if (v->runs[i]->info.id == run && sst < v->runs[i]->info.n_sst)
            return true;
    return false;
}

/* The same for DIR/runs, where an ordered run also has its reverse map. */
static bool run_holds_file(void *arg, uint64_t run, uint64_t sst)
{
    const akvi_version *v = arg;
    for (size_t i = 0; sst == AKVI_RMAP_SST && i < v->n_run; i++)
        if (v->runs[i]->info.id == run && v->runs[i]->db->layout == AKV_LAYOUT_ORDERED)
            return true;
    return sst != AKVI_RMAP_SST && run_holds(arg, run, sst);
}

static void clean_files(akv_db *db, const akvi_version *v)
{
    akvi_sweep_filter_files(db->fdir, run_holds, (void *)v);
    akvi_sweep_run_files(db->sdir, run_holds_file, (void *)v);
    struct dirent *e;
    DIR *d = opendir(db->tdir);
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *p = akvi_path_join(db->tdir, e->d_name);
        if (p)
            unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
}

/* ---- memtables ----------------------------------------------------------- */

static int cmp_mem_desc(const void *a, const void *b)
{
    const akvi_mem *x = *(akvi_mem *const *)a, *y = *(akvi_mem *const *)b;
    return (x->gen < y->gen) - (x->gen > y->gen);
}

/* The memtables the inspection found above the catalog's flushed
 * generation, newest first: in the pool's families (whose states it read),
 * and in mem.<gen> families of an older format. Their keys go back into
 * the guard. */
static int load_mems(akv_db *db, akvi_cf_set *cfs, const akvi_inspection *I, akvi_mem ***out, size_t *n_out)
{
    akvi_mem **mems = calloc(cfs->n + 2, sizeof *mems);
    if (!mems)
        return akvi_err(AKV_ENOMEM, "out of memory");
    size_t n = 0;
    uint64_t maxgen = db->vs.flushed_mem_gen;
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < cfs->n; i++) {
        uint64_t p = akvi_parse_id(cfs->names[i], "pool.");
        bool pool = p && p <= AKVI_POOL_MAX;
        if (cfs->state[i] != CF_FREE || (!pool && !I->gen[i]))
            continue;
        cfs->state[i] = CF_USED; /* the pool, or the memtable, owns the handle */
        if (pool)
            akvi_pool_set(db, p - 1, cfs->h[i], I->pool[i]);
        if (!I->gen[i])
            continue;
        rc = akvi_mem_create(db, I->gen[i], cfs->h[i], pool ? (int)(p - 1) : -1, &mems[n]);
        if (rc == AKV_OK)
            rc = akvi_mem_recover(db, mems[n++]);
        maxgen = I->gen[i] > maxgen ? I->gen[i] : maxgen;
    }
    db->wr.next_mem_gen = maxgen + 1;
    akvi_sort(mems, n, sizeof *mems, cmp_mem_desc);
    *out = mems;
    *n_out = n;
    return rc;
}

/* ---- open ---------------------------------------------------------------- */

typedef struct loaded {
    akvi_cf_set cfs;
    akvi_run **runs;
    size_t n_run;
    akvi_mem **mems;
    size_t n_mem;
    bool legacy;   /* identity and catalog came from the meta family (format 1) */
    bool upgraded; /* key digests computed: the catalog is rewritten */
    bool policy_store;    /* the catalog stores another slot policy, or none: rewritten */
    bool converted;       /* runs kept in families became runs of files: rewritten */
    char policy_note[2 * AKVI_POLICY_MAX + 200]; /* the policy changed: said once it is stored */
} loaded;

static void loaded_free(akv_db *db, loaded *L, bool drop)
{
    for (size_t i = 0; i < L->n_mem; i++)
        akvi_mem_unref(L->mems[i]);
    for (size_t i = 0; i < L->n_run; i++)
        akvi_run_unref(L->runs[i]);
    free(L->mems);
    free(L->runs);
    L->mems = NULL;
    L->runs = NULL;
    L->n_mem = L->n_run = 0;
    akvi_cf_set_free(db, &L->cfs, drop);
}

static int load_misslog(akv_db *db)
{
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_meta_get(db, "misslog", &buf, &len);
    if (rc == AKV_OK && akvi_misslog_decode(db->ml, buf, len) != AKV_OK)
        akvi_log(db, "warning: miss log record unreadable (%s); starting empty", akv_errmsg());
    free(buf);
    return rc == AKV_NOTFOUND || rc == AKV_OK ? AKV_OK : rc;
}

/* The catalog files, or (format 1) the catalog record in the meta family. */
static int read_catalog(akv_db *db, bool legacy, akvi_catalog *c)
{
    char note[700];
    int rc = akvi_catalog_load(db->dir, c, note, sizeof note);
    if (rc == AKV_OK) {
        if (note[0])
            akvi_damage_warn(db, AKVI_DMG_CATALOG_ONE_SLOT, "%s", note);
        if (c->layout != (uint32_t)db->layout || c->seed != db->seed) {
            akvi_catalog_free(c);
            return akvi_refuse(AKVI_DMG_IDENTITY_DAMAGED, AKV_ECORRUPT,
                               "the catalog's layout or seed differs from the identity's");
        }
        return AKV_OK;
    }
    if (rc != AKV_NOTFOUND || !legacy)
        return rc == AKV_NOTFOUND
                   ? akvi_refuse(AKVI_DMG_CATALOG_BOTH, AKV_ECORRUPT, "%s has no catalog file", db->dir)
                   : akvi_refuse(AKVI_DMG_CATALOG_BOTH, rc, "%s", akv_errmsg());
    uint8_t *buf = NULL;
    size_t len = 0;
    rc = akvi_meta_get(db, "catalog", &buf, &len);
    if (rc == AKV_NOTFOUND)
        return akvi_refuse(AKVI_DMG_CATALOG_BOTH, AKV_ECORRUPT, "the catalog record is missing from %s",
                           db->dir);
    if (rc == AKV_OK) {
        rc = akvi_catalog_decode(buf, len, c);
        if (rc != AKV_OK)
            rc = akvi_refuse(AKVI_DMG_CATALOG_BOTH, rc, "%s", akv_errmsg());
    }
    free(buf);
    return rc;
}

/* The slot policy and bits per key the catalog stores, against the options
 * (docs/design.md, "Slot policy"): what the options leave unset comes from
 * the catalog. A change, or a catalog that stores none (versions 1 and 2),
 * is recorded by go_live; a change is also said through the log. */
static int adopt_policy(akv_db *db, const akvi_catalog *c, loaded *L)
{
    if (!c->policy[0]) {
        L->policy_store = true;
        return AKV_OK;
    }
    akvi_policy stored;
    char text[AKVI_POLICY_MAX];
    int rc = akvi_policy_parse(c->policy, c->bits_per_key, &stored, NULL, 0);
    if (rc == AKV_OK)
        rc = akvi_policy_format(&stored, text, sizeof text);
    if (rc != AKV_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", akv_errmsg());
        return akvi_refuse(AKVI_DMG_CATALOG_POLICY, AKV_ECORRUPT,
                           "%s/CATALOG.%u: the stored slot policy '%s' is unusable (%s)", db->dir,
                           (unsigned)(c->seq & 1), c->policy, why);
    }
    if (!db->policy_given) {
        db->policy = stored;
        memcpy(db->policy_text, text, sizeof text);
    }
    if (!db->bits_given)
        db->opt.bits_per_key = c->bits_per_key;
    bool same = memcmp(&stored, &db->policy, sizeof stored) == 0 && c->bits_per_key == db->opt.bits_per_key;
    if (!same)
        snprintf(L->policy_note, sizeof L->policy_note,
                 "slot policy changed from '%s' (%g bits/key) to '%s' (%g bits/key): it applies to SSTs "
                 "built from now on; existing slots keep their kinds",
                 text, c->bits_per_key, db->policy_text, db->opt.bits_per_key);
    L->policy_store = !same || strcmp(c->policy, db->policy_text) != 0;
    return AKV_OK;
}

/* Open's policy over the inspection: a kind of damage the table refuses
 * is refused; past the rest, what the catalog accounts for as gone
 * (families of runs it replaced, an older format's memtable already copied
 * into the pool) is dropped when the open goes live. */
static int act_on(akv_db *db, const akvi_findings *F, akvi_cf_set *cfs)
{
    int rc = akvi_findings_open(db, F);
    for (size_t i = 0; rc == AKV_OK && i < F->n; i++)
        if ((F->v[i].kind == AKVI_DMG_LEFTOVER || F->v[i].kind == AKVI_DMG_MEM_FAMILY_MOVED) &&
            F->v[i].cf != SIZE_MAX)
            cfs->state[F->v[i].cf] = CF_LEFTOVER;
    return rc;
}

/* Phase 1, read only: everything checked and loaded. AKV_NOTFOUND: the
 * directory holds an interrupted create (RocksDB, but no identity and no
 * data), to be created again. */
static int load_existing(akv_db *db, bool have_identity, loaded *L)
{
    int rc = akvi_wal_damage(db, db->opt.wal_strict, NULL, 0);
    if (rc != AKV_OK)
        return rc;
    rc = akvi_cf_set_open(db, true, false, &L->cfs);
    if (rc != AKV_OK)
        return rc == AKV_EIO ? akvi_refuse(AKVI_DMG_MANIFEST_CUT, rc, "%s", akv_errmsg()) : rc;
    if (!have_identity) {
        /* Format 1 kept the identity in the meta family only. */
        uint8_t *buf = NULL;
        size_t len = 0;
        uint32_t layout;
        uint64_t seed;
        rc = akvi_meta_get(db, "identity", &buf, &len);
        if (rc == AKV_NOTFOUND) {
            bool only_meta = true;
            for (size_t i = 0; i < L->cfs.n; i++)
                only_meta &= strcmp(L->cfs.names[i], "default") == 0 ||
                             strcmp(L->cfs.names[i], "meta") == 0 ||
                             akvi_parse_id(L->cfs.names[i], "mem.") != 0 ||
                             akvi_parse_id(L->cfs.names[i], "pool.") != 0;
            return only_meta ? AKV_NOTFOUND
                             : akvi_refuse(AKVI_DMG_IDENTITY_GONE, AKV_ECORRUPT,
                                           "%s holds RocksDB data but no adaptkv identity", db->dir);
        }
        if (rc == AKV_OK)
            rc = akvi_identity_decode(buf, len, &layout, &seed);
        free(buf);
        if (rc == AKV_OK)
            rc = adopt_identity(db, layout, seed);
        if (rc != AKV_OK)
            return rc;
        L->legacy = true;
    }
    akvi_catalog c;
    rc = read_catalog(db, L->legacy, &c);
    if (rc != AKV_OK)
        return rc;
    rc = adopt_policy(db, &c, L);
    if (rc != AKV_OK) {
        akvi_catalog_free(&c);
        return rc;
    }
    if (L->legacy && c.seq > 0)
        akvi_damage_warn(db, AKVI_DMG_IDENTITY_MISSING,
                         "%s/IDENTITY is missing; written again from the meta family's copy", db->dir);
    if (c.next_run_id == 0)
        c.next_run_id = 1;
    db->vs.next_run_id = c.next_run_id;
    db->cat.run_id_bound = c.next_run_id;
    db->vs.flushed_mem_gen = c.flushed_mem_gen;
    db->cat.seq = c.seq;
    akvi_inspection I;
    rc = akvi_inspect(db, &c, &L->cfs, &I);
    if (rc == AKV_OK)
        rc = act_on(db, &I.found, &L->cfs);
    if (rc == AKV_OK)
        rc = load_misslog(db);
    if (rc == AKV_OK)
        rc = akvi_rest_credit_load(db);
    if (rc == AKV_OK) /* after the miss log: the guard encodes its negatives */
        rc = akvi_guard_init(db);
    if (rc == AKV_OK) {
        L->runs = calloc(c.n_run + 1, sizeof *L->runs);
        if (!L->runs)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
    }
    for (size_t i = 0; rc == AKV_OK && i < c.n_run; i++) {
        rc = load_run(db, &c.runs[i], &L->cfs, &L->upgraded, &L->runs[i]);
        if (rc == AKV_OK)
            L->n_run++;
    }
    akvi_catalog_free(&c);
    if (rc == AKV_OK)
        rc = load_mems(db, &L->cfs, &I, &L->mems, &L->n_mem);
    akvi_inspection_free(&I);
    return rc;
}

/* Phase 1 -> 2: RocksDB reopened for writing, every handle rebound. */
static int reopen_rw(akv_db *db, loaded *L)
{
    for (size_t i = 0; i < L->n_run; i++)
        L->runs[i]->cf = L->runs[i]->rmap_cf = NULL;
    for (size_t i = 0; i < L->n_mem; i++)
        L->mems[i]->cf = NULL;
    for (size_t i = 0; i < db->pool.n; i++) /* destroyed with the rest below */
        db->pool.cf[i] = NULL;
    for (size_t i = 0; i < L->cfs.n; i++) {
        if (L->cfs.h[i])
            rocksdb_column_family_handle_destroy(L->cfs.h[i]);
        L->cfs.h[i] = NULL;
    }
    db->rk.meta_cf = db->rk.default_cf = NULL; /* were in L->cfs */
    akvi_rocks_close(db);
    uint8_t *state = malloc(L->cfs.n ? L->cfs.n : 1);
    if (!state)
        return akvi_err(AKV_ENOMEM, "out of memory");
    memcpy(state, L->cfs.state, L->cfs.n);
    akvi_cf_set fresh = {0};
    int rc = akvi_cf_set_open(db, false, false, &fresh);
    if (rc == AKV_OK && fresh.n != L->cfs.n)
        rc = akvi_err(AKV_EIO, "RocksDB's families changed while %s was being opened", db->dir);
    for (size_t i = 0; rc == AKV_OK && i < fresh.n; i++)
        if (strcmp(fresh.names[i], L->cfs.names[i]) != 0)
            rc = akvi_err(AKV_EIO, "RocksDB's families changed while %s was being opened", db->dir);
    if (rc != AKV_OK) {
        free(state);
        akvi_cf_set_free(db, &fresh, false);
        return rc;
    }
    akvi_cf_set_free(db, &L->cfs, false);
    L->cfs = fresh;
    /* default and meta were taken by the open; the rest as in phase 1. */
    for (size_t i = 0; i < L->cfs.n; i++)
        if (L->cfs.state[i] == CF_FREE)
            L->cfs.state[i] = state[i] == CF_USED ? CF_FREE : state[i];
    free(state);
    char name[64];
    for (size_t i = 0; i < L->n_run; i++) {
        akvi_run *r = L->runs[i];
        if (r->info.files)
            continue;
        snprintf(name, sizeof name, "run.%llu", (unsigned long long)r->info.id);
        r->cf = akvi_cf_take(&L->cfs, name);
        snprintf(name, sizeof name, "rmap.%llu", (unsigned long long)r->info.id);
        r->rmap_cf = akvi_cf_take(&L->cfs, name);
    }
    for (size_t i = 0; i < db->pool.n; i++) {
        akvi_pool_name(i, name, sizeof name);
        akvi_pool_set(db, i, akvi_cf_take(&L->cfs, name), db->pool.state[i]);
    }
    for (size_t i = 0; i < L->n_mem; i++) {
        snprintf(name, sizeof name, "mem.%llu", (unsigned long long)L->mems[i]->gen);
        L->mems[i]->cf = L->mems[i]->pool >= 0 ? db->pool.cf[L->mems[i]->pool] : akvi_cf_take(&L->cfs, name);
    }
    return AKV_OK;
}

/* The catalog of the loaded runs, encoded for later reservations; written
 * when `store` (a format upgrade, or a slot policy to record). */
static int adopt_catalog(akv_db *db, const loaded *L, bool store)
{
    akvi_catalog c = {.layout = (uint32_t)db->layout,
                      .seed = db->seed,
                      .seq = db->cat.seq,
                      .next_run_id = db->cat.run_id_bound,
                      .flushed_mem_gen = db->vs.flushed_mem_gen,
                      .bits_per_key = db->opt.bits_per_key,
                      .n_run = L->n_run};
    snprintf(c.policy, sizeof c.policy, "%s", db->policy_text);
    c.runs = calloc(L->n_run ? L->n_run : 1, sizeof *c.runs);
    if (!c.runs)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < L->n_run; i++)
        c.runs[i] = L->runs[i]->info;
    int rc;
    akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
    if (store) {
        /* Both slots: the older format left none. */
        rc = akvi_catalog_store(db, &c);
        if (rc == AKV_OK)
            rc = akvi_catalog_store(db, &c);
    } else {
        rc = akvi_catalog_encode(&c, &db->cat.buf, &db->cat.len);
    }
    akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    free(c.runs);
    return rc;
}

/* Names each run's SSTs in DIR/runs as the files its family holds (a
 * missing or stale name is linked again: the family is the record, the
 * names are derived from it), then opens their readers; such a run becomes
 * a run of files (L->converted: the catalog records it so before its
 * families are dropped, convert_runs). A run whose files cannot be named
 * or opened is read through its family, as before run files
 * (docs/design.md, "Run files"), and said once. */
static void open_run_files(akv_db *db, loaded *L)
{
    akvi_live_sst *l = NULL;
    size_t n = 0;
    if (akvi_live_ssts(db->rk.rdb, &l, &n) != AKV_OK) {
        akvi_log(db, "warning: runs are read through their families: %s", akv_errmsg());
        return;
    }
    for (size_t i = 0; i < L->n_run; i++) {
        akvi_run *r = L->runs[i];
        if (r->info.files)
            continue; /* opened as it loaded */
        int rc = akvi_convert_run(db, l, n, r->info.id, &r->info, true);
        if (rc == AKV_OK)
            rc = akvi_run_open_files(db, r);
        if (rc == AKV_OK) {
            r->info.files = true;
            L->converted = true;
        } else
            akvi_damage_warn(db, AKVI_DMG_RUN_FILE_NAME, "run %llu is read through its family: %s",
                             (unsigned long long)r->info.id, akv_errmsg());
    }
    akvi_live_ssts_free(l, n);
}

/* Once the catalog records them as files: the families of the runs
 * open_run_files converted are leftovers, dropped as the open ends (a
 * crash before that leaves families the next open's inspection finds
 * the catalog no longer needs, and drops). */
static void convert_runs(loaded *L)
{
    for (size_t i = 0; i < L->n_run; i++) {
        akvi_run *r = L->runs[i];
        if (!r->info.files)
            continue;
        for (size_t k = 0; k < L->cfs.n; k++)
            if (L->cfs.h[k] && (L->cfs.h[k] == r->cf || L->cfs.h[k] == r->rmap_cf))
                L->cfs.state[k] = CF_LEFTOVER;
        r->cf = r->rmap_cf = NULL;
    }
}

/* Phase 2: from here on the directory changes. */
static int go_live(akv_db *db, loaded *L)
{
    bool made;
    int rc = reopen_rw(db, L);
    if (rc == AKV_OK) /* filters/ and tmp/ are recreated if someone removed them */
        rc = akvi_make_dir(db->fdir, &made);
    if (rc == AKV_OK)
        rc = akvi_make_dir(db->tdir, &made);
    /* The pool: created once for a database of an older format (or where
     * a family of it went missing), families of flushed memtables
     * emptied, and a free one taken for the active memtable. */
    if (rc == AKV_OK)
        rc = akvi_pool_fill(db);
    if (rc == AKV_OK)
        rc = akvi_pool_empty_stale(db);
    /* An older format's memtables move into the pool, each copied in one
     * synced batch before its own family is dropped (a crash in between:
     * load_mems takes the copy and drops the family). */
    for (size_t i = 0; rc == AKV_OK && i < L->n_mem; i++) {
        akvi_mem *m = L->mems[i];
        size_t idx;
        if (m->pool >= 0)
            continue;
        rc = akvi_pool_adopt(db, m->cf, m->gen, &idx);
        if (rc == AKV_OK) {
            akvi_cf_drop(db, m->cf);
            rc = atomic_load(&db->bg.error);
            rocksdb_column_family_handle_destroy(m->cf);
            m->cf = db->pool.cf[idx];
            m->pool = (int)idx;
        }
    }
    if (rc == AKV_OK)
        open_run_files(db, L);
    if (rc == AKV_OK)
        rc = akvi_mem_add_active(db, L->mems, &L->n_mem);
    if (rc == AKV_OK)
        rc = adopt_catalog(db, L, L->legacy || L->upgraded || L->policy_store || L->converted);
    if (rc == AKV_OK && L->converted)
        convert_runs(L);
    if (rc == AKV_OK && L->policy_note[0])
        akvi_log(db, "%s", L->policy_note);
    if (rc == AKV_OK && L->legacy) {
        rc = akvi_identity_write(db);
        if (rc == AKV_OK) {
            char *err = NULL;
            rocksdb_delete_cf(db->rk.rdb, db->rk.wo_sync, db->rk.meta_cf, "catalog", 7, &err);
            if (err)
                rc = akvi_rocks_err(err, "removing the format-1 catalog record");
        }
    }
    bool wrote = false;
    for (size_t i = 0; rc == AKV_OK && i < L->n_run; i++)
        for (size_t j = 0; rc == AKV_OK && j < L->runs[i]->info.n_sst; j++) {
            rc = akvi_slot_save(&L->runs[i]->slots[j], db->fdir, L->runs[i]->info.id,
                                L->runs[i]->info.ssts[j].id);
            wrote |= rc > 0;
            rc = rc > 0 ? AKV_OK : rc;
        }
    if (rc == AKV_OK && wrote)
        rc = akvi_fsync_dir(db->fdir);
    return rc;
}

/* ---- akv_open ------------------------------------------------------------ */

/* What the directory is, before RocksDB touches it. */
typedef enum { OPEN_EXISTING, OPEN_LEGACY, OPEN_CREATE } open_mode;

static int inspect(akv_db *db, open_mode *mode)
{
    akvi_findings F = {0};
    akvi_dir_kind kind = AKVI_DIR_NEW;
    uint32_t layout = 0;
    uint64_t seed = 0;
    int rc = akvi_inspect_dir(db, &F, &kind, &layout, &seed);
    if (rc == AKV_OK)
        rc = akvi_findings_open(db, &F);
    akvi_findings_free(&F);
    if (rc != AKV_OK)
        return rc;
    *mode = kind == AKVI_DIR_NEW ? OPEN_CREATE : kind == AKVI_DIR_IDENTIFIED ? OPEN_EXISTING : OPEN_LEGACY;
    return kind == AKVI_DIR_IDENTIFIED ? adopt_identity(db, layout, seed) : AKV_OK;
}

/* One open; `missing_ok`: it may open RocksDB without paranoid checks
 * when its MANIFEST names a missing SST (see akvi_cf_set_open). */
static int open_once(const char *dir, const akv_options *opt, bool missing_ok, bool background, akv_db **out)
{
    int rc;
    akv_db *db = akvi_db_new(dir, opt, &rc);
    if (!db)
        return rc;
    db->missing_ok = missing_ok;
    open_mode mode = OPEN_CREATE;
    loaded L = {0};
    akvi_created made = {0};
    /* The lock before anything is read; a directory to create is made
     * first, then locked (a racing creator finds it and waits its turn). */
    rc = akvi_dir_lock(db);
    if (rc == AKV_NOTFOUND) {
        rc = db->opt.create_if_missing
                 ? akvi_make_dir(db->dir, &made.dir)
                 : akvi_err(AKV_EINVAL, "database %s does not exist (create_if_missing is off)", db->dir);
        if (rc == AKV_OK)
            rc = akvi_dir_lock(db);
        if (rc == AKV_NOTFOUND)
            rc = akvi_err(AKV_EIO, "database directory %s vanished while it was being created", db->dir);
    }
    if (rc == AKV_OK)
        rc = inspect(db, &mode);
    if (rc == AKV_OK && mode == OPEN_CREATE && !db->opt.create_if_missing)
        rc = akvi_err(AKV_EINVAL, "database %s does not exist (create_if_missing is off)", db->dir);
    if (rc == AKV_OK && mode != OPEN_CREATE && db->opt.error_if_exists)
        rc = akvi_err(AKV_EEXIST, "database %s already exists (error_if_exists is on)", db->dir);
    if (rc == AKV_OK && mode != OPEN_CREATE) {
        rc = load_existing(db, mode == OPEN_EXISTING, &L);
        if (rc == AKV_NOTFOUND) { /* an interrupted create: create again */
            loaded_free(db, &L, false);
            akvi_pool_free(db);
            akvi_rocks_teardown(db);
            rc = akvi_rocks_setup(db);
            mode = OPEN_CREATE;
            if (rc == AKV_OK && !db->opt.create_if_missing)
                rc = akvi_err(AKV_EINVAL, "database %s does not exist (create_if_missing is off)", db->dir);
        }
        if (rc == AKV_OK && mode != OPEN_CREATE)
            rc = go_live(db, &L);
    }
    if (rc == AKV_OK && mode == OPEN_CREATE)
        rc = akvi_create(db, &L.cfs, &L.mems, &L.n_mem, &made);
    if (rc == AKV_OK) {
        db->vs.cur = akvi_version_new(L.n_mem, L.n_run);
        if (!db->vs.cur)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
    }
    if (rc == AKV_OK) {
        if (L.n_mem)
            memcpy(db->vs.cur->mems, L.mems, L.n_mem * sizeof *L.mems);
        if (L.n_run)
            memcpy(db->vs.cur->runs, L.runs, L.n_run * sizeof *L.runs);
        akvi_sort_runs(db->vs.cur->runs, L.n_run);
        L.n_mem = L.n_run = 0;
        clean_files(db, db->vs.cur);
        akvi_guard_refit(db); /* sized for the memtables just re-read */
    }
    loaded_free(db, &L, rc == AKV_OK);
    if (rc == AKV_OK && background)
        rc = akvi_bg_start(db);
    if (rc != AKV_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", akv_errmsg());
        if (mode == OPEN_CREATE) {
            akvi_pool_free(db);
            akvi_rocks_teardown(db);
            akvi_uncreate(db, &made);
        }
        akvi_db_free(db);
        return akvi_err(rc, "%s", msg);
    }
    *out = db;
    return AKV_OK;
}

/* akv_open, with or without the background threads (repair's check that
 * the repaired database opens runs none: no flush or compaction changes
 * what it checked). */
static int open_db(const char *dir, const akv_options *opt_in, bool background, akv_db **out)
{
    if (!out)
        return akvi_err(AKV_EINVAL, "akv_open: NULL output handle");
    *out = NULL;
    if (!dir || !*dir)
        return akvi_err(AKV_EINVAL, "akv_open: no directory given");
    akv_options opt;
    int rc = akvi_options_resolve(opt_in, &opt);
    if (rc != AKV_OK)
        return rc;
    rc = open_once(dir, &opt, true, background, out);
    if (rc != AKV_OK || !(*out)->missing_relaxed)
        return rc;
    /* Opened without RocksDB's paranoid checks; the families that held the
     * missing files are dropped now. Open again with the checks on. */
    rc = akv_close(*out);
    *out = NULL;
    if (rc != AKV_OK)
        return akvi_refuse(AKVI_DMG_SST_MISSING, rc, "%s", akv_errmsg());
    return open_once(dir, &opt, false, background, out);
}

int akv_open(const char *dir, const akv_options *opt_in, akv_db **out)
{
    return open_db(dir, opt_in, true, out);
}

int akvi_open_quiet(const char *dir, const akv_options *opt, akv_db **out)
{
    return open_db(dir, opt, false, out);
}
