/*
 * catalog.c — the catalog record: which runs exist, their SSTs and slots;
 * and its two files.
 *
 * The catalog lives outside RocksDB, in DIR/CATALOG.0 and DIR/CATALOG.1: a
 * commit rewrites the slot its sequence number picks (one fdatasync), so a
 * crash can tear only the record being written while the other slot keeps
 * the previous one. Open takes the valid slot with the higher sequence. The
 * catalog therefore survives whatever happens to RocksDB's WAL, and RocksDB's
 * MANIFEST can be checked against it. Format in docs/format.md (version 1
 * lived in the meta family and is still read; version 2 had no slot policy).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine/internal.h"
#include "engine/lockorder.h"
#include "util/codec.h"
#include "util/order.h"

#define CAT_MAGIC   "AKVC"
#define CAT_VERSION AKVI_CATALOG_VERSION
#define RUN_FILES   1u /* a run flag: akvi_cat_run.files */
/* Fixed offsets in a record of version 2 or later (a reservation patches them). */
#define CAT_OFF_SEQ  20
#define CAT_OFF_NEXT 28

void akvi_filter_file_name(uint64_t run, uint64_t sst, char *out, size_t cap)
{
    snprintf(out, cap, "%llu-%llu.akf", (unsigned long long)run, (unsigned long long)sst);
}

void akvi_cat_sst_put_fields(akvi_wbuf *w, const akvi_cat_sst *s)
{
    akvi_w_u64(w, s->keys);
    akvi_w_u64(w, s->bytes);
    akvi_w_u64(w, s->prefix);
    akvi_w_u64(w, s->digest);
    size_t kl = strnlen(s->kind, sizeof s->kind);
    akvi_w_u8(w, (uint8_t)kl);
    akvi_w_bytes(w, s->kind, kl);
    akvi_w_u32(w, (uint32_t)s->smallest_len);
    akvi_w_bytes(w, s->smallest, s->smallest_len);
    akvi_w_u32(w, (uint32_t)s->largest_len);
    akvi_w_bytes(w, s->largest, s->largest_len);
}

void akvi_run_file_name(uint64_t run, uint64_t sst, char *out, size_t cap)
{
    if (sst == AKVI_RMAP_SST)
        snprintf(out, cap, "%llu-rmap.sst", (unsigned long long)run);
    else
        snprintf(out, cap, "%llu-%llu.sst", (unsigned long long)run, (unsigned long long)sst);
}

int akvi_file_name_parse(const char *name, const char *ext, uint64_t *run, uint64_t *sst)
{
    unsigned long long r, t;
    int used = 0;
    if (name[0] < '0' || name[0] > '9')
        return AKVI_FNAME_OTHER;
    if (sscanf(name, "%llu-%llu%n", &r, &t, &used) != 2 || used == 0) {
        /* DIR/runs also holds reverse maps: "<run>-rmap.sst". */
        used = 0;
        if (strcmp(ext, ".sst") != 0 || sscanf(name, "%llu-rmap%n", &r, &used) != 1 || used == 0)
            return AKVI_FNAME_OTHER;
        t = AKVI_RMAP_SST;
    }
    const char *rest = name + used;
    size_t el = strlen(ext);
    if (strncmp(rest, ext, el) != 0)
        return AKVI_FNAME_OTHER;
    rest += el;
    *run = r;
    *sst = t;
    return rest[0] == 0 ? AKVI_FNAME_FILE : strcmp(rest, ".tmp") == 0 ? AKVI_FNAME_TEMP : AKVI_FNAME_OTHER;
}

/* "<run>-<sst><ext>" names in dir: kept when keep() says so, temp names
 * ("<ext>.tmp") deleted, any other name left alone. */
static void sweep(const char *dir, const char *ext, bool (*keep)(void *arg, uint64_t run, uint64_t sst),
                  void *arg)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        uint64_t run, sst;
        int kind = akvi_file_name_parse(e->d_name, ext, &run, &sst);
        if (kind == AKVI_FNAME_OTHER || (kind == AKVI_FNAME_FILE && keep(arg, run, sst)))
            continue;
        char *p = akvi_path_join(dir, e->d_name);
        if (p)
            unlink(p);
        free(p);
    }
    if (d)
        closedir(d);
}

