/*
 * blocked.h — options of the `blocked` filter kind (filters/blocked.c).
 */
#ifndef AKV_BLOCKED_H
#define AKV_BLOCKED_H

/* params->flags: answer queries with the portable scalar code even where
 * the AVX2 path is available (answers are identical; for tests and
 * benchmarks). Not stored: a deserialized filter picks its path afresh. */
#define AKV_BLOCKED_SCALAR (1u << 0)

#endif
