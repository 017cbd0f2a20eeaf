#ifndef LK_CORE_OBJECT_H
#define LK_CORE_OBJECT_H

/* What every primitive object shares (docs/objects.md): entry checks, one
 * pending operation, completion from the loop, cancel, the close protocol,
 * and the wait engine (docs/design.md, "Waiting"): try → busy → subscribe →
 * try again once subscribed → sleep until a message, the holder's TTL, the
 * re-poll interval or the budget → try again.
 *
 * A primitive embeds lk__obj_t as its FIRST member and gives a table of
 * hooks; its public functions stay typed and thin. */

#include <stddef.h>

#include "core/internal.h"
#include "core/pubsub.h"

typedef struct lk__obj_s lk__obj_t;
/* The most strings a named body owns besides its name (ops->strings). */
#define LK__OBJ_STRINGS_MAX 8
/* A user callback kept by the core in this generic type; the primitive's
 * ops->call converts it back to its own type (a conversion C allows both
 * ways) before calling it. */
typedef void (*lk__fn_t)(void);
struct lk__hold_s; /* core/hold.h */

/* What only a waiting object needs: the wait's timer and its subscription.
 * Allocated by the first wait (or lk__obj_want_timer) and kept until close,
 * so an object that never waits costs none of it. */
typedef struct lk__obj_wait_s {
  uv_timer_t timer; /* data: the object */
  lk__sub_t sub;
  lk__obj_t *obj;
  uint64_t try_ns; /* when the wait's last attempt was sent */
  /* Spin mode (core/spin.h): the next back-off's base and the largest, ms. */
  uint32_t spin_base_ms, spin_max_ms;
  /* Thinning (object.c): the waiter holds its process's wake but put its
   * try off to a jittered fallback on the timer; a new release decides
   * again. */
  unsigned deferred : 1;
  /* The attempt out was made on a wake (or a deferred wake): its answer
   * tells the channel's heat whether this process won or lost. */
  unsigned counted : 1;
} lk__obj_wait_t;

enum { LK__WAKE_NONE = 0, LK__WAKE_ALL = 1, LK__WAKE_ONE = 2 };

