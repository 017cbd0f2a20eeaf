/* The client against a real server: connection events, refused connects,
 * AUTH and ACL, SELECT, NOSCRIPT after SCRIPT FLUSH, reply timeouts and
 * reconnects, server restarts, the in-flight cap, unix sockets, and closing
 * with work in flight (docs/client.md, docs/objects.md). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "never_cb.h"

/* ---- helpers ------------------------------------------------------------------ */

typedef struct {
  int n;
  lk_event_t ev[64];
  int count[8]; /* by lk_event_t value */
} evlog_t;

static void on_event(lk_client_t *c, lk_event_t e, void *arg) {
  evlog_t *log = arg;
  (void)c;
  if (log->n < 64)
    log->ev[log->n++] = e;
  if ((int)e >= 0 && (int)e < 8)
    log->count[e]++;
}

/* Loop and (optionally) a server; the client comes from the caller's opts. */
static void setup(fx_t *fx, const rt_server_opts_t *so, int with_server) {
  memset(fx, 0, sizeof *fx);
  ASSERT_OK(uv_loop_init(&fx->loop));
  if (with_server) {
    fx->srv = rt_server_start(so);
    ASSERT_NOT_NULL(fx->srv);
  }
}

static void opts_for(fx_t *fx, lk_client_opts_t *o, evlog_t *log) {
  lk_client_opts_init(o);
  if (fx->srv != NULL)
    o->port = rt_server_port(fx->srv);
  if (log != NULL) {
    memset(log, 0, sizeof *log);
    o->on_event = on_event;
    o->event_arg = log;
  }
}

/* Loop and a server (so NULL: default options), and client options o for
 * it whose events go into log: the case sets what it tests in o, then
 * starts the client (fx_start_client). */
static void start_server_for_logged_opts(fx_t *fx, const rt_server_opts_t *so,
                                         lk_client_opts_t *o, evlog_t *log) {
  setup(fx, so, 1);
  opts_for(fx, o, log);
}

static int64_t ms_since(uint64_t t0_ns) { return (int64_t)((uv_hrtime() - t0_ns) / 1000000u); }

/* An outcome with the server error text copied inside the callback (it is
 * borrowed), and an order stamp. */
static int g_seq;
typedef struct {
  int done;
  int calls;
  int status;
  int seq;
  uint32_t holds;
  char errtext[256];
} op_t;

static void op_cb(lk_lock_t *l, int status, void *arg) {
  op_t *o = arg;
  o->calls++;
  ASSERT_EQ(o->calls, 1);
  o->done = 1;
  o->status = status;
  o->seq = ++g_seq;
  o->holds = lk_lock_hold_count(l);
  snprintf(o->errtext, sizeof o->errtext, "%s", lk_lock_error_text(l));
}

static int acquire_op(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, op_t *o) {
  lk_lock_opts_t lo;
  memset(o, 0, sizeof *o);
  lk_lock_opts_init(&lo);
  lo.wait_ms = wait_ms;
  lo.lease_ms = lease_ms;
  return lk_lock_acquire(l, &lo, op_cb, o);
}

/* acquire_op, then the loop run until its callback (bounded by run_ms):
 * how long that took, in ms. */
static int64_t acquire_op_timed(fx_t *fx, lk_lock_t *l, int64_t wait_ms, int64_t lease_ms,
                                op_t *o, int64_t run_ms) {
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(acquire_op(l, wait_ms, lease_ms, o));
  rt_run_until(&fx->loop, &o->done, run_ms);
  return ms_since(t0);
}

/* A lock's close, counted and stamped in the order of callbacks. */
typedef struct {
  int closed;
  int seq;
} close_rec_t;

static void close_rec_note(close_rec_t *r) {
  r->closed++;
  r->seq = ++g_seq;
}

/* A close callback for a lock whose data is its close_rec_t. */
static void rec_close_cb(lk_lock_t *l) { close_rec_note(lk_lock_get_data(l)); }

/* Polls the server (bounded) while the loop keeps running, for a condition
 * with no callback to await: a waiter's subscription being in place. */
