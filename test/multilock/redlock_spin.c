/* RedLock keeps the loop polling only while answers of a fan-out are due
 * (src/multilock/redlock.c, answer_came; docs/multilock.md, "Cost"): once
 * one answer came and others are due, for a few usual gaps between answers
 * at most, then it sleeps; with nothing due it never spins. Seen from the
 * loop itself: uv_check callbacks, one per loop iteration, counted over a
 * window (busy polling off). A spinning loop makes thousands of passes in
 * the window, a sleeping one a handful (its timers). Label multilock. */
#include <stdio.h>
#include <string.h>

#include "loop_passes.h"
#include "multi_fixture.h"

#define N 5

/* A sleeping loop's passes in 200 ms: its timers (node timeouts, the
 * heartbeat...) and the window's own, far below a spinning loop's (over
 * 100 000 here). Measured from 20 ms after the last answer: a poll for a
 * few gaps after it (300 us at most) is allowed, and makes hundreds. */
#define SLEEPING_MAX 1000

static long long passes_after_a_while(mfx_t *m) {
  lp_passes_during(&m->loop, 20);
  return lp_passes_during(&m->loop, 200);
}

/* One master paused: four answers come, the fifth stays due. The loop
 * polls for a few gaps after the fourth, then sleeps although an answer is
 * still due; after the release (the paused master's acquire still in
 * flight) the same. */
/* m started, the loop's passes counted by check, a redlock on name. */
static lk_redlock_t *spin_start(mfx_t *m, uv_check_t *check, const char *name) {
  mfx_start(m, N, NULL);
  lk_redlock_t *rl = mx_rl_new(m, m->c, name, NULL);
  uv_check_init(&m->loop, check);
  uv_check_start(check, lp_on_check);
  return rl;
}

static void spin_finish(mfx_t *m, uv_check_t *check, lk_redlock_t *rl) {
  uv_check_stop(check);
  uv_close((uv_handle_t *)check, NULL);
  mx_rl_close(m, rl);
  mfx_finish(m);
}

TEST(rl_loop_sleeps_when_a_due_answer_does_not_come) {
  mfx_t m;
  mx_t s;
  uv_check_t check;
  lk_redlock_opts_t o;
  lk_redlock_t *rl = spin_start(&m, &check, "rl-spin-paused");
  /* A node timeout no machine stall reaches: with 300 ms, a 500 ms stall
   * beside tools/load.sh left the warm release's answer from master 4 in
   * flight (the next attempt found it LK_EBUSY) or fewer than a quorum in
   * time. The quorum never waits for it: four answers decide. */
  lk_redlock_opts_init(&o);
  o.lease_ms = 30000;
  o.node_timeout_ms = rt_scaled_ms(5000);
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s)); /* warm: scripts loaded */
  /* Every master's answer in before the release: the acquire ends at the
   * quorum, and a fifth answer still due then is skipped by the release
   * (its node status reads 0, not LK_EUNKNOWN, while the straggler and its
   * give-back are in flight), so the next acquire found that master busy
   * (LK_EBUSY) under a stalled machine. Settled now, the release covers all
   * five and waits for them. */
  mx_rl_settle(&m, rl);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_settle(&m, rl);
  rt_server_pause(m.srv[4]);
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  ASSERT_EQ(lk_redlock_node_status(rl, 4), LK_EUNKNOWN); /* still due */
  long long n = passes_after_a_while(&m);
  printf("passes in 200 ms with an answer due: %lld\n", n);
  ASSERT_LE(n, SLEEPING_MAX);
  ASSERT_OK(mx_rl_release(&m, rl));
  n = passes_after_a_while(&m);
  printf("passes in 200 ms after the release, an answer still due: %lld\n", n);
  ASSERT_LE(n, SLEEPING_MAX);
  rt_server_resume(m.srv[4]);
  ASSERT_EQ(mfx_wait_key_gone(&m, 4, "rl-spin-paused", 5000), 1); /* late grant given back */
  spin_finish(&m, &check, rl);
}

/* Every answer in: nothing is due, nothing spins. */
TEST(rl_loop_sleeps_when_no_answer_is_due) {
  mfx_t m;
  mx_t s;
  uv_check_t check;
  lk_redlock_opts_t o;
  lk_redlock_t *rl = spin_start(&m, &check, "rl-spin-idle");
  /* As above: a node timeout no machine stall reaches (with 300 ms, a
   * stall beside tools/load.sh ended an attempt LK_ENOQUORUM: the node
   * timers ran before the answers waiting in the sockets), and every answer
   * in before the next step, so no straggler meets the next attempt. */
  lk_redlock_opts_init(&o);
  o.lease_ms = 30000;
  o.node_timeout_ms = rt_scaled_ms(5000);
  for (int i = 0; i < 20; i++) {
    ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
    mx_rl_settle(&m, rl);
    ASSERT_OK(mx_rl_release(&m, rl));
    mx_rl_settle(&m, rl);
  }
  long long n = passes_after_a_while(&m);
  printf("passes in 200 ms with nothing due: %lld\n", n);
  ASSERT_LE(n, SLEEPING_MAX);
  spin_finish(&m, &check, rl);
}
