/* RedLock's lean member layout (LK_REDLOCK_LAYOUT_LEAN; docs/multilock.md,
 * "Lean layout") over 5 real masters: a plain string NAME = OWNER with a PX
 * lease on each; acquire, release, watchdog renewal, fencing; quorum with two
 * masters killed; masters restarted empty (loss reported); a key of the
 * other layout fails with LK_EWRONGTYPE and is left alone; a lost reply
 * (the lock object's resend finds its own value; the RedLock's unknown
 * vote is given back); bad options; one callback on cancel and close.
 * Exclusion under the overlap checker is redlock_stress.c's lean case. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock/lock_internal.h" /* lk__lock_set_lean: the layout on one lock */
#include "multi_fixture.h"

#define N 5
#define FOREIGN "11111111-2222-4333-8444-555555555555:1"

static lk_redlock_t *lean_new(mfx_t *m, lk_client_t **set, const char *name) {
  lk_redlock_config_t cfg;
  lk_redlock_config_init(&cfg);
  cfg.layout = LK_REDLOCK_LAYOUT_LEAN;
  return mx_rl_new(m, set, name, &cfg);
}

/* 1 when master i's key is the RedLock's lean member (a string, its owner). */
static int lean_holds_on(mfx_t *m, lk_redlock_t *rl, int i) {
  const char *owner = lk_lock_owner(lk_redlock_node_lock(rl, (size_t)i));
  char *type = rt_cmd_str(m->srv[i], "TYPE %s", lk_redlock_name(rl));
  char *v = NULL;
  int mine = 0;
  if (type != NULL && strcmp(type, "string") == 0) {
    v = rt_cmd_str(m->srv[i], "GET %s", lk_redlock_name(rl));
    mine = v != NULL && strcmp(v, owner) == 0;
  }
  free(type);
  free(v);
  return mine;
}

/* A foreign lean holder on master i. */
static void lean_clog(mfx_t *m, int i, const char *name, int64_t lease_ms) {
  char *ok = rt_cmd_str(m->srv[i], "SET %s " FOREIGN " PX %lld", name, (long long)lease_ms);
  ASSERT_NOT_NULL(ok);
  free(ok);
}

static void count_lost(lk_redlock_t *rl, int status, void *arg) {
  int *n = arg;
  (void)rl;
  ASSERT_EQ(status, LK_ELEASELOST);
  (*n)++;
}

/* The masters that granted the last acquire hold it, a quorum of them.
 * mx_rl_settle waits only for answers still due (LK_EUNKNOWN); on a loaded
 * machine a master may legitimately hold nothing at this point: one that
 * answered past the node timeout (LK_ETIMEDOUT: its late grant is kept when
 * it comes, but may not have come yet), or one not asked because an earlier
 * answer was still due on it (LK_EBUSY: e.g. the previous acquire's late
 * grant, which the release skipped; kept when it lands while held;
 * docs/multilock.md, lk_redlock_node_status). Any other outcome, or a granted master that does
 * not hold it, fails. Returns the granted masters as a bit mask. */
static unsigned lean_quorum_holds(mfx_t *m, lk_redlock_t *rl, int fenced) {
  unsigned granted = 0;
  int i, held = 0;
  mx_rl_settle(m, rl);
  for (i = 0; i < N; i++) {
    int st = lk_redlock_node_status(rl, (size_t)i);
    if (st != 0) {
      if (st != LK_ETIMEDOUT && st != LK_EBUSY)
        FAIL("master %d: unexpected status %d", i, st);
      continue;
    }
    ASSERT_EQ(lean_holds_on(m, rl, i), 1);
    if (fenced) {
      char *t = rt_cmd_str(m->srv[i], "GET redisson_lock_token:{%s}", lk_redlock_name(rl));
      ASSERT_NOT_NULL(t);
      ASSERT_GE(atoll(t), 1);
      free(t);
    }
    held++;
    granted |= 1u << i;
  }
  ASSERT_GE(held, N / 2 + 1);
  return granted;
}

