/* latchkey's own recipes through a graceful cluster failover (issue 25,
 * "untested combinations"): the leader election, the double barrier and the
 * rate limiter, each on a name whose slot one master of a 3 + 3 cluster
 * owns, while CLUSTER FAILOVER (coordinated: the replica catches up with
 * the master before it takes over, so nothing written is lost) is run on
 * that master's replica with the loop running.
 *
 * Nothing is lost, so each recipe must go on as if nothing happened: its
 * renewals, polls and notifications must follow the slot to the new master
 * (a renewal left at the old master meets MOVED; a subscription left there
 * hears nothing). Each test watches for longer than the lease it uses, so a
 * renewal that did not follow would let the server end a leadership or
 * drop a member within the test. */
#include <stdio.h>
#include <stdlib.h>

#include "../barrier/barrier_fixture.h"
#include "../leader/leader_fixture.h"
#include "../ratelimiter/rl_fixture.h"
#include "cluster_fixture.h"

/* Client options whose waits re-poll only every 20 s: a wake-up within a
 * second can then only come from a notification, which must have followed
 * the slot to its new master. */
static void slow_repoll_opts(lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->max_repoll_ms = 20000;
}

/* Starts the fixture and returns a second client seeded at master 2, both
 * re-polling only every 20 s; *m: master mi, *r: its replica, the one a
 * failover promotes. */
static lk_client_t *start_slow_repoll(cfx_t *f, int mi, int *m, int *r) {
  lk_client_opts_t o, o2;
  slow_repoll_opts(&o);
  slow_repoll_opts(&o2);
  cfx_start(f, 0, &o);
  *m = f->masters[mi];
  *r = rt_cluster_replica_of(f->cl, *m);
  ASSERT_GE(*r, 0);
  return cfx_client(f, f->masters[2], &o2);
}

/* ---- leader election ------------------------------------------------------------------------ */

static void ld_count_lost(lk_leader_t *l, int status, void *arg) {
  (void)l;
  ASSERT_EQ(status, LK_ELEASELOST);
  (*(int *)arg)++;
}

/* A leader in one client, a second candidate (also observing) in another.
 * Through the failover and for longer than the lease after it: the leader
 * keeps leading with its term (no on_lost: nothing was lost), the other
 * candidate is never elected, the observer sees one term. Then the leader
 * resigns, and the give-back, published on the new master, elects the
 * other candidate well before its re-poll (the holder's remaining lease). */
