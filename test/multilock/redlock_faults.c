/* RedLock under faults on real masters: paused masters (SIGSTOP), latency
 * beyond the node timeout, a master killed and restarted empty while held
 * (restart quarantine), and bounded waits. docs/reliability.md, T31, T32. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h" /* lk__script_find: the token write's sha */
#include "multi_fixture.h"
#include "proxy.h"

#define N 5

static int64_t ms_since(uint64_t t0, uint64_t t1) { return (int64_t)((t1 - t0) / 1000000u); }

static void rl_opts(lk_redlock_opts_t *o, int64_t wait_ms, int64_t lease_ms, int64_t node_ms) {
  lk_redlock_opts_init(o);
  o->wait_ms = wait_ms;
  o->lease_ms = lease_ms;
  o->node_timeout_ms = node_ms;
}

/* T31(a): two of five paused; the three others make the quorum at once,
 * without waiting for the paused ones' node timeout. */
TEST(rl_two_of_five_paused_still_acquires) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  uint64_t t0;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-stop2", NULL);
  rt_server_pause(m.srv[3]);
  rt_server_pause(m.srv[4]);
  rl_opts(&o, 0, 10000, 300);
  t0 = uv_hrtime();
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  ASSERT_LE(ms_since(t0, s.t_ns), rt_stall_bound_since_ns(t0, 300 + 100));
  ASSERT_EQ(s.held, 1);
  ASSERT_GT(s.validity_ms, 10000 - 102 - rt_scaled_ms(400));
  for (i = 0; i < 3; i++) {
    ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), 0);
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
  }
  ASSERT_EQ(lk_redlock_node_status(rl, 3), LK_EUNKNOWN); /* no answer yet */
  ASSERT_OK(mx_rl_release(&m, rl));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-stop2"), 0);
  rt_server_resume(m.srv[3]);
  rt_server_resume(m.srv[4]);
  /* The paused masters' late grants are given back once they answer. */
  ASSERT_EQ(mfx_wait_key_gone(&m, 3, "rl-stop2", 5000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-stop2", 5000), 1);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* T31(b): three of five paused: no quorum; a clean failure within the wait
 * budget, nothing held on the live masters. */
TEST(rl_three_of_five_paused_fails_within_budget) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  uint64_t t0;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-stop3", NULL);
  for (i = 2; i < N; i++)
    rt_server_pause(m.srv[i]);
  rl_opts(&o, 800, 10000, 100);
  t0 = uv_hrtime();
  int64_t mark = rt_stall_mark();
  ASSERT_EQ(mx_rl_acquire_opts(&m, rl, &o, &s), LK_ENOQUORUM);
  ASSERT_GE(ms_since(t0, s.t_ns), 800 - 1);
  ASSERT_LE(ms_since(t0, s.t_ns), 800 + rt_stall_bound_ms(mark, 150));
  ASSERT_EQ(s.held, 0);
  for (i = 2; i < N; i++)
    ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), LK_ETIMEDOUT);
  ASSERT_EQ(mx_rl_holds_on(&m, rl, 0), 0);
  ASSERT_EQ(mx_rl_holds_on(&m, rl, 1), 0);
  /* wait 0: one attempt, bounded by the node timeout. */
  rl_opts(&o, 0, 10000, 100);
  t0 = uv_hrtime();
  mark = rt_stall_mark();
  ASSERT_EQ(mx_rl_acquire_opts(&m, rl, &o, &s), LK_ENOQUORUM);
  ASSERT_LE(ms_since(t0, s.t_ns), rt_stall_bound_ms(mark, 100 + 100));
  for (i = 2; i < N; i++)
    rt_server_resume(m.srv[i]);
  /* Grants the paused masters make once resumed are given back. */
  for (i = 2; i < N; i++)
    ASSERT_EQ(mfx_wait_key_gone(&m, i, "rl-stop3", 5000), 1);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* A failed attempt's roll-back waits a node timeout for a master still
 * owing its answer, then ends: that master's status says it did not answer
 * in time (LK_ETIMEDOUT), as when the attempt's own timer gives up on it,
 * and stays so when its grant comes later and is given back. It stayed
 * LK_EUNKNOWN ("no answer yet, updated when it answers") for good. */
TEST(rl_rollback_gives_up_on_a_straggler_as_timed_out) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-rollback-straggler", NULL);
  /* Masters 0-2 are held by someone else: no quorum is possible, so the
   * attempt rolls back while master 4 (paused) still owes its answer. */
  for (i = 0; i < 3; i++)
    mx_clog(&m, i, "rl-rollback-straggler", 30000);
  long long scripts4 = rt_server_cmd_calls(m.srv[4], "evalsha");
  rt_server_pause(m.srv[4]);
  rl_opts(&o, 0, 10000, 1000);
  int64_t mark = rt_stall_mark();
  int rc = mx_rl_acquire_opts(&m, rl, &o, &s);
  ASSERT_EQ(s.held, 0);
  ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_ETIMEDOUT);
  /* Masters 0-3 answer within the node timeout (enough answered, the lock
   * is taken), unless the machine stalled longer: the attempt's timer then
   * gave up on them too. */
  if (EXPECT_HOLD(rc == LK_ETIMEDOUT, mark, 1000))
    for (i = 0; i < 3; i++)
      ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), LK_ENOTOWNER);
  ASSERT_EQ(mfx_wait_key_gone(&m, 3, "rl-rollback-straggler", 5000), 1); /* rolled back */
  /* Master 4 grants once resumed; that grant is given back (two scripts),
   * and the status stays what the roll-back said. */
  rt_server_resume(m.srv[4]);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(5000);
    while (rt_server_cmd_calls(m.srv[4], "evalsha") < scripts4 + 2) {
      ASSERT_LT(rt_now_ms(), end);
      uv_run(&m.loop, UV_RUN_NOWAIT);
      rt_sleep_ms(2);
    }
  }
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-rollback-straggler", 5000), 1);
  ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_ETIMEDOUT);
  ASSERT_EQ(lk_lock_hold_count(lk_redlock_node_lock(rl, 4)), 0);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* T31(c): a master slower than the node timeout is a failed vote; one
 * slower than a round trip but inside it counts, and the validity reported
 * is lease - elapsed - drift. */
