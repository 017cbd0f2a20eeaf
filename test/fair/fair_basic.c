/* Fair lock in one process: FIFO order, the queue and deadline keys, leaving
 * the queue (try once, timeout, cancel, close), long holds, dead heads, the
 * kept per-waiter channel, counts, queries, leases and bad inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fair_fixture.h"

/* ---- order ---- */

typedef struct {
  int order[16];
  int n;
  int releases_done;
} order_log_t;

typedef struct {
  order_log_t *log;
  int index;
  fsx_t acq;
  int queued_calls;
  int64_t first_position;
} waiter_t;

static void on_rel_logged(lk_fair_t *f, int status, void *arg) {
  order_log_t *log = arg;
  (void)f;
  ASSERT_OK(status);
  log->releases_done++;
}

/* The waiter's acquire callback: log the order, release at once. */
static void on_acq_logged(lk_fair_t *f, int status, void *arg) {
  waiter_t *w = arg;
  fsx_cb(f, status, &w->acq);
  if (status != 0)
    return; /* the test checks it */
  w->log->order[w->log->n++] = w->index;
  ASSERT_OK(lk_fair_release(f, on_rel_logged, w->log));
}

static void on_queued_count(lk_fair_t *f, int status, void *arg) {
  waiter_t *w = arg;
  ASSERT_OK(status);
  if (w->queued_calls++ == 0)
    w->first_position = lk_fair_position(f);
}

/* Waiter number index of log: a new object on name whose acquire (its
 * callback w) is started and run until the server has queued it. */
static lk_fair_t *enqueue(fx_t *fx, const char *name, waiter_t *w, order_log_t *log, int index,
                          int64_t waiter_timeout_ms) {
  lk_fair_t *f = fx_fair(fx, name);
  lk_fair_opts_t o;
  memset(w, 0, sizeof(*w));
  w->log = log;
  w->index = index;
  lk_fair_opts_init(&o);
  o.wait_ms = 30000;
  if (waiter_timeout_ms > 0)
    o.waiter_timeout_ms = waiter_timeout_ms;
  ASSERT_OK(lk_fair_set_queue_cb(f, on_queued_count, w));
  ASSERT_OK(lk_fair_acquire(f, &o, on_acq_logged, w));
  rt_run_until(&fx->loop, &w->queued_calls, 5000);
  return f;
}

/* A fair lock name held by h (lease_ms) with n waiters w[0..n) queued
 * behind it in that order (enqueue), each seen at its place. */
typedef struct {
  fx_t fx;
  const char *name;
  lk_fair_t *h, *w[8];
  waiter_t ws[8];
  order_log_t log;
  int n;
} queued_t;

static void queued_start(queued_t *q, const char *name, int n, int64_t lease_ms,
                         int64_t waiter_timeout_ms) {
  int i;
  fx_start(&q->fx, NULL);
  memset(&q->log, 0, sizeof(q->log));
  q->name = name;
  q->n = n;
  q->h = fx_fair(&q->fx, name);
  ASSERT_OK(fsx_acquire(&q->fx, q->h, 0, lease_ms));
  for (i = 0; i < n; i++) {
    q->w[i] = enqueue(&q->fx, name, &q->ws[i], &q->log, i, waiter_timeout_ms);
    ASSERT_EQ(q->ws[i].first_position, i);
    ASSERT_EQ(lk_fair_position(q->w[i]), i);
  }
}

/* Closes the waiters, then the holder, and ends the fixture. */
static void queued_finish(queued_t *q) {
  for (int i = 0; i < q->n; i++)
    fx_close_fair(&q->fx, q->w[i]);
  fx_finish_fairs(&q->fx, (lk_fair_t *[]){q->h, NULL});
}

/* h releases: the waiters order[0..n_granted) (the others have left the
 * queue) each take the lock in that order and release it at once; then the
 * queue, the deadlines and the lock are gone, and all is closed. */
