/*
 * qf_nav.h — rank/select navigation, lookup and the one-slot insert of the
 * quotient-filter core, written once and compiled twice by qf_core.c (a
 * portable build and, on x86-64, a POPCNT/BMI2 build chosen at run time).
 * QF_FN(name) names this build's copy; QF_HW is defined in the hardware
 * build. Include only from qf_core.c.
 */
#include "filters/qf_int.h"

#ifndef QF_FN /* read on its own (static analysis): one portable copy */
#define QF_FN(name) name##_g
#endif

static inline uint64_t QF_FN(pop64)(uint64_t x)
{
#ifdef QF_HW
    return (uint64_t)__builtin_popcountll(x);
#else
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (x * 0x0101010101010101ULL) >> 56;
#endif
}

/* Position of the k-th (from 0) set bit of w; w has more than k. */
static inline uint64_t QF_FN(select64)(uint64_t w, uint64_t k)
{
#ifdef QF_HW
    return (uint64_t)__builtin_ctzll(__builtin_ia32_pdep_di(1ULL << k, w));
#else
    /* running popcounts per byte find the byte, then clear bits in it */
    uint64_t x = w - ((w >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    uint64_t cum = x * 0x0101010101010101ULL;
    unsigned byte = 0;
    while (byte < 7 && ((cum >> (8 * byte)) & 0xff) <= k)
        byte++;
    uint64_t before = byte ? (cum >> (8 * (byte - 1))) & 0xff : 0;
    uint64_t b = (w >> (8 * byte)) & 0xff;
    for (k -= before; k; k--)
        b &= b - 1;
    return 8 * byte + (uint64_t)__builtin_ctzll(b | 0x100);
#endif
}

/* Start loading every cache line of block b (97 bytes at r = 9: two or
 * three lines). A lookup or insert then reads the block's occupieds, offset,
 * runends and slots one after another, each load waiting on the one before;
 * with the lines already on their way their misses overlap instead. */
static inline void QF_FN(prefetch_block)(const akvi_qf *f, uint64_t b, int write)
{
    const uint8_t *p = blkp(f, b);
    if (write) {
        __builtin_prefetch(p, 1);
        __builtin_prefetch(p + 64, 1);
        __builtin_prefetch(p + f->bbytes - 1, 1);
    } else {
        __builtin_prefetch(p);
        __builtin_prefetch(p + 64);
        __builtin_prefetch(p + f->bbytes - 1);
    }
}

/* Last slot of the record whose remainder is at e (skips extension slots). */
static __attribute__((noinline)) int64_t QF_FN(rec_end)(const akvi_qf *f, uint64_t e)
{
    if (f->mwords == 2)
        return (int64_t)e;
    uint64_t t = e + 1;
    while (t < f->xnslots) {
        uint64_t b = t >> 6, sh = t & 63;
        uint64_t x = (extw(f, b) & ~rendw(f, b)) >> sh;
        uint64_t ones = ~x ? (uint64_t)__builtin_ctzll(~x) : 64;
        if (ones > 64 - sh)
            ones = 64 - sh;
        t += ones;
        if (ones < 64 - sh)
            break;
    }
    return (int64_t)t - 1;
}

/* End of the rank-th run end at or after pos (rank >= 1). */
static inline __attribute__((always_inline)) int64_t QF_FN(select_end)(const akvi_qf *f, uint64_t pos,
                                                                       uint64_t rank)
{
    uint64_t b = pos >> 6, sh = pos & 63;
    while (b < f->nblocks) {
        uint64_t w = rendw(f, b) & ~extw(f, b);
        w &= ~0ULL << sh;
        uint64_t c = QF_FN(pop64)(w);
        if (c >= rank) {
            uint64_t e = b * 64 + QF_FN(select64)(w, rank - 1);
            /* usually the run's last record has no extension: skip the search */
            return e + 1 < f->xnslots && bit_get(f, W_EXT, e + 1) ? QF_FN(rec_end)(f, e) : (int64_t)e;
        }
        rank -= c;
        b++;
        sh = 0;
    }
    return QF_BAD;
}

/* Last slot used by the runs whose home is <= i (below i when none reach
 * i), given the offset of i's block. */
static inline __attribute__((always_inline)) int64_t QF_FN(last_used_off)(const akvi_qf *f, uint64_t i,
                                                                          uint64_t off)
{
    uint64_t b = i >> 6, bi = i & 63;
    uint64_t m = bi == 63 ? ~0ULL : (2ULL << bi) - 1;
    uint64_t rank = QF_FN(pop64)(occw(f, b) & m);
    if (off > f->xnslots)
        return QF_BAD;
    if (rank == 0)
        return (int64_t)(b * 64 + off) - 1;
    return QF_FN(select_end)(f, b * 64 + off, rank);
}

/* The offset of a block whose byte is saturated: recomputed forward from
 * the nearest earlier block whose byte is exact (block 0's always is). */
static __attribute__((noinline)) int64_t QF_FN(block_off_sat)(const akvi_qf *f, uint64_t b)
{
    uint64_t a = b;
    while (a > 0 && offb(f, a) >= QF_OFF_SAT)
        a--;
    uint64_t o = offb(f, a);
    if (o >= QF_OFF_SAT)
        return QF_BAD;
    for (; a < b; a++) {
        int64_t e = QF_FN(last_used_off)(f, a * 64 + 63, o);
        if (e == QF_BAD)
            return QF_BAD;
        uint64_t base = (a + 1) * 64;
        o = e + 1 > (int64_t)base ? (uint64_t)(e + 1) - base : 0;
    }
    return (int64_t)o;
}

/* The offset of block b. */
static inline __attribute__((always_inline)) int64_t QF_FN(block_off)(const akvi_qf *f, uint64_t b)
{
    uint64_t o = offb(f, b);
    if (__builtin_expect(o < QF_OFF_SAT, 1))
        return (int64_t)o;
    return QF_FN(block_off_sat)(f, b);
}

/* Last slot used by the runs whose home is <= i (below i when none reach
 * i). Uses the block offset, so no cluster walk. */
static inline int64_t QF_FN(last_used)(const akvi_qf *f, uint64_t i)
{
    int64_t off = QF_FN(block_off)(f, i >> 6);
    return off < 0 ? QF_BAD : QF_FN(last_used_off)(f, i, (uint64_t)off);
}

/* First slot of the run of `home` (where it would start when empty).
 * Always inlined into lookup and insert, whose one call per operation it
 * is; the slow paths reach it through run_start. */
static inline __attribute__((always_inline)) int64_t QF_FN(run_start_in)(const akvi_qf *f, uint64_t home)
{
    if (home == 0)
        return 0;
    int64_t off = QF_FN(block_off)(f, (home - 1) >> 6);
    int64_t e = off < 0 ? QF_BAD : QF_FN(last_used_off)(f, home - 1, (uint64_t)off);
    if (e == QF_BAD)
        return QF_BAD;
    return e + 1 > (int64_t)home ? e + 1 : (int64_t)home;
}

static inline int64_t QF_FN(run_start)(const akvi_qf *f, uint64_t home)
{
    return QF_FN(run_start_in)(f, home);
}

/* First empty slot at or after i (xnslots when none). One block at a time,
 * without select: an extension slot is used; otherwise every record whose
 * run-end mark lies before i also ends before i (its extension slots would
 * reach i), so t = the runs with a home in block b up to i that have not
 * ended before i (occupieds up to i minus run ends in [offset, i)), plus
 * the slots of earlier runs still ahead when the block's offset reaches
 * past i. Each of those runs needs a slot at or after i, so slots
 * [i, i + t) are used; t = 0 means slot i is free (every run with a home
 * <= i ended before it). */
static inline __attribute__((always_inline)) int64_t QF_FN(first_empty_m)(const akvi_qf *f, uint64_t i,
                                                                          const uint64_t mw)
{
    /* a writer's search: plain loads (wld64), the geometry in locals; mw
     * is f->mwords, a constant where the insert is built per layout */
    const uint64_t bb = f->bbytes, xn = f->xnslots;
    const uint8_t *const t = f->t;
    while (i < xn) {
        const uint64_t b = i >> 6, j = i & 63;
        const uint8_t *bp = t + b * bb;
        const uint64_t ew = mw == 3 ? wld64(bp + 8 * W_EXT) : 0, ext = ew >> j;
        if (ext & 1) { /* an extension slot is used: skip the record's others */
            uint64_t n = ~ext ? (uint64_t)__builtin_ctzll(~ext) : 64 - j;
            i += n < 64 - j ? n : 64 - j;
            continue;
        }
        int64_t off = bp[8 * mw];
        if (__builtin_expect(off >= QF_OFF_SAT, 0))
            off = QF_FN(block_off_sat)(f, b);
        if (off < 0)
            return QF_BAD;
        uint64_t occ = QF_FN(pop64)(wld64(bp + 8 * W_OCC) & (~0ULL >> (63 - j))), n;
        if ((uint64_t)off > j) {
            n = (uint64_t)off - j + occ;
        } else {
            uint64_t ends = wld64(bp + 8 * W_REND) & ~ew & ((1ULL << j) - 1) & (~0ULL << off);
            uint64_t e = QF_FN(pop64)(ends);
            if (e > occ)
                return QF_BAD;
            n = occ - e;
        }
        if (n == 0)
            return (int64_t)i;
        i += n;
    }
    return (int64_t)xn;
}

static inline int64_t QF_FN(first_empty)(const akvi_qf *f, uint64_t i)
{
    return QF_FN(first_empty_m)(f, i, f->mwords);
}

/* ---- query --------------------------------------------------------------- */

static __attribute__((noinline)) bool QF_FN(ext_match)(const akvi_qf *f, uint64_t i, uint64_t k, akv_hash h)
{
    akvi_u128 x = akvi_qf_stream(f, h);
    for (uint32_t j = 1; j <= k; j++)
        if (slot_get(f, i + j) != chunk_of(f, x, j))
            return false;
    return true;
}

/* The walk of an occupied home's run (kept out of lookup so that the
 * common "home not occupied" answer needs no stack frame). */
static __attribute__((noinline)) int QF_FN(lookup_run)(const akvi_qf *f, akv_hash h, uint64_t quo,
                                                       uint64_t rem)
{
    int64_t s = QF_FN(run_start_in)(f, quo);
    if (s < 0)
        return -1;
    /* Walk the run: records are sorted, so stop at the first larger one.
     * A block's runend and extension words are read once. */
    const uint64_t r = f->r, m = rmask(f->r);
    const bool aqf = f->mwords == 3;
    uint64_t cb = ~0ULL, rw = 0, ew = 0;
    const uint8_t *sb = NULL;
    for (uint64_t i = (uint64_t)s;;) {
        if (i >= f->xnslots)
            return -1;
        uint64_t bi = i & 63;
        if ((i >> 6) != cb) {
            cb = i >> 6;
            const uint8_t *bp = blkp(f, cb);
            rw = ld64(bp + 8 * W_REND);
            ew = aqf ? ld64(bp + 8 * W_EXT) : 0;
            sb = bp + 8 * f->mwords + 1;
        }
        uint64_t bit = bi * r;
        uint64_t v = (ld64(sb + (bit >> 3)) >> (bit & 7)) & m;
        /* most records have no extension: one bit test instead of rec_end */
        bool more = aqf && (bi < 63 ? (ew >> (bi + 1)) & 1 : i + 1 < f->xnslots && bit_get(f, W_EXT, i + 1));
        uint64_t e = more ? (uint64_t)QF_FN(rec_end)(f, i) : i;
        if (e - i > f->max_ext)
            return -1;
        if (v == rem) {
            if (e == i || QF_FN(ext_match)(f, i, e - i, h))
                return 1;
        } else if (v > rem) {
            return 0;
        }
        if ((rw >> bi) & 1)
            return 0;
        i = e + 1;
    }
}

static int QF_FN(lookup)(const akvi_qf *f, akv_hash h)
{
    uint64_t quo, rem;
    akvi_qf_qr(f, h, &quo, &rem);
    QF_FN(prefetch_block)(f, quo >> 6, 0);
    if (!((occw(f, quo >> 6) >> (quo & 63)) & 1))
        return 0;
    return QF_FN(lookup_run)(f, h, quo, rem);
}

/* Open one blank slot at p: slots [p, e) move up by one (values, runend
 * and extension bits); e is the first empty slot at or after p. Block by
 * block from the top, and inside a block a word at a time: a block's
 * 64 r-bit slots are r words, so slot j's bits move up by r, and a later
 * block's slot 0 takes the top r bits of the block before (the previous
 * block's words are read before they change). Offsets of the blocks after
 * home's up to e's grow by one. */
static inline __attribute__((always_inline)) void QF_FN(open_slot)(akvi_qf *f, uint64_t home, uint64_t p,
                                                                   uint64_t e, const uint64_t mw)
{
    const uint64_t r = f->r, bb = f->bbytes, pb = p >> 6, eb = e >> 6;
    uint8_t *const t = f->t;
    for (uint64_t b = eb; e > p && b >= pb; b--) {
        /* destination slots [dlo, dhi] of block b */
        const uint64_t dlo = b == pb ? (p & 63) + 1 : 0, dhi = b == eb ? (e & 63) : 63;
        if (dlo > dhi) /* p is block pb's last slot: nothing moves inside it */
            break;
        const bool carry = b > pb;
        uint8_t *bp = t + b * bb, *base = bp + 8 * mw + 1;
        const uint8_t *pp = carry ? bp - bb : bp; /* block b - 1, read only when carry */
        /* the slot bits [lo, hi) take the bits r below them */
        const uint64_t lo = dlo * r, hi = (dhi + 1) * r, k0 = lo >> 6;
        uint64_t k = (hi - 1) >> 6, w = wld64(base + 8 * k);
        uint64_t m = ~0ULL >> (64 * (k + 1) - hi); /* hi - 64k is 1..64 */
        for (;;) {
            uint64_t below = k > 0   ? wld64(base + 8 * (k - 1))
                             : carry ? wld64(pp + 8 * mw + 1 + 8 * (r - 1))
                                     : 0;
            if (k == k0)
                m &= ~0ULL << (lo & 63);
            st64(base + 8 * k, (w & ~m) | (((w << r) | (below >> (64 - r))) & m));
            if (k == k0)
                break;
            k--;
            w = below;
            m = ~0ULL;
        }
        /* run-end and extension bits [dlo, dhi] take their lower neighbours */
        const uint64_t bm = (~0ULL >> (63 - dhi)) & (~0ULL << dlo);
        uint64_t rw = wld64(bp + 8 * W_REND);
        uint64_t nr = (rw & ~bm) | ((rw << 1) & bm);
        if (carry)
            nr |= wld64(pp + 8 * W_REND) >> 63;
        st64(bp + 8 * W_REND, nr);
        if (mw == 3) {
            uint64_t ew = wld64(bp + 8 * W_EXT), cin = carry ? wld64(pp + 8 * W_EXT) >> 63 : 0;
            if (ew | cin) /* all zero (no extended record near): nothing moves */
                st64(bp + 8 * W_EXT, (ew & ~bm) | ((ew << 1) & bm) | cin);
        }
        if (b == pb)
            break;
    }
    for (uint64_t b = (home >> 6) + 1; b <= eb; b++)
        inc_off(f, b);
}

/* The writer's store of value v (below 2^r) into slot bi of the block at
 * bp (mw: the layout's metadata words). */
static inline void QF_FN(wslot_set)(uint8_t *bp, uint64_t bi, uint64_t v, uint64_t r, uint64_t mw)
{
    const uint64_t bit = bi * r, m = rmask((uint32_t)r) << (bit & 7);
    uint8_t *p = bp + 8 * mw + 1 + (bit >> 3);
    st64(p, (wld64(p) & ~m) | ((v << (bit & 7)) & m));
}

/* The writer's select_end (plain loads, the geometry in locals): the end
 * of the rank-th run end at or after pos (rank >= 1). */
static inline __attribute__((always_inline)) int64_t QF_FN(wselect_end)(const akvi_qf *f, uint64_t pos,
                                                                        uint64_t rank, const uint64_t mw)
{
    const uint64_t bb = f->bbytes, nb = f->nblocks, xn = f->xnslots;
    const bool aqf = mw == 3;
    const uint8_t *const t = f->t;
    for (uint64_t b = pos >> 6, sh = pos & 63; b < nb; b++, sh = 0) {
        const uint8_t *bp = t + b * bb;
        const uint64_t ew = aqf ? wld64(bp + 8 * W_EXT) : 0;
        const uint64_t w = wld64(bp + 8 * W_REND) & ~ew & (~0ULL << sh), c = QF_FN(pop64)(w);
        if (c >= rank) {
            const uint64_t bi = QF_FN(select64)(w, rank - 1), e = b * 64 + bi;
            /* usually the run's last record has no extension: skip the search */
            const bool more =
                aqf && (bi < 63 ? (ew >> (bi + 1)) & 1 : e + 1 < xn && (wld64(bp + bb + 8 * W_EXT) & 1));
            return more ? QF_FN(rec_end)(f, e) : (int64_t)e;
        }
        rank -= c;
    }
    return QF_BAD;
}

/* Insert a key (f->insert_fn). A record that is one bare slot (no
 * extension) — every key but one joining a minirun whose records were
 * adapted — is inserted in place; that one goes to qf_insert_general.
 *
 * The run start comes from home's own block: its offset is where the runs
 * of earlier blocks end, and the runs with a home in the block before home
 * end at the rank-th run end after that. The walk keeps the current
 * block's run-end and extension words. The loads are the writer's own
 * (wld64, see qf_int.h): the writer lock is held. */
static inline __attribute__((always_inline)) int QF_FN(insert_m)(akvi_qf *f, akv_hash h, const uint64_t mw)
{
    uint64_t home, rem;
    akvi_qf_qr(f, h, &home, &rem);
    const uint64_t bb = f->bbytes, hb = home >> 6, hi = home & 63;
    uint8_t *const t = f->t, *const hp = t + hb * bb;
    QF_FN(prefetch_block)(f, hb, 1);
    /* at 90 % fill the run or the shift often crosses into the next block */
    QF_FN(prefetch_block)(f, hb + 1, 1);
    const uint64_t r = f->r, xn = f->xnslots, rm = rmask(f->r);
    const bool aqf = mw == 3;
    const uint64_t occw_h = wld64(hp + 8 * W_OCC);
    const bool occ = (occw_h >> hi) & 1;
    int64_t off = hp[8 * mw];
    if (__builtin_expect(off >= QF_OFF_SAT, 0))
        off = QF_FN(block_off_sat)(f, hb);
    if (off < 0 || (uint64_t)off > xn)
        return AKV_ECORRUPT;
    uint64_t s = hb * 64 + (uint64_t)off;
    const uint64_t rank = QF_FN(pop64)(occw_h & ((1ULL << hi) - 1));
    if (rank) {
        int64_t e = QF_FN(wselect_end)(f, s, rank, mw);
        if (e < 0)
            return AKV_ECORRUPT;
        s = (uint64_t)e + 1;
    }
    if (s < home)
        s = home;
    if (f->used + 1 > f->insert_limit)
        return AKV_EFULL;
    if (!occ && s == home) {
        /* an unoccupied home whose run would start at home is a free slot:
         * no earlier run reaches it, no later one starts before its own home */
        QF_FN(wslot_set)(hp, hi, rem, r, mw);
        uint64_t bit = 1ULL << hi;
        st64(hp + 8 * W_REND, wld64(hp + 8 * W_REND) | bit);
        if (aqf)
            st64(hp + 8 * W_EXT, wld64(hp + 8 * W_EXT) & ~bit);
        st64(hp + 8 * W_OCC, occw_h | bit);
    } else {
        uint64_t p = s;
        bool rend_new = true;    /* the new slot ends the run */
        int64_t clear_rend = -1; /* the old last record's remainder slot */
        if (occ) {
            uint64_t cb = ~0ULL, rw = 0, ew = 0;
            const uint8_t *bp = NULL, *sb = NULL;
            for (uint64_t i = s;;) {
                if (i >= xn)
                    return AKV_ECORRUPT;
                const uint64_t bi = i & 63;
                if ((i >> 6) != cb) {
                    cb = i >> 6;
                    bp = t + cb * bb;
                    rw = wld64(bp + 8 * W_REND);
                    ew = aqf ? wld64(bp + 8 * W_EXT) : 0;
                    sb = bp + 8 * mw + 1;
                }
                const uint64_t bit = bi * r, v = (wld64(sb + (bit >> 3)) >> (bit & 7)) & rm;
                if (v >= rem) {
                    /* the minirun: a bare copy of matching bare records goes
                     * in front of them; any extension means the general path */
                    for (uint64_t j = i; v == rem; j++) {
                        if (j + 1 < xn && bit_get(f, W_EXT, j + 1))
                            return qf_insert_general(f, h);
                        if (bit_get(f, W_REND, j) || j + 1 >= xn || slot_get(f, j + 1) != rem)
                            break;
                    }
                    p = i;
                    rend_new = false;
                    break;
                }
                /* does an extension slot follow (the record is longer)? */
                const bool more =
                    aqf && (bi < 63 ? (ew >> (bi + 1)) & 1 : i + 1 < xn && (wld64(bp + bb + 8 * W_EXT) & 1));
                const uint64_t e = more ? (uint64_t)QF_FN(rec_end)(f, i) : i;
                if ((rw >> bi) & 1) {
                    p = e + 1;
                    clear_rend = (int64_t)i;
                    break;
                }
                i = e + 1;
            }
        }
        const int64_t e = QF_FN(first_empty_m)(f, p, mw);
        if (e < 0)
            return AKV_ECORRUPT;
        if ((uint64_t)e >= xn)
            return AKV_EFULL;
        QF_FN(open_slot)(f, home, p, (uint64_t)e, mw);
        /* the new record: its slot, no extension, the run end where it
         * ends the run (then the old last record no longer does) */
        uint8_t *pp = t + (p >> 6) * bb;
        const uint64_t pbit = 1ULL << (p & 63);
        QF_FN(wslot_set)(pp, p & 63, rem, r, mw);
        if (mw == 3)
            st64(pp + 8 * W_EXT, wld64(pp + 8 * W_EXT) & ~pbit);
        uint64_t rw = wld64(pp + 8 * W_REND);
        rw = rend_new ? rw | pbit : rw & ~pbit;
        if (clear_rend >= 0 && (uint64_t)clear_rend >> 6 == p >> 6) {
            rw &= ~(1ULL << (clear_rend & 63));
            clear_rend = -1;
        }
        st64(pp + 8 * W_REND, rw);
        if (clear_rend >= 0)
            bit_put(f, W_REND, (uint64_t)clear_rend, false);
        if (!occ)
            st64(hp + 8 * W_OCC, wld64(hp + 8 * W_OCC) | (1ULL << hi));
    }
    note_prefix(f, h);
    f->used++;
    f->nitems++;
    f->bl_ok = false;
    return AKV_OK;
}

/* The insert built once per layout (f->insert_fn): a QF's blocks have no
 * extension word, an AQF's do. */
static int QF_FN(insert_qf)(akvi_qf *f, akv_hash h)
{
    return QF_FN(insert_m)(f, h, 2);
}

static int QF_FN(insert_aqf)(akvi_qf *f, akv_hash h)
{
    return QF_FN(insert_m)(f, h, 3);
}