TEST(rl_latency_beyond_node_timeout_is_a_failed_vote) {
  mfx_t m;
  lk_client_t *set[N];
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  rt_proxy_t *px;
  mx_t s;
  uint64_t t0;
  int64_t elapsed;
  int i;
  mfx_start(&m, N, NULL);
  px = rt_proxy_start(rt_server_port(m.srv[0]));
  ASSERT_NOT_NULL(px);
  for (i = 0; i < N; i++) {
    lk_client_opts_t co;
    mfx_client_opts(&m, i, &co);
    if (i == 0)
      co.port = rt_proxy_port(px);
    ASSERT_OK(lk_client_new(&m.loop, &co, &set[i]));
  }
  mfx_wait_connected(&m, set);
  rl = mx_rl_new(&m, set, "rl-slow", NULL);
  /* Masters 3 and 4 are taken: the quorum needs master 0. */
  mx_clog(&m, 3, "rl-slow", 30000);
  mx_clog(&m, 4, "rl-slow", 30000);

  rt_proxy_delay(px, 250);
  rl_opts(&o, 0, 10000, 100);
  t0 = uv_hrtime();
  ASSERT_NE(mx_rl_acquire_opts(&m, rl, &o, &s), 0);
  ASSERT_LE(ms_since(t0, s.t_ns), rt_stall_bound_since_ns(t0, 100 + 100));
  ASSERT_EQ(lk_redlock_node_status(rl, 0), LK_ETIMEDOUT);
  ASSERT_EQ(mx_rl_holds_on(&m, rl, 1), 0);
  ASSERT_EQ(mx_rl_holds_on(&m, rl, 2), 0);
  /* The slow master grants later (the request is still on its way) and
   * that grant is given back when its answer arrives. */
  ASSERT_EQ(mfx_wait_key(&m, 0, "rl-slow", 1, 3000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 0, "rl-slow", 3000), 1);

  rt_proxy_delay(px, 40);
  rl_opts(&o, 0, 10000, rt_scaled_ms(1000));
  t0 = uv_hrtime();
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  elapsed = ms_since(t0, s.t_ns);
  ASSERT_GE(elapsed, 40);
  ASSERT_LE(s.validity_ms, 10000 - 102 - 40);
  ASSERT_GE(s.validity_ms, 10000 - 102 - elapsed - 5);
  ASSERT_OK(mx_rl_release(&m, rl));
  rt_proxy_delay(px, 0);
  mx_rl_close(&m, rl);
  mfx_close_set(&m, set);
  rt_proxy_stop(px);
  mfx_finish(&m);
}

typedef struct restarts_s {
  int seen;
} restarts_t;

static void on_client_event(lk_client_t *c, lk_event_t ev, void *arg) {
  restarts_t *r = arg;
  (void)c;
  if (ev == LK_EVENT_SERVER_RESTARTED)
    r->seen++;
}

/* A client set whose client for master `watch` reports restarts. */
static void clients_watching(mfx_t *m, lk_client_t **set, int watch, restarts_t *r,
                             int64_t lease_ms) {
  int i;
  for (i = 0; i < m->n; i++) {
    lk_client_opts_t co;
    mfx_client_opts(m, i, &co);
    if (lease_ms > 0)
      co.default_lease_ms = lease_ms;
    if (i == watch) {
      co.on_event = on_client_event;
      co.event_arg = r;
    }
    ASSERT_OK(lk_client_new(&m->loop, &co, &set[i]));
  }
  mfx_wait_connected(m, set);
}

/* T32: A holds on masters 0-2 (explicit lease, so it does not notice);
 * master 2 is killed and restarts empty. A master that restarted may have
 * lost locks, so it abstains: B cannot win with 2, 3 and 4 while A is
 * valid. With persistence declared it votes at once and B wins: the hazard
 * the delayed-restart rule exists for. */
