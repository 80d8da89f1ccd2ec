/*
 * registry.c — kind registry, argument-checking wrappers and the serialized
 * envelope shared by every kind (magic, versions, kind id, length, checksum).
 */
#include "adaptkv/filter.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "util/codec.h"

void akv_filter_params_init(akv_filter_params *p)
{
    memset(p, 0, sizeof *p);
    p->bits_per_key = 10.0;
    p->load_factor = 0.0;
}

/* ---- registry ---------------------------------------------------------- */

#define MAX_KINDS 64
static const akv_filter_kind *g_kinds[MAX_KINDS];
static size_t g_nkinds;
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_builtin_once = PTHREAD_ONCE_INIT;

extern const akv_filter_kind *const akvi_builtin_kinds[]; /* kinds.c, NULL-terminated */

static int register_locked(const akv_filter_kind *k)
{
    for (size_t i = 0; i < g_nkinds; i++)
        if (g_kinds[i]->id == k->id || strcmp(g_kinds[i]->name, k->name) == 0)
            return AKV_EEXIST;
    if (g_nkinds == MAX_KINDS)
        return AKV_EFULL;
    g_kinds[g_nkinds++] = k;
    return AKV_OK;
}

static void register_builtins(void)
{
    for (size_t i = 0; akvi_builtin_kinds[i]; i++)
        register_locked(akvi_builtin_kinds[i]);
}

static void ensure_builtins(void) { pthread_once(&g_builtin_once, register_builtins); }

int akv_filter_register(const akv_filter_kind *k)
{
    if (!k || !k->name || !k->create || !k->add || !k->finish || !k->may_contain || !k->memory_bytes ||
        !k->save || !k->load || !k->destroy || k->id == 0)
        return AKV_EINVAL;
    ensure_builtins();
    pthread_mutex_lock(&g_reg_lock);
    int rc = register_locked(k);
    pthread_mutex_unlock(&g_reg_lock);
    return rc;
}

const akv_filter_kind *akv_filter_kind_at(size_t i)
{
    ensure_builtins();
    pthread_mutex_lock(&g_reg_lock);
    const akv_filter_kind *k = i < g_nkinds ? g_kinds[i] : NULL;
    pthread_mutex_unlock(&g_reg_lock);
    return k;
}

const akv_filter_kind *akv_filter_kind_by_name(const char *name)
{
    const akv_filter_kind *k;
    for (size_t i = 0; name && (k = akv_filter_kind_at(i)); i++)
        if (strcmp(k->name, name) == 0)
            return k;
    return NULL;
}

const akv_filter_kind *akv_filter_kind_by_id(uint16_t id)
{
    const akv_filter_kind *k;
    for (size_t i = 0; (k = akv_filter_kind_at(i)); i++)
        if (k->id == id)
            return k;
    return NULL;
}

/* ---- wrappers ---------------------------------------------------------- */

int akv_filter_create(const akv_filter_kind *k, const akv_filter_params *p, const akv_negative *neg,
                      size_t n_neg, akv_filter **out)
{
    if (!k || !p || !out || (n_neg && !neg))
        return AKV_EINVAL;
    if (!(p->bits_per_key > 0) || !isfinite(p->bits_per_key) || p->bits_per_key > 1024 || p->prefix_bits > 32)
        return AKV_EINVAL;
    *out = NULL;
    return k->create(p, neg, n_neg, out);
}

int akv_filter_add(akv_filter *f, akv_hash h) { return f ? f->kind->add(f, h) : AKV_EINVAL; }
int akv_filter_finish(akv_filter *f) { return f ? f->kind->finish(f) : AKV_EINVAL; }
size_t akv_filter_memory(const akv_filter *f) { return f ? f->kind->memory_bytes(f) : 0; }

/* Keys ahead of the one being answered whose memory is requested: enough to
 * cover a miss to DRAM at a few ns per answer, few enough to stay in L1. */
#define PREFETCH_AHEAD 16

size_t akv_filter_may_contain_many(const akv_filter *f, const akv_hash *hs, size_t n, bool *out)
{
    const akv_filter_kind *k = f->kind;
    size_t maybe = 0;
    if (k->prefetch)
        for (size_t i = 0; i < n && i < PREFETCH_AHEAD; i++)
            k->prefetch(f, hs[i]);
    for (size_t i = 0; i < n; i++) {
        if (k->prefetch && i + PREFETCH_AHEAD < n)
            k->prefetch(f, hs[i + PREFETCH_AHEAD]);
        out[i] = k->may_contain(f, hs[i]);
        maybe += out[i];
    }
    return maybe;
}

int akv_filter_insert(akv_filter *f, akv_hash h)
{
    if (!f)
        return AKV_EINVAL;
    return f->kind->insert ? f->kind->insert(f, h) : AKV_ENOTSUP;
}

