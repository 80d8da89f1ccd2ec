/*
 * repair.c — akv_repair: salvage what the run families and SST files still
 * hold, rebuild the catalog and the filters, and say exactly what was lost
 * (docs/reliability.md, "Repair").
 *
 * Sources, most trusted first: the catalog (if one loads), the filter
 * files (each repeats its SST's catalog entry), RocksDB's record of its SST
 * files, and the data itself, which every run is read back from in full.
 * Repair sits beside recover.c at the top of the engine and shares the
 * handle (db.c), the identity (identity.c) and the family set (cfset.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/create.h"
#include "engine/inspect.h"
#include "engine/internal.h"
#include "engine/lockorder.h"
#include "engine/runstore.h"
#include "engine/salvage.h"
#include "engine/sstwriter.h"
#include "util/order.h"
#include "util/shard.h"

/* ---- the report ---------------------------------------------------------- */

typedef struct rep {
    akv_db *db; /* NULL once freed: then the log hook below */
    void (*log)(void *arg, const char *msg);
    void *log_arg;
    akv_repair_report r;
    char *text;
    size_t len, cap;
} rep;

static void note(rep *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(rep *R, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (R->db)
        akvi_log(R->db, "repair: %s", line);
    else if (R->log) {
        char m[800];
        snprintf(m, sizeof m, "repair: %s", line);
        R->log(R->log_arg, m);
    } else
        fprintf(stderr, "adaptkv: repair: %s\n", line);
    size_t n = strlen(line);
    if (R->len + n + 2 > R->cap) {
        size_t cap = R->cap ? 2 * R->cap : 1024;
        while (cap < R->len + n + 2)
            cap *= 2;
        char *t = realloc(R->text, cap);
        if (!t)
            return;
        R->text = t;
        R->cap = cap;
    }
    memcpy(R->text + R->len, line, n);
    R->len += n;
    R->text[R->len++] = '\n';
    R->text[R->len] = 0;
}

/* ---- RocksDB's own files ------------------------------------------------- */

/* Close a RocksDB opened only to look (every handle destroyed first). */
static void close_look(akv_db *db, akvi_cf_set *s)
{
    akvi_cf_set_free(db, s, false);
    akvi_rocks_close(db);
}

static int cmp_desc_str(const void *a, const void *b)
{
    return -strcmp(*(char *const *)a, *(char *const *)b);
}

/* A missing CURRENT: point it at the newest MANIFEST that opens. */
static int restore_current(akv_db *db, rep *R)
{
    if (akvi_path_exists_in(db->rdir, "CURRENT"))
        return AKV_OK;
    DIR *d = opendir(db->rdir);
    if (!d)
        return akvi_err(AKV_ECORRUPT, "cannot repair %s: it has no RocksDB directory", db->dir);
    char *names[256] = {0};
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256)
        if (strncmp(e->d_name, "MANIFEST-", 9) == 0 && strchr(e->d_name, '.') == NULL)
            names[n++] = strdup(e->d_name);
    closedir(d);
    /* Same width (six digits or more): the newest sorts last. */
    akvi_sort(names, n, sizeof *names, cmp_desc_str);
    int rc =
        akvi_err(AKV_ECORRUPT, "cannot repair %s: rocksdb/CURRENT is missing and no MANIFEST opens", db->dir);
    for (size_t i = 0; i < n && rc != AKV_OK; i++) {
        char line[300];
        int k = snprintf(line, sizeof line, "%s\n", names[i]);
        if (akvi_file_write_atomic(db->rdir, "CURRENT", (const uint8_t *)line, (size_t)k) != AKV_OK)
            break;
        akvi_cf_set probe = {0};
        if (akvi_cf_set_open(db, true, false, &probe) == AKV_OK) {
            note(R, "rocksdb/CURRENT was missing; restored, naming %s", names[i]);
            rc = AKV_OK;
        }
        close_look(db, &probe);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    if (rc != AKV_OK) {
        char *c = akvi_path_join(db->rdir, "CURRENT");
        if (c)
            unlink(c);
        free(c);
    }
    return rc;
}

/* SST files RocksDB no longer records would be deleted by its next
 * read-write open: move them to DIR/lost/ first. */
static int set_aside_orphans(akv_db *db, rep *R, char ***out, size_t *n_out)
{
    akvi_cf_set s = {0};
    int rc = akvi_cf_set_open(db, true, false, &s);
    akvi_live_sst *l = NULL;
    size_t nl = 0;
    if (rc == AKV_OK)
        rc = akvi_live_ssts(db->rk.rdb, &l, &nl);
    close_look(db, &s);
    if (rc != AKV_OK)
        return akvi_err(rc, "cannot repair %s: RocksDB does not open (%s)", db->dir, akv_errmsg());
    char **orph = NULL;
    size_t n = 0;
    DIR *d = opendir(db->rdir);
    struct dirent *e;
    char *lost = akvi_path_join(db->dir, "lost");
    while (rc == AKV_OK && d && lost && (e = readdir(d)) != NULL) {
        size_t k = strlen(e->d_name);
        if (k < 5 || strcmp(e->d_name + k - 4, ".sst") != 0)
            continue;
        bool live = false;
        for (size_t i = 0; !live && i < nl; i++)
            live = strcmp(l[i].name + (l[i].name[0] == '/'), e->d_name) == 0;
        if (live)
            continue;
        if (mkdir(lost, 0755) != 0 && errno != EEXIST) {
            rc = akvi_err(AKV_EIO, "creating %s: %s", lost, strerror(errno));
            break;
        }
        char *from = akvi_path_join(db->rdir, e->d_name), *to = akvi_path_join(lost, e->d_name);
        char **grown = realloc(orph, (n + 1) * sizeof *orph);
        if (!from || !to || !grown)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
        else if (rename(from, to) != 0)
            rc = akvi_err(AKV_EIO, "moving %s to %s: %s", from, to, strerror(errno));
        else {
            orph = grown;
            orph[n++] = to;
            to = NULL;
        }
        if (grown && !orph)
            orph = grown;
        free(from);
        free(to);
    }
    if (d)
        closedir(d);
    free(lost);
    akvi_live_ssts_free(l, nl);
    if (n)
        note(R, "%zu SST files in rocksdb/ that RocksDB's MANIFEST does not record: moved to lost/", n);
    *out = orph;
    *n_out = n;
    return rc;
}

/* ---- what is known about each run ----------------------------------------- */

typedef struct rrun {
    uint64_t id;
    uint32_t level;
    bool level_known, catalogued;
    akvi_cat_run desc; /* SSTs known from the catalog or filter files (may be partial) */
    rocksdb_column_family_handle_t *cf, *rmap;
    size_t cf_index, rmap_index; /* in the family set; SIZE_MAX if none */
} rrun;

typedef struct runs {
    rrun *v;
    size_t n;
} runs;

static rrun *run_of(runs *rs, uint64_t id)
{
    for (size_t i = 0; i < rs->n; i++)
        if (rs->v[i].id == id)
            return &rs->v[i];
    rrun *g = realloc(rs->v, (rs->n + 1) * sizeof *g);
    if (!g)
        return NULL;
    rs->v = g;
    rrun *r = &rs->v[rs->n++];
    memset(r, 0, sizeof *r);
    r->id = id;
    r->cf_index = r->rmap_index = SIZE_MAX;
    r->desc.id = id;
    return r;
}

static int copy_sst(akvi_cat_sst *to, const akvi_cat_sst *from)
{
    *to = *from;
    to->smallest = malloc(from->smallest_len ? from->smallest_len : 1);
    to->largest = malloc(from->largest_len ? from->largest_len : 1);
    if (!to->smallest || !to->largest) {
        free(to->smallest);
        free(to->largest);
        to->smallest = to->largest = NULL;
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    memcpy(to->smallest, from->smallest, from->smallest_len);
    memcpy(to->largest, from->largest, from->largest_len);
    return AKV_OK;
}

static int add_sst(akvi_cat_run *d, const akvi_cat_sst *s)
{
    for (size_t j = 0; j < d->n_sst; j++)
        if (d->ssts[j].id == s->id)
            return AKV_OK;
    akvi_cat_sst *g = realloc(d->ssts, (d->n_sst + 1) * sizeof *g);
    if (!g)
        return akvi_err(AKV_ENOMEM, "out of memory");
    d->ssts = g;
    int rc = copy_sst(&d->ssts[d->n_sst], s);
    if (rc == AKV_OK)
        d->n_sst++;
    return rc;
}

static int cmp_sst_range(const void *a, const void *b)
{
    const akvi_cat_sst *x = a, *y = b;
    return akvi_bytes_cmp(x->smallest, x->smallest_len, y->smallest, y->smallest_len);
}

/* Filter files of version 2 describe their SST: gather them by run. */
static int describe_from_filters(akv_db *db, runs *rs)
{
    DIR *d = opendir(db->fdir);
    struct dirent *e;
    int rc = AKV_OK;
    while (rc == AKV_OK && d && (e = readdir(d)) != NULL) {
        unsigned long long run, sst;
        int used = 0;
        if (sscanf(e->d_name, "%llu-%llu.akf%n", &run, &sst, &used) != 2 || e->d_name[used] != 0)
            continue;
        char *p = akvi_path_join(db->fdir, e->d_name);
        akvi_cat_run desc = {0};
        if (p && akvi_slot_describe(p, &desc) == AKV_OK && desc.id == run && desc.ssts[0].id == sst) {
            rrun *r = run_of(rs, run);
            if (!r)
                rc = akvi_err(AKV_ENOMEM, "out of memory");
            else if (!r->catalogued) {
                r->level = desc.level;
                r->level_known = true;
                r->desc.level = desc.level;
                r->desc.prefix_bits = desc.prefix_bits;
                rc = add_sst(&r->desc, &desc.ssts[0]);
            }
        }
        akvi_cat_run_free(&desc);
        free(p);
    }
    if (d)
        closedir(d);
    return rc;
}

/* ---- reading a run back ---------------------------------------------------- */

/* Hashes of the entries read (for a filter and the key digest). */
typedef struct hashes {
    akv_db *db;
    akv_hash *h;
    size_t n, cap;
    uint64_t raw;
} hashes;

static int collect(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    hashes *hs = arg;
    (void)v;
    if (hs->n == hs->cap) {
        size_t cap = hs->cap ? 2 * hs->cap : 1024;
        akv_hash *g = realloc(hs->h, cap * sizeof *g);
        if (!g)
            return akvi_err(AKV_ENOMEM, "out of memory");
        hs->h = g;
        hs->cap = cap;
    }
    size_t ul;
    const uint8_t *uk = akvi_ukey(hs->db, k, kl, &ul);
    hs->h[hs->n++] = akv_hash_key(uk, ul, hs->db->seed);
    hs->raw += kl + vl;
    return AKV_OK;
}

static int to_writer(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    return akvi_rw_add(arg, k, kl, v, vl);
}

/* ---- a run's fate ------------------------------------------------------------ */

/* The final shape: kept runs (their info, filters written), rewritten ones
 * (new runs from the run writer). `order` places a run as its original. */
typedef struct fin {
    akvi_cat_run info; /* owned unless `run` holds it */
    akvi_run *run;     /* rewritten or merged: a run writer's output */
    rocksdb_column_family_handle_t *cf;
    size_t cf_index, rmap_index; /* kept runs: their families in the set */
    bool own_cf;                 /* cf made here (for restored files): destroyed with the fin */
    uint64_t order;
    akv_filter **filters; /* kept runs: rebuilt, written at the end */
} fin;

typedef struct fins {
    fin *v;
    size_t n;
} fins;

static void fin_free(fin *f)
{
    if (f->own_cf && f->cf)
        rocksdb_column_family_handle_destroy(f->cf);
    /* The filters first: freeing the info forgets how many there are. */
    for (size_t j = 0; f->filters && j < f->info.n_sst; j++)
        akv_filter_destroy(f->filters[j]);
    free(f->filters);
    f->filters = NULL;
    if (f->run)
        akvi_run_unref(f->run);
    else
        akvi_cat_run_free(&f->info);
}

static const akvi_cat_run *fin_info(const fin *f)
{
    return f->run ? &f->run->info : &f->info;
}

static bool final_holds(void *arg, uint64_t run, uint64_t sst)
{
    const fins *F = arg;
    for (size_t i = 0; i < F->n; i++)
        if (fin_info(&F->v[i])->id == run && sst < fin_info(&F->v[i])->n_sst)
            return true;
    return false;
}

static int fins_add(fins *F, fin f)
{
    fin *g = realloc(F->v, (F->n + 1) * sizeof *g);
    if (!g)
        return akvi_err(AKV_ENOMEM, "out of memory");
    F->v = g;
    F->v[F->n++] = f;
    return AKV_OK;
}

/* The live files of a run's family, as SST descriptors without ids. */
static int live_ranges(const akvi_live_sst *l, size_t nl, uint64_t id, akvi_cat_run *out)
{
    char name[64];
    size_t first;
    snprintf(name, sizeof name, "run.%llu", (unsigned long long)id);
    size_t k = akvi_live_ssts_of(l, nl, name, &first);
    memset(out, 0, sizeof *out);
    out->ssts = calloc(k ? k : 1, sizeof *out->ssts);
    if (!out->ssts)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t j = 0; j < k; j++) {
        akvi_cat_sst s = {.id = j,
                          .bytes = l[first + j].size,
                          .smallest = l[first + j].smallest,
                          .smallest_len = l[first + j].smallest_len,
                          .largest = l[first + j].largest,
                          .largest_len = l[first + j].largest_len};
        int rc = copy_sst(&out->ssts[j], &s);
        if (rc != AKV_OK)
            return rc;
        out->n_sst = j + 1;
    }
    return AKV_OK;
}

/* Does RocksDB's record of the run's family match the descriptor? */
static bool files_match(const akvi_cat_run *d, const akvi_cat_run *live)
{
    if (d->n_sst != live->n_sst)
        return false;
    for (size_t j = 0; j < d->n_sst; j++)
        if (akvi_bytes_cmp(d->ssts[j].smallest, d->ssts[j].smallest_len, live->ssts[j].smallest,
                           live->ssts[j].smallest_len) != 0 ||
            akvi_bytes_cmp(d->ssts[j].largest, d->ssts[j].largest_len, live->ssts[j].largest,
                           live->ssts[j].largest_len) != 0 ||
            d->ssts[j].bytes != live->ssts[j].bytes)
            return false;
    return true;
}

/* Read a described run back in full: whole (every SST as recorded), with
 * a fresh filter for each SST. */
static int verify_run(akv_db *db, rrun *r, rocksdb_column_family_handle_t *cf, fin *out, bool *whole,
                      uint64_t *lost, uint32_t *damaged)
{
    akvi_cat_run *d = &r->desc;
    *whole = true;
    *lost = 0;
    akv_filter **filters = calloc(d->n_sst ? d->n_sst : 1, sizeof *filters);
    if (!filters)
        return akvi_err(AKV_ENOMEM, "out of memory");
    int rc = AKV_OK;
    uint64_t keys = 0, raw = 0;
    for (size_t j = 0; rc == AKV_OK && j < d->n_sst; j++) {
        akvi_cat_sst *s = &d->ssts[j];
        hashes hs = {.db = db};
        uint64_t n = 0;
        bool w = false;
        rc = akvi_salvage_range(db, cf, NULL, s->smallest, s->smallest_len, s->largest, s->largest_len,
                                collect, &hs, &n, &w);
        uint64_t digest = akvi_key_digest(hs.h, hs.n);
        bool ok = rc == AKV_OK && w && n == s->keys && (s->digest == 0 || s->digest == digest);
        if (rc == AKV_OK && !ok) {
            *whole = false;
            (*damaged)++;
            *lost += s->keys > n ? s->keys - n : 0;
        }
        if (rc == AKV_OK && ok && *whole) {
            s->digest = digest;
            if (!akv_filter_kind_by_name(s->kind))
                snprintf(s->kind, sizeof s->kind, "%s", db->policy.level[d->level]->name);
            rc = akvi_build_filter(db, (int)d->level, d, s, hs.h, hs.n, hs.n, NULL, 0, &filters[j]);
            if (rc == AKV_OK)
                snprintf(s->kind, sizeof s->kind, "%s", filters[j]->kind->name);
        }
        keys += n;
        raw += hs.raw;
        free(hs.h);
    }
    if (rc == AKV_OK && *whole && db->layout == AKV_LAYOUT_ORDERED) {
        uint64_t rm = 0;
        if (!r->rmap || akvi_cf_entries(db->rk.rdb, r->rmap, &rm) != AKV_OK || rm != keys)
            *whole = false; /* the reverse map is rebuilt by a rewrite */
    }
    if (rc != AKV_OK || !*whole) {
        for (size_t j = 0; j < d->n_sst; j++)
            akv_filter_destroy(filters[j]);
        free(filters);
        return rc;
    }
    out->filters = filters;
    out->info = *d;
    out->info.keys = keys;
    if (!r->catalogued) {
        uint64_t bytes = 0;
        for (size_t j = 0; j < d->n_sst; j++)
            bytes += d->ssts[j].bytes;
        out->info.bytes = bytes;
        out->info.raw_bytes = raw;
    }
    memset(d, 0, sizeof *d);
    return AKV_OK;
}

/* Rewrite a run from whatever of it can be read. */
static int rewrite_run(akv_db *db, const akvi_cat_run *ranges, rocksdb_column_family_handle_t *cf,
                       uint32_t level, uint64_t est, akvi_run **out, uint64_t *read)
{
    akvi_runwriter *w = NULL;
    *out = NULL;
    *read = 0;
    akvi_shards sh = AKVI_SHARDS_NONE;
    akvi_shards_add(&sh, ranges);
    int rc = akvi_rw_begin(db, (int)level, est, &sh, &w);
    for (size_t j = 0; rc == AKV_OK && j < ranges->n_sst; j++) {
        const akvi_cat_sst *s = &ranges->ssts[j];
        uint64_t n = 0;
        bool whole;
        rc = akvi_salvage_range(db, cf, NULL, s->smallest, s->smallest_len, s->largest, s->largest_len,
                                to_writer, w, &n, &whole);
        *read += n;
    }
    if (rc == AKV_OK)
        return akvi_rw_finish(w, out);
    akvi_rw_abort(w);
    return rc;
}

/* ---- orphans: identified by their keys ----------------------------------- */

/* Ingest a copy of the file into a scratch family to learn its key range,
 * size and entries. */
static int identify(akv_db *db, const char *path, akvi_live_sst *id)
{
    rocksdb_column_family_handle_t *cf;
    memset(id, 0, sizeof *id);
    int rc = akvi_cf_create(db, "salvage.scratch", 0, &cf);
    if (rc != AKV_OK)
        return rc;
    const char *paths[1] = {path};
    rc = akvi_ingest(db, cf, paths, 1, false, "reading a set-aside SST");
    akvi_live_sst *l = NULL;
    size_t nl = 0, first;
    if (rc == AKV_OK)
        rc = akvi_live_ssts(db->rk.rdb, &l, &nl);
    if (rc == AKV_OK && akvi_live_ssts_of(l, nl, "salvage.scratch", &first) == 1) {
        *id = l[first];
        memset(&l[first], 0, sizeof l[first]);
        rc = akvi_cf_entries(db->rk.rdb, cf, &id->entries);
    } else if (rc == AKV_OK)
        rc = akvi_err(AKV_ECORRUPT, "a set-aside SST did not ingest as one file");
    akvi_live_ssts_free(l, nl);
    akvi_cf_drop(db, cf);
    rocksdb_column_family_handle_destroy(cf);
    return rc;
}

static void free_live(akvi_live_sst *x)
{
    free(x->cf);
    free(x->name);
    free(x->smallest);
    free(x->largest);
}

/* An SST of a described run whose family lacks it, matching the file. */
static rrun *owner_of(runs *rs, const akvi_live_sst *f, const akvi_live_sst *l, size_t nl, size_t *sst)
{
    for (size_t i = 0; i < rs->n; i++) {
        const akvi_cat_run *d = &rs->v[i].desc;
        for (size_t j = 0; j < d->n_sst; j++) {
            const akvi_cat_sst *s = &d->ssts[j];
            if (s->bytes != f->size || (f->entries && s->keys != f->entries) ||
                akvi_bytes_cmp(s->smallest, s->smallest_len, f->smallest, f->smallest_len) != 0 ||
                akvi_bytes_cmp(s->largest, s->largest_len, f->largest, f->largest_len) != 0)
                continue;
            char name[64];
            size_t first;
            snprintf(name, sizeof name, "run.%llu", (unsigned long long)rs->v[i].id);
            size_t k = akvi_live_ssts_of(l, nl, name, &first);
            for (size_t m = 0; m < k; m++)
                if (akvi_bytes_cmp(l[first + m].smallest, l[first + m].smallest_len, s->smallest,
                                   s->smallest_len) == 0)
                    return NULL; /* the family holds it already: a stale copy */
            *sst = j;
            return &rs->v[i];
        }
    }
    return NULL;
}

static int ingest_into(akv_db *db, rrun *r, akvi_cf_set *cfs, const char *path)
{
    if (!r->cf) {
        char name[64];
        snprintf(name, sizeof name, "run.%llu", (unsigned long long)r->id);
        int rc = akvi_cf_create(db, name, (int)r->level, &r->cf);
        if (rc != AKV_OK)
            return rc;
        r->cf_index = SIZE_MAX; /* owned here, not by the set */
        (void)cfs;
    }
    const char *paths[1] = {path};
    return akvi_ingest(db, r->cf, paths, 1, false, "ingesting a set-aside SST again");
}

static int restore_orphans(akv_db *db, rep *R, runs *rs, akvi_cf_set *cfs, char **orph, size_t n)
{
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < n; i++) {
        akvi_live_sst f;
        const char *base = strrchr(orph[i], '/') + 1;
        if (identify(db, orph[i], &f) != AKV_OK) {
            /* RocksDB's own files (a flush of the meta family) do not ingest. */
            note(R, "lost/%s: not an SST adaptkv wrote (%s); left in lost/, not deleted", base, akv_errmsg());
            R->r.files_set_aside++;
            continue;
        }
        akvi_live_sst *l = NULL;
        size_t nl = 0, j = 0;
        rc = akvi_live_ssts(db->rk.rdb, &l, &nl);
        rrun *r = rc == AKV_OK ? owner_of(rs, &f, l, nl, &j) : NULL;
        akvi_live_ssts_free(l, nl);
        if (rc == AKV_OK && r) {
            rc = ingest_into(db, r, cfs, orph[i]);
            if (rc == AKV_OK) {
                note(R, "run %llu SST %llu: RocksDB's MANIFEST had forgotten its file %s; ingested again",
                     (unsigned long long)r->id, (unsigned long long)r->desc.ssts[j].id, base);
                R->r.ssts_restored++;
                unlink(orph[i]);
            }
        } else if (rc == AKV_OK) {
            note(R, "lost/%s (%llu entries): not an SST any run lacks; left in lost/, not deleted", base,
                 (unsigned long long)f.entries);
            R->r.files_set_aside++;
        }
        free_live(&f);
    }
    return rc;
}