TEST(rl_restarted_master_abstains_for_the_quarantine) {
  mfx_t m;
  lk_client_t *b[N];
  restarts_t r = {0};
  lk_redlock_t *a, *bq, *bp;
  lk_redlock_config_t cfg;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  clients_watching(&m, b, 2, &r, 0);
  a = mx_rl_new(&m, m.c, "rl-restart", NULL);
  bq = mx_rl_new(&m, b, "rl-restart", NULL);
  lk_redlock_config_init(&cfg);
  cfg.persistent = 1;
  bp = mx_rl_new(&m, b, "rl-restart", &cfg);
  mx_clog(&m, 3, "rl-restart", 30000);
  mx_clog(&m, 4, "rl-restart", 30000);
  ASSERT_OK(mx_rl_acquire(&m, a, 0, 20000, &s));
  mx_rl_settle(&m, a);
  mx_unclog(&m, 3, "rl-restart");
  mx_unclog(&m, 4, "rl-restart");

  ASSERT_EQ(rt_server_restart(m.srv[2]), 0);
  ASSERT_EQ(rt_cmd_int(m.srv[2], "EXISTS rl-restart"), 0); /* A's hold there is gone */
  {
    /* B's client learns of the restart when it reconnects. */
    int64_t end = rt_now_ms() + rt_scaled_ms(5000);
    while (r.seen == 0 || !lk_client_is_connected(b[2])) {
      ASSERT_LT(rt_now_ms(), end);
      uv_run(&m.loop, UV_RUN_NOWAIT);
      rt_sleep_ms(1);
    }
  }
  ASSERT_EQ(lk_redlock_node_quarantined(bq, 2), 1);
  ASSERT_EQ(lk_redlock_node_quarantined(bp, 2), 0);

  ASSERT_NE(mx_rl_acquire(&m, bq, 0, 20000, &s), 0);
  ASSERT_EQ(lk_redlock_node_status(bq, 2), LK_ENOQUORUM);
  ASSERT_EQ(rt_cmd_int(m.srv[2], "EXISTS rl-restart"), 0); /* it was not even asked */
  ASSERT_EQ(lk_redlock_is_held(a), 1);
  for (i = 3; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, bq, i), 0);

  /* Declared persistent: master 2 votes, and B holds while A still thinks
   * it does. Expected with an empty restart, and why the default waits.
   * With a short wait budget: bq's grants from masters 3 and 4 may still be
   * on their way when bq's roll-back gave up on them (a stalled machine),
   * and they come before bp's asks on those connections; bp is woken when
   * they are given back. A's holds on 0 and 1 last 20 s: only 2, 3 and 4
   * can make bp's quorum. */
  ASSERT_OK(mx_rl_acquire(&m, bp, rt_scaled_ms(5000), 20000, &s));
  ASSERT_EQ(lk_redlock_node_status(bp, 2), 0);
  ASSERT_EQ(lk_redlock_is_held(a), 1);
  ASSERT_EQ(lk_redlock_is_held(bp), 1);
  ASSERT_OK(mx_rl_release(&m, bp));

  mfx_finish_rls(&m, (lk_redlock_t *[]){a, bq, bp, NULL}, b);
}

static void count_lost(lk_redlock_t *rl, int status, void *arg) {
  int *n = arg;
  (void)rl;
  (void)status;
  (*n)++;
}

/* Killed and restarted empty while held (watchdog): the holder's renewal
 * finds that master's hold gone, but four still hold: no loss. Others see
 * that master abstain until its quarantine ends. */
TEST(rl_kill_and_empty_restart_while_held) {
  mfx_t m;
  lk_client_t *b[N];
  restarts_t r = {0};
  lk_redlock_t *a, *w;
  lk_redlock_config_t cfg;
  mx_t s;
  int lost = 0, i;
  uint64_t t_seen = 0;
  mfx_start_lease(&m, N, NULL, 1500);
  clients_watching(&m, b, 0, &r, 0);
  a = mx_rl_new(&m, m.c, "rl-kill", NULL);
  ASSERT_OK(lk_redlock_set_lost_cb(a, count_lost, &lost));
  lk_redlock_config_init(&cfg);
  cfg.quarantine_ms = 700;
  w = mx_rl_new(&m, b, "rl-kill", &cfg);
  ASSERT_OK(mx_rl_acquire(&m, a, 0, -1, &s));
  mx_rl_settle(&m, a);

  ASSERT_EQ(rt_server_restart(m.srv[0]), 0);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(5000);
    while (r.seen == 0 || !lk_client_is_connected(b[0])) {
      ASSERT_LT(rt_now_ms(), end);
      uv_run(&m.loop, UV_RUN_NOWAIT);
      /* No earlier than the client saw the restart (the quarantine's start),
       * however long its reconnect took. */
      if (r.seen != 0 && t_seen == 0)
        t_seen = uv_hrtime();
      rt_sleep_ms(1);
    }
    if (t_seen == 0)
      t_seen = uv_hrtime();
  }
  ASSERT_EQ(lk_redlock_node_quarantined(w, 0), 1);
  ASSERT_EQ(mx_rl_acquire(&m, w, 0, 20000, &s), LK_ETIMEDOUT);
  ASSERT_EQ(lk_redlock_node_status(w, 0), LK_ENOQUORUM);
  for (i = 1; i < N; i++)
    ASSERT_EQ(lk_redlock_node_status(w, (size_t)i), LK_ENOTOWNER);

  /* Two renewal periods: the holder keeps its quorum of four. */
  mfx_spin(&m, 1100);
  ASSERT_EQ(lost, 0);
  ASSERT_EQ(lk_redlock_is_held(a), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "EXISTS rl-kill"), 0);
  for (i = 1; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, a, i), 1);
  /* A re-entry asks the four that hold it. */
  ASSERT_OK(mx_rl_acquire(&m, a, 0, -1, &s));
  ASSERT_EQ(lk_redlock_node_status(a, 0), LK_ENOTHELD);
  ASSERT_OK(mx_rl_release(&m, a));
  /* The quarantine ends 700 ms after the restart was seen (t_seen is at or
   * after that): over by then, give or take a late loop. */
  while (ms_since(t_seen, uv_hrtime()) < 700 + 50)
    mfx_spin(&m, 10);
  while (lk_redlock_node_quarantined(w, 0) != 0 &&
         ms_since(t_seen, uv_hrtime()) < 700 + rt_scaled_ms(300))
    mfx_spin(&m, 5);
  ASSERT_EQ(lk_redlock_node_quarantined(w, 0), 0);
  ASSERT_OK(mx_rl_release(&m, a));
  ASSERT_OK(mx_rl_acquire(&m, w, 0, 20000, &s));
  {
    /* The attempt may be decided by the other four before master 0
     * answers (LK_EUNKNOWN until it does); its vote must then be a grant. */
    int64_t end = rt_now_ms() + rt_scaled_ms(3000);
    while (lk_redlock_node_status(w, 0) == LK_EUNKNOWN) {
      ASSERT_LT(rt_now_ms(), end);
      mfx_spin(&m, 5);
    }
  }
  ASSERT_EQ(lk_redlock_node_status(w, 0), 0);
  ASSERT_OK(mx_rl_release(&m, w));
  ASSERT_EQ(lost, 0);
  mfx_finish_rls(&m, (lk_redlock_t *[]){a, w, NULL}, b);
}

