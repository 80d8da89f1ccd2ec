/*
 * identity.c — the identity record: the layout and hash seed a database
 * was created with, in DIR/IDENTITY and again in the meta family
 * (docs/format.md §5). Open and repair read it before anything else: a
 * database is never reopened with another layout or seed.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "util/codec.h"

#define ID_MAGIC   "AKVI"
#define ID_VERSION 1
#define ID_LEN     28

size_t akvi_identity_encode(uint32_t layout, uint64_t seed, uint8_t *buf)
{
    akvi_wbuf w = {buf, 0};
    akvi_w_bytes(&w, ID_MAGIC, 4);
    akvi_w_u32(&w, ID_VERSION);
    akvi_w_u32(&w, layout);
    akvi_w_u64(&w, seed);
    akvi_w_u64(&w, XXH64(buf, w.len, 0));
    return w.len;
}

int akvi_identity_decode(const uint8_t *buf, size_t len, uint32_t *layout, uint64_t *seed)
{
    akvi_rbuf t = {buf, len, 20, false};
    if (len != ID_LEN || memcmp(buf, ID_MAGIC, 4) != 0 || akvi_r_u64(&t) != XXH64(buf, 20, 0))
        return akvi_err(AKV_ECORRUPT, "the identity record is damaged");
    akvi_rbuf r = {buf, 20, 4, false};
    uint32_t ver = akvi_r_u32(&r);
    *layout = akvi_r_u32(&r);
    *seed = akvi_r_u64(&r);
    if (ver != ID_VERSION)
        return akvi_err(AKV_ENOTSUP, "identity version %u is not supported", ver);
    if (*layout != AKV_LAYOUT_HASH && *layout != AKV_LAYOUT_ORDERED)
        return akvi_err(AKV_ECORRUPT, "the identity names unknown layout %u", *layout);
    return AKV_OK;
}

int akvi_identity_read(const char *dir, uint32_t *layout, uint64_t *seed)
{
    char *p = akvi_path_join(dir, "IDENTITY");
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = p ? akvi_file_read(p, &buf, &len) : akvi_err(AKV_ENOMEM, "out of memory");
    free(p);
    if (rc == AKV_OK) {
        rc = akvi_identity_decode(buf, len, layout, seed);
        if (rc != AKV_OK)
            rc = akvi_err(rc, "%s/IDENTITY: %s", dir, akv_errmsg());
    }
    free(buf);
    return rc;
}

int akvi_identity_write(akv_db *db)
{
    uint8_t buf[ID_LEN];
    size_t n = akvi_identity_encode((uint32_t)db->layout, db->seed, buf);
    /* Also in the meta family: a second copy for repair. */
    int rc = akvi_meta_put(db, "identity", buf, n, true);
    return rc == AKV_OK ? akvi_file_write_atomic(db->dir, "IDENTITY", buf, n) : rc;
}
