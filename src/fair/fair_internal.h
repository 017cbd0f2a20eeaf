#ifndef LK_FAIR_INTERNAL_H
#define LK_FAIR_INTERNAL_H

/* The fair lock's object and what its files share (fair.c: lifecycle and
 * accessors; acquire.c: queueing and waiting; release.c: release, force
 * release, queries, lease loss). */

#include "core/internal.h"
#include "core/hold.h"
#include "core/object.h"
#include "core/watchdog.h"

#define LK__FAIR_OWNER_MAX 96
/* The fencing counter, shared with the reentrant lock (docs/fair.md). */
#define LK__FAIR_TOKEN_PREFIX "redisson_lock_token"

/* What one Redisson waiter ahead of a latchkey waiter may move the latter's
 * deadline in the queue's deadline set by, at most: Redisson's acquisition
 * moves every deadline earlier by its wait, fairLockWaitTimeout (300 000 ms
 * by default) for lock(), tryLock's waitTime otherwise (docs/fair.md,
 * "Queues shared with Redisson clients"). */
#define LK__FAIR_REDISSON_WAIT_MS 300000

enum lk__fair_op {
  LK__FAIR_OP_NONE = 0,
  LK__FAIR_OP_ACQUIRE,
  LK__FAIR_OP_RELEASE,
  LK__FAIR_OP_FORCE,
  LK__FAIR_OP_QUERY_EXISTS,
  LK__FAIR_OP_QUERY_TTL,
  LK__FAIR_OP_QUERY_HOLDS,
  LK__FAIR_OP_QUERY_QUEUE
};

struct lk_fair_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  char *queue_key; /* redisson_lock_queue:{NAME} */
  size_t queue_key_len;
  char *timeout_key; /* redisson_lock_timeout:{NAME} */
  size_t timeout_key_len;
  /* latchkey_fair_waiters:{NAME}: latchkey's own waiters' liveness deadlines,
   * which Redisson clients never move (scripts/fair/acquire.lua) */
  char *waiters_key;
  size_t waiters_key_len;
  char *channel_base; /* redisson_lock__channel:{NAME}; waiters add :OWNER */
  size_t channel_base_len;
  /* This owner's channel, base:OWNER. Sized for the longest owner once, so
   * a new owner never allocates. base.channel points here. */
  char *channel;
  size_t channel_len;
  char owner[LK__FAIR_OWNER_MAX];
  size_t owner_len;
  int owner_shared;
  lk__hold_t hold; /* hold.wd: &wd */
  char *token_key;  /* fenced acquisitions only, made on first use */
  size_t token_key_len;
  int64_t token;

  /* leases, as the reentrant lock keeps them (core/hold.h) */
  lk__wd_entry_t wd;

  /* the queue */
  lk_fair_cb on_queued;
  void *queued_arg;
  int64_t position; /* last reported; -1 = not queued */
  /* A waiting attempt was sent and nothing since says this owner is out of
   * the queue: an acquire that ends without the lock must leave it (once:
   * the core's give-back of an open outcome leaves it too, see undo). */
  int maybe_queued;

  /* the pending operation (the rest is in base) */
  int64_t req_lease_ms;
  int64_t req_waiter_timeout_ms;
  int req_watchdog;
  int req_fenced;
  int req_nonreentrant; /* refused by the server if the owner holds */
  uint32_t release_before;
};

#define LK__FAIR_CLIENT(f) ((f)->base.client)

const lk__script_t *lk__fair_script(const char *name);
void lk__fair_begin(lk_fair_t *f, int kind, lk_fair_cb cb, void *arg);
void lk__fair_finish(lk_fair_t *f, int status);
/* The five keys of every script that lets go of the lock (release, leave,
 * force release), in their order: NAME, queue, timeouts, the owners'
 * channel base, waiters: argv/lens[0..4]. */
void lk__fair_leave_keys(const lk_fair_t *f, const char **argv, size_t *lens);

/* The lock family's hooks (core/hold.h): the acquire's attempt, outcome
 * verbs and reply (acquire.c); the release's reply and the hold verbs
 * (release.c). */
LK__LOCK_LIKE_HOOKS(lk__fair);

/* acquire.c */
void lk__fair_abandon(lk__obj_t *o);
/* A place in the queue (ops->own_answer). */
void lk__fair_queued(lk__obj_t *o, const redisReply *r);
/* Leaves the queue, and drops `drop` holds (-1 all, 0 none) when the owner's
 * count is `cond` (-1: whatever it is). Sent now (send = 1), behind anything
 * this object sent before, or prepared for later. cb/data NULL: nobody waits
 * for it. */
lk__op_t *lk__fair_leave_op(lk_fair_t *f, int64_t cond, int64_t drop, lk__op_cb cb,
                            void *data, int send);

/* release.c */
/* The one-value commands' effect: a force release forgets the holds. */
void lk__fair_value_done(lk__obj_t *o, int kind);
void lk__fair_on_wd_event(lk__wd_entry_t *e, int event);
/* A release that waited for an abandoned attempt's give-back may go. */

/* fair.c */
/* Takes the identity client_id:tid and rebuilds the channel name; the
 * channel subscription, if any, is dropped (it was the old owner's). */
int lk__fair_take_owner(lk_fair_t *f, const char *client_id, uint64_t tid);

#endif /* LK_FAIR_INTERNAL_H */
