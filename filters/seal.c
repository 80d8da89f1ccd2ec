/* seal.c — see seal.h. */
#include "filters/seal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "adaptkv/filter.h"

#define SEAL_HEADER 16
#define SEAL_TRAILER 8

int akvi_seal(const char magic[4], const void *obj, void (*put)(const void *, akvi_wbuf *), uint8_t **buf,
              size_t *len)
{
    akvi_wbuf w = {NULL, 0};
    put(obj, &w);
    size_t plen = w.len, total = SEAL_HEADER + plen + SEAL_TRAILER;
    uint8_t *out = malloc(total);
    if (!out)
        return AKV_ENOMEM;
    w = (akvi_wbuf){out, 0};
    akvi_w_bytes(&w, magic, 4);
    akvi_w_u16(&w, 1);
    akvi_w_u16(&w, 0);
    akvi_w_u64(&w, plen);
    put(obj, &w);
    akvi_w_u64(&w, XXH64(out, w.len, 0));
    *buf = out;
    *len = total;
    return AKV_OK;
}

int akvi_unseal(const char magic[4], const uint8_t *buf, size_t len, akvi_rbuf *payload)
{
    if (!buf || len < SEAL_HEADER + SEAL_TRAILER || memcmp(buf, magic, 4) != 0)
        return AKV_ECORRUPT;
    akvi_rbuf r = {buf, len, 4, false};
    uint16_t ver = akvi_r_u16(&r), pad = akvi_r_u16(&r);
    uint64_t plen = akvi_r_u64(&r);
    akvi_rbuf t = {buf + len - SEAL_TRAILER, SEAL_TRAILER, 0, false};
    if (ver != 1 || pad != 0 || plen != len - SEAL_HEADER - SEAL_TRAILER ||
        akvi_r_u64(&t) != XXH64(buf, len - SEAL_TRAILER, 0))
        return AKV_ECORRUPT;
    *payload = (akvi_rbuf){buf + SEAL_HEADER, (size_t)plen, 0, false};
    return AKV_OK;
}
