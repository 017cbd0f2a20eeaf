/* Double barrier, one process (label barrier): release and leave, rounds
 * of one name, a late member, a budget running out, bad inputs, cancel and
 * close while waiting, members that disagree on N. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "barrier_fixture.h"

#define LEASE 5000

TEST(enter_release_leave) {
  fx_t fx;
  lk_client_opts_t co;
  br_op_t a, b, c, la, lb, lc;
  lk_client_opts_init(&co);
  co.max_repoll_ms = 10000; /* a wake-up within far less must be the message */
  fx_start_with(&fx, NULL, &co);
  lk_barrier_t *ba = br_new(fx.c, "job", 3), *bb = br_new(fx.c, "job", 3),
               *bc = br_new(fx.c, "job", 3);
  ASSERT_STREQ(lk_barrier_name(ba), "job");
  ASSERT_EQ(lk_barrier_members(ba), 3);
  ASSERT_EQ(lk_barrier_round(ba), 0);
  br_enter(ba, -1, LEASE, "a", &a);
  br_enter(bb, -1, LEASE, NULL, &b);
  ASSERT_STREQ(lk_barrier_member(ba), "a");
  ASSERT_EQ(strncmp(lk_barrier_member(bb), lk_client_id(fx.c), 36), 0); /* the owner id */
  BR_WAIT_MEMBERS(&fx, "job", 2);
  fx_wait_subscribers(&fx, BR_CHANNEL("job"), 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(a.done + b.done, 0);
  /* The layout (docs/barrier.md). */
  char *v = rt_cmd_str(fx.srv, "HGET " BR_STATE("job") " round");
  ASSERT_STREQ(v, "1");
  free(v);
  v = rt_cmd_str(fx.srv, "HGET " BR_STATE("job") " n");
  ASSERT_STREQ(v, "3");
  free(v);
  v = rt_cmd_str(fx.srv, "ZSCORE " BR_MEMBERS("job") " a"); /* its lease deadline */
  ASSERT_NOT_NULL(v);
  ASSERT_GT(atoll(v), 0);
  free(v);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL " BR_MEMBERS("job")), 3600 * 1000);
  uint64_t t0 = uv_hrtime();
  br_enter(bc, -1, LEASE, "c", &c);
  ASSERT_EQ(lk_barrier_enter(bc, NULL, br_op_cb, &c), LK_EBUSY);
  br_wait_ok(&fx.loop, &a);
  br_wait_ok(&fx.loop, &b);
  br_wait_ok(&fx.loop, &c);
  ASSERT_EQ(a.round, 1);
  ASSERT_EQ(c.round, 1);
  ASSERT_EQ(a.ndropped + b.ndropped + c.ndropped, 0);
  uint64_t last = a.t_ns > b.t_ns ? a.t_ns : b.t_ns;
  printf("last enter to release of the waiters: %.1f ms\n", (double)(last - t0) / 1e6);
  ASSERT_LT((int64_t)((last - t0) / 1000000u), rt_stall_bound_since_ns(t0, 500));
  /* Entered: a second enter is refused until it leaves. */
  ASSERT_EQ(lk_barrier_enter(ba, NULL, br_op_cb, &a), LK_EBUSY);

  br_leave(ba, -1, &la);
  br_leave(bb, -1, &lb);
  BR_WAIT_MEMBERS(&fx, "job", 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(la.done + lb.done, 0);
  br_leave(bc, -1, &lc);
  br_wait_ok(&fx.loop, &la);
  br_wait_ok(&fx.loop, &lb);
  br_wait_ok(&fx.loop, &lc);
  v = rt_cmd_str(fx.srv, "HGET " BR_STATE("job") " round");
  ASSERT_STREQ(v, "2"); /* the next round */
  free(v);
  ASSERT_EQ(lk_barrier_leave(ba, NULL, br_op_cb, &la), LK_ENOTHELD);
  br_close(&fx.loop, ba);
  br_close(&fx.loop, bb);
  br_close(&fx.loop, bc);
  fx_finish(&fx);
}

/* Three rounds of one name, one object per member throughout. */
TEST(rounds_reuse) {
  fx_t fx;
  br_op_t e[3], l[3];
  lk_barrier_t *b[3];
  fx_start(&fx, NULL);
  for (int i = 0; i < 3; i++)
    b[i] = br_new(fx.c, "rounds", 3);
  for (int round = 1; round <= 3; round++) {
    for (int i = 0; i < 3; i++)
      br_enter(b[i], 10000, LEASE, NULL, &e[i]);
    for (int i = 0; i < 3; i++) {
      rt_run_until(&fx.loop, &e[i].done, 15000);
      ASSERT_OK(e[i].status);
      ASSERT_EQ(e[i].round, round);
    }
    /* Leaving in another order each round. */
    for (int k = 0; k < 3; k++)
      br_leave(b[(k + round) % 3], 10000, &l[(k + round) % 3]);
    for (int i = 0; i < 3; i++) {
      rt_run_until(&fx.loop, &l[i].done, 15000);
      ASSERT_OK(l[i].status);
    }
    ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("rounds")), 0);
  }
  for (int i = 0; i < 3; i++)
    br_close(&fx.loop, b[i]);
  fx_finish(&fx);
}

