/*
 * qf.c — kind `qf` (id 10): the quotient filter of the AQF paper's
 * baseline. The same core as `aqf` (filters/qf_core.c) without extension
 * bits or adaptation: every record is one remainder slot, identical
 * remainders of a quotient simply repeat. Dynamic (insert/remove), not
 * concurrent: the caller serialises mutations.
 */
#include <stdio.h>
#include <stdlib.h>

#include "filters/aqf.h"
#include "filters/qf_core.h"

typedef struct qfk {
    akvi_qf_head h;
    akvi_qf_build b;
    double lf;
    bool sealed;
} qfk;

extern const akv_filter_kind akvi_kind_qf;

akv_filter *akvi_qf_kind_wrap(akvi_qf *core, double lf)
{
    qfk *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->h.base.kind = &akvi_kind_qf;
    k->h.base.n_keys = core->nitems;
    k->h.qf = *core;
    k->lf = lf;
    k->sealed = true;
    return (akv_filter *)k; /* the head is the first member */
}

static int qfk_create(const akv_filter_params *p, const akv_negative *neg, size_t n_neg, akv_filter **out)
{
    (void)neg;
    (void)n_neg;
    double lf = p->load_factor > 0 && p->load_factor <= 1 ? p->load_factor : 0.9;
    uint64_t ns;
    uint32_t r;
    akvi_qf_geometry(p, p->expected_keys, false, &ns, &r);
    akvi_qf core;
    int rc = akvi_qf_init_n(&core, ns, r, p->prefix_bits, false);
    if (rc != AKV_OK)
        return rc;
    akv_filter *f = akvi_qf_kind_wrap(&core, lf);
    if (!f) {
        akvi_qf_free(&core);
        return AKV_ENOMEM;
    }
    ((qfk *)f)->sealed = false;
    *out = f;
    return AKV_OK;
}

static int qfk_add(akv_filter *f, akv_hash h)
{
    qfk *k = (qfk *)f;
    if (k->sealed)
        return AKV_EINVAL;
    return akvi_qf_build_push(&k->b, h);
}

static int qfk_finish(akv_filter *f)
{
    qfk *k = (qfk *)f;
    if (k->sealed)
        return AKV_OK;
    int rc = akvi_qf_build_finish(&k->h.qf, &k->b, k->lf);
    free(k->b.v);
    k->b = (akvi_qf_build){0};
    k->sealed = true;
    f->n_keys = k->h.qf.nitems;
    return rc;
}

static bool qfk_may_contain(const akv_filter *f, akv_hash h)
{
    return akvi_qf_lookup(&((const qfk *)f)->h.qf, h) != 0;
}

static size_t qfk_memory(const akv_filter *f)
{
    return akvi_qf_memory(&((const qfk *)f)->h.qf);
}

static int qfk_save(const akv_filter *f, uint8_t *buf, size_t *len)
{
    return akvi_qf_save(&((const qfk *)f)->h.qf, buf, len);
}

static int qfk_load(const uint8_t *buf, size_t len, uint16_t ver, akv_filter **out)
{
    akvi_qf core;
    int rc = akvi_qf_load(&core, buf, len, false, ver);
    if (rc != AKV_OK)
        return rc;
    akv_filter *f = akvi_qf_kind_wrap(&core, 0.9);
    if (!f) {
        akvi_qf_free(&core);
        return AKV_ENOMEM;
    }
    *out = f;
    return AKV_OK;
}

static void qfk_destroy(akv_filter *f)
{
    qfk *k = (qfk *)f;
    akvi_qf_free(&k->h.qf);
    free(k->b.v);
    free(k);
}

static int qfk_insert(akv_filter *f, akv_hash h)
{
    qfk *k = (qfk *)f;
    int rc = k->sealed ? AKV_OK : qfk_finish(f);
    if (rc == AKV_OK)
        rc = akvi_qf_insert(&k->h.qf, h);
    f->n_keys = k->h.qf.nitems;
    return rc;
}

static int qfk_remove(akv_filter *f, akv_hash h)
{
    qfk *k = (qfk *)f;
    int rc = k->sealed ? AKV_OK : qfk_finish(f);
    if (rc == AKV_OK)
        rc = akvi_qf_remove(&k->h.qf, h);
    f->n_keys = k->h.qf.nitems;
    return rc;
}

static unsigned qfk_words(const akv_filter *f, akv_hash h)
{
    return akvi_qf_words_touched(&((const qfk *)f)->h.qf, h);
}

static int qfk_describe(const akv_filter *f, char *buf, size_t cap)
{
    const akvi_qf *q = &((const qfk *)f)->h.qf;
    return snprintf(buf, cap, "\"q\":%u,\"r\":%u,\"slots\":%llu,\"used\":%llu,\"load\":%.4f", q->q, q->r,
                    (unsigned long long)q->nslots, (unsigned long long)q->used,
                    (double)q->used / (double)q->nslots);
}

static void qfk_stats(const akv_filter *f, akv_filter_stats *out)
{
    const akvi_qf *q = &((const qfk *)f)->h.qf;
    out->capacity = q->insert_limit;
}

static double qfk_fpr(const akv_filter *f)
{
    return akvi_qf_fpr(&((const qfk *)f)->h.qf);
}

const akv_filter_kind akvi_kind_qf = {
    .name = "qf",
    .id = 10,
    .payload_version = 2,
    .flags = AKV_FK_DYNAMIC | AKV_FK_SORTED,
    .summary = "quotient filter (blocked, rank/select), the AQF paper's baseline",
    .create = qfk_create,
    .add = qfk_add,
    .finish = qfk_finish,
    .may_contain = qfk_may_contain,
    .memory_bytes = qfk_memory,
    .save = qfk_save,
    .load = qfk_load,
    .destroy = qfk_destroy,
    .insert = qfk_insert,
    .remove = qfk_remove,
    .words_touched = qfk_words,
    .describe = qfk_describe,
    .stats = qfk_stats,
    .fpr_theory = qfk_fpr,
};
