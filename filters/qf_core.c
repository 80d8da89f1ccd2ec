/*
 * qf_core.c — the quotient-filter core behind `qf` and `aqf` (see qf_core.h
 * for the layout and the hash-bit assignment).
 *
 * ## Why invariant N makes the filter safe without the owners' hashes
 *
 * A minirun is the set of records sharing (quotient, remainder). Its records
 * are kept in ascending hash order of the keys that own them, so record i of
 * a minirun belongs to key i of a reverse-map scan. Every fingerprint F_i is
 * a prefix of its owner's hash K_i (consistency). Invariant N: two
 * fingerprints of a minirun are identical or incomparable (neither is a
 * proper prefix of the other).
 *
 * Lemma 1 (matches form one group). If F_i and F_j both match a hash y they
 * are both prefixes of y, hence one is a prefix of the other; under N they
 * are identical. So the records matching any y are one group of identical
 * fingerprints, and the group is contiguous: every other record is
 * incomparable with it, so its owner compares with all the group's owners at
 * a bit inside both fingerprints, the same way.
 *
 * Lemma 2 (insert needs only the new hash x). Let G be the records matching
 * x. If G is non-empty, all of G equal some s that is a prefix of x; x gets
 * fingerprint s and goes in front of G. The new group is |G|+1 copies of s,
 * all prefixes of their owners, so any assignment of owners to its slots is
 * consistent, in particular the sorted one. N holds (s is already there). If
 * G is empty, every record differs from x inside its own fingerprint, so the
 * order of x against every owner is known, and x gets the shortest
 * fingerprint that is no prefix of any record (longer than the longest
 * common prefix with each); no record is a prefix of x, so N holds.
 *
 * Lemma 3 (remove needs only x). The records matching a stored key x are one
 * identical group containing x's own record (Lemma 1). Removing any record
 * of the group leaves copies of s for the remaining owners: consistent.
 *
 * Lemma 4 (adapt picks the right owners). Adapt reads the minirun's keys from
 * the reverse map in ascending order; by consistency and sorted order, key i
 * owns record i. It extends each record of the matching group with its own
 * owner's bits until it stops matching the query, then restores N inside the
 * group by lengthening the shorter of any nested pair with its owner's bits
 * (fix_nesting). Lengthening a fingerprint with its owner's bits keeps it a
 * prefix of its owner, so no stored key can ever stop matching its own
 * record: no false negative, and no rank mix-up (the shadowing hazard of
 * docs/filters.md, "Rank order, the shadowing hazard, ...") can arise,
 * because ranks are positions in hash order, not insertion order.
 *
 * Monotonicity: adaptation only lengthens fingerprints, so a query that no
 * longer matches any fingerprint keeps not matching after later adaptations.
 */
#include "filters/qf_core.h"
#include "filters/qf_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "revmap/revmap.h"
#include "util/codec.h"

/* ---- allocation --------------------------------------------------------- */

uint32_t akvi_qf_q_for(uint64_t n, double lf)
{
    if (!(lf > 0 && lf <= 1))
        lf = 0.9;
    double need = (double)n / lf;
    uint32_t q = 6;
    while (q < 58 && (double)(1ULL << q) < need)
        q++;
    return q;
}

uint64_t akvi_qf_slots_for(uint64_t n, double lf)
{
    if (!(lf > 0 && lf <= 1))
        lf = 0.9;
    double need = ceil((double)n / lf);
    return need < 64 ? 64 : need > 1e12 ? (uint64_t)1e12 : (uint64_t)need;
}

/* No wrap-around: runs that spill past the last home slot land in a tail of
 * 64 + 4·sqrt(N) slots (the authors' code uses 10·sqrt(N); at 95 % fill the
 * spill past any point is a few dozen slots, and a filter that runs out of
 * tail reports AKV_EFULL, which its builder answers with a larger filter). */
uint64_t akvi_qf_blocks_for(uint64_t nslots)
{
    uint64_t x = nslots + 64 + (uint64_t)ceil(4.0 * sqrt((double)nslots));
    return (x + 63) / 64;
}

static uint32_t qbits_for(uint64_t nslots)
{
    uint32_t q = 0;
    while (q < 64 && (1ULL << q) < nslots)
        q++;
    return q;
}

uint64_t akvi_qf_bytes_for(uint64_t nslots, uint32_t r, bool ext)
{
    return akvi_qf_blocks_for(nslots) * (8ULL * (ext ? 3 : 2) + 1 + 8ULL * r);
}

static void qf_pick_build(akvi_qf *f);

/* Allocate with an explicit block count (loaders of older payloads keep
 * their tail). */
static int qf_alloc(akvi_qf *f, uint64_t nslots, uint32_t r, uint32_t pbits, bool ext, uint64_t nblocks)
{
    memset(f, 0, sizeof *f);
    uint32_t q = qbits_for(nslots);
    if (nslots < 64 || nslots > (1ULL << 40) || r < 1 || r > 32 || pbits > 32 || q + r + pbits > 64 ||
        nblocks * 64 < nslots + 64 || nblocks > (nslots >> 6) + (1ULL << 24))
        return AKV_EINVAL;
    f->q = q;
    f->r = r;
    f->pbits = pbits;
    f->pow2 = nslots == 1ULL << q;
    f->mwords = ext ? 3 : 2;
    f->bbytes = 8 * f->mwords + 1 + 8 * r;
    f->max_ext = (128 - pbits - q - r) / r;
    f->nslots = nslots;
    f->nblocks = nblocks;
    f->xnslots = nblocks * 64;
    f->insert_limit = (uint64_t)(0.95 * (double)f->nslots);
    f->adapt_limit = f->nslots;
    f->t = calloc(f->nblocks * f->bbytes + 8, 1);
    if (!f->t)
        return AKV_ENOMEM;
    qf_pick_build(f);
    f->bl_ok = true;
    return AKV_OK;
}

int akvi_qf_init_n(akvi_qf *f, uint64_t nslots, uint32_t r, uint32_t pbits, bool ext)
{
    if (nslots < 64 || nslots > (1ULL << 40)) {
        memset(f, 0, sizeof *f);
        return AKV_EINVAL;
    }
    return qf_alloc(f, nslots, r, pbits, ext, akvi_qf_blocks_for(nslots));
}

int akvi_qf_init(akvi_qf *f, uint32_t q, uint32_t r, uint32_t pbits, bool ext)
{
    if (q < 6 || q > 40) {
        memset(f, 0, sizeof *f);
        return AKV_EINVAL;
    }
    return akvi_qf_init_n(f, 1ULL << q, r, pbits, ext);
}

