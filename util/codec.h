/*
 * codec.h — bounded little-endian writer/reader for filter payloads.
 *
 * Writers work in two passes (size with buf == NULL, then fill), readers
 * check every access against the remaining length and latch an error, so a
 * kind's load() can read a whole header and test `r.err` once at the end.
 */
#ifndef AKV_CODEC_H
#define AKV_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct akvi_wbuf {
    uint8_t *p; /* NULL: only count */
    size_t len;
} akvi_wbuf;

static inline void akvi_w_bytes(akvi_wbuf *w, const void *src, size_t n)
{
    if (w->p && n)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}
static inline void akvi_w_u8(akvi_wbuf *w, uint8_t v)
{
    akvi_w_bytes(w, &v, 1);
}
static inline void akvi_w_u16(akvi_wbuf *w, uint16_t v)
{
    uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    akvi_w_bytes(w, b, 2);
}
static inline void akvi_w_u32(akvi_wbuf *w, uint32_t v)
{
    uint8_t b[4];
    for (int i = 0; i < 4; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    akvi_w_bytes(w, b, 4);
}
static inline void akvi_w_u64(akvi_wbuf *w, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    akvi_w_bytes(w, b, 8);
}
static inline void akvi_w_f64(akvi_wbuf *w, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    akvi_w_u64(w, v);
}

typedef struct akvi_rbuf {
    const uint8_t *p;
    size_t len, off;
    bool err;
} akvi_rbuf;

static inline const uint8_t *akvi_r_take(akvi_rbuf *r, size_t n)
{
    if (r->err || n > r->len - r->off) {
        r->err = true;
        return NULL;
    }
    const uint8_t *s = r->p + r->off;
    r->off += n;
    return s;
}
static inline bool akvi_r_bytes(akvi_rbuf *r, void *dst, size_t n)
{
    const uint8_t *s = akvi_r_take(r, n);
    if (s && n)
        memcpy(dst, s, n);
    return s != NULL;
}
static inline uint64_t akvi_r_uint(akvi_rbuf *r, int nbytes)
{
    const uint8_t *s = akvi_r_take(r, (size_t)nbytes);
    uint64_t v = 0;
    if (s)
        for (int i = 0; i < nbytes; i++)
            v |= (uint64_t)s[i] << (8 * i);
    return v;
}
static inline uint8_t akvi_r_u8(akvi_rbuf *r)
{
    return (uint8_t)akvi_r_uint(r, 1);
}
static inline uint16_t akvi_r_u16(akvi_rbuf *r)
{
    return (uint16_t)akvi_r_uint(r, 2);
}
static inline uint32_t akvi_r_u32(akvi_rbuf *r)
{
    return (uint32_t)akvi_r_uint(r, 4);
}
static inline uint64_t akvi_r_u64(akvi_rbuf *r)
{
    return akvi_r_uint(r, 8);
}
static inline double akvi_r_f64(akvi_rbuf *r)
{
    uint64_t v = akvi_r_u64(r);
    double d;
    memcpy(&d, &v, 8);
    return d;
}
/*
 * Overflow-safe size arithmetic for loaders. A size read from a payload is
 * hostile until checked: (nbits + 7) / 8 wraps to 0 for nbits near 2^64 and
 * a * b wraps for large counts, and a wrapped size can then match the real
 * length. These never wrap.
 */
/* ceil(nbits / 8) for every nbits (no "+ 7"). */
static inline uint64_t akvi_bytes_of_bits(uint64_t nbits)
{
    return nbits / 8 + ((nbits & 7) != 0);
}
/* a * b + c, or UINT64_MAX when that does not fit in 64 bits. */
static inline uint64_t akvi_size_mul_add(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x;
    if (__builtin_mul_overflow(a, b, &x) || __builtin_add_overflow(x, c, &x))
        return UINT64_MAX;
    return x;
}
/* Bytes left to read. */
static inline size_t akvi_r_left(const akvi_rbuf *r)
{
    return r->err ? 0 : r->len - r->off;
}

/* True when the whole buffer was consumed without error. */
static inline bool akvi_r_done(const akvi_rbuf *r)
{
    return !r->err && r->off == r->len;
}

#endif
