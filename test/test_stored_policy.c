/*
 * test_stored_policy.c — the database remembers how it was made: the slot
 * policy and bits per key are stored in the catalog (docs/format.md §6). A
 * reopen without them keeps the stored ones; a reopen with others uses them
 * for new SSTs only, says so once through the log hook and stores them; a
 * catalog of version 2 (no policy) opens with the options and records them;
 * a stored policy that does not parse is refused with AKV_ECORRUPT naming
 * the file, and akv_repair resolves it. Every written key is read back after
 * every reopen (no false negatives across kinds).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "adaptkv/adaptkv.h"
#include "engine/internal.h"
#include "support/damage.h"
#include "support/kvmodel.h"
#include "support/numbered.h"

/* ---- the log hook ---------------------------------------------------------- */

typedef struct logbook {
    pthread_mutex_t mu;
    int policy_lines; /* messages about the slot policy */
    char last[1024];  /* the last of them */
} logbook;

static void record(void *arg, const char *msg)
{
    logbook *b = arg;
    pthread_mutex_lock(&b->mu);
    if (strstr(msg, "slot policy")) {
        b->policy_lines++;
        snprintf(b->last, sizeof b->last, "%s", msg);
    }
    pthread_mutex_unlock(&b->mu);
}

static logbook *book_new(void)
{
    logbook *b = calloc(1, sizeof *b);
    cr_assert_not_null(b);
    pthread_mutex_init(&b->mu, NULL);
    return b;
}

static void book_free(logbook *b)
{
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* ---- a database with a few L0 runs -------------------------------------------- */

/* Options as an application that sets neither policy nor bits per key;
 * no automatic compaction within these tests' few flushes. */
static void opts(akv_options *o, akv_layout layout, logbook *b)
{
    akv_options_init(o);
    o->layout = layout;
    o->memtable_bytes = 1 << 20;
    o->sst_target_bytes = 16 << 10;
    o->block_cache_bytes = 1 << 20;
    o->l0_compaction_trigger = 8;
    o->l0_stall_runs = 20;
    o->rest_compaction = 0;
    /* No L0 front: the L0 slots then get their share of the stored bits
     * per key, which the tests read back (a front takes about half of it
     * from the L0 runs behind it: docs/design.md, "The L0 front"). */
    o->l0_front = 0;
    o->log = record;
    o->log_arg = b;
}

/* Keys [from, to), then a flush: one more L0 run. */
static void load(akv_db *db, unsigned from, unsigned to)
{
    akvt_put_numbered(db, from, to);
    cr_assert_eq(akv_flush(db), AKV_OK, "%s", akv_errmsg());
}

static akv_db *open_ok(const char *dir, const akv_options *o)
{
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, o, &db), AKV_OK, "open: %s", akv_errmsg());
    return db;
}

/* How many run slots of `level` have `kind`, and how many it has in all. */
static size_t slots_of(akv_db *db, int level, const char *kind, size_t *total)
{
    akv_slot_info *rows = NULL;
    size_t n = 0, k = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    *total = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].level == level) {
            (*total)++;
            k += strcmp(rows[i].kind, kind) == 0;
        }
    akv_free(rows);
    return k;
}

static const char *guard_kind(akv_db *db, char *out, size_t cap)
{
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    cr_assert(n >= 1 && rows[0].level == -1);
    snprintf(out, cap, "%s", rows[0].kind);
    akv_free(rows);
    return out;
}

/* ---- the catalog files, rewritten as a test needs -------------------------------- */

