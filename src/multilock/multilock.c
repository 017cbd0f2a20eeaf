/* MultiLock: lock objects taken all together or not at all
 * (docs/multilock.md). It keeps no Redis state of its own: it drives its
 * members through the lock's public API and counts the holds it has on each.
 *
 * Acquiring, like std::lock: one round tries every member at once (wait 0).
 * If one is taken by someone else, every hold this call took is released
 * (and the releases confirmed) before anything else happens; the next round
 * waits for that member alone, with the lock's own wait engine and the rest
 * of the budget, holding nothing else, and once it has it tries the others
 * at once. Nobody ever waits while holding, so groups asking for the same
 * locks in opposite orders cannot deadlock; repeated collisions back off by
 * a small random delay so they cannot livelock either.
 *
 * Every phase issues member operations and moves on when the last of them
 * has called back (outstanding == 0), which also lets a cancel or a close
 * wait for stragglers before the members are let go. */
#include <string.h>

#include "core/loglevel.h"
#include "core/object.h"
#include "core/watchdog.h"
#include "lock/lock_internal.h"
#include "multilock/group.h"

enum { OP_NONE = 0, OP_ACQUIRE, OP_RELEASE };

enum lk__ml_phase {
  PH_IDLE = 0,  /* nothing of an operation in flight (maybe stragglers) */
  PH_SETTLE,    /* an operation waits for stragglers of a canceled one */
  PH_ALL,       /* trying every member at once */
  PH_PIVOT,     /* waiting for the member that was taken, holding nothing */
  PH_REST,      /* holding the pivot, trying the others at once */
  PH_ROLLBACK,  /* releasing what a failed round took */
  PH_BACKOFF,   /* a short random pause after repeated collisions */
  PH_RELEASE    /* dropping one hold on every member */
};

enum { M_IDLE = 0, M_ACQUIRING, M_WAITING, M_RELEASING };

typedef struct lk__member_s {
  lk_multilock_t *ml;
  lk_lock_t *lock;
  uint32_t mine; /* holds the group has on this lock */
  int busy;      /* M_ACQUIRING (try once), M_WAITING (an acquire that
                    waits), M_RELEASING: our operation is pending */
  int status;    /* outcome in the group's last operation */
} lk__member_t;

struct lk_multilock_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  lk__member_t *m;
  size_t n;
  uint32_t holds;
  int lost;

  /* the pending operation */
  int phase;
  int outstanding; /* member callbacks still due */
  int cut;         /* the operation was cut short: give back what comes */
  int in_api;      /* inside an lk_ call: completions must be deferred */
  int close_waiting;
  int64_t lease_ms;
  int fenced;
  size_t pivot;
  int fail_status; /* why the last round failed */
  int fail_retry;  /* ... and whether it may clear within the budget */
  int failed_rounds;
  uint64_t rng;
};

/* The member's last outcome may clear if tried again within the budget:
 * the core's rule (lk__obj_retryable: a cluster's TRYAGAIN or CLUSTERDOWN
 * included, so a group waits through them as a lock does), or an unknown
 * outcome the lock has already given back. */
static int member_transient(const lk__member_t *m) {
  return lk__lock_retryable(m->lock, m->status) || m->status == LK_EUNKNOWN;
}

static void finish(lk_multilock_t *ml, int status) {
  ml->phase = PH_IDLE;
  lk__group_finish(&ml->base, ml->holds, ml->lost, ml->in_api, status);
}

/* --- holds on members --- */

/* Gives back n of the group's holds on m without waiting (the member must
 * have nothing of ours pending). */
static void give_back(lk__member_t *m, uint32_t n) { lk__group_give_back(m->lock, &m->mine, n); }

/* The group's holds on some member are gone: it holds nothing any more. The
 * other members' holds are given back (those with an operation of ours in
 * flight when it settles), then the holder is told. */
