/* Reentrant lock under faults: server restart and pub/sub loss while
 * waiting, TCP resets and refused connects through a proxy, a user without
 * channel permission. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "lockfam_late_renewal_row.h"
#include "lockfam_no_channels.h"
#include "proxy.h"

/* Whether HGET name <l's owner> reads want. */
static int hold_field_is(fx_t *fx, const char *name, lk_lock_t *l, const char *want) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", name, lk_lock_owner(l));
  int is = v != NULL && strcmp(v, want) == 0;
  free(v);
  return is;
}

typedef struct {
  int events[8];
  int n;
} events_t;

static void on_event(lk_client_t *c, lk_event_t ev, void *arg) {
  events_t *e = arg;
  if (e->n < 8)
    e->events[e->n++] = (int)ev;
}

static int saw(const events_t *e, lk_event_t ev) {
  int i;
  for (i = 0; i < e->n; i++)
    if (e->events[i] == (int)ev)
      return 1;
  return 0;
}

/* Where the proxied cases end: the server counts exactly one hold of l's
 * owner, l's release frees the lock, and all is closed. */
static void one_hold_left_then_finish(fx_t *fx, rt_proxy_t *p, lk_lock_t *l) {
  int64_t n = -1;
  ASSERT_OK(sx_run(fx, lk_lock_server_hold_count, l, &n));
  ASSERT_EQ(n, 1);
  ASSERT_OK(sx_run(fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", lk_lock_name(l)), 0);
  fx_close_lock(fx, l);
  fx_finish(fx);
  rt_proxy_stop(p);
}

/* Behind a proxy (reply and connect timeouts of timeout_ms, reconnects at
 * most 100 ms apart): lock name, held twice by one object (re-entrant,
 * lease_ms), for a case that loses a reply of one of the two holds. */
static lk_lock_t *held_twice_behind_proxy(fx_t *fx, rt_proxy_t **p, const char *name,
                                          int64_t timeout_ms, int64_t lease_ms) {
  lk_lock_t *l;
  *p = fx_start_proxied_timeouts(fx, (fx_timeouts_t){.reply_ms = timeout_ms,
                                                     .connect_ms = timeout_ms,
                                                     .reconnect_max_ms = 100});
  l = fx_lock(fx, name);
  ASSERT_OK(sx_acquire(fx, l, 0, lease_ms));
  ASSERT_OK(sx_acquire(fx, l, 0, lease_ms));
  ASSERT_EQ(lk_lock_hold_count(l), 2);
  return l;
}

/* The holder's key vanishes with a restart (no persistence): the waiter
 * reconnects, re-polls and takes the lock. */
TEST(redis_restart_while_waiting) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *a, *b;
  sx_t s;
  events_t ev;
  memset(&ev, 0, sizeof(ev));
  lk_client_opts_init(&o);
  o.on_event = on_event;
  o.event_arg = &ev;
  o.reconnect_max_ms = 200;
  fx_start_with(&fx, NULL, &o);
  a = fx_lock(&fx, "rs");
  b = fx_lock(&fx, "rs");
  ASSERT_OK(sx_acquire(&fx, a, 0, 60000));
  sx_start(b, 20000, 10000, &s);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{rs}", 1);
  ASSERT_OK(rt_server_restart(fx.srv));
  rt_run_until(&fx.loop, &s.done, 8000);
  ASSERT_OK(s.status);
  ASSERT(saw(&ev, LK_EVENT_SUSPENDED));
  ASSERT(saw(&ev, LK_EVENT_RECONNECTED));
  ASSERT(saw(&ev, LK_EVENT_SERVER_RESTARTED));
  /* a's hold died with the data: its release says so. */
  ASSERT_EQ(sx_run(&fx, lk_lock_release, a, NULL), LK_ENOTOWNER);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* The pub/sub connection is killed while a waiter depends on it; re-polling
 * is slowed to 20 s, so only a resubscribe (and the re-poll it triggers)
 * plus the release message can wake the waiter in time. */
TEST(pubsub_killed_while_waiting) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t s;
  fx_start_slow_repoll_fast_reconnect(&fx);
  a = fx_lock(&fx, "pk");
  b = fx_lock(&fx, "pk");
  ASSERT_OK(sx_acquire(&fx, a, 0, 60000));
  sx_start(b, 30000, 10000, &s);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{pk}", 1);
  ASSERT_GE(rt_cmd_int(fx.srv, "CLIENT KILL TYPE pubsub"), 1);
  fx_spin(&fx, 50);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{pk}", 1);
  fx_spin(&fx, 20);
  ASSERT_EQ(s.done, 0);
  sx_release_wakes(&fx, a, &s, 5000, 1000);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* A reset connection produces callbacks and a reconnect, never a hang; the
 * lock's state stays consistent. */
TEST(tcp_reset_produces_callbacks) {
  fx_t fx;
  rt_proxy_t *p;
  lk_lock_t *a;
  sx_t q;
  p = fx_start_proxied_timeouts(&fx, (fx_timeouts_t){.reply_ms = 1000, .reconnect_max_ms = 100});
  a = fx_lock(&fx, "rst");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  /* Delay replies so the query is surely in flight when the reset hits. */
  rt_proxy_delay(p, 200);
  memset(&q, 0, sizeof(q));
  ASSERT_OK(lk_lock_is_locked(a, sx_cb, &q));
  fx_spin(&fx, 20);
  rt_proxy_reset_all(p);
  rt_proxy_delay(p, 0);
  rt_run_until(&fx.loop, &q.done, 3000);
  ASSERT_EQ(q.status, LK_EUNKNOWN);
  /* The client comes back by itself and the hold is intact. */
  one_hold_left_then_finish(&fx, p, a);
}

/* A release whose reply is lost is resent and applied at most once: the
 * outer re-entrant hold survives. */
TEST(lost_release_reply_is_applied_once) {
  fx_t fx;
  rt_proxy_t *p;
  lk_lock_t *a;
  sx_t r;
  /* (connect_ms: a handshake lost in the blackhole) */
  a = held_twice_behind_proxy(&fx, &p, "lr", 400, 30000);
  /* The release reaches the server; its reply is swallowed. */
  rt_proxy_delay(p, 150);
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_lock_release(a, sx_cb, &r));
  /* Wait until the server applied it; the reply is then still held by the
   * proxy's delay, and the blackhole swallows it. */
  FX_EVENTUALLY(&fx, hold_field_is(&fx, "lr", a, "1"), 3000);
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  fx_spin(&fx, 500); /* reply timeout: the connection is dropped */
  rt_proxy_blackhole(p, 0);
  rt_run_until(&fx.loop, &r.done, 5000);
  ASSERT_OK(r.status);
  ASSERT_EQ(lk_lock_hold_count(a), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN lr"), 1);
  one_hold_left_then_finish(&fx, p, a);
}

TEST(refused_connect_fails_fast) {
  fx_t fx;
  lk_client_opts_t o;
  rt_proxy_t *p;
  lk_lock_t *a;
  sx_t s;
  uint64_t t0;
  fx_start_server(&fx, NULL);
  p = rt_proxy_start(rt_server_port(fx.srv));
  ASSERT_NOT_NULL(p);
  rt_proxy_refuse(p, 1); /* before the client starts connecting */
  lk_client_opts_init(&o);
  o.port = rt_proxy_port(p);
  o.reconnect_max_ms = 100;
  fx_start_client(&fx, &o);
  a = fx_lock(&fx, "rf");
  t0 = uv_hrtime();
  ASSERT_EQ(sx_acquire_in(&fx.loop, a, 0, 5000, &s), LK_ECONN);
  ASSERT_LT((int64_t)((s.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 2500));
  /* With a budget the acquire keeps trying and succeeds once the endpoint
   * comes back. */
  memset(&s, 0, sizeof(s));
  sx_start(a, 5000, 5000, &s);
  fx_spin(&fx, 200);
  ASSERT_EQ(s.done, 0);
  rt_proxy_refuse(p, 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

typedef struct {
  int warned;
} logs_t;

static void on_log(lk_log_level_t level, const char *msg, void *arg) {
  logs_t *l = arg;
  if (level >= LK_LOG_WARN && strstr(msg, "polling") != NULL)
    l->warned++;
}

/* Redis 7 gives new ACL users no channels: waiting falls back to polling,
 * with one warning and no reconnect storm. */
TEST(user_without_channel_access_polls) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t s, r;
  logs_t logs;
  uint64_t released;
  lk_client_stats_t st;
  memset(&logs, 0, sizeof(logs));
  lf_start_without_channels(&fx, 300, on_log, &logs);
  a = fx_lock(&fx, "nc");
  b = fx_lock(&fx, "nc");
  ASSERT_OK(sx_acquire(&fx, a, 0, 60000));
  sx_start(b, 10000, 10000, &s);
  fx_spin(&fx, 400);
  ASSERT_EQ(s.done, 0);
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_lock_release(a, sx_cb, &r)); /* its PUBLISH fails quietly */
  released = uv_hrtime();
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_LT((int64_t)((s.t_ns - released) / 1000000u),
            300 + rt_stall_bound_since_ns(released, 300));
  rt_run_until(&fx.loop, &r.done, 5000);
  ASSERT_OK(r.status);
  ASSERT_EQ(logs.warned, 1);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.pubsub_reconnects, 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* ---- a renewal answered after the loss ---- */

/* The lock's row of the shared contract (test/harness/late_renewal_contract.h,
 * test/harness/lockfam_late_renewal_row.h). */
LF_LATE_RENEWAL_ROW(lock, sx_run);

TEST(late_renewal_reply_never_undoes_the_next_grant) {
  lr_late_renewal_reply_never_undoes_the_next_grant(&lf_lr_lock);
}

/* ---- an unknown outcome left open by a transient error ---- */

static const char loading_reply[] = "-LOADING Redis is loading the dataset in memory\r\n";

/* A waiter (through the proxy) whose winning attempt ran on the server but
 * whose reply was lost with the connection: its resend is due after the
 * reconnect (300 ms, time to arm the next rule). */
typedef struct {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_t *direct;
  lk_lock_t *holder, *waiter;
  sx_t s;
} lost_grant_t;

static void lost_grant_start(lost_grant_t *x, const char *name) {
  lk_client_opts_t o;
  char channel[128];
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 300;
  o.reconnect_max_ms = 300;
  o.max_repoll_ms = 10000; /* a sleep after LOADING outlasts the test */
  x->p = fx_start_proxied(&x->fx, &o);
  x->direct = fx_direct_client(&x->fx);
  ASSERT_OK(lk_lock_new(x->direct, name, &x->holder));
  x->waiter = fx_lock(&x->fx, name);
  ASSERT_OK(sx_acquire(&x->fx, x->holder, 0, 60000));
  sx_start(x->waiter, 20000, 60000, &x->s);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  fx_wait_subscribers(&x->fx, channel, 1);
  fx_spin(&x->fx, 50);
  /* The waiter's next attempt wins; its reply is lost with the connection. */
  rt_proxy_on_reply(x->p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(sx_run(&x->fx, lk_lock_release, x->holder, NULL));
  FX_WAIT_RULE_APPLIED(&x->fx, x->p, 3000);
  ASSERT_EQ(rt_cmd_int(x->fx.srv, "HLEN %s", name), 1); /* the waiter's grant */
}

static void lost_grant_finish(lost_grant_t *x) {
  int closed = 0;
  fx_close_lock(&x->fx, x->waiter);
  lk_lock_set_data(x->holder, &closed);
  ASSERT_OK(lk_lock_close(x->holder, fx_lock_closed_cb));
  rt_run_until(&x->fx.loop, &closed, 5000);
  fx_close_direct_client(&x->fx, x->direct);
  fx_finish(&x->fx);
  rt_proxy_stop(x->p);
}

/* The resend (which finds that grant) is answered LOADING, a transient
 * error, so the waiter sleeps with the first attempt's outcome still open.
 * Canceled then, it must give back the hold that attempt took
 * (conditionally, by count): before, such a hold stayed until its lease
 * ran out, with nobody believing it held the lock. */
TEST(cancel_after_unknown_then_loading_gives_the_grant_back) {
  lost_grant_t x;
  lost_grant_start(&x, "unk");
  /* The resend after the reconnect finds it; its reply becomes LOADING. */
  rt_proxy_on_reply(x.p, "EVALSHA", 1, RT_PROXY_REPLACE, loading_reply,
                    sizeof loading_reply - 1);
  FX_WAIT_RULE_APPLIED(&x.fx, x.p, 3000);
  fx_spin(&x.fx, 50);
  ASSERT_EQ(x.s.done, 0); /* asleep, outcome open */
  ASSERT_OK(lk_lock_cancel(x.waiter));
  rt_run_until(&x.fx.loop, &x.s.done, 5000);
  ASSERT_EQ(x.s.status, LK_ECANCELED);
  ASSERT_EQ(lk_lock_hold_count(x.waiter), 0);
  /* Given back at once, not at the end of its 60 s lease. */
  FX_EVENTUALLY(&x.fx, rt_cmd_int(x.fx.srv, "EXISTS unk") == 0, 2000);
  lost_grant_finish(&x);
}

/* As above, but the cancel comes while the resend itself is in flight, and
 * the resend is then answered LOADING: that answer says nothing of the
 * first attempt's grant, so the give-back must go anyway (it applies only
 * if the owner's count shows the grant). Found by review. */
TEST(cancel_during_a_resend_answered_loading_gives_the_grant_back) {
  lost_grant_t x;
  long long before_req;
  lost_grant_start(&x, "unk2");
  /* The resend's reply will be LOADING, and slow: cancel while it flies. */
  before_req = rt_proxy_requests(x.p, "EVALSHA");
  rt_proxy_delay(x.p, 800);
  rt_proxy_on_reply(x.p, "EVALSHA", 1, RT_PROXY_REPLACE, loading_reply,
                    sizeof loading_reply - 1);
  /* The resend follows a reconnect whose handshake round trips each wait
   * the 800 ms delay too (about 2.5 s on an idle machine): a generous
   * bound. */
  FX_EVENTUALLY(&x.fx, rt_proxy_requests(x.p, "EVALSHA") > before_req, 15000);
  ASSERT_EQ(x.s.done, 0);
  ASSERT_OK(lk_lock_cancel(x.waiter));
  rt_run_until(&x.fx.loop, &x.s.done, 5000);
  ASSERT_EQ(x.s.status, LK_ECANCELED);
  FX_WAIT_RULE_APPLIED(&x.fx, x.p, 10000);
  rt_proxy_delay(x.p, 0);
  /* Given back once the resend's answer came, not at the lease's end. */
  FX_EVENTUALLY(&x.fx, rt_cmd_int(x.fx.srv, "EXISTS unk2") == 0, 3000);
  lost_grant_finish(&x);
}

/* A give-back by count applies only when the owner's count is exactly the
 * one the unanswered acquire would have made. Here the server counts one
 * hold fewer than the object (a release whose reply was lost did apply),
 * and the re-entry never reached the server: its give-back must leave the
 * owner's remaining hold alone. Before, any count but "applied already"
 * made it drop a hold, and here it deleted the lock the object still held. */
TEST(give_back_by_count_applies_only_to_that_count) {
  fx_t fx;
  rt_proxy_t *p;
  lk_lock_t *l;
  sx_t s;
  l = held_twice_behind_proxy(&fx, &p, "exact", 300, 60000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HINCRBY exact %s -1", lk_lock_owner(l)), 1);
  /* The re-entry is swallowed: its outcome stays unknown. */
  rt_proxy_blackhole(p, 1);
  sx_start(l, 0, 60000, &s);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_EUNKNOWN);
  rt_proxy_blackhole(p, 0);
  /* Behind the give-back on the recovered connection. */
  one_hold_left_then_finish(&fx, p, l);
}
