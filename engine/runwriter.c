/*
 * runwriter.c — turns a sorted stream of entries into a run: SST files cut
 * into shards, one filter slot per SST built from the keys as they stream
 * by, filter files written, and the SSTs moved to their names in DIR/runs,
 * which are the run: no column family, no ingestion, nothing RocksDB's
 * write thread waits for (docs/design.md, "Run files").
 *
 * Hash layout: a run of S = 2^b SSTs is cut on the top b bits of h.hi, so
 * each SST owns an aligned hash prefix and its filter can skip those bits.
 * Ordered layout: SSTs are cut by size at key boundaries, and the run's
 * reverse map (BE64(h.hi) ‖ user key) is one more file, <run>-rmap.sst.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"
#include "engine/runstore.h"
#include "engine/sstwriter.h"
#include "util/order.h"

typedef struct rmap_ent {
    uint64_t hi;
    size_t off;
    uint32_t len;
} rmap_ent;

struct akvi_runwriter {
    akv_db *db;
    int level;
    uint64_t run_id;
    uint32_t prefix_bits;
    uint64_t target, est_bytes;
    bool zstd; /* compress its SSTs */

    akvi_cat_sst *ssts; /* finished SSTs */
    akv_filter **filters;
    char **paths;
    size_t n_sst, cap_sst, n_paths;
    uint64_t keys, bytes, raw_bytes;

    akvi_sstw *w; /* current SST */
    uint64_t cur_prefix, cur_bytes;
    akv_hash *hashes;
    size_t n, cap;
    uint8_t *first, *last;
    size_t first_len, last_len, last_cap;

    const akvi_run *const *replaces; /* a compaction's inputs */
    size_t n_replaces;

    rmap_ent *rm; /* ordered layout: the reverse map, sorted at the end */
    size_t n_rm, cap_rm;
    uint8_t *arena;
    size_t arena_len, arena_cap;
};

static uint32_t choose_prefix_bits(uint64_t est, uint64_t target)
{
    uint32_t b = 0;
    while (b < 16 && (est >> b) > target)
        b++;
    return b;
}

void akvi_shards_add(akvi_shards *s, const akvi_cat_run *r)
{
    if (r->n_sst == 0)
        return;
    double unit = ldexp(1.0, -(int)r->prefix_bits);
    double lo = (double)r->ssts[0].prefix * unit, hi = (double)(r->ssts[r->n_sst - 1].prefix + 1) * unit;
    if (r->prefix_bits > s->min_bits)
        s->min_bits = r->prefix_bits;
    if (lo < s->lo)
        s->lo = lo;
    if (hi > s->hi)
        s->hi = hi;
}

/* Hash layout: enough prefix bits that a shard holds about `target` bytes
 * at the density the input has over the part of the space it covers, and
 * at least the inputs' own. */
static uint32_t shard_bits(uint64_t est, uint64_t target, const akvi_shards *sh)
{
    double span = sh && sh->hi > sh->lo ? sh->hi - sh->lo : 1;
    uint32_t b = choose_prefix_bits((uint64_t)((double)est / span), target);
    return sh && sh->min_bits > b ? sh->min_bits : b;
}

int akvi_rw_begin(akv_db *db, int level, uint64_t est_bytes, const akvi_shards *sh, akvi_runwriter **out)
{
    akvi_runwriter *w = calloc(1, sizeof *w);
    if (!w)
        return akvi_err(AKV_ENOMEM, "out of memory");
    w->db = db;
    w->level = level;
    w->run_id = db->vs.next_run_id++;
    /* Before the id names a file or family, the catalog on disk must
     * reserve it: open deletes what carries a reserved id and the catalog
     * does not name, and refuses what carries an id beyond the reserve. */
    int rc = akvi_catalog_reserve(db, w->run_id);
    if (rc != AKV_OK) {
        free(w);
        return rc;
    }
    w->target = db->opt.sst_target_bytes ? db->opt.sst_target_bytes : 64u << 20;
    w->est_bytes = est_bytes;
    if (db->layout == AKV_LAYOUT_HASH)
        w->prefix_bits = shard_bits(est_bytes, w->target, sh);
    /* Hot, freshly flushed data stays uncompressed; deeper levels use zstd. */
    w->zstd = level >= 1;
    *out = w;
    return AKV_OK;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return AKV_OK;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return akvi_err(AKV_ENOMEM, "out of memory writing a run");
    *p = q;
    *cap = c;
    return AKV_OK;
}

