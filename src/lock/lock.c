/* Reentrant lock, wire compatible with Redisson's RLock (docs/lock.md; the
 * keys in docs/design.md, "Redisson compatibility"). One object is one owner
 * with at most one operation pending; it knows its own hold count, which its
 * scripts take as the expected count so that a resend after a lost reply is
 * applied at most once (docs/design.md, "Unknown outcomes"). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/guard.h"
#include "core/hold.h"
#include "core/loglevel.h"
#include "core/object.h"
#include "core/outcome.h"
#include "core/router.h"
#include "core/spin.h"
#include "core/tokens.h"
#include "core/watchdog.h"
#include "lock/lock_internal.h"

#define LK__LOCK_CHANNEL_PREFIX "redisson_lock__channel"
#define LK__LOCK_TOKEN_PREFIX "redisson_lock_token"
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
  OP_QUERY_HOLDS,
  OP_GUARDED
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
  lk__hold_t hold;  /* hold.wd: NULL until the first watchdog-renewed acquire */
  uint32_t release_before; /* holds before a release's first attempt */
  char *token_key;  /* fenced locks only, made on first use */
  size_t token_key_len;
  int64_t token;

  lk__lock_lost_fn lost_observer; /* the group built on this lock, if any */
  void *lost_observer_data;
  void *group;      /* the MultiLock this lock is a member of */
  int64_t busy_ttl; /* holder's ttl seen by the last busy attempt */

  /* the pending operation (the rest is in base) */
  int64_t req_lease_ms;
  uint64_t released_to_waiters_ns; /* last release that waiters heard */
  unsigned owner_shared : 1;
  unsigned owner_heap : 1;
  unsigned req_watchdog : 1; /* the acquire asked for the default, renewed lease */
  unsigned req_fenced : 1;
  unsigned req_nonreentrant : 1; /* refused by the server if the owner holds */
  unsigned lean : 1; /* lk__lock_lean_layout, else Redisson's RLock layout */
  /* The current holding took a fencing token: guarded writes check it. */
  unsigned hold_fenced : 1;
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

static void lk__lock_lose(lk__obj_t *o);
static int want_wd(lk_lock_t *l);

static int watching(const lk_lock_t *l) { return lk__hold_watched(&l->hold); }

static void set_paused(lk_lock_t *l, int paused) {
  if (l->hold.wd != NULL)
    l->hold.wd->paused = paused ? 1 : 0;
}

/* The channel waiters listen on, in the client's scratch buffer (see
 * lk__scratch_prefix_name for how long it stays valid). */
static const char *channel(lk_lock_t *l, size_t *len) {
  return lk__scratch_prefix_name(CLIENT(l), LK__LOCK_CHANNEL_PREFIX, l->name, l->name_len, len);
}

static void begin(lk_lock_t *l, enum lk__lock_op kind, lk_lock_cb cb, void *arg) {
  lk__obj_begin(&l->base, kind, (lk__fn_t)cb, arg);
}

static void finish(lk_lock_t *l, int status) { lk__obj_finish(&l->base, status); }

/* --- giving back --- */

/* The script of this lock's layout standing for the default one, f. */
#define LAYOUT_SCRIPT(l, f, dflt) script((l)->lean ? lk__lock_lean_layout.f : (dflt))

/* Formats the release script for n holds. `before` (-1: none) is read as
 * the count before a release's first attempt (a resend; mode "resend": the
 * lost attempt is not applied twice), or as a give-back's condition (mode
 * "exact": applied only if the owner's count is exactly `before`). Sent
 * now, or prepared for later. */
static lk__op_t *release_op(lk_lock_t *l, int64_t before, uint32_t n, const char *mode,
                            lk__op_cb cb, void *data, int send, int *err) {
  char lease[24], bef[24], cnt[24];
  /* The channel goes last, as an argument and not a key: a one-key script
   * gets through a slot migration (scripts/lock/release.lua). */
  const char *argv[8] = {l->name, lease, l->owner, NULL, bef, cnt, mode, NULL};
  size_t lens[8];
  argv[7] = channel(l, &lens[7]);
  if (argv[7] == NULL) {
    *err = LK_ENOMEM;
    return NULL;
  }
  lens[0] = l->name_len;
  lens[1] = lk__i64_to_str(lease, l->hold.lease_ms);
  lens[2] = l->owner_len;
  argv[3] = lk__publish_cmd(CLIENT(l), &lens[3]);
  lens[4] = lk__i64_to_str(bef, before);
  lens[5] = lk__i64_to_str(cnt, n);
  lens[6] = strlen(mode);
  return (send ? lk__script_call : lk__script_prepare)(CLIENT(l),
                                                       LAYOUT_SCRIPT(l, release, "lock/release"),
                                                       1, 7, argv, lens, cb, data, err);
}

