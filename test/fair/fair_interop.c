/* Fair lock interop with the test-only Redisson emulator (our reading of
 * Redisson's RFairLock on the wire; test/harness/redisson_emu.h): Redisson-style
 * waiters queue behind and ahead of latchkey waiters and everyone is served
 * in queue order, each woken on its own channel. The emulator is driven
 * step by step from the test's thread between turns of the loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fair_fixture.h"
#include "redisson_emu.h"

#define EMU_UUID "11111111-2222-4333-8444-555555555555"
#define EMU_WAIT_MS 5000 /* the emulated tryLock's waitTime: Redisson's WAIT */

/* Waits for a message on the emulator's subscriber while the loop runs. */
static void emu_await_turn(fx_t *fx, redisContext *sub) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  for (;;) {
    redisReply *m = rt_sub_next_message(sub, 0);
    if (m != NULL) {
      ASSERT_STREQ(m->element[2]->str, "0");
      freeReplyObject(m);
      return;
    }
    if (rt_now_ms() > end)
      FAIL("the emulated waiter was never told its turn");
    fx_spin(fx, 2);
  }
}

/* An emulated Redisson waiter joining the queue: one attempt, subscribe to
 * its own channel, attempt again (Redisson's order). Returns 0 queued. */
static int emu_join(redisContext *ctx, redisContext *sub, const char *name, long long tid) {
  long long ttl = 0;
  char *ch;
  if (rt_rfair_attempt(ctx, name, EMU_UUID, tid, 30000, EMU_WAIT_MS, &ttl))
    return 1;
  ch = rt_rfair_channel(name, EMU_UUID, tid);
  rt_sub_subscribe(sub, ch);
  free(ch);
  return rt_rfair_attempt(ctx, name, EMU_UUID, tid, 30000, EMU_WAIT_MS, &ttl);
}

static char *emu_owner(long long tid) {
  char *o = NULL;
  if (asprintf(&o, "%s:%lld", EMU_UUID, tid) < 0)
    FAIL("out of memory");
  return o;
}

/* Queue: latchkey W1, emulator E1, latchkey W2, emulator E2 behind a
 * latchkey holder. Served in exactly that order; Redisson's unlock wakes a
 * latchkey waiter and latchkey's release wakes a Redisson one. */