/* ---- putting it together ----------------------------------------------------- */

static int cmp_fin(const void *a, const void *b)
{
    const fin *x = a, *y = b;
    uint32_t lx = fin_info(x)->level, ly = fin_info(y)->level;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return (x->order < y->order) - (x->order > y->order); /* newest first */
}

typedef struct state {
    akv_db *db;
    rep *R;
    akvi_cf_set cfs;
    akvi_catalog cat;
    bool have_cat, trust_cat;
    akvi_inspection look; /* open's inspection, against the catalog (or none) */
    runs rs;
    fins F;
    char **orph;
    size_t n_orph;
} state;

/* ---- runs that are files only ----------------------------------------------- */

/* The family `name` of run r, made here if it is not there (owned by r: not
 * in the set, as for restored files). */
static int adopt_family(akv_db *db, rrun *r, bool rmap, rocksdb_column_family_handle_t **cf)
{
    if (*cf)
        return AKV_OK;
    char name[64];
    snprintf(name, sizeof name, "%s.%llu", rmap ? "rmap" : "run", (unsigned long long)r->id);
    return akvi_cf_create(db, name, (int)r->level, cf);
}

/* Moves DIR/runs/name to DIR/lost/name (a file repair could not use:
 * never deleted). */
static void to_lost(akv_db *db, rep *R, const char *name, const char *why)
{
    char *lost = akvi_path_join(db->dir, "lost"), *from = akvi_path_join(db->sdir, name),
         *to = lost ? akvi_path_join(lost, name) : NULL;
    if (lost && from && to && (mkdir(lost, 0755) == 0 || errno == EEXIST) && rename(from, to) == 0) {
        note(R, "runs/%s: %s; moved to lost/", name, why);
        R->r.files_set_aside++;
    }
    free(lost);
    free(from);
    free(to);
}

