#ifndef LK_SEMAPHORE_INTERNAL_H
#define LK_SEMAPHORE_INTERNAL_H

/* What the counting semaphore (semaphore.c) and the permit-expirable one
 * (psem.c) share: names, script lookup, reply helpers, and clean-up
 * commands owned by the object, resent across reconnects. */

#include "core/internal.h"
#include "core/object.h"

#define LK__SEM_CHANNEL_PREFIX "redisson_sc"

const lk__script_t *lk__sem_script(const char *name);

/* 1..LK_SEMAPHORE_MAX_PERMITS */
static inline int lk__sem_valid_count(int64_t n) { return n >= 1 && n <= LK_SEMAPHORE_MAX_PERMITS; }
/* try_set_permits' count, 0..LK_SEMAPHORE_MAX_PERMITS, and add_permits'
 * change, within that bound either way: the same for both semaphores. */
static inline int lk__sem_valid_set(int64_t n) { return n >= 0 && n <= LK_SEMAPHORE_MAX_PERMITS; }
static inline int lk__sem_valid_delta(int64_t d) {
  return d >= -LK_SEMAPHORE_MAX_PERMITS && d <= LK_SEMAPHORE_MAX_PERMITS;
}

/* The status of a script reply: the scripts answer a count that would pass
 * LK_SEMAPHORE_MAX_PERMITS with an "ERANGE" error, which is the caller's
 * argument at fault (LK_EINVAL); other codes pass through. */
int lk__sem_status(int status, const redisReply *r);

/* An integer reply, or a string holding one (GET); nil reads as 0. */
int lk__sem_int_of(const redisReply *r, int64_t *out);

/* The wait engine's message hook for both semaphores: a message carries
 * the new available count (decimal, as Redisson publishes it). A waiter
 * that needs more than `need`, or one of more local waiters than there are
 * permits, has nothing to try for (LK__WAKE_NONE); fewer than twice `need`
 * wakes one waiter (LK__WAKE_ONE); anything else, another client's message
 * say, is worth a try (LK__WAKE_ALL). */
int lk__sem_worth_waking(lk__obj_t *o, const char *msg, size_t len, int64_t need);

/* The i-th element of an array reply as an integer. */
int lk__sem_elem(const redisReply *r, size_t i, int64_t *out);

/* The clean-up of one object (either semaphore): while the object lives,
 * its clean-up commands are resent across any number of reconnects (a
 * failed connect, a lost reply, a loading or busy server: the latter two
 * after a pause on `timer`), until they are no longer worth sending (below).
 * Close waits for them (lk__sem_owner_close), up to a bound. */
typedef struct lk__sem_owner_s {
  lk_client_t *client;
  lk__queue_t jobs;  /* lk__sem_job_t.node */
  uv_timer_t timer;  /* paused resends */
  int timer_open;    /* initialised, not yet closed */
  int closing;       /* close waits for the jobs */
  uint64_t close_deadline_ns;
  void (*done)(struct lk__sem_owner_s *w); /* close: jobs over, timer closed */
  lk__obj_t *obj; /* lk__sem_close_after_jobs: the object whose close waits */
} lk__sem_owner_t;

/* Starts the owner (its timer on the client's loop). */
void lk__sem_owner_init(lk__sem_owner_t *w, lk_client_t *c);
/* Close: done(w) runs, from the loop or a callback, once every job of w is
 * over (applied, or found needless), or once wait_ms passed (the jobs left
 * are then handed to the client, which tries each a few more times while it
 * stays open, logged), and the timer is closed. No job may be added to w
 * after this call. */
void lk__sem_owner_close(lk__sem_owner_t *w, int64_t wait_ms, void (*done)(lk__sem_owner_t *w));
/* The very last step of both semaphores' close: wait for the clean-up jobs
 * still under way (a reconnect and a reply, twice, at most), then the close
 * of o is done (lk__obj_close_done). */
void lk__sem_close_after_jobs(lk__sem_owner_t *w, lk__obj_t *o);

/* Clean-up nobody waits for but the owner's close: the script is sent now
 * (after == NULL), or once `after` (a command the object left behind,
 * re-aimed here) has an outcome for which pred is true, else dropped. Every
 * such script is idempotent, so a send that fails for want of a connection,
 * or whose reply is lost, is repeated on the next connection, without limit
 * until valid_ms from now: the counting semaphore's request mark's TTL, less
 * every span it may have been set earlier. argv is copied. Failures are
 * logged; nothing is reported to anyone. */
typedef int (*lk__sem_pred)(int status, const redisReply *r);
void lk__sem_background_owned(lk__sem_owner_t *w, int64_t valid_ms, const char *script, int nkeys,
                              int nargs, const char **argv, const size_t *lens, lk__op_t *after,
                              lk__sem_pred pred);
/* The same for a give-back by permit id (the expirable semaphore), which is
 * right however late it comes (an id that is gone adds nothing) and worth
 * sending until the ids' leases have ended on the server: valid_ms counts
 * from `after`'s outcome when there is one (`after` may itself have set a
 * lease), else from now. */
void lk__sem_give_back_owned(lk__sem_owner_t *w, int64_t valid_ms, const char *script, int nkeys,
                             int nargs, const char **argv, const size_t *lens, lk__op_t *after,
                             lk__sem_pred pred);

/* Predicates for the background clean-up. */
int lk__sem_always(int status, const redisReply *r);
/* The abandoned acquire (or drain) took permits, or may have (its reply
 * was lost, or is of a shape the script never sends). */
int lk__sem_took_or_unknown(int status, const redisReply *r);
/* The abandoned release was not confirmed applied: no reply, a reply of a
 * shape the script never sends, or a server that did not run it. Resending
 * is safe (a release is applied at most once) and needed. */
int lk__sem_unconfirmed(int status, const redisReply *r);

/* Formats n into buf (at least 24 bytes); returns buf. */
const char *lk__sem_i64(char *buf, int64_t n);

/* Both semaphores' ops tables (psem.c, semaphore.c) name hooks each file
 * defines (static) under the same names, and share two rules: every command
 * is applied at most once (the permits' ids; the requests numbered under the
 * object's mark), so a resend is safe (lk__obj_counted_always), and an
 * ERANGE reply is the caller's fault (lk__sem_status). A table adds its free,
 * its kind and what only it has. */
#define LK__SEM_OPS                                                                    \
  LK__OBJ_CALLED, .attempt = attempt_acquire, .abandon = on_abandon,                   \
  .close_release = on_close_release_start, .message = on_message,                      \
  .acquire_kind = OP_ACQUIRE, .release_kind = OP_RELEASE,                              \
  .counted = lk__obj_counted_always, .undo = undo_acquire,                             \
  .map_error = lk__sem_status, .read_attempt = read_attempt, .granted = acquired,      \
  .refuse = refuse_acquire, .is_held = handle_is_held

#endif /* LK_SEMAPHORE_INTERNAL_H */
