/* Test-side conveniences over the latchkey API: a loop + server + client
 * fixture, and "run the loop until this operation's callback" helpers, so a
 * case reads as a sequence. Header-only (static inline) so harness parts
 * that do not link latchkey stay independent of it. */
#ifndef LK_TEST_HARNESS_LK_FIXTURE_H
#define LK_TEST_HARNESS_LK_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "latchkey.h"
#include "proxy.h"
#include "redis_server.h"
#include "server_faults.h"
#include "stall.h"
#include "test.h"

typedef struct fx_s {
  uv_loop_t loop;
  rt_server_t *srv;
  lk_client_t *c;
  int client_closed;
} fx_t;

/* One operation's outcome, filled by sx_cb. */
typedef struct sx_s {
  int done;
  int calls; /* more than 1 breaks the exactly-once rule */
  int status;
  int64_t result;
  uint64_t t_ns;
} sx_t;

/* Records one operation's outcome in s, checking the exactly-once rule.
 * Every kind's typed callback (sx_cb, rw_cb, fsx_cb, sem_cb, ...) is this
 * with its own result getter (issue 29: each fixture had a copy). */
static inline void sx_record(sx_t *s, int status, int64_t result) {
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
  s->result = result;
  s->t_ns = uv_hrtime();
}

static inline void sx_cb(lk_lock_t *l, int status, void *arg) {
  sx_record(arg, status, lk_lock_result(l));
}

static inline void fx_client_opts(fx_t *fx, lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->port = rt_server_port(fx->srv);
}

static inline void fx_start_client(fx_t *fx, const lk_client_opts_t *o) {
  ASSERT_OK(lk_client_new(&fx->loop, o, &fx->c));
}

/* Loop + one server (so NULL: default options), no client yet: for a case
 * that prepares the server before its client starts (fx_client_opts,
 * fx_start_client). */
static inline void fx_start_server(fx_t *fx, const rt_server_opts_t *so) {
  memset(fx, 0, sizeof(*fx));
  ASSERT_OK(uv_loop_init(&fx->loop));
  fx->srv = rt_server_start(so);
  ASSERT_NOT_NULL(fx->srv);
}

/* Loop + one server + the fixture's client with options o (from
 * lk_client_opts_init), whose port is set to the server's. */
static inline void fx_start_with(fx_t *fx, const rt_server_opts_t *so, lk_client_opts_t *o) {
  fx_start_server(fx, so);
  o->port = rt_server_port(fx->srv);
  fx_start_client(fx, o);
}

/* Loop + one server + a client with default options on it. */
static inline void fx_start(fx_t *fx, const rt_server_opts_t *so) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  fx_start_with(fx, so, &o);
}

/* Waiters' re-poll far above every bound a test asserts: a prompt wake-up
 * can only come from a notification. */
#define FX_NO_REPOLL_MS 600000
/* Waiters' re-poll slowed to 20 s, past every wake-up a test awaits: only
 * a notification (or a resubscribe and the attempt it triggers) can wake
 * a waiter in time. */
#define FX_SLOW_REPOLL_MS 20000
/* A reconnect backoff capped this low: a killed connection is back at once. */
#define FX_FAST_RECONNECT_MS 100

/* fx_start(fx, NULL) with a client whose waiters re-poll every
 * max_repoll_ms, and whose reconnects are at most reconnect_max_ms apart
 * (0: the default). */
static inline void fx_start_repoll(fx_t *fx, int64_t max_repoll_ms, int64_t reconnect_max_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = max_repoll_ms;
  o.reconnect_max_ms = reconnect_max_ms > 0 ? reconnect_max_ms : o.reconnect_max_ms;
  fx_start_with(fx, NULL, &o);
}

/* Waiters that never re-poll (issue 29: each interop test file had this
 * start of its own). */
static inline void fx_start_no_repoll(fx_t *fx) { fx_start_repoll(fx, FX_NO_REPOLL_MS, 0); }

/* Waiters that re-poll only every FX_SLOW_REPOLL_MS. */
static inline void fx_start_slow_repoll(fx_t *fx) { fx_start_repoll(fx, FX_SLOW_REPOLL_MS, 0); }

/* The same, with fast reconnects: for the fault cases that kill the pub/sub
 * connection under a waiter (issue 29: the lock, fair and semaphore fault
 * files each opened with this). */