int akvi_qf_init_like(akvi_qf *f, const akvi_qf *like)
{
    return qf_alloc(f, like->nslots, like->r, like->pbits, like->mwords == 3, like->nblocks);
}

void akvi_qf_assign(akvi_qf *dst, const akvi_qf *src)
{
    /* Word by word with the stores queries race against (qf_int.h): a
     * query that overlaps sees a torn table and retries (aqf.c). */
    size_t n = (size_t)(dst->nblocks * dst->bbytes + 8), i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, src->t + i, 8);
        st64(dst->t + i, w);
    }
    for (; i < n; i++)
        st8(dst->t + i, src->t[i]);
    dst->used = src->used;
    dst->nitems = src->nitems;
    dst->ext_slots = src->ext_slots;
    dst->prefix = src->prefix;
    dst->bl_ok = false;
}

void akvi_qf_free(akvi_qf *f)
{
    free(f->t);
    free(f->scratch);
    f->t = NULL;
    f->scratch = NULL;
}

size_t akvi_qf_memory(const akvi_qf *f)
{
    return (size_t)(f->nblocks * f->bbytes);
}

/* ---- navigation, lookup, insert: two builds of one template -------------
 *
 * filters/qf_nav.h is compiled twice: a portable build, and on x86-64 one
 * with POPCNT and BMI2 (select in a word is pdep + tzcnt). The hardware
 * build is used when the CPU has both (checked once at run time), so the
 * library runs on any x86-64 and builds anywhere. */

/* The first key sets the shard prefix the filter holds (akvi_qf.prefix). */
static inline void note_prefix(akvi_qf *f, akv_hash h)
{
    if (f->nitems == 0 && f->pbits)
        f->prefix = h.hi & ~(~0ULL >> f->pbits);
}

/* The general insert (below), which the in-place one hands over to. */
static __attribute__((noinline)) int qf_insert_general(akvi_qf *f, akv_hash h);

#define QF_FN(name) name##_g
#include "filters/qf_nav.h"
#undef QF_FN

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QF_HAVE_HW 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("popcnt,bmi,bmi2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("popcnt,bmi,bmi2")
#endif
#define QF_FN(name) name##_hw
#define QF_HW       1
#include "filters/qf_nav.h"
#include "util/grow.h"
#undef QF_HW
#undef QF_FN
#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

/* 0: not decided yet, 1: portable, 2: POPCNT/BMI2 */
static int qf_mode;

static bool qf_hw(void)
{
    int v = __atomic_load_n(&qf_mode, __ATOMIC_RELAXED);
    if (__builtin_expect(v == 0, 0)) { /* benign race: every thread computes the same */
        __builtin_cpu_init();
        v = __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi2") ? 2 : 1;
        __atomic_store_n(&qf_mode, v, __ATOMIC_RELAXED);
    }
    return v == 2;
}

void akvi_qf_force_portable(bool on)
{
    __atomic_store_n(&qf_mode, on ? 1 : 0, __ATOMIC_RELAXED);
}
#else
static bool qf_hw(void)
{
    return false;
}

void akvi_qf_force_portable(bool on)
{
    (void)on;
}
#endif

/* The slow paths use the portable build. */
#define rec_end     rec_end_g
#define last_used   last_used_g
#define run_start   run_start_g
#define first_empty first_empty_g

static void qf_pick_build(akvi_qf *f)
{
#ifdef QF_HAVE_HW
    if (qf_hw()) {
        f->lookup_fn = lookup_hw;
        f->insert_fn = f->mwords == 3 ? insert_aqf_hw : insert_qf_hw;
        return;
    }
#endif
    f->lookup_fn = lookup_g;
    f->insert_fn = f->mwords == 3 ? insert_aqf_g : insert_qf_g;
}

bool akvi_qf_hw_select(void)
{
    return qf_hw();
}

unsigned akvi_qf_words_touched(const akvi_qf *f, akv_hash h)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    uint64_t quo = quo_of(f, x);
    if (!((occw(f, quo >> 6) >> (quo & 63)) & 1))
        return 1;
    int64_t s = run_start(f, quo);
    if (s < 0)
        return 1;
    int64_t e = last_used(f, quo);
    /* occupieds + offset + runends(+extensions) per block, and the slots */
    uint64_t blocks = (uint64_t)(e < s ? s : e) / 64 - quo / 64 + 1;
    uint64_t slots = (uint64_t)(e >= s ? e - s + 1 : 1);
    return (unsigned)(2 + blocks * (f->mwords - 1) + (slots * f->r + 63) / 64);
}

/* ---- run decoding -------------------------------------------------------- */

/* The record whose remainder is at slot i, as a fingerprint; *end = its last slot. */
static akvi_qf_fp read_record(const akvi_qf *f, uint64_t home, uint64_t i, uint64_t *end)
{
    uint64_t e = (uint64_t)rec_end(f, i);
    akvi_qf_fp fp;
    fp.k = (uint32_t)(e - i);
    fp.s = ((akvi_u128)home << (128 - f->q)) | ((akvi_u128)slot_get(f, i) << (128 - f->q - f->r));
    for (uint32_t j = 1; j <= fp.k && j <= f->max_ext; j++)
        fp.s |= (akvi_u128)slot_get(f, i + j) << (128 - fp_len(f, j));
    *end = e;
    return fp;
}

/* Decode the run of `home` (which must be occupied) starting at slot s. */
static int decode_run_at(const akvi_qf *f, uint64_t home, uint64_t s, uint64_t *len, fpvec *out)
{
    uint64_t i = s, e = s;
    for (;;) {
        if (i >= f->xnslots)
            return AKV_ECORRUPT;
        int rc = fv_push(out, read_record(f, home, i, &e));
        if (rc != AKV_OK)
            return rc;
        if (bit_get(f, W_REND, i))
            break;
        i = e + 1;
    }
    *len = e + 1 - s;
    return AKV_OK;
}

/* Start and length (0 when empty) of the run of `home`, and its records. */
int akvi_qfi_load_run(const akvi_qf *f, uint64_t home, uint64_t *s, uint64_t *len, fpvec *out)
{
    int64_t st0 = run_start(f, home);
    if (st0 < 0)
        return AKV_ECORRUPT;
    *s = (uint64_t)st0;
    *len = 0;
    if (!bit_get(f, W_OCC, home))
        return AKV_OK;
    return decode_run_at(f, home, *s, len, out);
}

