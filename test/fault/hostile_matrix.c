/* The hostile-server matrix: every verb that changes state, of every
 * primitive, run through the fault proxy with each fault of the catalogue
 * (test/harness/hostile.h) on its reply. `hostile_matrix <verb> <fault>`
 * runs one cell; `hostile_matrix --list` prints every pair (ctest runs each
 * as its own entry, test/lists/hostile_tests.cmake).
 *
 * The contract checked (docs/objects.md, "Outcomes"; docs/errors.md; each
 * primitive's page): a reply the client cannot read as the verb's own
 * (wrong type, garbled, truncated, an extra reply before it, a lost reply)
 * leaves the outcome unknown. It is settled like a lost reply: resent where
 * that is safe, or given back, and reported as LK_EUNKNOWN when it cannot be
 * settled (never as LK_EPROTOCOL: every verb here may change state). The
 * acquires run try-once (the give-back) and with a wait budget (the
 * resend, counted once). An error reply is the server's word that the
 * command did not run: the client may believe it, so what the proxy's lie
 * left on the server is undone by the cell before the final checks (named
 * in each cell). Every cell checks:
 *   (a) no permit created or lost: after every object is closed, the
 *       semaphore's count is the total it should be;
 *   (b) no hold left on the server: a failed acquire's possible grant is
 *       given back promptly, and after close only keys that are state by
 *       design remain (hc_allow_t lists them per cell);
 *   (c) no success from a reply that was not the verb's own: a status of 0
 *       is checked against the server (for an extra reply, the cell sets the
 *       server up so that the real answer differs from the extra one);
 *   (d) the object is usable afterwards (a healthy acquire and release) and
 *       closes cleanly (close_cb runs, uv_loop_close() == 0);
 *   (e) exactly one callback per accepted call (sx_cb fails on a second,
 *       however late, and hc_close_clients counts after every close). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostile_cell.h"

/* ---- reentrant lock and fair lock ------------------------------------------------ */

/* The two hold alike (a count per owner in the lock's hash, given back one
 * hold a release): one acquire cell, one release cell and one reuse step
 * serve both, through the kind's calls. */
typedef struct {
  const char *acquire_script, *release_script;
  const char *acquire_wrong, *acquire_fake; /* hc_arm's bytes for the acquire */
  void *(*open)(lk_client_t *cl);           /* an object named HC_NAME */
  uint32_t (*hold_count)(void *o);
  const char *(*owner)(void *o);
  /* Starts an acquire (wait_ms, lease HC_LEASE; fenced: the lock only)
   * into s; the caller runs the loop. */
  void (*start_acquire)(void *o, int64_t wait_ms, int fenced, sx_t *s);
  int (*release)(void *o, sx_t *s); /* starts a release into s */
  void (*close)(fx_t *fx, void *o);
} reent_kind_t;

static void *lock_open(lk_client_t *cl) { return fu_lock(cl, HC_NAME); }
static uint32_t lock_holds(void *o) { return lk_lock_hold_count(o); }
static const char *lock_owner_of(void *o) { return lk_lock_owner(o); }
static void lock_start(void *o, int64_t wait_ms, int fenced, sx_t *s) {
  fu_start_acquire(o, wait_ms, HC_LEASE, fenced, s);
}
static int lock_release_into(void *o, sx_t *s) { return lk_lock_release(o, sx_cb, s); }
static void lock_close(fx_t *fx, void *o) { fx_close_lock(fx, o); }

static const reent_kind_t lock_kind = {"lock/acquire", "lock/release", "$5\r\nwrong\r\n",
                                       "*1\r\n:1\r\n", lock_open, lock_holds, lock_owner_of,
                                       lock_start, lock_release_into, lock_close};

static void *fair_open(lk_client_t *cl) {
  lk_fair_t *f = NULL;
  ASSERT_OK(lk_fair_new(cl, HC_NAME, &f));
  return f;
}
static uint32_t fair_holds(void *o) { return lk_fair_hold_count(o); }
static const char *fair_owner_of(void *o) { return lk_fair_owner(o); }
static void fair_start(void *o, int64_t wait_ms, int fenced, sx_t *s) {
  (void)fenced;
  fsx_start(o, wait_ms, HC_LEASE, 0, s);
}
static int fair_release_into(void *o, sx_t *s) { return lk_fair_release(o, fsx_cb, s); }
static void fair_close(fx_t *fx, void *o) { fx_close_fair(fx, o); }

static const reent_kind_t fair_kind = {"fair/acquire", "fair/release", ":0\r\n",
                                       "*2\r\n:0\r\n:1\r\n", fair_open, fair_holds,
                                       fair_owner_of, fair_start, fair_release_into, fair_close};

/* A try-once acquire of o, run to its end: its status. */
static int reent_acquire(hc_t *c, const reent_kind_t *k, void *o) {
  sx_t t;
  k->start_acquire(o, 0, 0, &t);
  rt_run_until(&c->fx.loop, &t.done, 15000);
  return t.status;
}

/* A release of o, run to its end: its status. */
static int reent_release(hc_t *c, const reent_kind_t *k, void *o) {
  sx_t t;
  memset(&t, 0, sizeof t);
  ASSERT_OK(k->release(o, &t));
  rt_run_until(&c->fx.loop, &t.done, 15000);
  return t.status;
}

/* The server's count of o's holds. */
static long long reent_server_holds(hc_t *c, const reent_kind_t *k, void *o) {
  return hc_hget(c, HC_NAME, k->owner(o));
}

/* Drops whatever the object still counts (a release, whatever it answers),
 * then a healthy acquire and release: (d). */
static void reent_reuse(hc_t *c, const reent_kind_t *k, void *a) {
  for (int i = 0; i < 3 && k->hold_count(a) > 0; i++) {
    sx_t t;
    memset(&t, 0, sizeof t);
    if (k->release(a, &t) != 0)
      break;
    rt_run_until(&c->fx.loop, &t.done, 10000);
  }
  ASSERT_OK(reent_acquire(c, k, a));
  ASSERT_EQ(reent_server_holds(c, k, a), 1);
  ASSERT_OK(reent_release(c, k, a));
  ASSERT_EQ(hc_exists(c, HC_NAME), 0);
}

