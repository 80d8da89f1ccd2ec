/* zipf.c — seeded Zipfian sampling by inverse CDF (table + binary search):
 * exact for any exponent, and fast enough for 10^7 draws. */
#include <math.h>
#include <stdlib.h>

#include "tools/filterbench/bench.h"

struct fb_zipf {
    uint64_t n;
    double *cdf;
};

uint64_t fb_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

fb_zipf *fb_zipf_create(uint64_t n, double s)
{
    fb_zipf *z = malloc(sizeof *z);
    if (!z || !n)
        return free(z), NULL;
    z->n = n;
    z->cdf = malloc(n * sizeof *z->cdf);
    if (!z->cdf)
        return free(z), NULL;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] = (sum += pow((double)(i + 1), -s));
    for (uint64_t i = 0; i < n; i++)
        z->cdf[i] /= sum;
    return z;
}

uint64_t fb_zipf_sample(const fb_zipf *z, uint64_t *rng)
{
    double u = (double)(fb_rand(rng) >> 11) * 0x1.0p-53;
    uint64_t lo = 0, hi = z->n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (z->cdf[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

double fb_zipf_weight(const fb_zipf *z, uint64_t rank)
{
    return rank == 0 ? z->cdf[0] : z->cdf[rank] - z->cdf[rank - 1];
}

void fb_zipf_destroy(fb_zipf *z)
{
    if (z)
        free(z->cdf);
    free(z);
}
