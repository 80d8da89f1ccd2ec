/*
 * every_call.c — a C program that calls every function <adaptkv/adaptkv.h>
 * declares, built only against the installed library:
 *
 *     cc -std=c17 every_call.c $(pkg-config --cflags --libs adaptkv)
 *
 * Usage: every_call DIR (a directory that does not exist yet; the program
 * creates DIR/db, DIR/copy and DIR/ordered). It checks every result and
 * prints "every_call: ok" on success, a line per failure on stderr
 * otherwise. test/test_install.c builds and runs it against the installed
 * shared library, and checks that it names every function the installed
 * adaptkv.h declares.
 */
#include <adaptkv/adaptkv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "every_call: FAIL %s (%s)\n", what, akv_errmsg());
        failures++;
    }
}

static void path(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

static void reads_and_writes(akv_db *db)
{
    check(akv_put(db, "a", 1, "1", 1) == AKV_OK, "akv_put");
    check(akv_put(db, "b", 1, "2", 1) == AKV_OK, "akv_put b");
    check(akv_delete(db, "b", 1) == AKV_OK, "akv_delete");
    void *v = NULL;
    size_t vl = 0;
    check(akv_get(db, "a", 1, &v, &vl) == AKV_OK && vl == 1 && memcmp(v, "1", 1) == 0, "akv_get");
    akv_free(v);
    akv_get_info info;
    check(akv_get_ex(db, "b", 1, NULL, NULL, &info) == AKV_NOTFOUND, "akv_get_ex");
    akv_pinned *pin = NULL;
    check(akv_get_pinned(db, "a", 1, &pin) == AKV_OK, "akv_get_pinned");
    const void *pv = akv_pinned_value(pin, &vl);
    check(pv && vl == 1 && memcmp(pv, "1", 1) == 0, "akv_pinned_value");
    akv_pinned_release(pin);
    check(akv_hint_negative(db, "nope", 4, 2.0) == AKV_OK, "akv_hint_negative");

    akv_batch *b = NULL;
    check(akv_batch_create(&b) == AKV_OK, "akv_batch_create");
    check(akv_batch_put(b, "c", 1, "3", 1) == AKV_OK, "akv_batch_put");
    check(akv_batch_delete(b, "a", 1) == AKV_OK, "akv_batch_delete");
    check(akv_batch_count(b) == 2, "akv_batch_count");
    check(akv_write(db, b, 0) == AKV_OK, "akv_write");
    akv_batch_clear(b);
    check(akv_batch_count(b) == 0, "akv_batch_clear");
    akv_batch_destroy(b);
    check(akv_get(db, "a", 1, NULL, NULL) == AKV_NOTFOUND, "the batch's delete");
    check(akv_put(db, "e", 1, "5", 1) == AKV_OK, "akv_put e"); /* live: c and e */
}

static void iterate(akv_db *db)
{
    akv_iter *it = NULL;
    check(akv_iter_create(db, &it) == AKV_OK, "akv_iter_create");
    size_t n = 0, kl, vl;
    for (akv_iter_seek_first(it); akv_iter_valid(it); akv_iter_next(it)) {
        check(akv_iter_key(it, &kl) != NULL && akv_iter_value(it, &vl) != NULL, "akv_iter_key/value");
        n++;
    }
    check(akv_iter_status(it) == AKV_OK && n == 2, "akv_iter_seek_first/next: 2 keys");
    akv_iter_seek_last(it);
    check(akv_iter_valid(it), "akv_iter_seek_last");
    akv_iter_prev(it);
    check(akv_iter_valid(it), "akv_iter_prev");
    akv_iter_seek(it, "c", 1);
    check(akv_iter_valid(it), "akv_iter_seek");
    (void)akv_iter_block_reads(it);
    check(akv_iter_set_upper_bound(it, "d", 1) ==
              (akv_db_layout(db) == AKV_LAYOUT_ORDERED ? AKV_OK : AKV_ENOTSUP),
          "akv_iter_set_upper_bound");
    akv_iter_destroy(it);
}

static void maintenance(akv_db *db, const char *dir)
{
    check(akv_flush(db) == AKV_OK, "akv_flush");
    check(akv_compact(db) == AKV_OK, "akv_compact");
    akv_stats st;
    check(akv_get_stats(db, &st) == AKV_OK && st.puts >= 3, "akv_get_stats");
    char *json = NULL;
    check(akv_stats_json(db, &json) == AKV_OK && json && json[0] == '{', "akv_stats_json");
    akv_free(json);
    akv_slot_info *rows = NULL;
    size_t n = 0;
    check(akv_slots(db, &rows, &n) == AKV_OK && n > 0, "akv_slots");
    akv_free(rows);
    char copy[4200];
    path(copy, sizeof copy, dir, "copy");
    check(akv_checkpoint(db, copy) == AKV_OK, "akv_checkpoint");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: every_call DIR\n");
        return 2;
    }
    int major = -1, minor = -1, patch = -1;
    check(strcmp(akv_version(&major, &minor, &patch), AKV_VERSION_STRING) == 0 && major == AKV_VERSION_MAJOR,
          "akv_version");
    check(strcmp(akv_strerror(AKV_EINVAL), "invalid argument") == 0, "akv_strerror");
    if (mkdir(argv[1], 0755) != 0) {
        perror("every_call: mkdir");
        return 2;
    }
    char dbdir[4200], ordered[4200], copy[4200];
    path(dbdir, sizeof dbdir, argv[1], "db");
    path(ordered, sizeof ordered, argv[1], "ordered");
    path(copy, sizeof copy, argv[1], "copy");

    akv_options opt;
    akv_options_init(&opt);
    akv_db *db = NULL;
    check(akv_open(dbdir, &opt, &db) == AKV_OK, "akv_open");
    if (!db)
        return 1;
    check(akv_db_layout(db) == AKV_LAYOUT_HASH, "akv_db_layout");
    check(akv_db_slot_policy(db) != NULL, "akv_db_slot_policy");
    check(akv_db_policy_kind(db, 0) != NULL && akv_db_policy_kind(db, 99) == NULL, "akv_db_policy_kind");
    check(akv_db_bits_per_key(db) > 0, "akv_db_bits_per_key");
    reads_and_writes(db);
    iterate(db);
    maintenance(db, argv[1]);
    check(akv_put(db, "", 0, "x", 1) == AKV_EINVAL && akv_errmsg()[0] != '\0', "akv_errmsg");
    check(akv_close(db) == AKV_OK, "akv_close");

    opt.layout = AKV_LAYOUT_ORDERED;
    check(akv_open(ordered, &opt, &db) == AKV_OK, "akv_open (ordered)");
    if (db) {
        reads_and_writes(db);
        iterate(db);
        check(akv_close(db) == AKV_OK, "akv_close (ordered)");
    }

    akv_repair_report rep;
    check(akv_repair(copy, NULL, &rep) == AKV_OK && rep.entries_lost == 0, "akv_repair");
    akv_free(rep.text);
    if (failures)
        return 1;
    puts("every_call: ok");
    return 0;
}