/* Gives back n holds the object no longer counts as its own (a lost lease,
 * a refused token), or, with cond >= 0, only if the owner's count is
 * exactly cond. Best effort: what cannot be sent expires with its lease. */
static void give_back(lk_lock_t *l, int64_t cond, uint32_t n) {
  int err = 0;
  if (n > 0)
    lk__outcome_give_back(&l->base,
                          release_op(l, cond, n, "exact", lk__cleanup_cb, CLIENT(l), 0, &err));
}

static void lk__lock_give_back(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n) {
  (void)h; /* the lock has one side */
  give_back((lk_lock_t *)o, cond, n);
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

static int lk__lock_counted(lk__obj_t *o) { return !((lk_lock_t *)o)->owner_shared; }

/* The hold an acquire's attempt may have added: conditional on this
 * owner's count when the object knows it, else only a grant seen. */
static lk__op_t *lk__lock_undo(lk__obj_t *o, int known_grant) {
  lk_lock_t *l = (lk_lock_t *)o;
  int err = 0;
  if (l->owner_shared && !known_grant)
    return NULL;
  return release_op(l, l->owner_shared ? -1 : (int64_t)l->hold.count + 1, 1, "exact",
                    lk__cleanup_cb, o->client, 0, &err);
}

static int lk__lock_is_grant(const redisReply *r) {
  return lk__reply_int_array(r) && (r->elements == 1 || r->elements == 3);
}

/* --- acquiring --- */

static int lk__lock_attempt(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  char lease[24], before[24], floor[24];
  const char *argv[8];
  size_t lens[8];
  const char *resend = o->outcome_open ? "1" : "0";
  const char *reentrant = l->req_nonreentrant ? "0" : "1";
  int err = 0;
  if (lk__outcome_defer_attempt(o))
    return 0;
  size_t lease_len = lk__i64_to_str(lease, l->req_lease_ms);
  size_t before_len =
      lk__i64_to_str(before, l->owner_shared ? (int64_t)-1 : (int64_t)l->hold.count);
  if (l->req_fenced) {
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = l->token_key, lens[1] = l->token_key_len;
    argv[2] = lease, lens[2] = lease_len;
    argv[3] = l->owner, lens[3] = l->owner_len;
    argv[4] = before, lens[4] = before_len;
    argv[5] = floor;
    lens[5] = lk__i64_to_str(floor, lk__token_highest(CLIENT(l), l->name, l->name_len) + 1);
    argv[6] = resend, lens[6] = 1;
    argv[7] = reentrant, lens[7] = 1;
    o->op = lk__script_call(CLIENT(l),
                            LAYOUT_SCRIPT(l, acquire_fenced, "lock/acquire_fenced"),
                            2, 6, argv, lens,
                            lk__obj_attempt_reply, o, &err);
  } else {
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = lease, lens[1] = lease_len;
    argv[2] = l->owner, lens[2] = l->owner_len;
    argv[3] = before, lens[3] = before_len;
    argv[4] = resend, lens[4] = 1;
    argv[5] = reentrant, lens[5] = 1;
    o->op = lk__script_call(CLIENT(l), LAYOUT_SCRIPT(l, acquire, "lock/acquire"),
                            1, 5, argv, lens,
                            lk__obj_attempt_reply, o, &err);
  }
  return o->op != NULL ? 0 : err;
}

/* The server granted a hold: the core's grant routine counts it and keeps
 * its lease (core/hold.h). */
static void lk__lock_acquired(lk__obj_t *o, const redisReply *r) {
  lk_lock_t *l = (lk_lock_t *)o;
  lk__grant_t g = {0};
  /* A fresh holding is fenced or not by its first grant; a fenced
   * re-entry makes it fenced (its token is then the newest). */
  if (l->hold.count == 0)
    l->hold_fenced = 0;
  if (l->req_fenced && r->elements == 3)
    l->hold_fenced = 1;
  g.hold = &l->hold;
  g.count = r->element[0]->integer;
  g.lease_ms = l->req_lease_ms;
  g.watchdog = l->req_watchdog;
  if (l->req_fenced && r->elements == 3)
    lk__grant_token(&g, r, 1, &l->token, l->name, l->name_len);
  lk__hold_grant(&l->base, &g);
}

/* A grant (lk__lock_is_grant), or "taken" with the holder's TTL, kept for the
 * RedLock: it counts a taken master's vote and the shortest TTL it met
 * (lk__lock_busy_ttl). */
static int lk__lock_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  int answer = lk__obj_read_grant_or_busy(o, r, v);
  if (answer == LK__ANSWER_BUSY)
    ((lk_lock_t *)o)->busy_ttl = *v;
  return answer;
}

