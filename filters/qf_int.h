/*
 * qf_int.h — internals shared by the quotient-filter core (qf_core.c) and
 * the operations that rewrite a filter from its records (qf_rewrite.c):
 * table accessors, fingerprint helpers, and the core's run primitives.
 * Not part of any public interface. qf_rewrite.c calls into the core; the
 * core never calls qf_rewrite.c.
 */
#ifndef AKV_QF_INT_H
#define AKV_QF_INT_H

#include <stdlib.h>
#include <string.h>

#include "filters/qf_core.h"
#include "util/bits.h"

#define QF_BAD (-2)
#define W_OCC  0
#define W_REND 1
#define W_EXT  2

/* ---- table access ---------------------------------------------------------
 *
 * The table is bytes: block b (64 slots) starts at byte b·bbytes and holds
 * the little-endian words occupieds, runends (+ extensions for aqf), then
 * one offset byte, then 64 r-bit slots packed from the low bit up. Words
 * are therefore unaligned; x86-64 and every other target the build knows
 * read them with one unaligned load. The table ends with 8 bytes of zero
 * padding so that any slot is one 8-byte load.
 *
 * A query may run while a writer changes the table (aqf's sequence lock
 * discards such an answer). Its loads are volatile, so the compiler neither
 * merges, repeats nor invents them, and every walk is bounded, so a torn
 * value can only make it retry. ThreadSanitizer builds read and write the
 * table one relaxed atomic byte at a time instead, so the tool sees the
 * race the sequence lock resolves as the atomic accesses they are. */

#if defined(__SANITIZE_THREAD__)
#define QF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define QF_TSAN 1
#endif
#endif

#ifdef QF_TSAN
static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)__atomic_load_n(p + i, __ATOMIC_RELAXED) << (8 * i);
    return v;
}
static inline void st64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        __atomic_store_n(p + i, (uint8_t)(v >> (8 * i)), __ATOMIC_RELAXED);
}
static inline uint8_t ld8(const uint8_t *p)
{
    return __atomic_load_n(p, __ATOMIC_RELAXED);
}
static inline void st8(uint8_t *p, uint8_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
}
#else
/* Not may_alias: the table is only ever read and written as bytes (char
 * access aliases anything) and as these words, so a table store cannot
 * change the filter's own fields (pointer and 32-bit), which the compiler
 * may then keep in registers across it. */
typedef uint64_t qf_u64u __attribute__((aligned(1)));
static inline uint64_t ld64(const uint8_t *p)
{
    uint64_t v = *(const volatile qf_u64u *)p;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}
static inline void st64(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    *(volatile qf_u64u *)p = v;
}
static inline uint8_t ld8(const uint8_t *p)
{
    return *(const volatile uint8_t *)p;
}
static inline void st8(uint8_t *p, uint8_t v)
{
    *(volatile uint8_t *)p = v;
}
#endif

/* A writer's own loads (insert, remove, adapt hold the writer lock, so no
 * store races them; the racing readers use ld64). Plain loads: the compiler
 * may keep, merge and fold them. */
static inline uint64_t wld64(const uint8_t *p)
{
    return akvi_load_le64(p);
}

static inline uint8_t *blkp(const akvi_qf *f, uint64_t b)
{
    return f->t + b * f->bbytes;
}
static inline uint64_t occw(const akvi_qf *f, uint64_t b)
{
    return ld64(blkp(f, b) + 8 * W_OCC);
}
static inline uint64_t rendw(const akvi_qf *f, uint64_t b)
{
    return ld64(blkp(f, b) + 8 * W_REND);
}
static inline uint64_t extw(const akvi_qf *f, uint64_t b)
{
    return f->mwords == 3 ? ld64(blkp(f, b) + 8 * W_EXT) : 0;
}
/* The stored offset byte: the true offset, or QF_OFF_SAT when it is at
 * least that (qf_core.c's block_offset computes it then). */