/* What the catalog or a filter file records for SST `sst` of r, or NULL. */
static const akvi_cat_sst *sst_of(const rrun *r, uint64_t sst)
{
    for (size_t j = 0; j < r->desc.n_sst; j++)
        if (r->desc.ssts[j].id == sst)
            return &r->desc.ssts[j];
    return NULL;
}

static int to_sstw(void *arg, const uint8_t *k, size_t kl, const uint8_t *v, size_t vl)
{
    char *err = NULL;
    if (akvi_sstw_put(arg, k, kl, v, vl, &err))
        return AKV_OK;
    return akvi_rocks_err(err, "writing a salvaged SST");
}

/* The readable entries of a damaged run file, in [s's smallest, largest],
 * into a new SST at `out`; AKV_NOTFOUND if none is readable. */
static int salvage_file(akv_db *db, akvi_rs_sst *f, const akvi_cat_sst *s, const char *out)
{
    char *err = NULL;
    akvi_sstw *w = akvi_sstw_open(out, false, &err);
    if (!w)
        return akvi_rocks_err(err, "writing a salvaged SST");
    uint64_t n = 0;
    bool whole;
    int rc = akvi_salvage_range(db, NULL, f, s->smallest, s->smallest_len, s->largest, s->largest_len,
                                to_sstw, w, &n, &whole);
    if (rc == AKV_OK && n == 0)
        rc = AKV_NOTFOUND;
    if (rc == AKV_OK && !akvi_sstw_finish(w, &err))
        rc = akvi_rocks_err(err, "writing a salvaged SST");
    akvi_sstw_destroy(w);
    if (rc != AKV_OK)
        unlink(out);
    return rc;
}