void lk_lock_opts_init(lk_lock_opts_t *o) {
  if (o == NULL)
    return;
  LK__WAIT_OPTS_DEFAULTS(o);
  o->lease_ms = LK_LEASE_DEFAULT;
  o->fenced = 0;
  o->reentrant = 1;
}

int lk_lock_acquire(lk_lock_t *l, const lk_lock_opts_t *opts, lk_lock_cb cb,
                    void *arg) {
  lk_lock_opts_t defaults;
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_lock_opts_init);
  rc = lk__hold_acquire_check(&l->hold, opts->wait_ms, opts->lease_ms);
  if (rc != 0)
    return rc;
  /* Non-reentrant: this object's own second acquire never reaches the
   * server. A hold whose local deadline passed is not one: the server
   * decides (the lease ran out: LK_ELEASELOST; still there: refused). */
  if (!opts->reentrant && lk_lock_is_held(l))
    return LK_EREENTRY;
  rc = LK__OBJ_WAIT_WANTS(&l->base, opts);
  if (rc != 0)
    return rc;
  if (opts->fenced && (rc = lk__hold_token_key(&l->token_key, &l->token_key_len,
                                                LK__LOCK_TOKEN_PREFIX, l->name, l->name_len)) != 0)
    return rc;
  if ((opts->lease_ms == LK_LEASE_DEFAULT || watching(l)) && want_wd(l) != 0)
    return LK_ENOMEM;
  lk__hold_afresh(&l->base);
  begin(l, OP_ACQUIRE, cb, arg);
  l->busy_ttl = LK__LOCK_NOT_BUSY;
  lk__obj_wait_begin(&l->base, opts->wait_ms);
  l->req_fenced = opts->fenced != 0;
  l->req_nonreentrant = opts->reentrant == 0;
  /* A re-entry with an explicit lease while the watchdog keeps this owner's
   * lease keeps the watchdog's lease: a shorter one would end the lock before
   * the local deadline the watchdog promises. */
  l->req_watchdog = opts->lease_ms == LK_LEASE_DEFAULT || watching(l);
  l->req_lease_ms = l->req_watchdog ? CLIENT(l)->o.default_lease_ms : opts->lease_ms;
  if (opts->wait_ms != 0 && l->hold.count == 0) {
    int just_released = l->released_to_waiters_ns != 0 &&
                        lk__now_ns() - l->released_to_waiters_ns < LK__POLITE_WINDOW_NS;
    l->released_to_waiters_ns = 0;
    /* Waiters of this process queued on the name, or a name other
     * processes keep winning: the wait starts without a try (it would
     * lose or barge, core/object.h). Not for an owner shared with other
     * objects: one of them may hold the lock this try re-enters. */
    rc = l->owner_shared ? 1 : lk__obj_wait_first(&l->base, just_released);
    if (rc <= 0) {
      if (rc != 0)
        l->base.kind = OP_NONE;
      return rc;
    }
    if (just_released) {
      /* This owner just handed the lock to listening waiters: taking it
       * straight back would win the race nearly every time (the waiter is
       * one wake-up and one round trip behind), starving everyone else.
       * Let the woken waiter in first; a wait budget makes the pause free
       * to take. */
      rc = lk__obj_try_after(&l->base, LK__POLITE_DELAY_MS);
      if (rc != 0)
        l->base.kind = OP_NONE;
      return rc;
    }
  }
  return lk__obj_start(&l->base);
}