typedef struct lk__obj_ops_s {
  /* Calls fn, a callback of the object's own type (the pending operation's,
   * or on_lost), as fn(object, status, arg). */
  void (*call)(lk__obj_t *o, lk__fn_t fn, int status, void *arg);
  /* Calls fn, the object's close callback, as fn(object). */
  void (*call_closed)(lk__obj_t *o, lk__fn_t fn);
  /* The operation `kind` ended with status, before its callback runs: what
   * the object must do first (the fair lock leaves its queue). May be NULL. */
  void (*complete)(lk__obj_t *o, int kind, int status);
  /* (Re)sends the waiting operation's attempt, setting o->op; 0 or a code.
   * Needed by objects that use the wait engine. */
  int (*attempt)(lk__obj_t *o);
  /* The command in flight is left behind (timeout, cancel, close): re-aim it
   * with lk__op_retarget at clean-up code, or NULL to forget it. Objects
   * whose operation runs sub-operations of their own (o->composite) get it
   * whenever the operation is cut short, with or without o->op. */
  void (*abandon)(lk__obj_t *o);
  /* On close, after the pending operation was canceled: start giving back
   * what the object holds and return 1 (then call lk__obj_close_done when
   * finished), or return 0 when there is nothing to give back. May be NULL. */
  int (*close_release)(lk__obj_t *o);
  /* Last, after the close callback: free the object's memory. NULL: the
   * core frees a named body (lk__obj_free). */
  void (*free)(lk__obj_t *o);
  /* A named kind's body, made by lk__obj_open and freed by lk__obj_free:
   * its size and where its copy of the name and the name's length are
   * (LK__NAMED_BODY), and the other strings the body owns, its char *
   * fields by offset (the first 0 ends the list: offset 0 is the shared
   * body). */
  size_t body_size, name_at, name_len_at;
  size_t strings[LK__OBJ_STRINGS_MAX];
  /* A message on o->channel reached this waiter (docs/objects.md,
   * "Waiting"): LK__WAKE_NONE (0) not for it; LK__WAKE_ALL (1) try again now,
   * as every local waiter does (a hook may still ration such wakes itself
   * with lk__sub_take); LK__WAKE_ONE: the message can serve one waiter, and
   * the core gives it to the local waiter that has listened longest and is
   * not already trying on an earlier wake; if that one's wait ends without
   * the grant, the wake passes on. NULL: every message wakes all. */
  int (*message)(lk__obj_t *o, const char *msg, size_t len);
  /* The channel a wait subscribes to, for objects that build it on demand
   * instead of keeping it in o->channel (the text may be temporary: it is
   * copied at once). NULL result: out of memory. Used only when o->channel
   * is NULL; may be NULL. */
  const char *(*channel)(lk__obj_t *o, size_t *len);

  /* --- the outcome policy's verbs (core/outcome.h); all may be NULL --- */
  /* The kind of the operation whose attempts may be granted a hold (the
   * acquire); 0: the object grants nothing. The core counts its successes
   * (and those of release_kind) in the client's stats. */
  int acquire_kind;
  int release_kind;
  /* 1 when a resend of the pending command is applied at most once: the
   * scripts take the owner's expected count (lock-like objects, whose
   * give-backs can then be conditional on the count showing a grant) or a
   * request id the server remembers (semaphores, latch).
   * lk__obj_counted_always: every command of the object is. */
  int (*counted)(lk__obj_t *o);
  /* Prepares (does not send) the give-back of the hold the pending
   * acquire's attempt may have been granted. known_grant: its reply showed a
   * grant; 0: not known, so only a give-back conditional on the owner's
   * count is safe. NULL: nothing to give back, or the object cannot make a
   * safe one, or it started its own give-back (the semaphores' background
   * jobs, which resend across reconnects). */
  lk__op_t *(*undo)(lk__obj_t *o, int known_grant);
  /* The reply to an attempt is a grant (status 0, reply non-NULL). */
  int (*is_grant)(const redisReply *r);
  /* A command that waited for an abandoned attempt's give-back
   * (lk__outcome_defer_command) may be sent now. NULL: the core's (the only
   * command deferred is a release): ops->send_release, a send that fails
   * ending the operation with its code (lk__obj_finish). */
  void (*deferred)(lk__obj_t *o);

  /* --- the attempt's reply (lk__obj_attempt_reply, core/attempt.c) --- */
  /* What a reply (status 0) to the waiting operation's attempt says, one of
   * LK__ANSWER_*; *v gets the holder's TTL in ms for BUSY (< 0: unknown),
   * the status the operation ends with for REFUSED. It may note what the
   * reply says in the object's own fields; waiting and ending are the
   * core's, once the outcome is settled. NULL: lk__obj_read_grant_or_busy. */
  int (*read_attempt)(lk__obj_t *o, const redisReply *r, int64_t *v);
  /* LK__ANSWER_GRANTED: takes the grant (lk__hold_grant, or ends the
   * operation with its result). */
  void (*granted)(lk__obj_t *o, const redisReply *r);
  /* LK__ANSWER_OWN: a shape of the object's own (the fair lock's place in
   * its queue, the barrier's rounds); the object goes on from it itself. */
  void (*own_answer)(lk__obj_t *o, const redisReply *r);

  /* --- a release's reply (lk__obj_release_reply, core/attempt.c) --- */
  /* Reads an answer (status 0) to the pending release (or resign): 1 with
   * the status it ends with in *status, its effect on the object's counts
   * noted; 0 for a shape the script never sends. */
  int (*read_release)(lk__obj_t *o, const redisReply *r, int *status);
  /* Sends the release's first attempt (lk__obj_release_begin; renewal
   * paused as it needs): 0 or a code. */
  int (*send_release)(lk__obj_t *o);
  /* Sends the release again after an unknown outcome (its script applies
   * it at most once): 0 or a code. */
  int (*resend_release)(lk__obj_t *o);
  /* Ends the release with status: the object's own clean-up (renewal
   * resumed or stopped), then lk__obj_finish. NULL: lk__obj_finish. */
  void (*release_end)(lk__obj_t *o, int status);

  /* --- the hold verbs (core/hold.h), for objects that hold --- */
  /* Gives back n holds of side h, best effort, nobody waiting: only if the
   * owner's count on it is exactly cond (cond >= 0), else unconditionally. */
  void (*give_back)(lk__obj_t *o, struct lk__hold_s *h, int64_t cond, uint32_t n);
  /* The holds are gone: stop renewing, give back what the server may still
   * have for the owner, set o->lost, tell the holder (on_lost). */
  void (*lose)(lk__obj_t *o);

  /* --- one-value commands (lk__obj_value_sent); all may be NULL --- */
  /* Reads a reply the core's default reading does not cover: 1 read into
   * *v, 0 not a shape the verb sends, -1 use the default. */
  int (*read_value)(lk__obj_t *o, const redisReply *r, int64_t *v);
  /* The value was read (o->result): the verb's effect on the object, such
   * as a force release forgetting the holds. */
  void (*value_done)(lk__obj_t *o, int kind);
  /* Maps an error reply's status (the semaphores read ERANGE as LK_EINVAL). */
  int (*map_error)(int status, const redisReply *r);

  /* --- replica sync (core/sync.h); may be NULL --- */
  /* The acquire that just succeeded is refused after all (too few replicas
   * acknowledged its grant, or it was canceled while their answer was
   * awaited): give back what it took and forget it, as if it had failed.
   * NULL: the core takes back the hold lk__hold_grant counted (holding
   * objects); objects that grant without it (the semaphores) must set it. */
  void (*refuse)(lk__obj_t *o);

  /* --- the public handle (core/handle.c, latchkey/handle.h) --- */
  int handle_kind; /* the kind's lk_kind_t: every kind sets it */
  /* The operation lk_handle_cancel (and lk_X_cancel) ends when it is not
   * acquire_kind (the latch's await, a composite's acquire), or
   * LK__CANCEL_PENDING: whichever is pending (the barrier). 0: acquire_kind. */
  int cancel_kind;
  /* 1: the object tells on_lost when its holds are lost (lk_X_set_lost_cb). */
  int tells_lost;
  /* 1: the object tells its holds' health (lk_handle_set_health_cb)
   * although it has no on_lost (the barrier: a drop ends its enter or
   * leave with LK_ELEASELOST, after an AT_RISK). Every tells_lost kind
   * does too. */
  int tells_health;
  /* A member of this group (a MultiLock's lock, a RedLock's node: o->parent
   * is the group) began (LK_HEALTH_AT_RISK) or ended (LK_HEALTH_SAFE) an
   * at-risk episode (core/object.c, "health"): the group judges what it
   * means for itself. NULL for the kinds that are no group. */
  void (*member_health)(lk__obj_t *group, lk__obj_t *member, int state);
  /* The kind's answers to the handle's getters; NULL: the core's from the
   * object body (o->name; is_held: o->sides, core/handle.c), or none (the
   * handle then answers as latchkey/handle.h says). o is never NULL. */
  const char *(*name)(const lk__obj_t *o);
  const char *(*owner)(const lk__obj_t *o);
  int (*is_held)(const lk__obj_t *o); /* 1 or 0 */
  int64_t (*token)(const lk__obj_t *o);
} lk__obj_ops_t;