TEST(rl_lean_acquire_release_renew_fence_on_five_masters) {
  mfx_t m;
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  int i, lost = 0;
  unsigned granted;
  mfx_start_lease(&m, N, NULL, 1500); /* renewed every 500 ms */
  rl = lean_new(&m, m.c, "rl-lean");
  ASSERT_OK(lk_redlock_set_lost_cb(rl, count_lost, &lost));
  int64_t mark = rt_stall_mark();
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, -1, &s));
  ASSERT_EQ(s.held, 1);
  /* Liveness: the acquire's round trips, less what the machine stalled. */
  ASSERT_GT(s.validity_ms + rt_stall_longest_ms(mark), 1000);
  ASSERT_EQ(lk_redlock_hold_count(rl), 1);
  mx_rl_settle(&m, rl);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(lean_holds_on(&m, rl, i), 1);
    ASSERT_GT(rt_cmd_int(m.srv[i], "PTTL rl-lean") + rt_stall_longest_ms(mark), 1000);
  }
  /* Past the lease: the watchdog's batched renewals kept every member. A
   * machine stall past a lease less a period (1000 ms) may take the hold;
   * one past 600 ms may leave a member's PTTL under 400 ms (stall.h). */
  mark = rt_stall_mark();
  mfx_spin(&m, 2200);
  if (!EXPECT_HOLD(lost == 0 && lk_redlock_is_held(rl) == 1, mark, 1000)) {
    ASSERT_LE(lost, 1);
    mx_rl_close(&m, rl);
    mfx_finish(&m);
    return;
  }
  for (i = 0; i < N; i++)
    EXPECT_HOLD(lean_holds_on(&m, rl, i) == 1 && rt_cmd_int(m.srv[i], "PTTL rl-lean") > 400,
                mark, 600);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_settle(&m, rl); /* the release answered at its quorum */
  for (i = 0; i < N; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-lean"), 0);
  ASSERT_EQ(lk_redlock_is_held(rl), 0);

  /* An explicit lease, fenced: a quorum token from RFencedLock's counter. */
  lk_redlock_opts_init(&o);
  o.lease_ms = 10000;
  o.node_timeout_ms = rt_scaled_ms(300);
  o.fenced = 1;
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  ASSERT_GT(s.token, 0);
  ASSERT_LE(s.validity_ms, 10000 - 102);
  ASSERT_OK(mx_rl_release(&m, rl));
  {
    int64_t first = s.token;
    ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
    ASSERT_GT(s.token, first);
  }
  granted = lean_quorum_holds(&m, rl, 1);
  ASSERT_OK(mx_rl_release(&m, rl));
  /* The released masters are empty at once; a late grant still due is
   * given back when it comes (a round trip later). */
  for (i = 0; i < N; i++) {
    if (granted & (1u << i))
      ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-lean"), 0);
    else
      ASSERT_EQ(mfx_wait_key_gone(&m, i, "rl-lean", 3000), 1);
  }
  ASSERT_EQ(lost, 0);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* Two of five killed (kill -9): the three left make the quorum; a third
 * killed leaves no quorum and nothing held on the two alive. */
TEST(rl_lean_quorum_with_two_of_five_killed) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  rl = lean_new(&m, m.c, "rl-lean-kill");
  rt_server_kill(m.srv[3], SIGKILL);
  rt_server_kill(m.srv[4], SIGKILL);
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  ASSERT_EQ(s.held, 1);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(lean_holds_on(&m, rl, i), 1);
  ASSERT_NE(lk_redlock_node_status(rl, 3), 0);
  ASSERT_NE(lk_redlock_node_status(rl, 4), 0);
  /* The three live masters that hold it are the quorum: 0 (the dead ones
   * never held it, so they are not asked). */
  ASSERT_OK(mx_rl_release(&m, rl));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-lean-kill"), 0);
  rt_server_kill(m.srv[2], SIGKILL);
  ASSERT_EQ(mx_rl_acquire(&m, rl, 0, 10000, &s), LK_ENOQUORUM);
  ASSERT_EQ(s.held, 0);
  ASSERT_EQ(mfx_wait_key_gone(&m, 0, "rl-lean-kill", 3000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 1, "rl-lean-kill", 3000), 1);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* Masters restarted empty while held by the watchdog: one is tolerated
 * (four still hold); three more than the quorum allows: on_lost, once, and
 * release then says LK_ELEASELOST. */
TEST(rl_lean_masters_restarted_empty_report_the_loss) {
  mfx_t m;
  lk_redlock_t *rl;
  mx_t s;
  int lost = 0;
  int64_t end;
  mfx_start_lease(&m, N, NULL, 1500);
  rl = lean_new(&m, m.c, "rl-lean-restart");
  ASSERT_OK(lk_redlock_set_lost_cb(rl, count_lost, &lost));
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, -1, &s));
  mx_rl_settle(&m, rl);
  ASSERT_EQ(rt_server_restart(m.srv[0]), 0);
  mfx_spin(&m, 1100); /* two renewal periods */
  ASSERT_EQ(lost, 0);
  ASSERT_EQ(lk_redlock_is_held(rl), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "EXISTS rl-lean-restart"), 0);
  ASSERT_EQ(rt_server_restart(m.srv[1]), 0);
  ASSERT_EQ(rt_server_restart(m.srv[2]), 0);
  end = rt_now_ms() + rt_scaled_ms(5000);
  while (lost == 0) {
    ASSERT_LT(rt_now_ms(), end);
    mfx_spin(&m, 5);
  }
  mfx_spin(&m, 600);
  ASSERT_EQ(lost, 1);
  ASSERT_EQ(lk_redlock_is_held(rl), 0);
  ASSERT_EQ(lk_redlock_release(rl, mx_rl_cb, &s), LK_ELEASELOST);
  /* What the two untouched masters had is given back. */
  ASSERT_EQ(mfx_wait_key_gone(&m, 3, "rl-lean-restart", 3000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-lean-restart", 3000), 1);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* The two layouts never take each other's key for their own: a lean
 * RedLock finding Redisson's hash fails with LK_EWRONGTYPE (not retried,
 * the hash left alone), and so does a Redisson-layout RedLock finding lean
 * members. */
TEST(rl_lean_wrongtype_member_fails_clearly) {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *lean, *hash;
  mx_t s;
  uint64_t t0;
  int i;
  mfx_start(&m, N, NULL);
  mfx_clients(&m, b, 0);
  lean = lean_new(&m, m.c, "rl-lean-type");
  hash = mx_rl_new(&m, b, "rl-lean-type", NULL);
  for (i = 0; i < N; i++)
    mx_clog(&m, i, "rl-lean-type", 30000);
  t0 = uv_hrtime();
  ASSERT_EQ(mx_rl_acquire(&m, lean, 2000, 10000, &s), LK_EWRONGTYPE);
  ASSERT_LT((int64_t)((s.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000)); /* no retry */
  ASSERT_EQ(s.held, 0);
  /* A vote a machine stall kept past the node timeout (300 ms) ended the
   * call LK_EUNKNOWN for its master; its answer still comes (seen under
   * tools/load.sh). */
  mx_rl_settle(&m, lean);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(lk_redlock_node_status(lean, (size_t)i), LK_EWRONGTYPE);
    ASSERT_EQ(rt_cmd_int(m.srv[i], "HLEN rl-lean-type"), 1);
  }
  /* Hashes on three, two free: the two grants are given back. */
  mx_unclog(&m, 3, "rl-lean-type");
  mx_unclog(&m, 4, "rl-lean-type");
  ASSERT_EQ(mx_rl_acquire(&m, lean, 0, 10000, &s), LK_EWRONGTYPE);
  mx_rl_settle(&m, lean);
  ASSERT_EQ(mfx_wait_key_gone(&m, 3, "rl-lean-type", 3000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-lean-type", 3000), 1);
  for (i = 0; i < 3; i++)
    mx_unclog(&m, i, "rl-lean-type");

  /* The other way round. */
  ASSERT_OK(mx_rl_acquire(&m, lean, 0, 10000, &s));
  mx_rl_settle(&m, lean);
  ASSERT_EQ(mx_rl_acquire(&m, hash, 2000, 10000, &s), LK_EWRONGTYPE);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(lk_redlock_node_status(hash, (size_t)i), LK_EWRONGTYPE);
    ASSERT_EQ(lean_holds_on(&m, lean, i), 1);
  }
  ASSERT_OK(mx_rl_release(&m, lean));
  mfx_finish_rls(&m, (lk_redlock_t *[]){lean, hash, NULL}, b);
}

/* The lean acquire script on a resend after a lost reply: the attempt whose
 * reply was lost with the connection did take the key; the lock object's
 * resend finds its own value and is granted once. */
TEST(rl_lean_resend_after_lost_reply_recognises_its_value) {
  fx_t fx;
  lk_client_opts_t o;
  rt_proxy_t *p;
  lk_lock_t *l;
  sx_t s;
  long long sent;
  char *v;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  p = fx_start_proxied(&fx, &o);
  l = fx_lock(&fx, "lean-resend");
  lk__lock_set_lean(l, 1);
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000)); /* scripts loaded */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lean-resend"), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lean-resend"), 0);
  sent = rt_proxy_requests(p, "EVALSHA");
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(sx_acquire_in(&fx.loop, l, 5000, 10000, &s));
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_GE(rt_proxy_requests(p, "EVALSHA"), sent + 2); /* the attempt and its resend */
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  v = rt_cmd_str(fx.srv, "GET lean-resend");
  ASSERT_NOT_NULL(v);
  ASSERT_STREQ(v, lk_lock_owner(l));
  free(v);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lean-resend"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
  rt_proxy_stop(p);
}