#define QF_OFF_SAT 255u
static inline uint64_t offb(const akvi_qf *f, uint64_t b)
{
    return ld8(blkp(f, b) + 8 * f->mwords);
}
static inline void set_off(akvi_qf *f, uint64_t b, uint64_t v)
{
    st8(blkp(f, b) + 8 * f->mwords, (uint8_t)(v < QF_OFF_SAT ? v : QF_OFF_SAT));
}
/* One more slot of earlier runs at the start of block b. */
static inline void inc_off(akvi_qf *f, uint64_t b)
{
    uint64_t o = offb(f, b);
    if (o < QF_OFF_SAT)
        set_off(f, b, o + 1);
}
/* r is 1..32 (qf_alloc refuses any other), so the shift is defined. */
static inline uint64_t rmask(uint32_t r)
{
    return (1ULL << r) - 1;
}

static inline bool bit_get(const akvi_qf *f, int which, uint64_t i)
{
    if (which == W_EXT && f->mwords == 2)
        return false;
    return (ld64(blkp(f, i >> 6) + 8 * which) >> (i & 63)) & 1;
}

static inline void bit_put(akvi_qf *f, int which, uint64_t i, bool v)
{
    if (which == W_EXT && f->mwords == 2)
        return;
    uint8_t *p = blkp(f, i >> 6) + 8 * which;
    uint64_t m = 1ULL << (i & 63), x = ld64(p);
    st64(p, v ? x | m : x & ~m);
}

static inline const uint8_t *slot_base(const akvi_qf *f, uint64_t b)
{
    return blkp(f, b) + 8 * f->mwords + 1;
}

static inline uint64_t slot_get(const akvi_qf *f, uint64_t i)
{
    uint64_t bit = (i & 63) * f->r;
    return (ld64(slot_base(f, i >> 6) + (bit >> 3)) >> (bit & 7)) & rmask(f->r);
}

static inline void slot_set(akvi_qf *f, uint64_t i, uint64_t v)
{
    uint64_t bit = (i & 63) * f->r;
    uint8_t *p = (uint8_t *)slot_base(f, i >> 6) + (bit >> 3);
    uint64_t m = rmask(f->r) << (bit & 7);
    st64(p, (ld64(p) & ~m) | ((v << (bit & 7)) & m));
}

/* ---- 128-bit fingerprint helpers --------------------------------------- */

static inline akvi_u128 mask128(unsigned len)
{
    return len == 0 ? 0 : ~(akvi_u128)0 << (128 - len);
}
static inline unsigned fp_len(const akvi_qf *f, uint32_t k)
{
    return f->q + f->r + k * f->r;
}
static inline bool fp_prefix_of(const akvi_qf *f, akvi_qf_fp fp, akvi_u128 x)
{
    return ((fp.s ^ x) & mask128(fp_len(f, fp.k))) == 0;
}
static inline akvi_qf_fp make_fp(const akvi_qf *f, akvi_u128 x, uint32_t k)
{
    return (akvi_qf_fp){x & mask128(fp_len(f, k)), k};
}
static inline unsigned lcp128(akvi_u128 a, akvi_u128 b)
{
    akvi_u128 d = a ^ b;
    uint64_t hi = (uint64_t)(d >> 64), lo = (uint64_t)d;
    if (hi)
        return (unsigned)__builtin_clzll(hi);
    return lo ? 64 + (unsigned)__builtin_clzll(lo) : 128;
}
/* Fewest extension chunks whose fingerprint is longer than `lcp` bits. */
static inline uint32_t chunks_for(const akvi_qf *f, unsigned lcp)
{
    return lcp < f->q + f->r ? 0 : (lcp - f->q - f->r) / f->r + 1;
}
static inline uint64_t quo_of(const akvi_qf *f, akvi_u128 x)
{
    return (uint64_t)(x >> (128 - f->q));
}
static inline uint64_t rem_of(const akvi_qf *f, akvi_u128 x)
{
    return (uint64_t)(x >> (128 - f->q - f->r)) & rmask(f->r);
}
static inline uint64_t chunk_of(const akvi_qf *f, akvi_u128 x, uint32_t j)
{
    return (uint64_t)(x >> (128 - fp_len(f, j))) & rmask(f->r);
}
static inline akvi_u128 mid_of(const akvi_qf *f, akvi_u128 x)
{
    return x & mask128(f->q + f->r);
}