/* Ingests DIR/runs/name into cf (moved), or, when its checksums fail, what
 * can still be read of it (`s`: its record; NULL for a reverse map, which
 * repair writes again rather than salvage), the file itself moved to
 * lost/. A file that cannot be used goes to lost/. */
static int adopt_file(state *S, rrun *r, const char *name, const akvi_cat_sst *s,
                      rocksdb_column_family_handle_t *cf)
{
    akv_db *db = S->db;
    char *path = akvi_path_join(db->sdir, name);
    if (!path)
        return akvi_err(AKV_ENOMEM, "out of memory");
    akvi_rs_sst *f = NULL;
    int rc = akvi_rs_sst_open(db->runstore, path, &f);
    if (rc == AKV_OK)
        rc = akvi_rs_sst_verify(f);
    if (rc == AKV_OK) {
        akvi_rs_sst_close(f);
        const char *paths[1] = {path};
        rc = akvi_ingest(db, cf, paths, 1, true, "adopting a run file");
        if (rc != AKV_OK)
            to_lost(db, S->R, name, akv_errmsg());
        free(path);
        return AKV_OK;
    }
    char why[512];
    snprintf(why, sizeof why, "%s", akv_errmsg());
    char out[4200];
    snprintf(out, sizeof out, "%s.tmp", path); /* a temp name open sweeps */
    int src = f && s ? salvage_file(db, f, s, out) : AKV_NOTFOUND;
    akvi_rs_sst_close(f);
    if (src == AKV_OK) {
        const char *paths[1] = {out};
        src = akvi_ingest(db, cf, paths, 1, true, "adopting a salvaged run file");
        unlink(out);
    }
    if (src == AKV_OK)
        note(S->R, "run %llu: runs/%s is damaged (%s); what it holds that reads back was kept",
             (unsigned long long)r->id, name, why);
    to_lost(db, S->R, name, why);
    free(path);
    return AKV_OK;
}

/* Runs whose SSTs are only their files in DIR/runs (catalog version 4, or
 * runs found by their filter files or their files alone) are adopted as
 * families: each readable
 * file is ingested (moved: RocksDB links it into rocksdb/ and drops the
 * runs/ name) into run.<id>, a reverse map into rmap.<id>, so that the rest
 * of repair reads, checks and rewrites them as any run, and their entries
 * it cannot read count as lost. A file that does not ingest goes to lost/. The names of family runs (the same
 * files their families hold) stay: open derives them again. */
static int adopt_run_files(state *S)
{
    akv_db *db = S->db;
    DIR *d = opendir(db->sdir);
    if (!d)
        return errno == ENOENT ? AKV_OK : akvi_err(AKV_EIO, "reading %s: %s", db->sdir, strerror(errno));
    int rc = AKV_OK;
    struct dirent *e;
    while (rc == AKV_OK && (e = readdir(d)) != NULL) {
        unsigned long long id, sst = 0;
        int used = 0;
        bool rmap =
            sscanf(e->d_name, "%llu-rmap.sst%n", &id, &used) == 1 && used > 0 && e->d_name[used] == '\0';
        if (!rmap && !(sscanf(e->d_name, "%llu-%llu.sst%n", &id, &sst, &used) == 2 && used > 0 &&
                       e->d_name[used] == '\0'))
            continue; /* a temp name (swept by open), or not adaptkv's */
        rrun *r = NULL;
        for (size_t i = 0; i < S->rs.n && !r; i++)
            r = S->rs.v[i].id == id ? &S->rs.v[i] : NULL;
        if (r && r->cf_index != SIZE_MAX)
            continue;                          /* a family run's name */
        if (!r && !(r = run_of(&S->rs, id))) { /* known by its files alone: level unknown */
            rc = akvi_err(AKV_ENOMEM, "out of memory");
            break;
        }
        if (rmap && db->layout != AKV_LAYOUT_ORDERED) {
            to_lost(db, S->R, e->d_name, "a reverse map in the hash layout");
            continue;
        }
        rc = adopt_family(db, r, rmap, rmap ? &r->rmap : &r->cf);
        if (rc == AKV_OK)
            rc = adopt_file(S, r, e->d_name, rmap ? NULL : sst_of(r, sst), rmap ? r->rmap : r->cf);
        r->desc.files = false; /* a family run from here on */
    }
    closedir(d);
    return rc;
}