/* A waiter's budget is kept while the lock stays taken. */
TEST(rl_wait_budget_is_bounded_while_taken) {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *a, *w;
  lk_redlock_opts_t o;
  mx_t s;
  uint64_t t0;
  mfx_start(&m, N, NULL);
  mfx_clients(&m, b, 0);
  a = mx_rl_new(&m, m.c, "rl-budget", NULL);
  w = mx_rl_new(&m, b, "rl-budget", NULL);
  ASSERT_OK(mx_rl_acquire(&m, a, 0, 20000, &s));
  rl_opts(&o, 400, 10000, 200);
  t0 = uv_hrtime();
  int64_t mark = rt_stall_mark();
  ASSERT_EQ(mx_rl_acquire_opts(&m, w, &o, &s), LK_ETIMEDOUT);
  ASSERT_GE(ms_since(t0, s.t_ns), 400 - 1);
  ASSERT_LE(ms_since(t0, s.t_ns), 400 + rt_stall_bound_ms(mark, 250));
  ASSERT_OK(mx_rl_release(&m, a));
  mfx_finish_rls(&m, (lk_redlock_t *[]){a, w, NULL}, b);
}

/* A release answers once a quorum of masters confirmed it (two paused
 * masters do not hold it up for the node timeout), and the next attempt,
 * started while their releases are still due, asks them as soon as those
 * answer: here it needs them, since master 0 is held by someone else. */
TEST(rl_release_answers_at_its_quorum_and_the_next_attempt_waits_for_stragglers) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  uint64_t t0;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, "rl-quorum-release", NULL);
  rl_opts(&o, 0, 30000, rt_scaled_ms(3000));
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  mx_rl_settle(&m, rl);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);

  rt_server_pause(m.srv[3]);
  rt_server_pause(m.srv[4]);
  t0 = uv_hrtime();
  int64_t mark = rt_stall_mark();
  ASSERT_OK(mx_rl_release(&m, rl)); /* masters 0-2: the quorum */
  EXPECT_HOLD(ms_since(t0, uv_hrtime()) < 1000, mark, 1000); /* node timeout: 3 s */
  ASSERT_EQ(lk_redlock_is_held(rl), 0);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-quorum-release"), 0);
  ASSERT_EQ(lk_redlock_node_status(rl, 3), LK_EUNKNOWN); /* still to answer */

  /* Someone else holds master 0; masters 1 and 2 grant; 3 and 4 are still
   * releasing, so the attempt can only win with them. */
  ASSERT_EQ(rt_cmd_int(m.srv[0], "HSET rl-quorum-release other:1 1"), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "PEXPIRE rl-quorum-release 30000"), 1);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_acquire(rl, &o, mx_rl_cb, &s));
  ASSERT_EQ(lk_redlock_node_status(rl, 3), LK_EBUSY);
  rt_server_resume(m.srv[3]);
  rt_server_resume(m.srv[4]);
  mfx_run_until(&m, &s.done, 15000);
  ASSERT_OK(s.status);
  ASSERT_EQ(s.held, 1);
  mx_rl_settle(&m, rl);
  ASSERT_EQ(lk_redlock_node_status(rl, 0), LK_ENOTOWNER);
  for (i = 1; i < 3; i++) {
    ASSERT_EQ(lk_redlock_node_status(rl, (size_t)i), 0);
    ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
  }
  /* The quorum's third vote came from master 3 or 4, whichever was asked
   * first; the other was asked too if its release answered before the
   * attempt was decided, and otherwise not at all. */
  int joined = 0;
  for (i = 3; i < N; i++) {
    int st = lk_redlock_node_status(rl, (size_t)i);
    ASSERT_EQ(st == 0 || st == LK_EBUSY, 1);
    if (st == 0)
      ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
    else /* not asked: its release was the last word, whenever it runs */
      ASSERT_EQ(mx_rl_holds_settle_on(&m, rl, i, 0), 1);
    joined += st == 0;
  }
  ASSERT_GE(joined, 1);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_settle(&m, rl);
  for (i = 1; i < N; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-quorum-release"), 0);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "EXISTS rl-quorum-release"), 1); /* not ours */
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* Two holds, and master 4's answer is still due when both releases end, so
 * neither asks it: stopped after the re-entry, the first release's answer
 * is the late one; stopped before it, the re-entry's grant (the re-entry
 * wins on masters 0-3). Once it answers, whatever it still has is given
 * back, none kept (and renewed) by its lock object. */
