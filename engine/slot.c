/*
 * slot.c — one filter slot: the filter, its counters, its lock and its file.
 *
 * Static filters are queried lock-free. A filter whose kind can mutate
 * (adapt/insert/remove) and does not lock internally gets a reader-writer
 * lock: queries share it, adaptation takes it exclusively, so a query never
 * sees a half-applied change (which could be a false negative). Nothing
 * here does I/O while holding that lock: adaptations get their reverse map
 * in memory (adapt.c), and a save serializes under the lock and writes after.
 *
 * A slot's file is bound to its SST (docs/format.md §8): it repeats the
 * SST's catalog entry (run, SST, level, key count, size, key range and the
 * digest of its keys), and a file whose binding differs from the catalog's
 * is not this SST's filter, however valid it is otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/codec.h"
#include "util/order.h"

void akvi_slot_init(akvi_slot *s, akv_filter *f)
{
    memset(s, 0, sizeof *s);
    atomic_init(&s->f, f);
    /* Counters striped by thread (docs/design.md, "Concurrency"); without
     * the memory for them, one shared block counts as exactly. */
    s->ctr = aligned_alloc(AKVI_LINE, AKVI_SLOT_STRIPES * sizeof *s->ctr);
    if (s->ctr)
        memset(s->ctr, 0, AKVI_SLOT_STRIPES * sizeof *s->ctr);
    uint32_t fl = f ? f->kind->flags : 0;
    s->locked = f && (fl & (AKV_FK_ADAPTIVE | AKV_FK_DYNAMIC | AKV_FK_ABSORB)) && !(fl & AKV_FK_CONCURRENT);
    if (s->locked)
        pthread_rwlock_init(&s->lock, NULL);
    pthread_mutex_init(&s->grow_mu, NULL);
}

void akvi_slot_bind(akvi_slot *s, const akvi_cat_run *run, size_t j)
{
    s->run = run;
    s->sst = j;
}

void akvi_slot_destroy(akvi_slot *s)
{
    if (s->locked)
        pthread_rwlock_destroy(&s->lock);
    pthread_mutex_destroy(&s->grow_mu);
    akv_filter_destroy(atomic_exchange(&s->f, NULL));
    for (size_t i = 0; i < s->n_retired; i++)
        akv_filter_destroy(s->retired[i]);
    free(s->retired);
    s->retired = NULL;
    s->n_retired = 0;
    free(s->ctr);
    s->ctr = NULL;
}

static void add_counts(akvi_slot_counts *o, const akvi_slot_ctr *c)
{
    o->queries += atomic_load_explicit(&c->queries, memory_order_relaxed);
    o->filtered += atomic_load_explicit(&c->filtered, memory_order_relaxed);
    o->probes += atomic_load_explicit(&c->probes, memory_order_relaxed);
    o->fps += atomic_load_explicit(&c->fps, memory_order_relaxed);
    o->adaptations += atomic_load_explicit(&c->adaptations, memory_order_relaxed);
}

void akvi_slot_sum(const akvi_slot *s, akvi_slot_counts *out)
{
    *out = (akvi_slot_counts){0};
    add_counts(out, &s->one);
    for (size_t i = 0; s->ctr && i < AKVI_SLOT_STRIPES; i++)
        add_counts(out, &s->ctr[i].c);
}

void akvi_slot_lock(akvi_slot *s, bool exclusive)
{
    if (!s->locked)
        return;
    if (exclusive)
        akvi_rw_wrlock(&s->lock, AKVI_RANK_SLOT);
    else
        akvi_rw_rdlock(&s->lock, AKVI_RANK_SLOT);
}

void akvi_slot_unlock(akvi_slot *s)
{
    if (s->locked)
        akvi_rw_unlock(&s->lock, AKVI_RANK_SLOT);
}

bool akvi_slot_may_contain(akvi_slot *s, akvi_slot_ctr *c, akv_hash h)
{
    atomic_fetch_add_explicit(&c->queries, 1, memory_order_relaxed);
    bool yes = true;
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    if (f)
        yes = akv_filter_may_contain(f, h);
    akvi_slot_unlock(s);
    if (!yes)
        atomic_fetch_add_explicit(&c->filtered, 1, memory_order_relaxed);
    return yes;
}