TEST(leader_keeps_its_term_through_a_graceful_failover_and_hands_over_after_it) {
  const int64_t lease = 3000;
  cfx_t f;
  char role[64], key[128];
  ld_op_t sa, sb, sr;
  ld_obs_t obs;
  int lost = 0;
  memset(&obs, 0, sizeof obs);
  int m, r;
  lk_client_t *c2 = start_slow_repoll(&f, 1, &m, &r);
  cfx_name_on(&f, m, "fo-leader-", role, sizeof role);
  snprintf(key, sizeof key, "latchkey_leader:{%s}", role);

  lk_leader_t *a = ld_new(f.fx.c, role), *b = ld_new(c2, role);
  ASSERT_OK(lk_leader_set_lost_cb(a, ld_count_lost, &lost));
  ld_campaign(a, lease, "a", &sa);
  rt_run_until(&f.fx.loop, &sa.done, 10000);
  ASSERT_OK(sa.status);
  ASSERT_GT(sa.term, 0);
  ASSERT_OK(lk_leader_observe(b, ld_obs_cb, &obs));
  ld_campaign(b, lease, "b", &sb);
  rt_run_until(&f.fx.loop, &obs.n, 10000);
  ASSERT_EQ(obs.term[0], sa.term);
  cfx_assert_key_on(&f, key, role, m);

  uint64_t t_fo = cfx_failover_live(&f, r, NULL, NULL);
  /* Safety window: longer than the lease, so renewals that did not reach
   * the new master would let its server end the leadership in it. */
  int64_t end = rt_now_ms() + lease + 1000;
  while (rt_now_ms() < end) {
    fx_spin(&f.fx, 5);
    if (sb.done)
      FAIL("the second candidate's campaign ended (%s) while the first led", lk_err_name(sb.status));
    ASSERT_EQ(lost, 0);
    ASSERT(lk_leader_is_leader(a));
  }
  ASSERT_EQ(lk_leader_term(a), sa.term);
  cfx_assert_key_on(&f, key, role, r); /* on the new master */
  char *term = rt_cmd_str(cfx_srv(&f, r), "HGET %s term", key);
  ASSERT_NOT_NULL(term);
  ASSERT_EQ(atoll(term), sa.term);
  free(term);
  for (int i = 0; i < obs.n; i++)
    ASSERT_EQ(obs.term[i], sa.term);
  fprintf(stderr, "note: leader kept for %.0f ms after the failover, %d observer callback(s)\n",
          cfx_ms_since(t_fo, uv_hrtime()), obs.n);

  memset(&sr, 0, sizeof sr);
  ASSERT_OK(lk_leader_resign(a, ld_op_cb, &sr));
  uint64_t t_resign = uv_hrtime();
  FX_EVENTUALLY(&f.fx, sr.done && sb.done, 10000);
  ASSERT_OK(sr.status);
  ASSERT_OK(sb.status);
  ASSERT_GT(sb.term, sa.term);
  double handover = cfx_ms_since(t_resign, sb.t_ns);
  fprintf(stderr, "note: hand-over on the new master took %.1f ms\n", handover);
  /* The give-back's message, not the re-poll (up to the lease away). */
  ASSERT_LT(handover, (double)rt_scaled_ms(1000));
  FX_EVENTUALLY(&f.fx, obs.term[obs.n - 1] == sb.term, 5000);
  ASSERT_EQ(lost, 0);

  ld_close(&f.fx.loop, a);
  ld_close(&f.fx.loop, b);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- double barrier --------------------------------------------------------------------------- */

/* Three members in two clients, a 1.5 s lease. Two enter and wait; the
 * slot fails over; after longer than the lease the third enters and all
 * three are released in one round, nobody dropped. Then two leave and
 * wait; the slot fails back; after longer than the lease the third leaves
 * and every leave completes, nobody dropped. A renewal or a wake-up that
 * stayed with the old master would drop members or leave waiters hanging
 * until their budget. */
TEST(barrier_enter_and_leave_complete_through_graceful_failovers_with_nobody_dropped) {
  const int64_t lease = 1500, budget = 30000;
  cfx_t f;
  char name[64], members_key[128];
  br_op_t e[3], l[3];
  int m, r;
  lk_client_t *c2 = start_slow_repoll(&f, 0, &m, &r);
  cfx_name_on(&f, m, "fo-barrier-", name, sizeof name);
  snprintf(members_key, sizeof members_key, "latchkey_barrier_members:{%s}", name);
  lk_barrier_t *b[3] = {br_new(f.fx.c, name, 3), br_new(f.fx.c, name, 3), br_new(c2, name, 3)};

  br_enter(b[0], budget, lease, NULL, &e[0]);
  br_enter(b[1], budget, lease, NULL, &e[1]);
  FX_EVENTUALLY(&f.fx, rt_cmd_int(cfx_srv(&f, m), "ZCARD %s", members_key) == 2, 5000);
  cfx_failover_live(&f, r, NULL, NULL);
  int64_t end = rt_now_ms() + lease + 500;
  while (rt_now_ms() < end) {
    fx_spin(&f.fx, 5);
    ASSERT(!e[0].done && !e[1].done); /* two of three: nobody is released */
  }
  uint64_t t_third = uv_hrtime();
  br_enter(b[2], budget, lease, NULL, &e[2]);
  FX_EVENTUALLY(&f.fx, e[0].done && e[1].done && e[2].done, 10000);
  double spread = 0;
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(e[i].status);
    ASSERT_EQ(e[i].ndropped, 0);
    ASSERT_EQ(e[i].round, e[0].round);
    double d = cfx_ms_since(t_third, e[i].t_ns);
    spread = d > spread ? d : spread;
  }
  fprintf(stderr, "note: released %.1f ms after the third entered on the new master\n", spread);
  ASSERT_LT(spread, (double)rt_scaled_ms(1000)); /* the release message, not a re-poll */

  br_leave(b[0], budget, &l[0]);
  br_leave(b[1], budget, &l[1]);
  FX_EVENTUALLY(&f.fx, rt_cmd_int(cfx_srv(&f, r), "ZCARD %s", members_key) == 1, 5000);
  cfx_failover_live(&f, m, NULL, NULL); /* back to the first master */
  end = rt_now_ms() + lease + 500;
  while (rt_now_ms() < end) {
    fx_spin(&f.fx, 5);
    ASSERT(!l[0].done && !l[1].done); /* the third is still in */
  }
  uint64_t t_last = uv_hrtime();
  br_leave(b[2], budget, &l[2]);
  FX_EVENTUALLY(&f.fx, l[0].done && l[1].done && l[2].done, 10000);
  spread = 0;
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(l[i].status);
    ASSERT_EQ(l[i].ndropped, 0);
    double d = cfx_ms_since(t_last, l[i].t_ns);
    spread = d > spread ? d : spread;
  }
  fprintf(stderr, "note: leaves completed %.1f ms after the last left, after failing back\n",
          spread);
  ASSERT_LT(spread, (double)rt_scaled_ms(1000));
  ASSERT_EQ(rt_cmd_int(cfx_srv(&f, m), "ZCARD %s", members_key), 0);

  for (int i = 0; i < 3; i++)
    br_close(&f.fx.loop, b[i]);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- rate limiter ---------------------------------------------------------------------------- */

