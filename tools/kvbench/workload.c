/*
 * workload.c — YCSB's CoreWorkload: properties with YCSB's names and
 * defaults, the operation mix, the key chooser, and adaptkv's two read mixes:
 * negative reads (keys never inserted, Zipfian over their own key space) and
 * an attacker who replays keys that it saw cost a disk probe.
 *
 * A client (one per thread) turns the workload into requests; the runner
 * executes them on an engine and reports back what each cost, which is how
 * inserts are acknowledged and how the attacker learns.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kvbench/kvbench.h"

const char *const akv_kb_op_names[] = {"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "DELETE"};

static const char *const prop_names[AKV_KB_NOPS] = {
    "readproportion", "updateproportion",          "insertproportion",
    "scanproportion", "readmodifywriteproportion", "deleteproportion"};
static const double prop_defaults[AKV_KB_NOPS] = {0.95, 0.05, 0, 0, 0, 0}; /* CoreWorkload's */

static const char *const fieldlen_dists[] = {"constant", "uniform", "zipfian", NULL};
static const char *const scanlen_dists[] = {"uniform", "zipfian", NULL};
static const char *const neg_dists[] = {"zipfian", "uniform", NULL};
static const char *const insert_orders[] = {"hashed", "ordered", NULL};

static int load_mix(akv_kb_workload *w, akv_kb_props *p)
{
    double sum = 0;
    for (int i = 0; i < AKV_KB_NOPS; i++) {
        if (akv_kb_props_f64(p, prop_names[i], prop_defaults[i], 0, 1e9, &w->prop[i]))
            return -1;
        sum += w->prop[i];
    }
    if (sum <= 0) {
        snprintf(p->err, sizeof p->err, "the operation proportions (readproportion, …) are all zero");
        return -1;
    }
    return 0;
}

static int load_dists(akv_kb_workload *w, akv_kb_props *p)
{
    int d, f, s, n, o;
    if (akv_kb_props_choice(p, "requestdistribution", "uniform", akv_kb_dist_names, &d) ||
        akv_kb_props_choice(p, "fieldlengthdistribution", "constant", fieldlen_dists, &f) ||
        akv_kb_props_choice(p, "scanlengthdistribution", "uniform", scanlen_dists, &s) ||
        akv_kb_props_choice(p, "negativedistribution", "zipfian", neg_dists, &n) ||
        akv_kb_props_choice(p, "insertorder", "hashed", insert_orders, &o))
        return -1;
    if (d == AKV_KB_CONSTANT) {
        snprintf(p->err, sizeof p->err, "requestdistribution: 'constant' is not a request distribution");
        return -1;
    }
    w->reqdist = (akv_kb_dist)d;
    w->fieldlendist = f == 0 ? AKV_KB_CONSTANT : f == 1 ? AKV_KB_UNIFORM : AKV_KB_ZIPFIAN;
    w->scanlendist = s == 0 ? AKV_KB_UNIFORM : AKV_KB_ZIPFIAN;
    w->negdist = n == 0 ? AKV_KB_ZIPFIAN : AKV_KB_UNIFORM;
    w->hashed_inserts = o == 0;
    return 0;
}

static int load_counts(akv_kb_workload *w, akv_kb_props *p)
{
    if (akv_kb_props_u64(p, "recordcount", 1000, &w->recordcount) ||
        akv_kb_props_u64(p, "operationcount", 1000, &w->operationcount) ||
        akv_kb_props_u64(p, "insertstart", 0, &w->insertstart) ||
        akv_kb_props_u64(p, "fieldcount", 10, &w->fieldcount) ||
        akv_kb_props_u64(p, "fieldlength", 100, &w->fieldlength) ||
        akv_kb_props_u64(p, "minfieldlength", 1, &w->minfieldlength) ||
        akv_kb_props_u64(p, "minscanlength", 1, &w->minscan) ||
        akv_kb_props_u64(p, "maxscanlength", 1000, &w->maxscan) ||
        akv_kb_props_u64(p, "zeropadding", 1, &w->zeropadding) ||
        akv_kb_props_u64(p, "maxexecutiontime", 0, &w->maxexecutiontime))
        return -1;
    if (w->recordcount == 0 || w->recordcount >= AKV_KB_NEG_BASE) {
        snprintf(p->err, sizeof p->err, "recordcount must be between 1 and 2^48");
        return -1;
    }
    uint64_t rest = w->recordcount > w->insertstart ? w->recordcount - w->insertstart : 0;
    if (akv_kb_props_u64(p, "insertcount", rest, &w->insertcount) ||
        akv_kb_props_u64(p, "negativekeycount", w->recordcount, &w->negative_keys) ||
        akv_kb_props_u64(p, "adversarypoolsize", 1024, &w->adv_pool))
        return -1;
    if (w->insertcount == 0 || w->fieldcount == 0 || w->fieldlength == 0 || w->negative_keys == 0 ||
        w->minfieldlength == 0 || w->minfieldlength > w->fieldlength || w->minscan == 0 ||
        w->maxscan < w->minscan || w->zeropadding > 30 || w->fieldcount * w->fieldlength > (64u << 20)) {
        snprintf(p->err, sizeof p->err,
                 "need insertcount, fieldcount, fieldlength, negativekeycount, minscanlength >= 1, "
                 "minfieldlength in [1, fieldlength], "
                 "maxscanlength >= minscanlength, zeropadding <= 30, records <= 64 MiB");
        return -1;
    }
    return 0;
}