/* ---- writing runs -------------------------------------------------------- */

static void slot_move(akvi_qf *f, uint64_t from, uint64_t to)
{
    slot_set(f, to, slot_get(f, from));
    bit_put(f, W_REND, to, bit_get(f, W_REND, from));
    bit_put(f, W_EXT, to, bit_get(f, W_EXT, from));
}

static void slot_clear(akvi_qf *f, uint64_t i)
{
    slot_set(f, i, 0);
    bit_put(f, W_REND, i, false);
    bit_put(f, W_EXT, i, false);
}

/* Open `delta` blank slots at pos for the run of `home`: the slots up to
 * each of the next delta empty slots move right (one slot's insertion shift,
 * done for all delta at once), and the offset of every block the shift
 * enters grows by one per shift. */
static int make_room(akvi_qf *f, uint64_t home, uint64_t pos, uint64_t delta)
{
    uint64_t small[8], *es = delta <= 8 ? small : malloc(delta * sizeof *es);
    if (!es)
        return AKV_ENOMEM;
    int rc = AKV_OK;
    uint64_t x = pos;
    for (uint64_t j = 0; j < delta && rc == AKV_OK; j++) {
        int64_t e = first_empty(f, x);
        if (e < 0 || (uint64_t)e >= f->xnslots)
            rc = AKV_EFULL;
        else
            es[j] = (uint64_t)e, x = (uint64_t)e + 1;
    }
    for (uint64_t j = delta; j-- > 0 && rc == AKV_OK;) {
        uint64_t lo = j == 0 ? pos : es[j - 1] + 1, sh = delta - j;
        for (uint64_t i = es[j]; i-- > lo;)
            slot_move(f, i, i + sh);
    }
    for (uint64_t j = 0; j < delta && rc == AKV_OK; j++) {
        slot_clear(f, pos + j);
        for (uint64_t b = (home >> 6) + 1; b <= es[j] >> 6; b++)
            inc_off(f, b);
    }
    if (es != small)
        free(es);
    return rc;
}

/* Write the records of a run from slot s on; the last carries the run end. */
static void write_records(akvi_qf *f, uint64_t s, const akvi_qf_fp *fps, size_t n)
{
    uint64_t i = s;
    for (size_t t = 0; t < n; t++) {
        slot_set(f, i, rem_of(f, fps[t].s));
        bit_put(f, W_REND, i, t + 1 == n);
        bit_put(f, W_EXT, i, false);
        i++;
        for (uint32_t j = 1; j <= fps[t].k; j++, i++) {
            slot_set(f, i, chunk_of(f, fps[t].s, j));
            bit_put(f, W_REND, i, false);
            bit_put(f, W_EXT, i, true);
        }
    }
}

static uint64_t slots_of(const akvi_qf_fp *fps, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += 1 + fps[i].k;
    return t;
}

typedef struct tail_run {
    uint64_t home, off, len;
} tail_run;

/* Split raw slots into runs: a run ends after the record whose remainder
 * has the run-end bit; its home is the next occupied quotient. */
static size_t split_runs(const akvi_qf *f, uint64_t home, const uint8_t *fl, uint64_t n, tail_run *runs)
{
    size_t nr = 0;
    uint64_t h = home;
    for (uint64_t i = 0; i < n;) {
        do
            h++;
        while (h < f->xnslots && !bit_get(f, W_OCC, h));
        uint64_t st0 = i;
        for (;;) {
            bool re = fl[i] & 1;
            i++;
            while (i < n && (fl[i] & 2) && !(fl[i] & 1))
                i++;
            if (re || i >= n)
                break;
        }
        runs[nr++] = (tail_run){h, st0, i - st0};
    }
    return nr;
}

/* Offsets of the blocks starting in (home, e]: the end of the last run with
 * an earlier home. Runs before `home` end at run_s - 1 when the modified run
 * was pushed off its home, else before home. */
static void fix_offsets(akvi_qf *f, uint64_t home, int64_t own_end, uint64_t run_s, uint64_t e,
                        const tail_run *runs, const uint64_t *ends, size_t nr)
{
    int64_t before = own_end >= 0 ? own_end : (run_s > home ? (int64_t)run_s - 1 : -1);
    size_t t = 0;
    for (uint64_t b = (home >> 6) + 1; b <= (e >> 6) && b < f->nblocks; b++) {
        uint64_t base = b * 64;
        while (t < nr && runs[t].home < base)
            t++;
        int64_t last = t > 0 ? (int64_t)ends[t - 1] : before;
        set_off(f, b, last + 1 > (int64_t)base ? (uint64_t)(last + 1) - base : 0);
    }
}

/* After a run shrank to end at own_end (-1: it is gone): move the rest of
 * its cluster (raw slots [from, e)) back to canonical places — each run at
 * max(home, end of previous run + 1), the layout inserts keep — clear what
 * is left, and recompute the offsets in between. */
static int compact_tail(akvi_qf *f, uint64_t home, uint64_t run_s, int64_t own_end, uint64_t from, uint64_t e)
{
    uint64_t n = e - from;
    uint64_t *val = malloc((n + 1) * sizeof *val), *ends = malloc((n + 1) * sizeof *ends);
    uint8_t *fl = malloc(n + 1);
    tail_run *runs = malloc((n + 1) * sizeof *runs);
    if (!val || !fl || !runs || !ends) {
        free(val), free(fl), free(runs), free(ends);
        return AKV_ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        val[i] = slot_get(f, from + i);
        fl[i] = (uint8_t)(bit_get(f, W_REND, from + i) | (bit_get(f, W_EXT, from + i) << 1));
    }
    size_t nr = split_runs(f, home, fl, n, runs);
    uint64_t cur = own_end >= 0 ? (uint64_t)own_end + 1 : run_s;
    for (size_t t = 0; t < nr; t++) {
        uint64_t p = runs[t].home > cur ? runs[t].home : cur;
        for (uint64_t j = cur; j < p; j++) /* a run back at its home leaves a gap */
            slot_clear(f, j);
        for (uint64_t j = 0; j < runs[t].len; j++) {
            slot_set(f, p + j, val[runs[t].off + j]);
            bit_put(f, W_REND, p + j, fl[runs[t].off + j] & 1);
            bit_put(f, W_EXT, p + j, fl[runs[t].off + j] & 2);
        }
        cur = p + runs[t].len;
        ends[t] = cur - 1;
    }
    for (uint64_t j = cur; j < e; j++)
        slot_clear(f, j);
    fix_offsets(f, home, own_end, run_s, e, runs, ends, nr);
    free(ends), free(val), free(fl), free(runs);
    return AKV_OK;
}