static void queued_release_in_order(queued_t *q, const int *order, int n_granted) {
  int i;
  ASSERT_OK(fsx_run(&q->fx, lk_fair_release, q->h, NULL));
  for (i = 0; i < n_granted; i++)
    rt_run_until(&q->fx.loop, &q->ws[order[i]].acq.done, 5000);
  FX_EVENTUALLY(&q->fx, q->log.releases_done == n_granted, 5000);
  ASSERT_EQ(q->log.n, n_granted);
  for (i = 0; i < n_granted; i++)
    ASSERT_EQ(q->log.order[i], order[i]);
  ASSERT_EQ(fair_llen(q->fx.srv, q->name), 0);
  ASSERT_EQ(fair_zcard(q->fx.srv, q->name), 0);
  ASSERT_EQ(rt_cmd_int(q->fx.srv, "EXISTS %s", q->name), 0);
  queued_finish(q);
}

TEST(fifo_order_and_keys) {
  enum { N = 5 };
  queued_t q;
  long long now, score;
  int i;
  queued_start(&q, "fifo", N, 30000, 0);
  /* Redisson's layout: the queue lists owners in arrival order; the deadline
   * of each is the server's clock + the waiter timeout (10 s default). */
  ASSERT_EQ(fair_llen(q.fx.srv, "fifo"), N);
  ASSERT_EQ(fair_zcard(q.fx.srv, "fifo"), N);
  now = server_ms(q.fx.srv);
  for (i = 0; i < N; i++) {
    ASSERT_EQ(fair_lpos(q.fx.srv, "fifo", lk_fair_owner(q.w[i])), i);
    score = fair_zscore(q.fx.srv, "fifo", lk_fair_owner(q.w[i]));
    ASSERT_GT(score, now);
    ASSERT_LE(score, now + LK_FAIR_WAITER_TIMEOUT_DEFAULT + 5);
  }
  queued_release_in_order(&q, (const int[]){0, 1, 2, 3, 4}, N);
}

/* A newcomer finds the lock free while someone is queued: it queues behind
 * instead of barging. */
TEST(newcomer_never_barges) {
  fx_t fx;
  lk_fair_t *h, *a, *b;
  fsx_t sa, sb;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "barge", 30000, &h, &a, &b);
  fsx_start_queued(&fx, a, "barge", 1, &sa);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  /* b tries once at once: a is next in line, so b gets nothing even if a
   * has not taken the lock yet. */
  ASSERT_EQ(fsx_acquire(&fx, b, 0, 30000), LK_ETIMEDOUT);
  rt_run_until(&fx.loop, &sa.done, 5000);
  ASSERT_OK(sa.status);
  ASSERT_EQ(fair_llen(fx.srv, "barge"), 0);
  fsx_start(b, 30000, 30000, 0, &sb);
  fsx_release_hands_over(&fx, a, &sb);
  fx_finish_fairs_gone(&fx, "barge", (lk_fair_t *[]){h, a, b, NULL});
}

/* ---- leaving the queue ---- */

TEST(try_once_never_queues) {
  fx_t fx;
  lk_fair_t *a, *b;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "once", 30000, &a, &b, NULL);
  ASSERT_EQ(fsx_acquire(&fx, b, 0, 30000), LK_ETIMEDOUT);
  ASSERT_EQ(fair_llen(fx.srv, "once"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "once"), 0);
  ASSERT_EQ(lk_fair_position(b), -1);
  fx_finish_fairs(&fx, (lk_fair_t *[]){a, b, NULL});
}

TEST(timed_out_waiter_leaves_the_queue) {
  fx_t fx;
  lk_fair_t *a, *b, *c;
  fsx_t sb, sc;
  uint64_t t0;
  int64_t elapsed;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "tmo", 30000, &a, &b, &c);
  t0 = uv_hrtime();
  fsx_start(b, 300, 30000, 0, &sb);
  fsx_start(c, 30000, 30000, 0, &sc);
  rt_run_until(&fx.loop, &sb.done, 3000);
  elapsed = ms_between(t0, sb.t_ns);
  ASSERT_EQ(sb.status, LK_ETIMEDOUT);
  ASSERT_GE(elapsed, 300); /* never before the budget */
  ASSERT_LT(elapsed, rt_stall_bound_since_ns(t0, 1000));
  /* b is gone from both structures; c keeps its place and moves up. */
  ASSERT_EQ(fair_lpos(fx.srv, "tmo", lk_fair_owner(b)), -1);
  ASSERT_EQ(fair_zscore(fx.srv, "tmo", lk_fair_owner(b)), -1);
  ASSERT_EQ(fair_lpos(fx.srv, "tmo", lk_fair_owner(c)), 0);
  fsx_release_hands_over(&fx, a, &sc);
  fx_finish_fairs_gone(&fx, "tmo", (lk_fair_t *[]){a, b, c, NULL});
}

