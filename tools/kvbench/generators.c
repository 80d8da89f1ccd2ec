/*
 * generators.c — the number generators of YCSB's CoreWorkload, so that a
 * workload file means here what it means in YCSB: the same Zipfian algorithm
 * (Gray et al.), the same scrambling (FNV-1a over 10^10 items), the same
 * "latest", hotspot, uniform, sequential and exponential choices, and the
 * same key names ("user" + hashed number).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

const char *const akv_kb_dist_names[] = {"uniform",    "zipfian",     "latest",   "hotspot",
                                         "sequential", "exponential", "constant", "plain zipfian",
                                         "histogram",  NULL};

/* ---- FNV, as YCSB's Utils.fnvhash64 ------------------------------------- */

uint64_t akv_kb_fnv64(uint64_t v)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < 8; i++) {
        h ^= v & 0xff;
        h *= 1099511628211ull;
        v >>= 8;
    }
    /* Java's Math.abs on a signed long; Long.MIN_VALUE stays as it is. */
    int64_t s = (int64_t)h;
    return s < 0 && s != INT64_MIN ? (uint64_t)(-s) : h;
}

/* ---- Zipfian ------------------------------------------------------------ */

/* Exact sums are O(n); past a million terms the tail is summed by
 * Euler–Maclaurin, which agrees with YCSB's exact zeta(10^10, 0.99) to 1e-9
 * and keeps 10^10-item generators cheap for any constant. */
#define EXACT_TERMS 1000000ull

static double tail(uint64_t a, uint64_t b, double theta) /* sum_{i=a..b} i^-theta, a large */
{
    double fa = pow((double)a, -theta), fb = pow((double)b, -theta);
    double integral = theta == 1.0 ? log((double)b / (double)a)
                                   : (pow((double)b, 1 - theta) - pow((double)a, 1 - theta)) / (1 - theta);
    double d1 = theta / 12.0 * (fa / (double)a - fb / (double)b);
    return integral + (fa + fb) / 2 + d1;
}

double akv_kb_zeta(uint64_t st, uint64_t n, double theta, double initial)
{
    double sum = initial;
    uint64_t i = st;
    for (; i < n && i < EXACT_TERMS; i++)
        sum += 1.0 / pow((double)(i + 1), theta);
    if (i < n)
        sum += tail(i + 1, n, theta);
    return sum;
}

/* eta depends on the item count given at construction and on the current
 * zetan: YCSB recomputes it with the constructor's count when zetan grows. */
static void zipf_eta(akv_kb_zipf *z)
{
    z->eta = z->items ? (1 - pow(2.0 / (double)z->items, 1 - z->theta)) / (1 - z->zeta2 / z->zetan) : 0;
}

void akv_kb_zipf_init_zeta(akv_kb_zipf *z, uint64_t base, uint64_t items, double theta, double zetan)
{
    z->base = base;
    z->items = items;
    z->theta = theta;
    z->zeta2 = akv_kb_zeta(0, 2, theta, 0);
    z->alpha = 1.0 / (1.0 - theta);
    z->zetan = zetan;
    z->count_for_zeta = items;
    zipf_eta(z);
}

void akv_kb_zipf_init(akv_kb_zipf *z, uint64_t base, uint64_t items, double theta)
{
    akv_kb_zipf_init_zeta(z, base, items, theta, akv_kb_zeta(0, items, theta, 0));
}

uint64_t akv_kb_zipf_next_n(akv_kb_zipf *z, akv_kb_rng *r, uint64_t itemcount)
{
    /* More items than zeta was computed for: grow zetan incrementally. Fewer
     * (another thread's stale count, in YCSB) recompute nothing. */
    if (itemcount > z->count_for_zeta) {
        z->zetan = akv_kb_zeta(z->count_for_zeta, itemcount, z->theta, z->zetan);
        z->count_for_zeta = itemcount;
        zipf_eta(z);
    }
    double u = akv_kb_rng_double(r), uz = u * z->zetan;
    if (uz < 1.0)
        return z->base;
    if (uz < 1.0 + pow(0.5, z->theta))
        return z->base + 1;
    if (z->items == 0) /* eta is undefined (0/0 in Java, whose (long) cast makes it 0) */
        return z->base;
    double v = (double)itemcount * pow(z->eta * u - z->eta + 1, z->alpha);
    /* v < itemcount but for rounding; clamp so the cast stays defined. */
    return z->base + (v < (double)itemcount ? (uint64_t)v : itemcount - 1);
}

uint64_t akv_kb_zipf_next(akv_kb_zipf *z, akv_kb_rng *r)
{
    return akv_kb_zipf_next_n(z, r, z->items);
}

void akv_kb_scrambled_init(akv_kb_scrambled *s, uint64_t min, uint64_t max, double theta)
{
    s->min = min;
    s->items = max - min + 1;
    /* YCSB builds ZipfianGenerator(0, ITEM_COUNT): 10^10 + 1 items. */
    uint64_t n = AKV_KB_SCRAMBLED_ITEMS + 1;
    double zetan = theta == AKV_KB_ZIPF_THETA ? AKV_KB_ZETAN_1E10_099 : akv_kb_zeta(0, n, theta, 0);
    akv_kb_zipf_init_zeta(&s->z, 0, n, theta, zetan);
}

