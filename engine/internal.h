/*
 * internal.h — the engine's internal types, shared by the engine sources only.
 *
 * Object graph: an akv_db owns the RocksDB instance and a pointer to the
 * current *version*. A version is an immutable snapshot of the LSM shape:
 * the memtables (newest first) and the sorted runs in search order (L0
 * newest first, then L1, L2, ...). Versions, runs and memtables are
 * refcounted; a reader pins a version for the length of one lookup or
 * iterator, and a run's column family is dropped only when the last version
 * naming it goes away.
 *
 * The engine's files form a stack (docs/design.md, "Source map"): a file
 * calls only files below it. Sections here follow the files, bottom first.
 */
#ifndef AKV_ENGINE_INTERNAL_H
#define AKV_ENGINE_INTERNAL_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"
#include "engine/adapt.h"
#include "engine/bg.h"
#include "engine/catalog.h"
#include "engine/damage.h"
#include "engine/grave.h"
#include "engine/guard.h"
#include "engine/l0front.h"
#include "engine/mempool.h"
#include "engine/policy.h"
#include "engine/rocks.h"
#include "engine/slot.h"
#include "engine/stats.h"
#include "engine/threadslot.h"
#include "engine/version.h"
#include "engine/write.h"
#include "util/shard.h"

/* Value tags: the first byte of every stored value. */
#define AKVI_TAG_PUT 1
#define AKVI_TAG_DEL 2

/* ---- errors (errors.c) ------------------------------------------------- */