static void group_lost(lk_multilock_t *ml) {
  size_t i;
  if (ml->holds == 0 || ml->lost)
    return;
  ml->lost = 1;
  /* The member said nothing (its loss is the group's to tell). */
  lk__log(ml->base.client, lk__lost_level(&ml->base), "lease lost on a MultiLock member");
  for (i = 0; i < ml->n; i++)
    if (!ml->m[i].busy)
      give_back(&ml->m[i], ml->m[i].mine);
  lk__obj_tell_lost(&ml->base);
}

static void on_member_lost(lk_lock_t *l, void *data) {
  lk__member_t *m = data;
  (void)l;
  m->mine = 0; /* the lock gave them back itself */
  group_lost(m->ml);
}

/* --- member operations --- */

static void step(lk_multilock_t *ml);
static int member_release(lk_multilock_t *ml, lk__member_t *m);

static void on_member_acquired(lk_lock_t *l, int status, void *arg) {
  lk__member_t *m = arg;
  lk_multilock_t *ml = m->ml;
  (void)l;
  m->busy = M_IDLE;
  ml->outstanding--;
  if (status == 0)
    m->mine++;
  if (ml->lost) {
    if (status == 0)
      give_back(m, m->mine);
  } else if (ml->cut) {
    /* Nobody waits for this hold any more: release it, and let a close
     * wait for the answer. */
    if (status == 0)
      member_release(ml, m);
  } else {
    m->status = status;
  }
  step(ml);
}

static int member_acquire(lk_multilock_t *ml, lk__member_t *m, int64_t wait_ms) {
  lk_lock_opts_t o;
  int rc;
  lk_lock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = ml->lease_ms;
  o.fenced = ml->fenced;
  rc = lk_lock_acquire(m->lock, &o, on_member_acquired, m);
  m->status = rc;
  if (rc == 0) {
    m->busy = wait_ms != 0 ? M_WAITING : M_ACQUIRING;
    ml->outstanding++;
  }
  return rc;
}

/* One hold fewer on m, whatever the release said: a release that failed is
 * given back without waiting, so the group's count stays right. */
static void on_member_released(lk_lock_t *l, int status, void *arg) {
  lk__member_t *m = arg;
  lk_multilock_t *ml = m->ml;
  m->busy = M_IDLE;
  ml->outstanding--;
  if (!ml->cut)
    m->status = status;
  lk__group_released(l, &m->mine, status);
  /* A rollback that found the group's earlier holds gone (a re-entry's
   * member whose lease ran out): the group is lost. A release settles that
   * itself (release_done), a close does not care. */
  if (m->mine < ml->holds && ml->phase != PH_RELEASE && !ml->base.closing)
    group_lost(ml);
  if (ml->lost)
    give_back(m, m->mine);
  step(ml);
}

static int member_release(lk_multilock_t *ml, lk__member_t *m) {
  int rc = lk_lock_release(m->lock, on_member_released, m);
  if (rc == 0) {
    m->busy = M_RELEASING;
    ml->outstanding++;
    return 0;
  }
  m->status = rc;
  if (rc == LK_ENOTHELD || rc == LK_ELEASELOST)
    m->mine = 0;
  else
    give_back(m, 1);
  return rc;
}

/* --- acquiring --- */

static void start_all(lk_multilock_t *ml) {
  size_t i;
  ml->phase = PH_ALL;
  for (i = 0; i < ml->n; i++)
    member_acquire(ml, &ml->m[i], 0);
  step(ml);
}

static void start_rest(lk_multilock_t *ml) {
  size_t i;
  ml->phase = PH_REST;
  for (i = 0; i < ml->n; i++)
    if (i != ml->pivot)
      member_acquire(ml, &ml->m[i], 0);
  step(ml);
}

static int taken(const lk_multilock_t *ml, const lk__member_t *m) {
  return m->mine > ml->holds;
}

static void start_pivot(lk_multilock_t *ml) {
  int64_t left = lk__obj_remaining_ms(&ml->base);
  int rc;
  if (ml->base.wait_ms >= 0 && left == 0) {
    finish(ml, LK_ETIMEDOUT);
    return;
  }
  ml->phase = PH_PIVOT;
  rc = member_acquire(ml, &ml->m[ml->pivot], ml->base.wait_ms < 0 ? -1 : left);
  if (rc != 0)
    finish(ml, rc);
}