int akv_filter_remove(akv_filter *f, akv_hash h)
{
    if (!f)
        return AKV_EINVAL;
    return f->kind->remove ? f->kind->remove(f, h) : AKV_ENOTSUP;
}

int akv_filter_adapt(akv_filter *f, akv_hash h, akv_revmap *rm)
{
    if (!f)
        return AKV_EINVAL;
    return f->kind->adapt ? f->kind->adapt(f, h, rm) : AKV_ENOTSUP;
}

int akv_filter_absorb(akv_filter *f, akv_hash h)
{
    if (!f)
        return AKV_EINVAL;
    return f->kind->absorb ? f->kind->absorb(f, h) : AKV_ENOTSUP;
}

int akv_filter_refill(akv_filter *f, const akv_hash *keys, size_t n, const akv_negative *neg, size_t n_neg)
{
    if (!f)
        return AKV_EINVAL;
    return f->kind->refill ? f->kind->refill(f, keys, n, neg, n_neg) : AKV_ENOTSUP;
}

void akv_filter_get_stats(const akv_filter *f, akv_filter_stats *out)
{
    memset(out, 0, sizeof *out);
    if (f && f->kind->stats)
        f->kind->stats(f, out);
}

void akv_filter_destroy(akv_filter *f)
{
    if (f)
        f->kind->destroy(f);
}

int akv_filter_build(const akv_filter_kind *k, const akv_filter_params *p, const akv_hash *keys, size_t n,
                     const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    akv_filter *f = NULL;
    int rc = akv_filter_create(k, p, neg, n_neg, &f);
    for (size_t i = 0; rc == AKV_OK && i < n; i++)
        rc = k->add(f, keys[i]);
    if (rc == AKV_OK)
        rc = k->finish(f);
    if (rc != AKV_OK) {
        akv_filter_destroy(f);
        f = NULL;
    }
    *out = f;
    return rc;
}

/* ---- envelope ---------------------------------------------------------- */

int akv_filter_serialize(const akv_filter *f, uint8_t **buf, size_t *len)
{
    if (!f || !buf || !len)
        return AKV_EINVAL;
    size_t plen = 0;
    int rc = f->kind->save(f, NULL, &plen);
    if (rc != AKV_OK)
        return rc;
    size_t total = AKV_FILTER_HEADER_BYTES + plen + AKV_FILTER_TRAILER_BYTES;
    uint8_t *out = malloc(total);
    if (!out)
        return AKV_ENOMEM;
    akvi_wbuf w = {out, 0};
    akvi_w_bytes(&w, AKV_FILTER_MAGIC, 4);
    akvi_w_u16(&w, AKV_FILTER_FORMAT_VERSION);
    akvi_w_u16(&w, f->kind->id);
    akvi_w_u16(&w, f->kind->payload_version);
    akvi_w_u16(&w, 0);
    akvi_w_u64(&w, plen);
    size_t got = plen;
    rc = f->kind->save(f, out + w.len, &got);
    if (rc != AKV_OK || got != plen) {
        free(out);
        return rc != AKV_OK ? rc : AKV_EINVAL;
    }
    w.len += plen;
    akvi_w_u64(&w, XXH64(out, w.len, 0));
    *buf = out;
    *len = total;
    return AKV_OK;
}

int akv_filter_deserialize(const uint8_t *buf, size_t len, akv_filter **out)
{
    if (!buf || !out)
        return AKV_EINVAL;
    *out = NULL;
    if (len < AKV_FILTER_HEADER_BYTES + AKV_FILTER_TRAILER_BYTES)
        return AKV_ECORRUPT;
    akvi_rbuf r = {buf, len, 0, false};
    const uint8_t *magic = akvi_r_take(&r, 4);
    uint16_t fmt = akvi_r_u16(&r), id = akvi_r_u16(&r), pver = akvi_r_u16(&r);
    (void)akvi_r_u16(&r);
    uint64_t plen = akvi_r_u64(&r);
    if (memcmp(magic, AKV_FILTER_MAGIC, 4) != 0)
        return AKV_ECORRUPT;
    if (plen != len - AKV_FILTER_HEADER_BYTES - AKV_FILTER_TRAILER_BYTES)
        return AKV_ECORRUPT;
    akvi_rbuf t = {buf + len - 8, 8, 0, false};
    if (akvi_r_u64(&t) != XXH64(buf, len - 8, 0))
        return AKV_ECORRUPT;
    if (fmt != AKV_FILTER_FORMAT_VERSION)
        return AKV_ENOTSUP;
    const akv_filter_kind *k = akv_filter_kind_by_id(id);
    if (!k || pver > k->payload_version)
        return AKV_ENOTSUP;
    return k->load(buf + AKV_FILTER_HEADER_BYTES, (size_t)plen, pver, out);
}