static void both_releases_before_a_late_answer(const char *name, int late_reentry) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  rl = mx_rl_new(&m, m.c, name, NULL);
  rl_opts(&o, 0, 30000, rt_scaled_ms(3000));
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  mx_rl_settle(&m, rl);
  if (late_reentry) {
    for (i = 0; i < N; i++)
      ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 1);
    rt_server_pause(m.srv[4]);
  }
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  if (late_reentry) {
    ASSERT_EQ(lk_redlock_hold_count(rl), 2); /* a quorum of masters 0-3 */
    ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_EUNKNOWN);
  } else {
    mx_rl_settle(&m, rl); /* every master's answer in: all five are asked */
    for (i = 0; i < N; i++)
      ASSERT_EQ(mx_rl_holds_on(&m, rl, i), 2);
    rt_server_pause(m.srv[4]);
  }
  ASSERT_OK(mx_rl_release(&m, rl)); /* a quorum of masters 0-3; 4 is due */
  ASSERT_OK(mx_rl_release(&m, rl)); /* 4 is busy: not asked */
  ASSERT_EQ(lk_redlock_is_held(rl), 0);
  for (i = 0; i < 4; i++) /* some may still be settling */
    ASSERT_EQ(mfx_wait_key_gone(&m, i, name, 5000), 1);
  rt_server_resume(m.srv[4]);
  /* Master 4 answers the first release (2 -> 1) or grants the re-entry
   * (1 -> 2), then gets back what the RedLock no longer holds. */
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (lk_lock_hold_count(lk_redlock_node_lock(rl, 4)) != 0 && rt_now_ms() < end)
    mfx_spin(&m, 5);
  ASSERT_EQ(lk_lock_hold_count(lk_redlock_node_lock(rl, 4)), 0);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, name, 5000), 1);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

TEST(rl_reentrant_release_straggler_gives_back_its_last_hold) {
  both_releases_before_a_late_answer("rl-reentry-straggler", 0);
}

TEST(rl_reentry_grant_after_both_releases_gives_back_every_hold) {
  both_releases_before_a_late_answer("rl-reentry-late-grant", 1);
}

/* Clients whose locks are renewed every lease/3 of the given default lease,
 * and whose reply timeout outlasts any pause here: a stopped master's
 * answer comes late, not as a dropped connection. */
static void clients_patient(mfx_t *m, lk_client_t **set, int64_t lease_ms) {
  int i;
  for (i = 0; i < m->n; i++) {
    lk_client_opts_t co;
    mfx_client_opts(m, i, &co);
    co.default_lease_ms = lease_ms;
    co.reply_timeout_ms = 60000;
    ASSERT_OK(lk_client_new(&m->loop, &co, &set[i]));
  }
  mfx_wait_connected(m, set);
}

/* The loss cases: five masters, patient clients, and a RedLock on them
 * that counts its losses in lost. */
typedef struct lossfx_s {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *rl;
  lk_redlock_opts_t o; /* lease -1 (the watchdog renews), no wait */
  const char *name;
  int lost;
} lossfx_t;

/* Starts f and has its RedLock held once on every master (node timeout
 * node_ms). */
static void held_renewed(lossfx_t *f, const char *name, int64_t node_ms) {
  mx_t s;
  int i;
  memset(f, 0, sizeof(*f));
  f->name = name;
  mfx_start(&f->m, N, NULL);
  clients_patient(&f->m, f->b, 6000);
  f->rl = mx_rl_new(&f->m, f->b, name, NULL);
  ASSERT_OK(lk_redlock_set_lost_cb(f->rl, count_lost, &f->lost));
  rl_opts(&f->o, 0, -1, node_ms);
  ASSERT_OK(mx_rl_acquire_opts(&f->m, f->rl, &f->o, &s));
  mx_rl_settle(&f->m, f->rl);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&f->m, f->rl, i), 1);
}

static void lossfx_close(lossfx_t *f) {
  mx_rl_close(&f->m, f->rl);
  mfx_close_set(&f->m, f->b);
  mfx_finish(&f->m);
}

/* How a loss case ends: no master's lock believes it holds, no master has
 * the key (bounded wait), the loss was told once; then f is closed. */