/* Set this thread's message and return rc. */
int akvi_err(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turn a RocksDB error string into AKV_EIO with context; frees err. */
int akvi_rocks_err(char *err, const char *what);
void akvi_log(const akv_db *db, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- whole files (files.c) --------------------------------------------- */

/* "a/b", malloc'd; NULL when out of memory. */
char *akvi_path_join(const char *a, const char *b);

/* AKV_NOTFOUND (with a message) when the file does not exist; *buf malloc'd. */
int akvi_file_read(const char *path, uint8_t **buf, size_t *len);
/* dir/name.tmp written, fsynced, renamed over dir/name; the rename is
 * durable once the caller syncs dir (akvi_fsync_dir), once per batch. */
int akvi_file_replace(const char *dir, const char *name, const uint8_t *buf, size_t len);
/* akvi_file_replace, then dir fsynced. */
int akvi_file_write_atomic(const char *dir, const char *name, const uint8_t *buf, size_t len);
/* Overwrite path in place (created if absent) and fdatasync it. */
int akvi_file_rewrite(const char *path, const uint8_t *buf, size_t len);
int akvi_fsync_dir(const char *dir);
bool akvi_path_exists(const char *path);
/* Does dir/name exist (false when the path cannot be made)? */
bool akvi_path_exists_in(const char *dir, const char *name);

/* ---- RocksDB's WAL files (wal.c) --------------------------------------- */

/* What RocksDB's point-in-time replay of DIR/rocksdb/NNNNNN.log will keep
 * and drop. `file`: the first log whose replay stops before its end, at
 * byte `offset`; `torn`: it ends inside a record (a writer that died
 * mid-write, or a cut file) rather than at a damaged one. Dropped counts
 * take in the record at the stop, the complete records after it in that
 * file, and (after a damaged record) every later log file's. */
typedef struct akvi_wal_report {
    unsigned files_damaged;
    char file[64];
    uint64_t offset;
    bool torn;
    uint64_t records_kept, writes_kept; /* in `file`, before the stop */
    uint64_t records_dropped, writes_dropped;
} akvi_wal_report;
int akvi_wal_check(const char *rdir, akvi_wal_report *rep);

/* ---- miss log (misslog.c) ---------------------------------------------- */

typedef struct akvi_misslog akvi_misslog;

akvi_misslog *akvi_misslog_create(uint64_t budget_bytes);
void akvi_misslog_destroy(akvi_misslog *ml);
/* A negative lookup of key (hash h) that wasted `wasted` probes. */
void akvi_misslog_record(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double wasted);
/* The get path's record: a costly negative (wasted > 0) always; a free one
 * always while its shard has room, and once the shard is full one time in
 * AKVI_MISSLOG_SAMPLE (this thread's random draw), counted that many
 * times; a free one is skipped if its shard is busy. */
#define AKVI_MISSLOG_SAMPLE 8
void akvi_misslog_negative(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double wasted);
/* One draw of this thread's sampler: true one time in AKVI_MISSLOG_SAMPLE. */
bool akvi_misslog_sampled(void);
/* An application hint: key is a costly negative. */
void akvi_misslog_hint(akvi_misslog *ml, akv_hash h, const void *key, size_t klen, double cost);
/* Negatives accepted by `in_range` (key bytes and hash), highest weight
 * first, at most `max`; malloc'd array in *out. */
typedef bool (*akvi_range_fn)(void *arg, akv_hash h, const void *key, size_t klen);
size_t akvi_misslog_collect(akvi_misslog *ml, akvi_range_fn in_range, void *arg, size_t max,
                            akv_negative **out);
size_t akvi_misslog_count(akvi_misslog *ml);
/* Whether the table holds key: it was looked up in vain before. */
bool akvi_misslog_holds(akvi_misslog *ml, akv_hash h, const void *key, size_t klen);
/* The share of the negative lookups it met lately whose key it did not
 * have to lose (drop, or evict an entry for): 1 while it has lost none (or
 * met none), near 0 when the stream is far larger than its budget. */
double akvi_misslog_coverage(akvi_misslog *ml);
/* Persisted form (format in docs/format.md). */
int akvi_misslog_encode(akvi_misslog *ml, uint8_t **buf, size_t *len);
int akvi_misslog_decode(akvi_misslog *ml, const uint8_t *buf, size_t len);

/* ---- the database ------------------------------------------------------ */

/* The database: options and paths, then its parts (RocksDB's among them), each
 * owning its fields and the lock beside them (docs/design.md, "Headers and
 * owned state"; the order their locks are taken in: lockorder.h). */
struct akv_db {
    char *dir, *rdir, *fdir, *tdir; /* DIR, DIR/rocksdb, DIR/filters, DIR/tmp */
    char *sdir;                     /* DIR/runs: the runs' SST files (created when first needed) */
    struct akvi_rs *runstore;       /* their readers' store and block cache (runstore.h) */
    akv_options opt;      /* opt.bits_per_key: the one in effect (stored, given or default) */
    akvi_policy policy;   /* in effect for slots built from now on */
    char policy_text[AKVI_POLICY_MAX]; /* its canonical text, recorded in the catalog */
    bool policy_given, bits_given; /* set in the options (else the stored ones apply) */
    akv_layout layout;
    uint64_t seed;

    akvi_rocks rk; /* the RocksDB instance, its options and fixed families (rocks.h) */
    /* Open only: RocksDB's MANIFEST may name an SST that RocksDB itself
     * removed (an ingestion whose MANIFEST sync failed). `missing_ok`: this
     * open may then retry RocksDB without paranoid checks, which sets
     * `missing_relaxed` (docs/reliability.md, "Missing SST of an uncommitted
     * run"). */
    bool missing_ok, missing_relaxed;
    /* The database's lock: DIR itself opened and flock()ed exclusively
     * before anything in it is read, moved or written (open and repair),
     * held until the handle is freed; -1 while not held. flock belongs to
     * the open file description, so a second open of DIR in the same
     * process is refused like one in another process (akvi_dir_lock). */
    int lock_fd;

    akvi_vset vs;       /* the version set (version.h) */
    akvi_stats st;      /* statistics (stats.h) */
    akvi_writer wr;     /* the write path (write.h) */
    akvi_pool pool;     /* the memtable families (mempool.h) */
    akvi_guard guard;   /* the memtable guard (guard.h) */
    akvi_fronts fronts; /* the L0 fronts (l0front.h) */
    akvi_bg bg;         /* background work (bg.h) */
    akvi_grave grave;   /* runs and memtables at their end (grave.h) */

    _Atomic uint64_t build_fallbacks; /* filter builds that needed a fallback */
    _Atomic uint64_t grown_bytes;     /* live slots' grown_bytes, summed (adapt.c, grave.c) */
    _Atomic bool said_costed_fallback; /* akvi_build_kind logged its note */
    akvi_catstate cat;                 /* the catalog files (catalog.h) */
    akvi_misslog *ml;
    akvi_adapt_rule ad; /* when fixing a false positive pays (adapt.h) */
};

/* This thread's block of the read-path counters. */
static inline akvi_rstats *akvi_rstats_of(akv_db *db)
{
    int t = akvi_thread_slot();
    return &db->st.rs[t < 0 ? AKVI_THREAD_SLOTS : t].c;
}

/* ---- options (options.c) ---------------------------------------------- */

/* bits_per_key when neither the options nor the database give one. */
#define AKVI_DEFAULT_BITS_PER_KEY 10.0

/* *out = in, or the defaults when in is NULL; AKV_EINVAL (with a message)
 * when they are out of range. */
int akvi_options_resolve(const akv_options *in, akv_options *out);

/* ---- keys (keys.c) ----------------------------------------------------- */

/* Internal key for the layout into buf (klen + 8 bytes); returns its length. */
size_t akvi_ikey(const akv_db *db, akv_hash h, const void *key, size_t klen, uint8_t *buf);
/* The user key inside an internal key. */
const uint8_t *akvi_ukey(const akv_db *db, const uint8_t *ikey, size_t iklen, size_t *klen);
int akvi_check_key(size_t klen);
int akvi_check_value(size_t vlen);
/* The one SST-range test: does SST s of run r cover the key (hash h,
 * internal key ikey)? Hash layout: its shard; ordered: its key range. */
bool akvi_sst_covers(const akv_db *db, const akvi_cat_run *r, const akvi_cat_sst *s, akv_hash h,
                     const uint8_t *ikey, size_t iklen);
/* An SST of a run, for callbacks that ask whether a user key is in it (the
 * miss log's negatives for a build, a reverse map's keys): in the ordered
 * layout the internal key is the user key; in the hash layout only the
 * hash matters. */
typedef struct akvi_sst_ref {
    const akv_db *db;
    const akvi_cat_run *run;
    const akvi_cat_sst *sst;
} akvi_sst_ref;
bool akvi_sst_holds_user_key(void *ref, akv_hash h, const void *ukey, size_t klen);
/* The one run lookup within a level >= 1 (runs sorted by range, disjoint):
 * the index in runs[0..n) of the run whose range may hold the key; -1 if none. */
long akvi_find_run(akvi_run *const *runs, size_t n, const uint8_t *ikey, size_t iklen);
/* The one SST lookup: the SST of run r that may hold the key; -1 if none. */
long akvi_find_sst(const akv_db *db, const akvi_cat_run *r, akv_hash h, const uint8_t *ikey, size_t iklen);
/* The hash run r's slots see (shard prefix shifted out in the hash layout). */
akv_hash akvi_run_slot_hash(const akv_db *db, const akvi_cat_run *r, akv_hash h);
static inline void akvi_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint64_t akvi_get_be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* ---- memtables (memtable.c) -------------------------------------------- */

/* pool: the pool family cf is (-1: a mem.<gen> family of its own). */
int akvi_mem_create(akv_db *db, uint64_t gen, rocksdb_column_family_handle_t *cf, int pool, akvi_mem **out);
/* Under wr.mu: make a new active memtable in a pool family (the caller wakes
 * the background thread to flush the old one); AKVI_POOL_WAIT: none is
 * free yet. */
int akvi_rotate(akv_db *db);
/* Rebuild the guard entries of a memtable recovered from the WAL. */
int akvi_mem_recover(akv_db *db, akvi_mem *m);
/* A memtable no longer active: wait until the writers that chose it
 * before its rotation have finished writing into it (write.c counts them). */
void akvi_mem_quiesce(akvi_mem *m);
/* Open (the writable phase) and create: a database always has an active
 * memtable, in a family of the pool, taken for generation wr.next_mem_gen
 * and put first in mems[0..*n) (room for one more), unless mems[0] is one
 * of the pool's already. One of an older format's mem.<gen> families is not
 * written again: it waits for its flush like any recovered one. Errors:
 * AKV_EIO (no pool family free), those of the generation record's write. */
int akvi_mem_add_active(akv_db *db, akvi_mem **mems, size_t *n);

/* ---- merge iterator over column families (merge.c) --------------------- */

typedef struct akvi_merge akvi_merge;
/* Inputs newest first; takes ownership of the iterators. */
akvi_merge *akvi_merge_create(rocksdb_iterator_t **its, size_t n);
struct akvi_rs_iter;
/* Input i (its[i] NULL) reads a run's files through `it` (runstore.h),
 * which the merge then owns (destroyed on failure too). */
int akvi_merge_use_files(akvi_merge *m, size_t i, struct akvi_rs_iter *it);
void akvi_merge_seek_first(akvi_merge *m);
void akvi_merge_seek(akvi_merge *m, const uint8_t *k, size_t len);
bool akvi_merge_valid(const akvi_merge *m);
/* Current entry: the newest version of the smallest key. */
const uint8_t *akvi_merge_key(const akvi_merge *m, size_t *len);
const uint8_t *akvi_merge_value(const akvi_merge *m, size_t *len);
void akvi_merge_next(akvi_merge *m);
/* Backwards (user iterators): the last entry, the last entry before k, the
 * entry before the current one. Catalog checks follow forward passes only. */
void akvi_merge_seek_last(akvi_merge *m);
void akvi_merge_seek_before(akvi_merge *m, const uint8_t *k, size_t len);
void akvi_merge_prev(akvi_merge *m);
int akvi_merge_status(const akvi_merge *m); /* AKV_OK, AKV_EIO or AKV_ECORRUPT with message */
void akvi_merge_fail(akvi_merge *m, int rc); /* end the merge with error rc (the first one stays) */
/* Check input i against run's catalog entry (kept alive by the caller):
 * the input must not end before the run's last key, and a full pass must
 * read each SST's recorded entry count; else the status is AKV_ECORRUPT. */
void akvi_merge_expect(akvi_merge *m, size_t i, const akvi_cat_run *run);
void akvi_merge_destroy(akvi_merge *m);

/* ---- slot building (slotbuild.c) --------------------------------------- */

/* Build the slot of SST `sst` of `run` from its keys' hashes (turned into
 * slot hashes and sorted in place), sized for `capacity` >= n keys (room
 * for adaptations), pre-adapted to the miss log's negatives in its range.
 * A kind that cannot be built falls back (docs/design.md). `replaces`: the
 * runs the output replaces (a compaction's inputs; NULL otherwise), left
 * out of the tree its memory share is computed for. */
int akvi_build_filter(akv_db *db, int level, const akvi_cat_run *run, const akvi_cat_sst *sst,
                      akv_hash *hashes, size_t n, size_t capacity, const akvi_run *const *replaces,
                      size_t n_replaces, akv_filter **out);
/* What binds a filter to its SST's contents: the keys' 128-bit hashes in SST
 * order, each as 16 little-endian bytes (hi, then lo), hashed with XXH64 in
 * chunks of 256 keys, each chunk seeded with the previous chunk's digest
 * (the first with 0); never 0 (docs/format.md §6). */
uint64_t akvi_key_digest(const akv_hash *h, size_t n);
/* Hashes of the keys an SST holds, in SST order, read back from its run's
 * family; the count (and the digest, when recorded) must match the
 * catalog's, else AKV_ECORRUPT. */
int akvi_sst_hashes(akv_db *db, const akvi_run *r, const akvi_cat_sst *s, akv_hash **out, size_t *n);
/* The kind a new run's slots get at `level` (the policy's, or ablocked for
 * a costed kind the miss log cannot train). */
const akv_filter_kind *akvi_build_kind(akv_db *db, int level);
/* The bits per key the runs' slots of `keys` keys share now: bits_per_key
 * less what the memtable guard holds (at most a quarter). */
double akvi_runs_budget(akv_db *db, double keys);
/* The filter memory budget of a database whose runs hold `keys` keys, with
 * `mems` live memtables and guard g, in bytes: bits_per_key over them, plus
 * the part of a minimal guard that does not count on a tiny database, plus
 * what the guard grew beyond its usual size while memtables wait for their
 * flush (docs/design.md, "Filter memory by level"). */
double akvi_filter_budget(akv_db *db, double keys, size_t mems, const akvi_guard_mem *g);
/* All filter memory now (every slot, grown filters and the outgrown ones
 * still held included, and the guard), the runs' keys, and the budget
 * (akvi_filter_budget, with one memtable); bytes. */
typedef struct akvi_filter_total {
    double held, keys, budget;
} akvi_filter_total;
void akvi_filter_account(akv_db *db, akvi_filter_total *t);
/* A new filter for SST j of r from its data, `capacity` keys of room. */
int akvi_build_from_sst(akv_db *db, const akvi_run *r, size_t j, size_t capacity, akv_filter **out);
/* Refill f, the filter of SST j of r, in place from the SST's keys, pre-
 * adapted to the miss log's negatives in its range (akv_filter_refill). */
int akvi_refill_from_sst(akv_db *db, const akvi_run *r, size_t j, akv_filter *f);

/* ---- run writer (runwriter.c) ------------------------------------------ */

typedef struct akvi_runwriter akvi_runwriter;
/*
 * The shards a merge's inputs cover (hash layout): their finest prefix bits
 * and the part [lo, hi) of the hash space (as fractions of it) from the
 * first input shard's start to the last one's end. The output is cut at
 * least that finely, and finer while a shard would hold more than a
 * target's worth at the inputs' density over that part (akvi_rw_begin), so
 * that each output SST is a whole shard holding all of its level's keys
 * there: its slot hash then spreads its keys over the slot's whole table
 * (docs/design.md, "Sharding"). AKVI_SHARDS_NONE: no inputs yet.
 */
typedef struct akvi_shards {
    uint32_t min_bits;
    double lo, hi;
} akvi_shards;
#define AKVI_SHARDS_NONE ((akvi_shards){0, 1, 0})
void akvi_shards_add(akvi_shards *s, const akvi_cat_run *r);
/* A writer of one run at `level`, est_bytes of input in all; `sh` NULL:
 * shards from est_bytes alone. */
int akvi_rw_begin(akv_db *db, int level, uint64_t est_bytes, const akvi_shards *sh, akvi_runwriter **out);
int akvi_rw_add(akvi_runwriter *w, const uint8_t *ikey, size_t iklen, const uint8_t *val, size_t vlen);
/* Seal: SSTs, slots, filter files, ingest into a new run CF. *out is NULL
 * when nothing was added. */
int akvi_rw_finish(akvi_runwriter *w, akvi_run **out);
/* Names the SST file `from` (a family's) as SST `sst` of run `run` in
 * DIR/runs, a hard link replacing any other file of that name (nothing to
 * do when the name is `from` already); DIR/runs is created if missing. */
int akvi_run_link_file(akv_db *db, const char *from, uint64_t run, uint64_t sst);
/* Opens a reader for each of run r's SST files in DIR/runs (r->files),
 * and its reverse map's in the ordered layout (r->rmap_file). */
int akvi_run_open_files(akv_db *db, akvi_run *r);
void akvi_rw_abort(akvi_runwriter *w);
/* Merge a memtable (`mem`, a flush; no runs) or runs (newest first, a
 * compaction; mem NULL), which the caller holds, into new runs at `level`,
 * each cut once it holds `run_bytes` raw bytes (disjoint ranges,
 * ascending); the runs in a malloc'd array *out, count in *n_out (0 when
 * all was dropped). */
int akvi_rw_merge(akv_db *db, akvi_mem *mem, akvi_run *const *runs, size_t n, int level, uint64_t est,
                  const akvi_shards *sh, uint64_t run_bytes, bool drop_tombstones, akvi_run ***out,
                  size_t *n_out);

/* ---- commit (commit.c) ------------------------------------------------- */

/* The catalog (sync) and miss log for the given runs and flushed gen. */
int akvi_commit(akv_db *db, akvi_run **runs, size_t n_run, uint64_t flushed_mem_gen);
/* Commit, then install, the replacement of `drop` (runs) and `mem` by `add`
 * in the current version; replaced runs and the memtable become obsolete.
 * Flush and compaction run on their own threads: commits are serialised,
 * and each edits the version current at its commit. */
int akvi_publish(akv_db *db, akvi_mem *mem, akvi_run **drop, size_t n_drop, akvi_run **add, size_t n_add);

/* ---- flush (flush.c), compaction (compact.c) ---------------------------- */

int akvi_flush_one(akv_db *db, akvi_mem *m);
bool akvi_compaction_needed(akv_db *db, const akvi_version *v);
/* Raw bytes over the levels' capacities, L0's all of it once at its
 * trigger: what the compactions due now have to move (akv_stats). */
uint64_t akvi_compaction_debt(const akv_db *db, const akvi_version *v);
int akvi_compact_step(akv_db *db, bool full);
/* Compaction at rest's budget: read at open (before the background threads
 * start), saved at close (after they stop) in the meta family. */
int akvi_rest_credit_load(akv_db *db);
int akvi_rest_credit_save(akv_db *db);
/* How many memtables' worth of data L0 holds: each run counts as the
 * memtables it was flushed from (its raw bytes over memtable_bytes, at
 * least 1). L0 compactions are due, and writers slow down and stop, by
 * this count, so merging L0 runs does not change when they happen. */
size_t akvi_l0_weight(const akv_db *db, const akvi_version *v);
/* Under bg.mu: is an L0 merge due (the flush thread's spare work)? */
bool akvi_l0_merge_due(const akv_db *db, const akvi_version *v);
/* Merge the newest L0 runs no compaction holds into one L0 run, if due
 * (docs/design.md, "LSM shape"). Flush thread only: a merge's run id is
 * then above every input's and below every later flush's, so ids keep
 * giving L0's search order. */
int akvi_compact_l0(akv_db *db);

/* ---- the identity record (identity.c) ------------------------------------ */

/* The identity record (28 bytes) and DIR/IDENTITY (docs/format.md §5). */
size_t akvi_identity_encode(uint32_t layout, uint64_t seed, uint8_t *buf);
int akvi_identity_decode(const uint8_t *buf, size_t len, uint32_t *layout, uint64_t *seed);
int akvi_identity_read(const char *dir, uint32_t *layout, uint64_t *seed);
/* DIR/IDENTITY (atomically) and its copy in the meta family. */
int akvi_identity_write(akv_db *db);

/* ---- RocksDB's families as an open finds them (cfset.c) ------------------ */

/* Every refusal that repair can resolve ends with this. */
#define AKVI_REPAIR_HINT "; the directory was left as it was (akv_repair salvages what is on disk)"

/* RocksDB's families as open found them; runs and memtables take theirs. */
enum { AKVI_CF_FREE, AKVI_CF_USED, AKVI_CF_LEFTOVER };
typedef struct akvi_cf_set {
    char **names;
    rocksdb_column_family_handle_t **h;
    uint8_t *state; /* AKVI_CF_*: free (handle destroyed at the end), taken
                     * (its owner destroys it), or a leftover to drop */
    size_t n;
} akvi_cf_set;

/* Open DIR/rocksdb with every family it lists (read only, or for writing;
 * `create`: a new instance may be made). Sets db->rk.rdb, meta_cf, default_cf. */
int akvi_cf_set_open(akv_db *db, bool read_only, bool create, akvi_cf_set *s);
/* Destroy the handles nobody took (dropping leftovers when `drop`). */
void akvi_cf_set_free(akv_db *db, akvi_cf_set *s, bool drop);
/* The free family called name, now taken by the caller (NULL: none). */
rocksdb_column_family_handle_t *akvi_cf_take(akvi_cf_set *s, const char *name);
/* The family called name, whoever holds it (NULL: none). */
rocksdb_column_family_handle_t *akvi_cf_find(const akvi_cf_set *s, const char *name);
/* "run.12" with prefix "run." -> 12; 0 if the name is not of that form. */
uint64_t akvi_parse_id(const char *name, const char *prefix);

/* ---- the handle's life (db.c) -------------------------------------------- */

/* An akv_db with options, paths, locks and RocksDB options, not opened. */
akv_db *akvi_db_new(const char *dir, const akv_options *opt, int *rc);
/* Stop, release and free everything of db (open or not). */
void akvi_db_free(akv_db *db);
/* Take the database's lock (db->lock_fd): AKV_EBUSY, naming DIR, when
 * another handle holds it, in this process or another; AKV_NOTFOUND when
 * DIR does not exist. Taken before anything in DIR is read. */
int akvi_dir_lock(akv_db *db);

/* ---- open and close (recover.c) ----------------------------------------- */

/* akv_open without the background threads: every check of open, and
 * nothing flushed or compacted until the handle is closed (repair's check
 * that the repaired database opens). */
int akvi_open_quiet(const char *dir, const akv_options *opt, akv_db **out);
/* Test hook: called at the steps of a create ("rocksdb", "catalog",
 * "identity"); a result other than AKV_OK fails the open there. */
extern int (*_Atomic akvi_hook_create_step)(const char *step);
/* Test hook: the compaction thread calls it in each compaction step once
 * the inputs are picked and before they are merged (holding no lock); a
 * test holds compactions back by blocking in it. */
extern void (*_Atomic akvi_hook_before_compaction)(void);

#endif
