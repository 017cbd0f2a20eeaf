/* Fixtures for MultiLock and RedLock tests: one loop, several real
 * redis-servers, one client per server (a "client set"; a test may open
 * more sets to play other processes), and run-until helpers for the two
 * object types. Header-only (static inline), like lk_fixture.h. */
#ifndef LK_TEST_HARNESS_MULTI_FIXTURE_H
#define LK_TEST_HARNESS_MULTI_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"

#define MFX_MAX 8

typedef struct mfx_s {
  uv_loop_t loop;
  int n;
  rt_server_t *srv[MFX_MAX];
  lk_client_t *c[MFX_MAX]; /* the default client set */
} mfx_t;

/* One operation's outcome. */
typedef struct mx_s {
  int done;
  int calls;
  int status;
  uint64_t t_ns;
  int64_t validity_ms; /* RedLock: validity read inside the callback */
  int64_t token;
  int held; /* is_held read inside the callback */
} mx_t;

/* Records an operation's answer in arg (an mx_t), checking that it is the
 * only one; the callback then reads what its kind tells. */
static inline mx_t *mx_answered(void *arg, int status) {
  mx_t *s = arg;
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
  s->t_ns = uv_hrtime();
  return s;
}

static inline void mx_ml_cb(lk_multilock_t *ml, int status, void *arg) {
  mx_answered(arg, status)->held = lk_multilock_is_held(ml);
}

static inline void mx_rl_cb(lk_redlock_t *rl, int status, void *arg) {
  mx_t *s = mx_answered(arg, status);
  s->validity_ms = lk_redlock_validity_ms(rl);
  s->token = lk_redlock_token(rl);
  s->held = lk_redlock_is_held(rl);
}

/* Spins the loop until *flag, bounded (scaled). */
#define mfx_run_until(m, flag, ms) rt_run_until(&(m)->loop, (flag), (ms))

/* Client options for server i (the caller may adjust them). */
static inline void mfx_client_opts(mfx_t *m, int i, lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->port = rt_server_port(m->srv[i]);
}

/* Runs the loop until every client of the set has connected (bounded). */
static inline void mfx_wait_connected(mfx_t *m, lk_client_t **set) {
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  int i;
  for (i = 0; i < m->n; i++)
    while (!lk_client_is_connected(set[i])) {
      if (rt_now_ms() > end)
        FAIL("client %d did not connect", i);
      uv_run(&m->loop, UV_RUN_NOWAIT);
      rt_sleep_ms(1);
    }
}

/* Opens a client set (one client per server) with default options and
 * default_lease_ms = lease_ms when > 0, and waits until it is connected
 * (so a short node timeout does not count connecting). */
static inline void mfx_clients(mfx_t *m, lk_client_t **out, int64_t lease_ms) {
  int i;
  for (i = 0; i < m->n; i++) {
    lk_client_opts_t o;
    mfx_client_opts(m, i, &o);
    if (lease_ms > 0)
      o.default_lease_ms = lease_ms;
    ASSERT_OK(lk_client_new(&m->loop, &o, &out[i]));
  }
  mfx_wait_connected(m, out);
}

/* n servers started with so (NULL: defaults), and the default client set. */
static inline void mfx_start_lease(mfx_t *m, int n, const rt_server_opts_t *so,
                                   int64_t lease_ms) {
  int i;
  memset(m, 0, sizeof(*m));
  ASSERT(n > 0 && n <= MFX_MAX);
  ASSERT_OK(uv_loop_init(&m->loop));
  m->n = n;
  for (i = 0; i < n; i++) {
    m->srv[i] = rt_server_start(so);
    ASSERT_NOT_NULL(m->srv[i]);
  }
  mfx_clients(m, m->c, lease_ms);
}

static inline void mfx_start(mfx_t *m, int n, const rt_server_opts_t *so) {
  mfx_start_lease(m, n, so, 0);
}

typedef struct mfx_closing_s {
  int left;
  int done;
} mfx_closing_t;

static inline void mfx_on_client_closed(lk_client_t *c) {
  mfx_closing_t *k = lk_client_get_data(c);
  if (--k->left == 0)
    k->done = 1;
}

/* Closes a client set (its objects must be closed). */
static inline void mfx_close_set(mfx_t *m, lk_client_t **set) {
  mfx_closing_t k = {0, 0};
  int i;
  for (i = 0; i < m->n; i++)
    if (set[i] != NULL)
      k.left++;
  if (k.left == 0)
    return;
  for (i = 0; i < m->n; i++) {
    if (set[i] == NULL)
      continue;
    lk_client_set_data(set[i], &k);
    ASSERT_OK(lk_client_close(set[i], mfx_on_client_closed));
    set[i] = NULL;
  }
  mfx_run_until(m, &k.done, 10000);
}