static inline void fx_start_slow_repoll_fast_reconnect(fx_t *fx) {
  fx_start_repoll(fx, FX_SLOW_REPOLL_MS, FX_FAST_RECONNECT_MS);
}

static inline void fx_on_client_closed(lk_client_t *c) {
  fx_t *fx = lk_client_get_data(c);
  fx->client_closed = 1;
}

static inline void fx_spin(fx_t *fx, int64_t ms);

/* Closes the client (objects must be closed), checks the loop closes. An
 * object closed without a close callback finishes its close on the loop
 * (LK_EBUSY until then): that is waited for, bounded, not assumed done
 * after a fixed spin (a loaded machine once took longer than 20 ms). */
static inline void fx_finish(fx_t *fx) {
  if (fx->c != NULL) {
    int64_t mark = rt_stall_mark();
    int rc;
    lk_client_set_data(fx->c, fx);
    while ((rc = lk_client_close(fx->c, fx_on_client_closed)) == LK_EBUSY &&
           !rt_stall_expired(mark, 5000))
      fx_spin(fx, 2);
    ASSERT_OK(rc);
    rt_run_until(&fx->loop, &fx->client_closed, 10000);
    fx->c = NULL;
  }
  rt_loop_close_clean(&fx->loop);
  rt_server_stop(fx->srv);
  fx->srv = NULL;
}

/* The fixture's helpers for one kind of object, T made by P_new (issue 29:
 * each kind's fixture header spelled them out with the type renamed):
 *   T *fx_<kind>(fx, name)             a new object on name, on the client;
 *   void fx_<kind>_closed_cb(T *)      close callback: sets the int its data
 *                                      points to;
 *   void fx_close_<kind>(fx, T *)      closes it, runs until it is closed;
 *   void fx_close_<kind>s(fx, objs)    closes objs in the order given,
 *                                      NULL-terminated, e.g. (T *[]){a, b, NULL};
 *   void fx_finish_<kind>s(fx, objs)   how most cases end: fx_close_<kind>s,
 *                                      then the fixture ends. */
#define FX_OBJECT_KIND(kind, T, P)                                             \
  static inline T *fx_##kind(fx_t *fx, const char *name) {                     \
    T *o = NULL;                                                               \
    ASSERT_OK(P##_new(fx->c, name, &o));                                       \
    return o;                                                                  \
  }                                                                            \
  static inline void fx_##kind##_closed_cb(T *o) {                             \
    int *flag = P##_get_data(o);                                               \
    *flag = 1;                                                                 \
  }                                                                            \
  static inline void fx_close_##kind(fx_t *fx, T *o) {                         \
    int closed = 0;                                                            \
    P##_set_data(o, &closed);                                                  \
    ASSERT_OK(P##_close(o, fx_##kind##_closed_cb));                            \
    rt_run_until(&fx->loop, &closed, 10000);                                   \
  }                                                                            \
  static inline void fx_close_##kind##s(fx_t *fx, T *const *objs) {            \
    for (; *objs != NULL; objs++)                                              \
      fx_close_##kind(fx, *objs);                                              \
  }                                                                            \
  static inline void fx_finish_##kind##s(fx_t *fx, T *const *objs) {           \
    fx_close_##kind##s(fx, objs);                                              \
    fx_finish(fx);                                                             \
  }

/* fx_lock, fx_lock_closed_cb, fx_close_lock, fx_close_locks, fx_finish_locks. */
FX_OBJECT_KIND(lock, lk_lock_t, lk_lock)

/* Starts an acquire into s (asserts it started), fenced or not; the loop
 * is not run. */
static inline void sx_start_fenced(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, int fenced,
                                   sx_t *s) {
  lk_lock_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_lock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.fenced = fenced;
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, s));
}

static inline void sx_start(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, sx_t *s) {
  sx_start_fenced(l, wait_ms, lease_ms, 0, s);
}

/* Runs loop until the acquire s records (any kind's, started with wait
 * budget wait_ms) calls back, bounded by 15 s past that budget: its status
 * (issue 29: each kind's fixture spelled the bound out). */
