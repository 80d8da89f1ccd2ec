/*
 * kinds.c — the built-in filter kinds, registered on first use of the
 * registry. One line per kind; each kind lives in its own file.
 */
#include "adaptkv/filter.h"

extern const akv_filter_kind akv_kind_bloom;
extern const akv_filter_kind akv_kind_qf, akv_kind_aqf;
extern const akv_filter_kind akv_kind_habf, akv_kind_fhabf, akv_kind_sscf, akv_kind_cbf;
extern const akv_filter_kind akv_kind_blocked, akv_kind_rbf, akv_kind_vsbbf, akv_kind_shbf;
extern const akv_filter_kind akv_kind_ablocked;

const akv_filter_kind *const akv_builtin_kinds[] = {
    &akv_kind_bloom,
    &akv_kind_qf, &akv_kind_aqf,
    &akv_kind_habf, &akv_kind_fhabf, &akv_kind_sscf, &akv_kind_cbf,
    &akv_kind_blocked, &akv_kind_rbf, &akv_kind_vsbbf, &akv_kind_shbf,
    &akv_kind_ablocked,
    NULL,
};
