/*
 * grave.h — the end of runs and memtables (grave.c), and the grave's part
 * of akv_db: obsolete runs and memtables whose last reference is gone,
 * left for the background threads to destroy.
 */
#ifndef AKVI_GRAVE_H
#define AKVI_GRAVE_H

#include <pthread.h>
#include <stdbool.h>

#include "adaptkv/adaptkv.h"

typedef struct akvi_run akvi_run;
typedef struct akvi_mem akvi_mem;

/* The grave's part of akv_db: its lists, under mu (never held while
 * destroying). */
typedef struct akvi_grave {
    pthread_mutex_t mu;
    bool open;      /* other threads defer to the background threads */
    akvi_run *runs; /* obsolete runs and memtables waiting for them */
    akvi_mem *mems;
    unsigned busy;       /* destructions running now, in any thread */
    pthread_cond_t idle; /* signalled when busy drops to 0 */
} akvi_grave;

/* The last reference to r (m) is gone: destroy it, or, if it is obsolete
 * and this is not a background thread while they run, leave it to them. */
void akvi_grave_run(akvi_run *r);
void akvi_grave_mem(akvi_mem *m);
/* Called by each background thread once: it destroys at once. */
void akvi_grave_background_thread(void);
/* Whether other threads defer (while the background threads run). */
void akvi_grave_set_open(akv_db *db, bool open);
/* Destroy everything deferred so far. */
void akvi_grave_empty(akv_db *db);
/* Wait until no thread is destroying a run or memtable: one another
 * thread took from the grave, or one whose last reference a background
 * thread dropped (akv_flush and akv_compact, so that what they made
 * obsolete is gone when they return). Holds no lock but grave.mu. */
void akvi_grave_wait(akv_db *db);
/* Closes run r's readers of its files (r->files NULL again). */
void akvi_run_close_files(akvi_run *r);
/* Does the grave hold a memtable (whose pool family writers may wait for)? */
bool akvi_grave_has_mems(akv_db *db);

/* The grave's lock; destroy once it is empty (akvi_grave_empty). */
void akvi_grave_init(akvi_grave *g);
void akvi_grave_destroy(akvi_grave *g);

#endif