int lk_lock_cancel(lk_lock_t *l) { return lk_handle_cancel(LK__H(l)); }

/* --- release --- */

static int release_attempt(lk_lock_t *l, int resend) {
  int err = 0;
  /* The lean layout's server keeps no count: a first attempt passes the
   * object's ('count'), so a release of one re-entry keeps the lock
   * (scripts/lean/release.lua). */
  int counts = l->lean && !l->owner_shared && !resend;
  l->base.op = release_op(l, (resend || counts) && !l->owner_shared ? (int64_t)l->release_before : -1,
                          1, counts ? "count" : "resend", lk__obj_release_reply, &l->base, 1,
                          &err);
  return l->base.op != NULL ? 0 : err;
}

/* A release ended: nothing held means nothing to renew; otherwise renewal
 * resumes (it was paused while the last hold's release was in flight). */
static void lk__lock_release_end(lk__obj_t *o, int status) {
  lk_lock_t *l = (lk_lock_t *)o;
  if (l->hold.count == 0) {
    l->base.lost = 0;
    lk__hold_unwatch(CLIENT(l), &l->hold);
  }
  set_paused(l, 0);
  finish(l, status);
}

static int lk__lock_resend_release(lk__obj_t *o) { return release_attempt((lk_lock_t *)o, 1); }

/* The release script's answers (scripts/lock/release.lua): nil, the server
 * has no hold for this owner (the lease ran out); 0, a hold released and
 * some left; 1, the lock released and nobody listened; v >= 2, released
 * while v - 1 connections listened. */
static int lk__lock_read_release(lk__obj_t *o, const redisReply *r, int *status) {
  lk_lock_t *l = (lk_lock_t *)o;
  long long v;
  if (lk__hold_release_nil(&l->hold, r, status))
    return 1;
  if (!lk__reply_is_int(r, &v) || v < 0)
    return 0;
  if (v == 1) {
    /* Released and nobody listened: no other process contends now. */
    size_t len = 0;
    const char *ch = channel(l, &len);
    if (ch != NULL)
      lk__sub_note_others(CLIENT(l), ch, len, 0);
  }
  if (v >= 2) {
    size_t len = 0;
    const char *ch = channel(l, &len);
    l->released_to_waiters_ns = lk__now_ns();
    if (ch != NULL)
      lk__sub_note_others(CLIENT(l), ch, len, v - 1);
    v = 1;
  }
  l->base.result = v;
  return lk__hold_released(&l->hold, l->release_before, v == 1 && !l->owner_shared, status);
}

int lk_lock_release(lk_lock_t *l, lk_lock_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  return lk__hold_release_begin(&l->base, &l->hold, &l->release_before, OP_RELEASE,
                                (lk__fn_t)cb, arg);
}

/* No renewal may follow the release of the last hold. One already in
 * flight is ahead of it on the connection, so it cannot outlive it. */
static int lk__lock_send_release(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  int rc;
  if (l->hold.count == 1)
    set_paused(l, 1);
  rc = release_attempt(l, 0);
  if (rc != 0)
    set_paused(l, 0); /* nothing was sent: still held, keep renewing */
  return rc;
}

/* --- force release and queries --- */

/* A force release forgot nothing the server still had: the holds are gone. */
static void value_done(lk__obj_t *o, int kind) {
  lk_lock_t *l = (lk_lock_t *)o;
  if (kind == OP_FORCE)
    lk__hold_forced(o, &l->hold);
}

static int start_simple(lk_lock_t *l, enum lk__lock_op kind, lk_lock_cb cb,
                        void *arg) {
  const char *argv[3];
  size_t lens[3];
  lk__op_t *op = NULL;
  int err = 0, rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  begin(l, kind, cb, arg);
  switch (kind) {
  case OP_FORCE:
    /* The channel is an argument: a one-key script gets through a slot
     * migration (scripts/lock/force_release.lua). */
    argv[0] = l->name, lens[0] = l->name_len;
    argv[1] = lk__publish_cmd(CLIENT(l), &lens[1]);
    argv[2] = channel(l, &lens[2]);
    if (argv[2] != NULL)
      op = lk__script_call(CLIENT(l), LAYOUT_SCRIPT(l, force_release, "lock/force_release"), 1, 2,
                           argv, lens,
                           lk__obj_value_reply, &l->base, &err);
    return lk__obj_value_sent(&l->base, op, LK__VALUE_CHANGES, err);
  case OP_QUERY_HOLDS:
    return lk__hold_query(&l->base, LK__HOLD_FIELD, l->name, l->name_len, l->owner,
                          l->owner_len);
  default:
    return lk__hold_query(&l->base, kind == OP_QUERY_TTL ? LK__HOLD_TTL : LK__HOLD_EXISTS,
                          l->name, l->name_len, NULL, 0);
  }
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
  if (l != NULL && l->lean && lk__obj_check(&l->base) == 0)
    return LK_EINVAL; /* the lean layout's server keeps no count */
  return start_simple(l, OP_QUERY_HOLDS, cb, arg);
}

