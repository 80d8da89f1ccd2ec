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

static const char *const req_dists[] = {"uniform",    "zipfian",     "latest", "hotspot",
                                        "sequential", "exponential", NULL}; /* akv_kb_dist order */
static const char *const fieldlen_dists[] = {"constant", "uniform", "zipfian", "histogram", NULL};
static const akv_kb_dist fieldlen_kinds[] = {AKV_KB_CONSTANT, AKV_KB_UNIFORM, AKV_KB_PLAIN_ZIPFIAN,
                                             AKV_KB_HISTOGRAM};
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
    if (akv_kb_props_choice(p, "requestdistribution", "uniform", req_dists, &d) ||
        akv_kb_props_choice(p, "fieldlengthdistribution", "constant", fieldlen_dists, &f) ||
        akv_kb_props_choice(p, "scanlengthdistribution", "uniform", scanlen_dists, &s) ||
        akv_kb_props_choice(p, "negativedistribution", "zipfian", neg_dists, &n) ||
        akv_kb_props_choice(p, "insertorder", "hashed", insert_orders, &o))
        return -1;
    w->reqdist = (akv_kb_dist)d;
    w->fieldlendist = fieldlen_kinds[f];
    w->scanlendist = s == 0 ? AKV_KB_UNIFORM : AKV_KB_PLAIN_ZIPFIAN;
    w->negdist = n == 0 ? AKV_KB_ZIPFIAN : AKV_KB_UNIFORM;
    w->hashed_inserts = o == 0;
    return 0;
}

/* recordcount, insertstart and insertcount as YCSB combines them: the load
 * inserts insertcount records if that is given, else recordcount, from key
 * insertstart on; reads choose among insertstart .. insertstart+insertcount-1
 * (insertcount defaulting to recordcount - insertstart); the run phase's
 * inserts continue from recordcount. */
static int load_counts(akv_kb_workload *w, akv_kb_props *p)
{
    if (akv_kb_props_u64(p, "recordcount", 1000, &w->recordcount) ||
        akv_kb_props_u64(p, "operationcount", 1000, &w->operationcount) ||
        akv_kb_props_u64(p, "insertstart", 0, &w->insertstart) ||
        akv_kb_props_u64(p, "maxexecutiontime", 0, &w->maxexecutiontime))
        return -1;
    if (w->recordcount == 0 || w->recordcount >= AKV_KB_NEG_BASE) {
        snprintf(p->err, sizeof p->err, "recordcount must be between 1 and 2^48");
        return -1;
    }
    bool given = akv_kb_props_find(p, "insertcount") != NULL;
    if (!given && w->insertstart >= w->recordcount) {
        snprintf(p->err, sizeof p->err,
                 "insertstart (%llu) must be below recordcount (%llu): the records to read are "
                 "insertstart .. recordcount-1",
                 (unsigned long long)w->insertstart, (unsigned long long)w->recordcount);
        return -1;
    }
    if (akv_kb_props_u64(p, "insertcount", w->recordcount - w->insertstart, &w->insertcount) ||
        akv_kb_props_u64(p, "negativekeycount", w->recordcount, &w->negative_keys) ||
        akv_kb_props_u64(p, "adversarypoolsize", 1024, &w->adv_pool) ||
        akv_kb_props_u64(p, "adversaryrecon", 0, &w->adv_recon))
        return -1;
    /* Written so that no sum can wrap (insertstart near 2^64, say). */
    if (w->insertcount == 0 || w->insertstart > w->recordcount ||
        w->insertcount > w->recordcount - w->insertstart) {
        snprintf(p->err, sizeof p->err,
                 "insertstart + insertcount (%llu + %llu) must be between 1 and recordcount (%llu), "
                 "as YCSB requires",
                 (unsigned long long)w->insertstart, (unsigned long long)w->insertcount,
                 (unsigned long long)w->recordcount);
        return -1;
    }
    w->loadcount = given ? w->insertcount : w->recordcount;
    if (w->insertstart >= AKV_KB_NEG_BASE || w->loadcount >= AKV_KB_NEG_BASE - w->insertstart) {
        snprintf(p->err, sizeof p->err, "insertstart + recordcount must stay below 2^48");
        return -1;
    }
    return 0;
}