enum { LK__CANCEL_PENDING = -1 };

struct lk__obj_s {
  lk_client_t *client;
  const lk__obj_ops_t *ops;
  lk__op_t *op;  /* the pending operation's command in flight, or NULL */
  int kind;      /* pending operation, 0 = none */
  int composite; /* the operation drives other objects (MultiLock, RedLock) */
  lk__obj_wait_t *w; /* NULL until the first wait */
  /* The user's callbacks, in the generic type (ops->call converts back). */
  lk__fn_t cb; /* the pending operation's */
  void *arg;
  lk__fn_t close_cb;
  lk__fn_t on_lost;
  void *lost_arg;
  const char *channel; /* where waiters listen; borrowed, or NULL (then
                          ops->channel, if any, builds it) */
  size_t channel_len;
  lk__defer_t done;
  lk__defer_t close_step;
  int done_status;
  int closing; /* 1: close asked for; 2: its release and final steps began */
  int64_t result;
  char *errtext; /* the last server error's text, or NULL; lk__obj_errtext */
  void *data;
  /* wait engine */
  int64_t wait_ms; /* 0 = try once, < 0 = forever */
  uint64_t deadline_ns;
  uint64_t begun_ns; /* when the wait began: the wait-time histogram's start */
  uint64_t woken_ns; /* first release message seen by this wait */
  int woken;         /* poked while an attempt was in flight */
  int waited;        /* had to wait at least once */
  int waiting;       /* a wait began and its operation has not ended */
  /* Set by objects that listen on a channel of their own (the fair lock's
   * per-waiter channel): the subscription made by the first wait is kept
   * until close, so later waits cost no SUBSCRIBE/UNSUBSCRIBE. Messages that
   * arrive while no wait is on are ignored. */
  int keep_sub;
  /* outcome policy (core/outcome.h) */
  uint8_t resends;            /* of the current command, after unknown outcomes */
  unsigned outcome_open : 1;  /* an attempt's outcome is unknown: the next is a resend */
  unsigned attempt_deferred : 1;
  unsigned command_deferred : 1;
  unsigned close_deferred : 1; /* close_cb waits for the track (lk__outcome_defer_close) */
  unsigned budgeted : 1; /* the wait was given a budget (wait_ms != 0) */
  unsigned lost : 1;     /* holding objects: on_lost was told, holds not yet forgotten */
  /* The last error reply was a cluster's "not now" (TRYAGAIN, CLUSTERDOWN,
   * a redirection no longer followed): an LK_ECLUSTER that retrying within
   * a budget may get past (lk__obj_retryable). */
  unsigned cluster_later : 1;
  /* A wake-one message was given to this waiter (LK__WAKE_ONE): 1 not yet
   * tried on, 2 its attempt is out. Cleared when that attempt is answered
   * busy (another process won: its release wakes again) or granted; any
   * other end of the wait passes the wake on (lk__sub_pass). */
  unsigned wake_held : 2;
  /* Spin mode (core/spin.h): the acquire's wait sleeps a back-off with
   * jitter between tries and never subscribes. */
  unsigned spin : 1;
  /* close_cb and on_lost were given through the handle (lk_handle_cb,
   * lk_handle_close_cb: core/handle.c calls them), not by the kind's typed
   * setter (ops->call, ops->call_closed). */
  unsigned close_generic : 1;
  unsigned lost_generic : 1;
  /* Health (lk__obj_side_at_risk): an at-risk episode is on; its AT_RISK
   * or SAFE is still to be told (from the loop, health_step). */
  unsigned at_risk : 1;
  unsigned risk_untold : 1;
  unsigned safe_untold : 1;
  uint8_t risky_sides; /* sides (watchdog entries...) now at risk */
  /* The local deadlines the untold AT_RISK and SAFE report (ms_left). */
  uint64_t risk_deadline_ns, safe_deadline_ns;
  lk__fn_t on_health; /* an lk_handle_health_cb */
  void *health_arg;
  lk__defer_t health_step;
  uint8_t value_flags;   /* the pending one-value command's LK__VALUE_* */
  struct lk__outcome_track_s *track; /* abandoned attempts still out, or NULL */
  /* Replica sync (core/sync.h): made by the first acquire that asks for it. */
  struct lk__obj_sync_s *sync;
  /* In the client's list of open objects (lk_client_close_all). */
  lk__queue_t client_node;
  /* The MultiLock or RedLock this object is a member of (set by
   * lk__obj_set_parent), or NULL: it closes only after the group let it go. */
  lk__obj_t *parent;
  /* Set by the kind's _new when its body has them, so the core answers for
   * every kind alike: the name (borrowed: the kind's own copy), what
   * lk_handle_name gives when ops->name is NULL; the sides the object holds
   * (its lk__hold_t array), what lk_handle_is_held reads when ops->is_held
   * is NULL and what a lost hold's fresh start clears (lk__hold_afresh). */
  const char *name;
  struct lk__hold_s *sides;
  int nsides;
};

