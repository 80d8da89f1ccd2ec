/*
 * slotload.h — a run's filter slots at open (slotload.c).
 */
#ifndef AKVI_SLOTLOAD_H
#define AKVI_SLOTLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/internal.h"

/* Open's read-only phase: slot j of run r gets its filter from its file,
 * or one rebuilt in memory from the SST's keys (written by the writable
 * phase: the slot is left dirty) when the file is missing, unreadable,
 * bound to another SST or of format 1 without every key, with a warning.
 * A file bound to this very SST that records another level or shard than
 * the catalog is refused (AKVI_DMG_FILTER_FIELD_CONFLICT): one of two
 * independent records is wrong. An unusable file beside an unreadable SST
 * leaves the slot without a filter. *upgraded: the SST's key digest was
 * computed (a catalog of version 1). Errors: AKV_ENOMEM, AKV_ECORRUPT (the
 * refusal). */
int akvi_slot_load(akv_db *db, akvi_run *r, size_t j, bool *upgraded);

#endif
