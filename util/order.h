/*
 * order.h — the two orders adaptkv sorts by, one comparator each:
 * byte strings (RocksDB's bytewise order, shorter prefix first) and key
 * hashes ((hi, lo) ascending, the order filters are built and scanned in).
 */
#ifndef AKV_ORDER_H
#define AKV_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "adaptkv/hash.h"

static inline int akv_bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static inline int akv_hash_cmp(akv_hash a, akv_hash b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return (a.lo > b.lo) - (a.lo < b.lo);
}

/* akv_hash_cmp for qsort and bsearch. */
static inline int akv_hash_cmp_ptr(const void *a, const void *b)
{
    return akv_hash_cmp(*(const akv_hash *)a, *(const akv_hash *)b);
}

#endif