/* name: the object's name (o->name), or NULL for a kind without one. */
void lk__obj_init(lk__obj_t *o, lk_client_t *c, const lk__obj_ops_t *ops, const char *name);
/* The same for a kind whose waiters listen on one channel the object keeps
 * (borrowed: it lives as long as the object). */
void lk__obj_init_channel(lk__obj_t *o, lk_client_t *c, const lk__obj_ops_t *ops,
                          const char *name, const char *channel, size_t channel_len);

/* An object of any kind as its public handle (NULL stays NULL): the
 * kinds' lk_X_ generic verbs are aliases of lk_handle_ ones through it. */
#define LK__H(p) ((lk_handle_t *)(void *)(p))
#define LK__CH(p) ((const lk_handle_t *)(const void *)(p))
/* lk_handle_result's value, 0 for NULL: what lk_X_result answers. */
static inline int64_t lk__handle_result(const lk_handle_t *h) {
  int64_t v = 0;
  (void)lk_handle_result(h, &v);
  return v;
}
/* The handle's hooks (ops->name, ops->owner, ops->token) of a kind T that
 * keeps the answer in a field of that name. */
#define LK__HANDLE_FIELD(T, field, type)                                       \
  static type handle_##field(const lk__obj_t *o) { return ((const T *)o)->field; }