TEST(cancel_in_the_middle_leaves_no_trace) {
  queued_t q;
  char old_owner[128];
  queued_start(&q, "cm", 3, 30000, 0);
  /* (A cancel that meets an attempt in flight retires the identity, so
   * the queue is checked for the owner it had.) */
  snprintf(old_owner, sizeof(old_owner), "%s", lk_fair_owner(q.w[1]));
  ASSERT_OK(lk_fair_cancel(q.w[1]));
  ASSERT_EQ(q.ws[1].acq.done, 0); /* never inside the call */
  ASSERT_EQ(lk_fair_cancel(q.w[1]), LK_EINVAL);
  rt_run_until(&q.fx.loop, &q.ws[1].acq.done, 5000);
  ASSERT_EQ(q.ws[1].acq.status, LK_ECANCELED);
  FX_EVENTUALLY(&q.fx, fair_lpos(q.fx.srv, "cm", old_owner) == -1, 2000);
  ASSERT_EQ(fair_zscore(q.fx.srv, "cm", old_owner), -1);
  ASSERT_EQ(fair_llen(q.fx.srv, "cm"), 2);
  ASSERT_EQ(fair_zcard(q.fx.srv, "cm"), 2);
  ASSERT_EQ(fair_lpos(q.fx.srv, "cm", lk_fair_owner(q.w[0])), 0);
  ASSERT_EQ(fair_lpos(q.fx.srv, "cm", lk_fair_owner(q.w[2])), 1);
  queued_release_in_order(&q, (const int[]){0, 2}, 2);
}

/* Close while queued: the pending acquire is canceled first, the waiter
 * leaves, and the next one is woken without waiting for a re-poll. */
TEST(close_while_queued_leaves_no_trace) {
  fx_t fx;
  lk_fair_t *h, *a, *b;
  fsx_t sa, sb;
  int closed = 0;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "cq", 30000, &h, &a, &b);
  fsx_start_queued(&fx, a, "cq", 1, &sa);
  fsx_start_queued(&fx, b, "cq", 2, &sb);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  /* a is next and the lock is free; closing a must hand over to b. */
  lk_fair_set_data(a, &closed);
  ASSERT_OK(lk_fair_close(a, fx_fair_closed_cb));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT(sa.done);
  ASSERT(sa.status == LK_ECANCELED || sa.status == 0);
  rt_run_until(&fx.loop, &sb.done, 5000);
  ASSERT_OK(sb.status);
  ASSERT_EQ(fair_llen(fx.srv, "cq"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "cq"), 0);
  fx_finish_fairs_gone(&fx, "cq", (lk_fair_t *[]){b, h, NULL});
}

/* ---- liveness of the queue ---- */

/* The holder keeps the lock for several waiter timeouts: live waiters keep
 * refreshing their deadlines and nobody is skipped. */
TEST(long_hold_never_purges_live_waiters) {
  enum { N = 3 };
  queued_t q;
  int64_t timeout = rt_scaled_ms(300), end;
  long long first_score[N];
  int i;
  queued_start(&q, "long", N, 60000, timeout);
  for (i = 0; i < N; i++)
    first_score[i] = fair_zscore(q.fx.srv, "long", lk_fair_owner(q.w[i]));
  /* Waiters refresh every timeout / 3: a machine stall longer than the
   * other two thirds lets a live waiter's deadline pass for no fault of the
   * library (then the rest cannot be checked: it is skipped and rejoins). */
  const int64_t mark = rt_stall_mark();
  end = rt_now_ms() + 4 * timeout;
  while (rt_now_ms() < end) {
    long long now = server_ms(q.fx.srv);
    int in_time = 1;
    ASSERT_EQ(fair_llen(q.fx.srv, "long"), N);
    for (i = 0; i < N; i++) {
      /* in place, and never past its deadline */
      ASSERT_EQ(fair_lpos(q.fx.srv, "long", lk_fair_owner(q.w[i])), i);
      in_time &= fair_zscore(q.fx.srv, "long", lk_fair_owner(q.w[i])) > now;
    }
    if (!EXPECT_HOLD(in_time, mark, timeout - timeout / 3)) {
      queued_finish(&q);
      return;
    }
    fx_spin(&q.fx, 10);
  }
  /* the deadlines moved on with the refreshes */
  for (i = 0; i < N; i++)
    ASSERT_GE(fair_zscore(q.fx.srv, "long", lk_fair_owner(q.w[i])), first_score[i] + 2 * timeout);
  queued_release_in_order(&q, (const int[]){0, 1, 2}, N);
}

