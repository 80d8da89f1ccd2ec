/*
 * runstore.h — the readers of runs' SST files (runstore.c): runs kept as
 * plain SST files named by the catalog, outside RocksDB's MANIFEST
 * (docs/design.md, "Run files").
 *
 * A store holds the options every reader shares and one LRU block cache.
 * An SST reader is opened once and kept while a version names its run: it
 * holds the file open and the file's index in memory. A point lookup reads
 * at most one data block of one SST; an iterator walks one SST or the SSTs
 * of a run in key order. Every failure returns a negative AKV_E* code with
 * a message naming the file (akv_errmsg): AKV_ECORRUPT when the bytes read
 * are not a valid SST (checksum, magic, format), AKV_EIO when the file
 * cannot be read, AKV_ENOMEM.
 */
#ifndef AKV_ENGINE_RUNSTORE_H
#define AKV_ENGINE_RUNSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/sstreader.h"

typedef struct akvi_rs akvi_rs;
typedef struct akvi_rs_sst akvi_rs_sst;
typedef struct akvi_rs_iter akvi_rs_iter;

/* A store whose readers share one block cache: `cache` (RocksDB's, made
 * by its C API; it must outlive the store), or a new one of cache_bytes
 * when it is NULL; direct_reads: files are read with O_DIRECT. */
int akvi_rs_open(struct rocksdb_cache_t *cache, size_t cache_bytes, bool direct_reads, akvi_rs **out);
/* After every reader and iterator of the store is closed. */
void akvi_rs_close(akvi_rs *s);
/* Bytes in the shared block cache now (data blocks only: indexes are held
 * by their readers). */
size_t akvi_rs_cache_usage(const akvi_rs *s);

/* Opens one SST file: reads its footer, properties and index (checksums
 * checked). */
int akvi_rs_sst_open(akvi_rs *s, const char *path, akvi_rs_sst **out);
void akvi_rs_sst_close(akvi_rs_sst *f);
const char *akvi_rs_sst_path(const akvi_rs_sst *f);
/* Its table properties: entries, index bytes held, block cache identity. */
void akvi_rs_sst_props(const akvi_rs_sst *f, akvi_sstr_props *p);
/* Reads every block of the file and checks its checksum. */
int akvi_rs_sst_verify(akvi_rs_sst *f);

/* A value found by a point lookup, valid until akvi_rs_val_release. */
typedef struct akvi_rs_val {
    akvi_rs_iter *it; /* holds the block the value lies in */
    const uint8_t *v;
    size_t len;
} akvi_rs_val;
/* The value of key in one SST: AKV_OK (*out set, release it),
 * AKV_NOTFOUND (nothing to release), or a negative error. */
int akvi_rs_get(akvi_rs_sst *f, const void *key, size_t klen, akvi_rs_val *out);
void akvi_rs_val_release(akvi_rs_val *v);

/* An iterator over the SSTs files[0..n) of a run, given in key order with
 * disjoint ranges (one SST: n = 1). scan: read ahead and keep the blocks
 * out of the cache (flush, compaction, rebuilds). The files stay open for
 * the iterator's life. */
int akvi_rs_iter_new(akvi_rs_sst *const *files, size_t n, bool scan, akvi_rs_iter **out);
void akvi_rs_iter_destroy(akvi_rs_iter *it);
/* Position at the first key, or at the first key >= key; then next. Each
 * returns AKV_OK (valid or at the end: akvi_rs_iter_valid) or an error
 * (the iterator is then at the end). */
int akvi_rs_iter_seek_first(akvi_rs_iter *it);
int akvi_rs_iter_seek(akvi_rs_iter *it, const void *key, size_t klen);
int akvi_rs_iter_next(akvi_rs_iter *it);
/* Backwards: the last key; the key before the current one. */
int akvi_rs_iter_seek_last(akvi_rs_iter *it);
int akvi_rs_iter_prev(akvi_rs_iter *it);
bool akvi_rs_iter_valid(const akvi_rs_iter *it);
/* Valid until the iterator moves. */
const uint8_t *akvi_rs_iter_key(const akvi_rs_iter *it, size_t *len);
const uint8_t *akvi_rs_iter_value(const akvi_rs_iter *it, size_t *len);

/* Every SST of a run, verified (akvi_rs_sst_verify) in order; the first
 * failure's code. */
int akvi_rs_verify_run(akvi_rs_sst *const *files, size_t n);

#endif