/* fenced: the lock's fenced acquire (its own script and replies, a token
 * checked against the counter, which stays as state). */
static void reent_acquire_cell(hc_t *c, const reent_kind_t *k, int fenced) {
  static const hc_allow_t token[] = {{"redisson_lock_token:{" HC_NAME "}", 0}};
  /* The real answer to an insert is "busy": b holds the lock. */
  int refused = c->fault == RT_HF_INSERT;
  void *a = k->open(c->fx.c);
  void *b = k->open(c->direct);
  if (refused)
    ASSERT_OK(reent_acquire(c, k, b));
  hc_arm(c, fenced ? "lock/acquire_fenced" : k->acquire_script, 1, k->acquire_wrong,
         fenced ? "*3\r\n:1\r\n:99\r\n:0\r\n" : k->acquire_fake);
  k->start_acquire(a, c->wait_ms, fenced, &c->s);
  hc_wait(c);
  hc_check_status(c, refused, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(reent_server_holds(c, k, a), 1); /* held once, on the server */
    ASSERT_EQ(k->hold_count(a), 1);
    if (fenced) {
      ASSERT_GT(lk_lock_token(a), 0);
      ASSERT_LE(lk_lock_token(a), fx_token_counter(&c->fx, HC_NAME));
    }
  } else {
    ASSERT_EQ(k->hold_count(a), 0);
    if (hc_unknown(c)) /* given back, not left to its 30 s lease */
      HC_EVENTUALLY(c, reent_server_holds(c, k, a) == 0, 2000,
                    "hold not given back: count %lld on the server, pttl %lld",
                    reent_server_holds(c, k, a), rt_cmd_int(c->fx.srv, "PTTL " HC_NAME));
  }
  if (refused) {
    ASSERT_EQ(reent_server_holds(c, k, b), 1); /* b's hold untouched */
    ASSERT_OK(reent_release(c, k, b));
  }
  /* An error reply's grant (the lie) is a's own hold: the healthy acquire
   * below re-counts it from the object's count and the release frees it. */
  reent_reuse(c, k, a);
  k->close(&c->fx, a);
  k->close(&c->fx, b);
  hc_finish(c, token, fenced ? 1 : 0);
}

static void v_lock_acquire(hc_t *c) { reent_acquire_cell(c, &lock_kind, 0); }
static void v_lock_acquire_fenced(hc_t *c) { reent_acquire_cell(c, &lock_kind, 1); }
static void v_fair_acquire(hc_t *c) { reent_acquire_cell(c, &fair_kind, 0); }

/* The release cells drop one of two holds, so a release applied twice, or
 * believed from the extra reply ("released", where the real answer is
 * "still held"), shows in the count. After LK_EUNKNOWN the object's count
 * is a "maybe" (lock.h), so the count check applies to the other outcomes;
 * after an error reply the object rightly counts the hold the lie freed
 * where no client could see, and the reuse step's releases end with
 * LK_ENOTOWNER. */
static void reent_release_cell(hc_t *c, const reent_kind_t *k) {
  void *a = k->open(c->fx.c);
  ASSERT_OK(reent_acquire(c, k, a));
  ASSERT_OK(reent_acquire(c, k, a));
  hc_arm(c, k->release_script, 1, "*1\r\n:1\r\n", ":1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(k->release(a, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(c->s.result, 0); /* still held: the truth, not the extra reply's */
    ASSERT_EQ(reent_server_holds(c, k, a), 1);
    ASSERT_EQ(k->hold_count(a), 1);
  }
  if (hc_unknown(c) && c->s.status != LK_EUNKNOWN)
    HC_EVENTUALLY(c, (long long)k->hold_count(a) == reent_server_holds(c, k, a), 2000,
                  "a counts %u hold(s), the server %lld", k->hold_count(a),
                  reent_server_holds(c, k, a));
  reent_reuse(c, k, a);
  k->close(&c->fx, a);
  hc_finish(c, NULL, 0);
}

static void v_lock_release(hc_t *c) { reent_release_cell(c, &lock_kind); }
static void v_fair_release(hc_t *c) { reent_release_cell(c, &fair_kind); }