static int load_lengths(akv_kb_workload *w, akv_kb_props *p)
{
    const char *hist;
    if (akv_kb_props_u64(p, "fieldcount", 10, &w->fieldcount) ||
        akv_kb_props_u64(p, "fieldlength", 100, &w->fieldlength) ||
        akv_kb_props_u64(p, "minfieldlength", 1, &w->minfieldlength) ||
        akv_kb_props_u64(p, "minscanlength", 1, &w->minscan) ||
        akv_kb_props_u64(p, "maxscanlength", 1000, &w->maxscan) ||
        akv_kb_props_u64(p, "zeropadding", 1, &w->zeropadding) ||
        akv_kb_props_str(p, "fieldlengthhistogram", "hist.txt", &hist))
        return -1;
    if (w->fieldcount == 0 || w->fieldlength == 0 || w->negative_keys == 0 || w->minfieldlength == 0 ||
        w->minfieldlength > w->fieldlength || w->maxscan < w->minscan || w->maxscan > INT32_MAX ||
        w->zeropadding > 30 || w->fieldcount > (64u << 20)) {
        snprintf(p->err, sizeof p->err,
                 "need fieldcount, fieldlength, negativekeycount >= 1, minfieldlength in [1, fieldlength], "
                 "minscanlength <= maxscanlength < 2^31, zeropadding <= 30");
        return -1;
    }
    uint64_t longest = w->fieldlength;
    if (w->fieldlendist == AKV_KB_HISTOGRAM) {
        if (akv_kb_lenhist_load(&w->fieldhist, hist, p->err, sizeof p->err))
            return -1;
        longest = akv_kb_lenhist_max(&w->fieldhist);
    }
    if (longest > (64u << 20) / w->fieldcount) {
        akv_kb_lenhist_free(&w->fieldhist);
        snprintf(p->err, sizeof p->err, "records of up to %llu fields of %llu bytes: more than 64 MiB",
                 (unsigned long long)w->fieldcount, (unsigned long long)longest);
        return -1;
    }
    w->max_value = w->fieldcount * longest;
    return 0;
}

/* HotspotIntegerGenerator divides by the size of the side it picks. */
static int check_hotspot(akv_kb_workload *w, akv_kb_props *p)
{
    uint64_t hot = (uint64_t)((double)w->insertcount * w->hot_data);
    if (w->reqdist != AKV_KB_HOTSPOT ||
        !((hot == 0 && w->hot_opn > 0) || (hot == w->insertcount && w->hot_opn < 1)))
        return 0;
    snprintf(p->err, sizeof p->err,
             "hotspotdatafraction=%g of %llu records makes %llu hot keys, but hotspotopnfraction=%g sends "
             "operations to the %s ones",
             w->hot_data, (unsigned long long)w->insertcount, (unsigned long long)hot, w->hot_opn,
             hot == 0 ? "hot" : "cold");
    return -1;
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
        akv_kb_props_f64(p, "adversaryexplore", 0.1, 0, 1, &w->adv_explore) || check_hotspot(w, p) ||
        load_lengths(w, p))
        return -1;
    if (w->negative + w->adversary > 1) {
        snprintf(p->err, sizeof p->err, "negativeproportion + adversaryproportion exceed 1 (%g)",
                 w->negative + w->adversary);
        akv_kb_workload_free(w);
        return -1;
    }
    if (w->adv_recon && w->adversary == 0) {
        snprintf(p->err, sizeof p->err, "adversaryrecon needs an attacker (adversaryproportion > 0)");
        akv_kb_workload_free(w);
        return -1;
    }
    /* CoreWorkload: expectednewkeys = (int)(operationcount * insertproportion * 2.0). */
    w->expectednewkeys = (uint64_t)((double)w->operationcount * w->prop[AKV_KB_INSERT] * 2.0);
    snprintf(w->name, sizeof w->name, "%s", name ? name : "workload");
    return 0;
}

void akv_kb_workload_free(akv_kb_workload *w)
{
    akv_kb_lenhist_free(&w->fieldhist);
}

/* ---- shared state ------------------------------------------------------- */

#define ACK_WINDOW (1u << 20)

