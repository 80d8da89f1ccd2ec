/*
 * policy.h — the slot policy (policy.c): which filter kind the memtable
 * guard and each level's slots get, and its canonical text.
 */
#ifndef AKVI_POLICY_H
#define AKVI_POLICY_H

#include <stddef.h>

#include "adaptkv/adaptkv.h"
#include "adaptkv/filter.h"

typedef struct akvi_policy {
    const akv_filter_kind *mem;                   /* NULL: memtables always probed */
    const akv_filter_kind *level[AKV_MAX_LEVELS]; /* kind per run level */
} akvi_policy;

/* Longest canonical policy text, with its NUL (docs/format.md §6). */
#define AKVI_POLICY_MAX 1024

/* Parse "mem=sscf,l0=aqf,l1+=aqf". NULL or "" selects the default (with
 * fallbacks); a level the text leaves without a kind gets the default run
 * kind for bits_per_key (ablocked below 12 bits/key, aqf from 12 up). On error returns AKV_EINVAL with a
 * message. `note` (may be NULL) receives a one-line description of what was chosen. */
int akvi_policy_parse(const char *s, double bits_per_key, akvi_policy *out, char *note, size_t note_cap);
/* The canonical text of p ("mem=sscf,l0=aqf,l1+=blocked"): every part
 * named, each level run written once; parsing it gives p again. AKV_EINVAL
 * if it does not fit in cap bytes. */
int akvi_policy_format(const akvi_policy *p, char *out, size_t cap);

#endif