static void wait_numsub(fx_t *fx, const char *channel, long long want, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  for (;;) {
    if (rt_server_numsub(fx->srv, channel) == want)
      return;
    if (rt_now_ms() > end)
      FAIL("channel %s never had %lld subscribers", channel, want);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
}

static long long server_holds(rt_server_t *s, const char *key, const char *owner) {
  char *v = rt_cmd_str(s, "HGET %s %s", key, owner);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* How a case ends whose lock holds once: the release goes through and
 * leaves no key; then the lock and the client close, running no callback
 * that must never run. */
static void release_and_finish(fx_t *fx, lk_lock_t *l) {
  ASSERT_OK(sx_run(fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", lk_lock_name(l)), 0);
  rt_never_finish_locks(fx, (lk_lock_t *[]){l, NULL});
}

/* ---- connect events ------------------------------------------------------------------ */

TEST(connect_event_once) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  start_server_for_logged_opts(&fx, NULL, &o, &log);
  fx_start_client(&fx, &o);
  ASSERT_EQ(lk_client_is_connected(fx.c), 0); /* never ready inside lk_client_new */
  ASSERT_EQ(log.n, 0);                        /* and no event from inside it */
  rt_run_until(&fx.loop, &log.count[LK_EVENT_CONNECTED], 10000);
  ASSERT_EQ(lk_client_is_connected(fx.c), 1);
  /* Work on the connection does not announce it again. */
  l = fx_lock(&fx, "ev");
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, l, NULL));
  fx_close_lock(&fx, l);
  ASSERT_EQ(log.count[LK_EVENT_CONNECTED], 1);
  ASSERT_EQ(log.n, 1);
  ASSERT_EQ(log.ev[0], LK_EVENT_CONNECTED);
  rt_never_finish(&fx);
  ASSERT_EQ(log.n, 1); /* none while closing either */
}

/* ---- refused connect ------------------------------------------------------------------- */

/* A loop with no server, and a client (events into log) whose port refuses
 * connections: its lock named "refused". */
static lk_lock_t *start_refused_client(fx_t *fx, evlog_t *log, int port) {
  lk_client_opts_t o;
  ASSERT_GT(port, 0);
  setup(fx, NULL, 0);
  opts_for(fx, &o, log);
  o.port = port;
  fx_start_client(fx, &o);
  return fx_lock(fx, "refused");
}

TEST(refused_connect_wait0_fails_fast) {
  fx_t fx;
  evlog_t log;
  op_t a;
  /* Free a moment ago: nothing listens there. */
  lk_lock_t *l = start_refused_client(&fx, &log, rt_pick_port());
  int64_t ms = acquire_op_timed(&fx, l, 0, 10000, &a, 10000);
  ASSERT_EQ(a.status, LK_ECONN);
  ASSERT_EQ(a.holds, 0);
  if (ms > rt_scaled_ms(1000))
    FAIL("refused connect took %lld ms to fail a try-once acquire", (long long)ms);
  /* Again while the client backs off: it fails at the next attempt, bounded
   * by the backoff cap (default 2000 ms). */
  ms = acquire_op_timed(&fx, l, 0, 10000, &a, 10000);
  ASSERT_EQ(a.status, LK_ECONN);
  if (ms > rt_scaled_ms(2000 + 1000))
    FAIL("second try-once acquire took %lld ms to fail", (long long)ms);
  ASSERT_EQ(log.n, 0); /* never connected, never suspended */
  ASSERT_EQ(lk_client_is_connected(fx.c), 0);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(refused_connect_wait_budget_is_bounded) {
  fx_t fx;
  evlog_t log;
  op_t a;
  /* The port of a server that was just stopped. */
  rt_server_t *gone = rt_server_start(NULL);
  ASSERT_NOT_NULL(gone);
  int port = rt_server_port(gone);
  rt_server_stop(gone);
  lk_lock_t *l = start_refused_client(&fx, &log, port);
  int64_t ms = acquire_op_timed(&fx, l, 1500, 10000, &a, 15000);
  /* A budgeted wait ends LK_ETIMEDOUT (docs/errors.md); LK_ECONN is a
   * single try's. */
  if (a.status != LK_ETIMEDOUT)
    FAIL("acquire ended with %s, want LK_ETIMEDOUT", lk_err_name(a.status));
  /* Transient trouble is ridden out until the budget is spent (never
   * earlier), and the end is bounded: budget + a quarter of the reply
   * timeout of grace + margin. */
  if (ms < 1495)
    FAIL("gave up after %lld ms, before the 1500 ms budget", (long long)ms);
  if (ms > rt_scaled_ms(1500 + 3000 / 4 + 1000))
    FAIL("acquire with a 1500 ms budget took %lld ms", (long long)ms);
  ASSERT_EQ(a.holds, 0);
  ASSERT_EQ(log.n, 0);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- AUTH and ACL ---------------------------------------------------------------------- */

#define PW "s3cret-pw"

TEST(auth_right_password) {
  fx_t fx;
  rt_server_opts_t so;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  rt_server_opts_init(&so);
  so.requirepass = PW;
  start_server_for_logged_opts(&fx, &so, &o, &log);
  o.password = PW;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "authed");
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000));
  ASSERT_EQ(server_holds(fx.srv, "authed", lk_lock_owner(l)), 1);
  ASSERT_EQ(log.count[LK_EVENT_CONNECTED], 1);
  release_and_finish(&fx, l);
}