static int open_sst(akvi_runwriter *w, uint64_t prefix)
{
    int rc = grow((void **)&w->paths, &w->cap_sst, w->n_sst + 1, sizeof *w->paths);
    if (rc != AKV_OK)
        return rc;
    /* keep the three arrays the same capacity */
    void *f = realloc(w->filters, w->cap_sst * sizeof *w->filters);
    void *s = realloc(w->ssts, w->cap_sst * sizeof *w->ssts);
    if (!f || !s)
        return akvi_err(AKV_ENOMEM, "out of memory");
    w->filters = f;
    w->ssts = s;
    char path[4096];
    snprintf(path, sizeof path, "%s/%llu-%zu.sst", w->db->tdir, (unsigned long long)w->run_id, w->n_sst);
    w->paths[w->n_sst] = strdup(path);
    w->n_paths = w->n_sst + 1;
    w->ssts[w->n_sst] = (akvi_cat_sst){0};
    w->filters[w->n_sst] = NULL;
    char *err = NULL;
    w->w = akvi_sstw_open(path, w->zstd, &err);
    if (!w->w)
        return akvi_rocks_err(err, "creating an SST file");
    w->cur_prefix = prefix;
    w->cur_bytes = 0;
    w->n = 0;
    return AKV_OK;
}

/* The keys of the whole flush or compaction output this run is part of,
 * for its slots' bits per key (their unit's share of the filter memory,
 * slotbuild.c): est_bytes of what this run's SSTs so far hold per key.
 * After finish_sst counted the current SST in. */
static uint64_t output_keys_estimate(const akvi_runwriter *w)
{
    if (w->raw_bytes == 0 || w->est_bytes <= w->raw_bytes)
        return w->keys;
    return (uint64_t)((double)w->keys * (double)w->est_bytes / (double)w->raw_bytes);
}

static int finish_sst(akvi_runwriter *w)
{
    char *err = NULL;
    bool ok = akvi_sstw_finish(w->w, &err);
    akvi_sstw_destroy(w->w);
    w->w = NULL;
    if (!ok)
        return akvi_rocks_err(err, "finishing an SST file");
    struct stat st;
    akvi_cat_sst *s = &w->ssts[w->n_sst];
    s->id = w->n_sst;
    s->keys = w->n;
    s->bytes = stat(w->paths[w->n_sst], &st) == 0 ? (uint64_t)st.st_size : w->cur_bytes;
    s->prefix = w->cur_prefix;
    const akv_filter_kind *k = akvi_build_kind(w->db, w->level);
    snprintf(s->kind, sizeof s->kind, "%s", k->name);
    s->smallest = w->first;
    s->smallest_len = w->first_len;
    s->largest = malloc(w->last_len ? w->last_len : 1);
    if (!s->largest)
        return akvi_err(AKV_ENOMEM, "out of memory");
    memcpy(s->largest, w->last, w->last_len);
    s->largest_len = w->last_len;
    w->first = NULL;
    w->n_sst++;
    w->keys += s->keys;
    w->bytes += s->bytes;
    w->raw_bytes += w->cur_bytes;
    /* Before the build sorts the hashes: the digest is over SST order. */
    s->digest = akvi_key_digest(w->hashes, w->n);
    akvi_cat_run run = {.id = w->run_id,
                        .level = (uint32_t)w->level,
                        .prefix_bits = w->prefix_bits,
                        .keys = output_keys_estimate(w),
                        .n_sst = w->n_sst,
                        .ssts = w->ssts};
    int rc = akvi_build_filter(w->db, w->level, &run, s, w->hashes, w->n, w->n, w->replaces, w->n_replaces,
                               &w->filters[w->n_sst - 1]);
    if (rc == AKV_OK) /* the kind actually built (after any fallback) */
        snprintf(s->kind, sizeof s->kind, "%s", w->filters[w->n_sst - 1]->kind->name);
    if (rc == AKV_OK)
        rc = akvi_slot_write_file(w->db->fdir, &run, w->n_sst - 1, w->filters[w->n_sst - 1]);
    return rc;
}