/* The memtable generation family i holds: an older format's mem.<gen> by
 * its name, one of the pool's by its record (0: none, or not a memtable
 * family). */
static uint64_t mem_gen(state *S, size_t i, bool *pool)
{
    uint64_t g = akvi_parse_id(S->cfs.names[i], "mem."), p = akvi_parse_id(S->cfs.names[i], "pool.");
    *pool = p && p <= AKVI_POOL_MAX;
    if (*pool && S->cfs.h[i] && akvi_pool_marker(S->db, S->cfs.h[i], &g) != AKV_OK) {
        note(S->R, "memtable family %s: its generation is unreadable (%s); it is emptied at the next open",
             S->cfs.names[i], akv_errmsg());
        g = 0;
    }
    return g;
}

/* The inspection open makes (inspect.c), against the catalog (or, without
 * one, against none). Is the catalog the newest state, so that runs it
 * does not name are leftovers? Only when it shows nothing of the catalog
 * behind the data; an inspection that cannot be made trusts nothing.
 * Before the catalog's runs move into S->rs. */
static bool catalog_is_newest(state *S)
{
    if (akvi_inspect(S->db, &S->cat, &S->cfs, &S->look) != AKV_OK) {
        note(S->R, "the directory could not be inspected (%s)", akv_errmsg());
        return false;
    }
    const akvi_finding *f = NULL;
    for (size_t i = 0; !f && i < S->look.found.n; i++)
        f = S->look.found.v[i].catalog_behind ? &S->look.found.v[i] : NULL;
    if (f && S->have_cat)
        note(S->R, "%s", f->msg);
    return S->have_cat && !f;
}

/* The slot policy and bits per key the catalog stores are kept unless the
 * options set them; one that does not parse is replaced by the options'
 * (or the defaults), with a note. */
static void keep_policy(state *S)
{
    akv_db *db = S->db;
    if (!S->have_cat || !S->cat.policy[0])
        return;
    if (!db->bits_given)
        db->opt.bits_per_key = S->cat.bits_per_key;
    akvi_policy p;
    char text[AKVI_POLICY_MAX];
    if (akvi_policy_parse(S->cat.policy, S->cat.bits_per_key, &p, NULL, 0) != AKV_OK ||
        akvi_policy_format(&p, text, sizeof text) != AKV_OK) {
        note(S->R, "the catalog's slot policy '%s' is unusable (%s); the catalog now stores '%s'",
             S->cat.policy, akv_errmsg(), db->policy_text);
        return;
    }
    if (!db->policy_given) {
        db->policy = p;
        memcpy(db->policy_text, text, sizeof text);
    }
}

static int gather(state *S)
{
    akv_db *db = S->db;
    char why[700];
    int rc = akvi_catalog_load(db->dir, &S->cat, why, sizeof why);
    if (rc == AKV_OK && why[0])
        note(S->R, "%s", why);
    if (rc == AKV_NOTFOUND) {
        uint8_t *buf = NULL;
        size_t len = 0;
        if (akvi_meta_get(db, "catalog", &buf, &len) == AKV_OK)
            rc = akvi_catalog_decode(buf, len, &S->cat);
        free(buf);
    }
    if (rc == AKV_OK && (S->cat.layout != (uint32_t)db->layout || S->cat.seed != db->seed)) {
        akvi_catalog_free(&S->cat);
        rc = akvi_err(AKV_ECORRUPT, "its layout or seed differs from the identity's");
    }
    S->have_cat = rc == AKV_OK;
    if (!S->have_cat) {
        note(S->R, "catalog unusable (%s); rebuilt from the run families and the filter files", akv_errmsg());
        memset(&S->cat, 0, sizeof S->cat);
    }
    keep_policy(S);
    S->trust_cat = catalog_is_newest(S);
    for (size_t i = 0; i < S->cat.n_run; i++) {
        rrun *r = run_of(&S->rs, S->cat.runs[i].id);
        if (!r)
            return akvi_err(AKV_ENOMEM, "out of memory");
        r->catalogued = r->level_known = true;
        r->level = S->cat.runs[i].level;
        r->desc = S->cat.runs[i];
        memset(&S->cat.runs[i], 0, sizeof S->cat.runs[i]);
    }
    rc = describe_from_filters(db, &S->rs);
    for (size_t i = 0; rc == AKV_OK && i < S->cfs.n; i++) {
        uint64_t id = akvi_parse_id(S->cfs.names[i], "run.");
        uint64_t rid = akvi_parse_id(S->cfs.names[i], "rmap.");
        rrun *r = id ? run_of(&S->rs, id) : rid ? run_of(&S->rs, rid) : NULL;
        if ((id || rid) && !r)
            return akvi_err(AKV_ENOMEM, "out of memory");
        if (id) {
            r->cf = S->cfs.h[i];
            r->cf_index = i;
        } else if (rid) {
            r->rmap = S->cfs.h[i];
            r->rmap_index = i;
        }
    }
    for (size_t i = 0; i < S->rs.n; i++)
        akvi_sort(S->rs.v[i].desc.ssts, S->rs.v[i].desc.n_sst, sizeof *S->rs.v[i].desc.ssts, cmp_sst_range);
    return rc;
}

/* Hash layout: an SST's shard prefix is the shard of its key range (the
 * range RocksDB holds is checked against the record before the run is
 * kept). A prefix that is not (a damaged catalog with a valid checksum)
 * is taken from the range, with a note. */
static void fix_prefixes(state *S, rrun *r)
{
    for (size_t j = 0; j < r->desc.n_sst; j++) {
        akvi_cat_sst *s = &r->desc.ssts[j];
        if (s->smallest_len < 8 || s->largest_len < 8 || r->desc.prefix_bits > 64)
            continue;
        akv_hash lo = {.hi = akvi_get_be64(s->smallest)}, hi = {.hi = akvi_get_be64(s->largest)};
        uint64_t p = akvi_shard_of(lo, r->desc.prefix_bits);
        if (p == s->prefix || p != akvi_shard_of(hi, r->desc.prefix_bits))
            continue;
        note(S->R,
             "run %llu SST %llu: its recorded shard prefix %llu is not the shard of its key range; %llu "
             "is",
             (unsigned long long)r->id, (unsigned long long)s->id, (unsigned long long)s->prefix,
             (unsigned long long)p);
        s->prefix = p;
    }
}

