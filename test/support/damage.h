/*
 * damage.h — what the reliability and repair tests do to a database
 * directory: fingerprint every file, find a column family's SST files, copy,
 * truncate and overwrite files.
 */
#ifndef AKV_TEST_DAMAGE_H
#define AKV_TEST_DAMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

/* Every regular file under dir as "relative/path size xxh64\n", every
 * directory as "relative/path/ directory\n", sorted (malloc'd). Two equal
 * strings mean byte-for-byte equal trees. */
char *akvt_dir_digest(const char *dir);
/* The SST files RocksDB lists for column family `cf` of DIR/rocksdb (read
 * only), in key order; for "run.<id>" with no such family, that run's own
 * files in DIR/runs. Returns the count, absolute paths in out[0..max). */
size_t akvt_cf_ssts(const char *dir, const char *cf, char out[][1024], size_t max);
/* DIR/rocksdb opened behind adaptkv's back, with every family it lists
 * (RocksDB's default options; read only or for writing): for tests that
 * change what RocksDB records. */
typedef struct akvt_rocks {
    rocksdb_t *db;
    rocksdb_options_t *o;
    char **names;
    size_t n;
    rocksdb_column_family_handle_t **h; /* parallel to names */
} akvt_rocks;
void akvt_rocks_open(const char *dir, bool read_only, akvt_rocks *r);
void akvt_rocks_close(akvt_rocks *r);
/* Drops family `cf` of DIR/rocksdb the way a cut MANIFEST forgets it: its
 * SST files are left in rocksdb/ under their names. Returns how many. */
size_t akvt_forget_family(const char *dir, const char *cf);
/* How many column families of DIR/rocksdb are named `name` (exact) or,
 * with `prefix`, start with it. */
size_t akvt_families(const char *dir, const char *name, bool prefix);
/* The entries RocksDB records for SST file `path` (0 if unknown). */
uint64_t akvt_sst_entries(const char *dir, const char *path);
/* cp -a src dst (dst must not exist). */
void akvt_copy_tree(const char *src, const char *dst);
void akvt_copy_file(const char *src, const char *dst);
uint64_t akvt_file_size(const char *path);
void akvt_truncate(const char *path, uint64_t size);
/* Overwrite len bytes at off with 0xA5. */
void akvt_smash(const char *path, uint64_t off, size_t len);
/* Path of the one file in dir whose name starts with prefix (and ends with
 * suffix, "" for any); the largest if several. Returns 0 if none. */
int akvt_find_file(const char *dir, const char *prefix, const char *suffix, char *out, size_t cap);
/* Total size of the files in dir whose names end with suffix. */
uint64_t akvt_bytes_with_suffix(const char *dir, const char *suffix);

#endif