static inline int sx_await_acquire(uv_loop_t *loop, sx_t *s, int64_t wait_ms) {
  rt_run_until(loop, &s->done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s->status;
}

static inline int sx_acquire_in(uv_loop_t *loop, lk_lock_t *l, int64_t wait_ms,
                                int64_t lease_ms, sx_t *s) {
  sx_start(l, wait_ms, lease_ms, s);
  return sx_await_acquire(loop, s, wait_ms);
}

static inline int sx_acquire(fx_t *fx, lk_lock_t *l, int64_t wait_ms, int64_t lease_ms) {
  sx_t s;
  return sx_acquire_in(&fx->loop, l, wait_ms, lease_ms, &s);
}

/* Two objects on lock name, two owners of it: *holder takes it at once
 * (lease_ms), *other is left idle, to wait for it or be refused (issue 29:
 * every two-owner case opened with these three lines). */
static inline void fx_lock_holder_and_other(fx_t *fx, const char *name, int64_t lease_ms,
                                            lk_lock_t **holder, lk_lock_t **other) {
  *holder = fx_lock(fx, name);
  *other = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, *holder, 0, lease_ms));
}

/* holder releases while s (an acquire already started) waits: s is
 * granted within run_ms, and no later than bound_ms (liveness: grows by
 * the stalls measured meanwhile) after the release was called; then the
 * release's own reply is awaited. */
static inline void sx_release_wakes(fx_t *fx, lk_lock_t *holder, sx_t *s, int64_t run_ms,
                                    int64_t bound_ms) {
  sx_t r;
  uint64_t released;
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_lock_release(holder, sx_cb, &r));
  released = uv_hrtime();
  rt_run_until(&fx->loop, &s->done, run_ms);
  ASSERT_OK(s->status);
  ASSERT_LT((int64_t)((s->t_ns - released) / 1000000u), rt_stall_bound_since_ns(released, bound_ms));
  rt_run_until(&fx->loop, &r.done, 5000);
}

typedef int (*sx_op_fn)(lk_lock_t *, lk_lock_cb, void *);

/* Runs the loop until s's operation calls back (15 s bound): its status,
 * and its result in *result when not NULL. */
static inline int sx_wait(fx_t *fx, sx_t *s, int64_t *result) {
  rt_run_until(&fx->loop, &s->done, 15000);
  if (result != NULL)
    *result = s->result;
  return s->status;
}

/* Runs release / force_release / a query to completion; *result gets
 * lk_lock_result() when result is not NULL. */
static inline int sx_run(fx_t *fx, sx_op_fn fn, lk_lock_t *l, int64_t *result) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(fn(l, sx_cb, &s));
  return sx_wait(fx, &s, result);
}

/* A guarded operation on l run to its callback, as sx_run. */
static inline int sx_guarded(fx_t *fx, lk_lock_t *l, const lk_guarded_op_t *op, int64_t *result) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_lock_guarded(l, op, sx_cb, &s));
  return sx_wait(fx, &s, result);
}

/* sx_run for a call that may be refused at once: returns the call's own
 * code when it is not 0 (a release after on_lost returns LK_ELEASELOST at
 * once), else the callback's status. For a hold a machine stall may have
 * taken (EXPECT_HOLD). */
static inline int sx_try_run(fx_t *fx, sx_op_fn fn, lk_lock_t *l, int64_t *result) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  int rc = fn(l, sx_cb, &s);
  if (rc != 0)
    return rc;
  rt_run_until(&fx->loop, &s.done, 15000);
  if (result != NULL)
    *result = s.result;
  return s.status;
}

/* Script runs the server has counted (EVALSHA and EVAL calls): what a
 * refused or forked call must not add to (issue 29: each bad-input file
 * counted them with a copy of its own). */
static inline long long fx_script_calls(fx_t *fx) {
  return rt_server_cmd_calls(fx->srv, "evalsha") + rt_server_cmd_calls(fx->srv, "eval");
}

/* Polls a side-channel condition (bounded) while the loop keeps running:
 * for conditions with no callback to await, such as a key expiring on the
 * server or a clean-up the library does in the background. */