void akvi_sweep_filter_files(const char *fdir, bool (*keep)(void *arg, uint64_t run, uint64_t sst), void *arg)
{
    sweep(fdir, ".akf", keep, arg);
}

void akvi_sweep_run_files(const char *dir, bool (*keep)(void *arg, uint64_t run, uint64_t sst), void *arg)
{
    sweep(dir, ".sst", keep, arg);
}

static void encode_sst(akvi_wbuf *w, const akvi_cat_sst *s)
{
    akvi_w_u64(w, s->id);
    akvi_cat_sst_put_fields(w, s);
}

static void encode_into(const akvi_catalog *c, uint32_t version, akvi_wbuf *w)
{
    akvi_w_bytes(w, CAT_MAGIC, 4);
    akvi_w_u32(w, version);
    akvi_w_u32(w, c->layout);
    akvi_w_u64(w, c->seed);
    akvi_w_u64(w, c->seq);
    akvi_w_u64(w, c->next_run_id);
    akvi_w_u64(w, c->flushed_mem_gen);
    size_t pl = strnlen(c->policy, sizeof c->policy);
    if (version >= 3) {
        akvi_w_f64(w, pl ? c->bits_per_key : 0);
        akvi_w_u16(w, (uint16_t)pl);
        akvi_w_bytes(w, c->policy, pl);
    }
    akvi_w_u32(w, (uint32_t)c->n_run);
    for (size_t i = 0; i < c->n_run; i++) {
        const akvi_cat_run *r = &c->runs[i];
        akvi_w_u64(w, r->id);
        akvi_w_u32(w, r->level);
        akvi_w_u32(w, r->prefix_bits);
        akvi_w_u64(w, r->keys);
        akvi_w_u64(w, r->bytes);
        akvi_w_u64(w, r->raw_bytes);
        if (version >= 4)
            akvi_w_u32(w, r->files ? RUN_FILES : 0);
        akvi_w_u32(w, (uint32_t)r->n_sst);
        for (size_t j = 0; j < r->n_sst; j++)
            encode_sst(w, &r->ssts[j]);
    }
}

int akvi_catalog_encode(const akvi_catalog *c, uint8_t **buf, size_t *len)
{
    return akvi_catalog_encode_version(c, CAT_VERSION, buf, len);
}

int akvi_catalog_encode_version(const akvi_catalog *c, uint32_t version, uint8_t **buf, size_t *len)
{
    if (version < 2 || version > CAT_VERSION)
        return akvi_err(AKV_EINVAL, "catalog record: cannot write version %u", version);
    for (size_t i = 0; version < 4 && i < c->n_run; i++)
        if (c->runs[i].files)
            return akvi_err(AKV_EINVAL, "catalog record: version %u cannot record run %llu's files", version,
                            (unsigned long long)c->runs[i].id);
    akvi_wbuf w = {NULL, 0};
    encode_into(c, version, &w);
    uint8_t *p = malloc(w.len + 8);
    if (!p)
        return akvi_err(AKV_ENOMEM, "out of memory encoding the catalog");
    w = (akvi_wbuf){p, 0};
    encode_into(c, version, &w);
    akvi_w_u64(&w, XXH64(p, w.len, 0));
    *buf = p;
    *len = w.len;
    return AKV_OK;
}

static uint8_t *take_copy(akvi_rbuf *r, size_t *len)
{
    uint32_t n = akvi_r_u32(r);
    const uint8_t *s = akvi_r_take(r, n);
    if (!s || n > AKV_MAX_KEY_BYTES + 8) {
        r->err = true;
        return NULL;
    }
    uint8_t *p = malloc(n ? n : 1);
    if (!p) {
        r->err = true;
        return NULL;
    }
    memcpy(p, s, n);
    *len = n;
    return p;
}

void akvi_cat_sst_get_fields(akvi_rbuf *r, akvi_cat_sst *s, bool with_digest)
{
    s->keys = akvi_r_u64(r);
    s->bytes = akvi_r_u64(r);
    s->prefix = akvi_r_u64(r);
    s->digest = with_digest ? akvi_r_u64(r) : 0; /* 0: not recorded */
    uint8_t kl = akvi_r_u8(r);
    /* A kind name: 1..15 bytes, no NUL (the encoder writes strnlen bytes). */
    if (kl == 0 || kl >= sizeof s->kind || !akvi_r_bytes(r, s->kind, kl) || memchr(s->kind, 0, kl)) {
        r->err = true;
        return;
    }
    s->kind[kl] = 0;
    s->smallest = take_copy(r, &s->smallest_len);
    s->largest = take_copy(r, &s->largest_len);
}

