/*
 * batch.c — write batches: operations buffered by the caller and applied
 * as one RocksDB write batch (atomic, one WAL record).
 *
 * Keys and values are copied at add time (each op owns one allocation), so
 * the caller's buffers may be reused immediately; limits are checked at add
 * time too, so a bad entry is reported where it was added.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"
#include "util/grow.h"

struct akv_batch {
    akvi_op *ops;
    size_t n, cap;
};

int akv_batch_create(akv_batch **b)
{
    if (!b)
        return akvi_err(AKV_EINVAL, "akv_batch_create: NULL output");
    *b = calloc(1, sizeof **b);
    return *b ? AKV_OK : akvi_err(AKV_ENOMEM, "out of memory");
}

static int add(akv_batch *b, uint8_t tag, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!b || !key || (!val && vlen))
        return akvi_err(AKV_EINVAL, "akv_batch: NULL argument");
    int rc = akvi_check_key(klen);
    if (rc == AKV_OK)
        rc = akvi_check_value(vlen);
    if (rc != AKV_OK)
        return rc;
    akvi_op *ops = akvi_grow(b->ops, &b->cap, b->n + 1, sizeof *ops, 16);
    if (!ops)
        return akvi_err(AKV_ENOMEM, "out of memory");
    b->ops = ops;
    uint8_t *mem = malloc(klen + vlen + 1);
    if (!mem)
        return akvi_err(AKV_ENOMEM, "out of memory");
    memcpy(mem, key, klen);
    if (vlen)
        memcpy(mem + klen, val, vlen);
    b->ops[b->n++] = (akvi_op){tag, mem, mem + klen, klen, vlen};
    /* `mem` is owned by the op (freed via ops[i].key in akv_batch_clear). */
    // cppcheck-suppress memleak
    return AKV_OK;
}

int akv_batch_put(akv_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
    return add(b, AKVI_TAG_PUT, key, klen, val, vlen);
}

int akv_batch_delete(akv_batch *b, const void *key, size_t klen)
{
    return add(b, AKVI_TAG_DEL, key, klen, "", 0);
}

void akv_batch_clear(akv_batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free((void *)b->ops[i].key);
    b->n = 0;
}

size_t akv_batch_count(const akv_batch *b)
{
    return b ? b->n : 0;
}

void akv_batch_destroy(akv_batch *b)
{
    if (!b)
        return;
    akv_batch_clear(b);
    free(b->ops);
    free(b);
}

int akv_write(akv_db *db, akv_batch *b, int sync)
{
    if (!db || !b)
        return akvi_err(AKV_EINVAL, "akv_write: NULL argument");
    if (b->n == 0)
        return AKV_OK;
    return akvi_write_ops(db, b->ops, b->n, sync != 0);
}
