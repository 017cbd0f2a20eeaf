/* Reentrant lock, wire compatible with Redisson's RLock (research/redisson.md
 * §1). One object is one owner with at most one operation pending; it knows
 * its own hold count, which its scripts take as the expected count so that a
 * resend after a lost reply is applied at most once (DESIGN.md §1). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/object.h"
#include "core/tokens.h"
#include "core/watchdog.h"
#include "lock/lock_internal.h"

#define LK__LOCK_CHANNEL_PREFIX "redisson_lock__channel"
#define LK__LOCK_TOKEN_PREFIX "redisson_lock_token"
#define LK__UNKNOWN_RESENDS 3
/* After a release that waiters heard, a new acquire by the same owner within
 * this window first gives them this long (see lk_lock_acquire). */
#define LK__POLITE_WINDOW_NS (2 * 1000000u)
#define LK__POLITE_DELAY_MS 1

enum lk__lock_op {
  OP_NONE = 0,
  OP_ACQUIRE,
  OP_RELEASE,
  OP_FORCE,
  OP_QUERY_EXISTS,
  OP_QUERY_TTL,
  OP_QUERY_HOLDS
};

/* Memory (docs/design.md, "Memory"): one allocation holds the struct, the
 * name and the owner id, each at its exact size. The channel is built when
 * a command or a subscription needs it (lk__scratch_prefix_name), and the
 * watchdog entry is made by the first acquire that asks for a renewed
 * lease, so an idle object pays for neither. */
struct lk_lock_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;     /* after the struct, NUL-terminated */
  size_t name_len;
  char *owner; /* after the name, or its own allocation (owner_heap) */
  size_t owner_len;
  size_t owner_cap; /* bytes the owner's storage holds, its NUL included */
  uint32_t holds;
  uint32_t release_before; /* holds before a release's first attempt */
  int64_t lease_ms; /* of the current holding: re-applied by a partial release */
  char *token_key;  /* fenced locks only, made on first use */
  size_t token_key_len;
  int64_t token;

  /* leases: watchdog-renewed holds are in the client's ring; explicit-lease
   * holds keep their own local deadline */
  lk__wd_entry_t *wd; /* NULL until the first watchdog-renewed acquire */
  uint64_t hold_deadline_ns;
  lk_lock_cb on_lost;
  void *lost_arg;
  lk__lock_lost_fn lost_observer; /* the group built on this lock, if any */
  void *lost_observer_data;
  void *group;      /* the MultiLock this lock is a member of */
  int64_t busy_ttl; /* holder's ttl seen by the last busy attempt */

  /* the pending operation (the rest is in base) */
  lk_lock_cb cb;
  void *arg;
  int64_t req_lease_ms;
  uint64_t released_to_waiters_ns; /* last release that waiters heard */
  lk_lock_close_cb close_cb;
  /* Abandoned acquires whose outcome is still out. The give-back of a late
   * grant goes out when that outcome arrives; an attempt sent before it
   * would reach the server first, take the late grant for its own (the
   * expected count matches), and then lose it to the give-back. So attempts
   * wait (attempt_deferred). The count lives apart from the object so a
   * closed object need not wait for it. */
  struct lk__lock_track_s *track;
  int unknown_resends;
  unsigned owner_shared : 1;
  unsigned owner_heap : 1;
  unsigned lost : 1;
  unsigned req_watchdog : 1; /* the acquire asked for the default, renewed lease */
  unsigned req_fenced : 1;
  unsigned outcome_open : 1; /* the last attempt's reply was lost: the next is a resend */
  unsigned attempt_deferred : 1;
};

#define CLIENT(l) ((l)->base.client)

/* The watchdog entry and the way back to its lock. */
typedef struct lk__lock_wd_s {
  lk__wd_entry_t entry;
  lk_lock_t *lock;
} lk__lock_wd_t;

static const lk__script_t *script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

static void lose(lk_lock_t *l);
static int want_wd(lk_lock_t *l);

static int watching(const lk_lock_t *l) { return l->wd != NULL && lk__wd_watching(l->wd); }

static void stop_watching(lk_lock_t *l) {
  if (watching(l))
    lk__wd_remove(CLIENT(l), l->wd);
}

static void set_paused(lk_lock_t *l, int paused) {
  if (l->wd != NULL)
    l->wd->paused = paused ? 1 : 0;
}

/* The channel waiters listen on, in the client's scratch buffer (see
 * lk__scratch_prefix_name for how long it stays valid). */
static const char *channel(lk_lock_t *l, size_t *len) {
  return lk__scratch_prefix_name(CLIENT(l), LK__LOCK_CHANNEL_PREFIX, l->name, l->name_len, len);
}