#define RL_WORKERS 4
#define RL_MAX_GRANTS 512

/* Four objects in two clients keep asking for one permit each (budget
 * 2 s) of a limiter of 10 per second over every client, for 1.5 s before
 * a failover of its slot and 2.5 s after. Every call ends within its
 * budget + the reply timeout, with a permit or LK_ETIMEDOUT; permits keep
 * being granted after the failover; and no sliding window of the server's
 * grant times holds more than the rate: the window (a sorted set) is
 * replicated before a coordinated failover, so the docs promise no
 * allowance for it (docs/ratelimiter.md). */
TEST(ratelimiter_never_exceeds_its_rate_through_a_graceful_failover) {
  const int64_t rate = 10, interval = 1000, budget = 2000;
  cfx_t f;
  char name[64];
  rl_sx_t s[RL_WORKERS];
  uint64_t t0[RL_WORKERS];
  rl_grant_t grants[RL_MAX_GRANTS];
  size_t n = 0, after = 0, timeouts = 0;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  cfx_start(&f, 0, &o);
  int m = f.masters[2], r = rt_cluster_replica_of(f.cl, m);
  ASSERT_GE(r, 0);
  lk_client_t *c2 = cfx_client(&f, f.masters[0], NULL);
  cfx_name_on(&f, m, "fo-rate-", name, sizeof name);
  lk_ratelimiter_t *rl[RL_WORKERS];
  for (int i = 0; i < RL_WORKERS; i++)
    rl[i] = rl_new(i % 2 ? c2 : f.fx.c, name);
  ASSERT_OK(rl_set(&f.fx.loop, rl[0], 1, LK_RATE_OVERALL, rate, interval, NULL));

  uint64_t t_fo = 0;
  int phase = 0; /* 0 before the failover, 1 after it, 2 winding down */
  int64_t t_start = rt_now_ms(), t_stop = 0;
  for (int i = 0; i < RL_WORKERS; i++) {
    t0[i] = uv_hrtime();
    rl_start_acquire(rl[i], 1, budget, &s[i]);
  }
  int pending = RL_WORKERS;
  while (pending > 0) {
    fx_spin(&f.fx, 2);
    if (phase == 0 && rt_now_ms() - t_start >= 1500) {
      cfx_failover_ask(&f, r);
      phase = 1;
    }
    if (phase == 1 && t_fo == 0 && rt_cluster_is_master(f.cl, r) == 1) {
      t_fo = uv_hrtime();
      t_stop = rt_now_ms() + 2500;
    }
    if (phase == 1 && t_fo != 0 && rt_now_ms() >= t_stop)
      phase = 2;
    if (rt_now_ms() - t_start > rt_scaled_ms(40000))
      FAIL("the run did not wind down (phase %d, %d pending)", phase, pending);
    for (int i = 0; i < RL_WORKERS; i++) {
      if (!s[i].x.done || t0[i] == 0)
        continue;
      double took = cfx_ms_since(t0[i], s[i].x.t_ns);
      if (took > (double)(budget + o.reply_timeout_ms + rt_scaled_ms(500)))
        FAIL("acquire %d ended %s after %.0f ms (budget %lld ms)", i, lk_err_name(s[i].x.status),
             took, (long long)budget);
      if (s[i].x.status == 0) {
        ASSERT_LT(n, RL_MAX_GRANTS);
        grants[n].t_ms = s[i].grant_ms;
        grants[n].permits = 1;
        n++;
        if (t_fo != 0 && s[i].x.t_ns > t_fo)
          after++;
      } else if (s[i].x.status == LK_ETIMEDOUT) {
        timeouts++;
      } else {
        FAIL("acquire %d ended %s (%s)", i, lk_err_name(s[i].x.status), s[i].errtext);
      }
      if (phase == 2) {
        t0[i] = 0;
        pending--;
        continue;
      }
      t0[i] = uv_hrtime();
      rl_start_acquire(rl[i], 1, budget, &s[i]);
    }
  }
  int64_t worst = rl_max_in_window(grants, n, interval);
  fprintf(stderr,
          "note: %zu permits granted (%zu after the failover), %zu timed out; at most %lld in "
          "any %lld ms window (rate %lld)\n",
          n, after, timeouts, (long long)worst, (long long)interval, (long long)rate);
  ASSERT_LE(worst, rate);
  ASSERT_GE(after, (size_t)rate); /* over 2.5 s at 10/s: the limiter goes on granting */

  for (int i = 0; i < RL_WORKERS; i++)
    rl_close(&f.fx.loop, rl[i]);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- idle waiters --------------------------------------------------------------------------- */

/* Waiters whose clients send nothing around the failover (30 s leases, so
 * no renewal for 10 s; re-polls 20 s apart): a leader candidate in one
 * client, two barrier members in the other. Right after the promotion the
 * other client of each acts on the new master (found by MOVED): the leader
 * resigns, the third member enters. The idle waiters must be woken by
 * those messages, so their subscriptions must have moved to the new master
 * by then, or been re-polled once moved (docs/client.md: a sunsubscribe
 * push from the old owner, a MOVED or the next read of the slot map moves
 * them, and every waiter on them re-polls at once). */
TEST(idle_waiters_of_a_leader_and_a_barrier_are_woken_on_the_new_master_right_after_failover) {
  const int64_t lease = 30000, budget = 30000;
  cfx_t f;
  char role[96], name[96], tag[64];
  ld_op_t sa, sb, sr;
  br_op_t e[3];
  int m, r;
  lk_client_t *c2 = start_slow_repoll(&f, 1, &m, &r);
  ASSERT_GE(rt_cluster_key_on(f.cl, m, "fo-idle-", tag, sizeof tag), 0);
  snprintf(role, sizeof role, "{%s}leader", tag);
  snprintf(name, sizeof name, "{%s}barrier", tag);

  lk_leader_t *a = ld_new(f.fx.c, role), *b = ld_new(c2, role);
  ld_campaign(a, lease, "a", &sa);
  rt_run_until(&f.fx.loop, &sa.done, 10000);
  ASSERT_OK(sa.status);
  ld_campaign(b, lease, "b", &sb);
  lk_barrier_t *br[3] = {br_new(c2, name, 3), br_new(c2, name, 3), br_new(f.fx.c, name, 3)};
  br_enter(br[0], budget, lease, NULL, &e[0]);
  br_enter(br[1], budget, lease, NULL, &e[1]);
  char members_key[128], leader_channel[128], barrier_channel[128];
  snprintf(members_key, sizeof members_key, "latchkey_barrier_members:%s", name);
  snprintf(leader_channel, sizeof leader_channel, "latchkey_leader__channel:%s", role);
  snprintf(barrier_channel, sizeof barrier_channel, "latchkey_barrier__channel:%s", name);
  FX_EVENTUALLY(&f.fx, rt_cmd_int(cfx_srv(&f, m), "ZCARD %s", members_key) == 2, 5000);
  cfx_wait_subscribers(&f, leader_channel, 1);
  cfx_wait_subscribers(&f, barrier_channel, 1);
  fx_spin(&f.fx, 100); /* the waiters' first polls answered: they sleep now */
  ASSERT(!sb.done && !e[0].done && !e[1].done);

  uint64_t t_fo = cfx_failover_live(&f, r, NULL, NULL);
  memset(&sr, 0, sizeof sr);
  ASSERT_OK(lk_leader_resign(a, ld_op_cb, &sr));
  uint64_t t_act = uv_hrtime();
  br_enter(br[2], budget, lease, NULL, &e[2]);
  FX_EVENTUALLY(&f.fx, sr.done && sb.done && e[0].done && e[1].done && e[2].done, 25000);
  fprintf(stderr,
          "note: acted %.1f ms after the promotion; idle candidate elected after %.1f ms, idle "
          "members released after %.1f / %.1f ms\n",
          cfx_ms_since(t_fo, t_act), cfx_ms_since(t_act, sb.t_ns), cfx_ms_since(t_act, e[0].t_ns),
          cfx_ms_since(t_act, e[1].t_ns));
  ASSERT_OK(sr.status);
  ASSERT_OK(sb.status);
  ASSERT_GT(sb.term, sa.term);
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(e[i].status);
    ASSERT_EQ(e[i].ndropped, 0);
  }
  /* By a message (or the re-poll a moved subscription triggers), not by a
   * re-poll 20 s away. */
  ASSERT_LT(cfx_ms_since(t_act, sb.t_ns), (double)rt_scaled_ms(2000));
  ASSERT_LT(cfx_ms_since(t_act, e[0].t_ns), (double)rt_scaled_ms(2000));
  ASSERT_LT(cfx_ms_since(t_act, e[1].t_ns), (double)rt_scaled_ms(2000));

  ld_close(&f.fx.loop, a);
  ld_close(&f.fx.loop, b);
  for (int i = 0; i < 3; i++)
    br_close(&f.fx.loop, br[i]);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}
