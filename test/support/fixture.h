/*
 * fixture.h — what the migration fixture holds (test/fixtures/README.md):
 * a database written by an older format, kept in the repository so that
 * every later format is tested against it. The content is a function of
 * the key's number and the phase alone, so the writer (test/fixtures/
 * writer.c) and the test (test/test_migration.c) compute the same answer
 * without storing it. Nothing here uses Criterion: the writer links it too.
 */
#ifndef AKV_TEST_FIXTURE_H
#define AKV_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "adaptkv/adaptkv.h"

/* Keys akvf_key(0 .. AKVF_KEYS-1); some are never written (absent). */
#define AKVF_KEYS 3600u
/* The phases the writer ran: 1 and 2 compacted into the deepest level,
 * 3 and 4 each flushed into an L0 run, 5 left in the memtable (its WAL).
 * Phases 6 and 7 are what the test writes into the opened fixture. */
#define AKVF_PHASES      5u
#define AKVF_TEST_PHASES 7u

enum { AKVF_NONE = 0, AKVF_PUT = 1, AKVF_DEL = 2 };

/* What `phase` (1-based) did to key i: AKVF_NONE, AKVF_PUT or AKVF_DEL. */
int akvf_op(unsigned phase, unsigned i);
/* Key i's name into buf (at least 32 bytes); returns its length. */
size_t akvf_key(char *buf, unsigned i);
/* The value phase `phase` put under key i into buf (at least 32 bytes);
 * returns its length (8 to 31 bytes). */
size_t akvf_value(char *buf, unsigned phase, unsigned i);
/* After phases 1 .. upto: the phase whose put key i holds, or 0 when it is
 * absent (never written, or deleted last). */
unsigned akvf_state(unsigned phases_done, unsigned i);
/* Phase p's writes (puts and deletes) into db: AKV_OK, or the first
 * failure's code with *failed set to its key's number. */
int akvf_write_phase(akv_db *db, unsigned p, unsigned *failed);
/* Parse a name akvf_key wrote back into i; -1 if it is not one. */
long akvf_key_index(const void *key, size_t klen);
/* The options the fixture was written with (and is opened with): small
 * memtables and SSTs, no automatic compaction of the few L0 runs, the
 * fixed seed. */
void akvf_options(akv_options *o, akv_layout layout);

#endif