/* In the RedLock a node's acquire does not resend (one attempt per vote): a
 * master whose reply was lost is an unknown vote, and what it may have
 * granted is given back before that master is asked again; the RedLock's
 * next attempt then wins there. */
TEST(rl_lean_lost_reply_vote_is_given_back_then_retried) {
  mfx_t m;
  lk_client_t *set[N];
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  rt_proxy_t *px;
  mx_t s;
  int i;
  mfx_start(&m, N, NULL);
  px = rt_proxy_start(rt_server_port(m.srv[0]));
  ASSERT_NOT_NULL(px);
  for (i = 0; i < N; i++) {
    lk_client_opts_t co;
    mfx_client_opts(&m, i, &co);
    co.reconnect_min_ms = 20;
    co.reconnect_max_ms = 50;
    if (i == 0)
      co.port = rt_proxy_port(px);
    ASSERT_OK(lk_client_new(&m.loop, &co, &set[i]));
  }
  mfx_wait_connected(&m, set);
  rl = lean_new(&m, set, "rl-lean-lost");
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s)); /* scripts loaded */
  mx_rl_settle(&m, rl);
  ASSERT_OK(mx_rl_release(&m, rl));
  /* Masters 3 and 4 are taken: the quorum needs master 0. */
  lean_clog(&m, 3, "rl-lean-lost", 30000);
  lean_clog(&m, 4, "rl-lean-lost", 30000);
  rt_proxy_on_reply(px, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  lk_redlock_opts_init(&o);
  o.wait_ms = 5000;
  o.lease_ms = 10000;
  o.node_timeout_ms = rt_scaled_ms(1000);
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  ASSERT_EQ(rt_proxy_rule_state(px), RT_PROXY_RULE_APPLIED);
  ASSERT_EQ(s.held, 1);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(lean_holds_on(&m, rl, i), 1);
  ASSERT_OK(mx_rl_release(&m, rl));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i], "EXISTS rl-lean-lost"), 0);
  ASSERT_EQ(rt_cmd_int(m.srv[3], "EXISTS rl-lean-lost"), 1); /* the others' */
  mx_rl_close(&m, rl);
  mfx_close_set(&m, set);
  rt_proxy_stop(px);
  mfx_finish(&m);
}

