#include "damage.h"

#include "util/order.h"
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct digest_acc {
    size_t root_len;
    char **lines;
    size_t n, cap;
} digest_acc;

static _Thread_local digest_acc *t_acc;

static uint64_t file_hash(const char *path, uint64_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot read %s", path);
    XXH64_state_t *st = XXH64_createState();
    XXH64_reset(st, 0);
    char buf[65536];
    size_t r;
    *size = 0;
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) {
        XXH64_update(st, buf, r);
        *size += r;
    }
    fclose(f);
    uint64_t h = XXH64_digest(st);
    XXH64_freeState(st);
    return h;
}

static int digest_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)ftw;
    (void)st;
    digest_acc *a = t_acc;
    bool dir = flag == FTW_D || flag == FTW_DNR;
    if (flag != FTW_F && !dir)
        return 0;
    if (dir && strlen(path) <= a->root_len)
        return 0; /* the root itself */
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->lines = realloc(a->lines, a->cap * sizeof *a->lines);
        cr_assert_not_null(a->lines);
    }
    char line[1200];
    if (dir) {
        snprintf(line, sizeof line, "%s/ directory\n", path + a->root_len);
    } else {
        uint64_t size;
        uint64_t h = file_hash(path, &size);
        snprintf(line, sizeof line, "%s %llu %016llx\n", path + a->root_len, (unsigned long long)size,
                 (unsigned long long)h);
    }
    a->lines[a->n++] = strdup(line);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char *akvt_dir_digest(const char *dir)
{
    digest_acc a = {strlen(dir), NULL, 0, 0};
    t_acc = &a;
    cr_assert_eq(nftw(dir, digest_one, 16, FTW_PHYS), 0, "cannot walk %s", dir);
    t_acc = NULL;
    akvi_sort(a.lines, a.n, sizeof *a.lines, cmp_str);
    size_t total = 1;
    for (size_t i = 0; i < a.n; i++)
        total += strlen(a.lines[i]);
    char *out = malloc(total);
    cr_assert_not_null(out);
    out[0] = 0;
    for (size_t i = 0; i < a.n; i++) {
        strcat(out, a.lines[i]);
        free(a.lines[i]);
    }
    free(a.lines);
    return out;
}

size_t akvt_families(const char *dir, const char *name, bool prefix)
{
    char rdir[1100];
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    rocksdb_options_t *o = rocksdb_options_create();
    char *err = NULL;
    size_t n = 0, found = 0;
    char **names = rocksdb_list_column_families(o, rdir, &n, &err);
    cr_assert_null(err, "listing families of %s: %s", rdir, err);
    for (size_t i = 0; i < n; i++)
        found += prefix ? strncmp(names[i], name, strlen(name)) == 0 : strcmp(names[i], name) == 0;
    rocksdb_list_column_families_destroy(names, n);
    rocksdb_options_destroy(o);
    return found;
}

void akvt_rocks_open(const char *dir, bool read_only, akvt_rocks *r)
{
    char rdir[1100];
    snprintf(rdir, sizeof rdir, "%s/rocksdb", dir);
    memset(r, 0, sizeof *r);
    r->o = rocksdb_options_create();
    char *err = NULL;
    r->names = rocksdb_list_column_families(r->o, rdir, &r->n, &err);
    cr_assert_null(err, "listing families of %s: %s", rdir, err);
    const rocksdb_options_t **cfo = calloc(r->n, sizeof *cfo);
    r->h = calloc(r->n, sizeof *r->h);
    cr_assert(cfo && r->h);
    for (size_t i = 0; i < r->n; i++)
        cfo[i] = r->o;
    const char *const *names = (const char *const *)r->names;
    r->db = read_only
                ? rocksdb_open_for_read_only_column_families(r->o, rdir, (int)r->n, names, cfo, r->h, 0, &err)
                : rocksdb_open_column_families(r->o, rdir, (int)r->n, names, cfo, r->h, &err);
    cr_assert_null(err, "opening %s: %s", rdir, err);
    free(cfo);
}

void akvt_rocks_close(akvt_rocks *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->h[i])
            rocksdb_column_family_handle_destroy(r->h[i]);
    rocksdb_close(r->db);
    rocksdb_list_column_families_destroy(r->names, r->n);
    free(r->h);
    rocksdb_options_destroy(r->o);
    memset(r, 0, sizeof *r);
}

/* Opens DIR/rocksdb read only with every family; calls fn with its live files. */
static void with_live_files(const char *dir, void (*fn)(void *, const rocksdb_livefiles_t *), void *arg)
{
    akvt_rocks r;
    akvt_rocks_open(dir, true, &r);
    const rocksdb_livefiles_t *lf = rocksdb_livefiles(r.db);
    fn(arg, lf);
    rocksdb_livefiles_destroy(lf);
    akvt_rocks_close(&r);
}

