/*
 * numbered.h — the numbered records several engine tests write: key i is
 * "key-%07u", its value "value-%u".
 */
#ifndef AKV_TEST_NUMBERED_H
#define AKV_TEST_NUMBERED_H

#include <stddef.h>

#include "adaptkv/adaptkv.h"

/* Key i into buf (at least 32 bytes); returns its length. */
size_t akvt_numbered_key(char *buf, unsigned i);

/* Puts keys from .. to-1 with their values (asserting each put). */
void akvt_put_numbered(akv_db *db, unsigned from, unsigned to);

/* Asserts: keys 0 .. n-1 are all found, each with its own value. */
void akvt_expect_numbered(akv_db *db, unsigned n);

#endif