static void v_lock_force_release(hc_t *c) {
  /* Held by h, except for an insert: then the real answer is 0 (no lock). */
  int held = c->fault != RT_HF_INSERT;
  lk_lock_t *f = fx_lock(&c->fx, HC_NAME);
  lk_lock_t *h = fu_lock(c->direct, HC_NAME);
  sx_t t;
  if (held)
    ASSERT_OK(sx_acquire_in(&c->fx.loop, h, 0, HC_LEASE, &t));
  hc_arm(c, "lock/force_release", 1, "*1\r\n:1\r\n", ":1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_lock_force_release(f, sx_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, held); /* the truth, not the extra reply's */
  ASSERT_EQ(hc_exists(c, HC_NAME), 0); /* it ran, once */
  if (held) { /* h learns it was forced */
    memset(&t, 0, sizeof t);
    ASSERT_OK(lk_lock_release(h, sx_cb, &t));
    rt_run_until(&c->fx.loop, &t.done, 10000);
    ASSERT_EQ(t.status, LK_ENOTOWNER);
  }
  reent_reuse(c, &lock_kind, f);
  fx_close_lock(&c->fx, f);
  fx_close_lock(&c->fx, h);
  hc_finish(c, NULL, 0);
}

/* Returns right after the server ran a script (a renewal: the only
 * scripts a renewal cell runs once its acquire is done), so the next
 * renewal is a period away: a loss made now is first seen by that one. */
static void hc_after_a_script_ran(hc_t *c) {
  long long n0 = rt_server_cmd_calls(c->fx.srv, "evalsha");
  HC_EVENTUALLY(c, rt_server_cmd_calls(c->fx.srv, "evalsha") > n0, 3000,
                "no renewal ran for 3 s");
}

/* One kind's view for renewal_lie_is_never_believed: obj is the cell's
 * object (or what names its hold). */
typedef struct {
  int (*believes_held)(void *obj);
  /* 1 while the server still has obj's hold; else 0, why (for the failure). */
  int (*server_has_hold)(hc_t *c, void *obj, char *why, size_t len);
  const char *taken_away; /* how the insert took the hold away */
} renew_kind_t;

/* Arms the lie about the next renewal (script: the kind's renewal) and
 * checks what the object believes afterwards. With t_del set (an insert:
 * the hold was taken away on the server then) the object must stop
 * believing it holds before the lease its last true renewal gave ends
 * (safety, unscaled) and report the loss; otherwise, for a lease and a
 * half, whenever it believes it holds, the server agrees. */
static void renewal_lie_is_never_believed(hc_t *c, const renew_kind_t *k, void *obj,
                                          const char *script, uint64_t t_del,
                                          const fu_lost_t *lost) {
  hc_arm(c, script, 1, ":1\r\n", "*1\r\n:1\r\n");
  FX_EVENTUALLY(&c->fx, rt_hostile_applied(c->p), 3000);
  if (t_del != 0) {
    /* Safety (unscaled): the last renewal answered truly was sent before
     * the hold was taken away, so its lease ends before t_del + lease. */
    uint64_t end = t_del + (uint64_t)(c->default_lease_ms + 5) * 1000000u;
    for (int i = 0; i < 100000 && uv_hrtime() < end; i++)
      fu_spin(&c->fx.loop, 2);
    if (k->believes_held(obj))
      FAIL("still believed held %lld ms after %s (lease %lld ms)",
           (long long)((uv_hrtime() - t_del) / 1000000), k->taken_away,
           (long long)c->default_lease_ms);
    HC_EVENTUALLY(c, lost->calls == 1, 3000, "the loss was never reported");
  } else {
    /* For a lease and a half: whenever the object believes it holds, the
     * server agrees. */
    int64_t end = rt_now_ms() + c->default_lease_ms * 3 / 2;
    while (rt_now_ms() < end) {
      char why[128];
      int held = k->believes_held(obj);
      if (held && !k->server_has_hold(c, obj, why, sizeof why) && k->believes_held(obj))
        FAIL("believed held, but %s", why);
      fu_spin(&c->fx.loop, 10);
    }
  }
  ASSERT_LE(lost->calls, 1);
  if (lost->calls == 1)
    ASSERT_EQ(lost->status, LK_ELEASELOST);
}

static int lock_believes_held(void *obj) { return lk_lock_is_held(obj); }

static int lock_server_has_hold(hc_t *c, void *obj, char *why, size_t len) {
  long long n = hc_hget(c, HC_NAME, lk_lock_owner(obj));
  snprintf(why, len, "the server's count is %lld", n);
  return n == 1;
}

static const renew_kind_t lock_renew_kind = {lock_believes_held, lock_server_has_hold,
                                             "its key was deleted"};

/* The watchdog's renewal reply. For an insert, the hold is taken away on
 * the server just after a renewal ran, so the next renewal (a period later)
 * is the faulted one: its real answer is "not held" while the extra one
 * says "renewed". The object must not go on believing it holds past the
 * lease its last true renewal gave it. */
static void v_lock_renew(hc_t *c) {
  lk_lock_t *a = fx_lock(&c->fx, HC_NAME);
  fu_lost_t lost = {0};
  lk_lock_set_lost_cb(a, fu_on_lost, &lost);
  ASSERT_OK(sx_acquire(&c->fx, a, 0, LK_LEASE_DEFAULT));
  /* A renewal's outcome: the cell's one accepted call is this acquire. */
  c->s.calls = 1;
  uint64_t t_del = 0;
  if (c->fault == RT_HF_INSERT) {
    hc_after_a_script_ran(c);
    t_del = uv_hrtime();
    ASSERT_EQ(rt_cmd_int(c->fx.srv, "DEL %s", HC_NAME), 1);
  }
  renewal_lie_is_never_believed(c, &lock_renew_kind, a, "lock/renew", t_del, &lost);
  if (lost.calls == 1)
    ASSERT(!lk_lock_is_held(a));
  reent_reuse(c, &lock_kind, a);
  fx_close_lock(&c->fx, a);
  hc_finish(c, NULL, 0);
}

/* ---- read/write lock ------------------------------------------------------------------ */

/* This owner's holds of side on the server (the reader or writer field). */
static long long rw_server_side(hc_t *c, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  char field[160];
  snprintf(field, sizeof field, side == RW_W ? "%s:write" : "%s", lk_rwlock_owner(rw));
  return hc_hget(c, HC_NAME, field);
}

/* Read hold keys of any owner ({NAME}:UUID:TID:rwlock_timeout:i). */
static long long rw_hold_keys(hc_t *c) {
  return rt_server_count_keys(c->fx.srv, "{" HC_NAME "}:*:rwlock_timeout:*");
}

/* Deletes the lock and every read hold key, as a lost lease leaves it. */
static void rw_delete(hc_t *c) {
  rt_cmd_int(c->fx.srv, "DEL %s", HC_NAME);
  redisReply *r = rt_cmd(c->fx.srv, "KEYS {" HC_NAME "}:*:rwlock_timeout:*");
  ASSERT_NOT_NULL(r);
  for (size_t i = 0; i < r->elements; i++)
    rt_cmd_int(c->fx.srv, "DEL %s", r->element[i]->str);
  freeReplyObject(r);
}

static void rw_reuse(hc_t *c, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t t;
  for (int i = 0; i < 3 && lk_rwlock_hold_count(rw, side) > 0; i++) {
    memset(&t, 0, sizeof t);
    if (lk_rwlock_release(rw, side, rw_cb, &t) != 0)
      break;
    rt_run_until(&c->fx.loop, &t.done, 10000);
  }
  ASSERT_OK(rw_acquire(&c->fx, rw, side, 0, HC_LEASE));
  ASSERT_EQ(rw_server_side(c, rw, side), 1);
  ASSERT_OK(rw_release(&c->fx, rw, side, NULL));
  ASSERT_EQ(hc_exists(c, HC_NAME), 0);
  ASSERT_EQ(rw_hold_keys(c), 0);
}

static void rw_acquire_cell(hc_t *c, lk_rwlock_side_t side) {
  /* The real answer to an insert is "busy": b writes. */
  int refused = c->fault == RT_HF_INSERT;
  lk_rwlock_t *a = fx_rwlock(&c->fx, HC_NAME);
  lk_rwlock_t *b = NULL;
  ASSERT_OK(lk_rwlock_new(c->direct, HC_NAME, &b));
  if (refused)
    ASSERT_OK(rw_acquire(&c->fx, b, RW_W, 0, HC_LEASE));
  hc_arm(c, side == RW_R ? "rwlock/read_acquire" : "rwlock/write_acquire", 1,
         side == RW_R ? "$5\r\nwrong\r\n" : "+OK\r\n", "*2\r\n:1\r\n:0\r\n");
  rw_start(a, side, c->wait_ms, HC_LEASE, &c->s);
  hc_wait(c);
  hc_check_status(c, refused, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(rw_server_side(c, a, side), 1);
    ASSERT_EQ(lk_rwlock_hold_count(a, side), 1);
  } else {
    ASSERT_EQ(lk_rwlock_hold_count(a, side), 0);
    if (hc_unknown(c)) /* given back, not left to its 30 s lease */
      HC_EVENTUALLY(c, rw_server_side(c, a, side) == 0 && rw_hold_keys(c) == 0, 2000,
                    "hold not given back: count %lld on the server, %lld read hold keys, "
                    "pttl %lld",
                    rw_server_side(c, a, side), rw_hold_keys(c),
                    rt_cmd_int(c->fx.srv, "PTTL " HC_NAME));
  }
  if (refused) {
    ASSERT_EQ(rw_server_side(c, b, RW_W), 1);
    ASSERT_OK(rw_release(&c->fx, b, RW_W, NULL));
  }
  if (c->fault == RT_HF_ERROR && side == RW_R)
    rw_delete(c); /* undo the lie: a hold of a's that a does not count */
  rw_reuse(c, a, side);
  fx_close_rwlock(&c->fx, a);
  fx_close_rwlock(&c->fx, b);
  hc_finish(c, NULL, 0);
}

static void v_rw_read_acquire(hc_t *c) { rw_acquire_cell(c, RW_R); }
static void v_rw_write_acquire(hc_t *c) { rw_acquire_cell(c, RW_W); }

/* As for the reentrant lock: one of two holds of the side. */
static void rw_release_cell(hc_t *c, lk_rwlock_side_t side) {
  lk_rwlock_t *a = fx_rwlock(&c->fx, HC_NAME);
  ASSERT_OK(rw_acquire(&c->fx, a, side, 0, HC_LEASE));
  ASSERT_OK(rw_acquire(&c->fx, a, side, 0, HC_LEASE));
  hc_arm(c, side == RW_R ? "rwlock/read_release" : "rwlock/write_release", 1, "*1\r\n:1\r\n",
         ":0\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_rwlock_release(a, side, rw_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(c->s.result, 0); /* holds remain: the truth, not the extra reply's */
    ASSERT_EQ(rw_server_side(c, a, side), 1);
    ASSERT_EQ(lk_rwlock_hold_count(a, side), 1);
  }
  if (hc_unknown(c) && c->s.status != LK_EUNKNOWN)
    HC_EVENTUALLY(c, (long long)lk_rwlock_hold_count(a, side) == rw_server_side(c, a, side),
                  2000, "a counts %u hold(s), the server %lld", lk_rwlock_hold_count(a, side),
                  rw_server_side(c, a, side));
  rw_reuse(c, a, side);
  fx_close_rwlock(&c->fx, a);
  hc_finish(c, NULL, 0);
}

static void v_rw_read_release(hc_t *c) { rw_release_cell(c, RW_R); }
static void v_rw_write_release(hc_t *c) { rw_release_cell(c, RW_W); }

/* ---- counting semaphore -------------------------------------------------------------- */

/* The counting semaphore leaves its count (state by design) and, where a
 * copy of an attempt could still arrive, its object's request mark, which
 * expires. */
static const hc_allow_t sem_keys[] = {{HC_NAME, 0},
                                      {"latchkey_semaphore_req:{" HC_NAME "}:*", 1}};

static long long sem_count(hc_t *c) { return srv_count(c->fx.srv, HC_NAME); }

static void sem_set(hc_t *c, long long n) {
  char *ok = rt_cmd_str(c->fx.srv, "SET %s %lld", HC_NAME, n);
  free(ok);
}

/* A healthy acquire and release of one permit: (d). */
static void sem_reuse(hc_t *c, lk_semaphore_t *s) {
  int64_t held = lk_semaphore_held(s);
  if (held > 0)
    ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_release, s, held, NULL));
  ASSERT_OK(sem_acquire(&c->fx, s, 1, 0));
  ASSERT_EQ(lk_semaphore_held(s), 1);
  ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_release, s, 1, NULL));
}

