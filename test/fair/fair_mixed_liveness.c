/* Liveness in a fair queue shared with Redisson clients (docs/fair.md,
 * "Queues shared with Redisson clients"), driven step by step with the
 * test-only emulator (test/harness/redisson_emu.h):
 * - a live latchkey waiter is never dropped, neither by latchkey's scripts
 *   nor by Redisson's, whatever Redisson's acquisitions and give-ups do to
 *   its deadline and however long the holder keeps the lock;
 * - Redisson's waiters are still judged as Redisson judges them: a silent
 *   one is dropped at its deadline, not before;
 * - a dead latchkey waiter stops blocking Redisson clients by itself (no
 *   latchkey client running), at its own deadline, not before. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_fixture.h"
#include "redisson_emu.h"
#include "workers.h"

#define EMU_UUID "11111111-2222-4333-8444-555555555555"
#define RWAIT RT_RFAIR_DEFAULT_WAIT_MS /* lock()'s wait: 5 minutes */

static char *emu_owner(long long tid) { return rt_emu_asprintf("%s:%lld", EMU_UUID, tid); }

/* An emulated Redisson waiter joins (one attempt; it is not told anything
 * in these tests, so it needs no subscription). 0 when queued. */
static int emu_join(redisContext *ctx, const char *name, long long tid, int64_t wait_ms) {
  long long ttl = 0;
  return rt_rfair_attempt(ctx, name, EMU_UUID, tid, 30000, wait_ms, &ttl);
}

/* The emulated Redisson waiter tid, at the head of a free lock now: its next
 * attempt takes the lock and its unlock frees it. */
static void emu_takes_its_turn(redisContext *ctx, const char *name, long long tid) {
  ASSERT_EQ(rt_rfair_attempt(ctx, name, EMU_UUID, tid, 30000, RWAIT, NULL), 1);
  ASSERT_EQ(rt_rfair_unlock(ctx, name, EMU_UUID, tid), 1);
}

/* How the cases with a Redisson waiter last in line end: the last latchkey
 * holder l releases, the emulated waiter tid takes its turn and leaves, and
 * no queue or deadline is left; then ctx and the fair locks are closed. */
static void emu_last_turn_then_finish(fx_t *fx, redisContext *ctx, const char *name,
                                      lk_fair_t *l, long long tid, lk_fair_t *const *fairs) {
  ASSERT_OK(fsx_run(fx, lk_fair_release, l, NULL));
  emu_takes_its_turn(ctx, name, tid);
  ASSERT_EQ(fair_llen(fx->srv, name), 0);
  ASSERT_EQ(fair_zcard(fx->srv, name), 0);
  redisFree(ctx);
  fx_finish_fairs(fx, fairs);
}

/* Queue: R1, L, R2 behind a Redisson holder. R1 takes the lock (moving every
 * deadline 5 minutes earlier) and keeps it for four of L's waiter timeouts
 * while R2 polls every 50 ms (each poll runs Redisson's purge of a head
 * whose deadline passed). L stays next all along and gets the lock from
 * R1's unlock. */
