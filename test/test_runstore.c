/*
 * test_runstore.c — the readers of runs' SST files (engine/runstore.c):
 * lookups and iteration against an in-memory model with seeded random
 * keys, many files read interleaved through one small shared block cache
 * (their cache keys must not collide), what a kept reader holds, direct
 * reads, and damaged or missing files refused with a clear error.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/internal.h"
#include "engine/runstore.h"
#include "engine/sstwriter.h"
#include "test/support/kvmodel.h"

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Writes pairs m->v[from..to) into one SST at path. */
static void write_sst(const char *path, const akvt_model *m, size_t from, size_t to, bool zstd)
{
    char *err = NULL;
    akvi_sstw *w = akvi_sstw_open(path, zstd, &err);
    cr_assert_not_null(w, "sstw_open %s: %s", path, err);
    for (size_t i = from; i < to; i++)
        cr_assert(akvi_sstw_put(w, m->v[i].key, m->v[i].klen, m->v[i].val, m->v[i].vlen, &err), "put: %s",
                  err);
    cr_assert(akvi_sstw_finish(w, &err), "finish: %s", err);
    akvi_sstw_destroy(w);
}

static void random_model(akvt_model *m, uint64_t seed, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char k[24], v[64];
        size_t kl = 4 + next_rand(&seed) % 20, vl = next_rand(&seed) % 64;
        for (size_t j = 0; j < kl; j++)
            k[j] = (unsigned char)next_rand(&seed);
        for (size_t j = 0; j < vl; j++)
            v[j] = (unsigned char)next_rand(&seed);
        akvt_model_put(m, k, kl, v, vl);
    }
}

static void expect_found(akvi_rs_sst *f, const akvt_pair *p)
{
    akvi_rs_val v;
    int rc = akvi_rs_get(f, p->key, p->klen, &v);
    cr_assert_eq(rc, AKV_OK, "get: %d %s", rc, akv_errmsg());
    cr_assert_eq(v.len, p->vlen);
    cr_assert(p->vlen == 0 || memcmp(v.v, p->val, p->vlen) == 0, "wrong value");
    akvi_rs_val_release(&v);
}

/* A run of n_sst SSTs holding a random model; every key found in its one
 * SST, random absent keys not found, iteration and seeks as the model. */