static void lossfx_finish_nothing_kept(lossfx_t *f) {
  int i;
  for (i = 0; i < N; i++) {
    ASSERT_EQ(lk_lock_is_held(lk_redlock_node_lock(f->rl, (size_t)i)), 0);
    ASSERT_EQ(mfx_wait_key_gone(&f->m, i, f->name, 5000), 1);
  }
  ASSERT_EQ(f->lost, 1);
  lossfx_close(f);
}

/* Runs the loop until *lost counts one loss (bounded: a renewal period of
 * the 6 s lease is 2 s). */
static void wait_lost(mfx_t *m, const int *lost) {
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  while (*lost == 0 && rt_now_ms() < end)
    mfx_spin(m, 5);
  ASSERT_EQ(*lost, 1);
}

/* Runs the loop until master i's lock object has no hold left (bounded);
 * its hold count then. */
static uint32_t wait_node_free(mfx_t *m, lk_redlock_t *rl, int i) {
  lk_lock_t *l = lk_redlock_node_lock(rl, (size_t)i);
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (lk_lock_hold_count(l) != 0 && rt_now_ms() < end)
    mfx_spin(m, 5);
  return lk_lock_hold_count(l);
}

/* Runs the loop until master i's lock object reports its hold lost: its
 * next renewal finds the key deleted (bounded: a renewal period of the 6 s
 * lease is 2 s). The lock keeps its count, lost: lk_lock_is_held turns 0. */
static void wait_node_lost(mfx_t *m, lk_redlock_t *rl, int i) {
  lk_lock_t *l = lk_redlock_node_lock(rl, (size_t)i);
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  while (lk_lock_is_held(l) && rt_now_ms() < end)
    mfx_spin(m, 5);
  ASSERT_EQ(lk_lock_is_held(l), 0);
}

/* Runs the loop until master i answered the attempt (bounded); its status. */
static int wait_answer(mfx_t *m, lk_redlock_t *rl, int i) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (lk_redlock_node_status(rl, (size_t)i) == LK_EUNKNOWN && rt_now_ms() < end)
    mfx_spin(m, 2);
  return lk_redlock_node_status(rl, (size_t)i);
}

/* Starts f held once on every master (node timeout 20 s), has master 3's
 * hold lost (its renewal finds it deleted; four still hold), stops masters 2
 * and 4, and starts a re-entry (its callback fills s): it asks 0, 1, 2 and
 * 4, not 3. Returns once 0 and 1 granted it (bounded). */
static void reentry_granted_by_0_and_1(lossfx_t *f, const char *name, mx_t *s) {
  held_renewed(f, name, rt_scaled_ms(20000));
  mx_unclog(&f->m, 3, f->name);
  wait_node_lost(&f->m, f->rl, 3);
  ASSERT_EQ(f->lost, 0);
  ASSERT_EQ(lk_redlock_is_held(f->rl), 1);

  rt_server_pause(f->m.srv[2]);
  rt_server_pause(f->m.srv[4]);
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_redlock_acquire(f->rl, &f->o, mx_rl_cb, s));
  ASSERT_EQ(lk_redlock_node_status(f->rl, 3), LK_ENOTHELD);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(5000);
    while ((lk_redlock_node_status(f->rl, 0) != 0 || lk_redlock_node_status(f->rl, 1) != 0) &&
           rt_now_ms() < end)
      mfx_spin(&f->m, 2);
  }
  ASSERT_EQ(lk_redlock_node_status(f->rl, 0), 0);
  ASSERT_EQ(lk_redlock_node_status(f->rl, 1), 0);
}

/* The quorum is lost while master 4's re-entry answer is still due: 4 is
 * stopped across the re-entry (won on masters 0-3) and the loss (the holds
 * on masters 0-2 deleted: their renewals find them gone). on_lost gives
 * back what the idle masters hold; once master 4 answers, its lock object
 * must give back its first hold too, not only the late grant: nothing of
 * the lost RedLock is kept (and renewed) on any master. */
TEST(rl_quorum_lost_while_a_reentry_answer_is_due_gives_back_every_hold) {
  lossfx_t f;
  mx_t s;
  int i;
  held_renewed(&f, "rl-lost-late-reentry", rt_scaled_ms(3000));

  rt_server_pause(f.m.srv[4]);
  ASSERT_OK(mx_rl_acquire_opts(&f.m, f.rl, &f.o, &s)); /* a quorum of masters 0-3 */
  ASSERT_EQ(lk_redlock_hold_count(f.rl), 2);
  ASSERT_EQ(lk_redlock_node_status(f.rl, 4), LK_EUNKNOWN);
  for (i = 0; i < 3; i++)
    mx_unclog(&f.m, i, f.name);
  wait_lost(&f.m, &f.lost);
  ASSERT_EQ(lk_redlock_is_held(f.rl), 0);
  for (i = 0; i < 4; i++)
    ASSERT_EQ(mfx_wait_key_gone(&f.m, i, f.name, 5000), 1);
  /* Still in time on master 4 (its lease is 6 s): the first hold is there,
   * the re-entry's answer due. */
  ASSERT_EQ(lk_lock_hold_count(lk_redlock_node_lock(f.rl, 4)), 1);
  ASSERT_EQ(lk_redlock_node_status(f.rl, 4), LK_EUNKNOWN);

  rt_server_resume(f.m.srv[4]);
  ASSERT_EQ(wait_answer(&f.m, f.rl, 4), 0); /* it granted the re-entry */
  ASSERT_EQ(wait_node_free(&f.m, f.rl, 4), 0);
  ASSERT_EQ(lk_lock_is_held(lk_redlock_node_lock(f.rl, 4)), 0);
  ASSERT_EQ(mfx_wait_key_gone(&f.m, 4, f.name, 5000), 1);
  ASSERT_EQ(f.lost, 1);
  ASSERT_EQ(lk_redlock_release(f.rl, mx_rl_cb, &s), LK_ELEASELOST);
  lossfx_close(&f);
}

