/*
 * tworuns.h — the database the reliability and repair tests damage: two
 * runs over the same 3000 keys. Run 1 has "v1-<i>" for every key; run 2
 * (newer) has "v2-<i>", except every tenth key, which it deletes. Any
 * answer from run 1 shows as a stale value or a resurrected delete.
 */
#ifndef AKV_TEST_TWORUNS_H
#define AKV_TEST_TWORUNS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

#define AKVT_NKEYS 3000

/* The log hook's messages, kept for assertions. */
typedef struct akvt_logbuf {
    pthread_mutex_t mu;
    char text[32768];
    size_t len;
    unsigned n;
} akvt_logbuf;
#define AKVT_LOGBUF_INIT                                                                                     \
    {                                                                                                        \
        .mu = PTHREAD_MUTEX_INITIALIZER                                                                      \
    }

void akvt_capture(void *arg, const char *msg);
void akvt_log_reset(akvt_logbuf *lb);
/* Small memtables and SSTs (several SSTs per run), only explicit flushes
 * make runs, a fixed seed, the log into lb. */
void akvt_opts(akv_options *o, akvt_logbuf *lb, akv_layout layout, const char *policy);
akv_db *akvt_open_ok(const char *dir, const akv_options *o);
size_t akvt_key_name(char *buf, unsigned i);
void akvt_write_v1(akv_db *db);
void akvt_write_v2(akv_db *db);
uint64_t akvt_newest_run(akv_db *db);
/* Create the two runs in dir; returns the newer run's id. */
uint64_t akvt_two_runs(const char *dir, const akv_options *o);
/* akvt_two_runs in a fresh temporary directory named after tag (into dir),
 * with the options akvt_opts(o, lb, layout, NULL) gives; returns the newer
 * run's id. */
uint64_t akvt_two_runs_in_tmp(char *dir, size_t cap, const char *tag, akv_options *o, akvt_logbuf *lb,
                              akv_layout layout);

typedef struct akvt_tally {
    unsigned right, wrong, eio;
    int first_wrong;
} akvt_tally;
/* Every key against what run 2 says (errors counted apart). */
akvt_tally akvt_check_v2(akv_db *db);
/* No wrong answer and no error. */
void akvt_expect_all_right(akv_db *db, const char *what);

#endif