static void start_rollback(lk_multilock_t *ml) {
  size_t i;
  ml->phase = PH_ROLLBACK;
  for (i = 0; i < ml->n; i++)
    if (taken(ml, &ml->m[i]))
      member_release(ml, &ml->m[i]);
  step(ml);
}

/* Every member of a round answered. */
static void round_done(lk_multilock_t *ml) {
  size_t i, busy = SIZE_MAX, other = SIZE_MAX;
  for (i = 0; i < ml->n; i++) {
    const lk__member_t *m = &ml->m[i];
    if (taken(ml, m))
      continue;
    if (busy == SIZE_MAX && (m->status == LK_ETIMEDOUT || m->status == 0))
      busy = i; /* taken by someone else (or lost meanwhile) */
    else if (other == SIZE_MAX && m->status != LK_ETIMEDOUT && m->status != 0)
      other = i;
  }
  if (busy == SIZE_MAX && other == SIZE_MAX) {
    ml->holds++;
    ml->failed_rounds = 0;
    finish(ml, 0);
    return;
  }
  /* A hard error decides the outcome; otherwise wait for the busy one. */
  if (other != SIZE_MAX && !member_transient(&ml->m[other])) {
    ml->pivot = other;
    ml->fail_status = ml->m[other].status;
    ml->fail_retry = 0;
  } else if (busy != SIZE_MAX) {
    ml->pivot = busy;
    ml->fail_status = LK_ETIMEDOUT;
    ml->fail_retry = 1;
  } else {
    /* A transient failure: the member is waited for with the rest of the
     * budget, as a taken one is (its own wait rides it out). */
    ml->pivot = other;
    ml->fail_status = ml->m[other].status;
    ml->fail_retry = 1;
  }
  start_rollback(ml);
}

static void on_backoff(uv_timer_t *t) {
  lk_multilock_t *ml = t->data;
  size_t i;
  for (i = 0; i < ml->n; i++)
    lk__wd_check(lk_lock_client(ml->m[i].lock));
  if (ml->phase == PH_BACKOFF)
    start_pivot(ml);
}

/* What the failed round took is given back: wait for the member that was
 * taken, or report. */
static void rollback_done(lk_multilock_t *ml) {
  int64_t left = lk__obj_remaining_ms(&ml->base), delay = 0;
  int retry = ml->fail_retry;
  if (!retry || ml->base.wait_ms == 0 || left == 0) {
    finish(ml, ml->fail_status);
    return;
  }
  ml->failed_rounds++;
  if (ml->failed_rounds >= 2) {
    int shift = ml->failed_rounds - 2 < 5 ? ml->failed_rounds - 2 : 5;
    int64_t cap = (int64_t)1 << shift; /* 1, 2, 4 ... 32 ms */
    delay = lk__group_jitter_ms(&ml->rng, cap);
    if (ml->base.wait_ms > 0 && delay > left)
      delay = left;
  }
  if (delay > 0) {
    ml->phase = PH_BACKOFF;
    uv_timer_start(&ml->base.w->timer, on_backoff, (uint64_t)delay, 0);
    return;
  }
  start_pivot(ml);
}

static void pivot_done(lk_multilock_t *ml) {
  lk__member_t *p = &ml->m[ml->pivot];
  if (taken(ml, p)) {
    if (ml->n == 1) {
      ml->holds++;
      finish(ml, 0);
      return;
    }
    start_rest(ml);
    return;
  }
  ml->fail_status = p->status == 0 ? LK_ETIMEDOUT : p->status;
  ml->fail_retry = ml->fail_status == LK_ETIMEDOUT || member_transient(p);
  if (ml->fail_status == LK_ETIMEDOUT) {
    finish(ml, LK_ETIMEDOUT); /* it waited for the whole budget */
    return;
  }
  rollback_done(ml); /* nothing to give back: retry or report */
}

/* --- releasing --- */