int akvi_slot_adapt(akvi_slot *s, akv_filter *f, akv_hash h, akv_revmap *rm)
{
    akvi_slot_lock(s, true);
    /* Grown meanwhile: the caller's filter is retired; it adapts the new
     * one on its next false positive. */
    int rc = atomic_load(&s->f) == f ? akv_filter_adapt(f, h, rm) : AKV_NOTFOUND;
    akvi_slot_unlock(s);
    if (rc == AKV_OK)
        atomic_store(&s->dirty, true);
    return rc;
}

int akvi_slot_swap(akvi_slot *s, const akv_filter *expected, akv_filter *g)
{
    akvi_mutex_lock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
    if (atomic_load(&s->f) != expected) {
        akvi_mutex_unlock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
        return AKV_NOTFOUND;
    }
    akv_filter **ret = realloc(s->retired, (s->n_retired + 1) * sizeof *ret);
    if (!ret) {
        akvi_mutex_unlock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    s->retired = ret;
    akvi_slot_lock(s, true);
    s->retired[s->n_retired++] = atomic_load(&s->f);
    atomic_store(&s->f, g);
    akvi_slot_unlock(s);
    akvi_mutex_unlock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
    atomic_store(&s->dirty, true);
    return AKV_OK;
}

size_t akvi_slot_memory(akvi_slot *s)
{
    akvi_mutex_lock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    size_t m = f ? akv_filter_memory(f) : 0;
    akvi_slot_unlock(s);
    for (size_t i = 0; i < s->n_retired; i++)
        m += akv_filter_memory(s->retired[i]);
    akvi_mutex_unlock(&s->grow_mu, AKVI_RANK_SLOT_GROW);
    return m;
}

/* ---- the slot's file ----------------------------------------------------- */

#define SLOT_MAGIC   "AKFS"
#define SLOT_VERSION 2
#define ENV_MAGIC    "AKVF" /* version 1: a bare filter envelope */

static void encode_file(akvi_wbuf *w, const akvi_cat_run *r, const akvi_cat_sst *s, const uint8_t *filter,
                        size_t flen)
{
    akvi_w_bytes(w, SLOT_MAGIC, 4);
    akvi_w_u32(w, SLOT_VERSION);
    akvi_w_u64(w, r->id);
    akvi_w_u64(w, s->id);
    akvi_w_u32(w, r->level);
    akvi_w_u32(w, r->prefix_bits);
    akvi_cat_sst_put_fields(w, s);
    akvi_w_u64(w, flen);
    akvi_w_bytes(w, filter, flen);
}

/* The bound file of SST j of run r holding filter f (serialized under the
 * caller's lock, if any). */
static int serialize(const akv_filter *f, const akvi_cat_run *r, size_t j, uint8_t **buf, size_t *len)
{
    const akvi_cat_sst *s = &r->ssts[j];
    uint8_t *fb;
    size_t fl;
    int rc = akv_filter_serialize(f, &fb, &fl);
    if (rc != AKV_OK)
        return akvi_err(rc, "serializing filter %llu-%llu: %s", (unsigned long long)r->id,
                        (unsigned long long)s->id, akv_strerror(rc));
    akvi_wbuf w = {NULL, 0};
    encode_file(&w, r, s, fb, fl);
    uint8_t *p = malloc(w.len + 8);
    if (!p) {
        akv_free(fb);
        return akvi_err(AKV_ENOMEM, "out of memory");
    }
    w = (akvi_wbuf){p, 0};
    encode_file(&w, r, s, fb, fl);
    akvi_w_u64(&w, XXH64(p, w.len, 0));
    akv_free(fb);
    *buf = p;
    *len = w.len;
    return AKV_OK;
}

static int write_bytes(const char *fdir, const akvi_cat_run *r, size_t j, uint8_t *buf, size_t len)
{
    char name[64];
    akvi_filter_file_name(r->id, r->ssts[j].id, name, sizeof name);
    int rc = akvi_file_replace(fdir, name, buf, len);
    free(buf);
    return rc;
}

int akvi_slot_write_file(const char *fdir, const akvi_cat_run *r, size_t j, const akv_filter *f)
{
    uint8_t *buf;
    size_t len;
    int rc = serialize(f, r, j, &buf, &len);
    return rc == AKV_OK ? write_bytes(fdir, r, j, buf, len) : rc;
}

int akvi_slot_save(akvi_slot *s, const char *fdir, uint64_t run, uint64_t sst)
{
    /* Clear the flag first: an adaptation or growth after this sets it
     * again and is saved next time. */
    if (!atomic_exchange(&s->dirty, false))
        return AKV_OK;
    if (!s->run || s->run->id != run || s->run->ssts[s->sst].id != sst) {
        atomic_store(&s->dirty, true);
        return akvi_err(AKV_EINVAL, "saving filter slot %llu-%llu: the slot is bound to no such SST",
                        (unsigned long long)run, (unsigned long long)sst);
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    akvi_slot_lock(s, false);
    akv_filter *f = atomic_load(&s->f);
    int rc = f ? serialize(f, s->run, s->sst, &buf, &len) : AKV_OK;
    akvi_slot_unlock(s);
    if (rc == AKV_OK && f && (rc = write_bytes(fdir, s->run, s->sst, buf, len)) == AKV_OK)
        return 1;
    if (rc != AKV_OK)
        atomic_store(&s->dirty, true);
    return rc;
}

/* Parse a version-2 file: its binding into desc (one SST), the envelope's
 * place in *env. */
static int parse_file(const char *name, const uint8_t *buf, size_t len, akvi_cat_run *desc,
                      const uint8_t **env, size_t *env_len)
{
    memset(desc, 0, sizeof *desc);
    if (len < 8 + 8 || memcmp(buf, SLOT_MAGIC, 4) != 0)
        return akvi_err(AKV_ECORRUPT, "filter file %s: bad magic or size", name);
    akvi_rbuf t = {buf + len - 8, 8, 0, false};
    if (akvi_r_u64(&t) != XXH64(buf, len - 8, 0))
        return akvi_err(AKV_ECORRUPT, "filter file %s: checksum mismatch", name);
    akvi_rbuf r = {buf, len - 8, 4, false};
    uint32_t version = akvi_r_u32(&r);
    if (version != SLOT_VERSION)
        return akvi_err(AKV_ENOTSUP, "filter file %s: unknown version %u", name, version);
    desc->ssts = calloc(1, sizeof *desc->ssts);
    if (!desc->ssts)
        return akvi_err(AKV_ENOMEM, "out of memory");
    desc->n_sst = 1;
    akvi_cat_sst *s = desc->ssts;
    desc->id = akvi_r_u64(&r);
    s->id = akvi_r_u64(&r);
    desc->level = akvi_r_u32(&r);
    desc->prefix_bits = akvi_r_u32(&r);
    akvi_cat_sst_get_fields(&r, s, true);
    uint64_t fl = akvi_r_u64(&r);
    *env = r.err || fl != r.len - r.off ? NULL : akvi_r_take(&r, (size_t)fl);
    *env_len = (size_t)fl;
    if (r.err || !*env) {
        akvi_cat_run_free(desc);
        return akvi_err(AKV_ECORRUPT, "filter file %s: truncated or inconsistent", name);
    }
    return AKV_OK;
}

static const char *binding_mismatch(const akvi_cat_run *d, const akvi_cat_run *r, size_t j)
{
    const akvi_cat_sst *a = &d->ssts[0], *b = &r->ssts[j];
    if (d->id != r->id || a->id != b->id)
        return "it belongs to another SST";
    if (d->level != r->level || d->prefix_bits != r->prefix_bits || a->prefix != b->prefix)
        return "its level or shard differs from the catalog's";
    if (strcmp(a->kind, b->kind) != 0)
        return "its kind differs from the catalog's";
    if (a->keys != b->keys || a->bytes != b->bytes)
        return "its key count or SST size differs from the catalog's";
    if (a->digest != b->digest)
        return "its key digest differs from the catalog's";
    if (akvi_bytes_cmp(a->smallest, a->smallest_len, b->smallest, b->smallest_len) != 0 ||
        akvi_bytes_cmp(a->largest, a->largest_len, b->largest, b->largest_len) != 0)
        return "its key range differs from the catalog's";
    return NULL;
}

int akvi_slot_describe(const char *path, akvi_cat_run *desc)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    uint8_t *buf;
    size_t len;
    int rc = akvi_file_read(path, &buf, &len);
    if (rc != AKV_OK)
        return rc;
    const uint8_t *env;
    size_t env_len;
    rc = len >= 4 && memcmp(buf, ENV_MAGIC, 4) == 0
             ? akvi_err(AKV_ENOTSUP, "filter file %s has no binding (format version 1)", name)
             : parse_file(name, buf, len, desc, &env, &env_len);
    free(buf);
    return rc;
}

int akvi_slot_file_filter(const char *path, akv_filter **out)
{
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    uint8_t *buf;
    size_t len;
    int rc = akvi_file_read(path, &buf, &len);
    if (rc != AKV_OK)
        return rc;
    const uint8_t *env = buf;
    size_t env_len = len;
    akvi_cat_run desc = {0};
    if (!(len >= 4 && memcmp(buf, ENV_MAGIC, 4) == 0)) {
        rc = parse_file(name, buf, len, &desc, &env, &env_len);
        akvi_cat_run_free(&desc);
    }
    if (rc == AKV_OK)
        rc = akv_filter_deserialize(env, env_len, out);
    free(buf);
    return rc;
}

int akvi_slot_read_file(const char *fdir, const akvi_cat_run *r, size_t j, bool *unbound, akv_filter **out)
{
    char name[64], path[4096];
    const akvi_cat_sst *s = &r->ssts[j];
    akvi_filter_file_name(r->id, s->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", fdir, name);
    uint8_t *buf;
    size_t len;
    int rc = akvi_file_read(path, &buf, &len);
    if (rc != AKV_OK)
        return akvi_err(rc == AKV_NOTFOUND ? AKV_NOTFOUND : AKV_ECORRUPT, "filter file %s: %s", name,
                        rc == AKV_NOTFOUND ? "missing" : akv_errmsg());
    const uint8_t *env = buf;
    size_t env_len = len;
    akvi_cat_run desc = {0};
    *unbound = len >= 4 && memcmp(buf, ENV_MAGIC, 4) == 0;
    if (!*unbound) {
        rc = parse_file(name, buf, len, &desc, &env, &env_len);
        const char *why = rc == AKV_OK ? binding_mismatch(&desc, r, j) : NULL;
        if (why)
            rc = akvi_err(
                AKV_ECORRUPT,
                "filter file %s is not the filter of run %llu SST %llu: %s (it names run %llu SST %llu, "
                "%s, %llu keys)",
                name, (unsigned long long)r->id, (unsigned long long)s->id, why, (unsigned long long)desc.id,
                (unsigned long long)desc.ssts[0].id, desc.ssts[0].kind,
                (unsigned long long)desc.ssts[0].keys);
        akvi_cat_run_free(&desc);
    }
    akv_filter *f = NULL;
    if (rc == AKV_OK) {
        rc = akv_filter_deserialize(env, env_len, &f);
        if (rc != AKV_OK)
            rc = akvi_err(AKV_ECORRUPT, "filter file %s: %s", name, akv_strerror(rc));
    }
    if (rc == AKV_OK && strcmp(f->kind->name, s->kind) != 0) {
        rc = akvi_err(AKV_ECORRUPT, "filter file %s holds a %s filter; the catalog records %s", name,
                      f->kind->name, s->kind);
        akv_filter_destroy(f);
    }
    free(buf);
    if (rc == AKV_OK)
        *out = f;
    return rc;
}