/* With every object closed: closes the clients and checks (a), the count
 * is total again, and (b), only allow's keys are left. */
static void sem_finish(hc_t *c, long long total, const hc_allow_t *allow, size_t n_allow) {
  hc_close_clients(c);
  long long n = sem_count(c);
  if (n != total)
    FAIL("permits after every object closed: %lld, the total is %lld", n, total);
  ASSERT_EQ(hc_leftovers(c, allow, n_allow), 0);
  hc_stop(c);
}

/* Closes the objects, then sem_finish. */
static void sem_end(hc_t *c, lk_semaphore_t *s, lk_semaphore_t *o, long long total) {
  fx_close_sem(&c->fx, s);
  if (o != NULL)
    fx_close_sem(&c->fx, o);
  sem_finish(c, total, sem_keys, 2);
}

static void v_sem_acquire(hc_t *c) {
  /* One permit; for an insert, o holds it, so the real answer is "none". */
  int refused = c->fault == RT_HF_INSERT;
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  lk_semaphore_t *o = NULL;
  ASSERT_OK(lk_semaphore_new(c->direct, HC_NAME, &o));
  sem_set(c, 1);
  if (refused)
    ASSERT_OK(sem_acquire(&c->fx, o, 1, 0));
  hc_arm(c, "semaphore/acquire", 1, "$5\r\nwrong\r\n", "*2\r\n:1\r\n:0\r\n");
  sem_start_acquire(s, 1, c->wait_ms, &c->s);
  hc_wait(c);
  hc_check_status(c, refused, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(lk_semaphore_held(s), 1);
    ASSERT_EQ(sem_count(c) + lk_semaphore_held(o), 0); /* one permit, one holder */
  } else {
    ASSERT_EQ(lk_semaphore_held(s), 0);
    if (hc_unknown(c)) /* the permit comes back */
      HC_EVENTUALLY(c, sem_count(c) + lk_semaphore_held(o) == 1, 2000,
                    "permit lost: the server has %lld, s holds %lld, o %lld, of 1", sem_count(c),
                    (long long)lk_semaphore_held(s), (long long)lk_semaphore_held(o));
    else
      sem_set(c, 1 - lk_semaphore_held(o)); /* undo the lie's taking */
  }
  if (refused)
    ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_release, o, 1, NULL));
  sem_reuse(c, s);
  sem_end(c, s, o, 1);
}