int akv_kb_shared_init(akv_kb_shared *s, const akv_kb_workload *w, bool load)
{
    memset(s, 0, sizeof *s);
    /* The load inserts from insertstart; the run phase's inserts start at
     * recordcount (YCSB's AcknowledgedCounterGenerator(recordcount)). */
    atomic_store(&s->next_insert, load ? w->insertstart : w->recordcount);
    s->load_end = w->insertstart + w->loadcount;
    s->acked = w->recordcount; /* keys below this were loaded */
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

/* CoreWorkload's key chooser for requestdistribution. */
static void key_chooser(akv_kb_client *c, const akv_kb_workload *w)
{
    uint64_t lo = w->insertstart, hi = w->insertstart + w->insertcount - 1;
    switch (w->reqdist) {
    case AKV_KB_ZIPFIAN: /* room for the keys the run inserts: the range ends at
                            insertstart+insertcount+expected */
        akv_kb_gen_zipfian(&c->keys, lo, hi + 1 + w->expectednewkeys, w->theta);
        break;
    case AKV_KB_LATEST:
        akv_kb_gen_latest(&c->keys, w->recordcount - 1, w->theta);
        break;
    case AKV_KB_HOTSPOT:
        akv_kb_gen_hotspot(&c->keys, lo, hi, w->hot_data, w->hot_opn);
        break;
    case AKV_KB_SEQUENTIAL: /* one sequence for all threads, as YCSB's shared generator */
        akv_kb_gen_sequential(&c->keys, lo, hi, &c->sh->seq);
        break;
    case AKV_KB_EXPONENTIAL:
        akv_kb_gen_exponential(&c->keys, w->exp_percentile, (double)w->recordcount * w->exp_frac);
        break;
    default:
        akv_kb_gen_uniform(&c->keys, lo, hi);
    }
}

static void length_gen(akv_kb_gen *g, akv_kb_dist d, uint64_t lo, uint64_t hi, const akv_kb_lenhist *h)
{
    if (d == AKV_KB_CONSTANT)
        akv_kb_gen_constant(g, hi);
    else if (d == AKV_KB_PLAIN_ZIPFIAN) /* YCSB: plain Zipfian over [min, max]: short ones popular */
        akv_kb_gen_plain_zipfian(g, lo, hi, AKV_KB_ZIPF_THETA);
    else if (d == AKV_KB_HISTOGRAM)
        akv_kb_gen_histogram(g, h);
    else
        akv_kb_gen_uniform(g, lo, hi);
}

void akv_kb_client_init(akv_kb_client *c, const akv_kb_workload *w, akv_kb_shared *s, uint64_t seed,
                        unsigned thread)
{
    memset(c, 0, sizeof *c);
    c->w = w;
    c->sh = s;
    akv_kb_rng_seed(&c->rng, seed * 0x9e3779b97f4a7c15ull + thread + 1);
    key_chooser(c, w);
    length_gen(&c->scanlen, w->scanlendist, w->minscan, w->maxscan, NULL);
    length_gen(&c->fieldlen, w->fieldlendist, w->minfieldlength, w->fieldlength, &w->fieldhist);
    if (w->negdist == AKV_KB_ZIPFIAN)
        akv_kb_gen_zipfian(&c->neg, 0, w->negative_keys - 1, w->theta);
    else
        akv_kb_gen_uniform(&c->neg, 0, w->negative_keys - 1);
    double sum = 0;
    for (int i = 0; i < AKV_KB_NOPS; i++)
        c->cum[i] = (sum += w->prop[i]);
}

/* A record: fieldcount fields, each of a length drawn on its own. */
uint64_t akv_kb_value_len(akv_kb_client *c)
{
    const akv_kb_workload *w = c->w;
    if (w->fieldlendist == AKV_KB_CONSTANT)
        return w->fieldcount * w->fieldlength;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < w->fieldcount; i++)
        sum += akv_kb_gen_next(&c->fieldlen, &c->rng, 0);
    return sum;
}

/* CoreWorkload.nextKeynum: latest and exponential count back from the newest
 * acknowledged key; the others are redrawn until they are at most that key.
 * (YCSB redraws forever; after 2^24 misses, which no workload YCSB can run
 * reaches, this takes a uniform key rather than hang.) */
static uint64_t existing_key(akv_kb_client *c)
{
    uint64_t last = akv_kb_last_acked(c->sh);
    if (c->keys.dist == AKV_KB_EXPONENTIAL || c->keys.dist == AKV_KB_LATEST)
        return akv_kb_gen_next(&c->keys, &c->rng, last);
    for (int tries = 0; tries < (1 << 24); tries++) {
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

/* A never-inserted key of the attacker's own range, fresh with high odds. */
static uint64_t fresh_absent_key(akv_kb_client *c)
{
    return AKV_KB_ADV_BASE + akv_kb_rng_below(&c->rng, AKV_KB_ADV_BASE);
}

/* An attacker read: replay a key that cost a probe, or look for a new one. */
static void adversary_key(akv_kb_client *c, akv_kb_req *r)
{
    akv_kb_shared *s = c->sh;
    r->keynum = 0;
    if (akv_kb_rng_double(&c->rng) >= c->w->adv_explore) {
        pthread_mutex_lock(&s->pool_mu);
        if (s->pool_n) {
            r->pool_at = akv_kb_rng_below(&c->rng, s->pool_n);
            r->keynum = s->pool[r->pool_at];
        }
        pthread_mutex_unlock(&s->pool_mu);
    }
    r->kind = r->keynum ? AKV_KB_REQ_REPLAY : AKV_KB_REQ_EXPLORE;
    if (!r->keynum)
        r->keynum = fresh_absent_key(c);
}

/* A reconnaissance read: a fresh absent key, asked before the run's clock
 * starts, to fill the attacker's pool (workloads/README.md, adversaryrecon). */
void akv_kb_client_recon_next(akv_kb_client *c, akv_kb_req *r)
{
    memset(r, 0, sizeof *r);
    r->op = AKV_KB_READ;
    r->kind = AKV_KB_REQ_EXPLORE;
    r->keynum = fresh_absent_key(c);
    r->klen = akv_kb_key(r->key, sizeof r->key, r->keynum, true, (unsigned)c->w->zeropadding);
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
        r->scan = (uint32_t)akv_kb_gen_next(&c->scanlen, &c->rng, 0);
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

/* Drop key k, found at `at` unless another client moved it since (then
 * searched for: a pool of 500,000 keys would make every drop a scan). */
static void pool_drop(akv_kb_shared *s, uint64_t k, size_t at)
{
    if (at < s->pool_n && s->pool[at] == k) {
        s->pool[at] = s->pool[--s->pool_n];
        return;
    }
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
        pool_drop(c->sh, r->keynum, r->pool_at);
    pthread_mutex_unlock(&c->sh->pool_mu);
}