int akv_kb_workload_load(akv_kb_workload *w, akv_kb_props *p)
{
    memset(w, 0, sizeof *w);
    const char *name;
    akv_kb_props_str(p, "workloadname", NULL, &name);
    if (load_counts(w, p) || load_mix(w, p) || load_dists(w, p) ||
        akv_kb_props_f64(p, "zipfianconstant", AKV_KB_ZIPF_THETA, 0.01, 0.999999, &w->theta) ||
        akv_kb_props_f64(p, "hotspotdatafraction", 0.2, 0, 1, &w->hot_data) ||
        akv_kb_props_f64(p, "hotspotopnfraction", 0.8, 0, 1, &w->hot_opn) ||
        akv_kb_props_f64(p, "exponential.percentile", 95, 0.001, 99.999, &w->exp_percentile) ||
        akv_kb_props_f64(p, "exponential.frac", 0.8571428571, 1e-9, 1, &w->exp_frac) ||
        akv_kb_props_f64(p, "negativeproportion", 0, 0, 1, &w->negative) ||
        akv_kb_props_f64(p, "adversaryproportion", 0, 0, 1, &w->adversary) ||
        akv_kb_props_f64(p, "adversaryexplore", 0.1, 0, 1, &w->adv_explore))
        return -1;
    if (w->negative + w->adversary > 1) {
        snprintf(p->err, sizeof p->err, "negativeproportion + adversaryproportion exceed 1 (%g)",
                 w->negative + w->adversary);
        return -1;
    }
    snprintf(w->name, sizeof w->name, "%s", name ? name : "workload");
    return 0;
}

/* ---- shared state ------------------------------------------------------- */

#define ACK_WINDOW (1u << 20)

int akv_kb_shared_init(akv_kb_shared *s, const akv_kb_workload *w, bool load)
{
    memset(s, 0, sizeof *s);
    uint64_t end = w->insertstart + w->insertcount;
    atomic_store(&s->next_insert, load ? w->insertstart : end);
    s->load_end = end;
    s->acked = end; /* keys below this were loaded */
    s->window = calloc(ACK_WINDOW, 1);
    s->pool = calloc(w->adv_pool ? w->adv_pool : 1, sizeof *s->pool);
    s->pool_cap = w->adv_pool;
    pthread_mutex_init(&s->ack_mu, NULL);
    pthread_mutex_init(&s->pool_mu, NULL);
    return s->window && s->pool ? 0 : -1;
}

void akv_kb_shared_free(akv_kb_shared *s)
{
    free(s->window);
    free(s->pool);
    pthread_mutex_destroy(&s->ack_mu);
    pthread_mutex_destroy(&s->pool_mu);
}

/* The newest key number every reader may expect to exist: inserts finish
 * out of order across threads, so (as YCSB's AcknowledgedCounterGenerator)
 * it advances only over a contiguous prefix of acknowledged inserts. */
uint64_t akv_kb_last_acked(akv_kb_shared *s)
{
    pthread_mutex_lock(&s->ack_mu);
    uint64_t a = s->acked;
    pthread_mutex_unlock(&s->ack_mu);
    return a - 1;
}

