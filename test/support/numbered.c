/* numbered.c — see numbered.h. */
#include "numbered.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

size_t akvt_numbered_key(char *buf, unsigned i)
{
    return (size_t)snprintf(buf, 32, "key-%07u", i);
}

void akvt_put_numbered(akv_db *db, unsigned from, unsigned to)
{
    char k[32], v[64];
    for (unsigned i = from; i < to; i++) {
        size_t kl = akvt_numbered_key(k, i);
        int vl = snprintf(v, sizeof v, "value-%u", i);
        cr_assert_eq(akv_put(db, k, kl, v, (size_t)vl), AKV_OK, "key %u: %s", i, akv_errmsg());
    }
}

void akvt_expect_numbered(akv_db *db, unsigned n)
{
    char k[32], v[64];
    for (unsigned i = 0; i < n; i++) {
        size_t kl = akvt_numbered_key(k, i);
        int vl = snprintf(v, sizeof v, "value-%u", i);
        void *got = NULL;
        size_t gl = 0;
        cr_assert_eq(akv_get(db, k, kl, &got, &gl), AKV_OK, "key %u lost: %s", i, akv_errmsg());
        cr_assert(gl == (size_t)vl && memcmp(got, v, gl) == 0, "key %u has a wrong value", i);
        akv_free(got);
    }
}