static void start_release(lk_multilock_t *ml) {
  size_t i;
  ml->phase = PH_RELEASE;
  for (i = 0; i < ml->n; i++)
    member_release(ml, &ml->m[i]);
  step(ml);
}

static void release_done(lk_multilock_t *ml) {
  int status = 0;
  size_t i;
  for (i = 0; i < ml->n; i++)
    if (status == 0 && ml->m[i].status != 0)
      status = ml->m[i].status;
  if (ml->holds > 0)
    ml->holds--;
  for (i = 0; i < ml->n && ml->holds > 0; i++)
    if (ml->m[i].mine < ml->holds)
      break;
  if (i < ml->n) {
    /* A member had lost the group's holds: what is left on the others is
     * no use to anyone. */
    for (i = 0; i < ml->n; i++)
      give_back(&ml->m[i], ml->m[i].mine);
    ml->holds = 0;
  }
  finish(ml, status);
}

/* --- the phase machine --- */

static void start_op(lk_multilock_t *ml) {
  ml->cut = 0;
  if (ml->base.kind == OP_ACQUIRE)
    start_all(ml);
  else
    start_release(ml);
}

static void close_finish(lk_multilock_t *ml);

/* Runs after every member callback; moves on once none is due. */
static void step(lk_multilock_t *ml) {
  if (ml->outstanding > 0)
    return;
  if (ml->lost && (ml->base.kind == OP_ACQUIRE || ml->base.kind == OP_RELEASE) &&
      ml->phase != PH_SETTLE && ml->phase != PH_IDLE) {
    /* The group's earlier holds went while this operation ran. */
    size_t i;
    for (i = 0; i < ml->n; i++)
      give_back(&ml->m[i], ml->m[i].mine);
    ml->lost = 0;
    ml->holds = 0;
    finish(ml, LK_ELEASELOST);
    return;
  }
  switch (ml->phase) {
  case PH_SETTLE:
    start_op(ml);
    return;
  case PH_ALL:
  case PH_REST:
    round_done(ml);
    return;
  case PH_PIVOT:
    pivot_done(ml);
    return;
  case PH_ROLLBACK:
    rollback_done(ml);
    return;
  case PH_RELEASE:
    release_done(ml);
    return;
  default:
    if (ml->close_waiting)
      close_finish(ml);
    return;
  }
}

/* --- public API --- */

/* Try once, the default lease, not fenced. */
void lk_multilock_opts_init(lk_multilock_opts_t *o) {
  if (o != NULL)
    *o = (lk_multilock_opts_t){.lease_ms = LK_LEASE_DEFAULT};
}

static void begin(lk_multilock_t *ml, int kind, lk_multilock_cb cb, void *arg) {
  size_t i;
  lk__obj_begin(&ml->base, kind, (lk__fn_t)cb, arg);
  ml->fail_status = 0;
  ml->fail_retry = 0;
  ml->failed_rounds = 0;
  for (i = 0; i < ml->n; i++)
    ml->m[i].status = 0;
}

/* Starts now, or once the members have settled from a canceled operation. */
static void begin_or_settle(lk_multilock_t *ml) {
  if (ml->outstanding > 0) {
    ml->phase = PH_SETTLE;
    return;
  }
  ml->in_api = 1;
  start_op(ml);
  ml->in_api = 0;
}

int lk_multilock_acquire(lk_multilock_t *ml, const lk_multilock_opts_t *opts,
                         lk_multilock_cb cb, void *arg) {
  lk_multilock_opts_t defaults;
  int rc = lk__obj_check_idle(ml ? &ml->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_multilock_opts_init);
  if (!lk__valid_wait(opts->wait_ms) || !lk__valid_lease(opts->lease_ms))
    return LK_EINVAL;
  if (ml->holds == UINT32_MAX)
    return LK_EINVAL;
  lk__group_afresh(&ml->holds, &ml->lost);
  /* Its timer (backoff, leases) is the wait part's: made by the first
   * acquire, kept until close. */
  if (lk__obj_want_timer(&ml->base) != 0)
    return LK_ENOMEM;
  begin(ml, OP_ACQUIRE, cb, arg);
  lk__obj_wait_begin(&ml->base, opts->wait_ms);
  ml->lease_ms = opts->lease_ms;
  ml->fenced = opts->fenced != 0;
  begin_or_settle(ml);
  return 0;
}