TEST(emulator_and_latchkey_waiters_interleave_in_queue_order) {
  fx_t fx;
  lk_fair_t *h, *w1, *w2;
  fsx_t s1, s2;
  redisContext *ctx, *sub1, *sub2;
  char *e1, *e2;
  long long score_before, score_after;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  sub1 = rt_rlock_connect(rt_server_port(fx.srv));
  sub2 = rt_rlock_connect(rt_server_port(fx.srv));
  e1 = emu_owner(1);
  e2 = emu_owner(2);
  h = fx_fair(&fx, "mix");
  w1 = fx_fair(&fx, "mix");
  w2 = fx_fair(&fx, "mix");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fsx_start(w1, 60000, 60000, 0, &s1);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "mix") == 1, 3000);
  ASSERT_EQ(emu_join(ctx, sub1, "mix", 1), 0);
  fsx_start(w2, 60000, 60000, 0, &s2);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "mix") == 3, 3000);
  ASSERT_EQ(emu_join(ctx, sub2, "mix", 2), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "mix", lk_fair_owner(w1)), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "mix", e1), 1);
  ASSERT_EQ(fair_lpos(fx.srv, "mix", lk_fair_owner(w2)), 2);
  ASSERT_EQ(fair_lpos(fx.srv, "mix", e2), 3);

  /* latchkey holder -> latchkey W1 */
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  rt_run_until(&fx.loop, &s1.done, 5000);
  ASSERT_OK(s1.status);
  ASSERT_EQ(s2.done, 0);
  /* latchkey W1 -> Redisson E1: our release tells E1 on its own channel. */
  ASSERT_OK(fsx_run(&fx, lk_fair_release, w1, NULL));
  emu_await_turn(&fx, sub1);
  score_before = fair_zscore(fx.srv, "mix", lk_fair_owner(w2));
  ASSERT_EQ(rt_rfair_attempt(ctx, "mix", EMU_UUID, 1, 30000, EMU_WAIT_MS, NULL), 1);
  /* Redisson's acquire moved every deadline WAIT earlier, W2's too; W2's
   * next re-poll puts it back. */
  score_after = fair_zscore(fx.srv, "mix", lk_fair_owner(w2));
  ASSERT_LE(score_after, score_before - EMU_WAIT_MS + 1000);
  FX_EVENTUALLY(&fx, fair_zscore(fx.srv, "mix", lk_fair_owner(w2)) > server_ms(fx.srv) + 5000,
                3000);
  fx_spin(&fx, 50);
  ASSERT_EQ(s2.done, 0);
  /* Redisson E1 -> latchkey W2: Redisson's unlock tells W2. */
  ASSERT_EQ(rt_rfair_unlock(ctx, "mix", EMU_UUID, 1), 1);
  rt_run_until(&fx.loop, &s2.done, 5000);
  ASSERT_OK(s2.status);
  /* latchkey W2 -> Redisson E2 */
  ASSERT_OK(fsx_run(&fx, lk_fair_release, w2, NULL));
  emu_await_turn(&fx, sub2);
  ASSERT_EQ(rt_rfair_attempt(ctx, "mix", EMU_UUID, 2, 30000, EMU_WAIT_MS, NULL), 1);
  ASSERT_EQ(rt_rfair_unlock(ctx, "mix", EMU_UUID, 2), 1);
  ASSERT_EQ(fair_llen(fx.srv, "mix"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "mix"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS mix"), 0);
  fx_close_fair(&fx, h);
  fx_close_fair(&fx, w1);
  fx_close_fair(&fx, w2);
  free(e1);
  free(e2);
  redisFree(ctx);
  redisFree(sub1);
  redisFree(sub2);
  fx_finish(&fx);
}

/* A Redisson waiter is next and the lock is free: a latchkey newcomer does
 * not barge (try once fails), a latchkey waiter queues behind it, and the
 * emulator's no-wait tryLock does not barge past a latchkey waiter either. */
TEST(neither_side_barges_past_the_other) {
  fx_t fx;
  lk_fair_t *h, *x, *w;
  fsx_t sw;
  redisContext *ctx, *sub;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  sub = rt_rlock_connect(rt_server_port(fx.srv));
  h = fx_fair(&fx, "nb");
  x = fx_fair(&fx, "nb");
  w = fx_fair(&fx, "nb");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  ASSERT_EQ(emu_join(ctx, sub, "nb", 7), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  emu_await_turn(&fx, sub);
  /* free, and the emulated waiter is next */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nb"), 0);
  ASSERT_EQ(fsx_acquire(&fx, x, 0, 30000), LK_ETIMEDOUT);
  fsx_start(w, 30000, 30000, 0, &sw);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "nb") == 2, 3000);
  ASSERT_EQ(rt_rfair_attempt(ctx, "nb", EMU_UUID, 7, 30000, EMU_WAIT_MS, NULL), 1);
  ASSERT_EQ(rt_rfair_unlock(ctx, "nb", EMU_UUID, 7), 1);
  rt_run_until(&fx.loop, &sw.done, 5000);
  ASSERT_OK(sw.status);
  /* Now a latchkey waiter (x) is next behind w's hold: the emulator's
   * no-wait tryLock must not take the lock when w releases before x does. */
  {
    fsx_t sx;
    fsx_start(x, 30000, 30000, 0, &sx);
    FX_EVENTUALLY(&fx, fair_llen(fx.srv, "nb") == 1, 3000);
    ASSERT_EQ(rt_rfair_try_nowait(ctx, "nb", EMU_UUID, 8, 30000, EMU_WAIT_MS), 0);
    ASSERT_OK(fsx_run(&fx, lk_fair_release, w, NULL));
    rt_run_until(&fx.loop, &sx.done, 5000);
    ASSERT_OK(sx.status);
    ASSERT_EQ(rt_rfair_try_nowait(ctx, "nb", EMU_UUID, 8, 30000, EMU_WAIT_MS), 0);
  }
  ASSERT_EQ(fair_llen(fx.srv, "nb"), 0);
  fx_close_fair(&fx, h);
  fx_close_fair(&fx, x);
  fx_close_fair(&fx, w);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS nb"), 0);
  redisFree(ctx);
  redisFree(sub);
  fx_finish(&fx);
}

