/* Countdown latch under faults: a count_down whose reply is lost is applied
 * once; awaiters survive a pub/sub reconnect and a server outage; a
 * count_down that cannot reach the server fails instead of hanging. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latch_open.h"
#include "proxy.h"
#include "redisson_emu.h"

#define CHANNEL(name) "redisson_countdownlatch__channel__{" name "}"

/* Through a proxy, with short timeouts so a swallowed reply is noticed. */
static rt_proxy_t *start_proxied(fx_t *fx) {
  /* connect_ms: a handshake lost in the blackhole */
  return fx_start_proxied_timeouts(
      fx, (fx_timeouts_t){.reply_ms = 400, .connect_ms = 400, .reconnect_max_ms = 100});
}

/* Waits (loop running) until GET key reads want: the server applied it. */
static void wait_value(fx_t *fx, const char *key, long long want) {
  FX_EVENTUALLY(fx, lx_get(fx->srv, key, -100) == want, 3000);
}

/* The count_down reaches the server, its reply is swallowed, the
 * connection is dropped on the reply timeout and the command resent: the
 * request record answers for the first attempt, so the latch is counted
 * down once and the caller gets the first attempt's answer. */
TEST(lost_count_down_reply_is_applied_once) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_latch_t *l;
  lx_t s;
  int64_t res;
  lk_client_stats_t st;
  l = lx_new_counting(&fx, "lr", 0, 5);
  rt_proxy_delay(p, 150);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_latch_count_down(l, lx_cb, &s));
  wait_value(&fx, "lr", 4); /* applied; the reply is still in the proxy */
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  fx_spin(&fx, 500); /* reply timeout: the connection is dropped */
  rt_proxy_blackhole(p, 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(s.result, 4);
  ASSERT_EQ(lx_get(fx.srv, "lr", -1), 4); /* once, not twice */
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.unknown_outcomes, 1); /* the resend really happened */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, &res));
  ASSERT_EQ(res, 3);
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
  rt_proxy_stop(p);
}

/* The same for the count_down that opens the latch: one "0" message, one
 * opener, and the resend reports "opened by this call", not "open
 * already". */
TEST(lost_reply_of_final_count_down_publishes_once) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_latch_t *l;
  lx_t s;
  redisContext *sub;
  redisReply *m;
  l = lx_new_counting(&fx, "fin", 0, 1);
  sub = redisConnect("127.0.0.1", rt_server_port(fx.srv));
  ASSERT(sub != NULL && sub->err == 0);
  m = redisCommand(sub, "SUBSCRIBE %s", CHANNEL("fin"));
  ASSERT_NOT_NULL(m);
  freeReplyObject(m);
  rt_proxy_delay(p, 150);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_latch_count_down(l, lx_cb, &s));
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS fin") == 0, 3000);
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  fx_spin(&fx, 500);
  rt_proxy_blackhole(p, 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(s.result, 0);
  m = rt_sub_next_message(sub, rt_scaled_ms(1000));
  ASSERT_NOT_NULL(m);
  ASSERT_STREQ(m->element[2]->str, "0");
  freeReplyObject(m);
  m = rt_sub_next_message(sub, 200);
  ASSERT_NULL(m); /* exactly one "opened" */
  redisFree(sub);
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
  rt_proxy_stop(p);
}

/* The pub/sub connection is killed while awaiters depend on it; re-polling
 * is slowed to 20 s, so only the resubscription (and the look it triggers)
 * plus the "0" message can release them in time. */
