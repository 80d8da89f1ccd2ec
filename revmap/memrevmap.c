/*
 * memrevmap.c — the in-memory reverse map: a sorted array of key hashes.
 * A minirun's keys share their top nbits of h.hi, so they are one contiguous
 * range of the array, found by binary search.
 *
 * A map may hold only part of a set (akvi_memrevmap_restrict): the engine
 * reads the owners of a minirun from disk first, then adapts under the
 * slot's lock against this in-memory copy. A scan outside the part it holds
 * cannot be answered exactly, so it fails with AKV_EBUSY and is remembered
 * (akvi_memrevmap_missed), and the filter leaves itself unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "revmap/revmap.h"
#include "util/order.h"

struct akvi_memrevmap {
    akv_revmap rm;
    akv_hash *v;
    size_t n, cap;
    bool partial;      /* holds only the keys of the prefixes in cover[] */
    size_t n_cover;
    struct {
        uint64_t hi;
        unsigned bits;
    } cover[AKV_MEMREVMAP_MAX_PARTS];
    bool missed;       /* a scan asked outside the cover */
    uint64_t miss_hi;
    unsigned miss_bits;
};

static uint64_t top_mask(unsigned nbits)
{
    return nbits == 0 ? 0 : nbits >= 64 ? ~0ULL : ~(~0ULL >> nbits);
}

/* Does the map hold every key of the set whose top nbits equal hi's? */
static bool covers(const akvi_memrevmap *m, uint64_t hi, unsigned nbits)
{
    if (!m->partial)
        return true;
    for (size_t i = 0; i < m->n_cover; i++) {
        uint64_t mask = top_mask(m->cover[i].bits);
        if (nbits >= m->cover[i].bits && (hi & mask) == (m->cover[i].hi & mask))
            return true;
    }
    return false;
}

bool akvi_memrevmap_covers(const akvi_memrevmap *m, uint64_t hi, unsigned nbits)
{
    return covers(m, hi, nbits);
}

/* First index whose hash is >= (hi, lo). */
static size_t lower_bound(const akvi_memrevmap *m, akv_hash h)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (akvi_hash_cmp(m->v[mid], h) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int mem_scan(akv_revmap *rm, uint64_t hi, unsigned nbits, akv_revmap_fn fn, void *arg)
{
    akvi_memrevmap *m = (akvi_memrevmap *)rm;
    if (nbits < 1 || nbits > 64)
        return AKV_EINVAL;
    if (!covers(m, hi, nbits)) {
        m->missed = true;
        m->miss_hi = hi;
        m->miss_bits = nbits;
        return AKV_EBUSY;
    }
    uint64_t mask = top_mask(nbits);
    uint64_t start = hi & mask;
    for (size_t i = lower_bound(m, (akv_hash){start, 0}); i < m->n && (m->v[i].hi & mask) == start; i++) {
        int rc = fn(arg, m->v[i]);
        if (rc)
            return rc;
    }
    return AKV_OK;
}

int akvi_memrevmap_create(const akv_hash *keys, size_t n, akvi_memrevmap **out)
{
    akvi_memrevmap *m = calloc(1, sizeof *m);
    if (!m)
        return AKV_ENOMEM;
    m->cap = n ? n : 16;
    m->v = malloc(m->cap * sizeof *m->v);
    if (!m->v)
        return free(m), AKV_ENOMEM;
    if (n)
        memcpy(m->v, keys, n * sizeof *keys);
    m->n = n;
    akvi_sort(m->v, n, sizeof *m->v, akvi_hash_cmp_ptr);
    m->partial = false;
    m->rm.scan = mem_scan;
    m->rm.ctx = m;
    *out = m;
    return AKV_OK;
}

int akvi_memrevmap_insert(akvi_memrevmap *m, akv_hash h)
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

int akvi_memrevmap_remove(akvi_memrevmap *m, akv_hash h)
{
    size_t i = lower_bound(m, h);
    if (i == m->n || akvi_hash_cmp(m->v[i], h) != 0)
        return AKV_NOTFOUND;
    memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof *m->v);
    m->n--;
    return AKV_OK;
}

akv_revmap *akvi_memrevmap_revmap(akvi_memrevmap *m)
{
    return &m->rm;
}

int akvi_memrevmap_restrict(akvi_memrevmap *m, uint64_t hi, unsigned nbits)
{
    if (nbits > AKV_MEMREVMAP_NOTHING)
        return AKV_EINVAL;
    m->partial = true;
    m->n_cover = 0;
    m->missed = false;
    return nbits == AKV_MEMREVMAP_NOTHING ? AKV_OK : akvi_memrevmap_cover_more(m, hi, nbits);
}

int akvi_memrevmap_cover_more(akvi_memrevmap *m, uint64_t hi, unsigned nbits)
{
    if (nbits > 64)
        return AKV_EINVAL;
    if (!m->partial)
        return AKV_OK;
    if (m->n_cover == AKV_MEMREVMAP_MAX_PARTS)
        return AKV_EFULL;
    m->cover[m->n_cover].hi = hi;
    m->cover[m->n_cover++].bits = nbits;
    m->missed = false;
    return AKV_OK;
}

bool akvi_memrevmap_missed(const akvi_memrevmap *m, uint64_t *hi, unsigned *nbits)
{
    if (m->missed) {
        *hi = m->miss_hi;
        *nbits = m->miss_bits;
    }
    return m->missed;
}

void akvi_memrevmap_destroy(akvi_memrevmap *m)
{
    if (!m)
        return;
    free(m->v);
    free(m);
}