static int add_rmap(akvi_runwriter *w, uint64_t hi, const uint8_t *uk, size_t klen)
{
    if (grow((void **)&w->rm, &w->cap_rm, w->n_rm + 1, sizeof *w->rm) != AKV_OK ||
        grow((void **)&w->arena, &w->arena_cap, w->arena_len + klen, 1) != AKV_OK)
        return AKV_ENOMEM;
    memcpy(w->arena + w->arena_len, uk, klen);
    w->rm[w->n_rm++] = (rmap_ent){hi, w->arena_len, (uint32_t)klen};
    w->arena_len += klen;
    return AKV_OK;
}

int akvi_rw_add(akvi_runwriter *w, const uint8_t *ikey, size_t iklen, const uint8_t *val, size_t vlen)
{
    akv_db *db = w->db;
    size_t klen;
    const uint8_t *uk = akvi_ukey(db, ikey, iklen, &klen);
    akv_hash h = akv_hash_key(uk, klen, db->seed);
    int rc;
    if (db->layout == AKV_LAYOUT_HASH) {
        uint64_t p = w->prefix_bits ? h.hi >> (64 - w->prefix_bits) : 0;
        if (w->w && p != w->cur_prefix && (rc = finish_sst(w)) != AKV_OK)
            return rc;
        if (!w->w && (rc = open_sst(w, p)) != AKV_OK)
            return rc;
    } else {
        if (w->w && w->cur_bytes >= w->target && (rc = finish_sst(w)) != AKV_OK)
            return rc;
        if (!w->w && (rc = open_sst(w, 0)) != AKV_OK)
            return rc;
        if ((rc = add_rmap(w, h.hi, uk, klen)) != AKV_OK)
            return rc;
    }
    char *err = NULL;
    if (!akvi_sstw_put(w->w, ikey, iklen, val, vlen, &err))
        return akvi_rocks_err(err, "writing an SST file");
    if (w->n == 0) {
        w->first = malloc(iklen);
        if (!w->first)
            return akvi_err(AKV_ENOMEM, "out of memory");
        memcpy(w->first, ikey, iklen);
        w->first_len = iklen;
    }
    if ((rc = grow((void **)&w->last, &w->last_cap, iklen, 1)) != AKV_OK ||
        (rc = grow((void **)&w->hashes, &w->cap, w->n + 1, sizeof *w->hashes)) != AKV_OK)
        return rc;
    memcpy(w->last, ikey, iklen);
    w->last_len = iklen;
    w->hashes[w->n++] = h;
    w->cur_bytes += iklen + vlen;
    return AKV_OK;
}

static void run_file_path(const akv_db *db, uint64_t run, uint64_t sst, char *out, size_t cap)
{
    char name[64];
    akvi_run_file_name(run, sst, name, sizeof name);
    snprintf(out, cap, "%s/%s", db->sdir, name);
}

/* Moves the finished (synced) SST file `from` to its name in DIR/runs,
 * creating DIR/runs if missing; the caller syncs DIR/runs once for the
 * run before a catalog names it. */
static int place_file(akv_db *db, const char *from, uint64_t run, uint64_t sst)
{
    char path[4096];
    run_file_path(db, run, sst, path, sizeof path);
    int rc = rename(from, path);
    if (rc != 0 && errno == ENOENT && mkdir(db->sdir, 0755) == 0)
        rc = rename(from, path);
    if (rc != 0)
        return akvi_err(AKV_EIO, "moving %s to %s: %s", from, path, strerror(errno));
    return AKV_OK;
}

static int cmp_rmap(const void *a, const void *b, void *arena)
{
    const rmap_ent *x = a, *y = b;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return akvi_bytes_cmp((uint8_t *)arena + x->off, x->len, (uint8_t *)arena + y->off, y->len);
}

/* Ordered layout: write the sorted reverse map as one SST, the run's file
 * DIR/runs/<run>-rmap.sst. */
static int write_rmap(akvi_runwriter *w)
{
    akv_db *db = w->db;
    qsort_r(w->rm, w->n_rm, sizeof *w->rm, cmp_rmap, w->arena);
    char path[4096];
    snprintf(path, sizeof path, "%s/%llu-rmap.sst", db->tdir, (unsigned long long)w->run_id);
    char *err = NULL;
    akvi_sstw *sw = akvi_sstw_open(path, false, &err);
    bool ok = sw != NULL;
    uint8_t key[AKV_MAX_KEY_BYTES + 8];
    for (size_t i = 0; ok && i < w->n_rm; i++) {
        akvi_be64(key, w->rm[i].hi);
        memcpy(key + 8, w->arena + w->rm[i].off, w->rm[i].len);
        ok = akvi_sstw_put(sw, key, 8 + w->rm[i].len, "", 0, &err);
    }
    if (ok)
        ok = akvi_sstw_finish(sw, &err);
    akvi_sstw_destroy(sw);
    if (!ok) {
        unlink(path);
        return akvi_rocks_err(err, "writing a reverse map");
    }
    int rc = place_file(db, path, w->run_id, AKVI_RMAP_SST);
    if (rc != AKV_OK)
        unlink(path);
    return rc;
}