/* A server that requires PW, and a client giving password (NULL: none):
 * its acquire ends LK_EAUTH holding nothing, the client never counts as
 * connected, and nothing was written. */
static void auth_refused(const char *password) {
  fx_t fx;
  rt_server_opts_t so;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  op_t a;
  rt_server_opts_init(&so);
  so.requirepass = PW;
  start_server_for_logged_opts(&fx, &so, &o, &log);
  if (password != NULL)
    o.password = password;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "authed");
  acquire_op_timed(&fx, l, 0, 10000, &a, 10000);
  ASSERT_EQ(a.status, LK_EAUTH);
  ASSERT_EQ(a.holds, 0);
  ASSERT_EQ(log.count[LK_EVENT_CONNECTED], 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS authed"), 0);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(auth_wrong_password) { auth_refused("not-the-password"); }

TEST(auth_no_password) { auth_refused(NULL); }

TEST(acl_user_without_scripts_gets_enoperm) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  op_t a;
  char *ok;
  setup(&fx, NULL, 1);
  ok = rt_cmd_str(fx.srv, "ACL SETUSER u on >pw ~* +@all -eval -evalsha");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  opts_for(&fx, &o, &log);
  o.username = "u";
  o.password = "pw";
  fx_start_client(&fx, &o);
  /* The user authenticates fine... */
  rt_run_until(&fx.loop, &log.count[LK_EVENT_CONNECTED], 10000);
  l = fx_lock(&fx, "acl");
  /* ...but may not run scripts. */
  acquire_op_timed(&fx, l, 0, 10000, &a, 10000);
  ASSERT_EQ(a.status, LK_ENOPERM);
  ASSERT_EQ(a.holds, 0);
  if (strcasestr(a.errtext, "evalsha") == NULL)
    FAIL("error text does not name the command: \"%s\"", a.errtext);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS acl"), 0);
  /* Still readable after the callback, until the next operation. */
  ASSERT(strcasestr(lk_lock_error_text(l), "evalsha") != NULL);
  /* A permanent error: the connection itself is fine (no SUSPENDED). */
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, l, NULL));
  ASSERT_STREQ(lk_lock_error_text(l), "");
  ASSERT_EQ(log.n, 1);
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- SELECT ---------------------------------------------------------------------------- */

static long long db_exists(int port, int db, const char *key) {
  redisContext *c = redisConnect("127.0.0.1", port);
  redisReply *r;
  long long n;
  ASSERT_NOT_NULL(c);
  if (c->err)
    FAIL("redisConnect: %s", c->errstr);
  r = redisCommand(c, "SELECT %d", db);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
  r = redisCommand(c, "EXISTS %s", key);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
  n = r->integer;
  freeReplyObject(r);
  redisFree(c);
  return n;
}