TEST(awaiters_survive_pubsub_reconnect) {
  fx_t fx;
  lk_client_opts_t o;
  lk_latch_t *w[5], *c;
  lx_t s[5];
  int64_t res;
  uint64_t t0;
  int i;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 20000;
  o.reconnect_max_ms = 100;
  fx_start_with(&fx, NULL, &o);
  c = lx_new(&fx, "ps", 1); /* strict: marks the opening for strict awaiters */
  ASSERT_OK(lx_set(&fx.loop, c, 1, NULL));
  for (i = 0; i < 5; i++) {
    w[i] = lx_new(&fx, "ps", i % 2);
    lx_await_start(w[i], -1, &s[i]);
  }
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("ps"), 1);
  ASSERT_GE(rt_cmd_int(fx.srv, "CLIENT KILL TYPE pubsub"), 1);
  fx_spin(&fx, 50);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("ps"), 1);
  fx_spin(&fx, 30);
  for (i = 0; i < 5; i++)
    ASSERT_EQ(s[i].done, 0);
  t0 = uv_hrtime();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  for (i = 0; i < 5; i++) {
    rt_run_until(&fx.loop, &s[i].done, 3000);
    ASSERT_OK(s[i].status);
    ASSERT_LT((int64_t)((s[i].t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  }
  for (i = 0; i < 5; i++)
    lx_close(&fx.loop, w[i]);
  lx_finish(&fx, (lk_latch_t *[]){c, NULL});
}

/* An await without a budget rides out a server outage (persistence on, so
 * the count survives) and opens with the final count_down afterwards; no
 * callback comes while the server is down. */
TEST(await_forever_rides_out_server_outage) {
  fx_t fx;
  lk_client_opts_t o;
  rt_server_opts_t so;
  lk_latch_t *w, *c;
  lx_t s;
  int64_t res;
  rt_server_opts_init(&so);
  so.appendonly = 1;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 200;
  o.reconnect_max_ms = 100;
  o.connect_timeout_ms = 300;
  fx_start_with(&fx, &so, &o);
  w = lx_new(&fx, "out", 0);
  c = lx_new_counting(&fx, "out", 0, 1);
  lx_await_start(w, -1, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("out"), 1);
  rt_server_kill(fx.srv, SIGKILL);
  fx_spin(&fx, 800); /* several failed re-polls */
  ASSERT_EQ(s.done, 0);
  ASSERT_OK(rt_server_restart(fx.srv));
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("out"), 1);
  fx_spin(&fx, 300);
  ASSERT_EQ(s.done, 0); /* the count survived: still armed */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_OK(s.status);
  lx_finish(&fx, (lk_latch_t *[]){w, c, NULL});
}

/* A count_down that can never be sent fails (LK_ECONN) instead of hanging,
 * and was not applied; a bounded await on an unreachable server ends with
 * its budget. */
TEST(unreachable_server_fails_cleanly) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_latch_t *l;
  lx_t s;
  uint64_t t0;
  int64_t took;
  l = lx_new_counting(&fx, "down", 0, 2);
  rt_proxy_refuse(p, 1);
  rt_proxy_reset_all(p);
  /* Once the client has seen the reset, nothing can be sent: a command sent
   * before that would have an unknown outcome instead. */
  FX_EVENTUALLY(&fx, !lk_client_is_connected(fx.c), 3000);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_count_down, l, NULL), LK_ECONN);
  ASSERT_EQ(lx_get(fx.srv, "down", -1), 2);
  t0 = uv_hrtime();
  lx_await_start(l, 600, &s);
  rt_run_until(&fx.loop, &s.done, 5000);
  took = (int64_t)((s.t_ns - t0) / 1000000u);
  ASSERT(s.status == LK_ECONN || s.status == LK_ETIMEDOUT);
  ASSERT_LT(took, 600 + 400 + rt_stall_bound_since_ns(t0, 1000)); /* budget + reply timeout */
  rt_proxy_refuse(p, 0);
  FX_EVENTUALLY(&fx, lk_client_is_connected(fx.c), 3000);
  ASSERT_EQ(lx_await(&fx.loop, l, 0), LK_ETIMEDOUT); /* reachable again, still armed */
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
  rt_proxy_stop(p);
}

typedef struct logs_s {
  int warned_channel;
} logs_t;

static void on_log(lk_log_level_t level, const char *msg, void *arg) {
  logs_t *l = arg;
  if (level == LK_LOG_WARN && strstr(msg, "subscribe") != NULL)
    l->warned_channel++;
}

/* A user without channel permission (Redis 7's default for new ACL users)
 * still arms, counts down and awaits: the messages fail quietly inside the
 * scripts, and awaiters poll with one warning, no reconnect storm. */