static void acknowledge(akv_kb_shared *s, uint64_t keynum)
{
    pthread_mutex_lock(&s->ack_mu);
    if (keynum >= s->acked && keynum - s->acked < ACK_WINDOW) {
        s->window[keynum % ACK_WINDOW] = 1;
        while (s->window[s->acked % ACK_WINDOW]) {
            s->window[s->acked % ACK_WINDOW] = 0;
            s->acked++;
        }
    }
    pthread_mutex_unlock(&s->ack_mu);
}

/* ---- per-thread client --------------------------------------------------- */

void akv_kb_client_init(akv_kb_client *c, const akv_kb_workload *w, akv_kb_shared *s, uint64_t seed,
                        unsigned thread, unsigned threads)
{
    memset(c, 0, sizeof *c);
    c->w = w;
    c->sh = s;
    akv_kb_rng_seed(&c->rng, seed * 0x9e3779b97f4a7c15ull + thread + 1);
    uint64_t lo = w->insertstart, hi = w->insertstart + w->insertcount - 1;
    if (w->reqdist == AKV_KB_ZIPFIAN) /* room for the keys this run inserts, as YCSB */
        hi += (uint64_t)((double)w->operationcount * w->prop[AKV_KB_INSERT] * 2.0);
    akv_kb_gen_init(&c->keys, w->reqdist, lo, hi, w->theta);
    c->keys.hot_data = w->hot_data;
    c->keys.hot_opn = w->hot_opn;
    c->keys.exp_gamma = -log(1.0 - w->exp_percentile / 100.0) / ((double)w->insertcount * w->exp_frac);
    c->keys.seq = lo + (hi - lo + 1) / (threads ? threads : 1) * thread; /* threads share no sequence */
    akv_kb_gen_init(&c->scanlen, w->scanlendist, w->minscan, w->maxscan, AKV_KB_ZIPF_THETA);
    if (w->scanlendist == AKV_KB_ZIPFIAN) /* YCSB: plain Zipfian over [min, max] */
        akv_kb_zipf_init(&c->scanlen.z, w->minscan, w->maxscan, AKV_KB_ZIPF_THETA);
    akv_kb_gen_init(&c->fieldlen, w->fieldlendist, w->minfieldlength, w->fieldlength, AKV_KB_ZIPF_THETA);
    if (w->fieldlendist == AKV_KB_ZIPFIAN)
        akv_kb_zipf_init(&c->fieldlen.z, w->minfieldlength, w->fieldlength, AKV_KB_ZIPF_THETA);
    akv_kb_gen_init(&c->neg, w->negdist, 0, w->negative_keys - 1, w->theta);
    double sum = 0;
    for (int i = 0; i < AKV_KB_NOPS; i++)
        c->cum[i] = (sum += w->prop[i]);
}

/* Scan and field lengths: YCSB draws them from a plain (unscrambled)
 * Zipfian, so short lengths are the popular ones. */
static uint64_t draw_length(akv_kb_client *c, akv_kb_gen *g)
{
    if (g->dist == AKV_KB_ZIPFIAN)
        return akv_kb_zipf_next(&g->z, &c->rng);
    return akv_kb_gen_next(g, &c->rng, 0);
}

uint64_t akv_kb_value_len(akv_kb_client *c)
{
    uint64_t per = c->w->fieldlendist == AKV_KB_CONSTANT ? c->w->fieldlength : draw_length(c, &c->fieldlen);
    return per * c->w->fieldcount;
}

/* CoreWorkload.nextKeynum: draw until the key is one that exists. */
static uint64_t existing_key(akv_kb_client *c)
{
    uint64_t last = akv_kb_last_acked(c->sh);
    if (c->keys.dist == AKV_KB_EXPONENTIAL || c->keys.dist == AKV_KB_LATEST)
        return akv_kb_gen_next(&c->keys, &c->rng, last);
    for (int tries = 0; tries < 1000; tries++) {
        uint64_t k = akv_kb_gen_next(&c->keys, &c->rng, last);
        if (k <= last)
            return k;
    }
    return c->w->insertstart + akv_kb_rng_below(&c->rng, last - c->w->insertstart + 1);
}

static akv_kb_op choose_op(akv_kb_client *c)
{
    double u = akv_kb_rng_double(&c->rng) * c->cum[AKV_KB_NOPS - 1];
    for (int i = 0; i < AKV_KB_NOPS; i++)
        if (u < c->cum[i])
            return (akv_kb_op)i;
    return AKV_KB_READ;
}