static void v_sem_release(hc_t *c) {
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  lk_semaphore_t *o = NULL;
  ASSERT_OK(lk_semaphore_new(c->direct, HC_NAME, &o));
  sem_set(c, 1);
  ASSERT_OK(sem_acquire(&c->fx, s, 1, 0));
  /* The extra reply says 7 permits are available after. */
  hc_arm(c, "semaphore/release", 1, ":1\r\n", "*2\r\n:7\r\n:0\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_semaphore_release(s, 1, sem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(lk_semaphore_held(s), 0);
    ASSERT_EQ(c->s.result, sem_count(c)); /* the truth, not the extra reply's */
  }
  if (c->fault == RT_HF_ERROR)
    ASSERT_EQ(rt_cmd_int(c->fx.srv, "DECR %s", HC_NAME), 0); /* undo the lie's release */
  /* Never two holders of the one permit: what s still counts is not on the
   * server (a background resend may take a moment). */
  HC_EVENTUALLY(c, sem_count(c) + lk_semaphore_held(s) == 1, 2000,
                "the server has %lld permits and s still counts %lld, of 1", sem_count(c),
                (long long)lk_semaphore_held(s));
  if (lk_semaphore_held(s) > 0) { /* then nobody else may take it */
    sx_t t;
    ASSERT_EQ(sem_acquire_in(&c->fx.loop, o, 1, 0, &t), LK_ETIMEDOUT);
  }
  sem_reuse(c, s);
  sem_end(c, s, o, 1);
}

static void v_sem_add(hc_t *c) {
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  sem_set(c, 1);
  hc_arm(c, "semaphore/add", 1, "*1\r\n:1\r\n", ":7\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_semaphore_add_permits(s, 1, sem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  ASSERT_EQ(sem_count(c), 2); /* it ran, exactly once */
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, 2); /* the new count, not the extra reply's */
  if (c->fault == RT_HF_ERROR)
    ASSERT_EQ(rt_cmd_int(c->fx.srv, "DECR %s", HC_NAME), 1); /* undo the lie's add */
  int64_t r = 0;
  ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_add_permits, s, -1, &r));
  ASSERT_EQ(r, sem_count(c));
  ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_add_permits, s, 1, &r));
  sem_reuse(c, s);
  sem_end(c, s, NULL, c->fault == RT_HF_ERROR ? 1 : 2);
}

static void v_sem_try_set(hc_t *c) {
  /* Absent, so it sets 1; for an insert, set already, so the real answer
   * is 0 (existed) while the extra one says 1. */
  int existed = c->fault == RT_HF_INSERT;
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  if (existed)
    sem_set(c, 1);
  hc_arm(c, "semaphore/try_set", 1, "*1\r\n:1\r\n", ":1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_semaphore_try_set_permits(s, 1, sem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  ASSERT_EQ(sem_count(c), 1);
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, !existed);
  if (c->fault == RT_HF_ERROR)
    rt_cmd_int(c->fx.srv, "DEL %s", HC_NAME); /* undo the lie's set */
  int64_t r = -1;
  long long before = hc_exists(c, HC_NAME);
  ASSERT_OK(sem_run_n(&c->fx, lk_semaphore_try_set_permits, s, 1, &r));
  ASSERT_EQ(r, !before);
  sem_reuse(c, s);
  sem_end(c, s, NULL, 1);
}

static void v_sem_drain(hc_t *c) {
  lk_semaphore_t *s = fx_sem(&c->fx, HC_NAME);
  sem_set(c, 2);
  hc_arm(c, "semaphore/drain", 1, "*1\r\n:1\r\n", "*2\r\n:1\r\n:5\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_semaphore_drain(s, sem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(c->s.result, 2);
    ASSERT_EQ(lk_semaphore_held(s), 2);
    ASSERT_EQ(sem_count(c), 0);
  }
  if (c->fault == RT_HF_ERROR)
    ASSERT_EQ(rt_cmd_int(c->fx.srv, "INCRBY %s 2", HC_NAME), 2); /* undo the lie's drain */
  /* The drained permits are the object's or the server's, never lost. */
  HC_EVENTUALLY(c, sem_count(c) + lk_semaphore_held(s) == 2, 2000,
                "drained permits lost: the server has %lld, s holds %lld, of 2", sem_count(c),
                (long long)lk_semaphore_held(s));
  sem_reuse(c, s);
  sem_end(c, s, NULL, 2);
}

