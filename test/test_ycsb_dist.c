/*
 * test_ycsb_dist.c — every key, scan-length and field-length distribution of
 * kvbench against YCSB's own algorithms (site.ycsb.generator and
 * CoreWorkload), by a chi-square test over >= 1M draws with a fixed seed.
 *
 * The reference probabilities are computed here, from the published
 * algorithms, without calling any of kvbench's generator code:
 *
 *  - ZipfianGenerator (Gray et al.): u uniform in [0, 1); item 0 when
 *    u * zetan < 1, item 1 when u * zetan < 1 + 0.5^theta, otherwise
 *    floor(m * (eta * u - eta + 1)^alpha) with alpha = 1 / (1 - theta) and
 *    eta = (1 - (2 / items)^(1 - theta)) / (1 - zeta(2) / zetan). Inverting the
 *    last formula gives the exact interval of u, hence the probability, of
 *    every item. `items` is the count given at construction; `m` and zetan
 *    grow when the caller passes a larger item count (SkewedLatest), eta keeps
 *    using the constructor's `items`.
 *  - ScrambledZipfianGenerator: a ZipfianGenerator over 0 .. 10^10 (10^10 + 1
 *    items, zetan = 26.46902820178302), each item i mapped to
 *    min + fnv64(i) % itemcount.
 *  - SkewedLatestGenerator: max - ZipfianGenerator(recordcount - 1).nextLong(max)
 *    with max the newest acknowledged insert.
 *  - ExponentialGenerator: gamma = -ln(1 - percentile/100) / (recordcount * frac);
 *    CoreWorkload takes last - (int)(-ln(u) / gamma) and redraws negatives.
 *  - Uniform, hotspot, HistogramGenerator: their definitions.
 *  - CoreWorkload.nextKeynum redraws any key above the newest acknowledged insert.
 *
 * The threshold is df + 6 sqrt(2 df): six standard deviations above what a
 * correct generator gives on average, so a correct one fails with
 * probability below 1e-8, while the deviations this test was written for
 * (an off-by-one key range, a uniform fallback instead of a redraw, a wrong
 * eta) give chi-square values many times larger.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/generators.c"
#include "tools/kvbench/rng.c"
#include "tools/kvbench/histogram.c"
#include "tools/kvbench/lenhist.c"
#include "tools/kvbench/props.c"
#include "tools/kvbench/workload.c"

#define DRAWS 1000000u

/* ---- chi-square ----------------------------------------------------------------- */

/* Cells are pooled in order until each pool expects at least 20 draws. A
 * draw in a cell of probability zero, or outside the k cells, makes the
 * statistic infinite. */
static double chi2(const char *what, const uint64_t *obs, const double *p, size_t k, uint64_t outside,
                   uint64_t n, double *limit)
{
    double sum_p = 0, stat = 0, e = 0, o = 0;
    int df = -1;
    for (size_t i = 0; i < k; i++)
        sum_p += p[i];
    cr_assert(fabs(sum_p - 1) < 1e-9, "%s: reference probabilities sum to %.12f", what, sum_p);
    uint64_t impossible = outside;
    for (size_t i = 0; i < k; i++) {
        if (p[i] == 0) {
            impossible += obs[i];
            continue;
        }
        e += p[i] * (double)n;
        o += (double)obs[i];
        if (e >= 20) {
            stat += (o - e) * (o - e) / e;
            df++;
            e = o = 0;
        }
    }
    if (e > 0) { /* the remainder: a pool of its own (it expects < 20) */
        stat += (o - e) * (o - e) / e;
        df++;
    }
    *limit = df + 6 * sqrt(2.0 * df);
    fprintf(stderr, "chi-square %-34s %12.1f  df %5d  limit %8.1f  impossible draws %llu\n", what, stat, df,
            *limit, (unsigned long long)impossible);
    return impossible ? INFINITY : stat;
}

/* ---- the reference: YCSB's algorithms, written out independently ---------------- */

static uint64_t ref_fnv64(uint64_t v) /* Utils.fnvhash64 */
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (int i = 0; i < 8; i++) {
        h = (h ^ (v & 0xff)) * 0x100000001B3ull;
        v >>= 8;
    }
    int64_t s = (int64_t)h;
    return s < 0 && s != INT64_MIN ? (uint64_t)-s : h; /* Math.abs */
}

static double ref_zeta(uint64_t n, double theta)
{
    double z = 0;
    for (uint64_t i = 1; i <= n; i++)
        z += pow((double)i, -theta);
    return z;
}