TEST(select_db3) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  int port;
  setup(&fx, NULL, 1);
  port = rt_server_port(fx.srv);
  opts_for(&fx, &o, &log);
  o.db = 3;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "db3key");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(db_exists(port, 3, "db3key"), 1);
  ASSERT_EQ(db_exists(port, 0, "db3key"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS db3key"), 0); /* the side channel is db 0 */
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(db_exists(port, 3, "db3key"), 0);
  /* SELECT is part of every (re)connect: kill our connection and check the
   * next acquire lands in db 3 again. */
  {
    redisReply *r = rt_cmd(fx.srv, "CLIENT KILL TYPE normal SKIPME yes");
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_INTEGER);
    ASSERT_GE(r->integer, 1);
    freeReplyObject(r);
  }
  rt_run_until(&fx.loop, &log.count[LK_EVENT_RECONNECTED], 10000);
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(db_exists(port, 3, "db3key"), 1);
  ASSERT_EQ(db_exists(port, 0, "db3key"), 0);
  fx_close_lock(&fx, l); /* releases in db 3 */
  ASSERT_EQ(db_exists(port, 3, "db3key"), 0);
  rt_never_finish(&fx);
}

/* ---- SCRIPT FLUSH ---------------------------------------------------------------------- */

/* SCRIPT FLUSH, and the command statistics from zero: the next operation
 * has to give its script again (scripts_given_again). */
static void flush_scripts(rt_server_t *s) {
  char *ok = rt_cmd_str(s, "SCRIPT FLUSH");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  rt_server_reset_stats(s);
}

static uint64_t reloads(lk_client_t *c) {
  lk_client_stats_t st;
  memset(&st, 0, sizeof st);
  lk_client_get_stats(c, &st);
  return st.noscript_reloads;
}

/* The scripts the server was given again since its stats were reset: an
 * EVAL (the answer to a NOSCRIPT) or a SCRIPT LOAD (a connection that met
 * NOSCRIPT loads the script before its next call). After a flush, an
 * operation takes one way or the other. */
static long long scripts_given_again(rt_server_t *s) {
  return rt_server_cmd_calls(s, "eval") + rt_server_cmd_calls(s, "script|load");
}

/* One release of l right after a flush, which gave its script again: the
 * release's result (1: that was the last hold). */
static int64_t release_after_flush(fx_t *fx, lk_lock_t *l) {
  int64_t r = -1;
  flush_scripts(fx->srv);
  ASSERT_OK(sx_run(fx, lk_lock_release, l, &r));
  ASSERT_GE(scripts_given_again(fx->srv), 1);
  return r;
}

TEST(script_flush_between_operations) {
  fx_t fx;
  lk_lock_t *l;
  int64_t r = -1;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "flush");
  /* Warm up: both scripts known to the server. */
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));

  flush_scripts(fx.srv);
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000)); /* re-enter */
  ASSERT_GE(scripts_given_again(fx.srv), 1);
  ASSERT_EQ(lk_lock_hold_count(l), 2);
  ASSERT_EQ(server_holds(fx.srv, "flush", lk_lock_owner(l)), 2);

  ASSERT_EQ(release_after_flush(&fx, l), 0);
  ASSERT_EQ(server_holds(fx.srv, "flush", lk_lock_owner(l)), 1);

  ASSERT_EQ(release_after_flush(&fx, l), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS flush"), 0);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_GE(reloads(fx.c), 1); /* the NOSCRIPT path was taken */
  rt_never_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- reply timeout ------------------------------------------------------------------------ */

TEST(reply_timeout_suspends_and_reconnects) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  op_t q;
  sx_t s;
  uint64_t t0;
  int64_t ms;
  lk_client_stats_t st;
  start_server_for_logged_opts(&fx, NULL, &o, &log);
  o.reply_timeout_ms = 300;
  o.connect_timeout_ms = 500;
  o.reconnect_max_ms = 200;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "rt");
  /* A budget, not try-once: a try-once attempt gets only reply_timeout/4 of
   * grace (see slow_reply_try_once_on_free_lock), which a loaded machine can
   * exceed on a fresh connection. The lock is free, so this returns at once. */
  ASSERT_OK(sx_acquire(&fx, l, 10000, 60000));
  ASSERT_EQ(log.count[LK_EVENT_CONNECTED], 1);

  rt_server_pause(fx.srv);
  memset(&q, 0, sizeof q);
  t0 = uv_hrtime();
  ASSERT_OK(lk_lock_is_locked(l, op_cb, &q));
  rt_run_until(&fx.loop, &q.done, 5000);
  ms = ms_since(t0);
  if (q.status != LK_EUNKNOWN && q.status != LK_ECONN)
    FAIL("query on a paused server ended with %s", lk_err_name(q.status));
  if (ms < 295)
    FAIL("query gave up after %lld ms, before the 300 ms reply timeout", (long long)ms);
  if (ms > rt_scaled_ms(300 + 1000))
    FAIL("query on a paused server took %lld ms (reply timeout 300)", (long long)ms);
  /* The connection was dropped as suspect, and said so before the failure
   * reached the operation. */
  ASSERT_EQ(log.count[LK_EVENT_SUSPENDED], 1);
  ASSERT_EQ(log.ev[1], LK_EVENT_SUSPENDED);
  ASSERT_EQ(lk_client_is_connected(fx.c), 0);
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.reply_timeouts, 1);

  rt_server_resume(fx.srv);
  rt_run_until(&fx.loop, &log.count[LK_EVENT_RECONNECTED], 10000);
  ASSERT_EQ(lk_client_is_connected(fx.c), 1);
  ASSERT_EQ(log.count[LK_EVENT_SERVER_RESTARTED], 0); /* same server */
  /* A new query works, and the hold survived (the lease is 60 s). */
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_is_locked(l, sx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(s.result, 1);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  release_and_finish(&fx, l);
}

