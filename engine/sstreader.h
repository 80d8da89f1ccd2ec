/*
 * sstreader.h — reading one SST file of a run (sstreader.cc): RocksDB's
 * SstFileReader, which RocksDB's C API does not offer, behind a small C
 * interface. runstore.c is its only caller. Readers share one LRU block
 * cache and one set of options (an akvi_sstr_env).
 *
 * Functions that can fail return an AKVI_SSTR_* code and set *err to a
 * malloc'd message (NULL if even that could not be allocated), freed by
 * the caller with free().
 */
#ifndef AKV_ENGINE_SSTREADER_H
#define AKV_ENGINE_SSTREADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    AKVI_SSTR_OK = 0,
    AKVI_SSTR_IO = 1,      /* the file could not be read (missing, I/O error) */
    AKVI_SSTR_CORRUPT = 2, /* the bytes read are not a valid SST (checksum, magic, format) */
    AKVI_SSTR_NOMEM = 3,
};

typedef struct akvi_sstr_env akvi_sstr_env;
typedef struct akvi_sstr akvi_sstr;
typedef struct akvi_sstr_it akvi_sstr_it;

/* What a file's table properties say (docs/design.md, "Run files"). */
typedef struct akvi_sstr_props {
    uint64_t entries;
    uint64_t data_bytes, index_bytes; /* the data blocks; the index a reader holds */
    uint64_t orig_file_number;        /* with db_session: the base of the file's block cache keys */
    char db_session[48];              /* "" when the file records none */
    char db_id[48];
} akvi_sstr_props;

struct rocksdb_cache_t;
/* Every reader opened with this env shares one block cache: `cache`, one
 * made by RocksDB's C API (the database's own, so that runs and RocksDB's
 * families count against one budget), or when it is NULL a new LRU cache
 * of cache_bytes; direct_reads opens the files with O_DIRECT. */
akvi_sstr_env *akvi_sstr_env_create(struct rocksdb_cache_t *cache, size_t cache_bytes, bool direct_reads,
                                    char **err);
/* After every reader of the env is closed. */
void akvi_sstr_env_destroy(akvi_sstr_env *e);
/* Bytes the shared block cache holds now. */
size_t akvi_sstr_env_cache_usage(const akvi_sstr_env *e);

/* Opens the file (its index, read once, stays in the reader). */
int akvi_sstr_open(akvi_sstr_env *e, const char *path, akvi_sstr **out, char **err);
void akvi_sstr_close(akvi_sstr *r);
void akvi_sstr_props_get(const akvi_sstr *r, akvi_sstr_props *p);
/* Reads every block and checks its checksum. */
int akvi_sstr_verify(akvi_sstr *r, char **err);

/* An iterator over the file's keys in bytewise order; scan: read ahead
 * 2 MiB and keep what it reads out of the block cache (flush, compaction
 * and rebuilds), else single blocks through the cache (point lookups).
 * NULL only when out of memory. A key or value stays valid until the
 * iterator moves or is destroyed. */
akvi_sstr_it *akvi_sstr_iter(akvi_sstr *r, bool scan);
void akvi_sstr_it_destroy(akvi_sstr_it *it);
void akvi_sstr_it_seek_first(akvi_sstr_it *it);
void akvi_sstr_it_seek(akvi_sstr_it *it, const void *key, size_t klen);
void akvi_sstr_it_next(akvi_sstr_it *it);
void akvi_sstr_it_seek_last(akvi_sstr_it *it);
void akvi_sstr_it_prev(akvi_sstr_it *it);
bool akvi_sstr_it_valid(const akvi_sstr_it *it);
const void *akvi_sstr_it_key(const akvi_sstr_it *it, size_t *len);
const void *akvi_sstr_it_value(const akvi_sstr_it *it, size_t *len);
/* After the iterator stops being valid: did it reach the end (OK) or fail? */
int akvi_sstr_it_status(const akvi_sstr_it *it, char **err);

#endif
