/*
 * rng.c — the random numbers every kvbench generator draws from.
 */
#include "tools/kvbench/kvbench.h"

/* ---- xoshiro256** seeded by splitmix64: fast, per thread, reproducible ---- */

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void akv_kb_rng_seed(akv_kb_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t akv_kb_rng_next(akv_kb_rng *r)
{
    uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double akv_kb_rng_double(akv_kb_rng *r)
{
    return (double)(akv_kb_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t akv_kb_rng_below(akv_kb_rng *r, uint64_t n)
{
    /* Multiply-shift: unbiased enough for benchmarks, no division. */
    return n ? (uint64_t)(((unsigned __int128)akv_kb_rng_next(r) * n) >> 64) : 0;
}
