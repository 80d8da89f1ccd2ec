/*
 * repair.c — akv_repair: salvage what the run files still hold, rebuild the
 * catalog and the filters, and say exactly what was lost
 * (docs/reliability.md, "Repair").
 *
 * Sources, most trusted first: the catalog (if one loads), the filter
 * files (each repeats its SST's catalog entry), the run files themselves,
 * and RocksDB's record of the memtable families and of an older format's
 * run families, whose files repair names in DIR/runs first: from then on
 * every run is its files, read back in full through adaptkv's own SST
 * reader. Repair sits beside recover.c at the top of the engine and
 * shares the handle (db.c), the identity (identity.c), the family set
 * (cfset.c) and open's inspection (inspect.c).
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/convert.h"
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

/* One of a run's SST files in DIR/runs (sst AKVI_RMAP_SST: its reverse
 * map), with a reader when it opens; bad: it fails its checksums. */
typedef struct rfile {
    uint64_t sst, bytes;
    char name[64];
    akvi_rs_sst *f;
    bool bad;
    char why[256];
} rfile;

typedef struct rrun {
    uint64_t id;
    uint32_t level;
    bool level_known, catalogued;
    bool unrecorded;   /* desc holds SSTs known by their files alone */
    bool converted;    /* its families' files are named in DIR/runs */
    uint64_t expected; /* entries the catalog or filter files record */
    akvi_cat_run desc; /* SSTs known from the catalog or filter files (may be partial) */
    rfile *files;
    size_t n_files;
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
    r->desc.id = id;
    return r;
}

static void rrun_free(rrun *r)
{
    for (size_t j = 0; j < r->n_files; j++)
        akvi_rs_sst_close(r->files[j].f);
    free(r->files);
    akvi_cat_run_free(&r->desc);
}

/* What the catalog or a filter file records for SST `sst` of r, or NULL. */
static akvi_cat_sst *sst_of(rrun *r, uint64_t sst)
{
    for (size_t j = 0; j < r->desc.n_sst; j++)
        if (r->desc.ssts[j].id == sst)
            return &r->desc.ssts[j];
    return NULL;
}

/* Its file in DIR/runs, or NULL. */
static rfile *file_of(rrun *r, uint64_t sst)
{
    for (size_t j = 0; j < r->n_files; j++)
        if (r->files[j].sst == sst)
            return &r->files[j];
    return NULL;
}