/* An attacker read: replay a key that cost a probe, or look for a new one. */
static void adversary_key(akv_kb_client *c, akv_kb_req *r)
{
    akv_kb_shared *s = c->sh;
    r->keynum = 0;
    if (akv_kb_rng_double(&c->rng) >= c->w->adv_explore) {
        pthread_mutex_lock(&s->pool_mu);
        if (s->pool_n)
            r->keynum = s->pool[akv_kb_rng_below(&c->rng, s->pool_n)];
        pthread_mutex_unlock(&s->pool_mu);
    }
    r->kind = r->keynum ? AKV_KB_REQ_REPLAY : AKV_KB_REQ_EXPLORE;
    if (!r->keynum)
        r->keynum = AKV_KB_ADV_BASE + akv_kb_rng_below(&c->rng, AKV_KB_ADV_BASE);
}

static void read_key(akv_kb_client *c, akv_kb_req *r)
{
    double u = akv_kb_rng_double(&c->rng);
    r->kind = AKV_KB_REQ_NORMAL;
    if (u < c->w->negative) {
        r->kind = AKV_KB_REQ_NEGATIVE;
        r->keynum = AKV_KB_NEG_BASE + akv_kb_gen_next(&c->neg, &c->rng, 0);
    } else if (u < c->w->negative + c->w->adversary) {
        adversary_key(c, r);
    } else {
        r->keynum = existing_key(c);
    }
}

bool akv_kb_client_load_next(akv_kb_client *c, akv_kb_req *r)
{
    uint64_t k = atomic_fetch_add(&c->sh->next_insert, 1);
    if (k >= c->sh->load_end)
        return false;
    memset(r, 0, sizeof *r);
    r->op = AKV_KB_INSERT;
    r->keynum = k;
    r->vlen = akv_kb_value_len(c);
    r->klen = akv_kb_key(r->key, sizeof r->key, k, c->w->hashed_inserts, (unsigned)c->w->zeropadding);
    return true;
}

void akv_kb_client_next(akv_kb_client *c, akv_kb_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = choose_op(c);
    if (r->op == AKV_KB_READ)
        read_key(c, r);
    else if (r->op == AKV_KB_INSERT)
        r->keynum = atomic_fetch_add(&c->sh->next_insert, 1);
    else
        r->keynum = existing_key(c);
    if (r->op == AKV_KB_SCAN)
        r->scan = (uint32_t)draw_length(c, &c->scanlen);
    if (r->op == AKV_KB_UPDATE || r->op == AKV_KB_INSERT || r->op == AKV_KB_RMW)
        r->vlen = akv_kb_value_len(c);
    bool hashed = c->w->hashed_inserts || r->kind != AKV_KB_REQ_NORMAL;
    r->klen = akv_kb_key(r->key, sizeof r->key, r->keynum, hashed, (unsigned)c->w->zeropadding);
}

static void pool_add(akv_kb_shared *s, akv_kb_rng *rng, uint64_t k)
{
    if (s->pool_cap == 0)
        return;
    if (s->pool_n < s->pool_cap)
        s->pool[s->pool_n++] = k;
    else
        s->pool[akv_kb_rng_below(rng, s->pool_cap)] = k;
}

static void pool_drop(akv_kb_shared *s, uint64_t k)
{
    for (size_t i = 0; i < s->pool_n; i++)
        if (s->pool[i] == k) {
            s->pool[i] = s->pool[--s->pool_n];
            return;
        }
}

void akv_kb_client_done(akv_kb_client *c, const akv_kb_req *r, int rc, const akv_kb_cost *cost)
{
    if (r->op == AKV_KB_INSERT && rc >= 0)
        acknowledge(c->sh, r->keynum);
    if (r->kind != AKV_KB_REQ_EXPLORE && r->kind != AKV_KB_REQ_REPLAY)
        return;
    /* The attacker sees only timing: a lookup that read the disk was slow. */
    bool slow = cost->wasted > 0;
    if (slow == (r->kind == AKV_KB_REQ_REPLAY))
        return;
    pthread_mutex_lock(&c->sh->pool_mu);
    if (slow)
        pool_add(c->sh, &c->rng, r->keynum);
    else
        pool_drop(c->sh, r->keynum);
    pthread_mutex_unlock(&c->sh->pool_mu);
}