static void write_file(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(buf, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* Both catalog slots: `rec` (valid checksum) with the newest catalog's
 * sequence in its own slot, and a copy with the sequence before it in the
 * other, so neither slot is left to fall back on. `edit` changes the
 * encoded record (NULL: none); it returns the new length. */
typedef size_t (*edit_fn)(uint8_t *rec, size_t len);

static void rewrite_catalogs(const char *dir, const char *policy, double bits, uint32_t version, edit_fn edit)
{
    akvi_catalog c;
    char note[700];
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK, "%s", akv_errmsg());
    snprintf(c.policy, sizeof c.policy, "%s", policy);
    c.bits_per_key = bits;
    uint64_t seq = c.seq;
    for (int k = 0; k < 2; k++) {
        c.seq = seq - (uint64_t)k;
        uint8_t *buf;
        size_t len;
        cr_assert_eq(akvi_catalog_encode_version(&c, version, &buf, &len), AKV_OK, "%s", akv_errmsg());
        if (edit)
            len = edit(buf, len);
        uint64_t h = XXH64(buf, len - 8, 0);
        for (int i = 0; i < 8; i++)
            buf[len - 8 + (size_t)i] = (uint8_t)(h >> (8 * i));
        char path[700];
        snprintf(path, sizeof path, "%s/CATALOG.%u", dir, (unsigned)(c.seq & 1));
        write_file(path, buf, len);
        free(buf);
    }
    akvi_catalog_free(&c);
}

/* ---- the tests --------------------------------------------------------------------- */

static void keeps_stored(akv_layout layout)
{
    char dir[512], g[16];
    akvt_tmpdir(dir, sizeof dir, "policy");
    logbook *b = book_new();
    akv_options o;
    opts(&o, layout, b);
    o.slot_policy = "mem=cbf,l0=bloom,l1+=blocked";
    o.bits_per_key = 14;
    akv_db *db = open_ok(dir, &o);
    cr_assert_str_eq(akv_db_slot_policy(db), "mem=cbf,l0=bloom,l1+=blocked");
    load(db, 0, 3000);
    cr_assert_eq(akv_close(db), AKV_OK, "%s", akv_errmsg());

    /* Reopen as an application that never heard of the policy. */
    opts(&o, layout, b);
    db = open_ok(dir, &o);
    cr_assert_str_eq(akv_db_slot_policy(db), "mem=cbf,l0=bloom,l1+=blocked");
    cr_assert_eq(akv_db_bits_per_key(db), 14);
    cr_assert_str_eq(akv_db_policy_kind(db, -1), "cbf");
    cr_assert_str_eq(akv_db_policy_kind(db, 0), "bloom");
    cr_assert_str_eq(akv_db_policy_kind(db, 1), "blocked");
    cr_assert_str_eq(akv_db_policy_kind(db, AKV_MAX_LEVELS - 1), "blocked");
    cr_assert_null(akv_db_policy_kind(db, AKV_MAX_LEVELS));
    cr_assert_null(akv_db_policy_kind(db, -2));
    cr_assert_str_eq(guard_kind(db, g, sizeof g), "cbf");
    akvt_expect_numbered(db, 3000);
    /* New flushes use it, with its bits per key. */
    load(db, 3000, 6000);
    size_t total;
    cr_assert_eq(slots_of(db, 0, "bloom", &total), total);
    cr_assert_geq(total, 2);
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    /* 14 bits less what the guard takes: on a database this small a
     * quarter of B, and a deficit of the budget up to 15 % of a build's
     * share (docs/design.md, "Filter memory by level"); at 10 bits per
     * key the same would leave about 6.4. A slot of a few keys gets at
     * least 512 bits in all instead (engine/slotbuild.c). */
    for (size_t i = 1; i < n; i++)
        if (rows[i].keys * 0.6 * 14 >= 512)
            cr_assert(rows[i].bits_per_key > 0.6 * 14 && rows[i].bits_per_key < 16, "slot %zu: %.2f bits/key",
                      i, rows[i].bits_per_key);
    akv_free(rows);
    /* Compaction output takes the deeper levels' kind. */
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    int deepest = 0;
    for (int l = 1; l < AKV_MAX_LEVELS; l++)
        if (slots_of(db, l, "blocked", &total) > 0)
            deepest = l;
    cr_assert_gt(deepest, 0, "no blocked slot after compact");
    cr_assert_eq(slots_of(db, deepest, "blocked", &total), total);
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(b->policy_lines, 0, "an open that changed nothing logged: %s", b->last);
    cr_assert_eq(akv_close(db), AKV_OK);
    book_free(b);
    /* Opening with the options null (the defaults: hash layout) keeps it too. */
    if (layout == AKV_LAYOUT_HASH) {
        db = NULL;
        cr_assert_eq(akv_open(dir, NULL, &db), AKV_OK, "%s", akv_errmsg());
        cr_assert_str_eq(akv_db_slot_policy(db), "mem=cbf,l0=bloom,l1+=blocked");
        cr_assert_eq(akv_db_bits_per_key(db), 14);
        akvt_expect_numbered(db, 6000);
        cr_assert_eq(akv_close(db), AKV_OK);
    }
    akvt_rmrf(dir);
}

Test(stored_policy, reopen_without_options_keeps_it_hash)
{
    keeps_stored(AKV_LAYOUT_HASH);
}

Test(stored_policy, reopen_without_options_keeps_it_ordered)
{
    keeps_stored(AKV_LAYOUT_ORDERED);
}

Test(stored_policy, create_without_options_stores_the_defaults)
{
    char dir[512];
    akvt_tmpdir(dir, sizeof dir, "policy");
    logbook *b = book_new();
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH, b);
    akv_db *db = open_ok(dir, &o);
    char want[AKVI_POLICY_MAX];
    snprintf(want, sizeof want, "%s", akv_db_slot_policy(db));
    cr_assert_eq(akv_db_bits_per_key(db), 10);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvi_catalog c;
    char note[700];
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK);
    cr_assert_str_eq(c.policy, want);
    cr_assert_eq(c.bits_per_key, 10);
    akvi_catalog_free(&c);
    /* An empty policy string is "unset" as NULL is. */
    o.slot_policy = "";
    db = open_ok(dir, &o);
    cr_assert_str_eq(akv_db_slot_policy(db), want);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(b->policy_lines, 0, "%s", b->last);
    book_free(b);
    akvt_rmrf(dir);
}

