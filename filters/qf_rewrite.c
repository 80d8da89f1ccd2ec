/*
 * qf_rewrite.c — operations that rewrite a quotient filter from its records,
 * reached only from tools and tests (filters/aqf.h): merge without keys,
 * rebuild with the reverse map (resize, exact merge), and exact removal by
 * rank with optional shortening. They use the core's run primitives
 * (qf_int.h); the core never calls this file.
 */
#include <stdlib.h>
#include <string.h>

#include "filters/qf_int.h"
#include "filters/qf_rewrite.h"
#include "revmap/revmap.h"
#include "util/order.h"
#include "util/grow.h"

/* Shortest extension counts that keep record i apart from every other owner
 * and from the deleted key, never longer than it was. */
static void shorten_minirun(const akvi_qf *f, akvi_qf_fp *fp, const akvi_u128 *own, size_t n, akvi_u128 gone)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t need = chunks_for(f, lcp128(own[i], gone));
        for (size_t j = 0; j < n; j++)
            if (j != i) {
                uint32_t c = chunks_for(f, lcp128(own[i], own[j]));
                need = c > need ? c : need;
            }
        if (need < fp[i].k)
            fp[i] = make_fp(f, own[i], need);
    }
    akvi_qfi_fix_nesting(f, fp, own, n);
}

int akvi_qf_remove_exact(akvi_qf *f, akv_hash h, akv_revmap *rm, bool shorten)
{
    if (!rm)
        return AKV_EINVAL;
    akvi_u128 x = akvi_qf_stream(f, h);
    uint64_t home = quo_of(f, x), s, len;
    fpvec run;
    fv_init(&run);
    owners o = {0};
    akvi_u128 *own = NULL;
    size_t a = 0, b = 0, t = 0;
    int rc = akvi_qfi_load_run(f, home, &s, &len, &run);
    if (rc == AKV_OK)
        akvi_qfi_minirun_range(f, &run, x, &a, &b);
    if (rc == AKV_OK && a == b)
        rc = AKV_NOTFOUND;
    if (rc == AKV_OK)
        rc = akvi_qfi_minirun_owners(f, h, &run, a, b, rm, &o, &own);
    while (rc == AKV_OK && t < o.n && (o.v[t].hi != h.hi || o.v[t].lo != h.lo))
        t++;
    if (rc == AKV_OK && t == o.n)
        rc = AKV_NOTFOUND;
    uint64_t old_ext = rc == AKV_OK ? akvi_qfi_ext_total(run.v + a, b - a) : 0;
    if (rc == AKV_OK) {
        memmove(run.v + a + t, run.v + a + t + 1, (run.n - a - t - 1) * sizeof *run.v);
        memmove(own + t, own + t + 1, (o.n - t - 1) * sizeof *own);
        run.n--;
        b--;
        if (shorten)
            shorten_minirun(f, run.v + a, own, b - a, x);
        rc = akvi_qfi_replace_run(f, home, s, len, run.v, run.n);
    }
    if (rc == AKV_OK) {
        f->ext_slots -= old_ext - akvi_qfi_ext_total(run.v + a, b - a);
        f->nitems--;
    }
    free(own);
    free(o.v);
    fv_free(&run);
    return rc;
}

static int cmp_fp(const void *pa, const void *pb)
{
    const akvi_qf_fp *a = pa, *b = pb;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    return (a->k > b->k) - (a->k < b->k);
}

/* Re-split fingerprints for out's (q, r) keeping their bits (never more
 * than they have), then cut every record back to the shortest fingerprint
 * of its minirun that is its prefix: this restores N without owners. */
static void canon_no_owners(const akvi_qf *out, akvi_qf_fp *v, size_t n, const akvi_qf *in)
{
    for (size_t i = 0; i < n; i++) {
        unsigned bits = fp_len(in, v[i].k);
        uint32_t k = (bits - out->q - out->r) / out->r;
        v[i] = make_fp(out, v[i].s, k < out->max_ext ? k : out->max_ext);
    }
    for (size_t i = 0; i < n; i++) {
        akvi_qf_fp best = v[i];
        for (size_t j = 0; j < n; j++)
            if (v[j].k < best.k && fp_prefix_of(out, v[j], v[i].s))
                best = v[j];
        v[i] = best;
    }
    akvi_sort(v, n, sizeof *v, cmp_fp);
}

static int emit_all(akvi_qf *out, const akvi_qf_fp *v, size_t n)
{
    int rc = AKV_OK;
    for (size_t i = 0; i < n && rc == AKV_OK; i++)
        rc = akvi_qfi_emit(out, quo_of(out, v[i].s), v[i]);
    return rc;
}