Test(runstore, a_run_reads_as_its_model)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        char dir[PATH_MAX];
        akvt_tmpdir(dir, sizeof dir, "runstore");
        akvt_model m = {0};
        random_model(&m, seed, 3000 + seed * 500);
        size_t n_sst = 1 + seed % 4;
        akvi_rs *s;
        cr_assert_eq(akvi_rs_open(NULL, 64 << 10, false, &s), AKV_OK);
        akvi_rs_sst *files[8];
        size_t bounds[9];
        for (size_t i = 0; i <= n_sst; i++)
            bounds[i] = m.n * i / n_sst;
        for (size_t i = 0; i < n_sst; i++) {
            char path[PATH_MAX + 32];
            snprintf(path, sizeof path, "%s/%zu.sst", dir, i);
            write_sst(path, &m, bounds[i], bounds[i + 1], seed % 2 == 0);
            cr_assert_eq(akvi_rs_sst_open(s, path, &files[i]), AKV_OK, "%s", akv_errmsg());
            akvi_sstr_props p;
            akvi_rs_sst_props(files[i], &p);
            cr_assert_eq(p.entries, bounds[i + 1] - bounds[i]);
        }
        for (size_t i = 0; i < n_sst; i++)
            for (size_t j = bounds[i]; j < bounds[i + 1]; j++) {
                expect_found(files[i], &m.v[j]);
                /* Only its own SST holds it. */
                akvi_rs_val v;
                cr_assert_eq(akvi_rs_get(files[(i + 1) % n_sst], m.v[j].key, m.v[j].klen, &v),
                             n_sst == 1 ? AKV_OK : AKV_NOTFOUND);
                if (n_sst == 1)
                    akvi_rs_val_release(&v);
            }
        uint64_t r = seed * 7919;
        for (int q = 0; q < 2000; q++) {
            unsigned char k[24];
            size_t kl = 1 + next_rand(&r) % 23;
            for (size_t j = 0; j < kl; j++)
                k[j] = (unsigned char)next_rand(&r);
            const akvt_pair *p = akvt_model_get(&m, k, kl);
            size_t at = akvt_model_lower_bound(&m, k, kl);
            size_t i = 0;
            while (i + 1 < n_sst && at >= bounds[i + 1])
                i++;
            akvi_rs_val v;
            int rc = akvi_rs_get(files[i], k, kl, &v);
            cr_assert_eq(rc, p ? AKV_OK : AKV_NOTFOUND);
            if (rc == AKV_OK)
                akvi_rs_val_release(&v);
            /* A seek over the whole run lands on the model's lower bound. */
            akvi_rs_iter *it;
            cr_assert_eq(akvi_rs_iter_new(files, n_sst, q % 2 == 0, &it), AKV_OK);
            cr_assert_eq(akvi_rs_iter_seek(it, k, kl), AKV_OK);
            if (at == m.n) {
                cr_assert(!akvi_rs_iter_valid(it));
            } else {
                cr_assert(akvi_rs_iter_valid(it));
                size_t len;
                const uint8_t *key = akvi_rs_iter_key(it, &len);
                cr_assert(len == m.v[at].klen && memcmp(key, m.v[at].key, len) == 0);
            }
            akvi_rs_iter_destroy(it);
        }
        /* A full scan, every pair in order. */
        akvi_rs_iter *it;
        cr_assert_eq(akvi_rs_iter_new(files, n_sst, true, &it), AKV_OK);
        size_t i = 0;
        for (int rc = akvi_rs_iter_seek_first(it); akvi_rs_iter_valid(it); rc = akvi_rs_iter_next(it), i++) {
            cr_assert_eq(rc, AKV_OK);
            cr_assert_lt(i, m.n);
            size_t kl, vl;
            const uint8_t *k = akvi_rs_iter_key(it, &kl), *v = akvi_rs_iter_value(it, &vl);
            cr_assert(kl == m.v[i].klen && memcmp(k, m.v[i].key, kl) == 0, "key %zu", i);
            cr_assert(vl == m.v[i].vlen && (vl == 0 || memcmp(v, m.v[i].val, vl) == 0), "value %zu", i);
        }
        cr_assert_eq(i, m.n);
        /* Backwards, every pair in reverse order. */
        for (int rc = akvi_rs_iter_seek_last(it); akvi_rs_iter_valid(it); rc = akvi_rs_iter_prev(it)) {
            cr_assert_eq(rc, AKV_OK);
            cr_assert_gt(i, 0);
            i--;
            size_t kl;
            const uint8_t *k = akvi_rs_iter_key(it, &kl);
            cr_assert(kl == m.v[i].klen && memcmp(k, m.v[i].key, kl) == 0, "key %zu backwards", i);
        }
        cr_assert_eq(i, 0);
        /* A seek, then backwards across the files' boundaries. */
        size_t at = m.n / 2 + seed;
        cr_assert_eq(akvi_rs_iter_seek(it, m.v[at].key, m.v[at].klen), AKV_OK);
        for (size_t back = 0; back < m.n / 3; back++) {
            cr_assert(akvi_rs_iter_valid(it));
            size_t kl;
            const uint8_t *k = akvi_rs_iter_key(it, &kl);
            cr_assert(kl == m.v[at - back].klen && memcmp(k, m.v[at - back].key, kl) == 0);
            cr_assert_eq(akvi_rs_iter_prev(it), AKV_OK);
        }
        akvi_rs_iter_destroy(it);
        cr_assert_eq(akvi_rs_verify_run(files, n_sst), AKV_OK);
        for (size_t j = 0; j < n_sst; j++)
            akvi_rs_sst_close(files[j]);
        akvi_rs_close(s);
        akvt_model_free(&m);
        akvt_rmrf(dir);
    }
}

/* Many files with the same keys at the same offsets, different values,
 * read interleaved through one block cache far smaller than they are: a
 * cache key shared by two files would hand one file's block to the other,
 * a wrong value. Each SstFileWriter records a session id of its own and
 * file number 1, the base of the file's cache keys. */