/* A try-once acquire of a free lock whose reply is slow, but well within the
 * reply timeout, is still one attempt with that attempt's outcome. ETIMEDOUT
 * for wait 0 means "held by someone else right now" (docs/errors.md); here
 * nobody holds it. The server is paused for 250 ms: longer than a quarter of
 * the 600 ms reply timeout, shorter than all of it. */
typedef struct {
  rt_server_t *srv;
  int resumed;
} resume_t;

static void resume_server_cb(uv_timer_t *t) {
  resume_t *r = t->data;
  rt_server_resume(r->srv);
  r->resumed = 1;
}

static void timer_closed_cb(uv_handle_t *h) { *(int *)h->data = 1; }

TEST(slow_reply_try_once_on_free_lock) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  op_t a;
  uv_timer_t timer;
  resume_t rs;
  int timer_closed = 0;
  uint64_t t0;
  int64_t ms;
  start_server_for_logged_opts(&fx, NULL, &o, &log);
  o.reply_timeout_ms = 600;
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "slow");
  /* Connected and both scripts loaded, so the attempt below is one EVALSHA. */
  ASSERT_OK(sx_acquire(&fx, l, 10000, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS slow"), 0);

  rs.srv = fx.srv;
  rs.resumed = 0;
  ASSERT_OK(uv_timer_init(&fx.loop, &timer));
  timer.data = &rs;
  /* The reply is due 250 ms in, the timeout at 600: a machine stall of
   * more than the 300 ms between (less a margin) may end it first. */
  const int64_t mark = rt_stall_mark();
  rt_server_pause(fx.srv);
  t0 = uv_hrtime();
  ASSERT_OK(acquire_op(l, 0, 30000, &a));
  ASSERT_OK(uv_timer_start(&timer, resume_server_cb, 250, 0));
  rt_run_until(&fx.loop, &a.done, 5000);
  ms = ms_since(t0);
  rt_run_until(&fx.loop, &rs.resumed, 5000);
  timer.data = &timer_closed;
  uv_close((uv_handle_t *)&timer, timer_closed_cb);
  rt_run_until(&fx.loop, &timer_closed, 5000);
  if (a.status != 0)
    fprintf(stderr, "try-once acquire of a free lock ended with %s after %lld ms (reply "
            "came at ~250 ms, reply timeout 600 ms)\n", lk_err_name(a.status), (long long)ms);
  if (!EXPECT_HOLD(a.status == 0, mark, 600 - 250 - 50)) {
    fx_close_lock(&fx, l); /* gives back what the server may have granted */
    rt_never_finish(&fx);
    return;
  }
  ASSERT_EQ(a.holds, 1);
  ASSERT_EQ(log.count[LK_EVENT_SUSPENDED], 0); /* the reply was in time */
  ASSERT_EQ(server_holds(fx.srv, "slow", lk_lock_owner(l)), 1);
  release_and_finish(&fx, l);
}

/* ---- server restart ------------------------------------------------------------------------- */

TEST(server_restart_event) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  start_server_for_logged_opts(&fx, NULL, &o, &log);
  o.reconnect_max_ms = 200;
  fx_start_client(&fx, &o);
  rt_run_until(&fx.loop, &log.count[LK_EVENT_CONNECTED], 10000);
  l = fx_lock(&fx, "restart");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(rt_server_restart(fx.srv), 0); /* no persistence: data gone */
  rt_run_until(&fx.loop, &log.count[LK_EVENT_SERVER_RESTARTED], 10000);
  ASSERT_EQ(log.n, 4);
  ASSERT_EQ(log.ev[0], LK_EVENT_CONNECTED);
  ASSERT_EQ(log.ev[1], LK_EVENT_SUSPENDED);
  ASSERT_EQ(log.ev[2], LK_EVENT_RECONNECTED);
  ASSERT_EQ(log.ev[3], LK_EVENT_SERVER_RESTARTED);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS restart"), 0);
  /* The new server works: another object takes the (now free) lock. */
  {
    lk_lock_t *l2 = fx_lock(&fx, "restart");
    ASSERT_OK(sx_acquire(&fx, l2, 0, 30000));
    ASSERT_EQ(server_holds(fx.srv, "restart", lk_lock_owner(l2)), 1);
    fx_close_lock(&fx, l2);
  }
  fx_close_lock(&fx, l);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS restart"), 0);
  rt_never_finish(&fx);
}