/* A Redisson holder's unlock hands the lock to a latchkey waiter at once;
 * a Redisson waiter that gives up (acquireFailed) leaves the latchkey
 * waiters' order intact. */
TEST(emulator_holder_hands_over_and_gives_up_cleanly) {
  fx_t fx;
  lk_fair_t *w1, *w2;
  fsx_t s1, s2, rel;
  redisContext *ctx, *sub;
  char *e3;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  sub = rt_rlock_connect(rt_server_port(fx.srv));
  e3 = emu_owner(3);
  w1 = fx_fair(&fx, "eh");
  w2 = fx_fair(&fx, "eh");
  ASSERT_EQ(rt_rfair_try_nowait(ctx, "eh", EMU_UUID, 1, 60000, EMU_WAIT_MS), 1);
  fsx_start(w1, 30000, 30000, 0, &s1);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "eh") == 1, 3000);
  ASSERT_EQ(emu_join(ctx, sub, "eh", 3), 0);
  fsx_start(w2, 30000, 30000, 0, &s2);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "eh") == 3, 3000);
  /* The Redisson waiter in the middle gives up. */
  rt_rfair_acquire_failed(ctx, "eh", EMU_UUID, 3, EMU_WAIT_MS);
  ASSERT_EQ(fair_lpos(fx.srv, "eh", e3), -1);
  ASSERT_EQ(fair_lpos(fx.srv, "eh", lk_fair_owner(w2)), 1);
  {
    char *ch = rt_rfair_channel("eh", EMU_UUID, 3);
    rt_sub_unsubscribe(sub, ch);
    free(ch);
  }
  /* Redisson holder -> latchkey W1, promptly (its message, not a re-poll). */
  fx_spin(&fx, 30);
  ASSERT_EQ(rt_rfair_unlock(ctx, "eh", EMU_UUID, 1), 1);
  memset(&rel, 0, sizeof(rel));
  rel.t_ns = uv_hrtime();
  rt_run_until(&fx.loop, &s1.done, 5000);
  ASSERT_OK(s1.status);
  ASSERT_LT(ms_between(rel.t_ns, s1.t_ns), rt_stall_bound_since_ns(rel.t_ns, 500));
  ASSERT_OK(fsx_run(&fx, lk_fair_release, w1, NULL));
  rt_run_until(&fx.loop, &s2.done, 5000);
  ASSERT_OK(s2.status);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, w2, NULL));
  ASSERT_EQ(fair_llen(fx.srv, "eh"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "eh"), 0);
  fx_close_fair(&fx, w1);
  fx_close_fair(&fx, w2);
  free(e3);
  redisFree(ctx);
  redisFree(sub);
  fx_finish(&fx);
}

/* The emulator blocks in tryLock(wait) in a forked process behind a
 * latchkey holder and gets the lock when latchkey releases. */
TEST(emulator_lock_wait_loop_gets_the_lock_from_latchkey) {
  fx_t fx;
  lk_fair_t *h;
  pid_t pid;
  int status = -1;
  int64_t end;
  fx_start(&fx, NULL);
  h = fx_fair(&fx, "loop");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    redisContext *c = rt_rlock_connect(rt_server_port(fx.srv));
    redisContext *s = rt_rlock_connect(rt_server_port(fx.srv));
    int rc = rt_rfair_lock_wait(c, s, "loop", EMU_UUID, 9, 30000, EMU_WAIT_MS, 20000);
    if (rc == 0)
      rc = rt_rfair_unlock(c, "loop", EMU_UUID, 9) == 1 ? 0 : 2;
    _exit(rc == 0 ? 0 : 1);
  }
  rt_child_track(pid);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "loop") == 1, 5000);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  end = rt_now_ms() + rt_scaled_ms(5000);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    ASSERT_LT(rt_now_ms(), end);
    fx_spin(&fx, 5);
  }
  rt_child_untrack(pid);
  ASSERT(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  ASSERT_EQ(fair_llen(fx.srv, "loop"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS loop"), 0);
  fx_finish_fairs(&fx, (lk_fair_t *[]){h, NULL});
}
