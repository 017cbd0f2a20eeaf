/* Log levels (docs/client.md, "Logging"): an event the program is told of
 * through a callback (on_lost, the event callback, an operation's status)
 * is logged below LK_LOG_WARN; without the callback it is a warning. The
 * levels are counted with a log callback. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi_fixture.h"

/* ---- capture ---------------------------------------------------------------------------- */

#define CAP_LINES 256

typedef struct {
  int n[4]; /* by lk_log_level_t */
  int lines;
  int level[CAP_LINES];
  char text[CAP_LINES][200];
} logcap_t;

static void on_log(lk_log_level_t level, const char *msg, void *arg) {
  logcap_t *cap = arg;
  if ((int)level >= 0 && (int)level < 4)
    cap->n[level]++;
  if (cap->lines < CAP_LINES) {
    cap->level[cap->lines] = (int)level;
    snprintf(cap->text[cap->lines], sizeof cap->text[0], "%s", msg);
    cap->lines++;
  }
}

/* Lines at `level` containing `part`. */
static int count(const logcap_t *cap, lk_log_level_t level, const char *part) {
  int i, k = 0;
  for (i = 0; i < cap->lines; i++)
    if (cap->level[i] == (int)level && strstr(cap->text[i], part) != NULL)
      k++;
  return k;
}

/* No warning or error, or the test fails naming them. */
static void assert_quiet(const logcap_t *cap) {
  int i;
  if (cap->n[LK_LOG_WARN] + cap->n[LK_LOG_ERROR] == 0)
    return;
  for (i = 0; i < cap->lines; i++)
    if (cap->level[i] >= LK_LOG_WARN)
      fprintf(stderr, "logged at level %d: %s\n", cap->level[i], cap->text[i]);
  FAIL("%d warning(s), %d error(s) with every callback set", cap->n[LK_LOG_WARN],
       cap->n[LK_LOG_ERROR]);
}

static int g_events;
static void on_event(lk_client_t *c, lk_event_t ev, void *arg) {
  (void)c;
  (void)ev;
  (void)arg;
  g_events++;
}

/* The fixture's client logs into cap, renews leases of lease_ms, and has
 * an event callback when `events`. */
static void start_logged(fx_t *fx, logcap_t *cap, int64_t lease_ms, int events) {
  lk_client_opts_t o;
  memset(cap, 0, sizeof *cap);
  g_events = 0;
  lk_client_opts_init(&o);
  o.log = on_log;
  o.log_arg = cap;
  o.default_lease_ms = lease_ms;
  if (events)
    o.on_event = on_event;
  fx_start_with(fx, NULL, &o);
}

/* ---- lost leases ---------------------------------------------------------------------------- */

typedef struct {
  int calls;
  int status;
} rec_t;

#define REC_CB(fn, T)                                                                    \
  static void fn(T *o, int status, void *arg) {                                          \
    rec_t *r = arg;                                                                      \
    (void)o;                                                                             \
    r->calls++;                                                                          \
    r->status = status;                                                                  \
  }
REC_CB(lock_cb, lk_lock_t)
REC_CB(fair_cb, lk_fair_t)
REC_CB(rw_cb, lk_rwlock_t)
REC_CB(ml_cb, lk_multilock_t)

enum { K_LOCK, K_FAIR, K_RW, K_ML };

typedef struct {
  int kind;
  lk_lock_t *lock, *member[2];
  lk_fair_t *fair;
  lk_rwlock_t *rw;
  lk_multilock_t *ml;
} holder_t;

static int g_closed;
#define CLOSED_CB(fn, T)                                                                 \
  static void fn(T *o) {                                                                 \
    (void)o;                                                                             \
    g_closed++;                                                                          \
  }
CLOSED_CB(lock_closed, lk_lock_t)
CLOSED_CB(fair_closed, lk_fair_t)
CLOSED_CB(rw_closed, lk_rwlock_t)
CLOSED_CB(ml_closed, lk_multilock_t)

/* Takes a watchdog-renewed hold on `name` with an object of `kind` (a
 * MultiLock: over name and name-2), with on_lost set when lost != NULL. */
