/*
 * wal.c — RocksDB's write-ahead log files read before RocksDB replays them:
 * where replay will stop, and what it will drop.
 *
 * RocksDB recovers its WAL in point-in-time mode (engine/rocks.c): it
 * replays every record up to the first one that is damaged and silently
 * drops the rest. So that a damaged WAL is never a silent loss, open and
 * repair read the log files first, in RocksDB's format (32 KiB blocks of
 * physical records: masked CRC32C, length, type, payload; a record may be
 * cut into first/middle/last fragments), find where replay stops, and count
 * the complete records (write batches) and writes after that point, found
 * again after damage by their checksums
 * (docs/reliability.md, "A damaged WAL").
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

#define BLOCK 32768u
#define HDR   7u
#define RHDR  11u /* recyclable records also carry the log number */

/* ---- CRC32C (Castagnoli), as RocksDB's util/crc32c computes it ----------- */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32c(const uint8_t *p, size_t n)
{
    pthread_once(&crc_once, crc_init);
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++)
        c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

/* RocksDB stores a CRC masked: rotated right by 15 bits plus a constant. */
static uint32_t crc_unmask(uint32_t m)
{
    uint32_t rot = m - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

/* ---- one log file ------------------------------------------------------- */

enum { REC_OK, REC_TORN, REC_BAD, REC_ZERO };

/* The physical record at `pos` (not in a block's trailer): REC_OK with its
 * type, payload and size, or why not. */
static int phys(const uint8_t *b, size_t size, size_t pos, unsigned *type, const uint8_t **pay, size_t *plen,
                size_t *next)
{
    size_t left = BLOCK - pos % BLOCK;
    if (size - pos < HDR)
        return REC_TORN;
    unsigned t = b[pos + 6];
    size_t len = (size_t)b[pos + 4] | (size_t)b[pos + 5] << 8;
    if (t == 0 && len == 0)
        return REC_ZERO; /* preallocated, never written */
    size_t hs = t >= 5 && t <= 8 ? RHDR : HDR;
    if (t == 0 || t > 10)
        return REC_BAD;
    if (hs + len > left)
        return pos + hs + len > size && size - pos < left ? REC_TORN : REC_BAD;
    if (pos + hs + len > size)
        return REC_TORN;
    uint32_t stored = (uint32_t)b[pos] | (uint32_t)b[pos + 1] << 8 | (uint32_t)b[pos + 2] << 16 |
                      (uint32_t)b[pos + 3] << 24;
    if (crc_unmask(stored) != crc32c(b + pos + 6, hs - 6 + len))
        return REC_BAD;
    *type = t >= 5 && t <= 8 ? t - 4 : t; /* recyclable → plain */
    *pay = b + pos + hs;
    *plen = len;
    *next = pos + hs + len;
    return REC_OK;
}

/* Walk from `pos`, reassembling records. Stops at the first record that is
 * not sound (returns its REC_* and offset in *stop) unless `skip`, which
 * instead moves on to the next block and keeps counting. Counts complete
 * records and the writes their batches hold (a batch: sequence, count). */
static int walk(const uint8_t *b, size_t size, size_t pos, bool skip, uint64_t *records, uint64_t *writes,
                size_t *stop)
{
    bool in_frag = false;
    uint32_t frag_count = 0;
    while (pos < size) {
        if (BLOCK - pos % BLOCK < HDR) { /* a block's trailer: padding */
            pos += BLOCK - pos % BLOCK;
            continue;
        }
        unsigned t = 0;
        const uint8_t *p = NULL;
        size_t n = 0, next = 0;
        int r = phys(b, size, pos, &t, &p, &n, &next);
        if (r == REC_OK && ((t == 1 || t == 2) == in_frag) && t <= 4)
            r = REC_BAD; /* a fragment out of order */
        if (r != REC_OK) {
            if (!skip) {
                *stop = pos;
                return r;
            }
            /* Resynchronise byte by byte: a record is found again where a
             * header's CRC matches (a false match: 1 in 2^32). */
            in_frag = false;
            pos++;
            continue;
        }
        if (t == 1 || t == 2) {
            frag_count =
                n >= 12 ? (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 | (uint32_t)p[11] << 24
                        : 0;
            in_frag = t == 2;
        }
        if (t == 1 || t == 4) {
            in_frag = false;
            (*records)++;
            *writes += frag_count;
        }
        pos = next;
    }
    *stop = pos;
    return in_frag ? REC_TORN : REC_OK;
}

static bool all_zero(const uint8_t *b, size_t from, size_t size)
{
    for (size_t i = from; i < size; i++)
        if (b[i])
            return false;
    return true;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int akvi_wal_check(const char *rdir, akvi_wal_report *rep)
{
    memset(rep, 0, sizeof *rep);
    DIR *d = opendir(rdir);
    if (!d)
        return AKV_OK; /* no RocksDB yet: nothing to replay */
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    int rc = AKV_OK;
    while (rc == AKV_OK && (e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".log") != 0 || strspn(e->d_name, "0123456789") != l - 4)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            char **t = realloc(names, cap * sizeof *names);
            if (!t) {
                rc = akvi_err(AKV_ENOMEM, "out of memory");
                break;
            }
            names = t;
        }
        if (!(names[n] = strdup(e->d_name)))
            rc = akvi_err(AKV_ENOMEM, "out of memory");
        else
            n++;
    }
    closedir(d);
    /* Same-width decimal numbers: name order is log order. */
    if (n)
        qsort(names, n, sizeof *names, cmp_name);
    bool stopped = false;
    for (size_t i = 0; rc == AKV_OK && i < n; i++) {
        char *path = akvi_path_join(rdir, names[i]);
        uint8_t *b = NULL;
        size_t size = 0;
        rc = path ? akvi_file_read(path, &b, &size) : akvi_err(AKV_ENOMEM, "out of memory");
        free(path);
        if (rc != AKV_OK)
            break;
        uint64_t recs = 0, writes = 0, after = 0, after_w = 0;
        size_t stop = 0;
        if (stopped) { /* replay stopped in an earlier file: all of this one is dropped */
            walk(b, size, 0, true, &after, &after_w, &stop);
            rep->records_dropped += after;
            rep->writes_dropped += after_w;
            free(b);
            continue;
        }
        int r = walk(b, size, 0, false, &recs, &writes, &stop);
        size_t at = stop;
        if (r != REC_OK && !(r == REC_ZERO && all_zero(b, at, size))) {
            if (r != REC_TORN && at + 1 < size)
                walk(b, size, at + 1, true, &after, &after_w, &stop);
            bool torn = r == REC_TORN || (r != REC_BAD && after == 0);
            if (!rep->files_damaged) {
                snprintf(rep->file, sizeof rep->file, "%s", names[i]);
                rep->offset = at;
                rep->torn = torn;
                rep->records_kept = recs;
                rep->writes_kept = writes;
            }
            rep->files_damaged++;
            rep->records_dropped += after + 1; /* and the record at the stop */
            rep->writes_dropped += after_w;
            /* A torn end is where a writer died: RocksDB goes on with the
             * next file. A damaged record stops the replay of every later
             * file too. */
            stopped = !torn;
        }
        free(b);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