static int make_run(akvi_runwriter *w, akvi_run **out)
{
    akvi_run *r = calloc(1, sizeof *r);
    akvi_slot *slots = calloc(w->n_sst, sizeof *slots);
    if (!r || !slots) {
        free(r);
        free(slots);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    atomic_init(&r->refs, 1);
    r->db = w->db;
    r->info = (akvi_cat_run){.id = w->run_id,
                             .level = (uint32_t)w->level,
                             .prefix_bits = w->prefix_bits,
                             .keys = w->keys,
                             .bytes = w->bytes,
                             .raw_bytes = w->raw_bytes,
                             .files = true,
                             .n_sst = w->n_sst,
                             .ssts = w->ssts};
    for (size_t j = 0; j < w->n_sst; j++) {
        akvi_slot_init(&slots[j], w->filters[j]);
        akvi_slot_bind(&slots[j], &r->info, j);
        w->filters[j] = NULL;
    }
    r->slots = slots;
    w->ssts = NULL;
    w->n_sst = 0;
    *out = r;
    return AKV_OK;
}

int akvi_run_link_file(akv_db *db, const char *from, uint64_t run, uint64_t sst)
{
    char path[4096], tmp[4200];
    run_file_path(db, run, sst, path, sizeof path);
    struct stat a, b;
    if (stat(path, &a) == 0 && stat(from, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
        return AKV_OK; /* named so already */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
    int rc = link(from, tmp);
    if (rc != 0 && errno == ENOENT && mkdir(db->sdir, 0755) == 0)
        rc = link(from, tmp);
    if (rc != 0)
        return akvi_err(AKV_EIO, "linking %s as %s: %s", from, path, strerror(errno));
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return akvi_err(AKV_EIO, "renaming %s: %s", tmp, strerror(e));
    }
    return AKV_OK;
}

int akvi_run_open_files(akv_db *db, akvi_run *r)
{
    akvi_rs_sst **f = calloc(r->info.n_sst ? r->info.n_sst : 1, sizeof *f);
    if (!f)
        return akvi_err(AKV_ENOMEM, "out of memory");
    int rc = AKV_OK;
    char path[4096];
    for (size_t j = 0; rc == AKV_OK && j < r->info.n_sst; j++) {
        run_file_path(db, r->info.id, r->info.ssts[j].id, path, sizeof path);
        rc = akvi_rs_sst_open(db->runstore, path, &f[j]);
    }
    akvi_rs_sst *rmap = NULL;
    if (rc == AKV_OK && db->layout == AKV_LAYOUT_ORDERED) {
        run_file_path(db, r->info.id, AKVI_RMAP_SST, path, sizeof path);
        rc = akvi_rs_sst_open(db->runstore, path, &rmap);
    }
    if (rc != AKV_OK) {
        for (size_t j = 0; j < r->info.n_sst; j++)
            akvi_rs_sst_close(f[j]);
        free(f);
        return rc;
    }
    akvi_run_close_files(r);
    r->files = f;
    r->rmap_file = rmap;
    return AKV_OK;
}

/* Moves the run's SSTs to their names in DIR/runs (w->paths[j] then name
 * nothing). */
static int place_files(akvi_runwriter *w)
{
    int rc = AKV_OK;
    for (size_t j = 0; rc == AKV_OK && j < w->n_sst; j++)
        if ((rc = place_file(w->db, w->paths[j], w->run_id, w->ssts[j].id)) == AKV_OK)
            w->paths[j][0] = '\0';
    return rc;
}

int akvi_rw_finish(akvi_runwriter *w, akvi_run **out)
{
    *out = NULL;
    int rc = AKV_OK;
    if (w->w && w->n > 0)
        rc = finish_sst(w);
    if (rc != AKV_OK || w->n_sst == 0) {
        akvi_rw_abort(w);
        return rc;
    }
    /* The run is its files in DIR/runs: no column family, no ingestion, no
     * MANIFEST or OPTIONS write (docs/design.md, "Run files"). Each SST is
     * synced by its writer; one directory sync makes the names durable
     * before the commit's catalog names the run. */
    rc = place_files(w);
    if (rc == AKV_OK && w->db->layout == AKV_LAYOUT_ORDERED)
        rc = write_rmap(w);
    if (rc == AKV_OK)
        rc = akvi_fsync_dir(w->db->sdir);
    if (rc != AKV_OK)              /* its files go with akvi_rw_abort below */
        rc = akvi_stop(w->db, rc); /* as a failed write of the data: writers stop */
    if (rc == AKV_OK)
        rc = make_run(w, out);
    if (rc == AKV_OK && (rc = akvi_run_open_files(w->db, *out)) != AKV_OK) {
        /* Never committed: its files and filter files go. */
        atomic_store(&(*out)->obsolete, true);
        akvi_run_unref(*out);
        *out = NULL;
    }
    atomic_fetch_add(&w->db->st.bytes_written_disk, w->bytes);
    atomic_fetch_add(&w->db->st.bytes_written_level[w->level < AKV_MAX_LEVELS ? w->level : AKV_MAX_LEVELS - 1],
                     w->bytes);
    akvi_rw_abort(w);
    return rc;
}

/* ---- a run from a merge of column families (flush, compaction) ---------- */

/* Runs a merge is written into, in key order. */
typedef struct outputs {
    akvi_run **v;
    size_t n;
} outputs;

static int seal(akvi_runwriter *w, outputs *o)
{
    akvi_run *r = NULL;
    int rc = akvi_rw_finish(w, &r);
    if (rc != AKV_OK || !r)
        return rc;
    akvi_run **v = realloc(o->v, (o->n + 1) * sizeof *v);
    if (!v) {
        akvi_run_unref(r);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    o->v = v;
    o->v[o->n++] = r;
    return AKV_OK;
}

/*
 * Stream a merge into run writers, a new run once one holds run_bytes;
 * tombstones dropped when asked. Hash layout: every SST must stay one
 * aligned shard (its slot sees the hash with the shard prefix shifted out,
 * and uniform bits), so all runs of a merge split on the same prefix bits
 * (chosen from the whole merge's size) and a run ends only where a shard
 * ends. Ordered layout: a run may end after any key.
 */
static int copy_merge(akv_db *db, akvi_merge *mg, akvi_run *const *runs, size_t n, int level, uint64_t est,
                      const akvi_shards *sh, uint64_t run_bytes, bool drop_tombstones, outputs *o)
{
    akvi_runwriter *w = NULL;
    int rc = AKV_OK;
    for (akvi_merge_seek_first(mg); rc == AKV_OK && akvi_merge_valid(mg); akvi_merge_next(mg)) {
        size_t kl, vl;
        const uint8_t *k = akvi_merge_key(mg, &kl);
        const uint8_t *val = akvi_merge_value(mg, &vl);
        if (drop_tombstones && vl > 0 && val[0] == AKVI_TAG_DEL)
            continue;
        if (w && w->raw_bytes + w->cur_bytes >= run_bytes) {
            bool boundary = true;
            if (db->layout == AKV_LAYOUT_HASH && kl >= 8)
                boundary = w->prefix_bits && (akvi_get_be64(k) >> (64 - w->prefix_bits)) != w->cur_prefix;
            if (boundary) {
                rc = seal(w, o);
                w = NULL;
                if (rc != AKV_OK)
                    break;
            }
        }
        if (!w) {
            if ((rc = akvi_rw_begin(db, level, est, sh, &w)) != AKV_OK)
                break;
            w->replaces = (const akvi_run *const *)runs;
            w->n_replaces = n;
        }
        rc = akvi_rw_add(w, k, kl, val, vl);
    }
    if (rc == AKV_OK)
        rc = akvi_merge_status(mg);
    if (rc == AKV_OK && w)
        return seal(w, o);
    akvi_rw_abort(w);
    return rc;
}

static rocksdb_iterator_t *scan_iter(akv_db *db, rocksdb_column_family_handle_t *cf)
{
    return rocksdb_create_iterator_cf(db->rk.rdb, db->rk.ro_scan, cf);
}

/* The input runs read their files when open (runstore.c), and are checked
 * against the catalog as they are read (merge.c): RocksDB's iterator can
 * end at a damaged SST with an OK status, and a merge that trusted it would
 * drop the rest of the run, bringing back older values and deleted keys.
 * runs[i] NULL: input i is a family's iterator. */
static int attach_runs(akvi_merge *mg, akvi_run *const *runs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        akvi_run *r = runs[i];
        if (!r)
            continue;
        if (r->files) {
            akvi_rs_iter *fi;
            int rc = akvi_rs_iter_new(r->files, r->info.n_sst, true, &fi);
            if (rc == AKV_OK)
                rc = akvi_merge_use_files(mg, i, fi);
            if (rc != AKV_OK)
                return rc;
        }
        akvi_merge_expect(mg, i, &r->info);
    }
    return AKV_OK;
}

/* Input i is runs[i] if runs is not NULL, else family cfs[i] (a
 * memtable's). */
static int merge_inputs(akv_db *db, rocksdb_column_family_handle_t *const *cfs, akvi_run *const *runs,
                        size_t n, int level, uint64_t est, const akvi_shards *sh, uint64_t run_bytes,
                        bool drop_tombstones, akvi_run ***out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    rocksdb_iterator_t **its = calloc(n ? n : 1, sizeof *its);
    if (!its)
        return akvi_err(AKV_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const akvi_run *r = runs ? runs[i] : NULL;
        its[i] = r && r->files ? NULL : scan_iter(db, r ? r->cf : cfs[i]);
    }
    akvi_merge *mg = akvi_merge_create(its, n);
    if (!mg) {
        for (size_t i = 0; i < n; i++)
            if (its[i])
                rocksdb_iter_destroy(its[i]);
        free(its);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    int rc = runs ? attach_runs(mg, runs, n) : AKV_OK;
    outputs o = {NULL, 0};
    if (rc == AKV_OK)
        rc = copy_merge(db, mg, runs, runs ? n : 0, level, est, sh, run_bytes ? run_bytes : UINT64_MAX,
                        drop_tombstones, &o);
    akvi_merge_destroy(mg);
    if (rc != AKV_OK) {
        for (size_t i = 0; i < o.n; i++) { /* never committed: its files go */
            atomic_store(&o.v[i]->obsolete, true);
            akvi_run_unref(o.v[i]);
        }
        free(o.v);
        return rc;
    }
    *out = o.v;
    *n_out = o.n;
    return AKV_OK;
}

int akvi_rw_merge(akv_db *db, akvi_mem *mem, akvi_run *const *runs, size_t n, int level, uint64_t est,
                  const akvi_shards *sh, uint64_t run_bytes, bool drop_tombstones, akvi_run ***out,
                  size_t *n_out)
{
    if (mem)
        return merge_inputs(db, &mem->cf, NULL, 1, level, est, sh, run_bytes, drop_tombstones, out, n_out);
    return merge_inputs(db, NULL, runs, n, level, est, sh, run_bytes, drop_tombstones, out, n_out);
}

void akvi_rw_abort(akvi_runwriter *w)
{
    if (!w)
        return;
    akvi_sstw_destroy(w->w);
    for (size_t j = 0; j < w->n_paths; j++) {
        unlink(w->paths[j]); /* "" once moved into DIR/runs */
        free(w->paths[j]);
    }
    for (size_t j = 0; j < w->n_sst; j++) {
        /* A run that never made it: its filter files and names in
         * DIR/runs go too (after a successful finish the run owns its SSTs
         * and n_sst is 0). */
        char name[64], path[4096];
        akvi_filter_file_name(w->run_id, j, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", w->db->fdir, name);
        unlink(path);
        run_file_path(w->db, w->run_id, j, path, sizeof path);
        unlink(path);
        if (j == 0) { /* and its reverse map's, if it got that far */
            run_file_path(w->db, w->run_id, AKVI_RMAP_SST, path, sizeof path);
            unlink(path);
        }
        if (w->filters)
            akv_filter_destroy(w->filters[j]);
        if (w->ssts) {
            free(w->ssts[j].smallest);
            free(w->ssts[j].largest);
        }
    }
    free(w->paths);
    free(w->filters);
    free(w->ssts);
    free(w->hashes);
    free(w->first);
    free(w->last);
    free(w->rm);
    free(w->arena);
    free(w);
}