/* Decide and carry out each run's fate. */
static int settle_runs(state *S, const akvi_live_sst *l, size_t nl)
{
    akv_db *db = S->db;
    rep *R = S->R;
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < S->rs.n; i++) {
        rrun *r = &S->rs.v[i];
        if (!r->catalogued && S->trust_cat && r->id < S->cat.next_run_id) {
            note(R, "run %llu: a leftover of a flush or compaction the catalog accounts for; dropped",
                 (unsigned long long)r->id);
            if (r->cf_index != SIZE_MAX)
                S->cfs.state[r->cf_index] = AKVI_CF_LEFTOVER;
            if (r->rmap_index != SIZE_MAX)
                S->cfs.state[r->rmap_index] = AKVI_CF_LEFTOVER;
            R->r.runs_dropped++;
            continue;
        }
        akvi_cat_run live = {0};
        rc = r->cf ? live_ranges(l, nl, r->id, &live) : AKV_OK;
        if (rc != AKV_OK) {
            akvi_cat_run_free(&live);
            break;
        }
        if (db->layout == AKV_LAYOUT_HASH)
            fix_prefixes(S, r);
        uint64_t expected = 0;
        for (size_t j = 0; j < r->desc.n_sst; j++)
            expected += r->desc.ssts[j].keys;
        /* Filter files alone may not describe every SST. */
        bool described = r->cf && r->level_known && r->desc.n_sst && files_match(&r->desc, &live);
        bool whole = false;
        uint64_t lost = 0;
        uint32_t damaged = 0;
        fin f = {.order = r->id, .cf = r->cf, .cf_index = r->cf_index, .rmap_index = r->rmap_index};
        if (described)
            rc = verify_run(db, r, r->cf, &f, &whole, &lost, &damaged);
        if (rc == AKV_OK && whole) {
            note(R, "run %llu (level %u): whole, %llu entries in %zu SSTs; kept", (unsigned long long)r->id,
                 f.info.level, (unsigned long long)f.info.keys, f.info.n_sst);
            R->r.runs_kept++;
            R->r.entries_kept += f.info.keys;
            if (r->cf_index == SIZE_MAX) { /* made here for restored files: the fin owns it */
                f.own_cf = true;
                r->cf = NULL;
            }
            rc = fins_add(&S->F, f);
            if (rc != AKV_OK)
                fin_free(&f);
            akvi_cat_run_free(&live);
            continue;
        }
        /* Damaged, partly described, or newer than the catalog without a
         * full description: rewrite from what can be read. */
        uint32_t level = r->level_known ? r->level : 0;
        const akvi_cat_run *ranges = described || !r->cf ? &r->desc : &live;
        uint64_t read = 0, est = r->desc.raw_bytes;
        for (size_t j = 0; est == 0 && j < live.n_sst; j++)
            est += live.ssts[j].bytes; /* sizes on disk: at worst fewer shards than a flush would cut */
        akvi_run *out = NULL;
        if (r->cf && ranges->n_sst)
            rc = rewrite_run(db, ranges, r->cf, level, est, &out, &read);
        if (rc == AKV_OK) {
            uint64_t lost_all = expected > read ? expected - read : 0;
            if (!described && expected == 0)
                lost_all = 0;
            char lostmsg[96];
            if (expected || described)
                snprintf(lostmsg, sizeof lostmsg, "%llu of %llu recorded entries lost",
                         (unsigned long long)lost_all, (unsigned long long)expected);
            else
                snprintf(lostmsg, sizeof lostmsg, "no record of how many entries it held");
            if (!r->level_known)
                note(R,
                     "run %llu: its level is unknown (no catalog entry or filter file); placed at level 0 by "
                     "its id",
                     (unsigned long long)r->id);
            if (out)
                note(R, "run %llu (level %u): %s; %llu entries read, rewritten as run %llu",
                     (unsigned long long)r->id, level, lostmsg, (unsigned long long)read,
                     (unsigned long long)out->info.id);
            else
                note(R, "run %llu (level %u): %s; nothing readable, dropped", (unsigned long long)r->id,
                     level, lostmsg);
            R->r.entries_lost += lost_all;
            R->r.ssts_damaged += damaged ? damaged : (lost_all ? 1 : 0);
            if (out) {
                R->r.runs_rewritten++;
                R->r.entries_kept += read;
                fin g = {
                    .run = out, .cf = out->cf, .order = r->id, .cf_index = SIZE_MAX, .rmap_index = SIZE_MAX};
                rc = fins_add(&S->F, g);
                if (rc != AKV_OK)
                    akvi_run_unref(out);
            } else
                R->r.runs_dropped++;
            if (r->cf_index != SIZE_MAX)
                S->cfs.state[r->cf_index] = AKVI_CF_LEFTOVER;
            else if (r->cf)
                akvi_cf_drop(db, r->cf);
            if (r->rmap_index != SIZE_MAX)
                S->cfs.state[r->rmap_index] = AKVI_CF_LEFTOVER;
        }
        if (r->cf && r->cf_index == SIZE_MAX) {
            rocksdb_column_family_handle_destroy(r->cf);
            r->cf = NULL;
        }
        akvi_cat_run_free(&live);
    }
    return rc;
}

/* Runs of a level below 0 must not overlap: repair does not know which do
 * (one newer than the catalog, say), so it merges each such level's runs,
 * newest first, into one run. */
static int merge_levels(state *S)
{
    akvi_sort(S->F.v, S->F.n, sizeof *S->F.v, cmp_fin);
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < S->F.n;) {
        uint32_t level = fin_info(&S->F.v[i])->level;
        size_t k = 1;
        while (i + k < S->F.n && fin_info(&S->F.v[i + k])->level == level)
            k++;
        if (level == 0 || k == 1) {
            i += k;
            continue;
        }
        rocksdb_column_family_handle_t **cfs = calloc(k, sizeof *cfs);
        akvi_run **ins = calloc(k, sizeof *ins);
        if (!cfs || !ins) {
            free(cfs);
            free(ins);
            return akvi_err(AKV_ENOMEM, "out of memory");
        }
        uint64_t est = 0;
        akvi_shards sh = AKVI_SHARDS_NONE;
        for (size_t m = 0; m < k; m++) {
            cfs[m] = S->F.v[i + m].cf;
            ins[m] = S->F.v[i + m].run; /* a rewritten run: its files */
            est += fin_info(&S->F.v[i + m])->raw_bytes;
            akvi_shards_add(&sh, fin_info(&S->F.v[i + m]));
        }
        akvi_run **outs = NULL, *out = NULL;
        size_t n_out = 0;
        /* One output run (no size cut): a level of one run is always valid. */
        rc = akvi_rw_merge_inputs(S->db, cfs, ins, k, (int)level, est, &sh, UINT64_MAX, false, &outs, &n_out);
        if (rc == AKV_OK && n_out)
            out = outs[0];
        free(outs);
        free(cfs);
        free(ins);
        if (rc != AKV_OK)
            break;
        note(S->R, "level %u held %zu runs; merged, newest first, into run %llu", level, k,
             out ? (unsigned long long)out->info.id : 0ULL);
        uint64_t order = S->F.v[i].order;
        for (size_t m = 0; m < k; m++) {
            fin *f = &S->F.v[i + m];
            if (f->run)
                atomic_store(&f->run->obsolete, true);
            else {
                if (f->cf_index != SIZE_MAX)
                    S->cfs.state[f->cf_index] = AKVI_CF_LEFTOVER;
                if (f->rmap_index != SIZE_MAX)
                    S->cfs.state[f->rmap_index] = AKVI_CF_LEFTOVER;
            }
            fin_free(f);
        }
        fin g = {.run = out,
                 .cf = out ? out->cf : NULL,
                 .order = order,
                 .cf_index = SIZE_MAX,
                 .rmap_index = SIZE_MAX};
        memmove(&S->F.v[i + 1], &S->F.v[i + k], (S->F.n - i - k) * sizeof *S->F.v);
        S->F.n -= k - 1;
        if (out)
            S->F.v[i++] = g;
        else {
            memmove(&S->F.v[i], &S->F.v[i + 1], (S->F.n - i - 1) * sizeof *S->F.v);
            S->F.n--;
        }
    }
    return rc;
}

/* Memtables: those the catalog keeps (or, without a trusted catalog, the
 * newest consecutive generations); older ones were flushed. */