/* Defines a primitive's two typed trampolines, call and call_closed (for
 * ops->call and ops->call_closed), for an object type T whose callbacks
 * have the types CB (T *, int status, void *arg) and CLOSE_CB (T *): the
 * core keeps the user's callbacks in a generic type. LK__OBJ_CALLED names
 * both in the kind's ops table. */
#define LK__OBJ_CALLS(T, CB, CLOSE_CB)                                                 \
  static void call(lk__obj_t *o, lk__fn_t fn, int status, void *arg) {                \
    ((CB)fn)((T *)o, status, arg);                                                     \
  }                                                                                    \
  static void call_closed(lk__obj_t *o, lk__fn_t fn) { ((CLOSE_CB)fn)((T *)o); }
#define LK__OBJ_CALLED .call = call, .call_closed = call_closed

/* A kind's public names of the generic verbs (docs/objects.md): each is the
 * one generic verb with the kind's types, so it is written once here and
 * stamped per kind P (a prefix such as lk_lock, whose types are P_t, P_cb and
 * P_close_cb). The data and text verbs are aliases of lk_handle_ ones
 * (latchkey/handle.h), kept for one release. */
#define LK__KIND_CLOSE(P)                                                              \
  int P##_close(P##_t *h, P##_close_cb close_cb) {                                     \
    return lk__obj_close(h ? &h->base : NULL, (lk__fn_t)close_cb);                     \
  }
#define LK__KIND_SET_LOST_CB(P)                                                        \
  int P##_set_lost_cb(P##_t *h, P##_cb on_lost, void *arg) {                           \
    return lk__obj_set_lost_cb(h ? &h->base : NULL, (lk__fn_t)on_lost, arg);           \
  }
#define LK__KIND_DATA(P)                                                               \
  void *P##_get_data(const P##_t *h) { return lk_handle_get_data(LK__CH(h)); }        \
  void P##_set_data(P##_t *h, void *data) { (void)lk_handle_set_data(LK__H(h), data); }
/* error text, client, data, and the name under the verb NAME (P##_name for
 * most kinds; the leader calls it its role). */