/* --- guarded writes (core/guard.c, docs/guarded.md) --- */

int lk_lock_guarded(lk_lock_t *l, const lk_guarded_op_t *op, lk_lock_cb cb, void *arg) {
  lk__guard_t g;
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (l->lean)
    return LK_EINVAL; /* a RedLock's member: no Redisson hash to check */
  g.lock = l->name, g.lock_len = l->name_len;
  g.owner = l->owner, g.owner_len = l->owner_len;
  /* The fenced check compares with the counter only while the holding
   * took a token: an unfenced holding's old token says nothing of it. */
  g.token = l->hold_fenced && l->hold.count > 0 ? l->token : 0;
  /* The token key is an argument even when unchecked: the script's keys
   * stay in one shape. In the client's scratch: copied when formatted. */
  g.token_key = l->token_key != NULL ? l->token_key
                                     : lk__scratch_prefix_name(CLIENT(l), LK__LOCK_TOKEN_PREFIX,
                                                               l->name, l->name_len,
                                                               &g.token_key_len);
  if (l->token_key != NULL)
    g.token_key_len = l->token_key_len;
  if (g.token_key == NULL)
    return LK_ENOMEM;
  rc = lk__guard_check(&l->base, &g, op);
  if (rc != 0)
    return rc;
  begin(l, OP_GUARDED, cb, arg);
  rc = lk__guard_send(&l->base, &g, op);
  if (rc != 0)
    l->base.kind = OP_NONE;
  return rc;
}

const lk_guarded_reply_t *lk_lock_guarded_reply(const lk_lock_t *l) {
  return l != NULL ? lk__guard_current(&l->base) : NULL;
}

/* --- leases --- */

static void on_wd_event(lk__wd_entry_t *e, int event) {
  lk_lock_t *l = lk__container_of(e, lk__lock_wd_t, entry)->lock;
  (void)event; /* LK__WD_LOST, the only one */
  lk__lock_lose(&l->base);
}

/* The holds are gone: stop renewing, give back what the server may still
 * have for this owner, tell the holder. */
static void lk__lock_lose(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  /* Stop watching entirely: a renewal still in flight was sent before the
   * give-back below, which therefore undoes a late success of it. */
  lk__hold_unwatch(CLIENT(l), &l->hold);
  o->lost = 1;
  CLIENT(l)->stats.leases_lost++;
  /* A MultiLock's member or a RedLock's node: the group judges the loss and
   * says what it means (a RedLock may keep its quorum). */
  lk__log(CLIENT(l), l->lost_observer != NULL ? LK_LOG_INFO : lk__lost_level(o),
          "lease lost on a held lock");
  /* Whatever the server still has for this owner goes now: the holder has
   * been told it lost the lock, so nobody must keep it. An owner of our own
   * gives back everything, a re-entry still in flight included. */
  give_back(l, -1, l->owner_shared ? l->hold.count : UINT32_MAX);
  lk__obj_tell_lost(&l->base);
  if (l->lost_observer != NULL && !o->closing)
    l->lost_observer(l, l->lost_observer_data);
}

/* --- lifecycle --- */

/* The watchdog renews by the lock's name and owner: told again when the
 * owner changes. */
static void wd_describe(lk_lock_t *l) {
  if (l->hold.wd == NULL)
    return;
  l->hold.wd->keys[0] = l->name;
  l->hold.wd->key_lens[0] = l->name_len;
  l->hold.wd->owner = l->owner;
  l->hold.wd->owner_len = l->owner_len;
}