/* A member entering while a released round still has members joins the
 * next round (docs/barrier.md, "A late member"). */
TEST(late_member) {
  fx_t fx;
  br_op_t a, b, c, d, la, lb;
  fx_start(&fx, NULL);
  lk_barrier_t *ba = br_new(fx.c, "late", 2), *bb = br_new(fx.c, "late", 2),
               *bc = br_new(fx.c, "late", 2), *bd = br_new(fx.c, "late", 2);
  br_enter(ba, 5000, LEASE, "a", &a);
  br_enter(bb, 5000, LEASE, "b", &b);
  br_wait_ok(&fx.loop, &a);
  br_wait_ok(&fx.loop, &b);
  br_enter(bc, 15000, LEASE, "c", &c);
  fx_wait_subscribers(&fx, BR_CHANNEL("late"), 1);
  fx_spin(&fx, 100);
  ASSERT_EQ(c.done, 0); /* not let through round 1 */
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("late")), 2); /* nor counted in it */
  br_leave(ba, 5000, &la);
  fx_spin(&fx, 50);
  ASSERT_EQ(c.done + la.done, 0);
  br_leave(bb, 5000, &lb);
  br_wait_ok(&fx.loop, &la);
  br_wait_ok(&fx.loop, &lb);
  /* Round 1 over: c joins round 2 and waits for a second member there. */
  BR_WAIT_MEMBERS(&fx, "late", 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(c.done, 0);
  br_enter(bd, 5000, LEASE, "d", &d);
  br_wait_ok(&fx.loop, &c);
  br_wait_ok(&fx.loop, &d);
  ASSERT_EQ(c.round, 2);
  ASSERT_EQ(d.round, 2);
  br_close(&fx.loop, ba);
  br_close(&fx.loop, bb);
  br_close(&fx.loop, bc); /* entered: closing takes it out */
  BR_WAIT_MEMBERS(&fx, "late", 1);
  br_close(&fx.loop, bd);
  BR_WAIT_MEMBERS(&fx, "late", 0);
  fx_finish(&fx);
}

/* Fewer than N enter: each budget ends with LK_ETIMEDOUT and its member is
 * taken out, so a later full set starts afresh. */
TEST(budget_runs_out) {
  fx_t fx;
  br_op_t e[3];
  lk_barrier_t *b[3];
  fx_start(&fx, NULL);
  for (int i = 0; i < 3; i++)
    b[i] = br_new(fx.c, "short", 3);
  uint64_t t0 = uv_hrtime();
  br_enter(b[0], 300, LEASE, NULL, &e[0]);
  br_enter(b[1], 300, LEASE, NULL, &e[1]);
  rt_run_until(&fx.loop, &e[0].done, 5000);
  rt_run_until(&fx.loop, &e[1].done, 5000);
  ASSERT_EQ(e[0].status, LK_ETIMEDOUT);
  ASSERT_EQ(e[1].status, LK_ETIMEDOUT);
  ASSERT_GE((int64_t)((e[0].t_ns - t0) / 1000000u), 300);
  BR_WAIT_MEMBERS(&fx, "short", 0);
  /* A single look (wait 0) that does not complete the round: the same. */
  br_enter(b[2], 0, LEASE, NULL, &e[2]);
  rt_run_until(&fx.loop, &e[2].done, 5000);
  ASSERT_EQ(e[2].status, LK_ETIMEDOUT);
  BR_WAIT_MEMBERS(&fx, "short", 0);
  for (int i = 0; i < 3; i++)
    br_enter(b[i], 5000, LEASE, NULL, &e[i]);
  for (int i = 0; i < 3; i++) {
    rt_run_until(&fx.loop, &e[i].done, 5000);
    ASSERT_OK(e[i].status);
    ASSERT_EQ(e[i].round, 1);
  }
  for (int i = 0; i < 3; i++)
    br_close(&fx.loop, b[i]);
  BR_WAIT_MEMBERS(&fx, "short", 0);
  fx_finish(&fx);
}