TEST(long_redisson_hold_never_purges_a_live_latchkey_waiter) {
  fx_t fx;
  lk_fair_t *l;
  fsx_t sl;
  redisContext *ctx;
  char *r1 = emu_owner(1), *r2 = emu_owner(2);
  int64_t end;
  int polls = 0;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  l = fx_fair(&fx, "lh");
  ASSERT_EQ(rt_rfair_try_nowait(ctx, "lh", EMU_UUID, 100, 60000, RWAIT), 1);
  ASSERT_EQ(emu_join(ctx, "lh", 1, RWAIT), 0);
  fsx_start(l, 60000, 30000, 1000, &sl);
  FX_EVENTUALLY(&fx, fair_lpos(fx.srv, "lh", lk_fair_owner(l)) == 1, 3000);
  ASSERT_EQ(emu_join(ctx, "lh", 2, RWAIT), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "lh", r2), 2);
  ASSERT_EQ(rt_rfair_unlock(ctx, "lh", EMU_UUID, 100), 1);
  ASSERT_EQ(rt_rfair_attempt(ctx, "lh", EMU_UUID, 1, 30000, RWAIT, NULL), 1);
  /* A fixed span, not scaled: it is what is under test (4 timeouts). */
  end = rt_now_ms() + 4000;
  while (rt_now_ms() < end) {
    long long ttl = -1;
    ASSERT_EQ(rt_rfair_attempt(ctx, "lh", EMU_UUID, 2, 30000, RWAIT, &ttl), 0);
    polls++;
    ASSERT_EQ(fair_lpos(fx.srv, "lh", lk_fair_owner(l)), 0);
    ASSERT_EQ(fair_lpos(fx.srv, "lh", r2), 1);
    ASSERT_EQ(sl.done, 0);
    fx_spin(&fx, 50);
  }
  ASSERT_GE(polls, 10);
  ASSERT_EQ(rt_rfair_unlock(ctx, "lh", EMU_UUID, 1), 1);
  rt_run_until(&fx.loop, &sl.done, 5000);
  ASSERT_OK(sl.status);
  ASSERT_EQ(fair_lpos(fx.srv, "lh", r2), 0);
  free(r1);
  free(r2);
  emu_last_turn_then_finish(&fx, ctx, "lh", l, 2, (lk_fair_t *[]){l, NULL});
}

/* Queue: R1 (a tryLock waiting up to 5 minutes), L, R2 behind a latchkey
 * holder. R1 gives up: acquireFailed moves L's and R2's deadlines 5 minutes
 * earlier. R2's next poll leaves L in place, and L is next when the holder
 * releases. */
TEST(redisson_giving_up_ahead_leaves_a_latchkey_waiter_in_place) {
  fx_t fx;
  lk_fair_t *h, *l;
  fsx_t sl;
  redisContext *ctx;
  char *r2 = emu_owner(2);
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  h = fx_fair(&fx, "gu");
  l = fx_fair(&fx, "gu");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  ASSERT_EQ(emu_join(ctx, "gu", 1, RWAIT), 0);
  fsx_start(l, 60000, 30000, 0, &sl);
  FX_EVENTUALLY(&fx, fair_lpos(fx.srv, "gu", lk_fair_owner(l)) == 1, 3000);
  ASSERT_EQ(emu_join(ctx, "gu", 2, RWAIT), 0);
  rt_rfair_acquire_failed(ctx, "gu", EMU_UUID, 1, RWAIT);
  ASSERT_EQ(fair_lpos(fx.srv, "gu", lk_fair_owner(l)), 0);
  ASSERT_EQ(rt_rfair_attempt(ctx, "gu", EMU_UUID, 2, 30000, RWAIT, NULL), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "gu", lk_fair_owner(l)), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "gu", r2), 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  rt_run_until(&fx.loop, &sl.done, 5000);
  ASSERT_OK(sl.status);
  free(r2);
  emu_last_turn_then_finish(&fx, ctx, "gu", l, 2, (lk_fair_t *[]){h, l, NULL});
}

/* Whatever happens to a latchkey waiter's entry in Redisson's deadline set
 * (here: moved to the epoch's first millisecond, beyond any allowance),
 * latchkey's scripts keep it where it is: its refresh puts the entry back
 * without moving it in the queue, and a release that finds it at the head
 * hands it the lock. It keeps counting in the queue length meanwhile. */