static void decode_sst(akvi_rbuf *r, akvi_cat_sst *s, uint32_t version)
{
    s->id = akvi_r_u64(r);
    akvi_cat_sst_get_fields(r, s, version >= 2);
}

/*
 * What lookups rely on, in either layout: SST ids ascending (each names its
 * own filter file), prefixes inside 2^prefix_bits and non-decreasing (hash
 * routing is a binary search over them), each SST's smallest <= largest and
 * ranges ascending without overlap (ordered routing is a binary search over
 * them; in the hash layout internal keys start with h.hi, so they ascend
 * with the prefixes).
 */
static bool run_consistent(const akvi_cat_run *run)
{
    for (size_t j = 0; j < run->n_sst; j++) {
        const akvi_cat_sst *s = &run->ssts[j], *p = j ? &run->ssts[j - 1] : NULL;
        if (s->prefix >> run->prefix_bits != 0 || /* decode_run checked prefix_bits <= 30 */
            akvi_bytes_cmp(s->smallest, s->smallest_len, s->largest, s->largest_len) > 0)
            return false;
        if (p && (s->id <= p->id || s->prefix < p->prefix ||
                  akvi_bytes_cmp(p->largest, p->largest_len, s->smallest, s->smallest_len) >= 0))
            return false;
    }
    return true;
}

static void decode_run(akvi_rbuf *r, akvi_cat_run *run, uint32_t version)
{
    run->id = akvi_r_u64(r);
    run->level = akvi_r_u32(r);
    run->prefix_bits = akvi_r_u32(r);
    run->keys = akvi_r_u64(r);
    run->bytes = akvi_r_u64(r);
    run->raw_bytes = akvi_r_u64(r);
    uint32_t flags = version >= 4 ? akvi_r_u32(r) : 0;
    run->files = flags & RUN_FILES;
    uint32_t n = akvi_r_u32(r);
    /* Each SST takes at least 45 bytes (53 from version 2): reject counts
     * the buffer cannot hold. */
    size_t min_sst = version >= 2 ? 53 : 45;
    if (r->err || run->level >= AKV_MAX_LEVELS || run->prefix_bits > 30 || (flags & ~RUN_FILES) ||
        n > (r->len - r->off) / min_sst) {
        r->err = true;
        return;
    }
    run->ssts = calloc(n ? n : 1, sizeof *run->ssts);
    if (!run->ssts) {
        r->err = true;
        return;
    }
    run->n_sst = n;
    for (uint32_t j = 0; j < n && !r->err; j++)
        decode_sst(r, &run->ssts[j], version);
    if (!r->err && !run_consistent(run))
        r->err = true;
}

/* Version 3: the slot policy and bits per key, both or neither (zero
 * length: not recorded). The text is printable ASCII without blanks; whether
 * it parses is for open to say (docs/format.md §6). */
static void decode_policy(akvi_rbuf *r, akvi_catalog *c)
{
    c->bits_per_key = akvi_r_f64(r);
    uint16_t n = akvi_r_u16(r);
    if (r->err || n >= sizeof c->policy || !akvi_r_bytes(r, c->policy, n)) {
        r->err = true;
        return;
    }
    c->policy[n] = 0;
    bool bits_ok = n ? c->bits_per_key > 0 && c->bits_per_key <= 64 : c->bits_per_key == 0;
    for (uint16_t i = 0; i < n && bits_ok; i++)
        bits_ok = c->policy[i] > ' ' && c->policy[i] < 0x7f;
    /* -0.0 compares equal to 0 but would not re-encode to the same bytes. */
    if (!bits_ok || (n == 0 && signbit(c->bits_per_key)))
        r->err = true;
}