int lk_multilock_release(lk_multilock_t *ml, lk_multilock_cb cb, void *arg) {
  int rc = lk__obj_check_idle(ml ? &ml->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  rc = lk__group_release_check(&ml->holds, &ml->lost);
  if (rc != 0)
    return rc;
  begin(ml, OP_RELEASE, cb, arg);
  begin_or_settle(ml);
  return 0;
}

int lk_multilock_cancel(lk_multilock_t *ml) { return lk_handle_cancel(LK__H(ml)); }

/* The pending operation is cut short (cancel, close): pending member
 * acquires are canceled, holds this operation took are given back, and
 * whatever arrives later is given back as it comes. */
static void on_abandon(lk__obj_t *o) {
  lk_multilock_t *ml = (lk_multilock_t *)o;
  size_t i;
  ml->cut = 1;
  ml->phase = PH_IDLE;
  for (i = 0; i < ml->n; i++) {
    lk__member_t *m = &ml->m[i];
    /* A try-once answers within a round trip and is released then, so a
     * close can wait for it; only a waiting acquire is canceled (a grant
     * racing the cancel is then given back by the lock itself). */
    if (m->busy == M_WAITING)
      lk_lock_cancel(m->lock); /* LK_EINVAL: its outcome is on its way */
    else if (m->busy == M_IDLE && m->mine > ml->holds)
      member_release(ml, m);
  }
}

/* Close gives back every hold of the group, one release per hold and
 * member, the members in parallel, and waits for the answers (each bounded
 * by its client's reply timeout), as a lock's close does. Then the members
 * are let go. */
static void close_finish(lk_multilock_t *ml) {
  size_t i;
  for (i = 0; i < ml->n; i++) {
    lk__member_t *m = &ml->m[i];
    while (m->busy == M_IDLE && m->mine > 0 && member_release(ml, m) != 0) {
    }
  }
  if (ml->outstanding > 0)
    return; /* step() comes back here */
  ml->close_waiting = 0;
  for (i = 0; i < ml->n; i++)
    lk__lock_unbind(ml->m[i].lock);
  ml->holds = 0;
  lk__obj_close_done(&ml->base);
}

static int on_close_release(lk__obj_t *o) {
  lk_multilock_t *ml = (lk_multilock_t *)o;
  ml->close_waiting = 1;
  ml->phase = PH_IDLE;
  if (ml->outstanding == 0)
    close_finish(ml);
  return 1;
}

LK__OBJ_CALLS(lk_multilock_t, lk_multilock_cb, lk_multilock_close_cb)

/* Memory only: in a forked child the members are not touched. */
static void free_ml(lk__obj_t *o) {
  lk_multilock_t *ml = (lk_multilock_t *)o;
  lk__free(ml->m);
  lk__free(ml);
}

/* The handle's answers (core/handle.c): no name, no token of its own;
 * held is every member held for the group. */
static int handle_is_held(const lk__obj_t *o) {
  const lk_multilock_t *ml = (const lk_multilock_t *)o;
  size_t i;
  if (ml->holds == 0 || ml->lost)
    return 0;
  for (i = 0; i < ml->n; i++)
    if (!lk_lock_is_held(ml->m[i].lock))
      return 0;
  return 1;
}

/* Health (docs/objects.md, "Health"): the MultiLock is at risk while any
 * member it holds is (each member's lock tells its own), with the earliest
 * such member's time left; safe again when a confirmed renewal leaves none
 * at risk. One side: risky_sides is 0 or 1. */
static void member_health(lk__obj_t *g, lk__obj_t *member, int state) {
  lk_multilock_t *ml = (lk_multilock_t *)g;
  uint64_t dl = 0;
  size_t i;
  int risky = 0;
  (void)member;
  /* A release under way lets go of members one by one: no risk in that. */
  if (ml->holds == 0 || ml->lost || g->kind == OP_RELEASE)
    return;
  for (i = 0; i < ml->n; i++) {
    const lk__obj_t *mo = (const lk__obj_t *)(const void *)ml->m[i].lock;
    uint64_t d = lk__lock_deadline_ns(ml->m[i].lock);
    if (ml->m[i].mine == 0 || !mo->at_risk)
      continue;
    risky = 1;
    if (dl == 0 || d < dl)
      dl = d;
  }
  if (risky && g->risky_sides == 0)
    lk__obj_side_at_risk(g, dl);
  else if (!risky && g->risky_sides > 0)
    lk__obj_side_ok(g, state == LK_HEALTH_SAFE, dl);
}

static const lk__obj_ops_t lk__multilock_ops = {
    LK__GROUP_OPS,
    .abandon = on_abandon,
    .free = free_ml,
    .handle_kind = LK_KIND_MULTILOCK,
    .member_health = member_health,
};

static int check_members(lk_lock_t *const *locks, size_t n) {
  size_t i, j;
  int rc;
  for (i = 0; i < n; i++) {
    if (locks[i] == NULL)
      return LK_EINVAL;
    rc = lk__check_client_new(lk_lock_client(locks[i]));
    if (rc != 0)
      return rc;
    if (lk_lock_client(locks[i])->loop != lk_lock_client(locks[0])->loop)
      return LK_EINVAL;
  }
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (locks[i] == locks[j] ||
          (strcmp(lk_lock_name(locks[i]), lk_lock_name(locks[j])) == 0 &&
           lk__group_same_server(lk_lock_client(locks[i]), lk_lock_client(locks[j]), 1)))
        return LK_EINVAL; /* it would wait for itself */
  return 0;
}

int lk_multilock_new(lk_lock_t *const *locks, size_t n, lk_multilock_t **out) {
  lk_multilock_t *ml;
  size_t i;
  int rc;
  if (locks == NULL || out == NULL || n == 0 || n > LK_MULTILOCK_MAX_MEMBERS)
    return LK_EINVAL;
  rc = check_members(locks, n);
  if (rc != 0)
    return rc;
  ml = lk__calloc(1, sizeof(*ml));
  if (ml != NULL)
    ml->m = lk__calloc(n, sizeof(*ml->m));
  if (ml == NULL || ml->m == NULL) {
    lk__free(ml);
    return LK_ENOMEM;
  }
  for (i = 0; i < n; i++) {
    rc = lk__lock_bind(locks[i], ml);
    if (rc != 0) {
      while (i-- > 0)
        lk__lock_unbind(locks[i]);
      lk__free(ml->m);
      lk__free(ml);
      return rc;
    }
  }
  ml->n = n;
  for (i = 0; i < n; i++) {
    ml->m[i].ml = ml;
    ml->m[i].lock = locks[i];
    lk__lock_set_lost_observer(locks[i], on_member_lost, &ml->m[i]);
  }
  ml->rng = lk__group_seed(ml);
  lk__obj_init(&ml->base, lk_lock_client(locks[0]), &lk__multilock_ops, NULL);
  ml->base.composite = 1;
  *out = ml;
  return 0;
}

LK__KIND_CLOSE(lk_multilock)

LK__KIND_SET_LOST_CB(lk_multilock)

int lk_multilock_is_held(const lk_multilock_t *ml) { return lk_handle_is_held(LK__CH(ml)) == 1; }

uint32_t lk_multilock_hold_count(const lk_multilock_t *ml) { return ml ? ml->holds : 0; }
size_t lk_multilock_size(const lk_multilock_t *ml) { return ml ? ml->n : 0; }
lk_lock_t *lk_multilock_member(const lk_multilock_t *ml, size_t i) {
  return ml != NULL && i < ml->n ? ml->m[i].lock : NULL;
}
int lk_multilock_member_status(const lk_multilock_t *ml, size_t i) {
  return ml != NULL && i < ml->n ? ml->m[i].status : LK_EINVAL;
}
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_DATA(lk_multilock)