static void begin(lk_lock_t *l, enum lk__lock_op kind, lk_lock_cb cb, void *arg) {
  lk__obj_begin(&l->base, kind);
  l->cb = cb;
  l->arg = arg;
  l->unknown_resends = 0;
  l->outcome_open = 0;
}

static void finish(lk_lock_t *l, int status) { lk__obj_finish(&l->base, status); }

/* After on_lost ran: the user may have canceled or closed the object from
 * it, which already queued the operation's one completion. */
static void finish_unless_cut(lk_lock_t *l, int status) {
  if (!lk__queue_linked(&l->base.done.node))
    finish(l, status);
}

static void give_back(lk_lock_t *l, int64_t before, uint32_t n);

static void on_complete(lk__obj_t *o, int kind, int status) {
  lk_lock_t *l = (lk_lock_t *)o;
  lk_lock_cb cb = l->cb;
  lk_client_t *c = o->client;
  if (kind == OP_ACQUIRE && status != 0 && l->outcome_open) {
    /* An attempt's reply was lost and nothing since settled it (a resend
     * met a loading or busy server, then the budget ran out or the acquire
     * was canceled between resends): give back the hold it may have taken,
     * applied only if this owner's count shows it, before the callback can
     * start anything; and say the outcome was unknown. */
    if (!l->owner_shared)
      give_back(l, (int64_t)l->holds + 1, 1);
    l->outcome_open = 0;
    if (status != LK_ECANCELED)
      status = LK_EUNKNOWN;
  }
  if (kind == OP_ACQUIRE && status == 0) {
    c->stats.acquires++;
    if (o->waited)
      c->stats.acquire_waits++;
    if (o->woken_ns != 0)
      c->stats.handoff_ns_total += lk__now_ns() - o->woken_ns;
  }
  if (kind == OP_RELEASE && status == 0)
    c->stats.releases++;
  l->cb = NULL;
  if (cb != NULL)
    cb(l, status, l->arg);
}

/* --- giving back --- */

/* Formats the release script for n holds. `before` (-1: none) is read as
 * the count before a release's first attempt (a resend; mode "resend": the
 * lost attempt is not applied twice), or as a give-back's condition (mode
 * "exact": applied only if the owner's count is exactly `before`). Sent
 * now, or prepared for later. */
static lk__op_t *release_op(lk_lock_t *l, int64_t before, uint32_t n, const char *mode,
                            lk__op_cb cb, void *data, int send, int *err) {
  char lease[24], bef[24], cnt[24];
  const char *argv[8] = {l->name, NULL, lease, l->owner, "PUBLISH", bef, cnt, mode};
  size_t lens[8];
  argv[1] = channel(l, &lens[1]);
  if (argv[1] == NULL) {
    *err = LK_ENOMEM;
    return NULL;
  }
  lens[0] = l->name_len;
  lens[2] = lk__i64_to_str(lease, l->lease_ms);
  lens[3] = l->owner_len, lens[4] = 7;
  lens[5] = lk__i64_to_str(bef, before);
  lens[6] = lk__i64_to_str(cnt, n);
  lens[7] = strlen(mode);
  return (send ? lk__script_call : lk__script_prepare)(CLIENT(l), script("lock/release"),
                                                       2, 6, argv, lens, cb, data, err);
}

/* Gives back n holds the object no longer counts as its own (a lost lease,
 * a refused token), or, with before >= 0, the hold an acquire may have added
 * (only if the owner's count is exactly `before`). Best effort: what cannot
 * be sent expires with its lease. */
static void give_back(lk_lock_t *l, int64_t before, uint32_t n) {
  int err = 0;
  if (n > 0)
    release_op(l, before, n, "exact", lk__cleanup_cb, CLIENT(l), 1, &err);
}

static int granted(int status, const redisReply *r) {
  return status == 0 && r != NULL && r->type == REDIS_REPLY_ARRAY;
}

static int granted_or_unknown(int status, const redisReply *r) {
  return granted(status, r) || status == LK_EUNKNOWN;
}

static int always(int status, const redisReply *r) {
  (void)status;
  (void)r;
  return 1;
}

static int attempt_acquire(lk__obj_t *o);

typedef struct lk__lock_track_s {
  lk_lock_t *lock; /* NULL once the object is freed */
  unsigned pending;
} lk__lock_track_t;

static int abandoned_pending(const lk_lock_t *l) {
  return l->track != NULL && l->track->pending > 0;
}

/* An abandoned acquire's outcome came and its give-back (if any) is on the
 * connection: a deferred attempt may go now. */