size_t akvt_forget_family(const char *dir, const char *cf)
{
    char files[16][1024], keep[1100];
    size_t k = akvt_cf_ssts(dir, cf, files, 16);
    cr_assert_gt(k, 0, "family %s holds no file", cf);
    for (size_t j = 0; j < k; j++) { /* RocksDB deletes a dropped family's files */
        snprintf(keep, sizeof keep, "%s.keep", files[j]);
        cr_assert_eq(link(files[j], keep), 0, "%s: %s", keep, strerror(errno));
    }
    akvt_rocks r;
    akvt_rocks_open(dir, false, &r);
    char *err = NULL;
    for (size_t i = 0; i < r.n; i++)
        if (strcmp(r.names[i], cf) == 0)
            rocksdb_drop_column_family(r.db, r.h[i], &err);
    cr_assert_null(err, "dropping %s: %s", cf, err);
    akvt_rocks_close(&r);
    for (size_t j = 0; j < k; j++) {
        snprintf(keep, sizeof keep, "%s.keep", files[j]);
        cr_assert_eq(rename(keep, files[j]), 0, "%s: %s", keep, strerror(errno));
    }
    return k;
}

typedef struct cf_query {
    const char *dir, *cf;
    char (*out)[1024];
    size_t max, n;
    const char *path;
    uint64_t entries;
} cf_query;

static void collect_cf(void *arg, const rocksdb_livefiles_t *lf)
{
    cf_query *q = arg;
    int n = rocksdb_livefiles_count(lf);
    /* key order: by smallest key */
    const char *keys[4096];
    size_t lens[4096];
    size_t k = 0;
    for (int i = 0; i < n && k < q->max && k < 4096; i++) {
        if (strcmp(rocksdb_livefiles_column_family_name(lf, i), q->cf) != 0)
            continue;
        size_t kl;
        const char *key = rocksdb_livefiles_smallestkey(lf, i, &kl);
        size_t pos = k;
        while (pos > 0) {
            size_t m = lens[pos - 1] < kl ? lens[pos - 1] : kl;
            int c = memcmp(keys[pos - 1], key, m);
            if (c < 0 || (c == 0 && lens[pos - 1] <= kl))
                break;
            keys[pos] = keys[pos - 1];
            lens[pos] = lens[pos - 1];
            memcpy(q->out[pos], q->out[pos - 1], 1024);
            pos--;
        }
        keys[pos] = key;
        lens[pos] = kl;
        snprintf(q->out[pos], 1024, "%s/rocksdb%s", q->dir, rocksdb_livefiles_name(lf, i));
        k++;
    }
    q->n = k;
}

/* Run `run`'s files in DIR/runs, in SST order (key order). */
static size_t run_files(const char *dir, unsigned long long run, char out[][1024], size_t max)
{
    size_t n = 0;
    for (unsigned long long j = 0; n < max; j++) {
        snprintf(out[n], 1024, "%s/runs/%llu-%llu.sst", dir, run, j);
        struct stat st;
        if (stat(out[n], &st) != 0)
            break;
        n++;
    }
    return n;
}

size_t akvt_cf_ssts(const char *dir, const char *cf, char out[][1024], size_t max)
{
    cf_query q = {.dir = dir, .cf = cf, .out = out, .max = max};
    with_live_files(dir, collect_cf, &q);
    unsigned long long run;
    if (q.n == 0 && sscanf(cf, "run.%llu", &run) == 1)
        return run_files(dir, run, out, max);
    return q.n;
}

static void find_entries(void *arg, const rocksdb_livefiles_t *lf)
{
    cf_query *q = arg;
    const char *base = strrchr(q->path, '/');
    for (int i = 0; base && i < rocksdb_livefiles_count(lf); i++)
        if (strcmp(rocksdb_livefiles_name(lf, i), base) == 0)
            q->entries = rocksdb_livefiles_entries(lf, i);
}

uint64_t akvt_sst_entries(const char *dir, const char *path)
{
    cf_query q = {.dir = dir, .path = path};
    with_live_files(dir, find_entries, &q);
    return q.entries;
}

void akvt_copy_tree(const char *src, const char *dst)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", src, dst);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

void akvt_copy_file(const char *src, const char *dst)
{
    char cmd[2400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

uint64_t akvt_file_size(const char *path)
{
    struct stat st;
    cr_assert_eq(stat(path, &st), 0, "stat %s", path);
    return (uint64_t)st.st_size;
}

void akvt_truncate(const char *path, uint64_t size)
{
    cr_assert_eq(truncate(path, (off_t)size), 0, "truncate %s", path);
}

void akvt_smash(const char *path, uint64_t off, size_t len)
{
    int fd = open(path, O_WRONLY);
    cr_assert_geq(fd, 0, "open %s", path);
    char buf[4096];
    memset(buf, 0xA5, sizeof buf);
    while (len > 0) {
        size_t k = len < sizeof buf ? len : sizeof buf;
        cr_assert_eq(pwrite(fd, buf, k, (off_t)off), (ssize_t)k);
        off += k;
        len -= k;
    }
    close(fd);
}

int akvt_find_file(const char *dir, const char *prefix, const char *suffix, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s", dir);
    struct dirent *e;
    uint64_t best = 0;
    int found = 0;
    size_t pl = strlen(prefix), sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, pl) != 0 || nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (!found || (uint64_t)st.st_size > best) {
            best = (uint64_t)st.st_size;
            snprintf(out, cap, "%s", path);
            found = 1;
        }
    }
    closedir(d);
    return found;
}

uint64_t akvt_bytes_with_suffix(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s", dir);
    struct dirent *e;
    uint64_t total = 0;
    size_t sl = strlen(suffix);
    while ((e = readdir(d)) != NULL) {
        size_t nl = strlen(e->d_name);
        if (nl < sl || strcmp(e->d_name + nl - sl, suffix) != 0)
            continue;
        char path[2048];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}