Test(stored_policy, another_policy_applies_to_new_ssts_only)
{
    char dir[512], g[16];
    akvt_tmpdir(dir, sizeof dir, "policy");
    logbook *b = book_new();
    akv_options o;
    opts(&o, AKV_LAYOUT_HASH, b);
    o.slot_policy = "mem=sscf,l0+=bloom";
    akv_db *db = open_ok(dir, &o);
    load(db, 0, 3000);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(b->policy_lines, 0);

    /* The same policy spelled otherwise is no change. */
    opts(&o, AKV_LAYOUT_HASH, b);
    o.slot_policy = "l0=bloom";
    o.bits_per_key = 10;
    db = open_ok(dir, &o);
    cr_assert_eq(b->policy_lines, 0, "%s", b->last);
    cr_assert_eq(akv_close(db), AKV_OK);

    /* Another one: said once, through the log hook. */
    opts(&o, AKV_LAYOUT_HASH, b);
    o.slot_policy = "mem=cbf,l0+=blocked";
    o.bits_per_key = 12;
    db = open_ok(dir, &o);
    cr_assert_eq(b->policy_lines, 1);
    cr_assert(strstr(b->last, "changed") && strstr(b->last, "'mem=sscf,l0+=bloom' (10 bits/key)") &&
                  strstr(b->last, "'mem=cbf,l0+=blocked' (12 bits/key)") &&
                  strstr(b->last, "SSTs built from now on"),
              "log line: %s", b->last);
    cr_assert_str_eq(akv_db_slot_policy(db), "mem=cbf,l0+=blocked");
    cr_assert_str_eq(guard_kind(db, g, sizeof g), "cbf");
    size_t total;
    cr_assert_eq(slots_of(db, 0, "bloom", &total), total, "existing slots changed kind");
    cr_assert_geq(total, 1);
    size_t old_slots = total;
    akvt_expect_numbered(db, 3000);
    load(db, 3000, 6000);
    size_t bloom = slots_of(db, 0, "bloom", &total);
    cr_assert_eq(bloom, old_slots, "existing slots changed kind");
    cr_assert_gt(total, bloom, "the new flush has no slot");
    cr_assert_eq(slots_of(db, 0, "blocked", &total), total - bloom, "new slots are not of the new kind");
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(akv_close(db), AKV_OK);

    /* The next reopen without options keeps the new one, quietly; the
     * old slots still have their kind. */
    opts(&o, AKV_LAYOUT_HASH, b);
    db = open_ok(dir, &o);
    cr_assert_eq(b->policy_lines, 1, "a second line: %s", b->last);
    cr_assert_str_eq(akv_db_slot_policy(db), "mem=cbf,l0+=blocked");
    cr_assert_eq(akv_db_bits_per_key(db), 12);
    cr_assert_eq(slots_of(db, 0, "bloom", &total), old_slots);
    akvt_expect_numbered(db, 6000);

    /* Compaction rewrites everything with the new kind. */
    cr_assert_eq(akv_compact(db), AKV_OK, "%s", akv_errmsg());
    akv_slot_info *rows = NULL;
    size_t n = 0;
    cr_assert_eq(akv_slots(db, &rows, &n), AKV_OK);
    for (size_t i = 1; i < n; i++)
        cr_assert_str_eq(rows[i].kind, "blocked", "slot %zu", i);
    akv_free(rows);
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(akv_close(db), AKV_OK);

    /* Bits per key alone is a change too. */
    opts(&o, AKV_LAYOUT_HASH, b);
    o.bits_per_key = 16;
    db = open_ok(dir, &o);
    cr_assert_eq(b->policy_lines, 2);
    cr_assert(strstr(b->last, "(12 bits/key) to 'mem=cbf,l0+=blocked' (16 bits/key)"), "%s", b->last);
    akvt_expect_numbered(db, 6000);
    cr_assert_eq(akv_close(db), AKV_OK);
    opts(&o, AKV_LAYOUT_HASH, b);
    db = open_ok(dir, &o);
    cr_assert_eq(akv_db_bits_per_key(db), 16);
    cr_assert_eq(akv_close(db), AKV_OK);
    cr_assert_eq(b->policy_lines, 2, "%s", b->last);
    book_free(b);
    akvt_rmrf(dir);
}

