/*
 * memrevmap.c — the in-memory reverse map: a sorted array of key hashes.
 * A minirun's keys share their top nbits of h.hi, so they are one contiguous
 * range of the array, found by binary search.
 */
#include <stdlib.h>
#include <string.h>

#include "revmap/revmap.h"

struct akv_memrevmap {
    akv_revmap rm;
    akv_hash *v;
    size_t n, cap;
};

static int hash_cmp(akv_hash a, akv_hash b)
{
    if (a.hi != b.hi)
        return a.hi < b.hi ? -1 : 1;
    return a.lo < b.lo ? -1 : a.lo > b.lo;
}

static int qsort_cmp(const void *a, const void *b) { return hash_cmp(*(const akv_hash *)a, *(const akv_hash *)b); }

/* First index whose hash is >= (hi, lo). */
static size_t lower_bound(const akv_memrevmap *m, akv_hash h)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hash_cmp(m->v[mid], h) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int mem_scan(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg)
{
    akv_memrevmap *m = (akv_memrevmap *)rm;
    if (nbits < 1 || nbits > 64)
        return AKV_EINVAL;
    uint64_t mask = nbits == 64 ? ~0ULL : ~(~0ULL >> nbits);
    uint64_t start = hi & mask;
    for (size_t i = lower_bound(m, (akv_hash){start, 0}); i < m->n && (m->v[i].hi & mask) == start; i++) {
        int rc = fn(arg, m->v[i]);
        if (rc)
            return rc;
    }
    return AKV_OK;
}

int akv_memrevmap_create(const akv_hash *keys, size_t n, akv_memrevmap **out)
{
    akv_memrevmap *m = calloc(1, sizeof *m);
    if (!m)
        return AKV_ENOMEM;
    m->cap = n ? n : 16;
    m->v = malloc(m->cap * sizeof *m->v);
    if (!m->v)
        return free(m), AKV_ENOMEM;
    if (n)
        memcpy(m->v, keys, n * sizeof *keys);
    m->n = n;
    qsort(m->v, n, sizeof *m->v, qsort_cmp);
    m->rm.scan = mem_scan;
    m->rm.ctx = m;
    *out = m;
    return AKV_OK;
}

int akv_memrevmap_insert(akv_memrevmap *m, akv_hash h)
{
    if (m->n == m->cap) {
        akv_hash *v = realloc(m->v, 2 * m->cap * sizeof *v);
        if (!v)
            return AKV_ENOMEM;
        m->v = v;
        m->cap *= 2;
    }
    size_t i = lower_bound(m, h);
    memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
    m->v[i] = h;
    m->n++;
    return AKV_OK;
}

int akv_memrevmap_remove(akv_memrevmap *m, akv_hash h)
{
    size_t i = lower_bound(m, h);
    if (i == m->n || hash_cmp(m->v[i], h) != 0)
        return AKV_NOTFOUND;
    memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof *m->v);
    m->n--;
    return AKV_OK;
}

akv_revmap *akv_memrevmap_revmap(akv_memrevmap *m) { return &m->rm; }

void akv_memrevmap_destroy(akv_memrevmap *m)
{
    if (!m)
        return;
    free(m->v);
    free(m);
}