/* ---- in-flight cap ---------------------------------------------------------------------------- */

TEST(inflight_cap_returns_eagain) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *l[3];
  sx_t s[3];
  setup(&fx, NULL, 1);
  opts_for(&fx, &o, NULL);
  o.max_inflight = 2;
  fx_start_client(&fx, &o);
  for (int i = 0; i < 3; i++) {
    l[i] = fx_lock(&fx, "cap");
    memset(&s[i], 0, sizeof s[i]);
  }
  ASSERT_OK(lk_lock_is_locked(l[0], sx_cb, &s[0]));
  ASSERT_OK(lk_lock_is_locked(l[1], sx_cb, &s[1]));
  ASSERT_EQ(lk_lock_is_locked(l[2], rt_never_lock_cb, NULL), LK_EAGAIN);
  ASSERT_EQ(lk_lock_acquire(l[2], NULL, rt_never_lock_cb, NULL), LK_EAGAIN);
  ASSERT_EQ(lk_lock_remaining_ttl(l[2], rt_never_lock_cb, NULL), LK_EAGAIN);
  rt_run_until(&fx.loop, &s[0].done, 10000);
  rt_run_until(&fx.loop, &s[1].done, 10000);
  ASSERT_OK(s[0].status);
  ASSERT_OK(s[1].status);
  /* Refusals left l[2] idle (not LK_EBUSY) and sent nothing. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cap"), 0);
  ASSERT_OK(lk_lock_is_locked(l[2], sx_cb, &s[2]));
  rt_run_until(&fx.loop, &s[2].done, 10000);
  ASSERT_OK(s[2].status);
  ASSERT_EQ(s[2].result, 0);
  ASSERT_OK(sx_acquire(&fx, l[2], 0, 10000));
  for (int i = 0; i < 3; i++)
    fx_close_lock(&fx, l[i]);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cap"), 0);
  rt_never_finish(&fx);
}

/* ---- unix socket -------------------------------------------------------------------------------- */

TEST(unix_socket) {
  fx_t fx;
  lk_client_opts_t o;
  evlog_t log;
  lk_lock_t *l;
  redisReply *r;
  const char *line;
  start_server_for_logged_opts(&fx, NULL, &o, &log);
  o.unix_path = rt_server_unix_path(fx.srv);
  o.port = 1; /* would be refused: proves host/port are not used */
  o.client_name = "lk-unix-test";
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "unix");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(server_holds(fx.srv, "unix", lk_lock_owner(l)), 1);
  ASSERT_EQ(log.count[LK_EVENT_CONNECTED], 1);
  /* The server sees our connection as a unix-socket client (flag U). */
  r = rt_cmd(fx.srv, "CLIENT LIST");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STRING);
  line = strstr(r->str, "name=lk-unix-test ");
  if (line == NULL)
    FAIL("no client named lk-unix-test in:\n%s", r->str);
  {
    const char *bol = line, *flags;
    while (bol > r->str && bol[-1] != '\n')
      bol--;
    flags = strstr(bol, " flags=");
    ASSERT_NOT_NULL(flags);
    flags += 7;
    while (*flags != ' ' && *flags != 'U' && *flags != '\0')
      flags++;
    if (*flags != 'U') {
      const char *eol = strchr(bol, '\n');
      FAIL("our connection is not a unix-socket client:\n%.*s",
           (int)(eol ? eol - bol : (ptrdiff_t)strlen(bol)), bol);
    }
  }
  freeReplyObject(r);
  release_and_finish(&fx, l);
}