static uint64_t settle_mems(state *S)
{
    uint64_t flushed = S->have_cat ? S->cat.flushed_mem_gen : 0, hi = 0;
    uint64_t *gen = calloc(S->cfs.n + 1, sizeof *gen);
    bool *pool = calloc(S->cfs.n + 1, sizeof *pool);
    if (!gen || !pool) {
        free(gen);
        free(pool);
        note(S->R, "out of memory settling the memtables; they are left as they are");
        return flushed;
    }
    for (size_t i = 0; i < S->cfs.n; i++) {
        gen[i] = mem_gen(S, i, &pool[i]);
        hi = gen[i] > hi ? gen[i] : hi;
    }
    if (!S->trust_cat && hi) {
        /* the newest consecutive block */
        uint64_t lo = hi;
        for (bool more = true; more && lo > 1;) {
            more = false;
            for (size_t i = 0; i < S->cfs.n; i++)
                if (gen[i] == lo - 1) {
                    lo--;
                    more = true;
                    break;
                }
        }
        if (lo - 1 > flushed)
            flushed = lo - 1;
    }
    unsigned emptied = 0;
    for (size_t i = 0; i < S->cfs.n; i++) {
        if (!gen[i])
            continue;
        if (gen[i] <= flushed && pool[i]) {
            emptied++; /* the pool's families are never dropped: open empties it */
        } else if (gen[i] <= flushed) {
            S->cfs.state[i] = AKVI_CF_LEFTOVER;
            S->R->r.memtables_dropped++;
        } else
            S->R->r.memtables_kept++;
    }
    free(gen);
    free(pool);
    if (S->R->r.memtables_dropped)
        note(S->R, "%u memtable families at or below generation %llu: already flushed; dropped",
             S->R->r.memtables_dropped, (unsigned long long)flushed);
    if (emptied)
        note(S->R,
             "%u memtable pool families hold memtables at or below generation %llu: already flushed; "
             "the next open empties them",
             emptied, (unsigned long long)flushed);
    if (S->R->r.memtables_kept)
        note(S->R, "%u memtable families kept (their writes come back from RocksDB's WAL)",
             S->R->r.memtables_kept);
    return flushed;
}

static int write_back(state *S, uint64_t flushed)
{
    akv_db *db = S->db;
    uint64_t max_id = S->have_cat ? S->cat.next_run_id : 1;
    for (size_t i = 0; i < S->rs.n; i++)
        max_id = S->rs.v[i].id + 1 > max_id ? S->rs.v[i].id + 1 : max_id;
    max_id = db->vs.next_run_id > max_id ? db->vs.next_run_id : max_id;
    akvi_catalog c = {.layout = (uint32_t)db->layout,
                      .seed = db->seed,
                      .next_run_id = max_id + 1,
                      .flushed_mem_gen = flushed,
                      .n_run = S->F.n};
    c.runs = calloc(S->F.n ? S->F.n : 1, sizeof *c.runs);
    if (!c.runs)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < S->F.n; i++)
        c.runs[i] = *fin_info(&S->F.v[i]);
    int rc = AKV_OK;
    /* Filters first, then the catalog that names them, then the identity. */
    for (size_t i = 0; rc == AKV_OK && i < S->F.n; i++) {
        fin *f = &S->F.v[i];
        for (size_t j = 0; rc == AKV_OK && f->filters && j < f->info.n_sst; j++) {
            rc = akvi_slot_write_file(db->fdir, &f->info, j, f->filters[j]);
            S->R->r.filters_rebuilt++;
        }
        if (f->run)
            S->R->r.filters_rebuilt += (uint32_t)f->run->info.n_sst;
    }
    if (rc == AKV_OK)
        rc = akvi_fsync_dir(db->fdir);
    db->cat.run_id_bound = 0;
    db->cat.seq = S->have_cat ? S->cat.seq : 0;
    akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
    if (rc == AKV_OK)
        rc = akvi_catalog_store(db, &c);
    if (rc == AKV_OK)
        rc = akvi_catalog_store(db, &c);
    akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    free(c.runs);
    if (rc == AKV_OK)
        rc = akvi_identity_write(db);
    if (rc != AKV_OK)
        return rc;
    /* Filter files of no run in the new catalog. */
    akvi_sweep_filter_files(db->fdir, final_holds, &S->F);
    return AKV_OK;
}

static void summary(rep *R)
{
    akv_repair_report *r = &R->r;
    note(R,
         "summary: %u runs kept, %u rewritten, %u dropped; %u SST files restored, %u SSTs damaged, %u files "
         "set "
         "aside in lost/; %llu entries kept, %llu lost; %u filters written",
         r->runs_kept, r->runs_rewritten, r->runs_dropped, r->ssts_restored, r->ssts_damaged,
         r->files_set_aside, (unsigned long long)r->entries_kept, (unsigned long long)r->entries_lost,
         r->filters_rebuilt);
}

/* The layout and seed: DIR/IDENTITY, else the catalog, else (after
 * RocksDB opens) the meta family's copy. */
static int find_identity(akv_db *db, rep *R, bool rocks_open)
{
    uint32_t layout;
    uint64_t seed;
    int rc = akvi_identity_read(db->dir, &layout, &seed);
    if (rc != AKV_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", akv_errmsg());
        akvi_catalog c;
        char note_[700];
        if (akvi_catalog_load(db->dir, &c, note_, sizeof note_) == AKV_OK) {
            layout = c.layout;
            seed = c.seed;
            akvi_catalog_free(&c);
            rc = AKV_OK;
        } else if (rocks_open) {
            uint8_t *buf = NULL;
            size_t len = 0;
            rc = akvi_meta_get(db, "identity", &buf, &len);
            if (rc == AKV_OK)
                rc = akvi_identity_decode(buf, len, &layout, &seed);
            free(buf);
        }
        if (rc != AKV_OK)
            return rocks_open
                       ? akvi_err(AKV_ECORRUPT,
                                  "cannot repair %s: no identity, catalog or meta record says what its "
                                  "hash seed is (%s)",
                                  db->dir, why)
                       : AKV_NOTFOUND;
        note(R, "identity unusable (%s); layout and seed taken from %s", why,
             rocks_open ? "the meta family" : "the catalog");
    }
    if (layout != AKV_LAYOUT_HASH && layout != AKV_LAYOUT_ORDERED)
        return akvi_err(AKV_ECORRUPT, "cannot repair %s: unknown layout %u", db->dir, layout);
    if (db->opt.layout != AKV_LAYOUT_AUTO && (uint32_t)db->opt.layout != layout)
        return akvi_err(AKV_EINVAL, "database %s has layout '%s'; repair was asked for another", db->dir,
                        layout == AKV_LAYOUT_ORDERED ? "ordered" : "hash");
    if (db->opt.seed && db->opt.seed != seed)
        return akvi_err(AKV_EINVAL, "database %s has another hash seed than the one repair was given",
                        db->dir);
    db->layout = (akv_layout)layout;
    db->seed = seed;
    return AKV_OK;
}

/* A family one of whose files RocksDB records but is gone (the
 * inspection's finding; every open refuses it) is made anew, empty: the
 * meta family (it holds the miss log, a hint, and a copy of the identity,
 * written again at the end), or one of the memtable pool's (a cut MANIFEST
 * forgot that an emptying deleted the file). A pool family is emptied only
 * after its memtable's run is committed, so what it held is in runs,
 * unless its generation is above the catalog's flushed one: those entries
 * are counted as lost. */
static int renew_families(state *S)
{
    akv_db *db = S->db;
    const akvi_findings *F = &S->look.found;
    for (size_t k = 0; k < F->n; k++) {
        size_t i = F->v[k].cf, seen = 0;
        for (size_t j = 0; j < k; j++)
            seen += F->v[j].cf == i && F->v[j].kind == F->v[k].kind;
        bool meta =
            i != SIZE_MAX && F->v[k].kind == AKVI_DMG_SST_MISSING && strcmp(S->cfs.names[i], "meta") == 0;
        if (seen || i == SIZE_MAX || (!meta && F->v[k].kind != AKVI_DMG_POOL_FILE_MISSING))
            continue; /* a second file of a family renewed already, or no family to renew */
        rocksdb_column_family_handle_t **h = meta ? &db->rk.meta_cf : &S->cfs.h[i];
        if (!*h)
            continue;
        uint64_t gen = 0, lost = 0;
        if (!meta && akvi_pool_marker(db, *h, &gen) == AKV_OK && S->have_cat &&
            gen > S->cat.flushed_mem_gen) {
            rocksdb_iterator_t *it = rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, *h);
            for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it))
                lost++;
            rocksdb_iter_destroy(it);
        }
        if (meta)
            note(S->R,
                 "%s: the family is made anew (the miss log is lost; the identity's copy is written again)",
                 F->v[k].msg);
        else
            note(
                S->R,
                "%s: the family is made anew (%llu entries of memtable %llu lost; a memtable at or below the "
                "flushed generation is in runs already)",
                F->v[k].msg, (unsigned long long)lost, (unsigned long long)gen);
        S->R->r.entries_lost += lost;
        akvi_cf_drop(db, *h);
        rocksdb_column_family_handle_destroy(*h);
        *h = NULL;
        int rc = atomic_load(&db->bg.error);
        if (rc != AKV_OK)
            return akvi_err(rc, "cannot repair %s: dropping family %s failed: %s", db->dir, S->cfs.names[i],
                            akv_errmsg());
        rc = akvi_cf_create(db, S->cfs.names[i], meta ? 0 : -1, h);
        if (rc != AKV_OK)
            return rc;
    }
    return AKV_OK;
}

