/*
 * seal.h — a checksummed blob for structures outside the slot registry
 * (ShBF_A, ShBF_X): 4-byte magic, u16 version (1), u16 zero, u64 payload
 * length, payload, u64 xxh64 of everything before it. The same shape as the
 * filter envelope (filter.h), without a kind id.
 */
#ifndef AKV_SEAL_H
#define AKV_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "util/codec.h"

/* `put` writes the payload of `obj`; it is called twice (size, then fill). */
int akvi_seal(const char magic[4], const void *obj, void (*put)(const void *obj, akvi_wbuf *w), uint8_t **buf,
              size_t *len);

/* Checks magic, version, length and checksum; on success *payload reads the
 * payload. AKV_ECORRUPT otherwise. */
int akvi_unseal(const char magic[4], const uint8_t *buf, size_t len, akvi_rbuf *payload);

#endif