/* ---- expirable semaphore ------------------------------------------------------------ */

static const hc_allow_t psem_keys[] = {{HC_NAME, 0}};

static long long psem_zcard(hc_t *c) {
  return rt_cmd_int(c->fx.srv, "ZCARD {%s}:timeout", HC_NAME);
}

static void psem_cell_lost(lk_psem_t *p, int status, void *arg) {
  fu_lost_t *x = arg;
  (void)p;
  x->calls++;
  x->status = status;
  x->t_ns = uv_hrtime();
}

static void psem_reuse(hc_t *c, lk_psem_t *p) {
  sx_t t;
  memset(&t, 0, sizeof t);
  if (lk_psem_permit_count(p) > 0 && lk_psem_release(p, NULL, psem_cb, &t) == 0)
    rt_run_until(&c->fx.loop, &t.done, 10000);
  ASSERT_OK(psem_acquire(&c->fx, p, 1, 0, HC_LEASE));
  ASSERT_EQ(lk_psem_permit_count(p), 1);
  ASSERT_GT(hc_psem_score(c, lk_psem_permit_id(p, 0)), 0);
  ASSERT_OK(psem_run_id(&c->fx, lk_psem_release, p, NULL, NULL));
}

static void psem_end(hc_t *c, lk_psem_t *p, lk_psem_t *o, long long total) {
  fx_close_psem(&c->fx, p);
  if (o != NULL)
    fx_close_psem(&c->fx, o);
  sem_finish(c, total, psem_keys, 1); /* no permit id left: the zset is gone */
}

static void v_psem_acquire(hc_t *c) {
  int refused = c->fault == RT_HF_INSERT;
  lk_psem_t *p = fx_psem(&c->fx, HC_NAME);
  lk_psem_t *o = NULL;
  ASSERT_OK(lk_psem_new(c->direct, HC_NAME, &o));
  sem_set(c, 1);
  if (refused)
    ASSERT_OK(psem_acquire(&c->fx, o, 1, 0, HC_LEASE));
  hc_arm(c, "semaphore/psem_acquire", 1, "$5\r\nwrong\r\n", "*2\r\n:1\r\n:0\r\n");
  psem_start_acquire(p, 1, c->wait_ms, HC_LEASE, &c->s);
  hc_wait(c);
  hc_check_status(c, refused, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(lk_psem_permit_count(p), 1);
    ASSERT_GT(hc_psem_score(c, lk_psem_permit_id(p, 0)), 0); /* the server has that id */
    ASSERT_EQ(sem_count(c), 0);
  } else {
    ASSERT_EQ(lk_psem_permit_count(p), 0);
    if (hc_unknown(c)) /* given back, not left to its 30 s lease */
      HC_EVENTUALLY(c,
                    psem_zcard(c) == (long long)lk_psem_permit_count(o) &&
                        sem_count(c) + psem_zcard(c) == 1,
                    2000, "permit not given back: %lld ids on the server (o holds %lld), count %lld",
                    psem_zcard(c), (long long)lk_psem_permit_count(o), sem_count(c));
  }
  if (refused)
    ASSERT_OK(psem_run_id(&c->fx, lk_psem_release, o, NULL, NULL));
  if (c->fault == RT_HF_ERROR) { /* undo the lie's permit (an id p never learnt) */
    rt_cmd_int(c->fx.srv, "DEL {%s}:timeout", HC_NAME);
    sem_set(c, 1);
  }
  psem_reuse(c, p);
  psem_end(c, p, o, 1);
}

static void v_psem_release(hc_t *c) {
  lk_psem_t *p = fx_psem(&c->fx, HC_NAME);
  sem_set(c, 1);
  ASSERT_OK(psem_acquire(&c->fx, p, 1, 0, HC_LEASE));
  char id[LK_PSEM_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(p, 0));
  long long score = hc_psem_score(c, id);
  hc_arm(c, "semaphore/psem_release", 1, ":1\r\n", "*2\r\n:1\r\n:7\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_psem_release(p, NULL, psem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  if (c->s.status == 0) {
    ASSERT_EQ(lk_psem_permit_count(p), 0);
    ASSERT_EQ(hc_psem_score(c, id), -1);
  }
  if (c->fault == RT_HF_ERROR) { /* undo the lie's release */
    char raw[16];
    const char *argv[4] = {"ZADD", "{" HC_NAME "}:timeout", NULL, raw};
    char sc[32];
    snprintf(sc, sizeof sc, "%lld", score);
    argv[2] = sc;
    size_t lens[4] = {4, strlen(argv[1]), strlen(sc), 16};
    hc_id_raw(id, raw);
    freeReplyObject(rt_cmd_argv(c->fx.srv, 4, argv, lens));
    ASSERT_EQ(rt_cmd_int(c->fx.srv, "DECR %s", HC_NAME), 0);
  }
  /* Never two holders: the object counts the permit exactly while the
   * server holds it, and the count adds up (background work may take a
   * moment). */
  HC_EVENTUALLY(c,
                sem_count(c) + psem_zcard(c) == 1 &&
                    (long long)lk_psem_permit_count(p) == psem_zcard(c),
                2000, "count %lld, %lld ids on the server, p counts %lld, of 1", sem_count(c),
                psem_zcard(c), (long long)lk_psem_permit_count(p));
  psem_reuse(c, p);
  psem_end(c, p, NULL, 1);
}

/* A permit named by its id, for renewal_lie_is_never_believed. */
typedef struct {
  lk_psem_t *p;
  char id[LK_PSEM_ID_LEN + 1];
} psem_permit_t;

static int psem_believes_held(void *obj) { return lk_psem_is_held(((psem_permit_t *)obj)->p); }

static int psem_server_has_hold(hc_t *c, void *obj, char *why, size_t len) {
  psem_permit_t *pp = obj;
  snprintf(why, len, "the server has no permit %s", pp->id);
  return hc_psem_score(c, pp->id) >= 0;
}

