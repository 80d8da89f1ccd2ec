#include "kvmodel.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int akvt_keycmp(const void *a, size_t alen, const void *b, size_t blen)
{
    int d = memcmp(a, b, alen < blen ? alen : blen);
    if (d)
        return d;
    return alen < blen ? -1 : alen > blen;
}

size_t akvt_model_lower_bound(const akvt_model *m, const void *k, size_t klen)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (akvt_keycmp(m->v[mid].key, m->v[mid].klen, k, klen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static unsigned char *dup_bytes(const void *p, size_t n)
{
    unsigned char *d = malloc(n + 1); /* +1: zero-length values still get a pointer */
    cr_assert_not_null(d);
    memcpy(d, p, n);
    return d;
}

const akvt_pair *akvt_model_get(const akvt_model *m, const void *k, size_t klen)
{
    size_t i = akvt_model_lower_bound(m, k, klen);
    if (i < m->n && akvt_keycmp(m->v[i].key, m->v[i].klen, k, klen) == 0)
        return &m->v[i];
    return NULL;
}

void akvt_model_put(akvt_model *m, const void *k, size_t klen, const void *v, size_t vlen)
{
    size_t i = akvt_model_lower_bound(m, k, klen);
    if (i < m->n && akvt_keycmp(m->v[i].key, m->v[i].klen, k, klen) == 0) {
        free(m->v[i].val);
        m->v[i].val = dup_bytes(v, vlen);
        m->v[i].vlen = vlen;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 256;
        m->v = realloc(m->v, m->cap * sizeof *m->v);
        cr_assert_not_null(m->v);
    }
    memmove(m->v + i + 1, m->v + i, (m->n - i) * sizeof *m->v);
    m->v[i] = (akvt_pair){dup_bytes(k, klen), dup_bytes(v, vlen), klen, vlen};
    m->n++;
}

void akvt_model_del(akvt_model *m, const void *k, size_t klen)
{
    size_t i = akvt_model_lower_bound(m, k, klen);
    if (i >= m->n || akvt_keycmp(m->v[i].key, m->v[i].klen, k, klen) != 0)
        return;
    free(m->v[i].key);
    free(m->v[i].val);
    memmove(m->v + i, m->v + i + 1, (m->n - i - 1) * sizeof *m->v);
    m->n--;
}

void akvt_model_free(akvt_model *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].key);
        free(m->v[i].val);
    }
    free(m->v);
    memset(m, 0, sizeof *m);
}

void akvt_tmpdir(char *buf, size_t cap, const char *tag)
{
    const char *base = getenv("TMPDIR");
    int n = snprintf(buf, cap, "%s/akvt-%s-XXXXXX", base && *base ? base : "/tmp", tag);
    cr_assert(n > 0 && (size_t)n < cap, "temporary path too long");
    cr_assert_not_null(mkdtemp(buf), "mkdtemp %s failed", buf);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) == 0 ? 0 : -1;
}

void akvt_rmrf(const char *path)
{
    /* Only ever called on our own mkdtemp directories. */
    if (!path || !strstr(path, "/akvt-"))
        return;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "warning: could not remove %s\n", path);
}