/* A silent waiter (planted on the side channel, as a dead process leaves
 * it) heads the queue of a free lock: the next waiter takes the lock once
 * that deadline passes, not before, and without busy polling meanwhile. */
TEST(silent_head_is_skipped_at_its_deadline) {
  fx_t fx;
  lk_fair_t *b;
  fsx_t sb;
  lk_client_stats_t st0, st1;
  long long deadline, got;
  int64_t gap = 1500;
  char *q = fair_queue_key("dead"), *t = fair_timeout_key("dead");
  fx_start(&fx, NULL);
  b = fx_fair(&fx, "dead");
  deadline = server_ms(fx.srv) + gap;
  {
    const char *rp[3] = {"RPUSH", q, "00000000-0000-4000-8000-000000000000:1"};
    char score[32];
    const char *za[4] = {"ZADD", t, score, "00000000-0000-4000-8000-000000000000:1"};
    snprintf(score, sizeof(score), "%lld", deadline);
    freeReplyObject(rt_cmd_argv(fx.srv, 3, rp, NULL));
    freeReplyObject(rt_cmd_argv(fx.srv, 4, za, NULL));
  }
  /* Make sure the client is connected so its counters start clean. */
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, b, NULL));
  lk_client_get_stats(fx.c, &st0);
  const int64_t mark = rt_stall_mark();
  fsx_start(b, 10000, 30000, 0, &sb);
  rt_run_until(&fx.loop, &sb.done, gap + 3000);
  got = server_ms(fx.srv);
  ASSERT_OK(sb.status);
  ASSERT_GE(got, deadline); /* a live-looking head was never skipped early */
  ASSERT_LT(got, deadline + rt_stall_bound_ms(mark, 500));
  lk_client_get_stats(fx.c, &st1);
  /* The attempts: join, the retry once subscribed, about one per second of
   * re-poll (max_repoll_ms), one at the deadline: a handful, never a loop.
   * (+ SUBSCRIBEs and heartbeats on their connections.) */
  ASSERT_LE(st1.commands_sent - st0.commands_sent, 12);
  ASSERT_EQ(fair_llen(fx.srv, "dead"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "dead"), 0);
  fx_close_fair(&fx, b);
  free(q);
  free(t);
  fx_finish(&fx);
}

/* ---- the waiter's own channel ---- */

/* Wakes come on the waiter's own channel, which stays subscribed from the
 * first wait until close: five waits, one SUBSCRIBE. */
TEST(waiter_channel_is_kept_until_close) {
  fx_t fx;
  lk_fair_t *h, *w;
  fsx_t s;
  char *ch;
  long long subs0;
  int i;
  fx_start(&fx, NULL);
  h = fx_fair(&fx, "chan");
  w = fx_fair(&fx, "chan");
  ch = fair_channel_of(w);
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, w, NULL)); /* connected */
  subs0 = rt_server_cmd_calls(fx.srv, "subscribe");
  for (i = 0; i < 5; i++) {
    ASSERT_OK(fsx_acquire(&fx, h, 0, 30000));
    fsx_start(w, 30000, 30000, 0, &s);
    FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 1 && fair_llen(fx.srv, "chan") == 1, 3000);
    fx_spin(&fx, 5);
    fsx_release_wakes(&fx, h, &s, 500); /* by its message, not by a re-poll (1 s) */
    ASSERT_OK(fsx_run(&fx, lk_fair_release, w, NULL));
    ASSERT_EQ(rt_server_numsub(fx.srv, ch), 1);
  }
  /* Its own channel and the client's heartbeat channel: two in all. */
  ASSERT_LE(rt_server_cmd_calls(fx.srv, "subscribe") - subs0, 2);
  fx_close_fair(&fx, w);
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 0, 2000);
  free(ch);
  fx_finish_fairs(&fx, (lk_fair_t *[]){h, NULL});
}