typedef struct ref_zipf {
    double theta, zetan, eta, r1, r2; /* r1, r2: where u leaves items 0 and 1 */
    uint64_t m;                       /* items nextLong is asked for */
} ref_zipf;

static void ref_zipf_init(ref_zipf *z, uint64_t items, uint64_t m, double theta, double zetan)
{
    z->theta = theta;
    z->m = m;
    z->zetan = zetan;
    z->eta = (1 - pow(2.0 / (double)items, 1 - theta)) / (1 - (1 + pow(0.5, theta)) / zetan);
    z->r1 = fmin(1.0, 1 / zetan);
    z->r2 = fmin(1.0, (1 + pow(0.5, theta)) / zetan);
}

/* The u at which floor(m (eta u - eta + 1)^alpha) reaches k. */
static double ref_zipf_u(const ref_zipf *z, uint64_t k)
{
    if (k >= z->m)
        return 1;
    return 1 - (1 - pow((double)k / (double)z->m, 1 - z->theta)) / z->eta;
}

/* P(nextLong(m) == base + k). */
static double ref_zipf_p(const ref_zipf *z, uint64_t k)
{
    double p = k == 0 ? z->r1 : k == 1 ? z->r2 - z->r1 : 0;
    double lo = ref_zipf_u(z, k), hi = ref_zipf_u(z, k + 1);
    if (lo >= z->r2 && k >= 1 && k + 1 < z->m) /* wholly inside: difference without cancellation */
        return p + pow((double)k / (double)z->m, 1 - z->theta) *
                       expm1((1 - z->theta) * log1p(1.0 / (double)k)) / z->eta;
    lo = fmax(lo, z->r2);
    return hi > lo ? p + hi - lo : p;
}

/* ScrambledZipfianGenerator(min, min + n - 1): p[j] = P(min + j). The items
 * below `head` (which carry most of the mass) are hashed one by one; the
 * rest, more than 10^10 - head items of nearly equal weight scattered by
 * FNV, add their total mass evenly (for n = 1000 the unevenness this ignores
 * is below 0.4% of the tail's share per key, far below sampling noise). */
static void ref_scrambled(double *p, uint64_t n, uint64_t head)
{
    ref_zipf z;
    const uint64_t items = 10000000000ull + 1;
    ref_zipf_init(&z, items, items, 0.99, 26.46902820178302);
    memset(p, 0, n * sizeof *p);
    for (uint64_t i = 0; i < head; i++)
        p[ref_fnv64(i) % n] += ref_zipf_p(&z, i);
    double tail = 1 - ref_zipf_u(&z, head);
    for (uint64_t j = 0; j < n; j++)
        p[j] += tail / (double)n;
}

/* CoreWorkload.nextKeynum: draws above `last` are redrawn. */
static void redraw_above(double *p, size_t n, size_t last)
{
    double kept = 0;
    for (size_t j = 0; j < n; j++)
        kept += j <= last ? p[j] : 0;
    for (size_t j = 0; j < n; j++)
        p[j] = j <= last ? p[j] / kept : 0;
}

/* The distribution of the sum of `times` independent draws of p (values
 * 0 .. n-1): what a record of `times` fields of those lengths weighs. */
static double *convolve(const double *p, size_t n, int times, size_t *out_n)
{
    size_t len = 1;
    double *acc = calloc(1, sizeof *acc);
    acc[0] = 1;
    for (int t = 0; t < times; t++) {
        size_t nl = len + n - 1;
        double *next = calloc(nl, sizeof *next);
        for (size_t a = 0; a < len; a++)
            for (size_t b = 0; b < n; b++)
                next[a + b] += acc[a] * p[b];
        free(acc);
        acc = next;
        len = nl;
    }
    *out_n = len;
    return acc;
}

/* ---- kvbench's side: requests of a workload given as properties -------------------- */

typedef struct bench {
    akv_kb_props props;
    akv_kb_workload w;
    akv_kb_shared sh;
    akv_kb_client c;
} bench;

static void bench_open(bench *b, const char *props)
{
    memset(b, 0, sizeof *b);
    cr_assert_eq(akv_kb_props_parse(&b->props, "wl", props, strlen(props)), 0, "%s", b->props.err);
    cr_assert_eq(akv_kb_workload_load(&b->w, &b->props), 0, "%s", b->props.err);
    cr_assert_eq(akv_kb_shared_init(&b->sh, &b->w, false), 0);
    akv_kb_client_init(&b->c, &b->w, &b->sh, 42, 0);
}