/* The quorum is lost while a re-entry is undecided: master 3's hold is
 * already gone (its renewal found it deleted; four still hold), masters 2
 * and 4 are stopped, 0 and 1 granted; then the holds on 0 and 1 are deleted
 * and on_lost fires. The grants of masters whose holds are gone must not
 * win the re-entry once 2 or 4 answers: it reports LK_ELEASELOST when both
 * did, and nothing is kept on any master. */
TEST(rl_quorum_lost_during_a_reentry_fails_it_and_gives_back_every_hold) {
  lossfx_t f;
  mx_t s;
  reentry_granted_by_0_and_1(&f, "rl-lost-mid-reentry", &s);
  ASSERT_EQ(s.done, 0); /* two votes: it waits for 2 and 4 */
  mx_unclog(&f.m, 0, f.name);
  mx_unclog(&f.m, 1, f.name);
  wait_lost(&f.m, &f.lost);
  ASSERT_EQ(lk_redlock_is_held(f.rl), 0);
  ASSERT_EQ(s.done, 0);

  rt_server_resume(f.m.srv[2]);
  rt_server_resume(f.m.srv[4]);
  mfx_run_until(&f.m, &s.done, 15000);
  ASSERT_EQ(s.status, LK_ELEASELOST);
  ASSERT_EQ(lk_redlock_is_held(f.rl), 0);
  /* Masters 0, 1 and 3 lost their holds in their lock objects; 2 and 4
   * granted the re-entry and must give back both holds. */
  ASSERT_EQ(wait_node_free(&f.m, f.rl, 2), 0);
  ASSERT_EQ(wait_node_free(&f.m, f.rl, 4), 0);
  lossfx_finish_nothing_kept(&f);
}

/* A re-entry canceled after on_lost: masters 0 and 1 granted it and then
 * lost their holds (on_lost), master 2 granted it after the loss, master 4
 * still owes its answer when the user cancels. Nothing may be kept: master
 * 2 gives back both its holds at the cancel (rl->holds still counts the
 * lost hold), master 4 both of its own once it answers. */
TEST(rl_cancel_after_on_lost_gives_back_every_hold) {
  lossfx_t f;
  mx_t s;
  reentry_granted_by_0_and_1(&f, "rl-lost-cancel", &s);
  mx_unclog(&f.m, 0, f.name);
  mx_unclog(&f.m, 1, f.name);
  wait_lost(&f.m, &f.lost);
  ASSERT_EQ(s.done, 0);

  rt_server_resume(f.m.srv[2]);
  ASSERT_EQ(wait_answer(&f.m, f.rl, 2), 0); /* granted after the loss */
  ASSERT_EQ(s.done, 0); /* master 4's answer is still due */
  ASSERT_OK(lk_redlock_cancel(f.rl));
  mfx_run_until(&f.m, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(wait_node_free(&f.m, f.rl, 2), 0);

  rt_server_resume(f.m.srv[4]);
  ASSERT_EQ(wait_node_free(&f.m, f.rl, 4), 0);
  lossfx_finish_nothing_kept(&f);
}

/* Runs the loop until the rule armed on px has acted (bounded). */
static void wait_rule_applied(mfx_t *m, rt_proxy_t *px) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (rt_proxy_rule_state(px) != RT_PROXY_RULE_APPLIED && rt_now_ms() < end)
    mfx_spin(m, 2);
  ASSERT_EQ(rt_proxy_rule_state(px), RT_PROXY_RULE_APPLIED);
}

/* The quorum is lost while a fenced re-entry is fencing, with masters
 * still owing the attempt's answers. Masters 0, 1 and 2 granted it; 2's
 * token write is held at a proxy (2's client has a 60 s lease, so the
 * renewals held behind it do not matter); 3 and 4 are stopped with their
 * acquires due (their clients give up only at the 60 s reply timeout) and
 * lose their earlier holds when the 6 s lease runs out, which leaves the
 * three voters as the quorum; then master 0's hold is deleted: on_lost.
 * The acquire must end LK_ELEASELOST by the node timeout, not wait for 3
 * and 4, and nothing may be kept. */