static int copy_key(uint8_t **to, size_t *to_len, const uint8_t *k, size_t kl)
{
    *to = malloc(kl ? kl : 1);
    if (!*to)
        return akvi_err(AKV_ENOMEM, "out of memory");
    memcpy(*to, k, kl);
    *to_len = kl;
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
    akvi_cat_sst *to = &d->ssts[d->n_sst];
    *to = *s;
    to->smallest = to->largest = NULL;
    int rc = copy_key(&to->smallest, &to->smallest_len, s->smallest, s->smallest_len);
    if (rc == AKV_OK)
        rc = copy_key(&to->largest, &to->largest_len, s->largest, s->largest_len);
    if (rc == AKV_OK)
        d->n_sst++;
    else
        free(to->smallest);
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
        uint64_t run, sst;
        if (akvi_file_name_parse(e->d_name, ".akf", &run, &sst) != AKVI_FNAME_FILE)
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

/* ---- run files ---------------------------------------------------------------- */

/* Puts DIR/runs/name in DIR/lost/ (a file repair could not use: never
 * deleted). keep_name: a hard link only, the name in DIR/runs left to
 * open's sweep once the catalog written at the end no longer names it, so
 * that a crash before that leaves the old catalog its file. */
static void to_lost(akv_db *db, rep *R, const char *name, const char *why, bool keep_name)
{
    char *lost = akvi_path_join(db->dir, "lost"), *from = akvi_path_join(db->sdir, name),
         *to = lost ? akvi_path_join(lost, name) : NULL;
    if (lost && from && to && (mkdir(lost, 0755) == 0 || errno == EEXIST) &&
        (link(from, to) == 0 || errno == EEXIST) && (keep_name || unlink(from) == 0)) {
        note(R, "runs/%s: %s; set aside in lost/", name, why);
        R->r.files_set_aside++;
    }
    free(lost);
    free(from);
    free(to);
}

/* An SST record of the file f reads: its size, entries and key range. */
/* The key the iterator is at after `seek` (the first or the last), copied. */
static int bound(akvi_rs_iter *it, int (*seek)(akvi_rs_iter *), uint8_t **k, size_t *kl)
{
    int rc = seek(it);
    if (rc == AKV_OK && !akvi_rs_iter_valid(it))
        rc = akvi_err(AKV_ECORRUPT, "the file holds no entry");
    size_t len = 0;
    const uint8_t *key = rc == AKV_OK ? akvi_rs_iter_key(it, &len) : NULL;
    return rc == AKV_OK ? copy_key(k, kl, key, len) : rc;
}

static int describe_file(akvi_rs_sst *f, uint64_t id, akvi_cat_sst *s)
{
    struct stat st;
    akvi_sstr_props p;
    akvi_rs_sst_props(f, &p);
    memset(s, 0, sizeof *s);
    s->id = id;
    s->keys = p.entries;
    s->bytes = stat(akvi_rs_sst_path(f), &st) == 0 ? (uint64_t)st.st_size : 0;
    akvi_rs_iter *it = NULL;
    int rc = akvi_rs_iter_new(&f, 1, true, &it);
    if (rc == AKV_OK)
        rc = bound(it, akvi_rs_iter_seek_first, &s->smallest, &s->smallest_len);
    if (rc == AKV_OK)
        rc = bound(it, akvi_rs_iter_seek_last, &s->largest, &s->largest_len);
    akvi_rs_iter_destroy(it);
    if (rc != AKV_OK) {
        free(s->smallest);
        free(s->largest);
        s->smallest = s->largest = NULL;
    }
    return rc;
}

typedef struct state {
    akv_db *db;
    rep *R;
    akvi_cf_set cfs;
    akvi_catalog cat;
    bool have_cat, trust_cat;
    akvi_inspection look; /* open's inspection, against the catalog (or none) */
    runs rs;
    struct fins {
        struct fin *v;
        size_t n;
    } F;
    char **orph;
    size_t n_orph;
} state;

/* Older formats keep runs in families run.<id> (and rmap.<id>): their
 * files are named in DIR/runs (convert.c), and the families become
 * leftovers, dropped as repair ends (the names keep the files). From here
 * on every run is its files. A file that cannot be named fails the
 * repair, its family kept. */
static int families_to_files(state *S)
{
    akv_db *db = S->db;
    akvi_live_sst *l = NULL;
    size_t nl = 0;
    int rc = akvi_live_ssts(db->rk.rdb, &l, &nl);
    for (size_t i = 0; rc == AKV_OK && i < S->cfs.n; i++) {
        uint64_t id = akvi_parse_id(S->cfs.names[i], "run.");
        id = id ? id : akvi_parse_id(S->cfs.names[i], "rmap.");
        if (!id)
            continue;
        rrun *r = run_of(&S->rs, id);
        if (!r)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
        else if (!r->converted)
            rc = akvi_convert_run(db, l, nl, r->id, &r->desc, false);
        if (rc == AKV_OK)
            r->converted = true;
        S->cfs.state[i] = AKVI_CF_LEFTOVER;
    }
    akvi_live_ssts_free(l, nl);
    return rc;
}

/* A recorded SST of a run that has no file in DIR/runs, matching s. */
static rrun *owner_of(state *S, const akvi_cat_sst *s, uint64_t *sst)
{
    for (size_t i = 0; i < S->rs.n; i++) {
        rrun *r = &S->rs.v[i];
        for (size_t j = 0; j < r->desc.n_sst; j++) {
            const akvi_cat_sst *d = &r->desc.ssts[j];
            char name[64];
            akvi_run_file_name(r->id, d->id, name, sizeof name);
            if (d->bytes != s->bytes || d->keys != s->keys ||
                akvi_bytes_cmp(d->smallest, d->smallest_len, s->smallest, s->smallest_len) != 0 ||
                akvi_bytes_cmp(d->largest, d->largest_len, s->largest, s->largest_len) != 0 ||
                akvi_path_exists_in(S->db->sdir, name))
                continue;
            *sst = d->id;
            return r;
        }
    }
    return NULL;
}

/* SST files RocksDB had forgotten (set aside in lost/): each that is a
 * recorded SST some run lacks is named as that SST again; any other stays
 * in lost/. */
static int restore_orphans(state *S)
{
    akv_db *db = S->db;
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < S->n_orph; i++) {
        const char *base = strrchr(S->orph[i], '/') + 1;
        akvi_rs_sst *f = NULL;
        akvi_cat_sst s;
        int frc = akvi_rs_sst_open(db->runstore, S->orph[i], &f);
        if (frc == AKV_OK)
            frc = describe_file(f, 0, &s);
        akvi_rs_sst_close(f);
        if (frc != AKV_OK) {
            note(S->R, "lost/%s: not an SST adaptkv can read (%s); left in lost/, not deleted", base,
                 akv_errmsg());
            S->R->r.files_set_aside++;
            continue;
        }
        uint64_t sst = 0;
        rrun *r = owner_of(S, &s, &sst);
        char to[4200];
        if (r)
            akvi_run_file_name(r->id, sst, to, sizeof to);
        char *path = r ? akvi_path_join(db->sdir, to) : NULL;
        if (r && !path)
            rc = akvi_err(AKV_ENOMEM, "out of memory");
        else if (r && (mkdir(db->sdir, 0755) == 0 || errno == EEXIST) && rename(S->orph[i], path) == 0) {
            note(S->R, "run %llu SST %llu: RocksDB's MANIFEST had forgotten its file %s; restored",
                 (unsigned long long)r->id, (unsigned long long)sst, base);
            S->R->r.ssts_restored++;
        } else if (r)
            rc = akvi_err(AKV_EIO, "moving %s to %s: %s", S->orph[i], path, strerror(errno));
        else {
            note(S->R, "lost/%s (%llu entries): not an SST any run lacks; left in lost/, not deleted", base,
                 (unsigned long long)s.keys);
            S->R->r.files_set_aside++;
        }
        free(path);
        free(s.smallest);
        free(s.largest);
    }
    return rc;
}