static void bench_close(bench *b)
{
    akv_kb_shared_free(&b->sh);
    akv_kb_workload_free(&b->w);
    akv_kb_props_free(&b->props);
}

/* Count the key numbers of `draws` requests of type `op` in [0, n). */
static uint64_t count_keys(bench *b, akv_kb_op op, uint64_t *cnt, size_t n, uint64_t draws)
{
    uint64_t outside = 0;
    for (uint64_t got = 0; got < draws;) {
        akv_kb_req r;
        akv_kb_client_next(&b->c, &r);
        if (r.op != op)
            continue;
        got++;
        if (r.keynum < n)
            cnt[r.keynum]++;
        else
            outside++;
    }
    return outside;
}

static void ack_inserts(bench *b, uint64_t from, uint64_t to)
{
    for (uint64_t k = from; k < to; k++) {
        akv_kb_req r = {.op = AKV_KB_INSERT, .keynum = k};
        akv_kb_cost cost = {0};
        akv_kb_client_done(&b->c, &r, 0, &cost);
    }
}

/* ---- the reference checks itself against YCSB's published values ------------------- */

Test(ycsb_dist, reference_matches_ycsb_facts)
{
    /* Utils.fnvhash64 values (the first keys YCSB's load phase inserts). */
    cr_expect_eq(ref_fnv64(0), 6284781860667377211ull);
    cr_expect_eq(ref_fnv64(1), 8517097267634966620ull);
    /* At recordcount=1000 YCSB's 20 most requested keys take 16.1% of requests. */
    static double p[1001];
    ref_scrambled(p, 1001, 2000000);
    redraw_above(p, 1001, 999);
    double top = 0;
    for (int t = 0; t < 20; t++) {
        size_t best = 0;
        for (size_t j = 1; j < 1001; j++)
            if (p[j] > p[best])
                best = j;
        top += p[best];
        p[best] = -1;
    }
    cr_expect(top > 0.1605 && top < 0.1615, "top-20 share %.4f", top);
    /* Gray's closed form: the items' probabilities sum to one. */
    ref_zipf z;
    ref_zipf_init(&z, 100, 100, 0.99, ref_zeta(100, 0.99));
    double s = 0;
    for (uint64_t k = 0; k < 100; k++)
        s += ref_zipf_p(&z, k);
    cr_expect(fabs(s - 1) < 1e-12, "%.15f", s);
}

/* ---- request distributions ---------------------------------------------------------- */

static void check_zipfian(const char *what, const char *props, uint64_t range_items)
{
    bench b;
    bench_open(&b, props);
    static uint64_t cnt[1000];
    memset(cnt, 0, sizeof cnt);
    uint64_t outside = count_keys(&b, AKV_KB_READ, cnt, 1000, DRAWS);
    double *p = calloc(range_items, sizeof *p), limit;
    ref_scrambled(p, range_items, 2000000);
    redraw_above(p, range_items, 999);
    double c = chi2(what, cnt, p, 1000, outside, DRAWS, &limit);
    cr_expect(c < limit, "%s: chi-square %.1f above %.1f", what, c, limit);
    free(p);
    bench_close(&b);
}

Test(ycsb_dist, zipfian_is_ycsb_scrambled_zipfian)
{
    /* Range insertstart .. insertstart + insertcount (inclusive): 1001 items. */
    check_zipfian("zipfian recordcount=1000",
                  "recordcount=1000\noperationcount=1000\nreadproportion=1\nupdateproportion=0\n"
                  "requestdistribution=zipfian\n",
                  1001);
}

Test(ycsb_dist, zipfian_leaves_room_for_expected_inserts)
{
    /* expectednewkeys = (int)(100000 * 0.05 * 2) = 10000: range 0 .. 11000;
     * keys above the newest acknowledged one (999) are redrawn. */
    check_zipfian("zipfian with inserts",
                  "recordcount=1000\noperationcount=100000\nreadproportion=0.95\nupdateproportion=0\n"
                  "insertproportion=0.05\nrequestdistribution=zipfian\n",
                  11001);
}

/* SkewedLatestGenerator over [1, last]: key last - k with k from a Zipfian
 * built for recordcount - 1 items and asked for `last` items. */
static void latest_ref(double *p, uint64_t last, uint64_t recordcount)
{
    ref_zipf z;
    ref_zipf_init(&z, recordcount - 1, last, 0.99, ref_zeta(last, 0.99));
    for (uint64_t k = 0; k <= last; k++)
        p[last - k] = k < last ? ref_zipf_p(&z, k) : 0;
}

