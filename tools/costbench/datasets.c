/*
 * datasets.c — seeded generators for the Shalla-like URL list and YCSB-style
 * keys (see datasets.h). Filters only ever see the XXH3-128 hash of a key,
 * so what matters is that keys are distinct, deterministic and realistic in
 * length and alphabet; the generators guarantee distinctness by embedding
 * each key's index.
 */
#include "tools/filterbench/datasets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adaptkv/filter.h"

#define SHALLA_POS 1491178u
#define SHALLA_NEG 1435527u
#define YCSB_POS   12500611u
#define YCSB_NEG   11574201u

typedef struct dataset {
    const char *name;
    size_t npos, nneg;
    int (*key)(uint64_t seed, uint64_t i, char *buf, size_t cap);
} dataset;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static const char *const syllables[] = {"ka",   "to",  "ri",   "me",    "lo",   "sa",   "net",  "web",
                                        "porn", "bet", "ad",   "click", "shop", "free", "max",  "cam",
                                        "play", "win", "tube", "vid",   "star", "hot",  "link", "top",
                                        "x",    "zo",  "mi",   "pro",   "dl",   "warez"};
static const char *const tlds[] = {"com", "com", "com",   "com", "net", "net", "org", "de", "ru", "info",
                                   "biz", "nl",  "co.uk", "pl",  "fr",  "it",  "cn",  "us", "to", "cc"};
static const char *const hosts[] = {"", "", "", "www.", "www.", "ads.", "m.", "cdn.", "img.", "banner."};
static const char *const exts[] = {"", ".html", ".php", ".htm", "/", ".jpg", ".asp"};

#define PICK(arr, r) arr[(r) % (sizeof arr / sizeof *arr)]

/* Append to buf at *len without overflowing cap. */
static void put(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t n = strlen(s);
    if (*len + n >= cap)
        n = *len + 1 < cap ? cap - 1 - *len : 0;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = 0;
}

static void put_word(char *buf, size_t cap, size_t *len, uint64_t *rng, unsigned max_syl)
{
    unsigned n = 1 + (unsigned)(rng_next(rng) % max_syl);
    for (unsigned i = 0; i < n; i++)
        put(buf, cap, len, PICK(syllables, rng_next(rng)));
}

/* host? word[-word]<id36>.tld[/dir/file.ext] — the base-36 id keeps every
 * key distinct across positives and negatives. */
static int shalla_key(uint64_t seed, uint64_t i, char *buf, size_t cap)
{
    uint64_t rng = seed * 0x9e3779b97f4a7c15ULL ^ (i + 1) * 0xd1b54a32d192ed03ULL;
    size_t len = 0;
    char id[16];
    int p = (int)sizeof id - 1;
    id[p] = 0;
    for (uint64_t v = i; p == (int)sizeof id - 1 || v; v /= 36)
        id[--p] = "0123456789abcdefghijklmnopqrstuvwxyz"[v % 36];
    if (cap)
        buf[0] = 0;
    put(buf, cap, &len, PICK(hosts, rng_next(&rng)));
    put_word(buf, cap, &len, &rng, 3);
    if (rng_next(&rng) % 4 == 0) {
        put(buf, cap, &len, "-");
        put_word(buf, cap, &len, &rng, 2);
    }
    put(buf, cap, &len, id + p);
    put(buf, cap, &len, ".");
    put(buf, cap, &len, PICK(tlds, rng_next(&rng)));
    if (rng_next(&rng) % 100 < 35) { /* about a third of the list are URLs with paths */
        unsigned dirs = (unsigned)(rng_next(&rng) % 3);
        for (unsigned d = 0; d <= dirs; d++) {
            put(buf, cap, &len, "/");
            put_word(buf, cap, &len, &rng, 3);
        }
        put(buf, cap, &len, PICK(exts, rng_next(&rng)));
    }
    return (int)len;
}

/* YCSB's key name for a key number: "user" + |FNV-1a-64 over its 8 bytes|. */
static int ycsb_key(uint64_t seed, uint64_t i, char *buf, size_t cap)
{
    uint64_t v = (seed << 40) ^ i, h = 0xcbf29ce484222325ULL;
    for (int b = 0; b < 8; b++) {
        h ^= v & 0xff;
        v >>= 8;
        h *= 1099511628211ULL;
    }
    int64_t s = (int64_t)h;
    if (s < 0 && s != INT64_MIN)
        s = -s;
    return snprintf(buf, cap, "user%lld", (long long)s);
}

static const dataset datasets[] = {
    {"shalla", SHALLA_POS, SHALLA_NEG, shalla_key},
    {"ycsb", YCSB_POS, YCSB_NEG, ycsb_key},
};

static const dataset *find(const char *name)
{
    for (size_t i = 0; name && i < sizeof datasets / sizeof *datasets; i++)
        if (strcmp(datasets[i].name, name) == 0)
            return &datasets[i];
    return NULL;
}

int akv_dataset_key(const char *name, uint64_t seed, uint64_t i, char *buf, size_t cap)
{
    const dataset *d = find(name);
    return d ? d->key(seed, i, buf, cap) : -1;
}

static void hash_range(const dataset *d, uint64_t seed, uint64_t first, size_t n, akv_hash *out)
{
    char buf[256];
    for (size_t i = 0; i < n; i++) {
        int len = d->key(seed, first + i, buf, sizeof buf);
        size_t l = len < 0 ? 0 : (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1;
        out[i] = akv_hash_key(buf, l, seed);
    }
}

int akv_dataset_generate(const char *name, uint64_t seed, akv_hash **pos, size_t *npos, akv_hash **neg,
                         size_t *nneg)
{
    const dataset *d = find(name);
    if (!d || !pos || !npos || !neg || !nneg)
        return AKV_EINVAL;
    akv_hash *p = malloc(d->npos * sizeof *p), *q = malloc(d->nneg * sizeof *q);
    if (!p || !q) {
        free(p);
        free(q);
        return AKV_ENOMEM;
    }
    hash_range(d, seed, 0, d->npos, p);
    hash_range(d, seed, d->npos, d->nneg, q);
    *pos = p;
    *npos = d->npos;
    *neg = q;
    *nneg = d->nneg;
    return AKV_OK;
}