/* Replace the run of `home` (at slot s, old_len slots, 0 if absent) with
 * the records fps[0..n). Everything else keeps its canonical place. */
int akvi_qfi_replace_run(akvi_qf *f, uint64_t home, uint64_t s, uint64_t old_len, const akvi_qf_fp *fps,
                         size_t n)
{
    uint64_t new_len = slots_of(fps, n);
    int64_t e = 0;
    if (new_len > old_len) {
        int rc = make_room(f, home, s + old_len, new_len - old_len);
        if (rc != AKV_OK)
            return rc;
    } else if (new_len < old_len) {
        e = first_empty(f, s + old_len);
        if (e < 0)
            return AKV_ECORRUPT;
    }
    write_records(f, s, fps, n);
    bit_put(f, W_OCC, home, n > 0);
    if (new_len < old_len) {
        int64_t own_end = n ? (int64_t)(s + new_len) - 1 : -1;
        int rc = compact_tail(f, home, s, own_end, s + old_len, (uint64_t)e);
        if (rc != AKV_OK)
            return rc;
    }
    f->used = f->used + new_len - old_len;
    f->bl_ok = false;
    return AKV_OK;
}

/* ---- insert / remove ----------------------------------------------------- */

uint64_t akvi_qfi_ext_total(const akvi_qf_fp *fps, size_t n)
{
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        t += fps[i].k;
    return t;
}

/* Where x goes in the run and with which fingerprint (Lemma 2). */
static size_t place_new(const akvi_qf *f, const fpvec *run, akvi_u128 x, akvi_qf_fp *nf)
{
    size_t before = 0;
    uint32_t k = 0;
    for (size_t i = 0; i < run->n; i++) {
        akvi_qf_fp fp = run->v[i];
        if (fp_prefix_of(f, fp, x)) {
            *nf = fp;
            return i;
        }
        unsigned l = lcp128(fp.s, x);
        uint32_t need = chunks_for(f, l);
        k = need > k ? need : k;
        before += fp.s < (x & mask128(fp_len(f, fp.k)));
    }
    *nf = make_fp(f, x, k);
    return before;
}

/* The general insert: decode the run, place the new record (Lemma 2),
 * re-encode. The in-place insert (qf_nav.h) hands over to it when the
 * key's minirun holds extended records. */
static int qf_insert_general(akvi_qf *f, akv_hash h)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    uint64_t home = quo_of(f, x), s, len;
    fpvec run;
    fv_init(&run);
    int rc = akvi_qfi_load_run(f, home, &s, &len, &run);
    akvi_qf_fp nf;
    size_t at = rc == AKV_OK ? place_new(f, &run, x, &nf) : 0;
    if (rc == AKV_OK && f->mwords == 2 && nf.k)
        rc = AKV_ECORRUPT; /* a plain QF never holds extended records */
    if (rc == AKV_OK && f->used + 1 + nf.k > f->insert_limit)
        rc = AKV_EFULL;
    if (rc == AKV_OK)
        rc = fv_insert(&run, at, nf);
    if (rc == AKV_OK)
        rc = akvi_qfi_replace_run(f, home, s, len, run.v, run.n);
    if (rc == AKV_OK) {
        note_prefix(f, h);
        f->nitems++;
        f->ext_slots += nf.k;
    }
    fv_free(&run);
    return rc;
}

int akvi_qf_remove(akvi_qf *f, akv_hash h)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    uint64_t home = quo_of(f, x), s, len;
    fpvec run;
    fv_init(&run);
    int rc = akvi_qfi_load_run(f, home, &s, &len, &run);
    size_t i = 0;
    while (rc == AKV_OK && i < run.n && !fp_prefix_of(f, run.v[i], x))
        i++;
    if (rc == AKV_OK && i == run.n)
        rc = AKV_NOTFOUND;
    if (rc == AKV_OK) {
        uint32_t k = run.v[i].k;
        memmove(run.v + i, run.v + i + 1, (run.n - i - 1) * sizeof *run.v);
        run.n--;
        rc = akvi_qfi_replace_run(f, home, s, len, run.v, run.n);
        if (rc == AKV_OK) {
            f->nitems--;
            f->ext_slots -= k;
        }
    }
    fv_free(&run);
    return rc;
}

/* ---- adaptation ------------------------------------------------------------ */

/* Restore invariant N among records whose owners are known: the shorter of
 * any nested pair grows with its own owner's bits until the pair differs
 * or is identical. Lengths only grow, so this terminates. */
void akvi_qfi_fix_nesting(const akvi_qf *f, akvi_qf_fp *fp, const akvi_u128 *own, size_t n)
{
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < n; i++)
            for (size_t j = i + 1; j < n; j++) {
                if (fp[i].k == fp[j].k)
                    continue;
                size_t a = fp[i].k < fp[j].k ? i : j, b = a == i ? j : i;
                if (!fp_prefix_of(f, fp[a], fp[b].s))
                    continue;
                uint32_t need = chunks_for(f, lcp128(own[a], own[b]));
                fp[a] = make_fp(f, own[a], need < fp[b].k ? need : fp[b].k);
                changed = true;
            }
    }
}

/* The minirun of x inside a decoded run: [*a, *b). */
void akvi_qfi_minirun_range(const akvi_qf *f, const fpvec *run, akvi_u128 x, size_t *a, size_t *b)
{
    akvi_u128 m = mid_of(f, x);
    size_t i = 0;
    while (i < run->n && mid_of(f, run->v[i].s) < m)
        i++;
    *a = i;
    while (i < run->n && mid_of(f, run->v[i].s) == m)
        i++;
    *b = i;
}

/* Keys of h's minirun from the reverse map, ascending. For 2^q slots they
 * are the keys whose top pbits+q+r bits of h.hi agree: one prefix scan.
 * Otherwise they are the interval of hashes whose quotient·2^r + remainder,
 * (x·N) >> (128 − r), equals h's: an h.hi range, which at most two prefix
 * scans of the reverse map cover (aligned blocks of 2^k hashes with 2^k
 * greater than the range's width, so at most 4× the keys it holds); keys
 * outside it, or at its ends with another stream, are dropped. The
 * reverse-map interface therefore needs no range operation. */