/* A database of `keys` keys made with "l0+=bloom" (NULL: the default),
 * closed, its catalogs then rewritten with rewrite_catalogs(dir, policy,
 * bits, version, edit). o is left as the options it was made with. */
static void made_then_rewritten(char *dir, size_t cap, akv_options *o, akv_layout layout, logbook *b,
                                const char *made_with, unsigned keys, const char *policy, double bits,
                                uint32_t version, edit_fn edit)
{
    akvt_tmpdir(dir, cap, "policy");
    opts(o, layout, b);
    o->slot_policy = made_with;
    akv_db *db = open_ok(dir, o);
    load(db, 0, keys);
    cr_assert_eq(akv_close(db), AKV_OK);
    rewrite_catalogs(dir, policy, bits, version, edit);
}

Test(stored_policy, a_catalog_without_policy_records_the_options)
{
    char dir[512];
    logbook *b = book_new();
    akv_options o;
    made_then_rewritten(dir, sizeof dir, &o, AKV_LAYOUT_ORDERED, b, "l0+=bloom", 2000, "", 0,
                        AKVI_CATALOG_VERSION, NULL);
    akv_db *db;

    /* The database as a version before the stored policy left it (a
     * catalog that records none): opens with whatever the options say
     * (nothing to compare with: no log line), records it. */
    opts(&o, AKV_LAYOUT_ORDERED, b);
    o.slot_policy = "l0+=blocked";
    o.bits_per_key = 11;
    db = open_ok(dir, &o);
    cr_assert_eq(b->policy_lines, 0, "%s", b->last);
    size_t total;
    cr_assert_eq(slots_of(db, 0, "bloom", &total), total, "existing slots changed kind");
    akvt_expect_numbered(db, 2000);
    cr_assert_eq(akv_close(db), AKV_OK);
    akvi_catalog c;
    char note[700];
    cr_assert_eq(akvi_catalog_load(dir, &c, note, sizeof note), AKV_OK);
    cr_assert_str_eq(c.policy, "mem=sscf,l0+=blocked");
    cr_assert_eq(c.bits_per_key, 11);
    akvi_catalog_free(&c);
    opts(&o, AKV_LAYOUT_ORDERED, b);
    db = open_ok(dir, &o);
    cr_assert_str_eq(akv_db_slot_policy(db), "mem=sscf,l0+=blocked");
    cr_assert_eq(akv_db_bits_per_key(db), 11);
    akvt_expect_numbered(db, 2000);
    cr_assert_eq(akv_close(db), AKV_OK);
    book_free(b);
    akvt_rmrf(dir);
}