static void take(fx_t *fx, holder_t *h, int kind, const char *name, rec_t *lost) {
  rec_t r = {0, 0};
  char second[64];
  memset(h, 0, sizeof *h);
  h->kind = kind;
  switch (kind) {
  case K_LOCK:
    ASSERT_OK(lk_lock_new(fx->c, name, &h->lock));
    if (lost != NULL)
      ASSERT_OK(lk_lock_set_lost_cb(h->lock, lock_cb, lost));
    ASSERT_OK(lk_lock_acquire(h->lock, NULL, lock_cb, &r));
    break;
  case K_FAIR:
    ASSERT_OK(lk_fair_new(fx->c, name, &h->fair));
    if (lost != NULL)
      ASSERT_OK(lk_fair_set_lost_cb(h->fair, fair_cb, lost));
    ASSERT_OK(lk_fair_acquire(h->fair, NULL, fair_cb, &r));
    break;
  case K_RW:
    ASSERT_OK(lk_rwlock_new(fx->c, name, &h->rw));
    if (lost != NULL)
      ASSERT_OK(lk_rwlock_set_lost_cb(h->rw, rw_cb, lost));
    ASSERT_OK(lk_rwlock_acquire(h->rw, LK_RW_WRITE, NULL, rw_cb, &r));
    break;
  default:
    snprintf(second, sizeof second, "%s-2", name);
    ASSERT_OK(lk_lock_new(fx->c, name, &h->member[0]));
    ASSERT_OK(lk_lock_new(fx->c, second, &h->member[1]));
    ASSERT_OK(lk_multilock_new(h->member, 2, &h->ml));
    if (lost != NULL)
      ASSERT_OK(lk_multilock_set_lost_cb(h->ml, ml_cb, lost));
    ASSERT_OK(lk_multilock_acquire(h->ml, NULL, ml_cb, &r));
    break;
  }
  rt_run_until(&fx->loop, &r.calls, 10000);
  ASSERT_OK(r.status);
}

static void drop(fx_t *fx, holder_t *h) {
  g_closed = 0;
  switch (h->kind) {
  case K_LOCK:
    ASSERT_OK(lk_lock_close(h->lock, lock_closed));
    break;
  case K_FAIR:
    ASSERT_OK(lk_fair_close(h->fair, fair_closed));
    break;
  case K_RW:
    ASSERT_OK(lk_rwlock_close(h->rw, rw_closed));
    break;
  default:
    ASSERT_OK(lk_multilock_close(h->ml, ml_closed));
    rt_run_until(&fx->loop, &g_closed, 10000);
    g_closed = 0;
    ASSERT_OK(lk_lock_close(h->member[0], lock_closed));
    ASSERT_OK(lk_lock_close(h->member[1], lock_closed));
    FX_EVENTUALLY(fx, g_closed == 2, 10000);
    return;
  }
  rt_run_until(&fx->loop, &g_closed, 10000);
}

/* The hold's key is deleted on the server: the next renewal finds it gone
 * and the object loses its hold (on_lost, when set). Returns once the loss
 * was counted. */
static void lose(fx_t *fx, const char *name) {
  lk_client_stats_t st;
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  freeReplyObject(rt_cmd(fx->srv, "DEL %s", name));
  for (;;) {
    lk_client_get_stats(fx->c, &st);
    if (st.leases_lost > 0)
      return;
    if (rt_now_ms() > end)
      FAIL("the hold on %s was never found lost", name);
    fx_spin(fx, 2);
  }
}

static void lost_with_on_lost_is_quiet(int kind, const char *name) {
  fx_t fx;
  logcap_t cap;
  holder_t h;
  rec_t lost = {0, 0};
  start_logged(&fx, &cap, rt_scaled_ms(600), 1);
  take(&fx, &h, kind, name, &lost);
  lose(&fx, name);
  rt_run_until(&fx.loop, &lost.calls, 5000);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  assert_quiet(&cap);
  ASSERT_GE(count(&cap, LK_LOG_INFO, "lease lost"), 1);
  drop(&fx, &h);
  assert_quiet(&cap);
  fx_finish(&fx);
}

static void lost_without_on_lost_warns(int kind, const char *name, const char *line) {
  fx_t fx;
  logcap_t cap;
  holder_t h;
  start_logged(&fx, &cap, rt_scaled_ms(600), 1);
  take(&fx, &h, kind, name, NULL);
  lose(&fx, name);
  /* Logged as the loss is counted. */
  ASSERT_EQ(count(&cap, LK_LOG_WARN, line), 1);
  ASSERT_EQ(cap.n[LK_LOG_WARN], 1);
  ASSERT_EQ(cap.n[LK_LOG_ERROR], 0);
  drop(&fx, &h);
  fx_finish(&fx);
}

TEST(lock_lost_with_on_lost_logs_no_warning) { lost_with_on_lost_is_quiet(K_LOCK, "lg:lock"); }
TEST(fair_lost_with_on_lost_logs_no_warning) { lost_with_on_lost_is_quiet(K_FAIR, "lg:fair"); }
TEST(rwlock_lost_with_on_lost_logs_no_warning) { lost_with_on_lost_is_quiet(K_RW, "lg:rw"); }
TEST(multilock_member_lost_with_on_lost_logs_no_warning) {
  lost_with_on_lost_is_quiet(K_ML, "lg:ml");
}