Test(runstore, files_sharing_one_cache_never_see_each_others_blocks)
{
    enum { FILES = 48, KEYS = 1500 };
    char dir[PATH_MAX];
    akvt_tmpdir(dir, sizeof dir, "runstore");
    akvi_rs *s;
    cr_assert_eq(akvi_rs_open(NULL, 32 << 10, false, &s), AKV_OK);
    akvi_rs_sst *files[FILES];
    char sessions[FILES][48];
    for (int f = 0; f < FILES; f++) {
        akvt_model m = {0};
        for (int k = 0; k < KEYS; k++) {
            char key[16], val[48];
            snprintf(key, sizeof key, "key%08d", k);
            snprintf(val, sizeof val, "file%04d-key%08d-xxxxxxxxxx", f, k);
            akvt_model_put(&m, key, strlen(key), val, strlen(val));
        }
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%d.sst", dir, f);
        write_sst(path, &m, 0, m.n, f % 2 == 1);
        akvt_model_free(&m);
        cr_assert_eq(akvi_rs_sst_open(s, path, &files[f]), AKV_OK, "%s", akv_errmsg());
        akvi_sstr_props p;
        akvi_rs_sst_props(files[f], &p);
        cr_assert_eq(p.orig_file_number, 1);
        cr_assert_str_eq(p.db_id, "SST Writer");
        cr_assert_gt(strlen(p.db_session), 0);
        for (int g = 0; g < f; g++)
            cr_assert_str_neq(sessions[g], p.db_session, "files %d and %d share a session id", g, f);
        memcpy(sessions[f], p.db_session, sizeof p.db_session);
    }
    uint64_t r = 42;
    for (int q = 0; q < 60000; q++) {
        int f = (int)(next_rand(&r) % FILES), k = (int)(next_rand(&r) % KEYS);
        char key[16], want[40];
        snprintf(key, sizeof key, "key%08d", k);
        snprintf(want, sizeof want, "file%04d-key%08d-xxxxxxxxxx", f, k);
        akvi_rs_val v;
        cr_assert_eq(akvi_rs_get(files[f], key, strlen(key), &v), AKV_OK, "%s", akv_errmsg());
        cr_assert(v.len == strlen(want) && memcmp(v.v, want, v.len) == 0, "file %d key %d: %.*s", f, k,
                  (int)v.len, (const char *)v.v);
        akvi_rs_val_release(&v);
    }
    cr_assert_leq(akvi_rs_cache_usage(s), 64 << 10, "the cache holds what it was given");
    for (int f = 0; f < FILES; f++)
        akvi_rs_sst_close(files[f]);
    akvi_rs_close(s);
    akvt_rmrf(dir);
}

static void numbered_model(akvt_model *m, int n)
{
    for (int k = 0; k < n; k++) {
        char key[16], val[120];
        snprintf(key, sizeof key, "key%08d", k);
        snprintf(val, sizeof val, "value-%08d-%0100d", k, k);
        akvt_model_put(m, key, strlen(key), val, strlen(val));
    }
}

/* A temp dir holding one SST, dir/a.sst (its path in path), of n numbered
 * pairs (in m). */
static void numbered_file(char *dir, char *path, size_t cap, akvt_model *m, int n, bool zstd)
{
    akvt_tmpdir(dir, PATH_MAX, "runstore");
    snprintf(path, cap, "%s/a.sst", dir);
    numbered_model(m, n);
    write_sst(path, m, 0, m->n, zstd);
}

/* A kept reader holds its index itself: opening leaves the cache empty,
 * a point lookup caches its data block, a scan caches nothing. */
Test(runstore, a_reader_holds_its_index_and_the_cache_only_data)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    akvt_model m = {0};
    numbered_file(dir, path, sizeof path, &m, 20000, false);
    akvi_rs *s;
    cr_assert_eq(akvi_rs_open(NULL, 8 << 20, false, &s), AKV_OK);
    akvi_rs_sst *f;
    cr_assert_eq(akvi_rs_sst_open(s, path, &f), AKV_OK);
    akvi_sstr_props p;
    akvi_rs_sst_props(f, &p);
    cr_assert_gt(p.index_bytes, 1000, "a multi-block file has an index");
    cr_assert_eq(akvi_rs_cache_usage(s), 0, "open puts nothing in the cache");
    akvi_rs_iter *it;
    cr_assert_eq(akvi_rs_iter_new(&f, 1, true, &it), AKV_OK);
    size_t n = 0;
    for (akvi_rs_iter_seek_first(it); akvi_rs_iter_valid(it); akvi_rs_iter_next(it))
        n++;
    akvi_rs_iter_destroy(it);
    cr_assert_eq(n, m.n);
    cr_assert_eq(akvi_rs_cache_usage(s), 0, "a scan keeps its blocks out of the cache");
    expect_found(f, &m.v[777]);
    size_t one = akvi_rs_cache_usage(s);
    cr_assert_gt(one, 0);
    cr_assert_lt(one, 16 << 10, "one data block, not the index");
    akvi_rs_sst_close(f);
    akvi_rs_close(s);
    akvt_model_free(&m);
    akvt_rmrf(dir);
}