/* The records of one home from both inputs, in fingerprint order. */
static int merge_sorted(fpvec *all, const fpvec *x, const fpvec *y, bool *ext)
{
    size_t i = 0, j = 0, nx = x ? x->n : 0, ny = y ? y->n : 0;
    int rc = AKV_OK;
    all->n = 0;
    while (rc == AKV_OK && (i < nx || j < ny)) {
        bool tx = j >= ny || (i < nx && cmp_fp(&x->v[i], &y->v[j]) <= 0);
        akvi_qf_fp fp = tx ? x->v[i++] : y->v[j++];
        *ext |= fp.k > 0;
        rc = fv_push(all, fp);
    }
    return rc;
}

int akvi_qf_merge(const akvi_qf *a, const akvi_qf *b, akvi_qf *out)
{
    if (a->q != b->q || a->r != b->r || a->pbits != b->pbits || out->pbits != a->pbits || out->nitems ||
        a->nslots != b->nslots || out->q < a->q || out->q + out->r != a->q + a->r ||
        out->nslots != a->nslots << (out->q - a->q) || out->mwords < a->mwords || out->mwords < b->mwords)
        return AKV_EINVAL;
    reader ra = {a, 0, 0}, rb = {b, 0, 0};
    fpvec va, vb, all;
    fv_init(&va), fv_init(&vb), fv_init(&all);
    uint64_t ha = 0, hb = 0;
    int rca = akvi_qfi_read_next_run(&ra, &ha, &va), rcb = akvi_qfi_read_next_run(&rb, &hb, &vb), rc = AKV_OK;
    while (rc == AKV_OK && (rca == AKV_OK || rcb == AKV_OK)) {
        /* One home of the inputs at a time; its records go out in order. */
        uint64_t h = rca != AKV_OK ? hb : rcb != AKV_OK ? ha : (ha < hb ? ha : hb);
        bool ext = false;
        rc = merge_sorted(&all, rca == AKV_OK && ha == h ? &va : NULL, rcb == AKV_OK && hb == h ? &vb : NULL,
                          &ext);
        if (rca == AKV_OK && ha == h)
            rca = akvi_qfi_read_next_run(&ra, &ha, &va);
        if (rcb == AKV_OK && hb == h)
            rcb = akvi_qfi_read_next_run(&rb, &hb, &vb);
        /* Bare records are already canonical (identical or incomparable):
         * only runs holding extensions need the cut-back pass. */
        if (rc == AKV_OK && ext)
            canon_no_owners(out, all.v, all.n, a);
        if (rc == AKV_OK)
            rc = emit_all(out, all.v, all.n);
    }
    if (rc == AKV_OK && ((rca != AKV_OK && rca != AKV_NOTFOUND) || (rcb != AKV_OK && rcb != AKV_NOTFOUND)))
        rc = AKV_ECORRUPT;
    if (rc == AKV_OK) {
        out->prefix = a->nitems ? a->prefix : b->prefix;
        out->adaptations = a->adaptations + b->adaptations;
    }
    out->bl_ok = false;
    fv_free(&va), fv_free(&vb), fv_free(&all);
    return rc;
}

/* ---- rebuild with owners (resize, exact merge) --------------------------- */

typedef struct collect {
    akvi_qf_fp *v;
    size_t n, cap;
} collect;

static int collect_fp(void *arg, uint64_t home, akvi_qf_fp fp)
{
    (void)home;
    collect *c = arg;
    akvi_qf_fp *nv = akvi_grow(c->v, &c->cap, c->n + 1, sizeof *nv, 1024);
    if (!nv)
        return AKV_ENOMEM;
    c->v = nv;
    c->v[c->n++] = fp;
    return AKV_OK;
}

/* Every key of the reverse map (one sorted pass over the shard). */
static int all_owners(const akvi_qf *f, akv_revmap *rm, owners *o)
{
    if (f->pbits)
        return rm->scan(rm, f->prefix, f->pbits, owners_push, o);
    int rc = rm->scan(rm, 0, 1, owners_push, o);
    return rc == AKV_OK ? rm->scan(rm, 1ULL << 63, 1, owners_push, o) : rc;
}

/* New fingerprint for an owner. An extended one keeps at least the bits it
 * had, so no adaptation is lost in either direction; a bare one stays bare:
 * growing gives it more bits for free, shrinking drops some — that is what
 * a smaller filter means (one extension slot per key would defeat it). */