uint64_t akv_kb_scrambled_next(akv_kb_scrambled *s, akv_kb_rng *r)
{
    return s->min + akv_kb_fnv64(akv_kb_zipf_next(&s->z, r)) % s->items;
}

/* ---- any distribution --------------------------------------------------- */

static void gen_reset(akv_kb_gen *g, akv_kb_dist d, uint64_t lo, uint64_t hi)
{
    memset(g, 0, sizeof *g);
    g->dist = d;
    g->lo = lo;
    g->hi = hi < lo ? lo : hi;
}

void akv_kb_gen_uniform(akv_kb_gen *g, uint64_t lo, uint64_t hi)
{
    gen_reset(g, AKV_KB_UNIFORM, lo, hi);
}

void akv_kb_gen_constant(akv_kb_gen *g, uint64_t v)
{
    gen_reset(g, AKV_KB_CONSTANT, v, v);
}

void akv_kb_gen_zipfian(akv_kb_gen *g, uint64_t lo, uint64_t hi, double theta)
{
    gen_reset(g, AKV_KB_ZIPFIAN, lo, hi);
    akv_kb_scrambled_init(&g->sz, g->lo, g->hi, theta);
}

void akv_kb_gen_plain_zipfian(akv_kb_gen *g, uint64_t lo, uint64_t hi, double theta)
{
    gen_reset(g, AKV_KB_PLAIN_ZIPFIAN, lo, hi);
    akv_kb_zipf_init(&g->z, g->lo, g->hi - g->lo + 1, theta);
}

void akv_kb_gen_latest(akv_kb_gen *g, uint64_t last, double theta)
{
    gen_reset(g, AKV_KB_LATEST, 0, last);
    akv_kb_zipf_init(&g->z, 0, last, theta); /* YCSB: new ZipfianGenerator(basis.lastValue()) */
}

void akv_kb_gen_hotspot(akv_kb_gen *g, uint64_t lo, uint64_t hi, double hot_data, double hot_opn)
{
    gen_reset(g, AKV_KB_HOTSPOT, lo, hi);
    g->hot = (uint64_t)((double)(g->hi - g->lo + 1) * hot_data);
    g->hot_opn = hot_opn;
}

void akv_kb_gen_sequential(akv_kb_gen *g, uint64_t lo, uint64_t hi, _Atomic uint64_t *counter)
{
    gen_reset(g, AKV_KB_SEQUENTIAL, lo, hi);
    g->counter = counter;
}

void akv_kb_gen_exponential(akv_kb_gen *g, double percentile, double range)
{
    gen_reset(g, AKV_KB_EXPONENTIAL, 0, 0);
    g->exp_gamma = -log(1.0 - percentile / 100.0) / range;
}

void akv_kb_gen_histogram(akv_kb_gen *g, const akv_kb_lenhist *h)
{
    gen_reset(g, AKV_KB_HISTOGRAM, 0, akv_kb_lenhist_max(h));
    g->hist = h;
}

/* HotspotIntegerGenerator. A side with no keys is never chosen: the
 * workload refuses fractions that would need it (YCSB divides by zero). */
static uint64_t hotspot(akv_kb_gen *g, akv_kb_rng *r)
{
    uint64_t n = g->hi - g->lo + 1;
    if (g->hot > 0 && (g->hot >= n || akv_kb_rng_double(r) < g->hot_opn))
        return g->lo + akv_kb_rng_below(r, g->hot);
    return g->lo + g->hot + akv_kb_rng_below(r, n - g->hot);
}

/* ExponentialGenerator as CoreWorkload.nextKeynum uses it: `last` minus an
 * exponential draw, redrawn while that would fall below key 0. */
static uint64_t exponential(akv_kb_gen *g, akv_kb_rng *r, uint64_t last)
{
    for (;;) {
        double back = -log1p(-akv_kb_rng_double(r)) / g->exp_gamma;
        if (back < (double)last + 1)
            return last - (uint64_t)back;
    }
}

uint64_t akv_kb_gen_next(akv_kb_gen *g, akv_kb_rng *r, uint64_t last)
{
    switch (g->dist) {
    case AKV_KB_ZIPFIAN:
        return akv_kb_scrambled_next(&g->sz, r);
    case AKV_KB_PLAIN_ZIPFIAN:
        return akv_kb_zipf_next(&g->z, r);
    case AKV_KB_LATEST: /* SkewedLatestGenerator: last - nextLong(last) */
        return last - akv_kb_zipf_next_n(&g->z, r, last);
    case AKV_KB_HOTSPOT:
        return hotspot(g, r);
    case AKV_KB_SEQUENTIAL: {
        uint64_t i = g->counter ? atomic_fetch_add(g->counter, 1) : g->seq++;
        return g->lo + i % (g->hi - g->lo + 1);
    }
    case AKV_KB_EXPONENTIAL:
        return exponential(g, r, last);
    case AKV_KB_HISTOGRAM:
        return akv_kb_lenhist_next(g->hist, r);
    case AKV_KB_CONSTANT:
        return g->lo;
    case AKV_KB_UNIFORM:
    default:
        return g->lo + akv_kb_rng_below(r, g->hi - g->lo + 1);
    }
}

size_t akv_kb_key(char *buf, size_t cap, uint64_t keynum, bool hashed, unsigned pad)
{
    if (hashed)
        keynum = akv_kb_fnv64(keynum);
    int n = snprintf(buf, cap, "user%0*llu", (int)pad, (unsigned long long)keynum);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}