/* ---- counts, queries, force release ---- */

TEST(reentrancy_counts_and_queries) {
  fx_t fx;
  lk_fair_t *a, *b;
  int64_t r = -9;
  int i;
  fx_start(&fx, NULL);
  a = fx_fair(&fx, "cnt");
  b = fx_fair(&fx, "cnt");
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, b, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_remaining_ttl, b, &r));
  ASSERT_EQ(r, -2);
  for (i = 1; i <= 3; i++) {
    ASSERT_OK(fsx_acquire(&fx, a, 0, 5000));
    ASSERT_EQ(lk_fair_hold_count(a), i);
  }
  ASSERT(lk_fair_is_held(a));
  ASSERT_OK(fsx_run(&fx, lk_fair_server_hold_count, a, &r));
  ASSERT_EQ(r, 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN cnt"), 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, b, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_remaining_ttl, b, &r));
  ASSERT_GT(r, 0);
  ASSERT_LE(r, 5000);
  ASSERT_OK(fsx_run(&fx, lk_fair_queue_length, b, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, a, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, a, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, a, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(lk_fair_hold_count(a), 0);
  ASSERT(!lk_fair_is_held(a));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cnt"), 0);
  ASSERT_EQ(lk_fair_release(a, fsx_cb, NULL), LK_ENOTHELD);
  fx_finish_fairs(&fx, (lk_fair_t *[]){a, b, NULL});
}

TEST(queue_length_counts_live_waiters) {
  fx_t fx;
  lk_fair_t *h, *q, *w[3];
  fsx_t s[3];
  int64_t r = -1;
  int i;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "ql", 30000, &h, &q, NULL);
  for (i = 0; i < 3; i++) {
    w[i] = fx_fair(&fx, "ql");
    fsx_start_queued(&fx, w[i], "ql", i + 1, &s[i]);
  }
  ASSERT_OK(fsx_run(&fx, lk_fair_queue_length, q, &r));
  ASSERT_EQ(r, 3);
  /* A latchkey waiter's deadline in the queue's deadline set moved into
   * the past (as a Redisson acquisition moves it) does not make it dead:
   * its own liveness deadline counts. */
  {
    char *t = fair_timeout_key("ql");
    fair_set_score(fx.srv, t, lk_fair_owner(w[1]), 1);
    free(t);
  }
  ASSERT_OK(fsx_run(&fx, lk_fair_queue_length, q, &r));
  ASSERT_EQ(r, 3);
  /* a waiter whose liveness deadline passed no longer counts */
  {
    char *v = fair_waiters_key("ql");
    fair_set_score(fx.srv, v, lk_fair_owner(w[2]), 1);
    free(v);
  }
  ASSERT_OK(fsx_run(&fx, lk_fair_queue_length, q, &r));
  ASSERT_EQ(r, 2);
  fx_close_fair(&fx, h);
  for (i = 0; i < 3; i++) {
    rt_run_until(&fx.loop, &s[i].done, 5000);
    ASSERT_OK(s[i].status);
    fx_close_fair(&fx, w[i]);
  }
  fx_close_fair(&fx, q);
  ASSERT_EQ(fair_llen(fx.srv, "ql"), 0);
  fx_finish(&fx);
}

TEST(force_release_wakes_the_next_waiter) {
  fx_t fx;
  lk_fair_t *a, *b, *c;
  fsx_t sb;
  int64_t r = -1;
  uint64_t t0;
  fx_start(&fx, NULL);
  fx_fair_holder_and_others(&fx, "frc", 60000, &a, &b, &c);
  fsx_start_queued(&fx, b, "frc", 1, &sb);
  fx_spin(&fx, 10);
  t0 = uv_hrtime();
  ASSERT_OK(fsx_run(&fx, lk_fair_force_release, c, &r));
  ASSERT_EQ(r, 1);
  rt_run_until(&fx.loop, &sb.done, 5000);
  ASSERT_OK(sb.status);
  ASSERT_LT(ms_between(t0, sb.t_ns), rt_stall_bound_since_ns(t0, 500));
  ASSERT_EQ(fsx_run(&fx, lk_fair_release, a, NULL), LK_ENOTOWNER);
  ASSERT_OK(fsx_run(&fx, lk_fair_force_release, c, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(fsx_run(&fx, lk_fair_force_release, c, &r));
  ASSERT_EQ(r, 0);
  fx_finish_fairs(&fx, (lk_fair_t *[]){a, b, c, NULL});
}

TEST(fenced_tokens_increase) {
  fx_t fx;
  lk_fair_t *a, *b;
  lk_fair_opts_t o;
  fsx_t s;
  int64_t t1, t2;
  fx_start(&fx, NULL);
  a = fx_fair(&fx, "fen");
  b = fx_fair(&fx, "fen");
  lk_fair_opts_init(&o);
  o.fenced = 1;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_fair_acquire(a, &o, fsx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  t1 = lk_fair_token(a);
  ASSERT_GT(t1, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, a, NULL));
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_fair_acquire(b, &o, fsx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  t2 = lk_fair_token(b);
  ASSERT_GT(t2, t1);
  {
    char *v = rt_cmd_str(fx.srv, "GET redisson_lock_token:{fen}");
    ASSERT_EQ(atoll(v), t2);
    free(v);
  }
  fx_finish_fairs(&fx, (lk_fair_t *[]){a, b, NULL});
}

/* ---- leases ---- */

static void on_lost_flag(lk_fair_t *f, int status, void *arg) {
  int *flag = arg;
  (void)f;
  ASSERT_EQ(status, LK_ELEASELOST);
  (*flag)++;
}

TEST(watchdog_keeps_and_loses_fair_holds) {
  fx_t fx;
  lk_client_opts_t o;
  lk_fair_t *a;
  int lost = 0;
  int64_t end;
  /* Scaled: the hold survives only while every renewal comes back within
   * about 2/3 of a lease. */
  const int64_t lease = rt_scaled_ms(600);
  lk_client_opts_init(&o);
  o.default_lease_ms = lease;
  fx_start_with(&fx, NULL, &o);
  a = fx_fair(&fx, "wd");
  ASSERT_OK(lk_fair_set_lost_cb(a, on_lost_flag, &lost));
  ASSERT_OK(fsx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
  /* A machine stall longer than a renewal's slack may take the hold. */
  const int64_t mark = rt_stall_mark(), slack = fx_renewal_slack(lease);
  int held = 1;
  end = rt_now_ms() + lease * 10 / 3; /* over three leases */
  while (held && rt_now_ms() < end) {
    const long long exists = rt_cmd_int(fx.srv, "EXISTS wd");
    if (exists == 0) /* safety: no belief in a hold the server no longer has */
      ASSERT(!lk_fair_is_held(a));
    held = EXPECT_HOLD(exists == 1 && lost == 0, mark, slack);
    fx_spin(&fx, 20);
  }
  if (held)
    held = EXPECT_HOLD(lk_fair_is_held(a) && lost == 0, mark, slack);
  if (!held) {
    FX_LOSS_TOLD_ONCE(&fx, lost, lk_fair_is_held(a));
    fx_finish_fairs(&fx, (lk_fair_t *[]){a, NULL});
    return;
  }
  /* Deleted behind its back: the next renewal says so. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL wd"), 1);
  rt_run_until(&fx.loop, &lost, 3000);
  ASSERT(!lk_fair_is_held(a));
  ASSERT_EQ(lk_fair_release(a, fsx_cb, NULL), LK_ELEASELOST);
  fx_finish_fairs(&fx, (lk_fair_t *[]){a, NULL});
}

/* ---- bad inputs ---- */

TEST(bad_inputs_are_refused) {
  fx_t fx;
  lk_fair_t *a, *b;
  lk_fair_opts_t o;
  fsx_t s;
  char *big;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_fair_new(NULL, "x", &a), LK_EINVAL);
  ASSERT_EQ(lk_fair_new(fx.c, NULL, &a), LK_EINVAL);
  ASSERT_EQ(lk_fair_new(fx.c, "", &a), LK_EINVAL);
  ASSERT_EQ(lk_fair_new(fx.c, "x", NULL), LK_EINVAL);
  big = malloc(5000);
  memset(big, 'n', 4999);
  big[4999] = '\0';
  ASSERT_EQ(lk_fair_new(fx.c, big, &a), LK_ENAMETOOLONG);
  free(big);
  a = fx_fair(&fx, "bad");
  b = fx_fair(&fx, "bad");
  lk_fair_opts_init(&o);
  ASSERT_EQ(lk_fair_acquire(a, &o, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_fair_acquire(NULL, &o, fsx_cb, &s), LK_EINVAL);
  o.waiter_timeout_ms = LK_FAIR_WAITER_TIMEOUT_MIN - 1;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  o.waiter_timeout_ms = 0;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  o.waiter_timeout_ms = LK_MAX_TIME_MS + 1;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  lk_fair_opts_init(&o);
  o.lease_ms = 0;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  o.lease_ms = -2;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  lk_fair_opts_init(&o);
  o.wait_ms = -2;
  ASSERT_EQ(lk_fair_acquire(a, &o, fsx_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_fair_cancel(a), LK_EINVAL);
  ASSERT_EQ(lk_fair_release(a, fsx_cb, &s), LK_ENOTHELD);
  ASSERT_EQ(lk_fair_set_owner(a, "not:an-id", 1), LK_EINVAL);
  /* one operation at a time */
  fsx_start(a, 0, 30000, 0, &s);
  ASSERT_EQ(lk_fair_acquire(a, NULL, fsx_cb, &s), LK_EBUSY);
  ASSERT_EQ(lk_fair_is_locked(a, fsx_cb, &s), LK_EBUSY);
  ASSERT_EQ(lk_fair_set_owner(a, NULL, 7), LK_EBUSY);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  /* a key of another type is never overwritten */
  free(rt_cmd_str(fx.srv, "SET wt x"));
  {
    lk_fair_t *w = fx_fair(&fx, "wt");
    ASSERT_EQ(fsx_acquire(&fx, w, 0, 30000), LK_EWRONGTYPE);
    ASSERT_EQ(fsx_run(&fx, lk_fair_force_release, w, NULL), LK_EWRONGTYPE);
    fx_close_fair(&fx, w);
  }
  {
    char *v = rt_cmd_str(fx.srv, "GET wt");
    ASSERT_STREQ(v, "x");
    free(v);
  }
  {
    int closed = 0;
    lk_fair_set_data(a, &closed);
    ASSERT_OK(lk_fair_close(a, fx_fair_closed_cb));
    ASSERT_EQ(lk_fair_acquire(a, NULL, fsx_cb, &s), LK_ECLOSED);
    ASSERT_EQ(lk_fair_release(a, fsx_cb, &s), LK_ECLOSED);
    ASSERT_EQ(lk_fair_close(a, NULL), LK_ECLOSED);
    rt_run_until(&fx.loop, &closed, 5000);
  }
  fx_finish_fairs(&fx, (lk_fair_t *[]){b, NULL});
}

TEST(names_with_braces_use_redisson_keys) {
  fx_t fx;
  lk_fair_t *h, *w;
  fsx_t s;
  char *ch;
  fx_start(&fx, NULL);
  h = fx_fair(&fx, "a{b}c");
  w = fx_fair(&fx, "a{b}c");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 30000));
  fsx_start(w, 30000, 30000, 0, &s);
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "LLEN redisson_lock_queue:a{b}c") == 1, 3000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD redisson_lock_timeout:a{b}c"), 1);
  ch = fair_channel_of(w);
  ASSERT(strncmp(ch, "redisson_lock__channel:a{b}c:", strlen("redisson_lock__channel:a{b}c:")) == 0);
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 1, 3000);
  free(ch);
  fsx_release_hands_over(&fx, h, &s);
  fx_finish_fairs_gone(&fx, "a{b}c", (lk_fair_t *[]){h, w, NULL});
}

/* A waiter that is not next re-polls (and refreshes its deadline) every
 * timeout/3, even when max_repoll_ms is much longer, and not more often. */
TEST(refresh_cadence_is_a_third_of_the_timeout) {
  fx_t fx;
  lk_client_opts_t o;
  lk_fair_t *h, *a, *b;
  fsx_t sa, sb;
  lk_client_stats_t st0, st1;
  long long last, now, changes = 0;
  int64_t end, t0, elapsed;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 20000;
  o.heartbeat_ms = 60000; /* keep the counters to the waiters' own commands */
  fx_start_with(&fx, NULL, &o);
  h = fx_fair(&fx, "cad");
  a = fx_fair(&fx, "cad");
  b = fx_fair(&fx, "cad");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fsx_start(a, 30000, 30000, 30000, &sa); /* next in line, long timeout */
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "cad") == 1, 3000);
  fsx_start(b, 30000, 30000, 900, &sb); /* behind it: refresh every 300 ms */
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "cad") == 2, 3000);
  fx_spin(&fx, 100); /* past the first wait's subscribe-then-retry */
  lk_client_get_stats(fx.c, &st0);
  t0 = rt_now_ms();
  last = fair_zscore(fx.srv, "cad", lk_fair_owner(b));
  end = t0 + 1800;
  while (rt_now_ms() < end) {
    now = fair_zscore(fx.srv, "cad", lk_fair_owner(b));
    ASSERT_GT(now, server_ms(fx.srv)); /* never lapses */
    if (now != last)
      changes++;
    last = now;
    fx_spin(&fx, 5);
  }
  lk_client_get_stats(fx.c, &st1);
  elapsed = rt_now_ms() - t0;
  /* b refreshes every 300 ms, not more often: about 6 in 1.8 s, seen by the
   * server (sampling can only miss some). a (timeout 30 s, hint = the
   * holder's 60 s lease) refreshes every 10 s: none here. Never a polling
   * loop: the client's commands are b's refreshes plus, on a loaded machine,
   * the first waits' subscribe-then-retry if it had not settled yet. */
  ASSERT_LE(changes, elapsed / 300 + 1);
  ASSERT_LE((int64_t)(st1.commands_sent - st0.commands_sent), elapsed / 300 + 1 + 4);
  ASSERT_GE(changes, 2);
  ASSERT_EQ(sa.done + sb.done, 0);
  fx_close_fair(&fx, h);
  rt_run_until(&fx.loop, &sa.done, 5000);
  ASSERT_OK(sa.status);
  fx_close_fair(&fx, a);
  rt_run_until(&fx.loop, &sb.done, 5000);
  ASSERT_OK(sb.status);
  fx_finish_fairs(&fx, (lk_fair_t *[]){b, NULL});
}

