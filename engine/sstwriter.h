/*
 * sstwriter.h — writing one SST file for a run (sstwriter.cc): RocksDB's
 * SstFileWriter with RocksDB's default table options and no page-cache
 * drops. On failure a function returns NULL or false and sets *err to a
 * malloc'd message, as RocksDB's C API does (NULL if even that could not
 * be allocated); pass it to akvi_rocks_err.
 */
#ifndef AKV_ENGINE_SSTWRITER_H
#define AKV_ENGINE_SSTWRITER_H

#include <stdbool.h>
#include <stddef.h>

typedef struct akvi_sstw akvi_sstw;

/* Creates the file at `path`, zstd-compressed or not. */
akvi_sstw *akvi_sstw_open(const char *path, bool zstd, char **err);
/* Keys in increasing bytewise order. */
bool akvi_sstw_put(akvi_sstw *s, const void *key, size_t klen, const void *val, size_t vlen, char **err);
/* Writes the index and footer and syncs the file. */
bool akvi_sstw_finish(akvi_sstw *s, char **err);
void akvi_sstw_destroy(akvi_sstw *s);

#endif