/* ---- closing with work in flight ------------------------------------------------------------------ */

typedef struct {
  fx_t *fx;
  close_rec_t rec;
  int client_close_rc;
} inflight_close_t;

static void close_client_from_lock_close_cb(lk_lock_t *l) {
  inflight_close_t *t = lk_lock_get_data(l);
  close_rec_note(&t->rec);
  lk_client_set_data(t->fx->c, t->fx);
  t->client_close_rc = lk_client_close(t->fx->c, fx_on_client_closed);
}

TEST(client_close_with_command_in_flight) {
  fx_t fx;
  lk_lock_t *l;
  op_t a;
  inflight_close_t t = {.fx = &fx, .client_close_rc = 1};
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "inflight");
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, l, NULL)); /* connected, scripts aside */
  /* The acquire goes out, but the server sits on it. */
  ASSERT_OK(acquire_op(l, 0, 60000, &a));
  rt_server_pause(fx.srv);
  lk_lock_set_data(l, &t);
  ASSERT_OK(lk_lock_close(l, close_client_from_lock_close_cb));
  /* The acquire's callback comes at once; close_cb waits for the answer
   * still due (the client's reply timeout is 3 s): the server may have
   * granted it, and close_cb comes after that grant is given back. A stall
   * of the machine past that timeout may end the wait first. */
  const int64_t mark = rt_stall_mark();
  fx_spin(&fx, 200);
  ASSERT_EQ(a.calls, 1);
  ASSERT_EQ(a.status, LK_ECANCELED);
  EXPECT_HOLD(t.rec.closed == 0, mark, 3000 - 200 - 300);
  rt_server_resume(fx.srv);
  rt_run_until(&fx.loop, &t.rec.closed, 10000);
  ASSERT_LT(a.seq, t.rec.seq);
  ASSERT_EQ(t.client_close_rc, 0);
  rt_run_until(&fx.loop, &fx.client_closed, 10000);
  fx.c = NULL;
  /* The server did grant the abandoned acquire; the library gave it back
   * before the lock's close_cb (which closed the client). */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS inflight"), 0);
  ASSERT_EQ(a.calls, 1);
  rt_never_finish(&fx);
}

typedef struct {
  int cb_calls;
  int cb_status;
  int close_rc;
  int later_rc;
  close_rec_t rec;
  int cb_seq;
} self_close_t;

static void close_self_in_acquire_cb(lk_lock_t *l, int status, void *arg) {
  self_close_t *t = arg;
  t->cb_calls++;
  t->cb_status = status;
  t->cb_seq = ++g_seq;
  lk_lock_set_data(l, &t->rec);
  t->close_rc = lk_lock_close(l, rec_close_cb);
  t->later_rc = lk_lock_acquire(l, NULL, rt_never_lock_cb, NULL);
}

