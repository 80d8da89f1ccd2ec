/*
 * fuse.h — the `fuse` kind's internals that kind `afuse` (filters/afuse.c)
 * builds on: a binary fuse filter (3- or 4-wise) is a static array of f-bit
 * fingerprints, and afuse wraps one with a verified list. Internal.
 */
#ifndef AKV_FUSE_H
#define AKV_FUSE_H

#include "adaptkv/filter.h"

extern const akv_filter_kind akvi_kind_fuse;

#endif
