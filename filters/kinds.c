/*
 * kinds.c — the built-in filter kinds, registered on first use of the
 * registry. One line per kind; each kind lives in its own file.
 */
#include "filter.h"

extern const akv_filter_kind akv_kind_bloom;

const akv_filter_kind *const akv_builtin_kinds[] = {
    &akv_kind_bloom,
    NULL,
};