typedef struct mid_scan {
    const akvi_qf *f;
    akvi_u128 mid;
    uint64_t lo, hi; /* h.hi range */
    owners *o;
} mid_scan;

static int mid_keep(void *arg, akv_hash h)
{
    mid_scan *m = arg;
    if (h.hi < m->lo || h.hi > m->hi || mid_of(m->f, akvi_qf_stream(m->f, h)) != m->mid)
        return 0;
    return owners_push(m->o, h);
}

static int scan_minirun(const akvi_qf *f, akv_hash h, akv_revmap *rm, owners *o)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    if (f->pow2)
        return rm->scan(rm, h.hi, f->pbits + f->q + f->r, owners_push, o);
    /* x·N in [Q·2^128 + R·2^(128−r), Q·2^128 + (R+1)·2^(128−r)): divide the
     * bounds by N·2^64 for the top 64 bits of x, then put the shard prefix
     * back on top. */
    uint64_t quo = quo_of(f, x), rem = rem_of(f, x);
    akvi_u128 y0 = ((akvi_u128)quo << 64) + ((akvi_u128)rem << (64 - f->r));
    akvi_u128 y1 = y0 + ((akvi_u128)1 << (64 - f->r)) - 1;
    uint64_t x0 = (uint64_t)(y0 / f->nslots), x1 = (uint64_t)(y1 / f->nslots);
    uint64_t top = f->pbits ? h.hi & ~(~0ULL >> f->pbits) : 0;
    mid_scan m = {f, mid_of(f, x), top | (f->pbits ? x0 >> f->pbits : x0),
                  top | (f->pbits ? x1 >> f->pbits : x1), o};
    /* Two aligned blocks of 2^k hashes, 2^k > hi − lo, cover the range. */
    uint64_t d = m.hi - m.lo;
    unsigned k = d ? 64 - (unsigned)__builtin_clzll(d) : 0;
    if (k >= 64) {
        int rc = rm->scan(rm, 0, 1, mid_keep, &m);
        return rc == AKV_OK ? rm->scan(rm, 1ULL << 63, 1, mid_keep, &m) : rc;
    }
    int rc = rm->scan(rm, m.lo, 64 - k, mid_keep, &m);
    if (rc == AKV_OK && (m.lo >> k) != (m.hi >> k))
        rc = rm->scan(rm, m.hi, 64 - k, mid_keep, &m);
    return rc;
}

/* Owners of the minirun [a, b) from the reverse map, as streams; checks that
 * they are exactly as many as the records and each owns its record. */
int akvi_qfi_minirun_owners(const akvi_qf *f, akv_hash h, const fpvec *run, size_t a, size_t b,
                            akv_revmap *rm, owners *o, akvi_u128 **streams)
{
    int rc = scan_minirun(f, h, rm, o);
    if (rc != AKV_OK)
        return rc < 0 ? rc : AKV_EIO;
    if (o->n != b - a)
        return AKV_ECORRUPT;
    akvi_u128 *sv = malloc((o->n + 1) * sizeof *sv);
    if (!sv)
        return AKV_ENOMEM;
    for (size_t i = 0; i < o->n; i++) {
        sv[i] = akvi_qf_stream(f, o->v[i]);
        if (!fp_prefix_of(f, run->v[a + i], sv[i])) {
            free(sv);
            return AKV_ECORRUPT;
        }
    }
    *streams = sv;
    return AKV_OK;
}

static bool is_owner(const owners *o, akv_hash h)
{
    for (size_t i = 0; i < o->n; i++)
        if (o->v[i].hi == h.hi && o->v[i].lo == h.lo)
            return true;
    return false;
}

/* Extend the matching group of [a, b) against query x (Lemma 4). */
static bool extend_group(const akvi_qf *f, akvi_qf_fp *fp, const akvi_u128 *own, size_t n, akvi_u128 x)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!fp_prefix_of(f, fp[i], x))
            continue;
        uint32_t need = chunks_for(f, lcp128(own[i], x));
        if (need > f->max_ext)
            need = f->max_ext; /* the hash has no more bits: cannot be told apart */
        if (need > fp[i].k) {
            fp[i] = make_fp(f, own[i], need);
            any = true;
        }
    }
    akvi_qfi_fix_nesting(f, fp, own, n);
    return any;
}

int akvi_qf_adapt(akvi_qf *f, akv_hash h, akv_revmap *rm)
{
    if (f->mwords == 2 || !rm)
        return AKV_ENOTSUP;
    akvi_u128 x = akvi_qf_stream(f, h);
    uint64_t home = quo_of(f, x), s, len;
    fpvec run;
    fv_init(&run);
    owners o = {0};
    akvi_u128 *own = NULL;
    size_t a = 0, b = 0;
    int rc = akvi_qfi_load_run(f, home, &s, &len, &run);
    if (rc == AKV_OK)
        akvi_qfi_minirun_range(f, &run, x, &a, &b);
    bool hit = false;
    for (size_t i = a; rc == AKV_OK && i < b; i++)
        hit |= fp_prefix_of(f, run.v[i], x);
    if (rc == AKV_OK && !hit)
        rc = AKV_NOTFOUND;
    if (rc == AKV_OK)
        rc = akvi_qfi_minirun_owners(f, h, &run, a, b, rm, &o, &own);
    if (rc == AKV_OK && is_owner(&o, h))
        rc = AKV_NOTFOUND; /* a stored key, not a false positive */
    uint64_t old_ext = akvi_qfi_ext_total(run.v + a, b - a);
    if (rc == AKV_OK && !extend_group(f, run.v + a, own, b - a, x))
        rc = AKV_NOTFOUND;
    uint64_t add = rc == AKV_OK ? akvi_qfi_ext_total(run.v + a, b - a) - old_ext : 0;
    if (rc == AKV_OK && f->used + add > f->adapt_limit)
        rc = AKV_EFULL;
    if (rc == AKV_OK)
        rc = akvi_qfi_replace_run(f, home, s, len, run.v, run.n);
    if (rc == AKV_OK) {
        f->ext_slots += add;
        f->adaptations++;
    }
    free(own);
    free(o.v);
    fv_free(&run);
    return rc;
}

/* ---- sequential writer: bulk load, merge, rebuild ------------------------ */

/* Append one record after everything written so far (records must come in
 * ascending order). Offsets are set as slots land past their home block. */