/* Every run file in DIR/runs, opened and checked, with its run (a run
 * known by its files alone: level unknown). A file no record describes is
 * described by what it reads; one that also fails its checksums goes to
 * lost/. */
static int collect_files(state *S)
{
    akv_db *db = S->db;
    DIR *d = opendir(db->sdir);
    if (!d)
        return errno == ENOENT ? AKV_OK : akvi_err(AKV_EIO, "reading %s: %s", db->sdir, strerror(errno));
    int rc = AKV_OK;
    struct dirent *e;
    while (rc == AKV_OK && (e = readdir(d)) != NULL) {
        uint64_t id, sst;
        if (akvi_file_name_parse(e->d_name, ".sst", &id, &sst) != AKVI_FNAME_FILE)
            continue; /* a temp name (swept by open), or not adaptkv's */
        if (sst == AKVI_RMAP_SST && db->layout != AKV_LAYOUT_ORDERED) {
            to_lost(db, S->R, e->d_name, "a reverse map in the hash layout", false);
            continue;
        }
        rrun *r = run_of(&S->rs, id);
        rfile *g = r ? realloc(r->files, (r->n_files + 1) * sizeof *g) : NULL;
        if (!g) {
            rc = akvi_err(AKV_ENOMEM, "out of memory");
            break;
        }
        r->files = g;
        rfile *f = memset(&g[r->n_files++], 0, sizeof *g);
        f->sst = sst;
        akvi_run_file_name(id, sst, f->name, sizeof f->name);
        char *path = akvi_path_join(db->sdir, e->d_name);
        struct stat st;
        f->bytes = path && stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
        int frc = path ? akvi_rs_sst_open(db->runstore, path, &f->f) : akvi_err(AKV_ENOMEM, "out of memory");
        if (frc == AKV_OK)
            frc = akvi_rs_sst_verify(f->f);
        free(path);
        if (frc != AKV_OK) {
            f->bad = true;
            snprintf(f->why, sizeof f->why, "%s", akv_errmsg());
        }
        if (sst == AKVI_RMAP_SST || sst_of(r, sst))
            continue;
        akvi_cat_sst s;
        if (!f->bad && describe_file(f->f, sst, &s) == AKV_OK) {
            r->unrecorded = true;
            rc = add_sst(&r->desc, &s);
            free(s.smallest);
            free(s.largest);
            continue;
        }
        to_lost(db, S->R, f->name, f->bad ? f->why : "it does not read, and nothing records what it held",
                false);
        akvi_rs_sst_close(f->f);
        r->n_files--;
    }
    closedir(d);
    for (size_t i = 0; i < S->rs.n; i++)
        akvi_sort(S->rs.v[i].desc.ssts, S->rs.v[i].desc.n_sst, sizeof *S->rs.v[i].desc.ssts, cmp_sst_range);
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

/* The final shape: kept runs (their files, filters rebuilt) and rewritten
 * ones (a run writer's). `order` places a run as its original. */
typedef struct fin {
    akvi_run *run;
    uint64_t order;
    akv_filter **filters; /* kept runs: rebuilt, written at the end */
} fin;

typedef struct fins fins;

static void fin_free(fin *f)
{
    for (size_t j = 0; f->filters && j < f->run->info.n_sst; j++)
        akv_filter_destroy(f->filters[j]);
    free(f->filters);
    f->filters = NULL;
    akvi_run_unref(f->run);
}

static bool final_holds(void *arg, uint64_t run, uint64_t sst)
{
    const fins *F = arg;
    for (size_t i = 0; i < F->n; i++)
        if (F->v[i].run->info.id == run && sst < F->v[i].run->info.n_sst)
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

/* Read a described run back in full from its files: whole (every SST as
 * recorded, its files intact), with a fresh filter for each SST. */
static int verify_run(akv_db *db, rrun *r, akv_filter ***out, bool *whole, uint64_t *lost, uint32_t *damaged)
{
    akvi_cat_run *d = &r->desc;
    *whole = true;
    akv_filter **filters = calloc(d->n_sst ? d->n_sst : 1, sizeof *filters);
    if (!filters)
        return akvi_err(AKV_ENOMEM, "out of memory");
    int rc = AKV_OK;
    uint64_t keys = 0, raw = 0;
    for (size_t j = 0; rc == AKV_OK && j < d->n_sst; j++) {
        akvi_cat_sst *s = &d->ssts[j];
        const rfile *f = file_of(r, s->id);
        hashes hs = {.db = db};
        uint64_t n = 0;
        bool w = false;
        if (f && f->f)
            rc = akvi_salvage_range(f->f, s->smallest, s->smallest_len, s->largest, s->largest_len, collect,
                                    &hs, &n, &w);
        uint64_t digest = akvi_key_digest(hs.h, hs.n);
        bool ok =
            rc == AKV_OK && f && w && !f->bad && n == s->keys && (s->digest == 0 || s->digest == digest);
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
        const rfile *m = file_of(r, AKVI_RMAP_SST);
        akvi_sstr_props p = {0};
        if (m && m->f)
            akvi_rs_sst_props(m->f, &p);
        if (!m || !m->f || m->bad || p.entries != keys)
            *whole = false; /* the reverse map is rebuilt by a rewrite */
    }
    if (rc != AKV_OK || !*whole) {
        for (size_t j = 0; j < d->n_sst; j++)
            akv_filter_destroy(filters[j]);
        free(filters);
        return rc;
    }
    *out = filters;
    d->keys = keys;
    d->files = true;
    if (!r->catalogued) {
        uint64_t bytes = 0;
        for (size_t j = 0; j < d->n_sst; j++)
            bytes += d->ssts[j].bytes;
        d->bytes = bytes;
        d->raw_bytes = raw;
    }
    return AKV_OK;
}

/* Rewrite a run from whatever of its files can be read, SST by SST in key
 * order. */
static int rewrite_run(akv_db *db, rrun *r, uint32_t level, uint64_t est, akvi_run **out, uint64_t *read)
{
    akvi_runwriter *w = NULL;
    *out = NULL;
    *read = 0;
    akvi_shards sh = AKVI_SHARDS_NONE;
    akvi_shards_add(&sh, &r->desc);
    int rc = akvi_rw_begin(db, (int)level, est, &sh, &w);
    for (size_t j = 0; rc == AKV_OK && j < r->desc.n_sst; j++) {
        const akvi_cat_sst *s = &r->desc.ssts[j];
        const rfile *f = file_of(r, s->id);
        uint64_t n = 0;
        bool whole;
        if (f && f->f)
            rc = akvi_salvage_range(f->f, s->smallest, s->smallest_len, s->largest, s->largest_len, to_writer,
                                    w, &n, &whole);
        *read += n;
    }
    if (rc == AKV_OK)
        return akvi_rw_finish(w, out);
    akvi_rw_abort(w);
    return rc;
}

/* A kept run: a run object over its files, whose readers (opened and
 * checked by collect_files, every one there: verify_run said whole) it
 * takes over; no slots: repair writes its filters, open loads them. */
static int keep_run(akv_db *db, rrun *r, akv_filter **filters, fin *out)
{
    akvi_run *k = calloc(1, sizeof *k);
    akvi_rs_sst **files = calloc(r->desc.n_sst ? r->desc.n_sst : 1, sizeof *files);
    if (!k || !files) {
        free(k);
        free(files);
        for (size_t j = 0; j < r->desc.n_sst; j++)
            akv_filter_destroy(filters[j]);
        free(filters);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    for (size_t j = 0; j < r->desc.n_sst; j++) {
        rfile *f = file_of(r, r->desc.ssts[j].id);
        files[j] = f->f;
        f->f = NULL;
    }
    rfile *m = db->layout == AKV_LAYOUT_ORDERED ? file_of(r, AKVI_RMAP_SST) : NULL;
    if (m) {
        k->rmap_file = m->f;
        m->f = NULL;
    }
    atomic_init(&k->refs, 1);
    k->db = db;
    k->info = r->desc;
    k->files = files;
    memset(&r->desc, 0, sizeof r->desc);
    *out = (fin){.run = k, .order = r->id, .filters = filters};
    return AKV_OK;
}

/* ---- the catalog, the memtables and the families ------------------------------ */

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
    for (size_t i = 0; i < S->rs.n; i++) {
        rrun *r = &S->rs.v[i];
        for (size_t j = 0; j < r->desc.n_sst; j++)
            r->expected += r->desc.ssts[j].keys;
    }
    return rc;
}

/* ---- putting it together ----------------------------------------------------- */

static int cmp_fin(const void *a, const void *b)
{
    const fin *x = a, *y = b;
    uint32_t lx = x->run->info.level, ly = y->run->info.level;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return (x->order < y->order) - (x->order > y->order); /* newest first */
}

/* Hash layout: an SST's shard prefix is the shard of its key range (the
 * range its file holds is checked against the record before the run is
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

/* A run that cannot be kept as it is: rewritten from what of it reads, its
 * damaged files moved to lost/. */
static int rewrite(state *S, rrun *r, bool described, uint32_t damaged)
{
    rep *R = S->R;
    uint32_t level = r->level_known ? r->level : 0;
    uint64_t read = 0, est = r->desc.raw_bytes;
    for (size_t j = 0; est == 0 && j < r->n_files; j++)
        est += r->files[j].bytes; /* sizes on disk: at worst fewer shards than a flush would cut */
    akvi_run *out = NULL;
    int rc = rewrite_run(S->db, r, level, est, &out, &read);
    if (rc != AKV_OK)
        return rc;
    uint64_t lost = r->expected > read ? r->expected - read : 0;
    if (!described && r->expected == 0)
        lost = 0;
    char lostmsg[96];
    if (r->expected || described)
        snprintf(lostmsg, sizeof lostmsg, "%llu of %llu recorded entries lost", (unsigned long long)lost,
                 (unsigned long long)r->expected);
    else
        snprintf(lostmsg, sizeof lostmsg, "no record of how many entries it held");
    if (!r->level_known)
        note(R,
             "run %llu: its level is unknown (no catalog entry or filter file); placed at level 0 by its id",
             (unsigned long long)r->id);
    if (out)
        note(R, "run %llu (level %u): %s; %llu entries read, rewritten as run %llu",
             (unsigned long long)r->id, level, lostmsg, (unsigned long long)read,
             (unsigned long long)out->info.id);
    else
        note(R, "run %llu (level %u): %s; nothing readable, dropped", (unsigned long long)r->id, level,
             lostmsg);
    R->r.entries_lost += lost;
    R->r.ssts_damaged += damaged ? damaged : (lost ? 1 : 0);
    for (size_t j = 0; j < r->n_files; j++)
        if (r->files[j].bad)
            to_lost(S->db, R, r->files[j].name, r->files[j].why, true);
    if (!out) {
        R->r.runs_dropped++;
        return AKV_OK;
    }
    R->r.runs_rewritten++;
    R->r.entries_kept += read;
    rc = fins_add(&S->F, (fin){.run = out, .order = r->id});
    if (rc != AKV_OK)
        akvi_run_unref(out);
    return rc;
}

/* Decide and carry out each run's fate. The files of runs not kept stay
 * until open sweeps them (the catalog written at the end no longer names
 * them), damaged ones in lost/. */
static int settle_runs(state *S)
{
    rep *R = S->R;
    int rc = AKV_OK;
    for (size_t i = 0; rc == AKV_OK && i < S->rs.n; i++) {
        rrun *r = &S->rs.v[i];
        if (!r->catalogued && S->trust_cat && r->id < S->cat.next_run_id) {
            note(R, "run %llu: a leftover of a flush or compaction the catalog accounts for; dropped",
                 (unsigned long long)r->id);
            R->r.runs_dropped++;
            continue;
        }
        if (S->db->layout == AKV_LAYOUT_HASH)
            fix_prefixes(S, r);
        /* Filter files alone may not describe every SST. */
        bool described = r->level_known && r->desc.n_sst && !r->unrecorded, whole = false;
        uint64_t lost = 0;
        uint32_t damaged = 0;
        akv_filter **filters = NULL;
        if (described)
            rc = verify_run(S->db, r, &filters, &whole, &lost, &damaged);
        if (rc != AKV_OK || !whole) {
            rc = rc == AKV_OK ? rewrite(S, r, described, damaged) : rc;
            continue;
        }
        note(R, "run %llu (level %u): whole, %llu entries in %zu SSTs; kept", (unsigned long long)r->id,
             r->desc.level, (unsigned long long)r->desc.keys, r->desc.n_sst);
        R->r.runs_kept++;
        R->r.entries_kept += r->desc.keys;
        fin f;
        rc = keep_run(S->db, r, filters, &f);
        if (rc == AKV_OK && (rc = fins_add(&S->F, f)) != AKV_OK)
            fin_free(&f);
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
        uint32_t level = S->F.v[i].run->info.level;
        size_t k = 1;
        while (i + k < S->F.n && S->F.v[i + k].run->info.level == level)
            k++;
        if (level == 0 || k == 1) {
            i += k;
            continue;
        }
        akvi_run **ins = calloc(k, sizeof *ins);
        if (!ins)
            return akvi_err(AKV_ENOMEM, "out of memory");
        uint64_t est = 0;
        akvi_shards sh = AKVI_SHARDS_NONE;
        for (size_t m = 0; m < k; m++) {
            ins[m] = S->F.v[i + m].run;
            est += ins[m]->info.raw_bytes;
            akvi_shards_add(&sh, &ins[m]->info);
        }
        akvi_run **outs = NULL, *out = NULL;
        size_t n_out = 0;
        /* One output run (no size cut): a level of one run is always valid. */
        rc = akvi_rw_merge(S->db, NULL, ins, k, (int)level, est, &sh, UINT64_MAX, false, &outs, &n_out);
        if (rc == AKV_OK && n_out)
            out = outs[0];
        free(outs);
        free(ins);
        if (rc != AKV_OK)
            break;
        note(S->R, "level %u held %zu runs; merged, newest first, into run %llu", level, k,
             out ? (unsigned long long)out->info.id : 0ULL);
        uint64_t order = S->F.v[i].order;
        for (size_t m = 0; m < k; m++) {
            atomic_store(&S->F.v[i + m].run->obsolete, true);
            fin_free(&S->F.v[i + m]);
        }
        memmove(&S->F.v[i + 1], &S->F.v[i + k], (S->F.n - i - k) * sizeof *S->F.v);
        S->F.n -= k - 1;
        if (out)
            S->F.v[i++] = (fin){.run = out, .order = order};
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
        c.runs[i] = S->F.v[i].run->info;
    int rc = AKV_OK;
    /* Filters first, then the catalog that names them, then the identity. */
    for (size_t i = 0; rc == AKV_OK && i < S->F.n; i++) {
        fin *f = &S->F.v[i];
        for (size_t j = 0; rc == AKV_OK && j < f->run->info.n_sst; j++)
            if (f->filters)
                rc = akvi_slot_write_file(db->fdir, &f->run->info, j, f->filters[j]);
        S->R->r.filters_rebuilt += (uint32_t)f->run->info.n_sst;
    }
    if (rc == AKV_OK)
        rc = akvi_fsync_dir(db->fdir);
    if (rc == AKV_OK && akvi_path_exists_in(db->dir, "runs")) /* names linked or restored there */
        rc = akvi_fsync_dir(db->sdir);
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
    bool identity_pending = rc == AKV_NOTFOUND, made;
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
    if (rc == AKV_OK) /* run writers write their SSTs there first */
        rc = akvi_make_dir(db->tdir, &made);
    if (rc == AKV_OK)
        rc = gather(&S);
    if (rc == AKV_OK)
        rc = families_to_files(&S);
    if (rc == AKV_OK)
        rc = restore_orphans(&S);
    if (rc == AKV_OK)
        rc = collect_files(&S);
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
        rc = renew_families(&S);
    if (rc == AKV_OK)
        rc = settle_runs(&S);
    if (rc == AKV_OK)
        rc = merge_levels(&S);
    uint64_t flushed = rc == AKV_OK ? settle_mems(&S) : 0;
    /* Families the inspection found are not adaptkv's: the scratch family
     * of an interrupted repair of an older version is dropped, any other
     * left alone. */
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
    for (size_t i = 0; i < S.rs.n; i++)
        rrun_free(&S.rs.v[i]);
    free(S.rs.v);
    akvi_catalog_free(&S.cat);
    akvi_inspection_free(&S.look);
    for (size_t i = 0; i < S.n_orph; i++)
        free(S.orph[i]);
    free(S.orph);
    akvi_cf_set_free(db, &S.cfs, rc == AKV_OK && db->rk.rdb);
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