TEST(latchkey_waiter_keeps_its_place_whatever_its_redisson_deadline_says) {
  fx_t fx;
  lk_fair_t *h, *l1, *l2, *q;
  fsx_t s1, s2;
  redisContext *ctx;
  char *t = fair_timeout_key("wh"), *r = emu_owner(3);
  int64_t len = -1;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  h = fx_fair(&fx, "wh");
  l1 = fx_fair(&fx, "wh");
  l2 = fx_fair(&fx, "wh");
  q = fx_fair(&fx, "wh");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fsx_start(l1, 60000, 30000, 0, &s1);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "wh") == 1, 3000);
  fsx_start(l2, 60000, 30000, 0, &s2);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "wh") == 2, 3000);
  ASSERT_EQ(emu_join(ctx, "wh", 3, RWAIT), 0);
  /* Not at the head: its own refresh restores it, in place. */
  fair_set_score(fx.srv, t, lk_fair_owner(l2), 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_queue_length, q, &len));
  ASSERT_EQ(len, 3);
  FX_EVENTUALLY(&fx, fair_zscore(fx.srv, "wh", lk_fair_owner(l2)) > server_ms(fx.srv), 3000);
  ASSERT_EQ(fair_lpos(fx.srv, "wh", lk_fair_owner(l1)), 0);
  ASSERT_EQ(fair_lpos(fx.srv, "wh", lk_fair_owner(l2)), 1);
  ASSERT_EQ(fair_lpos(fx.srv, "wh", r), 2);
  /* At the head (and the one behind too): the release hands it the lock. */
  fair_set_score(fx.srv, t, lk_fair_owner(l1), 1);
  fair_set_score(fx.srv, t, lk_fair_owner(l2), 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  rt_run_until(&fx.loop, &s1.done, 5000);
  ASSERT_OK(s1.status);
  ASSERT_EQ(s2.done, 0);
  ASSERT_EQ(fair_lpos(fx.srv, "wh", lk_fair_owner(l2)), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, l1, NULL));
  rt_run_until(&fx.loop, &s2.done, 5000);
  ASSERT_OK(s2.status);
  free(t);
  free(r);
  emu_last_turn_then_finish(&fx, ctx, "wh", l2, 3, (lk_fair_t *[]){h, l1, l2, q, NULL});
}

/* A Redisson waiter that stops polling (its process died) blocks the queue
 * until its deadline, as Redisson has it, and no longer: the latchkey
 * waiter behind it gets the lock once it has passed, not before. */
TEST(silent_redisson_waiter_is_dropped_at_its_deadline_not_before) {
  fx_t fx;
  lk_fair_t *h, *l;
  fsx_t sl;
  redisContext *ctx;
  char *r = emu_owner(4);
  long long due, got;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  h = fx_fair(&fx, "sr");
  l = fx_fair(&fx, "sr");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 3000));
  /* tryLock waiting 1.5 s: deadline = now + the holder's lease + 1.5 s */
  ASSERT_EQ(emu_join(ctx, "sr", 4, 1500), 0);
  due = fair_zscore(fx.srv, "sr", r);
  ASSERT_GT(due, server_ms(fx.srv));
  fsx_start(l, 60000, 30000, 0, &sl);
  FX_EVENTUALLY(&fx, fair_lpos(fx.srv, "sr", lk_fair_owner(l)) == 1, 3000);
  const int64_t mark = rt_stall_mark();
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL)); /* tells the silent one */
  rt_run_until(&fx.loop, &sl.done, 10000);
  got = server_ms(fx.srv);
  ASSERT_OK(sl.status);
  ASSERT_GE(got, due);                         /* not before its deadline */
  ASSERT_LE(got, due + rt_stall_bound_ms(mark, 1500)); /* and soon after */
  ASSERT_EQ(fair_lpos(fx.srv, "sr", r), -1);
  ASSERT_EQ(fair_zscore(fx.srv, "sr", r), -1);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, l, NULL));
  fx_close_fair(&fx, h);
  fx_close_fair(&fx, l);
  free(r);
  redisFree(ctx);
  fx_finish(&fx);
}

/* ---- a latchkey waiter in a process that dies ---- */

#define DEAD_TIMEOUT_MS 1500
#define DEAD_OWNER_KEY "dead:owner"

static struct {
  int port;
  redisContext *side;
} dead;

static void dead_on_queued(lk_fair_t *f, int status, void *arg) {
  const char *argv[] = {"SET", DEAD_OWNER_KEY, lk_fair_owner(f)};
  (void)status;
  (void)arg;
  freeReplyObject(rt_emu_command(dead.side, 3, argv, "SET owner"));
}

static void dead_on_acquired(lk_fair_t *f, int status, void *arg) {
  (void)f;
  (void)status;
  (void)arg;
  exit(5); /* it must never get the lock: it is killed while queued */
}

static void dead_on_bound(uv_timer_t *t) {
  (void)t;
  exit(6);
}