int akvi_qfi_emit(akvi_qf *f, uint64_t home, akvi_qf_fp fp)
{
    bool same = f->nitems > 0 && home == f->bl_home;
    uint64_t pos = same ? f->bl_cur : (home > f->bl_cur ? home : f->bl_cur);
    if (pos + 1 + fp.k > f->xnslots)
        return AKV_EFULL;
    if (same)
        bit_put(f, W_REND, f->bl_last_rem, false);
    else
        bit_put(f, W_OCC, home, true);
    akvi_qf_fp one = fp;
    write_records(f, pos, &one, 1);
    /* The offset of every block after the home's one that this run now
     * reaches is where the run ends (it may end blocks later: clustered
     * hashes make runs longer than a block). */
    uint64_t end = pos + fp.k;
    for (uint64_t b = (home >> 6) + 1; b <= (end >> 6); b++)
        set_off(f, b, end + 1 - b * 64);
    f->bl_home = home;
    f->bl_last_rem = pos;
    f->bl_cur = pos + 1 + fp.k;
    f->used += 1 + fp.k;
    f->ext_slots += fp.k;
    f->nitems++;
    return AKV_OK;
}

int akvi_qf_bulk_add(akvi_qf *f, akv_hash h)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    if (!f->bl_ok || (f->nitems > 0 && x < f->bl_last))
        return AKV_EINVAL;
    if (f->used + 1 > f->insert_limit)
        return AKV_EFULL;
    note_prefix(f, h);
    int rc = akvi_qfi_emit(f, quo_of(f, x), make_fp(f, x, 0));
    if (rc == AKV_OK)
        f->bl_last = x;
    return rc;
}

bool akvi_qfi_next_home(const akvi_qf *f, uint64_t *h)
{
    uint64_t i = *h;
    while (i < f->xnslots) {
        uint64_t w = occw(f, i >> 6) >> (i & 63);
        if (w) {
            *h = i + (uint64_t)__builtin_ctzll(w);
            return *h < f->xnslots;
        }
        i = (i | 63) + 1;
    }
    return false;
}

/* Next run's records into out (cleared); false at the end. */
int akvi_qfi_read_next_run(reader *rd, uint64_t *home, fpvec *out)
{
    out->n = 0;
    uint64_t h = rd->next;
    if (!akvi_qfi_next_home(rd->f, &h))
        return AKV_NOTFOUND;
    uint64_t s = h > rd->cur ? h : rd->cur, len = 0;
    int rc = decode_run_at(rd->f, h, s, &len, out);
    rd->cur = s + len;
    rd->next = h + 1;
    *home = h;
    return rc;
}

int akvi_qf_foreach(const akvi_qf *f, akvi_qf_visit_fn fn, void *arg)
{
    reader rd = {f, 0, 0};
    fpvec run;
    fv_init(&run);
    uint64_t home;
    int rc;
    while ((rc = akvi_qfi_read_next_run(&rd, &home, &run)) == AKV_OK)
        for (size_t i = 0; i < run.n && rc == AKV_OK; i++)
            rc = fn(arg, home, run.v[i]);
    fv_free(&run);
    return rc == AKV_NOTFOUND ? AKV_OK : rc;
}

/* ---- validation, FPR, serialization -------------------------------------- */

static bool slot_empty(const akvi_qf *f, uint64_t i)
{
    return slot_get(f, i) == 0 && !bit_get(f, W_REND, i) && !bit_get(f, W_EXT, i);
}

typedef struct vstate {
    uint64_t cur, used, items, ext;
    uint64_t *off;
} vstate;

/* Check one run starting at s; returns its last slot or QF_BAD. */
static int64_t check_run(const akvi_qf *f, uint64_t home, uint64_t s, vstate *vs)
{
    akvi_qf_fp prev = {0, 0};
    for (uint64_t i = s, n = 0;; n++) {
        if (i >= f->xnslots || bit_get(f, W_EXT, i))
            return QF_BAD;
        uint64_t e;
        akvi_qf_fp fp = read_record(f, home, i, &e);
        for (uint64_t j = i + 1; j <= e; j++)
            if (bit_get(f, W_REND, j))
                return QF_BAD; /* counter slots are not part of this format */
        if (e + 1 < f->xnslots && bit_get(f, W_EXT, e + 1) && bit_get(f, W_REND, e + 1))
            return QF_BAD;
        if (fp.k > f->max_ext || (n && (fp.s < prev.s)))
            return QF_BAD;
        /* invariant N between neighbours of one minirun */
        if (n && mid_of(f, fp.s) == mid_of(f, prev.s) && fp.k != prev.k &&
            (fp_prefix_of(f, prev, fp.s) || fp_prefix_of(f, fp, prev.s)))
            return QF_BAD;
        vs->items++;
        vs->ext += fp.k;
        vs->used += 1 + fp.k;
        prev = fp;
        if (bit_get(f, W_REND, i))
            return (int64_t)e;
        i = e + 1;
    }
}

int akvi_qf_validate(const akvi_qf *f)
{
    vstate vs = {0, 0, 0, 0, calloc(f->nblocks, sizeof(uint64_t))};
    if (!vs.off)
        return AKV_ENOMEM;
    int rc = AKV_OK;
    uint64_t h = 0;
    while (rc == AKV_OK && akvi_qfi_next_home(f, &h)) {
        if (h >= f->nslots) {
            rc = AKV_ECORRUPT;
            break;
        }
        uint64_t s = h > vs.cur ? h : vs.cur;
        for (uint64_t i = vs.cur; i < s && rc == AKV_OK; i++)
            if (!slot_empty(f, i))
                rc = AKV_ECORRUPT;
        int64_t e = rc == AKV_OK ? check_run(f, h, s, &vs) : QF_BAD;
        if (e == QF_BAD) {
            rc = AKV_ECORRUPT;
            break;
        }
        for (uint64_t b = (h >> 6) + 1; b <= ((uint64_t)e >> 6); b++)
            vs.off[b] = (uint64_t)e + 1 - b * 64;
        vs.cur = (uint64_t)e + 1;
        h++;
    }
    for (uint64_t i = vs.cur; i < f->xnslots && rc == AKV_OK; i++)
        if (!slot_empty(f, i))
            rc = AKV_ECORRUPT;
#ifdef QF_DEBUG
    if (rc)
        fprintf(stderr, "validate: structure (cur %llu)\n", (unsigned long long)vs.cur);
#endif
    for (uint64_t b = 0; b < f->nblocks && rc == AKV_OK; b++)
        if (offb(f, b) != (vs.off[b] < QF_OFF_SAT ? vs.off[b] : QF_OFF_SAT)) {
#ifdef QF_DEBUG
            fprintf(stderr, "validate: block %llu off %llu want %llu\n", (unsigned long long)b,
                    (unsigned long long)offb(f, b), (unsigned long long)vs.off[b]);
#endif
            rc = AKV_ECORRUPT;
        }
    if (rc == AKV_OK && (vs.used != f->used || vs.items != f->nitems || vs.ext != f->ext_slots)) {
#ifdef QF_DEBUG
        fprintf(stderr, "validate: counts used %llu/%llu items %llu/%llu ext %llu/%llu\n",
                (unsigned long long)vs.used, (unsigned long long)f->used, (unsigned long long)vs.items,
                (unsigned long long)f->nitems, (unsigned long long)vs.ext, (unsigned long long)f->ext_slots);
#endif
        rc = AKV_ECORRUPT;
    }
    free(vs.off);
    return rc;
}