TEST(rl_quorum_lost_while_fencing_ends_by_the_node_timeout) {
  const int64_t node_ms = rt_scaled_ms(12000);
  lossfx_t f;
  rt_proxy_t *px;
  char token_write[64];
  mx_t s;
  int i;
  memset(&f, 0, sizeof(f));
  f.name = "rl-lost-fencing";
  mfx_start(&f.m, N, NULL);
  px = rt_proxy_start(rt_server_port(f.m.srv[2]));
  ASSERT_NOT_NULL(px);
  for (i = 0; i < N; i++) {
    lk_client_opts_t co;
    mfx_client_opts(&f.m, i, &co);
    co.default_lease_ms = i == 2 ? 60000 : 6000;
    co.reply_timeout_ms = 60000;
    if (i == 2)
      co.port = rt_proxy_port(px);
    ASSERT_OK(lk_client_new(&f.m.loop, &co, &f.b[i]));
  }
  mfx_wait_connected(&f.m, f.b);
  f.rl = mx_rl_new(&f.m, f.b, f.name, NULL);
  ASSERT_OK(lk_redlock_set_lost_cb(f.rl, count_lost, &f.lost));
  rl_opts(&f.o, 0, -1, node_ms);
  f.o.fenced = 1;
  ASSERT_OK(mx_rl_acquire_opts(&f.m, f.rl, &f.o, &s)); /* the token script is loaded */
  mx_rl_settle(&f.m, f.rl);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&f.m, f.rl, i), 1);

  /* Master 2 answers the re-entry first; then its token write's reply is
   * held, and 0 and 1 make the quorum that starts the fencing. */
  for (i = 0; i < N; i++)
    if (i != 2)
      rt_server_pause(f.m.srv[i]);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_acquire(f.rl, &f.o, mx_rl_cb, &s));
  ASSERT_EQ(wait_answer(&f.m, f.rl, 2), 0);
  snprintf(token_write, sizeof(token_write), "EVALSHA %s",
           lk__script_find("multilock/token_raise")->sha1);
  rt_proxy_on_reply(px, token_write, 1, RT_PROXY_HOLD, NULL, 0);
  rt_server_resume(f.m.srv[0]);
  rt_server_resume(f.m.srv[1]);
  ASSERT_EQ(wait_answer(&f.m, f.rl, 0), 0);
  ASSERT_EQ(wait_answer(&f.m, f.rl, 1), 0);
  wait_rule_applied(&f.m, px);
  ASSERT_EQ(s.done, 0); /* two tokens written of the quorum's three */

  wait_node_lost(&f.m, f.rl, 3);
  wait_node_lost(&f.m, f.rl, 4);
  ASSERT_EQ(f.lost, 0); /* 0, 1 and 2 hold it */
  mx_unclog(&f.m, 0, f.name);
  wait_lost(&f.m, &f.lost);
  ASSERT_EQ(s.done, 0);
  mfx_run_until(&f.m, &s.done, node_ms + rt_scaled_ms(5000));
  ASSERT_EQ(s.done, 1);
  ASSERT_EQ(s.status, LK_ELEASELOST);

  rt_server_resume(f.m.srv[3]);
  rt_server_resume(f.m.srv[4]);
  rt_proxy_release(px);
  /* 2 gave back both holds at the loss; 3 and 4 give back their late
   * grants (their earlier holds were lost). Master 0's lock keeps its
   * count, lost, as a lost lock does. */
  for (i = 2; i < N; i++)
    ASSERT_EQ(wait_node_free(&f.m, f.rl, i), 0);
  lossfx_finish_nothing_kept(&f);
  rt_proxy_stop(px);
}

/* A master that granted a re-entry and then lost its hold (its renewal
 * found it deleted) no longer votes, while the RedLock keeps its quorum: the
 * re-entry needs a quorum of masters still holding. Master 3's hold is gone
 * before (four hold), 2 and 4 are stopped, 0 and 1 grant, then master 0's
 * hold is lost. Once 2 grants, the votes of 0, 1 and 2 would make three,
 * yet only 1 and 2 hold twice: the re-entry must wait for 4 and succeed
 * with masters 1, 2 and 4. */
TEST(rl_master_lost_after_granting_a_reentry_no_longer_votes) {
  lossfx_t f;
  mx_t s;
  int i;
  reentry_granted_by_0_and_1(&f, "rl-vote-lost", &s);
  mx_unclog(&f.m, 0, f.name);
  wait_node_lost(&f.m, f.rl, 0);
  ASSERT_EQ(f.lost, 0); /* masters 1, 2 and 4 still hold it */
  ASSERT_EQ(s.done, 0);

  rt_server_resume(f.m.srv[2]);
  ASSERT_EQ(wait_answer(&f.m, f.rl, 2), 0);
  ASSERT_EQ(s.done, 0); /* two votes (1, 2): it waits for 4 */

  rt_server_resume(f.m.srv[4]);
  mfx_run_until(&f.m, &s.done, 15000);
  ASSERT_EQ(s.status, 0);
  ASSERT_EQ(s.held, 1);
  ASSERT_GT(s.validity_ms, 0);
  ASSERT_EQ(lk_redlock_hold_count(f.rl), 2);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mx_rl_holds_on(&f.m, f.rl, i), i == 0 || i == 3 ? 0 : 2);
  ASSERT_EQ(f.lost, 0);
  ASSERT_OK(mx_rl_release(&f.m, f.rl));
  mx_rl_settle(&f.m, f.rl);
  ASSERT_OK(mx_rl_release(&f.m, f.rl));
  for (i = 0; i < N; i++)
    ASSERT_EQ(mfx_wait_key_gone(&f.m, i, f.name, 5000), 1);
  lossfx_close(&f);
}