TEST(user_without_channel_access_polls) {
  fx_t fx;
  lk_client_opts_t o;
  lk_latch_t *w, *c;
  lx_t s;
  logs_t logs;
  int64_t res;
  uint64_t t0;
  lk_client_stats_t st;
  memset(&logs, 0, sizeof(logs));
  fx_start_server(&fx, NULL);
  freeReplyObject(rt_cmd(fx.srv, "ACL SETUSER counter on >pw ~* resetchannels +@all"));
  fx_client_opts(&fx, &o);
  o.username = "counter";
  o.password = "pw";
  o.max_repoll_ms = 300;
  o.log = on_log;
  o.log_arg = &logs;
  fx_start_client(&fx, &o);
  w = lx_new(&fx, "nc", 0);
  c = lx_new(&fx, "nc", 0);
  ASSERT_OK(lx_set(&fx.loop, c, 1, NULL)); /* its PUBLISH fails quietly */
  lx_await_start(w, 10000, &s);
  fx_spin(&fx, 400);
  ASSERT_EQ(s.done, 0);
  t0 = uv_hrtime();
  int64_t mark = rt_stall_mark();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  /* One poll period, plus a round trip and what the machine stalled us. */
  ASSERT_LT((int64_t)((s.t_ns - t0) / 1000000u), 300 + rt_stall_bound_ms(mark, 300));
  ASSERT_EQ(logs.warned_channel, 1);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.pubsub_reconnects, 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_delete, c, &res));
  lx_finish(&fx, (lk_latch_t *[]){w, c, NULL});
}

/* Over maxmemory (noeviction) arming is refused with LK_EOOM, but a party
 * that finished can still count down and the latch still opens: awaiters
 * never wait for a count_down the server refused. */
TEST(count_down_works_over_maxmemory) {
  fx_t fx;
  lk_latch_t *w, *c, *other;
  int64_t res;
  char *ok;
  fx_start(&fx, NULL);
  w = lx_new(&fx, "oom", 0);
  c = lx_new(&fx, "oom", 0);
  other = lx_new(&fx, "oom-other", 0);
  ASSERT_OK(lx_set(&fx.loop, c, 2, NULL));
  ok = rt_cmd_str(fx.srv, "CONFIG SET maxmemory-policy noeviction");
  free(ok);
  ok = rt_cmd_str(fx.srv, "CONFIG SET maxmemory 1");
  free(ok);
  ASSERT_EQ(lx_set(&fx.loop, other, 1, NULL), LK_EOOM);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS oom-other"), 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  ASSERT_EQ(lx_await(&fx.loop, w, 0), LK_ETIMEDOUT); /* reads work too */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  ASSERT_OK(lx_await(&fx.loop, w, 0));
  ok = rt_cmd_str(fx.srv, "CONFIG SET maxmemory 0");
  free(ok);
  lx_finish(&fx, (lk_latch_t *[]){w, c, other, NULL});
}

/* Closing an object with its count_down in flight ends the call with
 * LK_ECANCELED exactly once; the count_down was sent and still applies,
 * and its request record is left to expire (a late copy of the write must
 * still find it) instead of being deleted on close. */
TEST(close_with_count_down_in_flight) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_latch_t *l;
  lx_t s;
  int closed = 0;
  l = lx_new_counting(&fx, "cf", 0, 3);
  rt_proxy_delay(p, 100);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_latch_count_down(l, lx_cb, &s));
  fx_spin(&fx, 10); /* on its way */
  lk_latch_set_data(l, &closed);
  ASSERT_OK(lk_latch_close(l, lx_closed_cb));
  rt_run_until(&fx.loop, &closed, 3000);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(s.status, LK_ECANCELED);
  wait_value(&fx, "cf", 2);
  fx_spin(&fx, 300);
  ASSERT_EQ(lx_count_keys(fx.srv, "latchkey_latch_req*"), 1);
  {
    redisReply *r = rt_cmd(fx.srv, "KEYS latchkey_latch_req*");
    long long ttl;
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->elements, 1);
    ttl = rt_cmd_int(fx.srv, "PTTL %s", r->element[0]->str);
    ASSERT_GT(ttl, 0); /* expires by itself */
    freeReplyObject(r);
  }
  rt_proxy_delay(p, 0);
  fx_finish(&fx);
  rt_proxy_stop(p);
}
