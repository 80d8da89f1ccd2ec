/*
 * order.h — the two orders adaptkv sorts by, one comparator each:
 * byte strings (RocksDB's bytewise order, shorter prefix first) and key
 * hashes ((hi, lo) ascending, the order filters are built and scanned in),
 * and the one sort helper everything sorts with.
 */
#ifndef AKV_ORDER_H
#define AKV_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/hash.h"

static inline int akvi_bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : (al > bl) - (al < bl);
}

static inline int akvi_hash_cmp(akv_hash a, akv_hash b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return (a.lo > b.lo) - (a.lo < b.lo);
}

/* akvi_hash_cmp for qsort and bsearch. */
static inline int akvi_hash_cmp_ptr(const void *a, const void *b)
{
    return akvi_hash_cmp(*(const akv_hash *)a, *(const akv_hash *)b);
}

/* qsort that accepts an empty array given as NULL (the C library's qsort
 * declares its base never null, even for zero elements). */
static inline void akvi_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

#endif