typedef struct fpr_acc {
    const akvi_qf *f;
    double sum;
    akvi_qf_fp last;
    bool any;
} fpr_acc;

static int fpr_visit(void *arg, uint64_t home, akvi_qf_fp fp)
{
    (void)home;
    fpr_acc *a = arg;
    /* a fingerprint fixes the home (1 in nslots) and r + k·r fraction bits */
    if (!a->any || fp.s != a->last.s || fp.k != a->last.k)
        a->sum += ldexp(1.0 / (double)a->f->nslots, -(int)(a->f->r * (fp.k + 1)));
    a->last = fp;
    a->any = true;
    return AKV_OK;
}

double akvi_qf_fpr(const akvi_qf *f)
{
    fpr_acc a = {f, 0, {0, 0}, false};
    akvi_qf_foreach(f, fpr_visit, &a);
    return a.sum;
}

/* Payload version 2 (docs/format.md): u64 nslots, u32 r, u32 pbits, u64
 * nblocks, u64 prefix, items, used, ext_slots, adaptations, then the table
 * bytes as they are in memory (little-endian words, packed blocks). */
int akvi_qf_save(const akvi_qf *f, uint8_t *buf, size_t *len)
{
    akvi_wbuf w = {buf, 0};
    akvi_w_u64(&w, f->nslots);
    akvi_w_u32(&w, f->r);
    akvi_w_u32(&w, f->pbits);
    akvi_w_u64(&w, f->nblocks);
    akvi_w_u64(&w, f->prefix);
    akvi_w_u64(&w, f->nitems);
    akvi_w_u64(&w, f->used);
    akvi_w_u64(&w, f->ext_slots);
    akvi_w_u64(&w, f->adaptations);
    size_t tb = (size_t)(f->nblocks * f->bbytes);
    if (buf) {
        for (size_t i = 0; i + 8 <= tb; i += 8)
            st64(buf + w.len + i, ld64(f->t + i));
        for (size_t i = tb & ~(size_t)7; i < tb; i++)
            buf[w.len + i] = ld8(f->t + i);
    }
    w.len += tb;
    *len = w.len;
    return AKV_OK;
}

static int finish_load(akvi_qf *f, uint64_t prefix, uint64_t items, uint64_t used, uint64_t exts,
                       uint64_t adapts)
{
    f->prefix = prefix;
    f->nitems = items;
    f->used = used;
    f->ext_slots = exts;
    f->adaptations = adapts;
    f->bl_ok = false;
    int rc = akvi_qf_validate(f);
    if (rc != AKV_OK) {
        akvi_qf_free(f);
        return rc == AKV_ENOMEM ? rc : AKV_ECORRUPT;
    }
    return AKV_OK;
}

/* Version 1: u32 q, u32 r, u32 pbits, the five u64 counters, then 64-bit
 * words, per block occupieds, runends, [extensions,] a whole offset word
 * and r slot words, with 2^q home slots and a tail of 10·sqrt(2^q) + 64. */
static int load_v1(akvi_qf *f, const uint8_t *buf, size_t len, bool ext)
{
    akvi_rbuf r = {buf, len, 0, false};
    uint32_t q = akvi_r_u32(&r), rb = akvi_r_u32(&r), pb = akvi_r_u32(&r);
    uint64_t prefix = akvi_r_u64(&r), items = akvi_r_u64(&r), used = akvi_r_u64(&r);
    uint64_t exts = akvi_r_u64(&r), adapts = akvi_r_u64(&r);
    if (r.err || q < 6 || q > 40 || rb < 1 || rb > 32 || pb > 32 || q + rb + pb > 64)
        return AKV_ECORRUPT;
    uint64_t ns = 1ULL << q, xn = (ns + (uint64_t)(10.0 * sqrt((double)ns)) + 64 + 63) & ~63ULL;
    uint64_t mw = ext ? 3 : 2, bw = mw + 1 + rb, nb = xn / 64;
    if ((len - r.off) % 8 || (len - r.off) / 8 / bw != nb || (len - r.off) / 8 % bw)
        return AKV_ECORRUPT;
    if (qf_alloc(f, ns, rb, pb, ext, nb) != AKV_OK)
        return AKV_ECORRUPT;
    for (uint64_t b = 0; b < nb; b++) {
        uint8_t *p = blkp(f, b);
        for (uint64_t j = 0; j < mw; j++)
            st64(p + 8 * j, akvi_r_u64(&r));
        uint64_t off = akvi_r_u64(&r);
        p[8 * mw] = (uint8_t)(off < QF_OFF_SAT ? off : QF_OFF_SAT);
        for (uint64_t j = 0; j < rb; j++)
            st64(p + 8 * mw + 1 + 8 * j, akvi_r_u64(&r));
    }
    return finish_load(f, prefix, items, used, exts, adapts);
}

