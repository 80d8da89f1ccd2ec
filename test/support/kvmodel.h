/*
 * kvmodel.h — what the engine tests compare adaptkv against: a sorted array
 * of byte-string pairs (the obviously-correct store), plus temporary
 * database directories.
 */
#ifndef AKV_TEST_KVMODEL_H
#define AKV_TEST_KVMODEL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct akvt_pair {
    unsigned char *key, *val;
    size_t klen, vlen;
} akvt_pair;

/* Pairs in bytewise key order (shorter prefix first), like the ordered layout. */
typedef struct akvt_model {
    akvt_pair *v;
    size_t n, cap;
} akvt_model;

void akvt_model_put(akvt_model *m, const void *k, size_t klen, const void *v, size_t vlen);
void akvt_model_del(akvt_model *m, const void *k, size_t klen);
const akvt_pair *akvt_model_get(const akvt_model *m, const void *k, size_t klen);
/* Index of the first pair with key >= k. */
size_t akvt_model_lower_bound(const akvt_model *m, const void *k, size_t klen);
void akvt_model_free(akvt_model *m);

/* Bytewise comparison, shorter first on a common prefix. */
int akvt_keycmp(const void *a, size_t alen, const void *b, size_t blen);

/* A fresh empty directory under $TMPDIR (or /tmp), path in buf. Asserts. */
void akvt_tmpdir(char *buf, size_t cap, const char *tag);
/* rm -rf of a directory created by akvt_tmpdir. */
void akvt_rmrf(const char *path);

#endif