typedef struct {
  int lost, close_in_lost, closed;
  fsx_t *acq; /* the acquire pending when the loss is found */
  int lost_before_acq;
} loss_t;

static void on_loss_closed(lk_fair_t *f) {
  loss_t *l = lk_fair_get_data(f);
  l->closed = 1;
}

static void on_loss(lk_fair_t *f, int status, void *arg) {
  loss_t *l = arg;
  ASSERT_EQ(status, LK_ELEASELOST);
  l->lost++;
  l->lost_before_acq = l->acq->done == 0;
  if (l->close_in_lost) {
    lk_fair_set_data(f, l);
    ASSERT_OK(lk_fair_close(f, on_loss_closed));
  }
}

/* A re-entry finds the earlier hold gone (deleted behind its back): on_lost
 * first, then the acquire's callback, exactly once, also when on_lost closes
 * the object. */
TEST(reentry_after_loss_reports_it_once) {
  fx_t fx;
  lk_fair_t *a;
  fsx_t s;
  loss_t l;
  int round;
  fx_start(&fx, NULL);
  for (round = 0; round < 2; round++) {
    memset(&l, 0, sizeof(l));
    l.close_in_lost = round == 1;
    l.acq = &s;
    a = fx_fair(&fx, "rel");
    ASSERT_OK(lk_fair_set_lost_cb(a, on_loss, &l));
    ASSERT_OK(fsx_acquire(&fx, a, 0, 60000));
    ASSERT_EQ(rt_cmd_int(fx.srv, "DEL rel"), 1);
    fsx_start(a, 0, 60000, 0, &s);
    rt_run_until(&fx.loop, &s.done, 5000);
    ASSERT_EQ(l.lost, 1);
    ASSERT(l.lost_before_acq);
    if (round == 0) {
      ASSERT_EQ(s.status, LK_ELEASELOST);
      ASSERT_EQ(lk_fair_hold_count(a), 0);
      fx_close_fair(&fx, a);
    } else {
      ASSERT_EQ(s.status, LK_ECANCELED);
      rt_run_until(&fx.loop, &l.closed, 5000);
    }
    fx_spin(&fx, 20);
    ASSERT_EQ(s.calls, 1);
    /* what the re-entry took was given back */
    FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS rel") == 0, 2000);
  }
  fx_finish(&fx);
}