int akvi_catalog_decode(const uint8_t *buf, size_t len, akvi_catalog *c)
{
    memset(c, 0, sizeof *c);
    if (len < 48 || memcmp(buf, CAT_MAGIC, 4) != 0)
        return akvi_err(AKV_ECORRUPT, "catalog record: bad magic or size");
    akvi_rbuf t = {buf + len - 8, 8, 0, false};
    if (akvi_r_u64(&t) != XXH64(buf, len - 8, 0))
        return akvi_err(AKV_ECORRUPT, "catalog record: checksum mismatch");
    akvi_rbuf r = {buf, len - 8, 4, false};
    uint32_t version = akvi_r_u32(&r);
    if (version < 1 || version > CAT_VERSION)
        return akvi_err(AKV_ENOTSUP, "catalog record: unknown format version %u", version);
    c->layout = akvi_r_u32(&r);
    c->seed = akvi_r_u64(&r);
    c->seq = version >= 2 ? akvi_r_u64(&r) : 0;
    c->next_run_id = akvi_r_u64(&r);
    c->flushed_mem_gen = akvi_r_u64(&r);
    if (version >= 3)
        decode_policy(&r, c);
    if (version >= 3 && r.err)
        return akvi_err(AKV_ECORRUPT, "catalog record: bad slot policy or bits per key");
    uint32_t n = akvi_r_u32(&r);
    if (r.err || (c->layout != AKV_LAYOUT_HASH && c->layout != AKV_LAYOUT_ORDERED))
        return akvi_err(AKV_ECORRUPT, "catalog record: bad layout");
    /* Each run takes at least 44 bytes: reject counts the buffer cannot hold. */
    if (n > (r.len - r.off) / 44)
        return akvi_err(AKV_ECORRUPT, "catalog record: bad run count");
    c->runs = calloc(n ? n : 1, sizeof *c->runs);
    if (!c->runs)
        return akvi_err(AKV_ENOMEM, "out of memory decoding the catalog");
    c->n_run = n;
    for (uint32_t i = 0; i < n && !r.err; i++) {
        decode_run(&r, &c->runs[i], version);
        /* Run ids are allocated below next_run_id: one at or above it would
         * be handed out again. */
        if (c->runs[i].id >= c->next_run_id)
            r.err = true;
    }
    if (r.err || r.off != r.len) {
        akvi_catalog_free(c);
        return akvi_err(AKV_ECORRUPT, "catalog record: truncated or inconsistent");
    }
    return AKV_OK;
}

void akvi_cat_run_free(akvi_cat_run *r)
{
    for (size_t j = 0; j < r->n_sst; j++) {
        free(r->ssts[j].smallest);
        free(r->ssts[j].largest);
    }
    free(r->ssts);
    r->ssts = NULL;
    r->n_sst = 0;
}

const akvi_cat_run *akvi_catalog_run(const akvi_catalog *c, uint64_t id)
{
    for (size_t i = 0; i < c->n_run; i++)
        if (c->runs[i].id == id)
            return &c->runs[i];
    return NULL;
}

void akvi_catalog_free(akvi_catalog *c)
{
    for (size_t i = 0; i < c->n_run; i++)
        akvi_cat_run_free(&c->runs[i]);
    free(c->runs);
    memset(c, 0, sizeof *c);
}

/* ---- the two catalog files ---------------------------------------------- */

static void slot_path(const char *dir, uint64_t seq, char *out, size_t cap)
{
    snprintf(out, cap, "%s/CATALOG.%u", dir, (unsigned)(seq & 1));
}

static void patch_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int write_slot(akv_db *db, uint8_t *buf, size_t len, uint64_t seq)
{
    char path[4096];
    slot_path(db->dir, seq, path, sizeof path);
    int rc = akvi_file_rewrite(path, buf, len);
    if (rc != AKV_OK) {
        free(buf);
        return rc;
    }
    free(db->cat.buf);
    db->cat.buf = buf;
    db->cat.len = len;
    db->cat.seq = seq;
    return AKV_OK;
}

int akvi_catalog_store(akv_db *db, akvi_catalog *c)
{
    c->seq = db->cat.seq + 1;
    snprintf(c->policy, sizeof c->policy, "%s", db->policy_text);
    c->bits_per_key = db->opt.bits_per_key;
    if (c->next_run_id < db->cat.run_id_bound)
        c->next_run_id = db->cat.run_id_bound;
    uint8_t *buf;
    size_t len;
    int rc = akvi_catalog_encode(c, &buf, &len);
    if (rc == AKV_OK)
        rc = write_slot(db, buf, len, c->seq);
    if (rc == AKV_OK)
        db->cat.run_id_bound = c->next_run_id;
    return rc;
}