/* Given the database's block cache (RocksDB's C API handle), the readers
 * fill that one: runs and families count against one budget. */
Test(runstore, readers_share_the_cache_they_are_given)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    akvt_model m = {0};
    numbered_file(dir, path, sizeof path, &m, 20000, false);
    rocksdb_cache_t *cache = rocksdb_cache_create_lru(8 << 20);
    akvi_rs *s;
    cr_assert_eq(akvi_rs_open(cache, 0, false, &s), AKV_OK);
    rocksdb_cache_destroy(cache); /* the store keeps its share of it */
    akvi_rs_sst *f;
    cr_assert_eq(akvi_rs_sst_open(s, path, &f), AKV_OK);
    for (size_t i = 0; i < m.n; i += 997)
        expect_found(f, &m.v[i]);
    size_t used = akvi_rs_cache_usage(s);
    cr_assert_gt(used, 4 << 10, "the data blocks read went into the given cache");
    cache = rocksdb_cache_create_lru(8 << 20);
    akvi_rs *t;
    cr_assert_eq(akvi_rs_open(cache, 0, false, &t), AKV_OK);
    akvi_rs_sst *g;
    cr_assert_eq(akvi_rs_sst_open(t, path, &g), AKV_OK);
    expect_found(g, &m.v[5]);
    cr_assert_eq(rocksdb_cache_get_usage(cache), akvi_rs_cache_usage(t), "one cache, seen from both sides");
    cr_assert_gt(rocksdb_cache_get_usage(cache), 0);
    akvi_rs_sst_close(g);
    akvi_rs_close(t);
    rocksdb_cache_destroy(cache);
    akvi_rs_sst_close(f);
    akvi_rs_close(s);
    akvt_model_free(&m);
    akvt_rmrf(dir);
}

/* O_DIRECT on the descriptor the reader keeps for path, or -1 when the
 * process has no descriptor open on it. */
static int direct_flag_of(const char *path)
{
    char real[PATH_MAX];
    cr_assert_not_null(realpath(path, real));
    for (int fd = 0; fd < 4096; fd++) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n < 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, real) != 0)
            continue;
        char info[64];
        snprintf(info, sizeof info, "/proc/self/fdinfo/%d", fd);
        FILE *fi = fopen(info, "r");
        cr_assert_not_null(fi);
        char line[128];
        unsigned long flags = 0;
        while (fgets(line, sizeof line, fi))
            if (sscanf(line, "flags: %lo", &flags) == 1)
                break;
        fclose(fi);
        return (flags & O_DIRECT) != 0;
    }
    return -1;
}

/* The store's direct_reads reaches the reader's file: it is opened with
 * O_DIRECT, and reads through it return the data. */
Test(runstore, direct_reads_open_the_file_with_o_direct)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    akvt_model m = {0};
    numbered_file(dir, path, sizeof path, &m, 5000, true);
    for (int direct = 0; direct <= 1; direct++) {
        akvi_rs *s;
        cr_assert_eq(akvi_rs_open(NULL, 1 << 20, direct, &s), AKV_OK);
        akvi_rs_sst *f;
        cr_assert_eq(akvi_rs_sst_open(s, path, &f), AKV_OK, "%s", akv_errmsg());
        cr_assert_eq(direct_flag_of(path), direct);
        for (size_t i = 0; i < m.n; i += 97)
            expect_found(f, &m.v[i]);
        cr_assert_eq(akvi_rs_sst_verify(f), AKV_OK);
        akvi_rs_sst_close(f);
        cr_assert_eq(direct_flag_of(path), -1, "closing the reader closes its file");
        akvi_rs_close(s);
    }
    akvt_model_free(&m);
    akvt_rmrf(dir);
}

