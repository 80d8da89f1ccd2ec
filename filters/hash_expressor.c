/*
 * hash_expressor.c — HashExpressor construction-side operations: finding a
 * chain order that agrees with the cells already written, and writing it.
 */
#include "filters/hash_expressor.h"

#include <stdlib.h>

#include "adaptkv/filter.h"

int akvi_he_init(akvi_he *he, uint64_t omega, unsigned alpha)
{
    he->omega = omega;
    he->alpha = alpha;
    he->bits = calloc(1, akvi_bits_bytes(omega * alpha));
    return he->bits ? AKV_OK : AKV_ENOMEM;
}

void akvi_he_free(akvi_he *he)
{
    free(he->bits);
    he->bits = NULL;
}

/* Cells only gain bits (empty → value, endbit 0 → 1), so OR-ing is a write. */
static void he_or(akvi_he *he, uint64_t c, unsigned v)
{
    uint64_t b = c * he->alpha;
    for (unsigned t = 0; t < he->alpha; t++)
        if (v >> t & 1)
            akvi_bit_set(he->bits, b + t);
}

typedef struct seq_search {
    const akvi_he *he;
    const uint8_t *phi;
    const uint64_t *cell; /* cell of phi[j] */
    unsigned k;
    uint8_t *seq;
} seq_search;

/* Choose s_{d+1} for cell c given the functions still unused (mask). A
 * written cell forces its own index; an empty one lets us try each. */
static bool seq_dfs(const seq_search *s, unsigned d, uint64_t c, unsigned used)
{
    unsigned v = akvi_he_get(s->he, c);
    for (unsigned j = 0; j < s->k; j++) {
        if (used >> j & 1 || (v >= 2 && (v >> 1) != s->phi[j]))
            continue;
        s->seq[d] = s->phi[j];
        if (d + 1 == s->k || seq_dfs(s, d + 1, s->cell[j], used | 1u << j))
            return true;
    }
    return false;
}

bool akvi_he_find_seq(const akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *phi, unsigned k,
                      uint8_t *seq)
{
    if (he->omega == 0 || k == 0 || k > AKV_HE_MAX_K)
        return false;
    uint64_t cell[AKV_HE_MAX_K + 1];
    uint64_t c0 = akvi_hfam_cell(fam, h, 0, he->omega);
    for (unsigned j = 0; j < k; j++) {
        cell[j] = akvi_hfam_cell(fam, h, phi[j], he->omega);
        if (cell[j] == c0)
            return false;
        for (unsigned i = 0; i < j; i++)
            if (cell[i] == cell[j])
                return false;
    }
    seq_search s = {he, phi, cell, k, seq};
    return seq_dfs(&s, 0, c0, 0);
}

void akvi_he_write(akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *seq, unsigned k)
{
    uint64_t c = akvi_hfam_cell(fam, h, 0, he->omega);
    for (unsigned j = 0; j + 1 < k; j++) {
        he_or(he, c, (unsigned)seq[j] << 1);
        c = akvi_hfam_cell(fam, h, seq[j], he->omega);
    }
    he_or(he, c, ((unsigned)seq[k - 1] << 1) | 1u);
}

unsigned akvi_he_overlap(const akvi_he *he, akvi_hfam fam, akv_hash h, const uint8_t *seq, unsigned k)
{
    uint64_t c = akvi_hfam_cell(fam, h, 0, he->omega);
    unsigned n = 0;
    for (unsigned j = 0; j < k; j++) {
        n += akvi_he_get(he, c) >= 2;
        c = akvi_hfam_cell(fam, h, seq[j], he->omega);
    }
    return n;
}