int akvi_catalog_reserve(akv_db *db, uint64_t id)
{
    akvi_mutex_lock(&db->cat.mu, AKVI_RANK_CAT);
    int rc = AKV_OK;
    if (id >= db->cat.run_id_bound) {
        uint8_t *buf = db->cat.buf ? malloc(db->cat.len) : NULL;
        if (!buf)
            rc = akvi_err(db->cat.buf ? AKV_ENOMEM : AKV_EINVAL, "no catalog to reserve run id %llu in",
                          (unsigned long long)id);
        else {
            memcpy(buf, db->cat.buf, db->cat.len);
            uint64_t seq = db->cat.seq + 1;
            patch_u64(buf + CAT_OFF_SEQ, seq);
            patch_u64(buf + CAT_OFF_NEXT, id + 1);
            patch_u64(buf + db->cat.len - 8, XXH64(buf, db->cat.len - 8, 0));
            rc = write_slot(db, buf, db->cat.len, seq);
            if (rc == AKV_OK)
                db->cat.run_id_bound = id + 1;
        }
    }
    akvi_mutex_unlock(&db->cat.mu, AKVI_RANK_CAT);
    return rc;
}

int akvi_catalog_load_slot(const char *dir, unsigned slot, akvi_catalog *c)
{
    char path[4096];
    slot_path(dir, slot, path, sizeof path);
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = akvi_file_read(path, &buf, &len);
    if (rc == AKV_OK)
        rc = akvi_catalog_decode(buf, len, c);
    free(buf);
    if (rc == AKV_OK && (c->seq & 1) != (slot & 1)) {
        akvi_catalog_free(c);
        rc = akvi_err(AKV_ECORRUPT, "catalog record with sequence %llu in the wrong slot",
                      (unsigned long long)c->seq);
    }
    return rc;
}

int akvi_catalog_load(const char *dir, akvi_catalog *out, char *note, size_t note_cap)
{
    akvi_catalog got[2];
    int rc[2];
    char msg[2][512];
    bool present[2];
    if (note_cap)
        note[0] = 0;
    for (int i = 0; i < 2; i++) {
        char path[4096];
        slot_path(dir, (uint64_t)i, path, sizeof path);
        uint8_t *buf = NULL;
        size_t len = 0;
        rc[i] = akvi_file_read(path, &buf, &len);
        present[i] = rc[i] != AKV_NOTFOUND;
        if (rc[i] == AKV_OK) {
            rc[i] = akvi_catalog_decode(buf, len, &got[i]);
            if (rc[i] == AKV_OK && (got[i].seq & 1) != (uint64_t)i) {
                akvi_catalog_free(&got[i]);
                rc[i] = akvi_err(AKV_ECORRUPT, "catalog record with sequence %llu in the wrong slot",
                                 (unsigned long long)got[i].seq);
            }
        }
        free(buf);
        snprintf(msg[i], sizeof msg[i], "%s", akv_errmsg());
    }
    if (!present[0] && !present[1])
        return akvi_err(AKV_NOTFOUND, "%s holds no catalog file", dir);
    int best = -1;
    for (int i = 0; i < 2; i++)
        if (rc[i] == AKV_OK && (best < 0 || got[i].seq > got[best].seq))
            best = i;
    if (best < 0) {
        return akvi_err(rc[0] == AKV_ENOMEM || rc[1] == AKV_ENOMEM ? AKV_ENOMEM : AKV_ECORRUPT,
                        "both catalog files are unusable (CATALOG.0: %s; CATALOG.1: %s)", msg[0], msg[1]);
    }
    int other = 1 - best;
    if (rc[other] == AKV_OK)
        akvi_catalog_free(&got[other]);
    else if (note_cap)
        snprintf(note, note_cap, "CATALOG.%d is unusable (%s); using CATALOG.%d (sequence %llu)", other,
                 msg[other], best, (unsigned long long)got[best].seq);
    *out = got[best];
    return AKV_OK;
}

void akvi_catstate_init(akvi_catstate *cs)
{
    pthread_mutex_init(&cs->mu, NULL);
}

void akvi_catstate_destroy(akvi_catstate *cs)
{
    pthread_mutex_destroy(&cs->mu);
    free(cs->buf);
    cs->buf = NULL;
}