Test(ycsb_dist, latest_is_ycsb_skewed_latest)
{
    bench b;
    bench_open(&b, "recordcount=1000\noperationcount=1000\nreadproportion=1\nupdateproportion=0\n"
                   "requestdistribution=latest\n");
    static uint64_t cnt[2000];
    static double p[2000];
    double limit, c;
    uint64_t outside = count_keys(&b, AKV_KB_READ, cnt, 1000, DRAWS);
    latest_ref(p, 999, 1000);
    c = chi2("latest, no inserts", cnt, p, 1000, outside, DRAWS, &limit);
    cr_expect(c < limit, "chi-square %.1f above %.1f", c, limit);

    /* 1000 acknowledged inserts later: zetan grows to zeta(1999), eta keeps
     * the constructor's item count. */
    ack_inserts(&b, 1000, 2000);
    memset(cnt, 0, sizeof cnt);
    outside = count_keys(&b, AKV_KB_READ, cnt, 2000, DRAWS);
    latest_ref(p, 1999, 1000);
    c = chi2("latest, after 1000 inserts", cnt, p, 2000, outside, DRAWS, &limit);
    cr_expect(c < limit, "chi-square %.1f above %.1f", c, limit);
    bench_close(&b);
}

static void check_exponential(const char *what, const char *props, double pct, double frac)
{
    bench b;
    bench_open(&b, props);
    static uint64_t cnt[1000];
    static double p[1000];
    memset(cnt, 0, sizeof cnt);
    uint64_t outside = count_keys(&b, AKV_KB_READ, cnt, 1000, DRAWS);
    /* last = recordcount - 1 = 999; P(back = k) ∝ e^{-gamma k} - e^{-gamma (k+1)}, k <= 999. */
    double gamma = -log(1 - pct / 100) / (1000 * frac), norm = -expm1(-gamma * 1000);
    for (int k = 0; k < 1000; k++)
        p[999 - k] = exp(-gamma * k) * -expm1(-gamma) / norm;
    double limit, c = chi2(what, cnt, p, 1000, outside, DRAWS, &limit);
    cr_expect(c < limit, "%s: chi-square %.1f above %.1f", what, c, limit);
    bench_close(&b);
}

Test(ycsb_dist, exponential_is_ycsb_exponential)
{
    check_exponential("exponential (95, 0.857)",
                      "recordcount=1000\nreadproportion=1\nupdateproportion=0\n"
                      "requestdistribution=exponential\n",
                      95, 0.8571428571);
    /* Half the draws fall beyond the oldest key: YCSB redraws them. */
    check_exponential("exponential (50, 1)",
                      "recordcount=1000\nreadproportion=1\nupdateproportion=0\n"
                      "requestdistribution=exponential\nexponential.percentile=50\nexponential.frac=1\n",
                      50, 1);
}

Test(ycsb_dist, uniform_and_hotspot_cover_insertstart_to_insertcount)
{
    bench b;
    static uint64_t cnt[1000];
    static double p[1000];
    double limit, c;
    uint64_t outside;
    bench_open(&b, "recordcount=1000\ninsertstart=200\ninsertcount=700\nreadproportion=1\n"
                   "updateproportion=0\nrequestdistribution=uniform\n");
    outside = count_keys(&b, AKV_KB_READ, cnt, 1000, DRAWS);
    for (int j = 0; j < 1000; j++)
        p[j] = j >= 200 && j < 900 ? 1.0 / 700 : 0;
    c = chi2("uniform [200, 899]", cnt, p, 1000, outside, DRAWS, &limit);
    cr_expect(c < limit, "chi-square %.1f above %.1f", c, limit);
    bench_close(&b);

    bench_open(&b, "recordcount=1000\ninsertstart=200\ninsertcount=700\nreadproportion=1\n"
                   "updateproportion=0\nrequestdistribution=hotspot\nhotspotdatafraction=0.3\n"
                   "hotspotopnfraction=0.9\n");
    memset(cnt, 0, sizeof cnt);
    outside = count_keys(&b, AKV_KB_READ, cnt, 1000, DRAWS);
    int hot = (int)(700 * 0.3); /* HotspotIntegerGenerator: (int)(interval * fraction) */
    for (int j = 0; j < 1000; j++)
        p[j] = j < 200 || j >= 900 ? 0 : j < 200 + hot ? 0.9 / hot : 0.1 / (700 - hot);
    c = chi2("hotspot [200, 899] 0.3/0.9", cnt, p, 1000, outside, DRAWS, &limit);
    cr_expect(c < limit, "chi-square %.1f above %.1f", c, limit);
    bench_close(&b);
}

