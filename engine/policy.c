/*
 * policy.c — the slot policy: which filter kind guards the memtables and
 * which kind each run level gets ("mem=sscf,l0=aqf,l1+=aqf").
 *
 * Parsing is strict (unknown level names, unknown kinds, duplicates and
 * empty items are errors) because a typo silently falling back to a default
 * would invalidate every benchmark run with it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/internal.h"

/* First registered kind of a preference list. */
static const akv_filter_kind *first_kind(const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        const akv_filter_kind *k = akv_filter_kind_by_name(names[i]);
        if (k)
            return k;
    }
    return NULL;
}

/*
 * The default run kind is the adaptive kind that measures best at the
 * budget (docs/filters.md, "Choosing the default"): the binary fuse filter
 * with a verified list of fixed false positives at every budget measured
 * (fresh keys 0.39 % at 10 bits/key against ablocked's 1.02 %, 0.098 %
 * against the AQF's 0.37 % at 12, 0.005 % against 0.047 % at 16; lower
 * after adapting too). The fallbacks, if it is not registered, keep the
 * earlier order: blocked + list below 12 bits/key, the AQF from 12 up.
 */
#define AQF_FROM_BITS_PER_KEY 12.0
static const char *const k_run_pref_lean[] = {"afuse", "ablocked", "aqf", "blocked", "bloom", NULL};
static const char *const k_run_pref_rich[] = {"afuse", "aqf", "ablocked", "blocked", "bloom", NULL};
static const char *const k_mem_pref[] = {"sscf", "cbf", NULL};

static bool guard_capable(const akv_filter_kind *k)
{
    return k && (k->flags & AKV_FK_DYNAMIC) && k->insert && k->remove;
}

/* Parse "lN" or "lN+" into level and plus flag. */
static bool parse_level(const char *s, size_t n, int *level, bool *plus)
{
    if (n < 2 || s[0] != 'l' || !isdigit((unsigned char)s[1]))
        return false;
    int v = 0;
    size_t i = 1;
    while (i < n && isdigit((unsigned char)s[i])) {
        v = v * 10 + (s[i] - '0');
        if (v >= AKV_MAX_LEVELS)
            return false;
        i++;
    }
    *plus = (i < n && s[i] == '+');
    if (*plus)
        i++;
    *level = v;
    return i == n;
}

static int lookup_kind(const char *s, size_t n, const akv_filter_kind **out)
{
    char name[64];
    if (n == 0 || n >= sizeof name)
        return akvi_err(AKV_EINVAL, "slot policy: empty or overlong filter kind name");
    memcpy(name, s, n);
    name[n] = 0;
    *out = akv_filter_kind_by_name(name);
    if (!*out)
        return akvi_err(AKV_EINVAL, "unknown filter kind '%s'", name);
    return AKV_OK;
}

int akvi_policy_format(const akvi_policy *p, char *out, size_t cap)
{
    int off = snprintf(out, cap, "mem=%s", p->mem ? p->mem->name : "none");
    for (int l = 0; l < AKV_MAX_LEVELS && off >= 0 && (size_t)off < cap; l++)
        if (l == 0 || p->level[l] != p->level[l - 1])
            off += snprintf(out + off, cap - (size_t)off, ",l%d%s=%s", l,
                            (l + 1 < AKV_MAX_LEVELS && p->level[l + 1] == p->level[l]) ? "+" : "",
                            p->level[l]->name);
    if (off < 0 || (size_t)off >= cap)
        return akvi_err(AKV_EINVAL, "slot policy: its text is longer than %zu bytes", cap ? cap - 1 : 0);
    return AKV_OK;
}

static void describe(const akvi_policy *p, char *note, size_t cap)
{
    char text[AKVI_POLICY_MAX];
    if (note && cap)
        snprintf(note, cap, "slot policy: %s",
                 akvi_policy_format(p, text, sizeof text) == AKV_OK ? text : "(too long to show)");
}

/* One "name=kind" item. */
static int parse_item(const char *s, size_t n, akvi_policy *p, bool *mem_set, const akv_filter_kind **exact,
                      const akv_filter_kind **plus)
{
    const char *eq = memchr(s, '=', n);
    if (!eq)
        return akvi_err(AKV_EINVAL, "slot policy item '%.*s' is not name=kind", (int)n, s);
    size_t ln = (size_t)(eq - s);
    const akv_filter_kind *k = NULL;
    if (n == 8 && memcmp(s, "mem=none", 8) == 0) {
        p->mem = NULL;
        *mem_set = true;
        return AKV_OK;
    }
    int rc = lookup_kind(eq + 1, n - ln - 1, &k);
    if (rc != AKV_OK)
        return rc;
    if (ln == 3 && memcmp(s, "mem", 3) == 0) {
        if (*mem_set)
            return akvi_err(AKV_EINVAL, "slot policy names 'mem' twice");
        if (!guard_capable(k))
            return akvi_err(AKV_EINVAL, "filter kind '%s' cannot guard memtables (needs insert and remove)",
                            k->name);
        p->mem = k;
        *mem_set = true;
        return AKV_OK;
    }
    int level;
    bool is_plus;
    if (!parse_level(s, ln, &level, &is_plus))
        return akvi_err(AKV_EINVAL, "unknown level '%.*s' in slot policy (use mem, lN or lN+, N < %d)",
                        (int)ln, s, AKV_MAX_LEVELS);
    const akv_filter_kind **slot = is_plus ? &plus[level] : &exact[level];
    if (*slot)
        return akvi_err(AKV_EINVAL, "slot policy names level '%.*s' twice", (int)ln, s);
    *slot = k;
    return AKV_OK;
}

int akvi_policy_parse(const char *s, double bits_per_key, akvi_policy *out, char *note, size_t note_cap)
{
    akvi_policy p = {0};
    const akv_filter_kind *exact[AKV_MAX_LEVELS] = {0}, *plus[AKV_MAX_LEVELS] = {0};
    bool mem_set = false;
    if (s && *s) {
        const char *item = s;
        for (;;) {
            const char *end = strchr(item, ',');
            size_t n = end ? (size_t)(end - item) : strlen(item);
            if (n == 0)
                return akvi_err(AKV_EINVAL, "slot policy '%s' has an empty item", s);
            int rc = parse_item(item, n, &p, &mem_set, exact, plus);
            if (rc != AKV_OK)
                return rc;
            if (!end)
                break;
            item = end + 1;
        }
    }
    if (!mem_set)
        p.mem = first_kind(k_mem_pref);
    /* A level takes its exact entry, else the nearest "lN+" at or above it,
     * else the level above it, else the default run kind. */
    const akv_filter_kind *carry = NULL;
    for (int l = 0; l < AKV_MAX_LEVELS; l++) {
        if (plus[l])
            carry = plus[l];
        const akv_filter_kind *k = exact[l] ? exact[l] : carry;
        if (!k)
            k = l > 0 ? p.level[l - 1]
                      : first_kind(bits_per_key >= AQF_FROM_BITS_PER_KEY ? k_run_pref_rich : k_run_pref_lean);
        if (!k)
            return akvi_err(AKV_EINVAL, "no filter kind is registered");
        p.level[l] = k;
    }
    describe(&p, note, note_cap);
    *out = p;
    return AKV_OK;
}