static inline void mfx_close_client(mfx_t *m, lk_client_t *c) {
  mfx_closing_t k = {1, 0};
  lk_client_set_data(c, &k);
  ASSERT_OK(lk_client_close(c, mfx_on_client_closed));
  mfx_run_until(m, &k.done, 10000);
}

static inline void mfx_finish(mfx_t *m) {
  int i;
  mfx_close_set(m, m->c);
  rt_loop_close_clean(&m->loop);
  for (i = 0; i < m->n; i++) {
    rt_server_stop(m->srv[i]);
    m->srv[i] = NULL;
  }
}

/* ---- MultiLock helpers ---- */

/* Each helper runs on a loop: the _in form takes it, for the MultiLocks and
 * RedLocks of other fixtures (test/cluster/); the plain form is mfx_t's. */
static inline int mx_ml_acquire_in(uv_loop_t *loop, lk_multilock_t *ml, int64_t wait_ms,
                                   int64_t lease_ms, mx_t *s) {
  lk_multilock_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_multilock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  ASSERT_OK(lk_multilock_acquire(ml, &o, mx_ml_cb, s));
  rt_run_until(loop, &s->done, 15000 + (wait_ms > 0 ? wait_ms : 0));
  return s->status;
}

static inline int mx_ml_acquire(mfx_t *m, lk_multilock_t *ml, int64_t wait_ms,
                                int64_t lease_ms, mx_t *s) {
  return mx_ml_acquire_in(&m->loop, ml, wait_ms, lease_ms, s);
}

static inline int mx_ml_release_in(uv_loop_t *loop, lk_multilock_t *ml) {
  mx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_multilock_release(ml, mx_ml_cb, &s));
  rt_run_until(loop, &s.done, 15000);
  return s.status;
}

static inline int mx_ml_release(mfx_t *m, lk_multilock_t *ml) {
  return mx_ml_release_in(&m->loop, ml);
}

static inline void mx_ml_closed(lk_multilock_t *ml) {
  int *flag = lk_multilock_get_data(ml);
  *flag = 1;
}

static inline void mx_ml_close_in(uv_loop_t *loop, lk_multilock_t *ml) {
  int closed = 0;
  lk_multilock_set_data(ml, &closed);
  ASSERT_OK(lk_multilock_close(ml, mx_ml_closed));
  rt_run_until(loop, &closed, 10000);
}

static inline void mx_ml_close(mfx_t *m, lk_multilock_t *ml) { mx_ml_close_in(&m->loop, ml); }

static inline void mx_lock_close(mfx_t *m, lk_lock_t *l) {
  int closed = 0;
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, fx_lock_closed_cb));
  mfx_run_until(m, &closed, 10000);
}

/* ---- RedLock helpers ---- */

static inline int mx_rl_acquire_opts_in(uv_loop_t *loop, lk_redlock_t *rl,
                                        const lk_redlock_opts_t *o, mx_t *s) {
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_redlock_acquire(rl, o, mx_rl_cb, s));
  rt_run_until(loop, &s->done, 15000 + (o->wait_ms > 0 ? o->wait_ms : 0));
  return s->status;
}

static inline int mx_rl_acquire_opts(mfx_t *m, lk_redlock_t *rl, const lk_redlock_opts_t *o,
                                     mx_t *s) {
  return mx_rl_acquire_opts_in(&m->loop, rl, o, s);
}

/* With a node timeout of 300 ms scaled: loaded CI machines answer slower
 * than a short lease's default (lease / 20). */
static inline int mx_rl_acquire(mfx_t *m, lk_redlock_t *rl, int64_t wait_ms,
                                int64_t lease_ms, mx_t *s) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = lease_ms;
  o.node_timeout_ms = rt_scaled_ms(300);
  return mx_rl_acquire_opts(m, rl, &o, s);
}

/* Runs the loop until every master asked by the last attempt has answered
 * (none still LK_EUNKNOWN), bounded. */
static inline void mx_rl_settle(mfx_t *m, lk_redlock_t *rl) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  size_t i;
  for (i = 0; i < lk_redlock_size(rl); i++)
    while (lk_redlock_node_status(rl, i) == LK_EUNKNOWN) {
      if (rt_now_ms() > end)
        FAIL("master %zu never answered", i);
      uv_run(&m->loop, UV_RUN_NOWAIT);
    }
}

static inline int mx_rl_release_in(uv_loop_t *loop, lk_redlock_t *rl) {
  mx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_release(rl, mx_rl_cb, &s));
  rt_run_until(loop, &s.done, 15000);
  return s.status;
}