static int repair(akv_db *db, rep *R)
{
    state S = {.db = db, .R = R};
    int rc = find_identity(db, R, false);
    bool identity_pending = rc == AKV_NOTFOUND;
    if (rc != AKV_OK && !identity_pending)
        return rc;
    rc = restore_current(db, R);
    if (rc == AKV_OK)
        rc = set_aside_orphans(db, R, &S.orph, &S.n_orph);
    if (rc == AKV_OK) { /* RocksDB replays its WAL up to any damage: say what it drops */
        char wal[700] = "";
        rc = akvi_wal_damage(db, false, wal, sizeof wal);
        if (rc == AKV_OK && wal[0])
            note(R, "%s", wal);
    }
    if (rc == AKV_OK)
        rc = akvi_cf_set_open(db, false, false, &S.cfs);
    if (rc == AKV_OK && identity_pending)
        rc = find_identity(db, R, true);
    /* Repair allocates run ids itself; the catalog is written at the end. */
    db->cat.run_id_bound = UINT64_MAX;
    db->vs.cur = akvi_version_new(0, 0);
    if (rc == AKV_OK && !db->vs.cur)
        rc = akvi_err(AKV_ENOMEM, "out of memory");
    bool made;
    if (rc == AKV_OK) /* run writers write their SSTs there first */
        rc = akvi_make_dir(db->tdir, &made);
    if (rc == AKV_OK)
        rc = gather(&S);
    if (rc == AKV_OK)
        rc = adopt_run_files(&S);
    if (rc == AKV_OK) {
        uint64_t next = S.have_cat ? S.cat.next_run_id : 1;
        for (size_t i = 0; i < S.rs.n; i++)
            next = S.rs.v[i].id >= next ? S.rs.v[i].id + 1 : next;
        db->vs.next_run_id = next;
        if (S.have_cat && !S.trust_cat)
            note(
                R,
                "the catalog is older than the data (families or memtables it does not account for); runs it "
                "does not name are kept");
    }
    if (rc == AKV_OK)
        rc = restore_orphans(db, R, &S.rs, &S.cfs, S.orph, S.n_orph);
    akvi_live_sst *l = NULL;
    size_t nl = 0;
    if (rc == AKV_OK)
        rc = akvi_live_ssts(db->rk.rdb, &l, &nl);
    if (rc == AKV_OK)
        rc = renew_families(&S);
    if (rc == AKV_OK)
        rc = settle_runs(&S, l, nl);
    akvi_live_ssts_free(l, nl);
    if (rc == AKV_OK)
        rc = merge_levels(&S);
    uint64_t flushed = rc == AKV_OK ? settle_mems(&S) : 0;
    /* Families the inspection found are not adaptkv's: the scratch family
     * of an interrupted repair is dropped, any other left alone. */
    for (size_t k = 0; rc == AKV_OK && k < S.look.found.n; k++) {
        const akvi_finding *f = &S.look.found.v[k];
        if (f->kind == AKVI_DMG_FOREIGN_FAMILY && strncmp(S.cfs.names[f->cf], "salvage.", 8) == 0)
            S.cfs.state[f->cf] = AKVI_CF_LEFTOVER;
        else if (f->kind == AKVI_DMG_FOREIGN_FAMILY)
            note(R, "%s; left alone (open refuses while it exists)", f->msg);
    }
    if (rc == AKV_OK)
        rc = write_back(&S, flushed);
    if (rc == AKV_OK)
        summary(R);
    for (size_t i = 0; i < S.F.n; i++)
        fin_free(&S.F.v[i]);
    free(S.F.v);
    for (size_t i = 0; i < S.rs.n; i++) {
        if (S.rs.v[i].rmap && S.rs.v[i].rmap_index == SIZE_MAX) /* adopted here */
            rocksdb_column_family_handle_destroy(S.rs.v[i].rmap);
        akvi_cat_run_free(&S.rs.v[i].desc);
    }
    free(S.rs.v);
    akvi_catalog_free(&S.cat);
    akvi_inspection_free(&S.look);
    for (size_t i = 0; i < S.n_orph; i++)
        free(S.orph[i]);
    free(S.orph);
    if (db->rk.rdb)
        akvi_cf_set_free(db, &S.cfs, rc == AKV_OK);
    else
        akvi_cf_set_free(db, &S.cfs, false);
    return rc;
}

int akv_repair(const char *dir, const akv_options *opt_in, akv_repair_report *report)
{
    if (report)
        memset(report, 0, sizeof *report);
    if (!dir || !*dir)
        return akvi_err(AKV_EINVAL, "akv_repair: no directory given");
    akv_options o;
    int rc = akvi_options_resolve(opt_in, &o);
    if (rc != AKV_OK)
        return rc;
    if (!opt_in)
        o.layout = AKV_LAYOUT_AUTO;
    akv_db *db = akvi_db_new(dir, &o, &rc);
    if (!db)
        return rc;
    db->missing_ok = true; /* a missing SST: look without paranoid checks, salvage the rest */
    rep R = {.db = db, .log = o.log, .log_arg = o.log_arg};
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        rc = akvi_err(AKV_EINVAL, "akv_repair: %s is not a directory", dir);
    else /* the lock before anything is read, moved or written */
        rc = akvi_dir_lock(db);
    if (rc == AKV_NOTFOUND)
        rc = akvi_err(AKV_EINVAL, "akv_repair: %s is not a directory", dir);
    if (rc == AKV_OK)
        rc = repair(db, &R);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", akv_errmsg());
    akvi_db_free(db); /* the lock too: the check below opens the database */
    R.db = NULL;
    if (rc == AKV_OK) {
        /* A repair that succeeds is followed by an open that succeeds: it
         * runs every check of open. Where it refuses, this repair could
         * not fix something, and says so rather than "0 lost". */
        akv_options vo = o;
        vo.create_if_missing = 0;
        vo.error_if_exists = 0;
        vo.wal_strict = 0;
        akv_db *v = NULL;
        int vrc = akvi_open_quiet(dir, &vo, &v);
        if (vrc == AKV_OK)
            vrc = akv_close(v);
        if (vrc != AKV_OK && vrc != AKV_EBUSY) {
            snprintf(
                msg, sizeof msg,
                "repair of %s finished, but the database still does not open (%s): this repair cannot fix "
                "that",
                dir, akv_errmsg());
            rc = AKV_ECORRUPT;
            note(&R, "%s", msg);
        } else if (vrc == AKV_EBUSY)
            note(&R,
                 "the check that the repaired database opens was not run: another handle opened it first");
    }
    if (report) {
        *report = R.r;
        report->text = R.text;
        R.text = NULL;
    }
    free(R.text);
    return rc == AKV_OK ? AKV_OK : akvi_err(rc, "%s", msg);
}