/* The bound grows by the machine stalls measured meanwhile (stall.h). */
static inline int fx_wait_key_gone(fx_t *fx, const char *key, int64_t timeout_ms) {
  int64_t mark = rt_stall_mark();
  for (;;) {
    if (rt_cmd_int(fx->srv, "EXISTS %s", key) == 0)
      return 1;
    if (rt_stall_expired(mark, timeout_ms)) {
      rt_stall_print("fx_wait_key_gone", mark);
      return 0;
    }
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
}

/* Runs the loop for ms (unscaled) so background work can happen. */
/* The fencing counter Redisson's layout keeps beside lock NAME (0: none). */
static inline long long fx_token_counter(fx_t *fx, const char *name) {
  char *v = rt_cmd_str(fx->srv, "GET redisson_lock_token:{%s}", name);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

static inline void fx_spin(fx_t *fx, int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

/* Spins the loop until cond holds; fails after ms (scaled). For conditions
 * seen only on the side channel, such as a clean-up command's effect. */
/* The bound grows by the longest machine stall measured meanwhile (stall.h). */
#define FX_EVENTUALLY(fx, cond, ms)                                            \
  do {                                                                         \
    int64_t fx_mark_ = rt_stall_mark();                                        \
    while (!(cond)) {                                                          \
      if (rt_stall_expired(fx_mark_, (ms))) {                                  \
        rt_stall_print("FX_EVENTUALLY", fx_mark_);                             \
        FAIL("not within %lld ms: %s", (long long)(rt_now_ms() - fx_mark_),    \
             #cond);                                                           \
      }                                                                        \
      fx_spin((fx), 2);                                                        \
    }                                                                          \
  } while (0)

/* The slack a watchdog hold leaves to a stalled machine: a renewal goes out
 * a period (lease / 3) after the last one and has the rest of the lease to
 * come back. A stall of the test process or its server longer than that may
 * take the hold for no fault of the library (docs/reliability.md, "Tests on
 * a loaded machine"); tests pass it to EXPECT_HOLD as the slack. */
static inline int64_t fx_renewal_slack(int64_t lease_ms) { return lease_ms - lease_ms / 3; }

/* What must still hold after an excused loss (EXPECT_HOLD returned 0): the
 * holder is told, exactly once (waited for: a liveness bound that grows by
 * measured stalls), and it no longer believes it holds (held_expr is 0).
 * calls is the int its lost callback counts in. */
#define FX_LOSS_TOLD_ONCE(fx, calls, held_expr)                                \
  do {                                                                         \
    rt_run_until(&(fx)->loop, &(calls), 3000);                                 \
    ASSERT_EQ((calls), 1);                                                     \
    ASSERT_EQ((held_expr), 0);                                                 \
  } while (0)

/* A release after an excused loss: LK_ELEASELOST when on_lost came first,
 * or LK_ENOTOWNER when the release reached the server before the loss's
 * timer ran (the deadline passed while the loop was stopped): the same
 * meaning, learned by a round trip (docs/errors.md). */
#define ASSERT_LOSS_CODE(expr)                                                 \
  do {                                                                         \
    int fx_rc_ = (expr);                                                       \
    if (fx_rc_ != LK_ELEASELOST && fx_rc_ != LK_ENOTOWNER)                     \
      FAIL("%s: %s, not a lost hold's code", #expr, lk_err_name(fx_rc_));      \
  } while (0)

/* Spins the loop until the rule last armed on proxy p (rt_proxy_on_reply)
 * has acted on a reply; fails after ms (scaled). */
#define FX_WAIT_RULE_APPLIED(fx, p, ms)                                        \
  FX_EVENTUALLY((fx), rt_proxy_rule_state(p) == RT_PROXY_RULE_APPLIED, (ms))

/* Runs loop until channel has at least n subscribers on srv
 * (rt_server_numsub); fails after 5 s (scaled). */
static inline void rt_wait_subscribers(uv_loop_t *loop, rt_server_t *srv, const char *channel,
                                       long long n) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  long long got;
  while ((got = rt_server_numsub(srv, channel)) < n) {
    if (rt_now_ms() > end)
      FAIL("%s has %lld subscribers, want %lld", channel, got, n);
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

static inline void fx_wait_subscribers(fx_t *fx, const char *channel, long long n) {
  rt_wait_subscribers(&fx->loop, fx->srv, channel, n);
}

/* Loop, server, and a fault proxy in front of it; the fixture's client
 * (options o, whose port is set to the proxy's) goes through the proxy. */
static inline rt_proxy_t *fx_start_proxied(fx_t *fx, lk_client_opts_t *o) {
  rt_proxy_t *p;
  fx_start_server(fx, NULL);
  p = rt_proxy_start(rt_server_port(fx->srv));
  ASSERT_NOT_NULL(p);
  o->port = rt_proxy_port(p);
  fx_start_client(fx, o);
  return p;
}

/* The client timeouts a proxied fault test sets (0: the default). */
typedef struct fx_timeouts_s {
  int64_t reply_ms, connect_ms, reconnect_min_ms, reconnect_max_ms;
} fx_timeouts_t;

/* fx_start_proxied with those timeouts (issue 29: each fault test file had
 * its own start with two to four of them). */
static inline rt_proxy_t *fx_start_proxied_timeouts(fx_t *fx, fx_timeouts_t t) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  if (t.reply_ms > 0)
    o.reply_timeout_ms = t.reply_ms;
  if (t.connect_ms > 0)
    o.connect_timeout_ms = t.connect_ms;
  if (t.reconnect_min_ms > 0)
    o.reconnect_min_ms = t.reconnect_min_ms;
  if (t.reconnect_max_ms > 0)
    o.reconnect_max_ms = t.reconnect_max_ms;
  return fx_start_proxied(fx, &o);
}

/* A second client on the fixture's loop, straight to the server. */
static inline lk_client_t *fx_direct_client(fx_t *fx) {
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  fx_client_opts(fx, &o);
  ASSERT_OK(lk_client_new(&fx->loop, &o, &c));
  return c;
}

static inline void fx_flag_client_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

/* Closes a client made by fx_direct_client (its objects closed first). */
static inline void fx_close_direct_client(fx_t *fx, lk_client_t *c) {
  int closed = 0;
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, fx_flag_client_closed));
  rt_run_until(&fx->loop, &closed, 10000);
}

/* ---- deadline probe ---- */

/* A timer of the test's own, due just after a hold's local deadline. The
 * library's timer for that deadline runs no later, in the same loop pass or
 * an earlier one, so "on_lost came no later than the probe" holds
 * however late a loaded machine runs the loop; how late the probe ran says
 * whether a tighter wall-clock bound may be checked. */
typedef struct fx_probe_s {
  uv_timer_t t;
  uint64_t due_ns;
  uint64_t fired_ns; /* 0 until it ran */
  int closed;
} fx_probe_t;

static inline void fx_probe_fired_cb(uv_timer_t *t) {
  fx_probe_t *pr = (fx_probe_t *)t->data;
  pr->fired_ns = uv_hrtime();
}

/* Due 2 ms after deadline_ns (a monotonic time no earlier than the hold's
 * local deadline): libuv counts whole milliseconds from its cached time, so
 * a library timer armed for the deadline is then never due after the probe
 * and runs in the same loop pass or an earlier one. */
static inline void fx_probe_start(uv_loop_t *loop, fx_probe_t *pr, uint64_t deadline_ns) {
  uint64_t now, due_ns = deadline_ns + 2000000u;
  memset(pr, 0, sizeof(*pr));
  pr->due_ns = due_ns;
  ASSERT_OK(uv_timer_init(loop, &pr->t));
  pr->t.data = pr;
  uv_update_time(loop);
  now = uv_hrtime();
  /* Rounded up: libuv counts whole milliseconds and never fires early. */
  ASSERT_OK(uv_timer_start(&pr->t, fx_probe_fired_cb,
                           due_ns > now ? (due_ns - now + 999999u) / 1000000u : 0, 0));
}

/* How late (ms) the probe ran after its due time; runs the loop until it did
 * (bounded). */
static inline double fx_probe_lateness_ms(uv_loop_t *loop, fx_probe_t *pr) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (pr->fired_ns == 0 && rt_now_ms() < end) {
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
  ASSERT_NE(pr->fired_ns, 0);
  return (double)((int64_t)(pr->fired_ns - pr->due_ns)) / 1e6;
}

static inline void fx_probe_closed_cb(uv_handle_t *h) { ((fx_probe_t *)h->data)->closed = 1; }

static inline void fx_probe_close(uv_loop_t *loop, fx_probe_t *pr) {
  uv_close((uv_handle_t *)&pr->t, fx_probe_closed_cb);
  rt_run_until(loop, &pr->closed, 1000);
}

#endif /* LK_TEST_HARNESS_LK_FIXTURE_H */