Test(stored_policy, a_stored_policy_that_does_not_parse_is_refused)
{
    char dir[512];
    logbook *b = book_new();
    akv_options o;
    made_then_rewritten(dir, sizeof dir, &o, AKV_LAYOUT_HASH, b, "l0+=bloom", 2000, "mem=sscf,l0=nosuchkind",
                        10, AKVI_CATALOG_VERSION, NULL);
    akv_db *db;

    char *before = akvt_dir_digest(dir);
    for (int given = 0; given < 2; given++) {
        opts(&o, AKV_LAYOUT_HASH, b);
        o.slot_policy = given ? "l0+=blocked" : NULL;
        db = NULL;
        cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT, "opened: %s", akv_errmsg());
        cr_assert_null(db);
        cr_assert(strstr(akv_errmsg(), "CATALOG.") && strstr(akv_errmsg(), "nosuchkind") &&
                      strstr(akv_errmsg(), "akv_repair"),
                  "message: %s", akv_errmsg());
    }
    char *after = akvt_dir_digest(dir);
    cr_assert_str_eq(before, after, "a refused open changed the directory");
    free(before);
    free(after);

    /* Repair stores the options' policy (here: unset, so the default). */
    opts(&o, AKV_LAYOUT_HASH, b);
    akv_repair_report rep;
    cr_assert_eq(akv_repair(dir, &o, &rep), AKV_OK, "%s", akv_errmsg());
    cr_assert(strstr(rep.text, "nosuchkind"), "repair report: %s", rep.text);
    akv_free(rep.text);
    db = open_ok(dir, &o);
    akvt_expect_numbered(db, 2000);
    cr_assert_eq(akv_close(db), AKV_OK);
    book_free(b);
    akvt_rmrf(dir);
}

/* A damaged policy field (here a blank in the text) fails the record's own
 * checks: both slots unusable, refused, never half-read. */
static size_t blank_in_policy(uint8_t *rec, size_t len)
{
    /* bits (f64) at 44, length (u16) at 52, text from 54: "l0+=bloom" */
    cr_assert(len > 60 && memcmp(rec + 54, "mem=", 4) == 0);
    rec[57] = ' ';
    return len;
}

Test(stored_policy, a_damaged_policy_field_is_refused)
{
    char dir[512];
    logbook *b = book_new();
    akv_options o;
    made_then_rewritten(dir, sizeof dir, &o, AKV_LAYOUT_HASH, b, NULL, 500, "mem=sscf,l0+=bloom", 10,
                        AKVI_CATALOG_VERSION, blank_in_policy);
    akv_db *db = NULL;
    cr_assert_eq(akv_open(dir, &o, &db), AKV_ECORRUPT);
    cr_assert(strstr(akv_errmsg(), "CATALOG.0") && strstr(akv_errmsg(), "slot policy"), "message: %s",
              akv_errmsg());
    book_free(b);
    akvt_rmrf(dir);
}
