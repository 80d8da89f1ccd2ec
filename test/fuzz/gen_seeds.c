/*
 * gen_seeds.c — writes the seed corpora of test/fuzz from the library's own
 * output: small valid filters of every kind (and variants: layouts, shifts,
 * older payload versions), ShBF_A/ShBF_X blobs, catalogs and miss logs, and
 * for the tool parsers a few command lines, words, sizes and kvbench's own
 * sample workloads, traces and histogram; in the input formats the
 * harnesses read (see each fuzz_*.c).
 *
 *   test/fuzz/run.sh seeds      (builds this with the normal build and runs it)
 *
 * Output is deterministic; the committed seeds are its output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adaptkv/filter.h"
#include "engine/internal.h"
#include "filters/rbf.h"
#include "filters/shbf.h"
#include "filters/sscf.h"
#include "filters/vsbbf.h"
#include "util/codec.h"

static const char *g_root;

static void put(const char *target, const char *name, uint8_t mode, const uint8_t *pre, size_t npre,
                const uint8_t *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_root, target);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        perror(path);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/%s", g_root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&mode, 1, 1, f) != 1 || (npre && fwrite(pre, 1, npre, f) != npre) ||
        (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static akv_hash key(uint64_t space, uint64_t i)
{
    uint64_t k[2] = {space, i};
    return akv_hash_key(k, sizeof k, 0x5eed);
}

static void check(int rc, const char *what)
{
    if (rc != AKV_OK) {
        fprintf(stderr, "%s: %s\n", what, akv_strerror(rc));
        exit(1);
    }
}

static akv_filter *build(const char *kind, uint32_t flags, uint32_t num_hashes, size_t n, size_t n_neg)
{
    akv_filter_params p;
    akv_filter_params_init(&p);
    p.expected_keys = n;
    p.flags = flags;
    p.num_hashes = num_hashes;
    p.seed = 7;
    akv_hash keys[64];
    akv_negative neg[128];
    for (size_t i = 0; i < n; i++)
        keys[i] = key(1, i);
    for (size_t i = 0; i < n_neg; i++)
        neg[i] = (akv_negative){key(2, i), 1.0 + (double)(i % 5)};
    akv_filter *f = NULL;
    check(akv_filter_build(akv_filter_kind_by_name(kind), &p, keys, n, neg, n_neg, &f), kind);
    return f;
}

/* Mode 1 input: u16 id, u8 version, payload. `cut` removes bytes
 * [cut, cut + ncut) of the payload (an older version's layout). */
static void put_payload(const char *name, const akv_filter *f, uint16_t ver, size_t cut, size_t ncut)
{
    size_t len = 0;
    check(f->kind->save(f, NULL, &len), "save");
    uint8_t *p = malloc(len);
    check(f->kind->save(f, p, &len), "save");
    if (ncut) {
        memmove(p + cut, p + cut + ncut, len - cut - ncut);
        len -= ncut;
    }
    uint8_t pre[3] = {(uint8_t)f->kind->id, (uint8_t)(f->kind->id >> 8), (uint8_t)ver};
    put("filter", name, 1, pre, 3, p, len);
    free(p);
}

static void put_raw(const char *name, const akv_filter *f)
{
    uint8_t *b;
    size_t len;
    check(akv_filter_serialize(f, &b, &len), "serialize");
    put("filter", name, 0, NULL, 0, b, len);
    free(b);
}

/* Mode 4 input: the file the engine writes for the filter of SST 2 of run
 * 7 (its binding, then the envelope), read back from a scratch directory. */
static void put_bound(const char *name, const akv_filter *f, uint32_t prefix_bits)
{
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/akv-seeds-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror(dir);
        exit(1);
    }
    akvi_cat_sst ssts[3];
    memset(ssts, 0, sizeof ssts);
    for (size_t j = 0; j < 3; j++) {
        ssts[j].id = j;
        ssts[j].keys = 20;
        ssts[j].bytes = 900;
        ssts[j].prefix = j;
        ssts[j].digest = 0x1234 + j;
        snprintf(ssts[j].kind, sizeof ssts[j].kind, "%s", f->kind->name);
        ssts[j].smallest = (uint8_t *)"a";
        ssts[j].smallest_len = 1;
        ssts[j].largest = (uint8_t *)"zz";
        ssts[j].largest_len = 2;
    }
    akvi_cat_run run = {
        .id = 7, .level = 1, .prefix_bits = prefix_bits, .keys = 60, .n_sst = 3, .ssts = ssts};
    check(akvi_slot_write_file(dir, &run, 2, f), "bound filter file");
    snprintf(path, sizeof path, "%s/7-2.akf", dir);
    uint8_t *b;
    size_t len;
    check(akvi_file_read(path, &b, &len), "reading it back");
    put("filter", name, 4, NULL, 0, b, len);
    free(b);
    unlink(path);
    rmdir(dir);
}