static const renew_kind_t psem_renew_kind = {psem_believes_held, psem_server_has_hold,
                                             "its permit was reclaimed"};

/* The watchdog's renewal of a permit; for an insert the permit is
 * reclaimed first (as an ended lease is), so the real answer is "gone". */
static void v_psem_renew(hc_t *c) {
  lk_psem_t *p = fx_psem(&c->fx, HC_NAME);
  fu_lost_t lost = {0};
  ASSERT_OK(lk_psem_set_lost_cb(p, psem_cell_lost, &lost));
  sem_set(c, 1);
  ASSERT_OK(psem_acquire(&c->fx, p, 1, 0, LK_LEASE_DEFAULT));
  c->s.calls = 1; /* the cell's one accepted call is this acquire */
  psem_permit_t pp = {.p = p};
  snprintf(pp.id, sizeof pp.id, "%s", lk_psem_permit_id(p, 0));
  uint64_t t_del = 0;
  if (c->fault == RT_HF_INSERT) {
    hc_after_a_script_ran(c);
    t_del = uv_hrtime();
    hc_psem_reclaim(c, pp.id);
  }
  renewal_lie_is_never_believed(c, &psem_renew_kind, &pp, "semaphore/psem_renew", t_del, &lost);
  psem_reuse(c, p);
  psem_end(c, p, NULL, 1);
}

/* Shortens a permit's lease to PSEM_SHORT ms. The object must never
 * believe it holds the permit after the server's lease ended: an update
 * whose outcome it cannot read may have applied. For an insert the permit
 * is reclaimed first: the real answer is "not held any more"
 * (LK_ELEASELOST) while the extra one says "updated". */
