#ifndef LK_SEMAPHORE_INTERNAL_H
#define LK_SEMAPHORE_INTERNAL_H

/* What the counting semaphore (semaphore.c) and the permit-expirable one
 * (psem.c) share: names, script lookup, reply helpers, and clean-up
 * commands that survive a reconnect or two. */

#include "core/internal.h"
#include "core/object.h"

#define LK__SEM_CHANNEL_PREFIX "redisson_sc"
/* Resends of one attempt after a lost reply, as the lock does. */
#define LK__SEM_UNKNOWN_RESENDS 3

const lk__script_t *lk__sem_script(const char *name);

/* 1..LK_SEMAPHORE_MAX_PERMITS */
static inline int lk__sem_valid_count(int64_t n) { return n >= 1 && n <= LK_SEMAPHORE_MAX_PERMITS; }

/* The status of a script reply: the scripts answer a count that would pass
 * LK_SEMAPHORE_MAX_PERMITS with an "ERANGE" error, which is the caller's
 * argument at fault (LK_EINVAL); other codes pass through. */
int lk__sem_status(int status, const redisReply *r);

/* An integer reply, or a string holding one (GET); nil reads as 0. */
int lk__sem_int_of(const redisReply *r, int64_t *out);

/* A channel message as a count (decimal, as Redisson publishes it). */
int lk__sem_parse_msg(const char *msg, size_t len, int64_t *out);

/* The i-th element of an array reply as an integer. */
int lk__sem_elem(const redisReply *r, size_t i, int64_t *out);

/* Clean-up nobody waits for: the script is sent now (after == NULL), or once
 * `after` (a command the object left behind, re-aimed here) has an outcome
 * for which pred is true, else dropped. Every such script is idempotent, so
 * a send that fails for want of a connection, or whose reply is lost, is
 * repeated on the next connection, a few times. argv is copied. Failures
 * are logged; nothing is reported to anyone. */
typedef int (*lk__sem_pred)(int status, const redisReply *r);
void lk__sem_background(lk_client_t *c, const char *script, int nkeys, int nargs, const char **argv,
                        const size_t *lens, lk__op_t *after, lk__sem_pred pred);

/* Predicates for lk__sem_background. */
int lk__sem_always(int status, const redisReply *r);
/* The abandoned acquire took permits, or may have (its reply was lost). */
int lk__sem_took_or_unknown(int status, const redisReply *r);

/* Formats n into buf (at least 24 bytes); returns buf. */
const char *lk__sem_i64(char *buf, int64_t n);

#endif /* LK_SEMAPHORE_INTERNAL_H */