static inline bool hash_lt(akv_hash a, akv_hash b)
{
    return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

typedef struct fpvec {
    akvi_qf_fp *v;
    size_t n, cap;
    akvi_qf_fp small[16];
} fpvec;

static inline void fv_init(fpvec *v)
{
    v->v = v->small;
    v->n = 0;
    v->cap = 16;
}
static inline void fv_free(fpvec *v)
{
    if (v->v != v->small)
        free(v->v);
}
static inline int fv_push(fpvec *v, akvi_qf_fp fp)
{
    if (v->n == v->cap) {
        size_t nc = v->cap * 2;
        akvi_qf_fp *nv = malloc(nc * sizeof *nv);
        if (!nv)
            return AKV_ENOMEM;
        memcpy(nv, v->v, v->n * sizeof *nv);
        fv_free(v);
        v->v = nv;
        v->cap = nc;
    }
    v->v[v->n++] = fp;
    return AKV_OK;
}
static inline int fv_insert(fpvec *v, size_t at, akvi_qf_fp fp)
{
    int rc = fv_push(v, fp);
    if (rc == AKV_OK) {
        memmove(v->v + at + 1, v->v + at, (v->n - 1 - at) * sizeof *v->v);
        v->v[at] = fp;
    }
    return rc;
}

typedef struct owners {
    akv_hash *v;
    size_t n, cap;
} owners;

static inline int owners_push(void *arg, akv_hash h)
{
    owners *o = arg;
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 16;
        akv_hash *nv = realloc(o->v, nc * sizeof *nv);
        if (!nv)
            return AKV_ENOMEM;
        o->v = nv;
        o->cap = nc;
    }
    o->v[o->n++] = h;
    return 0;
}

/* Sequential reader over runs (canonical layout: run at max(home, cur)). */
typedef struct reader {
    const akvi_qf *f;
    uint64_t next, cur;
} reader;

/* ---- core primitives used by qf_rewrite.c -------------------------------- */

/* Start and length (0 when empty) of the run of `home`, and its records. */
int akvi_qfi_load_run(const akvi_qf *f, uint64_t home, uint64_t *s, uint64_t *len, fpvec *out);
/* Replace the run of `home` (at slot s, old_len slots) with fps[0..n). */
int akvi_qfi_replace_run(akvi_qf *f, uint64_t home, uint64_t s, uint64_t old_len, const akvi_qf_fp *fps,
                         size_t n);
/* Restore invariant N among records whose owners (streams) are known. */
void akvi_qfi_fix_nesting(const akvi_qf *f, akvi_qf_fp *fp, const akvi_u128 *own, size_t n);
/* The minirun of x inside a decoded run: [*a, *b). */
void akvi_qfi_minirun_range(const akvi_qf *f, const fpvec *run, akvi_u128 x, size_t *a, size_t *b);
/* Owners of the minirun [a, b) of h from the reverse map, as streams. */
int akvi_qfi_minirun_owners(const akvi_qf *f, akv_hash h, const fpvec *run, size_t a, size_t b,
                            akv_revmap *rm, owners *o, akvi_u128 **streams);
uint64_t akvi_qfi_ext_total(const akvi_qf_fp *fps, size_t n);
/* Append one record after everything written so far (ascending order). */
int akvi_qfi_emit(akvi_qf *f, uint64_t home, akvi_qf_fp fp);
/* Next occupied home at or after *h. */
bool akvi_qfi_next_home(const akvi_qf *f, uint64_t *h);
/* Next run's records into out (cleared); AKV_NOTFOUND at the end. */
int akvi_qfi_read_next_run(reader *rd, uint64_t *home, fpvec *out);

#endif