#define PSEM_SHORT 500
static void v_psem_update_lease(hc_t *c) {
  int refused = c->fault == RT_HF_INSERT;
  lk_psem_t *p = fx_psem(&c->fx, HC_NAME);
  sem_set(c, 1);
  ASSERT_OK(psem_acquire(&c->fx, p, 1, 0, HC_LEASE));
  char id[LK_PSEM_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(p, 0));
  long long score = hc_psem_score(c, id);
  if (refused)
    hc_psem_reclaim(c, id);
  hc_arm(c, "semaphore/psem_update", 1, ":1\r\n", "*1\r\n:1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_psem_update_lease(p, NULL, PSEM_SHORT, psem_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, refused, LK_ELEASELOST);
  long long now_score = hc_psem_score(c, id);
  if (c->s.status == 0) { /* the lease was shortened on the server */
    ASSERT_GT(now_score, 0);
    ASSERT_LT(now_score, score);
  }
  if (c->fault == RT_HF_ERROR && now_score > 0 && now_score < score) {
    /* Undo the lie: the server "did not run" the update. */
    char raw[16], sc[32];
    snprintf(sc, sizeof sc, "%lld", score);
    const char *argv[5] = {"ZADD", "{" HC_NAME "}:timeout", "XX", sc, raw};
    size_t lens[5] = {4, strlen(argv[1]), 2, strlen(sc), 16};
    hc_id_raw(id, raw);
    freeReplyObject(rt_cmd_argv(c->fx.srv, 5, argv, lens));
    now_score = score;
  }
  if (now_score > 0 && now_score < score) {
    /* Safety: once the server's lease has ended, the object does not
     * believe it holds the permit (the server's clock, TIME). */
    int64_t end = rt_now_ms() + rt_scaled_ms(3000);
    while (server_ms(c->fx.srv) <= now_score && rt_now_ms() < end)
      fx_spin(&c->fx, 2);
    ASSERT_GT(server_ms(c->fx.srv), now_score);
    if (lk_psem_is_held(p))
      FAIL("the server's lease of permit %s has ended, and the object still believes it "
           "holds it (%s)", id, lk_err_name(c->s.status));
  }
  HC_EVENTUALLY(c, sem_count(c) + psem_zcard(c) == 1, 2000,
                "count %lld and %lld ids on the server, of 1", sem_count(c), psem_zcard(c));
  psem_reuse(c, p);
  psem_end(c, p, NULL, 1);
}

/* ---- countdown latch ------------------------------------------------------------------ */

static int lx_do(hc_t *c, int (*fn)(lk_latch_t *, lk_latch_cb, void *), lk_latch_t *l,
                 int64_t *result) {
  sx_t t;
  memset(&t, 0, sizeof t);
  ASSERT_OK(fn(l, lx_cb, &t));
  rt_run_until(&c->fx.loop, &t.done, 10000);
  if (result != NULL)
    *result = t.result;
  return t.status;
}

static void latch_end(hc_t *c, lk_latch_t *l) {
  /* The latch's count is state; a deletion's tombstone expires. */
  static const hc_allow_t keys[] = {{HC_NAME, 0},
                                    {"latchkey_latch_deleted:{" HC_NAME "}", 1}};
  lx_close(&c->fx.loop, l);
  hc_finish(c, keys, 2);
}

static void v_latch_count_down(hc_t *c) {
  lk_latch_t *l = lx_new(&c->fx, HC_NAME, 0);
  sem_set(c, 2);
  hc_arm(c, "latch/count_down", 1, "*1\r\n:0\r\n", ":0\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_latch_count_down(l, lx_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  ASSERT_EQ(lx_get(c->fx.srv, HC_NAME, 0), 1); /* counted down exactly once */
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, 1); /* the count left, not the extra reply's "opened" */
  int64_t r = -9;
  ASSERT_OK(lx_do(c, lk_latch_count_down, l, &r));
  ASSERT_EQ(r, 0); /* this one opened it */
  ASSERT_EQ(hc_exists(c, HC_NAME), 0);
  latch_end(c, l);
}

static void v_latch_try_set_count(hc_t *c) {
  /* Absent, so it arms; for an insert armed already (5), so the real
   * answer is 0 while the extra one says 1. */
  int armed = c->fault == RT_HF_INSERT;
  lk_latch_t *l = lx_new(&c->fx, HC_NAME, 0);
  if (armed)
    sem_set(c, 5);
  hc_arm(c, "latch/try_set_count", 1, "*1\r\n:1\r\n", ":1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_latch_try_set_count(l, 3, lx_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  ASSERT_EQ(lx_get(c->fx.srv, HC_NAME, 0), armed ? 5 : 3);
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, !armed);
  rt_cmd_int(c->fx.srv, "DEL %s", HC_NAME);
  int64_t r = -1;
  ASSERT_OK(lx_set(&c->fx.loop, l, 1, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(lx_do(c, lk_latch_count_down, l, &r));
  ASSERT_EQ(r, 0);
  latch_end(c, l);
}

static void v_latch_delete(hc_t *c) {
  /* Armed, so it deletes; for an insert absent, so the real answer is 0
   * (nothing there) while the extra one says 1. */
  int armed = c->fault != RT_HF_INSERT;
  lk_latch_t *l = lx_new(&c->fx, HC_NAME, 0);
  if (armed)
    sem_set(c, 2);
  hc_arm(c, "latch/delete", 1, "*1\r\n:1\r\n", ":1\r\n");
  memset(&c->s, 0, sizeof c->s);
  ASSERT_OK(lk_latch_delete(l, lx_cb, &c->s));
  hc_wait(c);
  hc_check_status(c, 0, 0);
  ASSERT_EQ(hc_exists(c, HC_NAME), 0);
  if (c->s.status == 0)
    ASSERT_EQ(c->s.result, armed);
  int64_t r = -1;
  ASSERT_OK(lx_set(&c->fx.loop, l, 2, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(lx_do(c, lk_latch_delete, l, &r));
  ASSERT_EQ(r, 1);
  latch_end(c, l);
}

/* ---- the table, and main ---------------------------------------------------------- */

/* The acquires run twice: try-once (an unknown outcome is given back) and
 * with a wait budget (it may be resent within the budget, counted once). */
#define WAIT_BUDGET 1000

static const struct {
  const char *name;
  void (*run)(hc_t *c);
  int renewal; /* a watchdog cell: short default lease */
  int64_t wait_ms; /* the acquires' budget */
} verbs[] = {
    {"lock.acquire", v_lock_acquire, 0, 0},
    {"lock.acquire_wait", v_lock_acquire, 0, WAIT_BUDGET},
    {"lock.acquire_fenced", v_lock_acquire_fenced, 0, 0},
    {"lock.acquire_fenced_wait", v_lock_acquire_fenced, 0, WAIT_BUDGET},
    {"lock.release", v_lock_release, 0, 0},
    {"lock.force_release", v_lock_force_release, 0, 0},
    {"lock.renew", v_lock_renew, 1, 0},
    {"fair.acquire", v_fair_acquire, 0, 0},
    {"fair.acquire_wait", v_fair_acquire, 0, WAIT_BUDGET},
    {"fair.release", v_fair_release, 0, 0},
    {"rwlock.read_acquire", v_rw_read_acquire, 0, 0},
    {"rwlock.read_acquire_wait", v_rw_read_acquire, 0, WAIT_BUDGET},
    {"rwlock.write_acquire", v_rw_write_acquire, 0, 0},
    {"rwlock.write_acquire_wait", v_rw_write_acquire, 0, WAIT_BUDGET},
    {"rwlock.read_release", v_rw_read_release, 0, 0},
    {"rwlock.write_release", v_rw_write_release, 0, 0},
    {"semaphore.acquire", v_sem_acquire, 0, 0},
    {"semaphore.acquire_wait", v_sem_acquire, 0, WAIT_BUDGET},
    {"semaphore.release", v_sem_release, 0, 0},
    {"semaphore.add", v_sem_add, 0, 0},
    {"semaphore.try_set", v_sem_try_set, 0, 0},
    {"semaphore.drain", v_sem_drain, 0, 0},
    {"psem.acquire", v_psem_acquire, 0, 0},
    {"psem.acquire_wait", v_psem_acquire, 0, WAIT_BUDGET},
    {"psem.release", v_psem_release, 0, 0},
    {"psem.renew", v_psem_renew, 1, 0},
    {"psem.update_lease", v_psem_update_lease, 0, 0},
    {"latch.count_down", v_latch_count_down, 0, 0},
    {"latch.try_set_count", v_latch_try_set_count, 0, 0},
    {"latch.delete", v_latch_delete, 0, 0},
};

#define N_VERBS (sizeof verbs / sizeof verbs[0])

static unsigned timeout_from_env(void) {
  const char *env = getenv("LK_TEST_TIMEOUT_S");
  if (env == NULL || *env == '\0')
    return 120;
  return (unsigned)strtoul(env, NULL, 10);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < N_VERBS; i++)
      for (int f = 0; f < RT_HF_COUNT; f++)
        printf("%s %s\n", verbs[i].name, rt_hostile_fault_name((rt_hostile_fault_t)f));
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s <verb> <fault> | --list\n", argv[0]);
    return 2;
  }
  int f = rt_hostile_fault_parse(argv[2]);
  size_t v = 0;
  while (v < N_VERBS && strcmp(verbs[v].name, argv[1]) != 0)
    v++;
  if (v == N_VERBS || f < 0) {
    fprintf(stderr, "FAIL: no cell \"%s %s\" (try --list)\n", argv[1], argv[2]);
    return 2;
  }
  rt_safety_net_install(timeout_from_env());
  printf("[ RUN      ] %s %s\n", argv[1], argv[2]);
  int64_t t0 = rt_now_ms();
  hc_t c;
  hc_start(&c, (rt_hostile_fault_t)f, verbs[v].renewal ? rt_scaled_ms(900) : 30000);
  c.wait_ms = verbs[v].wait_ms;
  verbs[v].run(&c);
  printf("[       OK ] %s %s (%lld ms)\n", argv[1], argv[2], (long long)(rt_now_ms() - t0));
  return 0;
}
