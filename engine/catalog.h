/*
 * catalog.h — the catalog (catalog.c): the runs and SSTs a database holds,
 * their encoding, and the two catalog files (docs/format.md).
 */
#ifndef AKVI_CATALOG_H
#define AKVI_CATALOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"
#include "engine/policy.h"

typedef struct akvi_cat_sst {
    uint64_t id;       /* index within its run; filter file "<run>-<id>.akf" */
    uint64_t keys;     /* entries (puts and tombstones) */
    uint64_t bytes;    /* SST file size */
    uint64_t prefix;   /* hash layout: the shard (top prefix_bits of h.hi) */
    uint64_t digest;   /* akvi_key_digest of its keys; 0: not recorded (catalog v1) */
    char kind[16];     /* filter kind name */
    uint8_t *smallest; /* internal keys; owned */
    uint8_t *largest;
    size_t smallest_len, largest_len;
} akvi_cat_sst;

typedef struct akvi_cat_run {
    uint64_t id;
    uint32_t level;
    uint32_t prefix_bits; /* hash layout: shards split on this many top bits */
    uint64_t keys, bytes;
    uint64_t raw_bytes; /* key+value bytes before compression: level sizing */
    /* Its SSTs are its own files in DIR/runs and nothing else, with no
     * column family (catalog version 4); false: a family run.<id> holds
     * them, and DIR/runs names them too (docs/format.md §6). */
    bool files;
    size_t n_sst;
    akvi_cat_sst *ssts; /* hash layout: ascending prefix; ordered: ascending range */
} akvi_cat_run;

typedef struct akvi_catalog {
    uint32_t layout;
    uint64_t seed;
    /* The database's slot policy (canonical text) and bits per key; ""
     * and 0: not recorded (catalog v1 and v2). akvi_catalog_store writes
     * the open database's own. */
    char policy[AKVI_POLICY_MAX];
    double bits_per_key;
    uint64_t seq;             /* commit sequence: the newer of the two catalog files wins */
    uint64_t next_run_id;     /* run ids below this are allocated or reserved */
    uint64_t flushed_mem_gen; /* memtables with gen <= this are in runs */
    size_t n_run;
    akvi_cat_run *runs; /* search order */
} akvi_catalog;

/* The catalog files' part of akv_db: `mu` serialises catalog and miss-log
 * writes; under it, the catalog last written (its encoding, sequence
 * number and reserved run ids) and the WAL growth since the meta family's
 * last flush. */
typedef struct akvi_catstate {
    pthread_mutex_t mu;
    uint8_t *buf;
    size_t len;
    uint64_t seq, run_id_bound;
    uint64_t meta_wal_bytes, meta_flush_user;
} akvi_catstate;

void akvi_catstate_init(akvi_catstate *cs);
void akvi_catstate_destroy(akvi_catstate *cs);

/* The version akvi_catalog_encode writes (docs/format.md §6). */
#define AKVI_CATALOG_VERSION 4
int akvi_catalog_encode(const akvi_catalog *c, uint8_t **buf, size_t *len);
/* A record of an older version, 2 or later, as that version wrote it
 * (tests of databases older code left): below 4 it records no run files
 * (AKV_EINVAL if a run has them), below 3 no slot policy. */
int akvi_catalog_encode_version(const akvi_catalog *c, uint32_t version, uint8_t **buf, size_t *len);
/* Deep-decodes into *c (free with akvi_catalog_free). */
int akvi_catalog_decode(const uint8_t *buf, size_t len, akvi_catalog *c);
void akvi_catalog_free(akvi_catalog *c);
/* The run of c with id `id` (NULL: c names none). */
const akvi_cat_run *akvi_catalog_run(const akvi_catalog *c, uint64_t id);
void akvi_cat_run_free(akvi_cat_run *r);
void akvi_filter_file_name(uint64_t run, uint64_t sst, char *out, size_t cap);
/* A run's SST file in DIR/runs: "<run>-<sst>.sst"; sst AKVI_RMAP_SST: the
 * ordered layout's reverse map, "<run>-rmap.sst" (docs/format.md). */
#define AKVI_RMAP_SST UINT64_MAX
void akvi_run_file_name(uint64_t run, uint64_t sst, char *out, size_t cap);
/* What a name in the filter directory (ext ".akf") or DIR/runs (".sst")
 * is: AKVI_FNAME_FILE "<run>-<sst><ext>" (DIR/runs: "<run>-rmap.sst" too,
 * *sst = AKVI_RMAP_SST), AKVI_FNAME_TEMP the same name + ".tmp", or
 * AKVI_FNAME_OTHER (not adaptkv's). */
enum { AKVI_FNAME_OTHER, AKVI_FNAME_FILE, AKVI_FNAME_TEMP };
int akvi_file_name_parse(const char *name, const char *ext, uint64_t *run, uint64_t *sst);
/* Delete, in DIR/runs, each "<run>-<sst>.sst" for which keep(arg, run,
 * sst) is false (a reverse map's: keep(arg, run, AKVI_RMAP_SST)) and each
 * such name + ".tmp"; any other name stays. */
void akvi_sweep_run_files(const char *dir, bool (*keep)(void *arg, uint64_t run, uint64_t sst), void *arg);
/* Delete, in the filter directory fdir, each "<run>-<sst>.akf" for which
 * keep(arg, run, sst) is false and each "<run>-<sst>.akf.tmp"; any other
 * name is not adaptkv's to delete and stays. */
void akvi_sweep_filter_files(const char *fdir, bool (*keep)(void *arg, uint64_t run, uint64_t sst),
                             void *arg);
/* An SST's recorded fields after its id (key count, bytes, prefix, digest,
 * kind, key range), as the catalog and each filter file store them
 * (docs/format.md). The decoder copies the range keys (freed with the run)
 * and sets r->err on a short or malformed record. */
struct akvi_wbuf;
struct akvi_rbuf;
void akvi_cat_sst_put_fields(struct akvi_wbuf *w, const akvi_cat_sst *s);
void akvi_cat_sst_get_fields(struct akvi_rbuf *r, akvi_cat_sst *s, bool with_digest);
/* The catalog files DIR/CATALOG.0 and .1 (docs/format.md). Under cat.mu:
 * write c with the next sequence number into its slot (next_run_id is
 * raised to the reserved bound) and keep it for reservations. */
int akvi_catalog_store(akv_db *db, akvi_catalog *c);
/* Before run id `id` names a family or file: make sure the catalog on disk
 * reserves it (a no-op unless id >= the reserved bound). Takes cat.mu. */
int akvi_catalog_reserve(akv_db *db, uint64_t id);
/* The newer valid catalog file of dir; AKV_NOTFOUND when neither exists.
 * `note` tells of a damaged slot that was passed over ("" if none). */
int akvi_catalog_load(const char *dir, akvi_catalog *c, char *note, size_t note_cap);
/* DIR/CATALOG.<slot> alone (the previous generation, to name in a refusal). */
int akvi_catalog_load_slot(const char *dir, unsigned slot, akvi_catalog *c);

#endif
