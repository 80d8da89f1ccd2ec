/*
 * kinds.c — the built-in filter kinds, registered on first use of the
 * registry. One line per kind; each kind lives in its own file.
 */
#include "adaptkv/filter.h"

extern const akv_filter_kind akvi_kind_bloom;
extern const akv_filter_kind akvi_kind_qf, akvi_kind_aqf;
extern const akv_filter_kind akvi_kind_habf, akvi_kind_fhabf, akvi_kind_sscf, akvi_kind_cbf;
extern const akv_filter_kind akvi_kind_blocked, akvi_kind_rbf, akvi_kind_vsbbf, akvi_kind_shbf;
extern const akv_filter_kind akvi_kind_ablocked, akvi_kind_fuse, akvi_kind_afuse;

/* clang-format off */
const akv_filter_kind *const akvi_builtin_kinds[] = {
    &akvi_kind_bloom,
    &akvi_kind_qf,
    &akvi_kind_aqf,
    &akvi_kind_habf,
    &akvi_kind_fhabf,
    &akvi_kind_sscf,
    &akvi_kind_cbf,
    &akvi_kind_blocked,
    &akvi_kind_rbf,
    &akvi_kind_vsbbf,
    &akvi_kind_shbf,
    &akvi_kind_ablocked,
    &akvi_kind_fuse,
    &akvi_kind_afuse,
    NULL,
};
/* clang-format on */