int akvi_qf_load(akvi_qf *f, const uint8_t *buf, size_t len, bool ext, uint16_t ver)
{
    memset(f, 0, sizeof *f);
    if (ver == 1)
        return load_v1(f, buf, len, ext);
    if (ver != 2)
        return AKV_ENOTSUP;
    akvi_rbuf r = {buf, len, 0, false};
    uint64_t ns = akvi_r_u64(&r);
    uint32_t rb = akvi_r_u32(&r), pb = akvi_r_u32(&r);
    uint64_t nb = akvi_r_u64(&r), prefix = akvi_r_u64(&r), items = akvi_r_u64(&r), used = akvi_r_u64(&r);
    uint64_t exts = akvi_r_u64(&r), adapts = akvi_r_u64(&r);
    /* Every size is checked before it is used in arithmetic: nslots is
     * bounded first, the block count must be the one nslots implies, and
     * the table must be exactly the rest of the payload. */
    if (r.err || ns < 64 || ns > (1ULL << 40) || rb < 1 || rb > 32 || pb > 32 || qbits_for(ns) + rb + pb > 64)
        return AKV_ECORRUPT;
    /* The tail is 64 + 4·sqrt(N) slots; a filter converted from version 1
     * keeps that version's longer tail (64 + 10·sqrt(N)). */
    uint64_t tb, v1_blocks = (ns + (uint64_t)(10.0 * sqrt((double)ns)) + 64 + 63) / 64;
    if (nb < akvi_qf_blocks_for(ns) || nb > v1_blocks ||
        __builtin_mul_overflow(nb, 8ULL * (ext ? 3 : 2) + 1 + 8ULL * rb, &tb) || len - r.off != tb)
        return AKV_ECORRUPT;
    if (qf_alloc(f, ns, rb, pb, ext, nb) != AKV_OK)
        return AKV_ECORRUPT;
    memcpy(f->t, buf + r.off, (size_t)tb);
    return finish_load(f, prefix, items, used, exts, adapts);
}

/* ---- build helpers ------------------------------------------------------- */

int akvi_qf_build_push(akvi_qf_build *b, akv_hash h)
{
    akv_hash *nv = akvi_grow(b->v, &b->cap, b->n + 1, sizeof *nv, 1024);
    if (!nv)
        return AKV_ENOMEM;
    b->v = nv;
    b->v[b->n++] = h;
    return AKV_OK;
}

/* LSD radix sort on hi (4 passes of 16 bits), then an insertion pass that
 * orders the rare equal-hi neighbours by lo. */
void akvi_qf_sort(akv_hash *v, size_t n)
{
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = !hash_lt(v[i], v[i - 1]);
    if (sorted)
        return;
    akv_hash *tmp = malloc(n * sizeof *tmp);
    size_t *cnt = malloc(65536 * sizeof *cnt);
    if (tmp && cnt) {
        akv_hash *src = v, *dst = tmp;
        for (int pass = 0; pass < 4; pass++) {
            int sh = 16 * pass;
            memset(cnt, 0, 65536 * sizeof *cnt);
            for (size_t i = 0; i < n; i++)
                cnt[(src[i].hi >> sh) & 0xffff]++;
            for (size_t i = 0, sum = 0; i < 65536; i++) {
                size_t c = cnt[i];
                cnt[i] = sum;
                sum += c;
            }
            for (size_t i = 0; i < n; i++)
                dst[cnt[(src[i].hi >> sh) & 0xffff]++] = src[i];
            akv_hash *t = src;
            src = dst;
            dst = t;
        }
    }
    free(tmp);
    free(cnt);
    for (size_t i = 1; i < n; i++) /* equal hi: order by lo (also the fallback) */
        for (size_t j = i; j > 0 && hash_lt(v[j], v[j - 1]); j--) {
            akv_hash t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
}

/* Largest nslots whose table fits in `bytes` (0 if not even 64 do). */
static uint64_t slots_in(double bytes, uint32_t r, bool ext)
{
    uint64_t bb = 8ULL * (ext ? 3 : 2) + 1 + 8ULL * r;
    if (!(bytes >= (double)bb) || bytes > 1e15)
        return 0;
    uint64_t blocks = (uint64_t)(bytes / (double)bb);
    if (blocks < 3)
        return 0;
    /* nslots + 64 + 4·sqrt(nslots) <= 64·blocks, then settle exactly */
    double s = 64.0 * (double)blocks - 64.0, root = sqrt(4.0 + s) - 2.0;
    uint64_t n = (uint64_t)(root * root);
    while (n > 0 && akvi_qf_blocks_for(n) > blocks)
        n--;
    while (akvi_qf_blocks_for(n + 1) <= blocks)
        n++;
    return n < 64 ? 0 : n;
}

void akvi_qf_geometry(const akv_filter_params *p, uint64_t n, bool ext, uint64_t *nslots, uint32_t *r)
{
    double lf = p->load_factor > 0 && p->load_factor <= 1 ? p->load_factor : 0.9;
    double bpk = p->bits_per_key > 0 ? p->bits_per_key : 10;
    uint32_t pb = p->prefix_bits > 32 ? 32 : p->prefix_bits;
    uint64_t ns = akvi_qf_slots_for(n, lf);
    long rr = p->remainder_bits ? (long)p->remainder_bits : (long)floor(bpk * lf - (ext ? 3.125 : 2.125));
    if (!p->remainder_bits && n > 0) {
        double budget = bpk * (double)n / 8.0;
        for (long t = 32; t >= 2; t--) {
            uint64_t m = slots_in(budget, (uint32_t)t, ext);
            if (m && (double)n <= (lf + 0.035) * (double)m && qbits_for(m) + (uint32_t)t + pb <= 64) {
                ns = m;
                rr = t;
                break;
            }
        }
    }
    long max = 64 - (long)qbits_for(ns) - (long)pb;
    if (rr > max)
        rr = max;
    if (rr > 32)
        rr = 32;
    *r = rr < 2 ? 2 : (uint32_t)rr;
    *nslots = ns;
}

int akvi_qf_build_finish(akvi_qf *f, akvi_qf_build *b, double lf)
{
    akvi_qf_sort(b->v, b->n);
    if (b->n > f->insert_limit) {
        uint64_t ns = akvi_qf_slots_for(b->n, lf);
        if ((double)b->n > 0.95 * (double)ns)
            ns = (uint64_t)((double)b->n / 0.95) + 2;
        uint32_t r = f->r, pb = f->pbits, q = qbits_for(ns);
        bool ext = f->mwords == 3;
        akvi_qf_free(f);
        int rc = akvi_qf_init_n(f, ns, r + q + pb > 64 ? 64 - q - pb : r, pb, ext);
        if (rc != AKV_OK)
            return rc;
    }
    int rc = AKV_OK;
    for (size_t i = 0; i < b->n && rc == AKV_OK; i++) {
        rc = akvi_qf_bulk_add(f, b->v[i]);
        if (rc == AKV_EINVAL) /* keys outside the shard prefix: stream order differs */
            rc = akvi_qf_insert(f, b->v[i]);
    }
    f->bl_ok = false;
    return rc;
}