static void on_abandoned_settled(void *arg) {
  lk__lock_track_t *t = arg;
  lk_lock_t *l = t->lock;
  int rc;
  t->pending--;
  if (l == NULL) {
    if (t->pending == 0)
      lk__free(t);
    return;
  }
  if (t->pending > 0)
    return;
  if (l->attempt_deferred && l->base.kind == OP_ACQUIRE && l->base.op == NULL &&
      !lk__queue_linked(&l->base.done.node)) {
    l->attempt_deferred = 0;
    rc = lk__obj_try(&l->base);
    if (rc != 0)
      finish(l, rc);
  }
}

/* The acquire in flight is left behind (timeout, cancel, close): a late
 * grant is given back. The release is prepared now and applies only if the
 * owner's count shows the grant, so it can follow an unknown outcome too.
 * Other commands' late outcomes matter to nobody. */
static void on_abandon(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  lk__op_t *undo;
  int (*pred)(int status, const redisReply *r);
  int err = 0;
  if (o->kind != OP_ACQUIRE) {
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  /* When an earlier attempt's outcome is open (this one is its resend), the
   * give-back goes whatever this one answers: a LOADING reply to the resend
   * says nothing of the first attempt's grant. It applies only if the
   * owner's count shows a grant, and settles the open outcome. */
  pred = l->owner_shared ? granted : l->outcome_open ? always : granted_or_unknown;
  l->outcome_open = 0;
  undo = release_op(l, l->owner_shared ? -1 : (int64_t)l->holds + 1, 1, "exact",
                    lk__cleanup_cb, o->client, 0, &err);
  if (undo == NULL) {
    lk__log(o->client, LK_LOG_WARN, "cannot prepare giving back an abandoned "
                                    "acquire (%s); any hold expires with its lease",
            lk_err_name(err));
    lk__op_retarget(o->op, NULL, NULL);
    return;
  }
  if (l->track == NULL && (l->track = lk__calloc(1, sizeof(*l->track))) != NULL)
    l->track->lock = l;
  if (l->track == NULL) {
    lk__op_follow_up(o->client, o->op, undo, pred);
    return;
  }
  if (lk__op_follow_up_then(o->client, o->op, undo, pred, on_abandoned_settled, l->track) == 0)
    l->track->pending++;
}

static void on_acquire_reply(void *data, int status, redisReply *r);

static int attempt_acquire(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  char lease[24], before[24], floor[24];
  const char *argv[7];
  size_t lens[7];
  const char *resend = l->outcome_open ? "1" : "0";
  int err = 0;
  if (abandoned_pending(l)) {
    l->attempt_deferred = 1; /* on_abandoned_settled sends it */
    return 0;
  }
  size_t lease_len = lk__i64_to_str(lease, l->req_lease_ms);
  size_t before_len =
      lk__i64_to_str(before, l->owner_shared ? (int64_t)-1 : (int64_t)l->holds);
  if (l->req_fenced) {
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = l->token_key, lens[1] = l->token_key_len;
    argv[2] = lease, lens[2] = lease_len;
    argv[3] = l->owner, lens[3] = l->owner_len;
    argv[4] = before, lens[4] = before_len;
    argv[5] = floor;
    lens[5] = lk__i64_to_str(floor, lk__token_highest(CLIENT(l), l->name, l->name_len) + 1);
    argv[6] = resend, lens[6] = 1;
    l->base.op = lk__script_call(CLIENT(l), script("lock/acquire_fenced"), 2, 5, argv,
                            lens, on_acquire_reply, l, &err);
  } else {
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = lease, lens[1] = lease_len;
    argv[2] = l->owner, lens[2] = l->owner_len;
    argv[3] = before, lens[3] = before_len;
    argv[4] = resend, lens[4] = 1;
    l->base.op = lk__script_call(CLIENT(l), script("lock/acquire"), 1, 4, argv, lens,
                            on_acquire_reply, l, &err);
  }
  return l->base.op != NULL ? 0 : err;
}

static int is_grant(const redisReply *r) {
  size_t i;
  if (r->type != REDIS_REPLY_ARRAY || (r->elements != 1 && r->elements != 3))
    return 0;
  for (i = 0; i < r->elements; i++)
    if (r->element[i]->type != REDIS_REPLY_INTEGER)
      return 0;
  return 1;
}

/* The server granted a hold: count it, start or refresh its lease keeping,
 * check the fencing token. */
static void acquired(lk_lock_t *l, redisReply *r) {
  lk_client_t *c = CLIENT(l);
  uint64_t sent = c->completing_sent_ns;
  long long count = r->element[0]->integer;
  uint32_t before = l->holds;
  if (l->lost) {
    /* A re-entry that was in flight when the lease was declared lost: the
     * clean-up release queued behind it has taken it away again. */
    l->lost = 0;
    l->holds = 0;
    finish(l, LK_ELEASELOST);
    return;
  }
  if (!l->owner_shared && before > 0 && count != (long long)before + 1) {
    /* A re-entry found fewer holds than this owner had: the earlier ones
     * were lost (expired, deleted, force-released) and someone else may have
     * held the lock in between. Report the loss, give back the fresh hold. */
    l->holds = (uint32_t)(count > 0 && count <= UINT32_MAX ? count : 1);
    lose(l);
    l->holds = 0;
    l->lost = 0;
    finish_unless_cut(l, LK_ELEASELOST);
    return;
  }
  l->holds++;
  l->lease_ms = l->req_lease_ms;
  if (l->req_watchdog) {
    /* The script set the watchdog's lease at `sent`: that confirmation
     * starts (or restarts) this object's local deadline. */
    stop_watching(l);
    lk__wd_add(c, l->wd, sent); /* made by lk_lock_acquire */
  } else {
    l->hold_deadline_ns = sent + (uint64_t)l->req_lease_ms * 1000000u -
                          lk__wd_drift_ns(l->req_lease_ms);
  }
  if (l->req_fenced && r->elements == 3) {
    int64_t token = r->element[1]->integer;
    int regressed = r->element[2]->integer != 0;
    lk__token_seen(c, l->name, l->name_len, token);
    if (regressed) {
      /* Handing this token out could let a stale writer win at the
       * resource: give the hold back and say why. The counter was lifted,
       * so the next acquisition gets a token above any seen before. */
      lk__log(c, LK_LOG_ERROR, "fencing token went backwards for a lock "
                               "(server lost its data); acquisition refused");
      give_back(l, -1, 1);
      l->holds = before;
      if (l->holds == 0)
        stop_watching(l);
      finish(l, LK_ETOKEN);
      return;
    }
    l->token = token;
  }
  if (lk__now_ns() >= lk__lock_deadline_ns(l)) {
    /* The grant came back after its own local deadline (the round trip took
     * longer than the lease): the server may have expired it already, so it
     * cannot be used (Redlock's "validity <= 0"; etcd #11456). Give it back
     * and fail. A re-entry's earlier holds are past their deadline too. */
    lk__log(c, LK_LOG_WARN, "acquisition answered after its lease ran out; given back");
    if (before > 0) {
      lose(l);
      l->lost = 0;
    } else {
      give_back(l, -1, 1);
      stop_watching(l);
    }
    l->holds = 0;
    finish_unless_cut(l, LK_ELEASELOST);
    return;
  }
  finish(l, 0);
}

static void on_acquire_reply(void *data, int status, redisReply *r) {
  lk_lock_t *l = data;
  long long ttl;
  l->base.op = NULL;
  if (status == 0)
    l->outcome_open = 0; /* answered: whatever was open is settled */
  if (status == 0 && is_grant(r)) {
    acquired(l, r);
    return;
  }
  if (status == 0 && lk__reply_is_int(r, &ttl)) {
    l->busy_ttl = ttl;
    lk__obj_busy(&l->base, ttl);
    return;
  }
  if (status == 0) {
    /* A reply the script never sends: what ran on the server is unknown.
     * Give back a hold it may have taken (applied only if this owner's
     * count shows it), as for a lost reply. */
    if (!l->owner_shared)
      give_back(l, (int64_t)l->holds + 1, 1);
    l->outcome_open = 0;
    finish(l, LK_EPROTOCOL);
    return;
  }
  lk__obj_error(&l->base, r);
  if ((status == LK_EUNKNOWN || (status == LK_ECONN && l->unknown_resends > 0)) &&
      !l->owner_shared && l->unknown_resends < LK__UNKNOWN_RESENDS &&
      lk__obj_remaining_ms(&l->base) > 0) {
    /* Safe to resend: the script recognises an earlier attempt that took the
     * lock by the expected count, so nothing is counted twice. */
    int rc;
    l->unknown_resends++;
    l->outcome_open = 1;
    rc = lk__obj_try(&l->base);
    if (rc != 0)
      finish(l, rc);
    return;
  }
  if (status == LK_EUNKNOWN || (status == LK_ECONN && l->unknown_resends > 0)) {
    /* The budget is spent with the outcome open: on_complete queues a
     * release that applies only if the lost attempt did take the lock. */
    l->outcome_open = 1;
    finish(l, LK_EUNKNOWN);
    return;
  }
  if (lk__obj_transient(status)) {
    lk__obj_retry_or_finish(&l->base, status);
    return;
  }
  finish(l, status);
}


void lk_lock_opts_init(lk_lock_opts_t *o) {
  if (o == NULL)
    return;
  o->wait_ms = 0;
  o->lease_ms = LK_LEASE_DEFAULT;
  o->fenced = 0;
}

int lk_lock_acquire(lk_lock_t *l, const lk_lock_opts_t *opts, lk_lock_cb cb,
                    void *arg) {
  lk_lock_opts_t defaults;
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (opts == NULL) {
    lk_lock_opts_init(&defaults);
    opts = &defaults;
  }
  if (!lk__valid_wait(opts->wait_ms) || !lk__valid_lease(opts->lease_ms))
    return LK_EINVAL;
  if (l->holds == UINT32_MAX)
    return LK_EINVAL;
  if (opts->fenced && l->token_key == NULL) {
    l->token_key = lk__prefix_name(LK__LOCK_TOKEN_PREFIX, l->name, l->name_len,
                                   &l->token_key_len);
    if (l->token_key == NULL)
      return LK_ENOMEM;
  }
  if ((opts->lease_ms == LK_LEASE_DEFAULT || watching(l)) && want_wd(l) != 0)
    return LK_ENOMEM;
  if (l->lost) {
    /* Told of the loss already; what the server may have kept was given
     * back then. Start afresh. */
    l->lost = 0;
    l->holds = 0;
  }
  begin(l, OP_ACQUIRE, cb, arg);
  l->busy_ttl = LK__LOCK_NOT_BUSY;
  l->attempt_deferred = 0;
  lk__obj_wait_begin(&l->base, opts->wait_ms);
  l->req_fenced = opts->fenced != 0;
  /* A re-entry with an explicit lease while the watchdog keeps this owner's
   * lease keeps the watchdog's lease: a shorter one would end the lock before
   * the local deadline the watchdog promises. */
  l->req_watchdog = opts->lease_ms == LK_LEASE_DEFAULT || watching(l);
  l->req_lease_ms = l->req_watchdog ? CLIENT(l)->o.default_lease_ms : opts->lease_ms;
  if (opts->wait_ms != 0 && l->holds == 0 && l->released_to_waiters_ns != 0 &&
      lk__now_ns() - l->released_to_waiters_ns < LK__POLITE_WINDOW_NS) {
    /* This owner just handed the lock to listening waiters: taking it
     * straight back would win the race nearly every time (the waiter is one
     * wake-up and one round trip behind), starving everyone else. Let the
     * woken waiter in first; a wait budget makes the pause free to take. */
    l->released_to_waiters_ns = 0;
    rc = lk__obj_try_after(&l->base, LK__POLITE_DELAY_MS);
    if (rc != 0)
      l->base.kind = OP_NONE;
    return rc;
  }
  rc = lk__obj_try(&l->base);
  if (rc != 0)
    l->base.kind = OP_NONE;
  return rc;
}

int lk_lock_cancel(lk_lock_t *l) {
  return lk__obj_cancel(l ? &l->base : NULL, OP_ACQUIRE);
}

/* --- release --- */

static void on_release_reply(void *data, int status, redisReply *r);

static int release_attempt(lk_lock_t *l, int resend) {
  int err = 0;
  l->base.op = release_op(l, resend && !l->owner_shared ? (int64_t)l->release_before : -1,
                          1, "resend", on_release_reply, l, 1, &err);
  return l->base.op != NULL ? 0 : err;
}

/* A release ended: nothing held means nothing to renew; otherwise renewal
 * resumes (it was paused while the last hold's release was in flight). */
static void release_finish(lk_lock_t *l, int status) {
  if (l->holds == 0) {
    l->lost = 0;
    stop_watching(l);
  }
  set_paused(l, 0);
  finish(l, status);
}

static void on_release_reply(void *data, int status, redisReply *r) {
  lk_lock_t *l = data;
  long long v;
  l->base.op = NULL;
  if (status == 0 && r->type == REDIS_REPLY_NIL) {
    /* The server has no hold for this owner: the lease ran out. */
    l->holds = 0;
    release_finish(l, LK_ENOTOWNER);
    return;
  }
  if (status == 0 && lk__reply_is_int(r, &v) && v >= 0 && v <= 2) {
    if (v == 2) {
      l->released_to_waiters_ns = lk__now_ns();
      v = 1;
    }
    l->holds = l->release_before - 1;
    if (v == 1 && !l->owner_shared)
      l->holds = 0;
    l->base.result = v;
    release_finish(l, 0);
    return;
  }
  if (status == 0) {
    release_finish(l, LK_EPROTOCOL);
    return;
  }
  lk__obj_error(&l->base, r);
  /* Resend after a lost reply; a resend that could not even be sent (the
   * reconnect failed) is tried again too, within the same small budget. */
  if ((status == LK_EUNKNOWN || (status == LK_ECONN && l->unknown_resends > 0)) &&
      !l->owner_shared && l->unknown_resends < LK__UNKNOWN_RESENDS) {
    l->unknown_resends++;
    if (release_attempt(l, 1) == 0)
      return;
  }
  /* A resend that could not be sent leaves the first attempt's fate open. */
  release_finish(l, l->unknown_resends > 0 && status == LK_ECONN ? LK_EUNKNOWN : status);
}

int lk_lock_release(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (l->holds == 0)
    return LK_ENOTHELD;
  if (l->lost) {
    /* on_lost told the loss; the server's side was given back then. */
    l->holds = 0;
    l->lost = 0;
    return LK_ELEASELOST;
  }
  begin(l, OP_RELEASE, cb, arg);
  l->release_before = l->holds;
  /* No renewal may follow the release of the last hold. One already in
   * flight is ahead of it on the connection, so it cannot outlive it. */
  if (l->holds == 1)
    set_paused(l, 1);
  rc = release_attempt(l, 0);
  if (rc != 0) {
    l->base.kind = OP_NONE;
    set_paused(l, 0); /* nothing was sent: still held, keep renewing */
  }
  return rc;
}

/* --- force release and queries --- */

static void on_simple_reply(void *data, int status, redisReply *r) {
  lk_lock_t *l = data;
  long long v;
  l->base.op = NULL;
  if (status != 0) {
    lk__obj_error(&l->base, r);
    finish(l, status);
    return;
  }
  switch (l->base.kind) {
  case OP_QUERY_HOLDS:
    if (r->type == REDIS_REPLY_NIL) {
      l->base.result = 0;
    } else if (r->type == REDIS_REPLY_STRING) {
      l->base.result = strtoll(r->str, NULL, 10);
    } else {
      finish(l, LK_EPROTOCOL);
      return;
    }
    break;
  default:
    if (!lk__reply_is_int(r, &v)) {
      finish(l, LK_EPROTOCOL);
      return;
    }
    l->base.result = v;
    if (l->base.kind == OP_FORCE) {
      l->holds = 0;
      l->lost = 0;
      stop_watching(l);
    }
    break;
  }
  finish(l, 0);
}

static int start_simple(lk_lock_t *l, enum lk__lock_op kind, lk_lock_cb cb,
                        void *arg) {
  const char *argv[3];
  size_t lens[3];
  int err = 0, rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  begin(l, kind, cb, arg);
  switch (kind) {
  case OP_FORCE:
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = channel(l, &lens[1]);
    argv[2] = "PUBLISH", lens[2] = 7;
    if (argv[1] == NULL)
      err = LK_ENOMEM;
    else
      l->base.op = lk__script_call(CLIENT(l), script("lock/force_release"), 2, 1, argv, lens,
                                   on_simple_reply, l, &err);
    break;
  case OP_QUERY_HOLDS:
    argv[0] = "HGET", lens[0] = 4;
    argv[1] = l->name, lens[1] = l->name_len;
    argv[2] = l->owner, lens[2] = l->owner_len;
    l->base.op = lk__cmd_argv(CLIENT(l), 3, argv, lens, on_simple_reply, l, &err);
    break;
  default:
    argv[0] = kind == OP_QUERY_TTL ? "PTTL" : "EXISTS";
    lens[0] = strlen(argv[0]);
    argv[1] = l->name, lens[1] = l->name_len;
    l->base.op = lk__cmd_argv(CLIENT(l), 2, argv, lens, on_simple_reply, l, &err);
    break;
  }
  if (l->base.op == NULL) {
    l->base.kind = OP_NONE;
    return err;
  }
  return 0;
}

int lk_lock_force_release(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  return start_simple(l, OP_FORCE, cb, arg);
}
int lk_lock_is_locked(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  return start_simple(l, OP_QUERY_EXISTS, cb, arg);
}
int lk_lock_remaining_ttl(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  return start_simple(l, OP_QUERY_TTL, cb, arg);
}
int lk_lock_server_hold_count(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  return start_simple(l, OP_QUERY_HOLDS, cb, arg);
}

/* --- leases --- */

static void on_wd_event(lk__wd_entry_t *e, int event) {
  lk_lock_t *l = lk__container_of(e, lk__lock_wd_t, entry)->lock;
  (void)event; /* LK__WD_LOST, the only one */
  lose(l);
}

/* The holds are gone: stop renewing, give back what the server may still
 * have for this owner, tell the holder. */
static void lose(lk_lock_t *l) {
  /* Stop watching entirely: a renewal still in flight was sent before the
   * give-back below, which therefore undoes a late success of it. */
  stop_watching(l);
  l->lost = 1;
  CLIENT(l)->stats.leases_lost++;
  lk__log(CLIENT(l), LK_LOG_WARN, "lease lost on a held lock");
  /* Whatever the server still has for this owner goes now: the holder has
   * been told it lost the lock, so nobody must keep it. An owner of our own
   * gives back everything, a re-entry still in flight included. */
  give_back(l, -1, l->owner_shared ? l->holds : UINT32_MAX);
  if (l->on_lost != NULL && !l->base.closing)
    l->on_lost(l, LK_ELEASELOST, l->lost_arg);
  if (l->lost_observer != NULL && !l->base.closing)
    l->lost_observer(l, l->lost_observer_data);
}

/* --- lifecycle --- */

/* The watchdog renews by the lock's name and owner: told again when the
 * owner changes. */
static void wd_describe(lk_lock_t *l) {
  if (l->wd == NULL)
    return;
  l->wd->keys[0] = l->name;
  l->wd->key_lens[0] = l->name_len;
  l->wd->owner = l->owner;
  l->wd->owner_len = l->owner_len;
}

/* Made by the first acquire that asks for a renewed lease, kept until
 * close: steady use allocates nothing. */
static int want_wd(lk_lock_t *l) {
  lk__lock_wd_t *w;
  if (l->wd != NULL)
    return 0;
  w = lk__calloc(1, sizeof(*w));
  if (w == NULL)
    return LK_ENOMEM;
  w->lock = l;
  w->entry.cls = &lk__wd_lock_class;
  w->entry.on_event = on_wd_event;
  lk__queue_init(&w->entry.node);
  l->wd = &w->entry;
  wd_describe(l);
  return 0;
}

#define LK__OWNER_MAX 96 /* client id (<= 64) + ':' + a 64-bit thread id */

static size_t owner_text(char out[LK__OWNER_MAX], const char *client_id, uint64_t tid) {
  int n = snprintf(out, LK__OWNER_MAX, "%s:%" PRIu64, client_id, tid);
  return n > 0 && n < LK__OWNER_MAX ? (size_t)n : 0;
}

/* A new owner goes where the old one was when it fits, else into storage of
 * its own, made once at the largest owner size: it never moves again, so
 * what lk_lock_owner returned stays readable until close. */
static int set_owner(lk_lock_t *l, const char *client_id, uint64_t tid) {
  char text[LK__OWNER_MAX];
  size_t n = owner_text(text, client_id, tid);
  if (n == 0)
    return LK_EINVAL;
  if (n + 1 > l->owner_cap) {
    char *o = lk__malloc(LK__OWNER_MAX);
    if (o == NULL)
      return LK_ENOMEM;
    l->owner = o;
    l->owner_cap = LK__OWNER_MAX;
    l->owner_heap = 1;
  }
  memcpy(l->owner, text, n + 1);
  l->owner_len = n;
  wd_describe(l);
  return 0;
}

static void on_close_release(void *data, int status, redisReply *r) {
  lk_lock_t *l = data;
  l->base.op = NULL;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(CLIENT(l), LK_LOG_WARN, "release on close failed (%s); the lock "
                                    "expires with its lease",
            lk_err_name(status));
  l->holds = 0;
  lk__obj_close_done(&l->base);
}

/* Close gives back every hold (and stops renewing first). An owner of our
 * own gives back everything it has on the server, so a late grant to an
 * abandoned acquire queued behind is gone too (its conditional give-back then
 * finds nothing); a shared owner gives back exactly its count, and its late
 * grants are given back one by one. */
static int on_close_release_start(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  int err = 0;
  stop_watching(l);
  if (l->holds == 0)
    return 0;
  o->op = release_op(l, -1, l->owner_shared ? l->holds : UINT32_MAX, "exact", on_close_release, l,
                     1, &err);
  return o->op != NULL;
}

static void on_closed(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  if (l->close_cb != NULL)
    l->close_cb(l);
}

static void free_lock(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  if (l->track != NULL) {
    if (l->track->pending == 0)
      lk__free(l->track);
    else
      l->track->lock = NULL; /* the last settled give-back frees it */
  }
  lk__free(l->token_key);
  if (l->owner_heap)
    lk__free(l->owner);
  if (l->wd != NULL)
    lk__free(lk__container_of(l->wd, lk__lock_wd_t, entry));
  lk__free(l);
}

static const char *wait_channel(lk__obj_t *o, size_t *len) {
  return channel((lk_lock_t *)o, len);
}

static const lk__obj_ops_t lk__lock_ops = {
    .complete = on_complete,
    .attempt = attempt_acquire,
    .abandon = on_abandon,
    .close_release = on_close_release_start,
    .closed = on_closed,
    .free = free_lock,
    .channel = wait_channel,
};

int lk_lock_new(lk_client_t *c, const char *name, lk_lock_t **out) {
  lk_lock_t *l;
  char owner[LK__OWNER_MAX];
  size_t len, owner_len;
  int rc = lk__obj_new_check(c, out, name, &len);
  if (rc != 0)
    return rc;
  owner_len = owner_text(owner, c->id, c->next_tid + 1);
  if (owner_len == 0)
    return LK_EINVAL; /* not reached: client ids are at most 64 bytes */
  l = lk__calloc(1, sizeof(*l) + len + 1 + owner_len + 1);
  if (l == NULL)
    return LK_ENOMEM;
  c->next_tid++;
  l->name = (char *)(l + 1);
  memcpy(l->name, name, len);
  l->name_len = len;
  l->owner = l->name + len + 1;
  memcpy(l->owner, owner, owner_len + 1);
  l->owner_len = owner_len;
  l->owner_cap = owner_len + 1;
  l->lease_ms = c->o.default_lease_ms;
  lk__obj_init(&l->base, c, &lk__lock_ops);
  *out = l;
  return 0;
}

int lk_lock_close(lk_lock_t *l, lk_lock_close_cb close_cb) {
  int rc;
  if (l == NULL)
    return LK_EINVAL;
  /* A MultiLock still counts on it (a forked child only frees memory). */
  if (l->group != NULL && !lk__client_forked(CLIENT(l))) {
    rc = lk__check_client(CLIENT(l));
    return rc != 0 ? rc : LK_EBUSY;
  }
  rc = lk__obj_close(&l->base);
  if (rc == 0)
    l->close_cb = close_cb;
  return rc;
}

/* --- accessors --- */

uint32_t lk_lock_hold_count(const lk_lock_t *l) { return l ? l->holds : 0; }
int64_t lk_lock_result(const lk_lock_t *l) { return l ? l->base.result : 0; }
const char *lk_lock_error_text(const lk_lock_t *l) { return l ? lk__obj_errtext(&l->base) : ""; }
const char *lk_lock_name(const lk_lock_t *l) { return l ? l->name : NULL; }
const char *lk_lock_owner(const lk_lock_t *l) { return l ? l->owner : NULL; }
lk_client_t *lk_lock_client(const lk_lock_t *l) { return l ? CLIENT(l) : NULL; }
void *lk_lock_get_data(const lk_lock_t *l) { return l ? l->base.data : NULL; }
void lk_lock_set_data(lk_lock_t *l, void *data) {
  if (l != NULL)
    l->base.data = data;
}

int lk_lock_set_owner(lk_lock_t *l, const char *client_id, uint64_t thread_id) {
  int rc = lk__obj_check(l ? &l->base : NULL);
  if (rc != 0)
    return rc;
  if (client_id != NULL && !lk__valid_client_id(client_id))
    return LK_EINVAL;
  if (l->base.kind != OP_NONE || l->holds > 0)
    return LK_EBUSY;
  rc = set_owner(l, client_id ? client_id : CLIENT(l)->id, thread_id);
  if (rc == 0)
    l->owner_shared = 1;
  return rc;
}

int lk_lock_set_lost_cb(lk_lock_t *l, lk_lock_cb on_lost, void *arg) {
  int rc = lk__obj_check(l ? &l->base : NULL);
  if (rc != 0)
    return rc;
  l->on_lost = on_lost;
  l->lost_arg = arg;
  return 0;
}

int lk_lock_is_held(const lk_lock_t *l) {
  uint64_t now;
  if (l == NULL || l->holds == 0 || l->lost)
    return 0;
  now = lk__now_ns();
  if (watching(l))
    return now < lk__wd_deadline(CLIENT(l), l->wd);
  return now < l->hold_deadline_ns;
}

int64_t lk_lock_token(const lk_lock_t *l) { return l ? l->token : 0; }

/* --- for the objects built from locks (lock_internal.h) --- */

int lk__lock_bind(lk_lock_t *l, void *group) {
  if (l->group != NULL && l->group != group)
    return LK_EBUSY;
  l->group = group;
  return 0;
}

void lk__lock_unbind(lk_lock_t *l) {
  l->group = NULL;
  l->lost_observer = NULL;
  l->lost_observer_data = NULL;
}

void lk__lock_set_lost_observer(lk_lock_t *l, lk__lock_lost_fn fn, void *data) {
  l->lost_observer = fn;
  l->lost_observer_data = data;
}

int64_t lk__lock_busy_ttl(const lk_lock_t *l) { return l->busy_ttl; }

uint64_t lk__lock_deadline_ns(const lk_lock_t *l) {
  if (l->holds == 0 || l->lost)
    return 0;
  if (watching(l))
    return lk__wd_deadline(CLIENT(l), l->wd);
  return l->hold_deadline_ns;
}

void lk__lock_drop_holds(lk_lock_t *l, uint32_t n) {
  if (n > l->holds)
    n = l->holds;
  if (n == 0)
    return;
  if (!l->lost)
    give_back(l, -1, n);
  l->holds -= n;
  if (l->holds == 0) {
    l->lost = 0;
    stop_watching(l);
  }
}