static void write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

static uint8_t *read_bytes(const char *path, size_t *n)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    uint8_t *b = malloc((size_t)st.st_size);
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f);
    cr_assert_eq(fread(b, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    *n = (size_t)st.st_size;
    return b;
}

static void expect_open_fails(akvi_rs *s, const char *path, int want)
{
    akvi_rs_sst *f = (akvi_rs_sst *)1;
    int rc = akvi_rs_sst_open(s, path, &f);
    cr_assert_eq(rc, want, "open %s: %d %s", path, rc, akv_errmsg());
    cr_assert_null(f);
    cr_assert_not_null(strstr(akv_errmsg(), path), "the message names the file: %s", akv_errmsg());
}

/* A missing file is AKV_EIO; a truncated, empty or foreign one is
 * AKV_ECORRUPT at open; a flipped byte in a data block is AKV_ECORRUPT for
 * the lookup, the scan and the verification that read it, never its
 * wrong value. */
Test(runstore, damaged_files_are_refused_with_a_clear_error)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    akvt_model m = {0};
    numbered_file(dir, path, sizeof path, &m, 5000, false);
    size_t n;
    uint8_t *good = read_bytes(path, &n);
    akvi_rs *s;
    cr_assert_eq(akvi_rs_open(NULL, 1 << 20, false, &s), AKV_OK);

    char missing[PATH_MAX + 32];
    snprintf(missing, sizeof missing, "%s/none.sst", dir);
    expect_open_fails(s, missing, AKV_EIO);
    write_bytes(path, good, 0);
    expect_open_fails(s, path, AKV_ECORRUPT);
    write_bytes(path, good, n / 2);
    expect_open_fails(s, path, AKV_ECORRUPT);
    uint8_t *junk = malloc(n);
    uint64_t r = 9;
    for (size_t i = 0; i < n; i++)
        junk[i] = (uint8_t)next_rand(&r);
    write_bytes(path, junk, n);
    expect_open_fails(s, path, AKV_ECORRUPT);
    free(junk);
    /* A footer byte: the magic number. */
    uint8_t *bad = malloc(n);
    memcpy(bad, good, n);
    bad[n - 1] ^= 0x40;
    write_bytes(path, bad, n);
    expect_open_fails(s, path, AKV_ECORRUPT);

    /* One byte of key 2500's value, in a data block. */
    memcpy(bad, good, n);
    const char *needle = m.v[2500].val ? (const char *)m.v[2500].val : "";
    uint8_t *hit = memmem(bad, n, needle, m.v[2500].vlen);
    cr_assert_not_null(hit, "the value is stored uncompressed");
    hit[20] ^= 0x01;
    write_bytes(path, bad, n);
    akvi_rs_sst *f;
    cr_assert_eq(akvi_rs_sst_open(s, path, &f), AKV_OK, "the index and footer are intact");
    akvi_rs_val v;
    int rc = akvi_rs_get(f, m.v[2500].key, m.v[2500].klen, &v);
    cr_assert_eq(rc, AKV_ECORRUPT, "get: %d", rc);
    cr_assert_not_null(strstr(akv_errmsg(), path));
    cr_assert_not_null(strstr(akv_errmsg(), "checksum"), "%s", akv_errmsg());
    expect_found(f, &m.v[0]); /* another block still reads */
    akvi_rs_iter *it;
    cr_assert_eq(akvi_rs_iter_new(&f, 1, true, &it), AKV_OK);
    size_t seen = 0;
    for (rc = akvi_rs_iter_seek_first(it); rc == AKV_OK && akvi_rs_iter_valid(it); rc = akvi_rs_iter_next(it))
        seen++;
    cr_assert_eq(rc, AKV_ECORRUPT, "the scan stops with an error, not an early end");
    cr_assert(!akvi_rs_iter_valid(it));
    cr_assert_lt(seen, 2500);
    akvi_rs_iter_destroy(it);
    cr_assert_eq(akvi_rs_sst_verify(f), AKV_ECORRUPT);
    cr_assert_eq(akvi_rs_verify_run(&f, 1), AKV_ECORRUPT);
    akvi_rs_sst_close(f);

    free(bad);
    free(good);
    akvi_rs_close(s);
    akvt_model_free(&m);
    akvt_rmrf(dir);
}