static akvi_qf_fp regrow(const akvi_qf *out, const akvi_qf *in, akvi_qf_fp old, akvi_u128 own)
{
    unsigned bits = fp_len(in, old.k), base = out->q + out->r;
    uint32_t k = old.k == 0 || bits <= base ? 0 : (bits - base + out->r - 1) / out->r;
    return make_fp(out, own, k < out->max_ext ? k : out->max_ext);
}

/* Emit one new minirun after restoring N with its owners. */
static int flush_group(akvi_qf *out, akvi_qf_fp *fp, akvi_u128 *own, size_t n)
{
    akvi_qfi_fix_nesting(out, fp, own, n);
    return emit_all(out, fp, n);
}

/* One input of a rebuild: its records zipped with its owners (same order). */
typedef struct src {
    collect c;
    owners o;
} src;

static int load_src(const akvi_qf *in, akv_revmap *rm, const akvi_qf *out, src *sr)
{
    int rc = akvi_qf_foreach(in, collect_fp, &sr->c);
    if (rc == AKV_OK)
        rc = all_owners(in, rm, &sr->o);
    if (rc == AKV_OK && sr->o.n != sr->c.n)
        rc = AKV_ECORRUPT;
    for (size_t i = 0; rc == AKV_OK && i < sr->c.n; i++) {
        akvi_u128 x = akvi_qf_stream(in, sr->o.v[i]);
        if (!fp_prefix_of(in, sr->c.v[i], x))
            rc = AKV_ECORRUPT;
        else
            sr->c.v[i] = regrow(out, in, sr->c.v[i], akvi_qf_stream(out, sr->o.v[i]));
    }
    return rc;
}

/* Interleave the inputs by owner hash into (fp, owner stream) arrays. */
static int interleave(const akvi_qf *out, src *sv, int nin, akvi_qf_fp *fp, akvi_u128 *own)
{
    size_t i = 0, j = 0, t = 0, ni = sv[0].c.n, nj = nin > 1 ? sv[1].c.n : 0;
    while (i < ni || j < nj) {
        bool take_a = j >= nj || (i < ni && !hash_lt(sv[1].o.v[j], sv[0].o.v[i]));
        src *s = take_a ? &sv[0] : &sv[1];
        size_t k = take_a ? i++ : j++;
        fp[t] = s->c.v[k];
        own[t++] = akvi_qf_stream(out, s->o.v[k]);
    }
    return AKV_OK;
}

int akvi_qf_rebuild2(const akvi_qf *const *in, akv_revmap *const *rm, int nin, akvi_qf *out)
{
    for (int k = 0; k < nin; k++)
        if (!rm[k] || out->pbits != in[k]->pbits || out->mwords < in[k]->mwords)
            return AKV_EINVAL;
    if (out->nitems)
        return AKV_EINVAL;
    src sv[2] = {{{0}, {0}}, {{0}, {0}}};
    int rc = AKV_OK;
    for (int k = 0; k < nin && rc == AKV_OK; k++)
        rc = load_src(in[k], rm[k], out, &sv[k]);
    size_t n = sv[0].c.n + (nin > 1 ? sv[1].c.n : 0);
    akvi_qf_fp *fp = malloc((n + 1) * sizeof *fp);
    akvi_u128 *own = malloc((n + 1) * sizeof *own);
    if (rc == AKV_OK && (!fp || !own))
        rc = AKV_ENOMEM;
    if (rc == AKV_OK)
        rc = interleave(out, sv, nin, fp, own);
    /* Records are in owner order; a new minirun is a contiguous slice. */
    for (size_t i = 0, j; rc == AKV_OK && i < n; i = j) {
        for (j = i + 1; j < n && mid_of(out, own[j]) == mid_of(out, own[i]);)
            j++;
        rc = flush_group(out, fp + i, own + i, j - i);
    }
    if (rc == AKV_OK) {
        out->prefix = in[0]->nitems || nin < 2 ? in[0]->prefix : in[1]->prefix;
        for (int k = 0; k < nin; k++)
            out->adaptations += in[k]->adaptations;
    }
    out->bl_ok = false;
    for (int k = 0; k < 2; k++)
        free(sv[k].c.v), free(sv[k].o.v);
    free(fp), free(own);
    return rc;
}

int akvi_qf_rebuild(const akvi_qf *in, akv_revmap *rm, akvi_qf *out)
{
    return akvi_qf_rebuild2(&in, &rm, 1, out);
}
