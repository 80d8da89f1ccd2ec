/*
 * version.h — the version set (version.c): the live runs and memtables,
 * the immutable versions that list them, and the part of akv_db that owns
 * the current one, its pins and the retired ones. Publishing (commit and
 * install) is serialised by `vs.pubmu`; the current pointer changes under
 * `mu` (docs/design.md, "Concurrency").
 */
#ifndef AKVI_VERSION_H
#define AKVI_VERSION_H

#include <pthread.h>
#include <rocksdb/c.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "engine/catalog.h"
#include "engine/slot.h"
#include "engine/threadslot.h"

typedef struct akvi_front akvi_front; /* l0front.c */

typedef struct akvi_run {
    _Atomic int refs;
    akv_db *db;
    akvi_cat_run info;
    akvi_slot *slots; /* parallel to info.ssts */
    rocksdb_column_family_handle_t *cf;
    rocksdb_column_family_handle_t *rmap_cf; /* ordered layout only */
    /* Readers of DIR/runs/<id>-<sst>.sst, parallel to info.ssts (runstore.h),
     * through which gets read the run; NULL: gets read the family. */
    struct akvi_rs_sst **files;
    struct akvi_rs_sst *rmap_file; /* ordered layout: DIR/runs/<id>-rmap.sst, with files */
    _Atomic bool obsolete;         /* drop CF + filter files at last unref */
    struct akvi_run *grave_next;   /* in db->grave.runs */
    /* L0 only: the front holding its keys (NULL: none), and how many
     * hashes it put there; set before the run is published, then fixed. */
    akvi_front *front;
    uint64_t front_keys;
} akvi_run;

typedef struct akvi_mem {
    _Atomic int refs;
    akv_db *db;
    uint64_t gen;
    rocksdb_column_family_handle_t *cf; /* the pool's (mempool.c), or its own mem.<gen> (older format) */
    int pool;                           /* index in db->pool; -1: a mem.<gen> family */
    _Atomic uint64_t bytes;             /* key+value bytes written */
    _Atomic uint64_t entries;           /* writes (with overwrites) */
    /* Set before RocksDB can show the memtable's first key to a reader
     * (written before each write, and by recovery): until then a reader
     * skips the memtable and its guard check, as RocksDB skips an empty
     * memtable's Bloom filter. */
    _Atomic bool written;
    /* Writers past wr.mu still writing into its family: a flush reads the
     * memtable only once none is left (memtable.c, akvi_mem_quiesce). */
    _Atomic unsigned writers;
    akv_hash *hashes; /* guard inserts, removed again at flush */
    size_t n_hashes, cap_hashes;
    _Atomic bool hashes_lost;    /* one could not be remembered: no L0 front for its run */
    _Atomic bool flushed;        /* its data is in a run; guard entries may be gone */
    _Atomic bool obsolete;       /* at last unref: its pool family emptied (mem.<gen>: dropped) */
    struct akvi_mem *grave_next; /* in db->grave.mems */
} akvi_mem;

typedef struct akvi_version {
    _Atomic int refs;
    struct akvi_version *retired_next; /* in db->vs.retired */
    size_t n_mem;
    akvi_mem **mems; /* newest first; mems[0] takes writes */
    size_t n_run;
    akvi_run **runs; /* search order: level ascending, newest first within a level */
} akvi_version;

akvi_version *akvi_version_new(size_t n_mem, size_t n_run);
void akvi_version_ref(akvi_version *v);
void akvi_version_unref(akvi_version *v);
void akvi_run_ref(akvi_run *r);
void akvi_run_unref(akvi_run *r);
void akvi_mem_ref(akvi_mem *m);
void akvi_mem_unref(akvi_mem *m);

/* The version set's part of akv_db. `cur` is on a cache line of its own:
 * every get reads it, nothing on the hot path writes near it. */
typedef struct akvi_vset {
    char pad0[AKVI_LINE];
    _Atomic(akvi_version *) cur; /* changed under mu (exclusive) */
    char pad1[AKVI_LINE];
    pthread_rwlock_t mu; /* akvi_current shares it to pin by refcount, edits take it exclusively */
    /* Gets pin by hazard: pins[t] is the version thread slot t reads (NULL:
     * none); a replaced version is retired and unref'd once no pin names it. */
    akvi_pin_line *pins;
    pthread_mutex_t retmu;        /* the retired list */
    akvi_version *retired;        /* under retmu, linked by retired_next */
    _Atomic size_t n_retired;     /* its length; readers look before they try */
    _Atomic bool reclaim_again;   /* a reader found retmu taken: scan again */
    pthread_mutex_t pubmu;        /* serialises publishes: commit + install */
    _Atomic uint64_t next_run_id; /* flush and compaction threads allocate */
    uint64_t flushed_mem_gen;     /* under pubmu (and open) */
} akvi_vset;

/* Pin the current version (never NULL while the db is open). */
akvi_version *akvi_current(akv_db *db);
/* The get path's pin: a hazard in this thread's slot, no shared write
 * (akvi_current for a thread without one, and for a get nested inside
 * another get of the same thread and database). *tok goes to akvi_unpin. */
akvi_version *akvi_pin(akv_db *db, int *tok);
void akvi_unpin(akv_db *db, akvi_version *v, int tok);
/* Unref the retired versions no pin names (all of them at close, when no
 * reader is left). `wait`: take the list's lock rather than leave it to
 * whoever holds it. */
void akvi_reclaim(akv_db *db, bool wait);
/* A grace period for what the get path reads outside versions (the
 * memtable guard): after replacing a shared pointer, snapshot the pins;
 * once they have all passed (each pin of the snapshot ended), no get can
 * still hold the old object. */
typedef struct akvi_pin_snapshot {
    uint64_t ended[AKVI_THREAD_SLOTS]; /* UINT64_MAX: that slot held no pin */
} akvi_pin_snapshot;
void akvi_pins_snapshot(akv_db *db, akvi_pin_snapshot *s);
bool akvi_pins_passed(akv_db *db, const akvi_pin_snapshot *s);
/* Replace the current version (takes ownership of v's reference). */
void akvi_install(akv_db *db, akvi_version *v);
/* The runs of v with `drop` removed and `add` added, in search order;
 * malloc'd array, count in *n. */
akvi_run **akvi_runs_after(const akvi_version *v, akvi_run *const *drop, size_t n_drop, akvi_run *const *add,
                           size_t n_add, size_t *n);
/* New version = current + add_mem (front) - drop_mem - drop_runs + add_runs. */
int akvi_apply(akv_db *db, akvi_mem *add_mem, const akvi_mem *drop_mem, akvi_run *const *drop_runs,
               size_t n_drop, akvi_run *const *add_runs, size_t n_add);
/* Runs in search order (level, then L0 newest first, deeper levels by range). */
void akvi_sort_runs(akvi_run **runs, size_t n);
int akvi_deepest_level(const akvi_version *v);

/* The version set's fields and locks, before any use (AKV_ENOMEM: the pins
 * could not be allocated; nothing to destroy then). The current version
 * and the retired ones are released by the handle first (db.c). */
int akvi_vset_init(akvi_vset *vs);
void akvi_vset_destroy(akvi_vset *vs);

#endif
