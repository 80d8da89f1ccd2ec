/*
 * bits.h — bit arrays with the layout the Bloom family shares
 * (docs/filters.md, "Bloom family"): bit i in byte i>>3 at position i&7, LSB first,
 * with 8 bytes of zero padding so a 64-bit window can start at any bit.
 */
#ifndef AKV_BITS_H
#define AKV_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes to allocate for nbits bits plus the window padding. */
static inline size_t akvi_bits_bytes(uint64_t nbits)
{
    return (size_t)((nbits + 7) / 8 + 8);
}

static inline void akvi_bit_set(uint8_t *b, uint64_t i)
{
    b[i >> 3] |= (uint8_t)(1u << (i & 7));
}
static inline void akvi_bit_clear(uint8_t *b, uint64_t i)
{
    b[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}
static inline bool akvi_bit_get(const uint8_t *b, uint64_t i)
{
    return (b[i >> 3] >> (i & 7)) & 1;
}

/* 64-bit little-endian load at any byte address. */
static inline uint64_t akvi_load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Bits [p, p+57) as the low bits of a word: one memory access (ShBF). */
static inline uint64_t akvi_win64(const uint8_t *b, uint64_t p)
{
    return akvi_load_le64(b + (p >> 3)) >> (p & 7);
}

static inline uint64_t akvi_popcount_bytes(const uint8_t *b, size_t n)
{
    uint64_t c = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        c += (uint64_t)__builtin_popcountll(akvi_load_le64(b + i));
    for (; i < n; i++)
        c += (uint64_t)__builtin_popcount(b[i]);
    return c;
}

#endif