TEST(rl_lean_bad_options_are_einval) {
  mfx_t m;
  lk_redlock_t *rl = NULL;
  lk_redlock_config_t cfg;
  mx_t s;
  mfx_start(&m, N, NULL);
  lk_redlock_config_init(&cfg);
  ASSERT_EQ(cfg.layout, LK_REDLOCK_LAYOUT_REDISSON);
  cfg.layout = 2;
  ASSERT_EQ(lk_redlock_new(m.c, N, "rl-lean-bad", &cfg, &rl), LK_EINVAL);
  cfg.layout = -1;
  ASSERT_EQ(lk_redlock_new(m.c, N, "rl-lean-bad", &cfg, &rl), LK_EINVAL);
  ASSERT_NULL(rl);
  rl = lean_new(&m, m.c, "rl-lean-bad");
  ASSERT_OK(mx_rl_acquire(&m, rl, 0, 10000, &s));
  /* Not reentrant: a re-entry is refused at once, the hold stays. */
  memset(&s, 0, sizeof(s));
  ASSERT_EQ(lk_redlock_acquire(rl, NULL, mx_rl_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_redlock_hold_count(rl), 1);
  ASSERT_EQ(lk_redlock_is_held(rl), 1);
  ASSERT_OK(mx_rl_release(&m, rl));
  ASSERT_EQ(s.calls, 0);
  mfx_finish_rls(&m, (lk_redlock_t *[]){rl, NULL}, NULL);
}

/* One callback for a waiting acquire canceled, and for one cut by close;
 * nothing left held by the canceled or closed RedLock. */
TEST(rl_lean_cancel_and_close_call_back_once) {
  mfx_t m;
  lk_client_t *b[N];
  lk_redlock_t *a, *w;
  lk_redlock_opts_t o;
  mx_t s;
  int closed = 0, i;
  mfx_start(&m, N, NULL);
  mfx_clients(&m, b, 0);
  a = lean_new(&m, m.c, "rl-lean-cancel");
  w = lean_new(&m, b, "rl-lean-cancel");
  ASSERT_OK(mx_rl_acquire(&m, a, 0, 20000, &s));
  lk_redlock_opts_init(&o);
  o.wait_ms = 20000;
  o.lease_ms = 10000;
  o.node_timeout_ms = rt_scaled_ms(300);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_acquire(w, &o, mx_rl_cb, &s));
  mfx_spin(&m, 50);
  ASSERT_EQ(s.calls, 0);
  ASSERT_OK(lk_redlock_cancel(w));
  mfx_run_until(&m, &s.done, 5000);
  mfx_spin(&m, 50);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_redlock_cancel(w), LK_EINVAL);

  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_redlock_acquire(w, &o, mx_rl_cb, &s));
  mfx_spin(&m, 50);
  lk_redlock_set_data(w, &closed);
  ASSERT_OK(lk_redlock_close(w, mx_rl_closed));
  mfx_run_until(&m, &closed, 5000);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(s.status, LK_ECANCELED);
  for (i = 0; i < N; i++)
    ASSERT_EQ(lean_holds_on(&m, a, i), 1); /* the holder's, untouched */
  /* Close while held gives the holds back. */
  lk_redlock_set_data(a, &closed);
  closed = 0;
  ASSERT_OK(lk_redlock_close(a, mx_rl_closed));
  mfx_run_until(&m, &closed, 5000);
  for (i = 0; i < N; i++)
    ASSERT_EQ(mfx_wait_key_gone(&m, i, "rl-lean-cancel", 3000), 1);
  mfx_close_set(&m, b);
  mfx_finish(&m);
}