/* Made by the first acquire that asks for a renewed lease, kept until
 * close: steady use allocates nothing. */
static int want_wd(lk_lock_t *l) {
  lk__lock_wd_t *w;
  if (l->hold.wd != NULL)
    return 0;
  w = lk__calloc(1, sizeof(*w));
  if (w == NULL)
    return LK_ENOMEM;
  w->lock = l;
  w->entry.cls = l->lean ? lk__lock_lean_layout.renew : &lk__wd_lock_class;
  w->entry.on_event = on_wd_event;
  lk__queue_init(&w->entry.node);
  l->hold.wd = &w->entry;
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

/* Close gives back every hold (and stops renewing first). An owner of our
 * own gives back everything it has on the server, so a late grant to an
 * abandoned acquire queued behind is gone too (its conditional give-back then
 * finds nothing); a shared owner gives back exactly its count, and its late
 * grants are given back one by one. */
static int on_close_release_start(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  int err = 0;
  lk__hold_unwatch(CLIENT(l), &l->hold);
  if (l->hold.count == 0)
    return 0;
  o->op = release_op(l, -1, l->owner_shared ? l->hold.count : UINT32_MAX, "exact",
                     lk__hold_close_reply, o, 1, &err);
  return o->op != NULL;
}

/* The typed callbacks and the handle's owner and token (core/hold.h); the
 * core answers for the name and held (base.sides). */
LK__LOCK_LIKE_DEFS(lk_lock_t, lk_lock_cb, lk_lock_close_cb)

static void free_lock(lk__obj_t *o) {
  lk_lock_t *l = (lk_lock_t *)o;
  lk__free(l->token_key);
  if (l->owner_heap)
    lk__free(l->owner);
  if (l->hold.wd != NULL)
    lk__free(lk__container_of(l->hold.wd, lk__lock_wd_t, entry));
  lk__free(l);
}

static const char *wait_channel(lk__obj_t *o, size_t *len) {
  return channel((lk_lock_t *)o, len);
}

/* A release frees the lock for one holder: the message wakes one local
 * waiter, the one waiting longest (docs/objects.md, "Waiting"). */
static int wake_message(lk__obj_t *o, const char *msg, size_t len) {
  (void)o, (void)msg, (void)len;
  return LK__WAKE_ONE;
}

static const lk__obj_ops_t lk__lock_ops = {
    LK__LOCK_LIKE_OPS(lk__lock),
    .close_release = on_close_release_start,
    .free = free_lock,
    .channel = wait_channel,
    .message = wake_message,
    .acquire_kind = OP_ACQUIRE,
    .release_kind = OP_RELEASE,
    .value_done = value_done,
    .handle_kind = LK_KIND_LOCK,
};

/* The lock's name, channel and fencing-token key share one slot
 * (core/names.c); built here as acquire and release build them. */
static int check_name(lk_client_t *c, const char *what, const char *name, size_t len) {
  lk__derived_t d[3] = {{name, len, 0}, {NULL, 0, 0}, {NULL, 0, 0}};
  int rc = LK_ENOMEM;
  d[1].text = lk__prefix_name(LK__LOCK_CHANNEL_PREFIX, name, len, &d[1].len);
  if (d[1].text != NULL)
    rc = lk__names_one_slot_later(c, what, name, len, d, 3, LK__LOCK_TOKEN_PREFIX);
  lk__free((char *)d[1].text);
  return rc;
}

int lk_lock_new(lk_client_t *c, const char *name, lk_lock_t **out) {
  lk_lock_t *l;
  char owner[LK__OWNER_MAX];
  size_t len, owner_len;
  int rc = lk__obj_new_check(c, out, name, &len);
  if (rc == 0)
    rc = check_name(c, "lock", name, len);
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
  l->hold.lease_ms = c->o.default_lease_ms;
  l->lean = c->o.lock_layout == LK_LOCK_LAYOUT_LEAN;
  lk__obj_init(&l->base, c, &lk__lock_ops, l->name);
  l->base.sides = &l->hold;
  l->base.nsides = 1;
  *out = l;
  return 0;
}

/* A member of a MultiLock or RedLock is refused by the core (LK_EBUSY). */
LK__KIND_CLOSE(lk_lock)

/* --- accessors; the generic ones are aliases of lk_handle_ (handle.h) --- */

uint32_t lk_lock_hold_count(const lk_lock_t *l) { return l ? l->hold.count : 0; }
int64_t lk_lock_result(const lk_lock_t *l) { return lk__handle_result(LK__CH(l)); }
LK__KIND_ALIASES(lk_lock, lk_lock_name)
const char *lk_lock_owner(const lk_lock_t *l) { return lk_handle_owner(LK__CH(l)); }

int lk_lock_set_owner(lk_lock_t *l, const char *client_id, uint64_t thread_id) {
  int rc = lk__hold_set_owner_check(l ? &l->base : NULL, client_id);
  if (rc != 0)
    return rc;
  if (l->lean && l->group == NULL)
    return LK_EINVAL; /* its re-entries are counted in this object alone */
  if (l->base.kind != OP_NONE || l->hold.count > 0)
    return LK_EBUSY;
  rc = set_owner(l, client_id ? client_id : CLIENT(l)->id, thread_id);
  if (rc == 0)
    l->owner_shared = 1;
  return rc;
}

int lk_lock_set_layout(lk_lock_t *l, int layout) {
  int rc = lk__obj_check(l ? &l->base : NULL);
  if (rc != 0)
    return rc;
  if ((layout != LK_LOCK_LAYOUT_REDISSON && layout != LK_LOCK_LAYOUT_LEAN) ||
      (layout == LK_LOCK_LAYOUT_LEAN && l->owner_shared))
    return LK_EINVAL;
  if (l->base.kind != OP_NONE || l->hold.count > 0 || l->group != NULL)
    return LK_EBUSY;
  lk__lock_set_lean(l, layout == LK_LOCK_LAYOUT_LEAN);
  return 0;
}

int lk_lock_layout(const lk_lock_t *l) {
  return l == NULL ? -1 : l->lean ? LK_LOCK_LAYOUT_LEAN : LK_LOCK_LAYOUT_REDISSON;
}

LK__KIND_SET_LOST_CB(lk_lock)

int lk_lock_is_held(const lk_lock_t *l) { return lk_handle_is_held(LK__CH(l)) == 1; }

int64_t lk_lock_token(const lk_lock_t *l) { return l ? lk_handle_token(LK__CH(l)) : 0; }

int lk_lock_sync_acked(const lk_lock_t *l) { return lk__obj_sync_acked(l ? &l->base : NULL); }

/* --- for the objects built from locks (lock_internal.h) --- */

int lk__lock_bind(lk_lock_t *l, void *group) {
  if (l->group != NULL && l->group != group)
    return LK_EBUSY;
  l->group = group;
  /* Both groups embed the object body first (lk_client_close_all closes the
   * group before its members). */
  lk__obj_set_parent(&l->base, (lk__obj_t *)group);
  return 0;
}

void lk__lock_unbind(lk_lock_t *l) {
  l->group = NULL;
  lk__obj_set_parent(&l->base, NULL);
  l->lost_observer = NULL;
  l->lost_observer_data = NULL;
}

void lk__lock_set_lost_observer(lk_lock_t *l, lk__lock_lost_fn fn, void *data) {
  l->lost_observer = fn;
  l->lost_observer_data = data;
}

int64_t lk__lock_busy_ttl(const lk_lock_t *l) { return l->busy_ttl; }

int lk__lock_retryable(const lk_lock_t *l, int status) {
  return lk__obj_retryable(&l->base, status);
}

uint64_t lk__lock_deadline_ns(const lk_lock_t *l) {
  return l->base.lost ? 0 : lk__hold_deadline(CLIENT(l), &l->hold);
}

void lk__lock_set_lean(lk_lock_t *l, int lean) {
  l->lean = lean ? 1 : 0;
  if (l->hold.wd != NULL)
    l->hold.wd->cls = l->lean ? lk__lock_lean_layout.renew : &lk__wd_lock_class;
}

void lk__lock_drop_holds(lk_lock_t *l, uint32_t n) {
  if (n > l->hold.count)
    n = l->hold.count;
  if (n == 0)
    return;
  if (!l->base.lost)
    give_back(l, -1, n);
  l->hold.count -= n;
  if (l->hold.count == 0) {
    l->base.lost = 0;
    lk__hold_unwatch(CLIENT(l), &l->hold);
  }
}