TEST(lock_lost_without_on_lost_warns) {
  lost_without_on_lost_warns(K_LOCK, "lg:lock-w", "lease lost on a held lock");
}
TEST(multilock_lost_without_on_lost_warns_once) {
  /* The member says INFO (its group reports); the group warns. */
  lost_without_on_lost_warns(K_ML, "lg:ml-w", "lease lost on a MultiLock member");
}

/* ---- connection events ---------------------------------------------------------------------- */

/* The server restarts; a lock taken with a budget drives the reconnect (a
 * lost connection, then the handshake that finds the new run_id). */
static void restart_and_reconnect(fx_t *fx) {
  lk_lock_t *l;
  FX_EVENTUALLY(fx, lk_client_is_connected(fx->c), 5000);
  ASSERT_OK(rt_server_restart(fx->srv));
  l = fx_lock(fx, "lg:probe");
  ASSERT_OK(sx_acquire(fx, l, rt_scaled_ms(5000), 5000));
  ASSERT_OK(sx_run(fx, lk_lock_release, l, NULL));
  fx_close_lock(fx, l);
}

TEST(server_restart_with_event_callback_logs_no_warning) {
  fx_t fx;
  logcap_t cap;
  start_logged(&fx, &cap, 30000, 1);
  restart_and_reconnect(&fx);
  ASSERT_GE(count(&cap, LK_LOG_INFO, "server restarted"), 1);
  assert_quiet(&cap);
  fx_finish(&fx);
}

TEST(server_restart_without_event_callback_warns) {
  fx_t fx;
  logcap_t cap;
  start_logged(&fx, &cap, 30000, 0);
  restart_and_reconnect(&fx);
  ASSERT_GE(count(&cap, LK_LOG_WARN, "server restarted"), 1);
  ASSERT_GE(count(&cap, LK_LOG_WARN, "command connection lost"), 1);
  fx_finish(&fx);
}

/* ---- a RedLock master back with its fencing counter set back -------------------------------- */

/* A fenced RedLock over three masters; master 0 restarts and comes back
 * with its counter set back (an old backup). It sits out its quarantine;
 * afterwards its node refuses the regressed token (LK_ETOKEN) and the other
 * two make the quorum. Expected under quarantine: with the event callback
 * set nothing of it is a warning. */
TEST(redlock_token_regression_after_restart_logs_no_warning) {
  mfx_t m;
  logcap_t cap;
  lk_redlock_t *rl;
  lk_redlock_config_t cfg;
  lk_redlock_opts_t o;
  mx_t s;
  int i;
  int64_t end;
  memset(&m, 0, sizeof m);
  memset(&cap, 0, sizeof cap);
  ASSERT_OK(uv_loop_init(&m.loop));
  m.n = 3;
  for (i = 0; i < m.n; i++) {
    lk_client_opts_t co;
    m.srv[i] = rt_server_start(NULL);
    ASSERT_NOT_NULL(m.srv[i]);
    mfx_client_opts(&m, i, &co);
    co.log = on_log;
    co.log_arg = &cap;
    co.on_event = on_event;
    ASSERT_OK(lk_client_new(&m.loop, &co, &m.c[i]));
  }
  mfx_wait_connected(&m, m.c);
  lk_redlock_config_init(&cfg);
  cfg.quarantine_ms = rt_scaled_ms(500);
  ASSERT_OK(lk_redlock_new(m.c, 3, "lg:rl", &cfg, &rl));
  lk_redlock_opts_init(&o);
  o.fenced = 1;
  o.lease_ms = 10000;
  o.node_timeout_ms = rt_scaled_ms(300);
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  mx_rl_settle(&m, rl);
  ASSERT_OK(mx_rl_release(&m, rl));

  ASSERT_OK(rt_server_restart(m.srv[0]));
  freeReplyObject(rt_cmd(m.srv[0], "SET redisson_lock_token:{lg:rl} 1"));
  /* Master 0's client sees the restart when it reconnects; the quarantine
   * runs from then. */
  end = rt_now_ms() + rt_scaled_ms(10000);
  while (lk_redlock_node_quarantined(rl, 0) == 0) {
    ASSERT_LT(rt_now_ms(), end);
    mfx_spin(&m, 5);
  }
  while (lk_redlock_node_quarantined(rl, 0) != 0) {
    ASSERT_LT(rt_now_ms(), end);
    mfx_spin(&m, 5);
  }
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  mx_rl_settle(&m, rl);
  ASSERT_EQ(lk_redlock_node_status(rl, 0), LK_ETOKEN);
  ASSERT_GE(count(&cap, LK_LOG_INFO, "fencing token went backwards"), 1);
  ASSERT_GE(count(&cap, LK_LOG_INFO, "server restarted"), 1);
  assert_quiet(&cap);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_close(&m, rl);
  assert_quiet(&cap);
  mfx_finish(&m);
}