#define LK__KIND_ALIASES(P, NAME)                                                      \
  const char *P##_error_text(const P##_t *h) { return lk_handle_error_text(LK__CH(h)); } \
  const char *NAME(const P##_t *h) { return lk_handle_name(LK__CH(h)); }               \
  lk_client_t *P##_client(const P##_t *h) { return lk_handle_client(LK__CH(h)); }      \
  LK__KIND_DATA(P)

/* The checks every primitive's _new makes first, in this order: the client
 * (thread, fork, closing), the out pointer, the name (1..max_name_len bytes;
 * *len gets its length). */
int lk__obj_new_check(const lk_client_t *c, const void *out, const char *name,
                      size_t *len);

/* A named kind T's body in its ops table: T keeps its own copy of the name
 * in `char *name` and its length in `size_t name_len`. */
#define LK__NAMED_BODY(T)                                                              \
  .body_size = sizeof(T), .name_at = offsetof(T, name), .name_len_at = offsetof(T, name_len)
/* The opening of a named kind's _new (ops: LK__NAMED_BODY): the checks of
 * lk__obj_new_check, then a zeroed body of ops->body_size bytes holding its
 * own copy of the name, with o->ops set, so that lk__obj_free rolls it back
 * until lk__obj_init registers it. NULL with *rc set (the check's code, or
 * LK_ENOMEM). */
void *lk__obj_open(lk_client_t *c, const void *out, const char *name, const lk__obj_ops_t *ops,
                   int *rc);
/* Frees a named body: its name, the strings ops->strings lists, the body. */
void lk__obj_free(lk__obj_t *o);

/* Entry checks: LK_EINVAL (NULL), thread, fork, LK_ECLOSED. */
int lk__obj_check(const lk__obj_t *o);
/* ... and a callback (LK_EINVAL) and nothing pending (LK_EBUSY). */
int lk__obj_check_idle(const lk__obj_t *o, int has_cb);

/* Starts the pending operation `kind`; cb (not NULL) gets its outcome. */
void lk__obj_begin(lk__obj_t *o, int kind, lk__fn_t cb, void *arg);
/* lk_X_set_lost_cb: entry checks, then keeps fn and arg. */
int lk__obj_set_lost_cb(lk__obj_t *o, lk__fn_t fn, void *arg);
/* Tells the holder its holds are gone: on_lost(obj, LK_ELEASELOST, arg),
 * unless the object is closing. An AT_RISK not told yet is told first (at
 * once); with no at-risk episode on, one is counted and told with ms_left 0
 * (the loss came without warning): lost never comes without at-risk first.
 * Ends the episode. */
void lk__obj_tell_lost(lk__obj_t *o);

/* --- health: held → at risk → lost (docs/objects.md, "Health") ---
 * A side is one renewed part of a hold (a watchdog entry, a leader's lease,
 * a group's quorum); its keeper tracks whether it is at risk and calls:
 * side_at_risk when it becomes so (a renewal failed or went unanswered, its
 * connection dropped), with the side's local deadline; side_ok when it is
 * not any more: confirmed (a renewal confirmed it; deadline_ns its new
 * local deadline) or not (it stopped being renewed: released, lost,
 * closed). The object is at risk while any side is (one episode: one
 * AT_RISK), and SAFE again when a confirmation leaves no side at risk. An
 * episode also ends, untold, when the object's hold ends (a release that
 * leaves nothing held, close) or with the loss (lk__obj_tell_lost).
 * Callbacks are told from the loop (o->health_step), never inside these
 * calls, so the watchdog may mark entries while it walks its ring. A
 * group's member tells its group (ops->member_health) instead of counting. */
void lk__obj_side_at_risk(lk__obj_t *o, uint64_t deadline_ns);
void lk__obj_side_ok(lk__obj_t *o, int confirmed, uint64_t deadline_ns);
/* The hold ended normally: the episode (if any) ends without a callback. */
void lk__obj_health_end(lk__obj_t *o);
/* lk_handle_set_health_cb: entry checks, then keeps fn and arg. */
int lk__obj_set_health_cb(lk__obj_t *o, lk__fn_t fn, void *arg);
/* Ends the pending operation and runs its callback; from the loop only. */
void lk__obj_finish(lk__obj_t *o, int status);
/* The same, delivered from the loop: for outcomes known inside a call. */
void lk__obj_finish_later(lk__obj_t *o, int status);
/* Keeps a server error's text for the error getter. */
void lk__obj_error(lk__obj_t *o, const redisReply *r);
/* Keeps text of the library's own (at most 159 bytes) for the getter. */
void lk__obj_set_errtext(lk__obj_t *o, const char *text);
/* The text for the error getter: "" when there is none. */
static inline const char *lk__obj_errtext(const lk__obj_t *o) {
  return o != NULL && o->errtext != NULL ? o->errtext : "";
}
/* Cancels the pending operation if it is of `kind`: LK_EINVAL otherwise. */
int lk__obj_cancel(lk__obj_t *o, int kind);
/* The close protocol: the pending operation gets LK_ECANCELED, then
 * close_release, then the timer closes, then the close callback
 * (ops->call_closed, or the handle's) and ops->free (or lk__obj_free). In
 * a forked child only that runs (nothing of the parent's is touched)
 * and the result is LK_EFORKED. */
int lk__obj_close(lk__obj_t *o, lk__fn_t close_cb);
void lk__obj_close_done(lk__obj_t *o);

/* A MultiLock or RedLock takes the object as a member (parent), or lets it
 * go (NULL: a lk_client_close_all under way may now close it). */
void lk__obj_set_parent(lk__obj_t *o, lk__obj_t *parent);

/* --- the wait engine --- */
void lk__obj_wait_begin(lk__obj_t *o, int64_t wait_ms);
/* Sends an attempt through ops->attempt and guards the budget. A wait
 * (wait_ms != 0) makes the wait part first: LK_ENOMEM when it cannot. */
int lk__obj_try(lk__obj_t *o);
/* A verb's first attempt (lk__obj_try) from its entry point: when it cannot
 * go out the entry returns the error, no callback comes, so the object is
 * idle again (kind 0, the NONE of every primitive's operation enum). */
int lk__obj_start(lk__obj_t *o);
/* For ops->counted of an object every command of which a server applies at
 * most once (request ids, or a count the scripts compare). */
int lk__obj_counted_always(lk__obj_t *o);
/* The attempt found the object busy; ttl_ms is how long the current holder
 * has left (< 0: unknown). Ends with LK_ETIMEDOUT when the budget is spent,
 * else subscribes (once) and sleeps until a reason to try again. */
void lk__obj_busy(lk__obj_t *o, int64_t ttl_ms);
/* An attempt failed in a way worth retrying within the budget (not sent,
 * server loading or busy): retries later if budget is left, else ends with
 * status. */
void lk__obj_retry_or_finish(lk__obj_t *o, int status);
int64_t lk__obj_remaining_ms(const lk__obj_t *o);
/* Starts the waiting operation with a pause: the first attempt goes out
 * after delay_ms (within the budget), as a wait's re-poll would. 0 or
 * LK_ENOMEM. */
int lk__obj_try_after(lk__obj_t *o, int64_t delay_ms);
/* Starts a wait (wait_ms != 0) without a first attempt when this process
 * already knows the attempt would be wasted or would barge: other waiters
 * of this process are queued on the object's channel (it joins them and
 * is woken in turn), or the name is contended across processes (the
 * channel's heat) and just_released says this object released it a moment
 * ago (its try is put off as a woken one's would be, core/object.c,
 * "thinning"). Returns 1 when the caller should attempt now as usual, 0
 * when the wait began, LK_ENOMEM. */
int lk__obj_wait_first(lk__obj_t *o, int just_released);
/* For objects that drive a timer of their own (the composites): makes the
 * wait part now. 0 or LK_ENOMEM. */
int lk__obj_want_timer(lk__obj_t *o);
/* The subscription of the wait part, or NULL when the object never waited
 * (message hooks run only while it exists). */
static inline lk__sub_t *lk__obj_sub(lk__obj_t *o) { return o->w != NULL ? &o->w->sub : NULL; }
/* Stops listening on the object's channel (a kept one too). */
void lk__obj_unsubscribe(lk__obj_t *o);
int lk__obj_transient(int status);
/* The one rule for "try again within the budget" (docs/errors.md): the
 * transient statuses above, and an LK_ECLUSTER whose error reply was
 * TRYAGAIN or CLUSTERDOWN (the command did not run; a migration or an
 * election ends by itself), as o's last error reply said. A CROSSSLOT or a
 * redirection with cluster support off is not. Composites ask it of their
 * members, so every wait rides out a cluster's transient errors alike. */
int lk__obj_retryable(const lk__obj_t *o, int status);

/* --- the attempt's reply: one dispatch for every waiting primitive --- */
/* What a reply to an attempt says (ops->read_attempt). */
enum {
  LK__ANSWER_GARBLED = 0, /* a shape the script never sends: outcome unknown */
  LK__ANSWER_GRANTED,     /* ops->granted takes it */
  LK__ANSWER_BUSY,        /* not now: the wait goes on (lk__obj_busy) */
  LK__ANSWER_REFUSED,     /* the operation ends with the status read */
  LK__ANSWER_OWN          /* ops->own_answer goes on from it */
};
/* The callback of every attempt ops->attempt sends (data: the object): the
 * bookkeeping each reply needs, once. The command is no longer in flight;
 * a failure goes to the outcome policy (lk__outcome_failed, the status
 * mapped by ops->map_error); an answer settles any earlier lost one
 * (lk__outcome_answered) before the object acts on it; a garbled one is a
 * lost one (lk__outcome_garbled). */
void lk__obj_attempt_reply(void *data, int status, redisReply *r);
/* The callback of a release (or resign) that resends itself (data: the
 * object): an answer ends it as ops->read_release says; a failure keeps the
 * server's error text, a garbled answer is an unknown outcome, and an
 * unknown outcome is resent (ops->resend_release) while the outcome policy
 * allows (lk__outcome_may_resend), else the release ends with LK_EUNKNOWN
 * (or the failure's status) through ops->release_end. */
void lk__obj_release_reply(void *data, int status, redisReply *r);
/* Starts the release (or resign) `kind`, after the primitive's checks, and
 * sends it through ops->send_release, unless a give-back (an abandoned
 * acquire's, a lost lease's) is not answered yet: a release sent first
 * could take a late grant instead of a hold the object counts, or be
 * overtaken by it, so it waits, and ops->deferred sends it once the
 * give-back is answered (lk__outcome_defer_command). 0, or the send's code
 * with nothing pending. */
int lk__obj_release_begin(lk__obj_t *o, int kind, lk__fn_t cb, void *arg);
/* A give-back on close (ops->close_release's command) was answered with
 * status: a failure is logged as "<verb> on close failed (...); <what>
 * expires with its lease" (what a close could not give back lasts until its
 * lease ends). Does not end the close: the caller does. */
void lk__obj_close_release_failed(lk__obj_t *o, int status, const char *verb,
                                  const char *what);
/* The whole answer to a close's one give-back command (o->op): the command
 * is done, a failure is logged as above, the holds are forgotten (every
 * side's count is 0, o->sides: what the server kept now lasts until its
 * lease ends, never renewed) and the close goes on (lk__obj_close_done). */
void lk__obj_close_release_reply(lk__obj_t *o, int status, const char *verb, const char *what);
/* The usual reading, for ops->read_attempt to build on: a reply
 * ops->is_grant calls a grant is GRANTED, an integer is BUSY with that TTL
 * (the lock-like scripts' "held by another, this long"), else GARBLED. */
int lk__obj_read_grant_or_busy(lk__obj_t *o, const redisReply *r, int64_t *v);

/* --- one-value commands: queries, force releases, count changes --- */
enum {
  /* The command may change state: a reply of a shape it never sends leaves
   * the outcome unknown (LK_EUNKNOWN), where a query's is LK_EPROTOCOL. */
  LK__VALUE_CHANGES = 1,
  /* The value is a string holding a number (HGET, GET); nil reads as 0. An
   * integer reply is always read. */
  LK__VALUE_TEXT = 2
};
/* After sending the pending operation's one command with
 * lk__obj_value_reply as its callback (o as data): op NULL ends the start
 * (the operation is not pending any more) and returns err; else 0. */
int lk__obj_value_sent(lk__obj_t *o, lk__op_t *op, int flags, int err);
/* The reply: an error ends the operation with its status; the value goes to
 * o->result (ops->read_value, or the default reading), then
 * ops->value_done, then the operation ends with 0. */
void lk__obj_value_reply(void *data, int status, redisReply *r);

/* --- replica sync (docs/replica-sync.md, core/sync.h) --- */
/* The most replicas an acquire may ask for (as the client option). */
#define LK__SYNC_MAX 1000
static inline int lk__valid_sync(int v) { return v >= -1 && v <= LK__SYNC_MAX; }
/* From a primitive's acquire, after its checks and before lk__obj_begin:
 * the acquire's sync_replicas option (-1: the client's sync_replicas, 0:
 * off, N: wait for N replicas after the grant). 0, LK_EINVAL (out of
 * range) or LK_ENOMEM. */
int lk__obj_sync_want(lk__obj_t *o, int sync_replicas);
/* Replicas that acknowledged the last acquire's grant, or -1 when it sent
 * no WAIT or got no count back (refused, unanswered, canceled). */
int lk__obj_sync_acked(const lk__obj_t *o);

static inline int lk__valid_wait(int64_t w) {
  return w == -1 || (w >= 0 && w <= LK_MAX_TIME_MS);
}
/* A lease option: the default (-1), or min_ms..LK_MAX_TIME_MS (kinds whose
 * lease must outlast a renewal round ask for more than 1 ms). */
static inline int lk__valid_lease_from(int64_t v, int64_t min_ms) {
  return v == -1 || (v >= min_ms && v <= LK_MAX_TIME_MS);
}
static inline int lk__valid_lease(int64_t v) { return lk__valid_lease_from(v, 1); }

/* An object's holds were lost: its holder hears of it through on_lost when
 * one is set. An object being closed was given up already (the level of a
 * line: core/loglevel.h). */
static inline lk_log_level_t lk__lost_level(const lk__obj_t *o) {
  return o->on_lost != NULL || o->closing ? LK_LOG_INFO : LK_LOG_WARN;
}

#endif /* LK_CORE_OBJECT_H */