static inline int mx_rl_release(mfx_t *m, lk_redlock_t *rl) {
  return mx_rl_release_in(&m->loop, rl);
}

static inline void mx_rl_closed(lk_redlock_t *rl) {
  int *flag = lk_redlock_get_data(rl);
  *flag = 1;
}

static inline void mx_rl_close_in(uv_loop_t *loop, lk_redlock_t *rl) {
  int closed = 0;
  lk_redlock_set_data(rl, &closed);
  ASSERT_OK(lk_redlock_close(rl, mx_rl_closed));
  rt_run_until(loop, &closed, 10000);
}

static inline void mx_rl_close(mfx_t *m, lk_redlock_t *rl) { mx_rl_close_in(&m->loop, rl); }

/* A RedLock test's ending: closes the RedLocks (NULL-terminated, in
 * order), then the second client set (NULL: none), then the fixture. */
static inline void mfx_finish_rls(mfx_t *m, lk_redlock_t *const *rls, lk_client_t **set) {
  for (; *rls != NULL; rls++)
    mx_rl_close(m, *rls);
  if (set != NULL)
    mfx_close_set(m, set);
  mfx_finish(m);
}

static inline lk_redlock_t *mx_rl_new(mfx_t *m, lk_client_t **set, const char *name,
                                      const lk_redlock_config_t *cfg) {
  lk_redlock_t *rl = NULL;
  ASSERT_OK(lk_redlock_new(set, (size_t)m->n, name, cfg, &rl));
  return rl;
}

/* The hold count server i has for owner (0 when none). */
static inline long long mx_holds(mfx_t *m, int i, const char *name, const char *owner) {
  char *v = rt_cmd_str(m->srv[i], "HGET %s %s", name, owner);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* The RedLock's holds on master i (its node lock's owner there). */
static inline long long mx_rl_holds_on(mfx_t *m, lk_redlock_t *rl, int i) {
  return mx_holds(m, i, lk_redlock_name(rl), lk_lock_owner(lk_redlock_node_lock(rl, (size_t)i)));
}

/* Polls master i while the loop runs until the RedLock's hold count there
 * is want, for what settles in the background: a late answer given back,
 * or a command sent to a paused master, which a loaded machine may run
 * after the test's read on another connection. Bounded; the bound grows
 * with measured stalls. 1 when it got there. */
static inline int mx_rl_holds_settle_on(mfx_t *m, lk_redlock_t *rl, int i, long long want) {
  int64_t mark = rt_stall_mark();
  while (mx_rl_holds_on(m, rl, i) != want && !rt_stall_expired(mark, 5000)) {
    uv_run(&m->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
  return mx_rl_holds_on(m, rl, i) == want;
}

/* How many masters hold name for the RedLock's owners. */
static inline int mx_rl_holding(mfx_t *m, lk_redlock_t *rl) {
  int i, k = 0;
  for (i = 0; i < m->n; i++)
    if (mx_rl_holds_on(m, rl, i) > 0)
      k++;
  return k;
}

/* Puts a foreign holder on server i (a Redisson-shaped hold, lease ms). */
static inline void mx_clog(mfx_t *m, int i, const char *name, int64_t lease_ms) {
  redisReply *r = rt_cmd(m->srv[i], "HSET %s 11111111-2222-4333-8444-555555555555:1 1", name);
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  ASSERT_EQ(rt_cmd_int(m->srv[i], "PEXPIRE %s %lld", name, (long long)lease_ms), 1);
}

static inline void mx_unclog(mfx_t *m, int i, const char *name) {
  redisReply *r = rt_cmd(m->srv[i], "DEL %s", name);
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
}

/* Runs a lock operation (release, query...) to completion. */
static inline int mx_lock_run(mfx_t *m, sx_op_fn fn, lk_lock_t *l) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(fn(l, sx_cb, &s));
  mfx_run_until(m, &s.done, 15000);
  return s.status;
}

/* Polls server i (bounded, scaled) while the loop runs until key exists
 * (want 1) or not (want 0), for background work that has no callback to
 * await. 1 when it did. */
static inline int mfx_wait_key(mfx_t *m, int i, const char *key, int want, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (rt_now_ms() < end) {
    if (rt_cmd_int(m->srv[i], "EXISTS %s", key) == want)
      return 1;
    uv_run(&m->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
  return 0;
}

static inline int mfx_wait_key_gone(mfx_t *m, int i, const char *key, int64_t timeout_ms) {
  return mfx_wait_key(m, i, key, 0, timeout_ms);
}

/* Spins the loop (no callback to await) for ms, unscaled. */
static inline void mfx_spin(mfx_t *m, int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    uv_run(&m->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

#endif /* LK_TEST_HARNESS_MULTI_FIXTURE_H */