/* ---- scan lengths ---------------------------------------------------------------------- */

Test(ycsb_dist, scan_lengths)
{
    const char *dists[] = {"uniform", "zipfian"};
    for (int d = 0; d < 2; d++) {
        char props[256];
        snprintf(props, sizeof props,
                 "recordcount=1000\nreadproportion=0\nupdateproportion=0\nscanproportion=1\n"
                 "minscanlength=5\nmaxscanlength=104\nscanlengthdistribution=%s\n",
                 dists[d]);
        bench b;
        bench_open(&b, props);
        static uint64_t cnt[105];
        static double p[105];
        memset(cnt, 0, sizeof cnt);
        uint64_t outside = 0;
        for (uint64_t i = 0; i < DRAWS; i++) {
            akv_kb_req r;
            akv_kb_client_next(&b.c, &r);
            cr_assert_eq(r.op, AKV_KB_SCAN);
            if (r.scan < 105)
                cnt[r.scan]++;
            else
                outside++;
        }
        ref_zipf z;
        ref_zipf_init(&z, 100, 100, 0.99, ref_zeta(100, 0.99));
        for (int l = 0; l < 105; l++)
            p[l] = l < 5 ? 0 : d == 0 ? 1.0 / 100 : ref_zipf_p(&z, (uint64_t)l - 5);
        char what[64];
        snprintf(what, sizeof what, "scan length %s [5, 104]", dists[d]);
        double limit, c = chi2(what, cnt, p, 105, outside, DRAWS, &limit);
        cr_expect(c < limit, "%s: chi-square %.1f above %.1f", what, c, limit);
        bench_close(&b);
    }
}

/* ---- field lengths: one draw per field, a record weighs their sum ------------------------ */

static void check_record_lengths(const char *what, const char *props, const double *field_p, size_t n)
{
    bench b;
    bench_open(&b, props);
    size_t sn;
    double *p = convolve(field_p, n, (int)b.w.fieldcount, &sn);
    uint64_t *cnt = calloc(sn, sizeof *cnt), outside = 0;
    for (uint64_t i = 0; i < DRAWS; i++) {
        uint64_t v = akv_kb_value_len(&b.c);
        if (v < sn)
            cnt[v]++;
        else
            outside++;
    }
    double limit, c = chi2(what, cnt, p, sn, outside, DRAWS, &limit);
    cr_expect(c < limit, "%s: chi-square %.1f above %.1f", what, c, limit);
    free(cnt);
    free(p);
    bench_close(&b);
}

Test(ycsb_dist, field_lengths_uniform_and_zipfian)
{
    static double p[101];
    for (int l = 0; l <= 100; l++)
        p[l] = l < 10 ? 0 : 1.0 / 91;
    check_record_lengths("record length, 10 uniform fields",
                         "recordcount=1000\nfieldcount=10\nfieldlength=100\nminfieldlength=10\n"
                         "fieldlengthdistribution=uniform\n",
                         p, 101);
    ref_zipf z;
    ref_zipf_init(&z, 91, 91, 0.99, ref_zeta(91, 0.99));
    for (int l = 0; l <= 100; l++)
        p[l] = l < 10 ? 0 : ref_zipf_p(&z, (uint64_t)l - 10);
    check_record_lengths("record length, 10 zipfian fields",
                         "recordcount=1000\nfieldcount=10\nfieldlength=100\nminfieldlength=10\n"
                         "fieldlengthdistribution=zipfian\n",
                         p, 101);
}

Test(ycsb_dist, field_lengths_histogram)
{
    /* test/data/ycsb/fieldlengths.hist: BlockSize 16, bucket counts 0:2 1:5
     * 2:3 3:0 4:6. HistogramGenerator draws r uniform in [0, 16) and returns
     * (i+1)*16 for the first i < 4 with r - (b0 + .. + bi) <= 0, else 4*16:
     * 16 for r in 0..2 (3 values), 32 for 3..7 (5), 48 for 8..10 (3), 64 for
     * 11..15 (5; bucket 3 is empty, the last bucket falls through to 4*16). */
    static double p[65];
    p[16] = 3.0 / 16;
    p[32] = 5.0 / 16;
    p[48] = 3.0 / 16;
    p[64] = 5.0 / 16;
    check_record_lengths("record length, 3 histogram fields",
                         "recordcount=1000\nfieldcount=3\nfieldlengthdistribution=histogram\n"
                         "fieldlengthhistogram=test/data/ycsb/fieldlengths.hist\n",
                         p, 65);
}
