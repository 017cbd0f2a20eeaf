/* Leader election, one process (label leader): election and terms, resign
 * waking the next candidate, bad inputs, cancel and close, observing, the
 * lease kept and lost, terms across a server restart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "leader_fixture.h"

#define HOLDER(role) "latchkey_leader:{" role "}"

static int lost_calls;
static uint64_t lost_ns;
static void on_lost(lk_leader_t *l, int status, void *arg) {
  (void)arg;
  ASSERT_EQ(status, LK_ELEASELOST);
  ASSERT_EQ(lk_leader_is_leader(l), 0);
  lost_calls++;
  lost_ns = uv_hrtime();
}

TEST(elect_resign_handoff) {
  fx_t fx;
  lk_client_opts_t co;
  ld_op_t a, b, r;
  lk_leader_opts_init(NULL); /* NULL is ignored */
  lk_client_opts_init(&co);
  co.max_repoll_ms = 10000; /* a wake-up within far less must be the message */
  fx_start_with(&fx, NULL, &co);
  lk_leader_t *la = ld_new(fx.c, "job"), *lb = ld_new(fx.c, "job");
  ASSERT_STREQ(lk_leader_role(la), "job");
  ASSERT_EQ(lk_leader_is_leader(la), 0);
  ASSERT_EQ(lk_leader_term(la), 0);
  ld_campaign(la, 5000, "10.0.0.1:80", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_OK(a.status);
  ASSERT_GT(a.term, 0);
  ASSERT_EQ(lk_leader_is_leader(la), 1);
  /* The holder's layout (docs/leader.md). */
  char *v = rt_cmd_str(fx.srv, "HGET " HOLDER("job") " value");
  ASSERT_STREQ(v, "10.0.0.1:80");
  free(v);
  v = rt_cmd_str(fx.srv, "HGET " HOLDER("job") " term");
  ASSERT_EQ(atoll(v), a.term);
  free(v);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL " HOLDER("job")), 4000);
  v = rt_cmd_str(fx.srv, "GET latchkey_leader_term:{job}");
  ASSERT_EQ(atoll(v), a.term); /* the counter: the last term handed out */
  free(v);
  /* A second campaign of the leader: busy. */
  ASSERT_EQ(lk_leader_campaign(la, NULL, ld_op_cb, &r), LK_EBUSY);

  ld_campaign(lb, 5000, "10.0.0.2:80", &b);
  fx_wait_subscribers(&fx, "latchkey_leader__channel:{job}", 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(b.done, 0);
  memset(&r, 0, sizeof(r));
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(lk_leader_resign(la, ld_op_cb, &r));
  ASSERT_EQ(lk_leader_is_leader(la), 0); /* at once */
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_OK(b.status);
  int64_t handoff_ms = (int64_t)((b.t_ns - t0) / 1000000u);
  printf("resign to next election: %lld ms\n", (long long)handoff_ms);
  ASSERT_LT(handoff_ms, rt_stall_bound_since_ns(t0, 500));
  rt_run_until(&fx.loop, &r.done, 5000);
  ASSERT_OK(r.status);
  ASSERT_GT(b.term, a.term);
  ASSERT_EQ(lk_leader_resign(la, ld_op_cb, &r), LK_ENOTHELD);
  ld_close(&fx.loop, la);
  /* Closing the leader gives the leadership back. */
  ld_close(&fx.loop, lb);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS " HOLDER("job")), 0);
  fx_finish(&fx);
}

TEST(bad_inputs) {
  fx_t fx;
  lk_leader_t *l = NULL;
  lk_leader_opts_t o;
  ld_op_t s;
  char big[LK_LEADER_VALUE_MAX + 2];
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_leader_new(NULL, "r", &l), LK_EINVAL);
  ASSERT_EQ(lk_leader_new(fx.c, "r", NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_new(fx.c, NULL, &l), LK_EINVAL);
  ASSERT_EQ(lk_leader_new(fx.c, "", &l), LK_EINVAL);
  ASSERT_NULL(l);
  l = ld_new(fx.c, "r");
  ASSERT_EQ(lk_leader_campaign(NULL, NULL, ld_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_leader_campaign(l, NULL, NULL, &s), LK_EINVAL);
  int64_t bad_leases[] = {0, -2, 1, LK_LEADER_LEASE_MIN_MS - 1, LK_MAX_TIME_MS + 1};
  for (size_t i = 0; i < sizeof(bad_leases) / sizeof(bad_leases[0]); i++) {
    lk_leader_opts_init(&o);
    o.lease_ms = bad_leases[i];
    ASSERT_EQ(lk_leader_campaign(l, &o, ld_op_cb, &s), LK_EINVAL);
  }
  lk_leader_opts_init(&o);
  o.wait_ms = -2;
  ASSERT_EQ(lk_leader_campaign(l, &o, ld_op_cb, &s), LK_EINVAL);
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  lk_leader_opts_init(&o);
  o.value = big; /* LK_LEADER_VALUE_MAX + 1 bytes */
  ASSERT_EQ(lk_leader_campaign(l, &o, ld_op_cb, &s), LK_EINVAL);
  big[LK_LEADER_VALUE_MAX] = '\0'; /* exactly the maximum: accepted */
  lk_leader_opts_init(&o);
  o.value = big;
  o.wait_ms = 0;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_leader_campaign(l, &o, ld_op_cb, &s));
  ASSERT_EQ(lk_leader_campaign(l, &o, ld_op_cb, &s), LK_EBUSY); /* pending */
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_leader_resign(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_resign(NULL, ld_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_leader_cancel(l), LK_EINVAL); /* nothing pending */
  ASSERT_EQ(lk_leader_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_observe(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_observe(NULL, ld_op_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_observe_stop(l), LK_EINVAL); /* not observing */
  ASSERT_EQ(lk_leader_set_lost_cb(NULL, on_lost, NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_leader_is_leader(NULL), 0);
  ASSERT_EQ(lk_leader_term(NULL), 0);
  ASSERT_EQ(lk_leader_observed_term(NULL), 0);
  ASSERT_NULL(lk_leader_observed_value(NULL));
  ASSERT_NULL(lk_leader_observed_value(l));
  ASSERT_STREQ(lk_leader_error_text(NULL), "");
  ld_obs_t obs;
  memset(&obs, 0, sizeof(obs));
  ASSERT_OK(lk_leader_observe(l, ld_obs_cb, &obs));
  ASSERT_EQ(lk_leader_observe(l, ld_obs_cb, &obs), LK_EBUSY);
  ld_close(&fx.loop, l);
  ASSERT_EQ(obs.end_calls, 1);
  fx_finish(&fx);
}

TEST(close_while_campaigning) {
  fx_t fx;
  ld_op_t a, b;
  fx_start(&fx, NULL);
  lk_leader_t *la = ld_new(fx.c, "c"), *lb = ld_new(fx.c, "c"), *lc = ld_new(fx.c, "c");
  ld_campaign(la, 5000, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_OK(a.status);
  /* Waiting (subscribed) when closed. */
  ld_campaign(lb, 5000, "b", &b);
  fx_wait_subscribers(&fx, "latchkey_leader__channel:{c}", 1);
  int closed = 0;
  lk_leader_set_data(lb, &closed);
  ASSERT_OK(lk_leader_close(lb, ld_closed_cb));
  ASSERT_EQ(lk_leader_close(lb, ld_closed_cb), LK_ECLOSED);
  ASSERT_EQ(lk_leader_campaign(lb, NULL, ld_op_cb, &b), LK_ECLOSED);
  ASSERT_EQ(b.done, 0); /* never inside the call */
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(b.calls, 1);
  ASSERT_EQ(b.status, LK_ECANCELED);
  /* Closed with the attempt still in flight: one callback too. */
  ld_campaign(lc, 5000, "c", &b);
  closed = 0;
  lk_leader_set_data(lc, &closed);
  ASSERT_OK(lk_leader_close(lc, ld_closed_cb));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(b.calls, 1);
  ASSERT_EQ(b.status, LK_ECANCELED);
  fx_spin(&fx, 50);
  ASSERT_EQ(b.calls, 1);
  /* The leader is untouched. */
  ASSERT_EQ(lk_leader_is_leader(la), 1);
  char *v = rt_cmd_str(fx.srv, "HGET " HOLDER("c") " value");
  ASSERT_STREQ(v, "a");
  free(v);
  ld_close(&fx.loop, la);
  fx_finish(&fx);
}

TEST(cancel_campaign) {
  fx_t fx;
  ld_op_t a, b;
  lk_leader_opts_t o;
  fx_start(&fx, NULL);
  lk_leader_t *la = ld_new(fx.c, "k"), *lb = ld_new(fx.c, "k");
  ld_campaign(la, 5000, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ld_campaign(lb, 5000, "b", &b);
  ASSERT_OK(lk_leader_cancel(lb));
  ASSERT_EQ(b.done, 0);
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_EQ(b.status, LK_ECANCELED);
  /* A budget: LK_ETIMEDOUT; a single try: LK_ETIMEDOUT at once. */
  memset(&b, 0, sizeof(b));
  lk_leader_opts_init(&o);
  o.wait_ms = 200;
  ASSERT_OK(lk_leader_campaign(lb, &o, ld_op_cb, &b));
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_EQ(b.status, LK_ETIMEDOUT);
  memset(&b, 0, sizeof(b));
  o.wait_ms = 0;
  ASSERT_OK(lk_leader_campaign(lb, &o, ld_op_cb, &b));
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_EQ(b.status, LK_ETIMEDOUT);
  ASSERT_EQ(lk_leader_is_leader(lb), 0);
  ld_close(&fx.loop, lb);
  ld_close(&fx.loop, la);
  fx_finish(&fx);
}

/* Lease kept by renewals well past its length; taken over within about a
 * lease after its holder is gone without resigning. */
TEST(lease_kept_and_expiry_taken_over) {
  fx_t fx;
  ld_op_t a, b;
  lk_client_opts_t co;
  lk_client_opts_init(&co);
  co.max_repoll_ms = 10000; /* the holder's PTTL bounds the wait instead */
  fx_start_with(&fx, NULL, &co);
  lk_leader_t *la = ld_new(fx.c, "e"), *lb = ld_new(fx.c, "e");
  ld_campaign(la, 300, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_OK(a.status);
  /* Kept by renewals every 100 ms of a 300 ms lease: a machine stall past
   * the 200 ms between them may take it (stall.h). */
  int64_t mark = rt_stall_mark();
  fx_spin(&fx, 1000);
  if (!EXPECT_HOLD(lk_leader_is_leader(la) == 1 &&
                       rt_cmd_int(fx.srv, "PTTL " HOLDER("e")) > 0,
                   mark, 300 - 100)) {
    ASSERT_EQ(lk_leader_is_leader(la), 0); /* it knows, at least */
    ld_close(&fx.loop, la);
    ld_close(&fx.loop, lb);
    fx_finish(&fx);
    return;
  }
  /* The holder vanishes behind the leader's back: the next renewal says so. */
  lost_calls = 0;
  ASSERT_OK(lk_leader_set_lost_cb(la, on_lost, NULL));
  const int64_t mark_b = rt_stall_mark();
  ld_campaign(lb, 300, "b", &b);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL " HOLDER("e")), 1);
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_OK(b.status);
  ASSERT_GT(b.term, a.term);
  /* The renewal (every 100 ms) finds it gone: on_lost within about that. */
  FX_EVENTUALLY(&fx, lost_calls == 1, 1000);
  ASSERT_EQ(lk_leader_resign(la, ld_op_cb, &a), LK_ELEASELOST);
  ASSERT_EQ(lk_leader_resign(la, ld_op_cb, &a), LK_ENOTHELD);
  ld_close(&fx.loop, la);
  /* lb renews every 100 ms of its 300 ms lease: a stall past the 200 ms
   * between them may take it. */
  EXPECT_HOLD(lk_leader_is_leader(lb) == 1, mark_b, 300 - 100);
  ld_close(&fx.loop, lb);
  fx_finish(&fx);
}

/* A server that stops answering: on_lost before the server's expiry could
 * let anyone else in (strict: grant send time + lease). */
TEST(lost_before_server_expiry) {
  fx_t fx;
  ld_op_t a;
  lk_client_opts_t co;
  lk_client_opts_init(&co);
  co.reply_timeout_ms = 5000;
  fx_start_with(&fx, NULL, &co);
  lk_leader_t *la = ld_new(fx.c, "p");
  lost_calls = 0;
  ASSERT_OK(lk_leader_set_lost_cb(la, on_lost, NULL));
  uint64_t sent = uv_hrtime();
  ld_campaign(la, 600, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_OK(a.status);
  fx_spin(&fx, 300); /* renewed at least once */
  uint64_t paused = uv_hrtime();
  rt_server_pause(fx.srv);
  /* The last confirmed renewal was sent before the pause: the server keeps
   * the leadership at least until that send + 600 ms, and the local
   * deadline is no later. A probe due then runs after the library's timer
   * for that deadline, however late a loaded machine runs the loop. */
  fx_probe_t pr;
  fx_probe_start(&fx.loop, &pr, paused + 600 * 1000000ull);
  rt_run_until(&fx.loop, &lost_calls, 5000);
  double late = fx_probe_lateness_ms(&fx.loop, &pr);
  rt_server_resume(fx.srv);
  printf("lost %lld ms after the pause (the probe ran %.1f ms late)\n",
         (long long)((lost_ns - paused) / 1000000u), late);
  ASSERT_LE(lost_ns, pr.fired_ns);
  if (late < 1.0) /* an on-time loop: the wall-clock bound itself */
    ASSERT_LT(lost_ns, paused + 600 * 1000000ull);
  ASSERT_GT(lost_ns, sent);
  fx_probe_close(&fx.loop, &pr);
  ASSERT_EQ(lk_leader_is_leader(la), 0);
  ld_close(&fx.loop, la);
  fx_finish(&fx);
}

TEST(observe_follows_changes) {
  fx_t fx;
  ld_op_t a, b, r;
  ld_obs_t obs;
  lk_client_opts_t co;
  lk_client_opts_init(&co);
  co.max_repoll_ms = 400;
  fx_start_with(&fx, NULL, &co);
  lk_leader_t *ob = ld_new(fx.c, "o"), *la = ld_new(fx.c, "o"), *lb = ld_new(fx.c, "o");
  memset(&obs, 0, sizeof(obs));
  ASSERT_OK(lk_leader_observe(ob, ld_obs_cb, &obs));
  ASSERT_EQ(obs.n, 0);
  rt_run_until(&fx.loop, &obs.n, 5000);
  ASSERT_EQ(obs.present[0], 0); /* nobody leads yet */
  ASSERT_EQ(obs.term[0], 0);
  fx_wait_subscribers(&fx, "latchkey_leader__channel:{o}", 1);
  ld_campaign(la, 5000, "A", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  FX_EVENTUALLY(&fx, obs.n == 2, 2000);
  ASSERT_EQ(obs.present[1], 1);
  ASSERT_EQ(obs.term[1], a.term);
  ASSERT_STREQ(obs.value[1], "A");
  ASSERT_EQ(lk_leader_observed_term(ob), a.term);
  ASSERT_STREQ(lk_leader_observed_value(ob), "A");
  /* Resign: seen as the leadership ending, then the next one. */
  ld_campaign(lb, 500, "B", &b);
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_leader_resign(la, ld_op_cb, &r));
  rt_run_until(&fx.loop, &b.done, 5000);
  FX_EVENTUALLY(&fx, obs.n == 4, 2000);
  ASSERT_EQ(obs.present[2], 0);
  ASSERT_EQ(obs.term[2], a.term);
  ASSERT_EQ(obs.present[3], 1);
  ASSERT_EQ(obs.term[3], b.term);
  ASSERT_STREQ(obs.value[3], "B");
  ld_close(&fx.loop, lb); /* gives the leadership back: one more change */
  FX_EVENTUALLY(&fx, obs.n == 5, 2000);
  ASSERT_EQ(obs.present[4], 0);
  /* A leadership the observer never saw start (written by hand, as the
   * campaign script would, without the message): seen at the next re-poll. */
  int64_t t = b.term + 5;
  free(rt_cmd_str(fx.srv, "SET latchkey_leader_term:{o} %lld", (long long)t));
  rt_cmd_int(fx.srv, "HSET " HOLDER("o") " owner x value H term %lld", (long long)t);
  rt_cmd_int(fx.srv, "PEXPIRE " HOLDER("o") " 1000"); /* longer than a re-poll */
  uint64_t t0 = uv_hrtime();
  FX_EVENTUALLY(&fx, obs.n == 6, 2000);
  ASSERT_EQ(obs.term[5], t);
  ASSERT_STREQ(obs.value[5], "H");
  FX_EVENTUALLY(&fx, obs.n == 7, 3000); /* its expiry */
  ASSERT_EQ(obs.present[6], 0);
  printf("hand-made leadership (1000 ms) seen ending %lld ms after it was written\n",
         (long long)((obs.t_ns[6] - t0) / 1000000u));
  /* Not before it ended; within one re-poll (400 ms) after. */
  ASSERT_GE((int64_t)((obs.t_ns[6] - t0) / 1000000u), 1000);
  ASSERT_LT((int64_t)((obs.t_ns[6] - t0) / 1000000u),
            1000 + rt_stall_bound_since_ns(t0, 400 + 300));
  for (int i = 1; i < obs.n; i++)
    ASSERT_GE(obs.term[i], obs.term[i - 1]);
  ASSERT_OK(lk_leader_observe_stop(ob));
  ASSERT_EQ(obs.ended, 0); /* from the loop */
  FX_EVENTUALLY(&fx, obs.ended == 1, 1000);
  ASSERT_EQ(lk_leader_observe_stop(ob), LK_EINVAL);
  /* Observing again works. */
  ld_obs_t again;
  memset(&again, 0, sizeof(again));
  ASSERT_OK(lk_leader_observe(ob, ld_obs_cb, &again));
  rt_run_until(&fx.loop, &again.n, 5000);
  ld_close(&fx.loop, ob);
  ASSERT_EQ(again.end_calls, 1);
  ASSERT_EQ(obs.end_calls, 1);
  ld_close(&fx.loop, la);
  fx_finish(&fx);
}

/* Terms keep increasing across a restart without persistence, for this
 * client and for a new one that never saw a term. */
TEST(terms_survive_restart) {
  fx_t fx;
  ld_op_t a;
  fx_start(&fx, NULL);
  lk_leader_t *la = ld_new(fx.c, "t");
  lost_calls = 0;
  ASSERT_OK(lk_leader_set_lost_cb(la, on_lost, NULL));
  ld_campaign(la, 600, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_OK(a.status);
  int64_t t1 = a.term;
  rt_server_set_appendonly(fx.srv, 0);
  ASSERT_OK(rt_server_restart(fx.srv));
  /* The leadership went with the data: told within the lease. */
  rt_run_until(&fx.loop, &lost_calls, 5000);
  ld_campaign(la, 600, "a", &a);
  rt_run_until(&fx.loop, &a.done, 10000);
  ASSERT_OK(a.status);
  ASSERT_GT(a.term, t1);
  int64_t t2 = a.term;
  ld_close(&fx.loop, la);
  /* A fresh client: seeded from the server's clock, above t2 after another
   * wipe. */
  ASSERT_OK(rt_server_restart(fx.srv));
  lk_client_t *c2;
  lk_client_opts_t co;
  fx_client_opts(&fx, &co);
  ASSERT_OK(lk_client_new(&fx.loop, &co, &c2));
  lk_leader_t *l2 = ld_new(c2, "t");
  ld_campaign(l2, 600, "b", &a);
  rt_run_until(&fx.loop, &a.done, 10000);
  ASSERT_OK(a.status);
  ASSERT_GT(a.term, t2);
  ld_close(&fx.loop, l2);
  int closed = 0;
  lk_client_set_data(c2, &closed);
  ASSERT_OK(lk_client_close(c2, NULL));
  fx_spin(&fx, 50);
  fx_finish(&fx);
}

static int client_closed;
static void on_client_closed(lk_client_t *c) {
  (void)c;
  client_closed++;
}

/* lk_client_close_all: the campaign ends with one LK_ECANCELED, observing
 * with its one last call, the leadership is given back. */
TEST(close_all_ends_everything) {
  fx_t fx;
  ld_op_t a, b;
  ld_obs_t obs;
  fx_start(&fx, NULL);
  lk_leader_t *la = ld_new(fx.c, "z"), *lb = ld_new(fx.c, "z");
  memset(&obs, 0, sizeof(obs));
  ASSERT_OK(lk_leader_observe(lb, ld_obs_cb, &obs));
  ld_campaign(la, 5000, "a", &a);
  rt_run_until(&fx.loop, &a.done, 5000);
  ld_campaign(lb, 5000, "b", &b);
  FX_EVENTUALLY(&fx, obs.n >= 1 && obs.present[obs.n - 1], 2000);
  client_closed = 0;
  ASSERT_OK(lk_client_close_all(fx.c, on_client_closed));
  rt_run_until(&fx.loop, &client_closed, 10000);
  ASSERT_EQ(b.calls, 1);
  ASSERT_EQ(b.status, LK_ECANCELED);
  ASSERT_EQ(obs.end_calls, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS " HOLDER("z")), 0);
  fx.c = NULL;
  fx_finish(&fx);
}