/* The worker: queue one latchkey waiter and wait to be killed. */
static void dead_waiter(int index, void *arg) {
  uv_loop_t loop;
  uv_timer_t bound;
  lk_client_t *c;
  lk_client_opts_t co;
  lk_fair_t *f;
  lk_fair_opts_t o;
  (void)index;
  (void)arg;
  dead.side = rt_rlock_connect(dead.port);
  if (uv_loop_init(&loop) != 0)
    exit(2);
  lk_client_opts_init(&co);
  co.port = dead.port;
  if (lk_client_new(&loop, &co, &c) != 0 || lk_fair_new(c, "dd", &f) != 0)
    exit(3);
  lk_fair_set_queue_cb(f, dead_on_queued, NULL);
  lk_fair_opts_init(&o);
  o.wait_ms = 120000;
  o.waiter_timeout_ms = DEAD_TIMEOUT_MS;
  if (lk_fair_acquire(f, &o, dead_on_acquired, NULL) != 0)
    exit(4);
  uv_timer_init(&loop, &bound);
  uv_timer_start(&bound, dead_on_bound, 120000, 0);
  uv_run(&loop, UV_RUN_DEFAULT);
  exit(7);
}

/* Queue: R1, L (in a process that then dies), R2, behind a Redisson
 * holder. L's entry in Redisson's set carries one allowance (R1 is ahead).
 * R1 takes the lock (using the allowance up) and releases it; R2's lock()
 * loop, the only client left running, drops L once L's own deadline has
 * passed, and takes the lock: not before that deadline, and soon after. */
TEST(dead_latchkey_waiter_stops_blocking_redisson_clients_at_its_deadline) {
  fx_t fx;
  rt_worker_t w;
  redisContext *ctx, *sub;
  char *owner = NULL;
  long long live, entry, got;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  sub = rt_rlock_connect(rt_server_port(fx.srv));
  dead.port = rt_server_port(fx.srv);
  ASSERT_EQ(rt_rfair_try_nowait(ctx, "dd", EMU_UUID, 100, 60000, RWAIT), 1);
  ASSERT_EQ(emu_join(ctx, "dd", 1, RWAIT), 0);
  ASSERT_EQ(rt_worker_start(&w, 0, dead_waiter, NULL), 0);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(5000);
    while (owner == NULL) {
      redisReply *r = rt_cmd(fx.srv, "GET %s", DEAD_OWNER_KEY);
      ASSERT_NOT_NULL(r);
      if (r->type == REDIS_REPLY_STRING)
        owner = rt_emu_asprintf("%s", r->str);
      freeReplyObject(r);
      ASSERT_LT(rt_now_ms(), end);
      rt_sleep_ms(5);
    }
  }
  ASSERT_EQ(fair_lpos(fx.srv, "dd", owner), 1);
  rt_worker_kill(&w);
  live = fair_live_score(fx.srv, "dd", owner);
  entry = fair_zscore(fx.srv, "dd", owner);
  ASSERT_GT(live, 0);
  ASSERT_EQ(entry, live + RWAIT); /* one Redisson waiter ahead */
  ASSERT_EQ(emu_join(ctx, "dd", 2, RWAIT), 0);
  ASSERT_EQ(rt_rfair_unlock(ctx, "dd", EMU_UUID, 100), 1);
  ASSERT_EQ(rt_rfair_attempt(ctx, "dd", EMU_UUID, 1, 30000, RWAIT, NULL), 1);
  ASSERT_EQ(fair_zscore(fx.srv, "dd", owner), live); /* the allowance is used up */
  ASSERT_EQ(rt_rfair_unlock(ctx, "dd", EMU_UUID, 1), 1);
  const int64_t mark = rt_stall_mark();
  ASSERT_EQ(rt_rfair_lock(ctx, sub, "dd", EMU_UUID, 2, 30000, RWAIT, rt_scaled_ms(10000)), 0);
  got = server_ms(fx.srv);
  ASSERT_GE(got, live);
  ASSERT_LE(got, live + rt_stall_bound_ms(mark, 1000));
  ASSERT_EQ(fair_lpos(fx.srv, "dd", owner), -1);
  ASSERT_EQ(rt_rfair_unlock(ctx, "dd", EMU_UUID, 2), 1);
  ASSERT_EQ(fair_llen(fx.srv, "dd"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "dd"), 0);
  free(owner);
  redisFree(ctx);
  redisFree(sub);
  fx_finish(&fx);
}