TEST(bad_inputs) {
  fx_t fx;
  lk_barrier_t *b = NULL;
  lk_barrier_opts_t o;
  br_op_t s;
  char big[LK_BARRIER_MEMBER_MAX + 2];
  fx_start(&fx, NULL);
  lk_barrier_opts_init(NULL); /* ignored */
  ASSERT_EQ(lk_barrier_new(NULL, "x", 2, &b), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, "x", 2, NULL), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, NULL, 2, &b), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, "", 2, &b), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, "x", 0, &b), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, "x", -1, &b), LK_EINVAL);
  ASSERT_EQ(lk_barrier_new(fx.c, "x", LK_BARRIER_MAX_MEMBERS + 1, &b), LK_EINVAL);
  ASSERT_NULL(b);
  b = br_new(fx.c, "x", 1);
  ASSERT_EQ(lk_barrier_enter(NULL, NULL, br_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_barrier_enter(b, NULL, NULL, &s), LK_EINVAL);
  int64_t bad_leases[] = {0, -2, 1, LK_BARRIER_LEASE_MIN_MS - 1, LK_MAX_TIME_MS + 1};
  for (size_t i = 0; i < sizeof(bad_leases) / sizeof(bad_leases[0]); i++) {
    lk_barrier_opts_init(&o);
    o.lease_ms = bad_leases[i];
    ASSERT_EQ(lk_barrier_enter(b, &o, br_op_cb, &s), LK_EINVAL);
  }
  lk_barrier_opts_init(&o);
  o.wait_ms = -2;
  ASSERT_EQ(lk_barrier_enter(b, &o, br_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_barrier_leave(b, &o, br_op_cb, &s), LK_EINVAL);
  lk_barrier_opts_init(&o);
  o.member = "";
  ASSERT_EQ(lk_barrier_enter(b, &o, br_op_cb, &s), LK_EINVAL);
  memset(big, 'm', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  o.member = big; /* one byte too long */
  ASSERT_EQ(lk_barrier_enter(b, &o, br_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_barrier_leave(NULL, NULL, br_op_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_barrier_leave(b, NULL, NULL, &s), LK_EINVAL);
  ASSERT_EQ(lk_barrier_leave(b, NULL, br_op_cb, &s), LK_ENOTHELD);
  ASSERT_EQ(lk_barrier_cancel(b), LK_EINVAL); /* nothing pending */
  ASSERT_EQ(lk_barrier_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_barrier_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_barrier_dropped_count(NULL), 0);
  ASSERT_NULL(lk_barrier_dropped(NULL, 0));
  ASSERT_NULL(lk_barrier_dropped(b, 0));
  ASSERT_EQ(lk_barrier_round(NULL), 0);
  ASSERT_NULL(lk_barrier_name(NULL));
  ASSERT_STREQ(lk_barrier_error_text(NULL), "");
  /* The longest member id is accepted; N = 1 releases at once. */
  big[LK_BARRIER_MEMBER_MAX] = '\0';
  lk_barrier_opts_init(&o);
  o.member = big;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_barrier_enter(b, &o, br_op_cb, &s));
  ASSERT_EQ(lk_barrier_enter(b, &o, br_op_cb, &s), LK_EBUSY);
  ASSERT_EQ(s.done, 0); /* never inside the call */
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_STREQ(lk_barrier_member(b), big);
  br_leave(b, 0, &s);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  br_close(&fx.loop, b);
  ASSERT_EQ(lk_barrier_close(b = br_new(fx.c, "x", 1), NULL), 0);
  ASSERT_EQ(lk_barrier_close(b, NULL), LK_ECLOSED);
  fx_spin(&fx, 20);
  fx_finish(&fx);
}

/* Members that disagree on N: the later one is refused (LK_EINVAL). */
TEST(members_disagree) {
  fx_t fx;
  br_op_t a, b;
  fx_start(&fx, NULL);
  lk_barrier_t *ba = br_new(fx.c, "n", 2), *bb = br_new(fx.c, "n", 3);
  br_enter(ba, 5000, LEASE, "a", &a);
  BR_WAIT_MEMBERS(&fx, "n", 1);
  br_enter(bb, 5000, LEASE, "b", &b);
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_EQ(b.status, LK_EINVAL);
  ASSERT_NE(strlen(lk_barrier_error_text(bb)), 0);
  ASSERT_EQ(a.done, 0);
  br_close(&fx.loop, ba);
  ASSERT_EQ(a.status, LK_ECANCELED);
  br_close(&fx.loop, bb);
  BR_WAIT_MEMBERS(&fx, "n", 0);
  fx_finish(&fx);
}

/* Cancel and close while waiting: one callback, LK_ECANCELED, and the
 * member is out; a member closed while entered does not hold up the
 * others' leave. */
TEST(cancel_and_close_while_waiting) {
  fx_t fx;
  br_op_t a, b, la;
  int closed = 0;
  fx_start(&fx, NULL);
  lk_barrier_t *ba = br_new(fx.c, "cc", 2), *bb = br_new(fx.c, "cc", 2);
  /* cancel */
  br_enter(ba, -1, LEASE, "a", &a);
  BR_WAIT_MEMBERS(&fx, "cc", 1);
  ASSERT_OK(lk_barrier_cancel(ba));
  ASSERT_EQ(a.done, 0);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_EQ(a.status, LK_ECANCELED);
  BR_WAIT_MEMBERS(&fx, "cc", 0);
  /* close while subscribed and waiting */
  br_enter(ba, -1, LEASE, "a", &a);
  fx_wait_subscribers(&fx, BR_CHANNEL("cc"), 1);
  lk_barrier_set_data(ba, &closed);
  ASSERT_OK(lk_barrier_close(ba, br_closed_cb));
  ASSERT_EQ(lk_barrier_close(ba, br_closed_cb), LK_ECLOSED);
  ASSERT_EQ(lk_barrier_enter(ba, NULL, br_op_cb, &a), LK_ECLOSED);
  ASSERT_EQ(a.done, 0);
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(a.calls, 1);
  ASSERT_EQ(a.status, LK_ECANCELED);
  /* Taken out before close_cb: the close waits for the reply. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("cc")), 0);
  /* closed with the attempt still in flight */
  lk_barrier_t *bc = br_new(fx.c, "cc", 2);
  br_enter(bc, -1, LEASE, "c", &a);
  closed = 0;
  lk_barrier_set_data(bc, &closed);
  ASSERT_OK(lk_barrier_close(bc, br_closed_cb));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(a.calls, 1);
  ASSERT_EQ(a.status, LK_ECANCELED);
  BR_WAIT_MEMBERS(&fx, "cc", 0);
  /* closed while entered: the other's leave is not held up */
  ba = br_new(fx.c, "cc", 2);
  br_enter(ba, 5000, LEASE, "a", &a);
  br_enter(bb, 5000, LEASE, "b", &b);
  br_wait_ok(&fx.loop, &a);
  br_wait_ok(&fx.loop, &b);
  br_close(&fx.loop, bb);
  uint64_t t0 = uv_hrtime();
  br_leave(ba, 10000, &la);
  rt_run_until(&fx.loop, &la.done, 5000);
  ASSERT_OK(la.status);
  ASSERT_EQ(la.ndropped, 0); /* it left, it was not dropped */
  ASSERT_LT((int64_t)((la.t_ns - t0) / 1000000u), LEASE / 2);
  br_close(&fx.loop, ba);
  fx_finish(&fx);
}