static void filter_seeds(void)
{
    const akv_filter_kind *k;
    for (size_t i = 0; (k = akv_filter_kind_at(i)); i++) {
        bool costed = k->flags & AKV_FK_COSTED;
        akv_filter *f = build(k->name, 0, 0, 20, costed ? 40 : 0);
        char name[64];
        snprintf(name, sizeof name, "%s.payload", k->name);
        put_payload(name, f, k->payload_version, 0, 0);
        akv_filter_destroy(f);
    }
    struct {
        const char *name, *kind;
        uint32_t flags, k;
        size_t n_neg;
    } v[] = {
        {"rbf-milli.payload", "rbf", AKV_RBF_MILLI_K, 2500, 0},
        {"vsbbf-literal.payload", "vsbbf", AKV_VSBBF_LITERAL, 0, 0},
        {"shbf-t3.payload", "shbf", AKV_SHBF_SHIFTS(3), 0, 0},
        {"shbf-oddk.payload", "shbf", 0, 5, 0},
        {"sscf-static.payload", "sscf", AKV_SSCF_STATIC, 0, 20},
        {"sscf-wide.payload", "sscf", AKV_SSCF_WIDE, 0, 20},
        {"sscf-wide-static.payload", "sscf", AKV_SSCF_WIDE | AKV_SSCF_STATIC, 0, 20},
        {"habf-k4.payload", "habf", 0, 4, 60},
        {"cbf-k3.payload", "cbf", 0, 3, 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        akv_filter *f = build(v[i].kind, v[i].flags, v[i].k, 20, v[i].n_neg);
        put_payload(v[i].name, f, f->kind->payload_version, 0, 0);
        akv_filter_destroy(f);
    }
    /* Older payload versions: shbf 1 has no t field (bytes 16..19), sscf 1
     * is the wide layout. */
    akv_filter *f = build("shbf", 0, 0, 20, 0);
    put_payload("shbf-v1.payload", f, 1, 16, 4);
    put_raw("shbf.akf", f);
    akv_filter_destroy(f);
    f = build("sscf", AKV_SSCF_WIDE, 0, 20, 20);
    put_payload("sscf-v1.payload", f, 1, 0, 0);
    put_raw("sscf.akf", f);
    akv_filter_destroy(f);
    f = build("bloom", 0, 0, 20, 0);
    put_raw("bloom.akf", f);
    put_bound("bloom-bound.akf", f, 0);
    akv_filter_destroy(f);
    f = build("sscf", 0, 0, 20, 20);
    put_bound("sscf-bound.akf", f, 3);
    akv_filter_destroy(f);
    f = build("aqf", 0, 0, 20, 0);
    put_raw("aqf.akf", f);
    akv_filter_destroy(f);

    akv_hash s1[30], s2[30];
    for (size_t i = 0; i < 30; i++)
        s1[i] = key(3, i), s2[i] = key(3, i + 15);
    akvi_shbfa *a = NULL;
    check(akvi_shbfa_build(s1, 30, s2, 30, 0, 10, &a), "shbfa");
    uint8_t *b;
    size_t len;
    check(akvi_shbfa_serialize(a, &b, &len), "shbfa");
    put("filter", "shbfa.blob", 2, NULL, 0, b + 16, len - 24);
    free(b);
    akvi_shbfa_destroy(a);
    akvi_shbfx_item items[30];
    for (size_t i = 0; i < 30; i++)
        items[i] = (akvi_shbfx_item){s1[i], 1 + (uint32_t)(i % 4)};
    akvi_shbfx *x = NULL;
    check(akvi_shbfx_build(items, 30, &(akvi_shbfx_params){.k = 3, .bits_per_key = 10, .c = 6}, &x), "shbfx");
    check(akvi_shbfx_serialize(x, &b, &len), "shbfx");
    put("filter", "shbfx.blob", 3, NULL, 0, b + 16, len - 24);
    free(b);
    akvi_shbfx_destroy(x);
}

/* ---- catalogs ------------------------------------------------------------------ */

static void sst(akvi_cat_sst *s, uint64_t id, uint64_t prefix, const char *kind, const void *lo, size_t ll,
                const void *hi, size_t hl)
{
    memset(s, 0, sizeof *s);
    s->id = id;
    s->keys = 10 + id;
    s->bytes = 1000 * (id + 1);
    s->prefix = prefix;
    snprintf(s->kind, sizeof s->kind, "%s", kind);
    s->smallest = malloc(ll + 1);
    s->largest = malloc(hl + 1);
    memcpy(s->smallest, lo, ll);
    memcpy(s->largest, hi, hl);
    s->smallest_len = ll;
    s->largest_len = hl;
}

static void put_catalog(const char *name, akvi_catalog *c, bool raw)
{
    uint8_t *b;
    size_t len;
    check(akvi_catalog_encode(c, &b, &len), "catalog");
    akvi_catalog d;
    check(akvi_catalog_decode(b, len, &d), "catalog decode");
    akvi_catalog_free(&d);
    put("catalog", name, raw ? 0 : 1, NULL, 0, b, raw ? len : len - 8);
    free(b);
    akvi_catalog_free(c);
}

static void catalog_seeds(void)
{
    akvi_catalog c = {.layout = AKV_LAYOUT_HASH, .seed = 9, .next_run_id = 1};
    put_catalog("empty.body", &c, false);

    c = (akvi_catalog){.layout = AKV_LAYOUT_ORDERED, .seed = 0x1234, .next_run_id = 9, .flushed_mem_gen = 4,
                       .bits_per_key = 12};
    snprintf(c.policy, sizeof c.policy, "mem=sscf,l0=aqf,l1+=bloom");
    c.n_run = 2;
    c.runs = calloc(2, sizeof *c.runs);
    c.runs[0] = (akvi_cat_run){.id = 8, .level = 0, .keys = 20, .bytes = 2000, .raw_bytes = 2500};
    c.runs[0].n_sst = 1;
    c.runs[0].ssts = calloc(1, sizeof(akvi_cat_sst));
    sst(&c.runs[0].ssts[0], 0, 0, "aqf", "apple", 5, "melon", 5);
    c.runs[1] = (akvi_cat_run){.id = 3, .level = 1, .keys = 30, .bytes = 3000, .raw_bytes = 3500};
    c.runs[1].n_sst = 2;
    c.runs[1].ssts = calloc(2, sizeof(akvi_cat_sst));
    sst(&c.runs[1].ssts[0], 0, 0, "bloom", "", 0, "k", 1);
    sst(&c.runs[1].ssts[1], 1, 0, "bloom", "l", 1, "zz", 2);
    put_catalog("ordered.body", &c, false);

    c = (akvi_catalog){.layout = AKV_LAYOUT_HASH, .seed = 77, .next_run_id = 12, .flushed_mem_gen = 11,
                       .bits_per_key = 10};
    snprintf(c.policy, sizeof c.policy, "mem=none,l0+=aqf");
    c.n_run = 1;
    c.runs = calloc(1, sizeof *c.runs);
    c.runs[0] = (akvi_cat_run){.id = 11, .level = 2, .prefix_bits = 2, .keys = 40, .bytes = 8000};
    c.runs[0].n_sst = 3;
    c.runs[0].ssts = calloc(3, sizeof(akvi_cat_sst));
    uint8_t k[6][9] = {{0x00, 1, 2, 3, 4, 5, 6, 7, 'a'}, {0x3f, 1, 2, 3, 4, 5, 6, 7, 'b'},
                       {0x40, 0, 0, 0, 0, 0, 0, 0, 'c'}, {0x7f, 9, 9, 9, 9, 9, 9, 9, 'd'},
                       {0xc0, 0, 0, 0, 0, 0, 0, 1, 'e'}, {0xff, 1, 1, 1, 1, 1, 1, 1, 'f'}};
    sst(&c.runs[0].ssts[0], 0, 0, "aqf", k[0], 9, k[1], 9);
    sst(&c.runs[0].ssts[1], 1, 1, "aqf", k[2], 9, k[3], 9);
    sst(&c.runs[0].ssts[2], 2, 3, "sscf", k[4], 9, k[5], 9);
    put_catalog("hash.body", &c, false);

    c = (akvi_catalog){.layout = AKV_LAYOUT_HASH, .seed = 5, .next_run_id = 3, .flushed_mem_gen = 2};
    c.n_run = 1;
    c.runs = calloc(1, sizeof *c.runs);
    c.runs[0] = (akvi_cat_run){.id = 2, .level = 0, .keys = 2, .bytes = 900};
    c.runs[0].n_sst = 1;
    c.runs[0].ssts = calloc(1, sizeof(akvi_cat_sst));
    sst(&c.runs[0].ssts[0], 0, 0, "blocked", k[0], 9, k[5], 9);
    put_catalog("one.rec", &c, true);
}

/* ---- miss logs ----------------------------------------------------------------- */

static void put_misslog(const char *name, akvi_misslog *ml, uint8_t mode)
{
    uint8_t *b;
    size_t len;
    check(akvi_misslog_encode(ml, &b, &len), "misslog");
    put("misslog", name, mode, NULL, 0, b, (mode & 1) ? len - 8 : len);
    free(b);
    akvi_misslog_destroy(ml);
}

static void misslog_seeds(void)
{
    put_misslog("empty.body", akvi_misslog_create(4096), 1);
    akvi_misslog *ml = akvi_misslog_create(4096);
    for (uint64_t i = 0; i < 6; i++) {
        char kb[16];
        int n = snprintf(kb, sizeof kb, "key%llu", (unsigned long long)i);
        for (uint64_t r = 0; r <= i; r++)
            akvi_misslog_record(ml, key(4, i), kb, (size_t)n, 1.0 + (double)i);
    }
    akvi_misslog_hint(ml, key(4, 100), "hinted", 6, 50.0);
    put_misslog("six.body", ml, 1);
    ml = akvi_misslog_create(2u << 20);
    for (uint64_t i = 0; i < 40; i++)
        akvi_misslog_record(ml, key(5, i), &i, sizeof i, (double)(i % 3));
    put_misslog("forty-sharded.body", ml, 3);
    ml = akvi_misslog_create(4096);
    akvi_misslog_record(ml, key(6, 1), "x", 1, 2.0);
    put_misslog("one.rec", ml, 0);
}

/* ---- tool parsers ----------------------------------------------------------- */

static void put_text(const char *target, const char *name, uint8_t mode, const char *text)
{
    put(target, name, mode, NULL, 0, (const uint8_t *)text, strlen(text));
}

/* A file of the source tree (run from its root), as input of `mode`. */
static void put_file(const char *target, const char *name, uint8_t mode, const char *path)
{
    FILE *f = fopen(path, "rb");
    static uint8_t buf[8192];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (!f || ferror(f) || n == sizeof buf) {
        fprintf(stderr, "%s: missing, unreadable or too large for a seed\n", path);
        exit(1);
    }
    fclose(f);
    put(target, name, mode, NULL, 0, buf, n);
}

static void tool_seeds(void)
{
    put_text("kvshell", "put.line", 0, "put user1 \"a value\" ");
    put_text("kvshell", "scan.line", 0, "scan --limit 10 'from\\x00' \"\" to\\ \\\"end\\\"");
    put_text("kvshell", "escapes.line", 0, "get k\\x41\\n\\t\\r\\0\\\\ \\' \\\" \"it's\" 'say \"hi\"'");
    put_text("kvshell", "key.word", 1, "key\\x00with\\ttab and 'quotes' \\\\");
    put_text("kvshell", "value.word", 1, "\\xff\\xFEvalue");
    put_text("kvshell", "size-k", 2, "64K");
    put_text("kvshell", "size-mib", 2, "4MiB");
    put_text("kvshell", "size-b", 2, "1GB");
    put_file("kvbench", "workloada.props", 0, "workloads/workloada");
    put_file("kvbench", "workloade.props", 0, "workloads/workloade");
    put_file("kvbench", "workloadx.props", 0, "workloads/workloadx");
    put_text("kvbench", "escapes.props", 0,
             "# comment\n! comment\nname\\ with\\ blanks = value \\\n  continued\nkey:\\u0041\\t\n"
             "insertstart 5\r\nrecordcount=100\ninsertcount=50\nrequestdistribution=hotspot\n");
    put_file("kvbench", "basic-load.trace", 1, "test/data/ycsb/basic-load.txt");
    put_file("kvbench", "basic-run-fields.trace", 1, "test/data/ycsb/basic-run-fields.txt");
    put_file("kvbench", "fieldlengths.hist", 2, "test/data/ycsb/fieldlengths.hist");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_seeds DIR   (DIR = test/fuzz)\n");
        return 2;
    }
    g_root = argv[1];
    filter_seeds();
    catalog_seeds();
    misslog_seeds();
    tool_seeds();
    return 0;
}