TEST(close_lock_inside_its_acquire_cb) {
  fx_t fx;
  lk_lock_t *l;
  self_close_t t = {.close_rc = 1};
  lk_lock_opts_t o;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "selfclose");
  lk_lock_opts_init(&o);
  o.lease_ms = 60000;
  ASSERT_OK(lk_lock_acquire(l, &o, close_self_in_acquire_cb, &t));
  rt_run_until(&fx.loop, &t.rec.closed, 10000);
  ASSERT_EQ(t.cb_calls, 1);
  ASSERT_OK(t.cb_status);
  ASSERT_OK(t.close_rc);
  ASSERT_EQ(t.later_rc, LK_ECLOSED);
  ASSERT_EQ(t.rec.closed, 1);
  ASSERT_LT(t.cb_seq, t.rec.seq);
  /* The hold it had was released by the close. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS selfclose"), 0);
  rt_never_finish(&fx);
  ASSERT_EQ(t.cb_calls, 1);
}

TEST(close_lock_while_acquire_waits) {
  fx_t fx;
  lk_lock_t *holder, *waiter;
  op_t w;
  close_rec_t rec;
  char waiter_owner[128];
  int64_t r = -1;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "cw", 60000, &holder, &waiter);
  snprintf(waiter_owner, sizeof waiter_owner, "%s", lk_lock_owner(waiter));
  ASSERT_OK(acquire_op(waiter, 30000, 60000, &w));
  /* Waiting for real: subscribed to the lock's channel. */
  wait_numsub(&fx, "redisson_lock__channel:{cw}", 1, 10000);
  ASSERT_EQ(w.calls, 0);
  memset(&rec, 0, sizeof rec);
  lk_lock_set_data(waiter, &rec);
  ASSERT_OK(lk_lock_close(waiter, rec_close_cb));
  ASSERT_EQ(w.calls, 0); /* never inside lk_lock_close */
  rt_run_until(&fx.loop, &rec.closed, 10000);
  ASSERT_EQ(w.calls, 1);
  ASSERT_EQ(w.status, LK_ECANCELED);
  ASSERT_EQ(w.holds, 0);
  ASSERT_LT(w.seq, rec.seq); /* callback first, then close_cb */
  ASSERT_EQ(rec.closed, 1);
  /* No hold of the waiter's, and the holder's is intact. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN cw"), 1);
  ASSERT_EQ(server_holds(fx.srv, "cw", waiter_owner), 0);
  ASSERT_EQ(server_holds(fx.srv, "cw", lk_lock_owner(holder)), 1);
  wait_numsub(&fx, "redisson_lock__channel:{cw}", 0, 10000); /* unsubscribed */
  ASSERT_OK(sx_run(&fx, lk_lock_release, holder, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cw"), 0);
  fx_close_lock(&fx, holder);
  /* Nothing came back later either (a late grant would show up now). */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cw"), 0);
  ASSERT_EQ(w.calls, 1);
  rt_never_finish(&fx);
}

/* pubsub_mode only changes how a cluster is used: on a standalone server
 * every mode subscribes with classic SUBSCRIBE and releases PUBLISH (what
 * every Redisson client on a standalone server listens to), so a waiter of
 * either mode is woken by another client's release at once (its re-poll is
 * 30 s away). */
TEST(pubsub_mode_on_a_standalone_server_stays_classic) {
  static const int modes[] = {LK_PUBSUB_SHARDED, LK_PUBSUB_CLASSIC};
  for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
    fx_t fx;
    lk_client_opts_t o;
    sx_t sw;
    lk_client_opts_init(&o);
    o.max_repoll_ms = 30000;
    o.pubsub_mode = modes[i];
    fx_start_with(&fx, NULL, &o);
    lk_client_t *hc = NULL; /* the holder, another process in the same mode */
    ASSERT_OK(lk_client_new(&fx.loop, &o, &hc));
    lk_lock_t *h = NULL, *w = fx_lock(&fx, "psm-standalone");
    ASSERT_OK(lk_lock_new(hc, "psm-standalone", &h));
    ASSERT_OK(sx_acquire(&fx, h, 0, 30000));
    sx_start(w, 20000, 30000, &sw);
    FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{psm-standalone}") == 1,
                  5000);
    ASSERT_EQ(sw.done, 0);
    uint64_t t0 = uv_hrtime();
    ASSERT_OK(sx_run(&fx, lk_lock_release, h, NULL));
    rt_run_until(&fx.loop, &sw.done, rt_scaled_ms(10000));
    ASSERT_OK(sw.status);
    ASSERT_LT((double)(sw.t_ns - t0) / 1e6, (double)rt_scaled_ms(2000));
    ASSERT_OK(sx_run(&fx, lk_lock_release, w, NULL));
    fx_close_lock(&fx, h);
    fx_close_lock(&fx, w);
    fx_close_direct_client(&fx, hc);
    fx_finish(&fx);
  }
}
