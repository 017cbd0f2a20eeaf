/* Spin mode on the lock (docs/lock.md, "Spin mode"): a spinning wait never
 * subscribes, backs off with jitter, ends within its budget, calls back
 * once when canceled or closed mid-sleep, refuses bad options, and shares a
 * name with Redisson's RLock and RSpinLock users and with latchkey's
 * pub/sub waiters. Exclusion among processes: spin_excl.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spin.h"
#include "spin_common.h"

#define NAME "spin-lock"
#define CHANNEL "redisson_lock__channel:{" NAME "}"

/* Waiters' re-poll far above every bound asserted here: only a try of the
 * back-off (or a message) can end a wait early. */
#define NO_REPOLL_MS 600000

static void start(fx_t *fx, int client_spin) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = NO_REPOLL_MS;
  o.spin = client_spin;
  fx_start_with(fx, NULL, &o);
}

static void spin_opts(lk_lock_opts_t *o, int64_t wait_ms) {
  lk_lock_opts_init(o);
  o->wait_ms = wait_ms;
  o->spin = 1;
}

/* The Redisson side holds NAME (no renewal: nothing runs on its behalf). */
static redisContext *emu_hold(fx_t *fx, int64_t lease_ms) {
  redisContext *ctx = rt_rlock_connect(rt_server_port(fx->srv));
  ASSERT_EQ(rt_rlock_try(ctx, NAME, SPIN_EMU_UUID, SPIN_EMU_TID, lease_ms), RT_RLOCK_ACQUIRED);
  return ctx;
}

/* An acquire with o while the Redisson side holds NAME: it times out
 * (LK_ETIMEDOUT within 5 s); what the server saw is the caller's to check. */
static void acquire_times_out(fx_t *fx, lk_lock_t *l, const lk_lock_opts_t *o) {
  sx_t s;
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, o, sx_cb, &s));
  rt_run_until(&fx->loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
}

TEST(lock_spin_wait_never_subscribes) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  long long subs0;
  start(&fx, 0);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);
  rt_server_reset_stats(fx.srv);
  subs0 = spin_subscribes(fx.srv);
  ASSERT_EQ(subs0, 0);

  /* Spinning: a busy wait of 600 ms, checked for subscriptions while it
   * waits and after. */
  spin_opts(&o, 600);
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  for (int i = 0; !s.done && i < 500; i++) {
    ASSERT_EQ(rt_server_numsub(fx.srv, CHANNEL), 0);
    ASSERT_EQ(spin_subscribes(fx.srv), 0);
    fx_spin(&fx, 20);
  }
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
  ASSERT_EQ(spin_subscribes(fx.srv), 0);

  /* The control: the same wait listening for releases subscribes, so the
   * counts above could have shown one. */
  o.spin = 0;
  o.wait_ms = 300;
  acquire_times_out(&fx, l, &o);
  ASSERT_GE(spin_subscribes(fx.srv), 1);

  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

/* The client's spin = 1 makes an acquire whose own option is -1 (the
 * default) spin; its own 0 makes it listen. */
TEST(client_spin_applies_unless_the_acquire_says_otherwise) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  start(&fx, 1);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);
  rt_server_reset_stats(fx.srv);
  lk_lock_opts_init(&o);
  o.wait_ms = 300;
  ASSERT_EQ(o.spin, -1);
  acquire_times_out(&fx, l, &o);
  ASSERT_EQ(spin_subscribes(fx.srv), 0);
  o.spin = 0;
  acquire_times_out(&fx, l, &o);
  ASSERT_GE(spin_subscribes(fx.srv), 1);
  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

/* A busy spin wait ends LK_ETIMEDOUT no earlier than its budget (strict)
 * and not much later (generous, scaled), with its last try at the
 * deadline: a lock freed just before the deadline is taken then. */
TEST(lock_spin_wait_is_bounded_by_its_budget) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  uint64_t t0;
  double took_ms;
  start(&fx, 0);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);

  /* Back-off far longer than the budget: the budget alone bounds it. */
  spin_opts(&o, 700);
  o.spin_initial_ms = 5000;
  memset(&s, 0, sizeof s);
  t0 = uv_hrtime();
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 10000);
  took_ms = (double)(s.t_ns - t0) / 1e6;
  printf("spin wait of 700 ms (back-off 5 s) ended after %.1f ms\n", took_ms);
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
  ASSERT_GE(took_ms, 700.0);
  ASSERT_LE(took_ms, 700.0 + (double)rt_stall_bound_since_ns(t0, 500));

  /* The same wait, the lock freed (RSpinLock-style: no message) while the
   * waiter sleeps its long back-off: the last try at the deadline takes it. */
  memset(&s, 0, sizeof s);
  long long calls = spin_script_calls(fx.srv);
  t0 = uv_hrtime();
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  spin_wait_for_try(&fx, calls);
  ASSERT_EQ(spin_rspin_unlock(emu, NAME, SPIN_EMU_UUID, SPIN_EMU_TID), 1);
  rt_run_until(&fx.loop, &s.done, 10000);
  took_ms = (double)(s.t_ns - t0) / 1e6;
  ASSERT_EQ(s.status, 0);
  ASSERT_GE(took_ms, 690.0); /* not before: it slept, nothing woke it */
  ASSERT_LE(took_ms, 700.0 + (double)rt_stall_bound_since_ns(t0, 500));
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);

  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

/* Over a 2 s busy wait the back-off makes a few dozen tries at most, far
 * fewer than budget / initial back-off (2000), and at least the few a
 * 128 ms cap allows on a loaded machine. */
TEST(lock_spin_backoff_grows) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  long long before, tries;
  start(&fx, 0);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);
  spin_opts(&o, 2000);
  before = spin_script_calls(fx.srv);
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
  tries = spin_script_calls(fx.srv) - before;
  printf("tries over a 2 s busy spin wait (1..128 ms back-off): %lld\n", tries);
  ASSERT_LE(tries, 60);
  ASSERT_GE(tries, 5);
  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

/* The back-off itself (core/spin.h): every sleep lies in [base/2, base],
 * the base doubles from the first back-off to the largest, and sleeps at
 * the cap spread over that range instead of repeating one value. */
TEST(lock_spin_backoff_doubles_with_jitter) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  int64_t base = 4, seen_lo = 1000, seen_hi = 0, sum = 0;
  int distinct = 0, hits[129] = {0};
  start(&fx, 0);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);
  /* A spinning wait makes the object's back-off state; cancel it at once. */
  spin_opts(&o, 60000);
  o.spin_initial_ms = 4;
  o.spin_max_ms = 128;
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  ASSERT_OK(lk_lock_cancel(l));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  /* The next acquire restarts the back-off at its first value. */
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, memset(&s, 0, sizeof s)));
  ASSERT_OK(lk_lock_cancel(l));
  rt_run_until(&fx.loop, &s.done, 5000);
  for (int i = 0; i < 6; i++, base *= 2) {
    int64_t d = lk__spin_next((lk__obj_t *)l);
    ASSERT_GE(d, base / 2);
    ASSERT_LE(d, base);
  }
  for (int i = 0; i < 400; i++) {
    int64_t d = lk__spin_next((lk__obj_t *)l);
    ASSERT_GE(d, 64);
    ASSERT_LE(d, 128);
    if (!hits[d]++)
      distinct++;
    seen_lo = d < seen_lo ? d : seen_lo;
    seen_hi = d > seen_hi ? d : seen_hi;
    sum += d;
  }
  printf("400 sleeps at the 128 ms cap: %d distinct values in [%lld, %lld], mean %.1f ms\n",
         distinct, (long long)seen_lo, (long long)seen_hi, (double)sum / 400.0);
  /* 65 equally likely values: all but a handful show up in 400 draws. */
  ASSERT_GE(distinct, 40);
  ASSERT_LE(seen_lo, 70);
  ASSERT_GE(seen_hi, 122);
  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

/* Cancel, then close, while the waiter sleeps its back-off: each gives its
 * callback exactly once, and nothing tries on its behalf afterwards. */
TEST(lock_spin_cancel_and_close_mid_sleep_call_back_once) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  int closed = 0;
  long long calls;
  start(&fx, 0);
  redisContext *emu = emu_hold(&fx, 30000);
  l = fx_lock(&fx, NAME);
  spin_opts(&o, 30000);
  o.spin_initial_ms = 2000; /* the first sleep: 1 to 2 s */

  calls = spin_script_calls(fx.srv);
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  spin_asleep(&fx, &s, calls);
  ASSERT_OK(lk_lock_cancel(l));
  spin_ended_canceled(&fx, &s, &s.done);

  calls = spin_script_calls(fx.srv);
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  spin_asleep(&fx, &s, calls);
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, fx_lock_closed_cb));
  spin_ended_canceled(&fx, &s, &closed);
  redisFree(emu);
  fx_finish(&fx);
}

TEST(lock_spin_bad_options_are_einval) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  lk_client_opts_t co;
  lk_client_t *c = NULL;
  sx_t s;
  start(&fx, 0);
  l = fx_lock(&fx, NAME);
  const struct {
    int spin;
    int64_t initial, max;
  } bad[] = {{2, 0, 0},   {-2, 0, 0},  {1, -1, 0}, {1, 0, -1}, {1, LK_SPIN_MAX_MS + 1, 0},
             {1, 0, LK_SPIN_MAX_MS + 1}, {0, -5, 0}, {1, 100, 50}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    spin_opts(&o, 1000);
    o.spin = bad[i].spin;
    o.spin_initial_ms = bad[i].initial;
    o.spin_max_ms = bad[i].max;
    ASSERT_EQ(lk_lock_acquire(l, &o, sx_cb, &s), LK_EINVAL);
  }
  /* Nothing was left pending: a good acquire runs. */
  spin_opts(&o, 1000);
  o.spin_initial_ms = LK_SPIN_MAX_MS; /* the default largest follows it up */
  ASSERT_EQ(sx_acquire_in(&fx.loop, l, 0, -1, &s), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  memset(&s, 0, sizeof s);
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);

  /* The client's options. */
  const struct {
    int spin;
    int64_t initial, max;
  } cbad[] = {{2, 0, 0}, {-1, 0, 0}, {1, -1, 0}, {0, 0, LK_SPIN_MAX_MS + 1}, {1, 200, 100}};
  for (size_t i = 0; i < sizeof cbad / sizeof cbad[0]; i++) {
    fx_client_opts(&fx, &co);
    co.spin = cbad[i].spin;
    co.spin_initial_ms = cbad[i].initial;
    co.spin_max_ms = cbad[i].max;
    ASSERT_EQ(lk_client_new(&fx.loop, &co, &c), LK_EINVAL);
  }
  /* A client bound and an acquire's bound that contradict it. */
  fx_client_opts(&fx, &co);
  co.spin_max_ms = 50;
  ASSERT_OK(lk_client_new(&fx.loop, &co, &c));
  lk_lock_t *l2 = NULL;
  ASSERT_OK(lk_lock_new(c, NAME, &l2));
  spin_opts(&o, 1000);
  o.spin_initial_ms = 100;
  ASSERT_EQ(lk_lock_acquire(l2, &o, sx_cb, &s), LK_EINVAL);
  fx_close_lock(&fx, l2);
  fx_close_direct_client(&fx, c);

  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- sharing a name ---- */

/* A Redisson RLock holder (its unlock publishes) and an RSpinLock holder
 * (its unlock does not): a spinning latchkey waiter takes the lock after
 * either within its back-off, message or not. */
TEST(lock_spin_waiter_takes_a_lock_redisson_freed) {
  fx_t fx;
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t s;
  uint64_t t_free;
  start(&fx, 0);
  redisContext *emu = rt_rlock_connect(rt_server_port(fx.srv));
  l = fx_lock(&fx, NAME);
  for (int spin_unlock = 0; spin_unlock <= 1; spin_unlock++) {
    long long calls;
    ASSERT_EQ(rt_rlock_try(emu, NAME, SPIN_EMU_UUID, SPIN_EMU_TID, 30000), RT_RLOCK_ACQUIRED);
    spin_opts(&o, 20000);
    memset(&s, 0, sizeof s);
    calls = spin_script_calls(fx.srv);
    ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
    spin_wait_for_try(&fx, calls);
    fx_spin(&fx, 400); /* its back-off reached the 128 ms cap */
    ASSERT_EQ(s.calls, 0);
    t_free = uv_hrtime();
    if (spin_unlock)
      ASSERT_EQ(spin_rspin_unlock(emu, NAME, SPIN_EMU_UUID, SPIN_EMU_TID), 1);
    else
      ASSERT_EQ(rt_rlock_unlock(emu, NAME, SPIN_EMU_UUID, SPIN_EMU_TID), 1);
    rt_run_until(&fx.loop, &s.done, 10000);
    ASSERT_EQ(s.status, 0);
    printf("%s unlock -> spinning waiter holds after %.1f ms\n",
           spin_unlock ? "RSpinLock" : "RLock", (double)(s.t_ns - t_free) / 1e6);
    ASSERT_LE((double)(s.t_ns - t_free) / 1e6, 128.0 + (double)rt_stall_bound_since_ns(t_free, 400));
    /* The Redisson side sees latchkey's hold. */
    ASSERT_GE(rt_rlock_try(emu, NAME, SPIN_EMU_UUID, SPIN_EMU_TID, 30000), 0);
    ASSERT_EQ(sx_run(&fx, lk_lock_release, l, NULL), 0);
  }
  fx_close_lock(&fx, l);
  redisFree(emu);
  fx_finish(&fx);
}

typedef struct emu_waiter_s {
  int port;
  int64_t timeout_ms;
  atomic_int result; /* 1 acquired, -1 timed out, 0 running */
} emu_waiter_t;

static void *emu_waiter_main(void *arg) {
  emu_waiter_t *w = arg;
  redisContext *ctx = rt_rlock_connect(w->port), *sub = rt_rlock_connect(w->port);
  int rc = rt_rlock_lock_blocking(ctx, sub, NAME, SPIN_EMU_UUID, SPIN_EMU_TID, 30000,
                                  w->timeout_ms);
  if (rc == 0)
    ASSERT_EQ(rt_rlock_unlock(ctx, NAME, SPIN_EMU_UUID, SPIN_EMU_TID), 1);
  redisFree(sub);
  redisFree(ctx);
  atomic_store(&w->result, rc == 0 ? 1 : -1);
  return NULL;
}

/* A spinning latchkey holder's release still publishes: a Redisson RLock
 * waiter (listening, its re-check 30 s away) and a latchkey pub/sub waiter
 * (re-poll 10 min away) both get the lock promptly. */
TEST(lock_spin_holder_release_wakes_listening_waiters) {
  fx_t fx;
  lk_lock_t *holder, *listener;
  lk_client_t *c2;
  lk_lock_opts_t o;
  sx_t s, ls;
  pthread_t th;
  emu_waiter_t ew = {0};
  uint64_t t_rel;
  start(&fx, 1); /* this client spins */
  holder = fx_lock(&fx, NAME);
  ASSERT_EQ(sx_acquire_in(&fx.loop, holder, 0, -1, &s), 0);

  /* Redisson's waiter. */
  ew.port = rt_server_port(fx.srv);
  ew.timeout_ms = rt_scaled_ms(20000);
  ASSERT_EQ(pthread_create(&th, NULL, emu_waiter_main, &ew), 0);
  fx_wait_subscribers(&fx, CHANNEL, 1);
  t_rel = uv_hrtime();
  ASSERT_EQ(sx_run(&fx, lk_lock_release, holder, NULL), 0);
  FX_EVENTUALLY(&fx, atomic_load(&ew.result) != 0, 10000);
  ASSERT_EQ(pthread_join(th, NULL), 0);
  ASSERT_EQ(atomic_load(&ew.result), 1);
  printf("RLock waiter woke and held %.1f ms after the spinning holder's release\n",
         (double)(uv_hrtime() - t_rel) / 1e6);
  ASSERT_LE((double)(uv_hrtime() - t_rel) / 1e6, (double)rt_stall_bound_since_ns(t_rel, 5000));

  /* latchkey's listening waiter on another client (spin 0 there). */
  {
    lk_client_opts_t co;
    fx_client_opts(&fx, &co);
    co.max_repoll_ms = NO_REPOLL_MS;
    ASSERT_OK(lk_client_new(&fx.loop, &co, &c2));
  }
  ASSERT_OK(lk_lock_new(c2, NAME, &listener));
  ASSERT_EQ(sx_acquire_in(&fx.loop, holder, 0, -1, &s), 0);
  lk_lock_opts_init(&o);
  o.wait_ms = 20000;
  o.spin = 0;
  memset(&ls, 0, sizeof ls);
  ASSERT_OK(lk_lock_acquire(listener, &o, sx_cb, &ls));
  fx_wait_subscribers(&fx, CHANNEL, 1);
  fx_spin(&fx, 50); /* its try after the confirmation is answered busy */
  t_rel = uv_hrtime();
  ASSERT_EQ(sx_run(&fx, lk_lock_release, holder, NULL), 0);
  rt_run_until(&fx.loop, &ls.done, 10000);
  ASSERT_EQ(ls.status, 0);
  ASSERT_LE((double)(ls.t_ns - t_rel) / 1e6, (double)rt_stall_bound_since_ns(t_rel, 2000));
  ASSERT_EQ(sx_run(&fx, lk_lock_release, listener, NULL), 0);

  fx_close_lock(&fx, listener);
  fx_close_direct_client(&fx, c2);
  fx_finish_locks(&fx, (lk_lock_t *[]){holder, NULL});
}

/* A spinning and a listening latchkey waiter on one name: both get their
 * turn, never together. */
TEST(lock_spin_and_listening_waiters_share_a_name) {
  fx_t fx;
  lk_client_t *c2;
  lk_lock_t *holder, *spinner, *listener;
  lk_lock_opts_t o;
  sx_t hs, ss, ls;
  start(&fx, 0);
  c2 = fx_direct_client(&fx);
  holder = fx_lock(&fx, NAME);
  ASSERT_OK(lk_lock_new(fx.c, NAME, &spinner));
  ASSERT_OK(lk_lock_new(c2, NAME, &listener));
  ASSERT_EQ(sx_acquire_in(&fx.loop, holder, 0, -1, &hs), 0);
  spin_opts(&o, 20000);
  memset(&ss, 0, sizeof ss);
  ASSERT_OK(lk_lock_acquire(spinner, &o, sx_cb, &ss));
  o.spin = 0;
  memset(&ls, 0, sizeof ls);
  ASSERT_OK(lk_lock_acquire(listener, &o, sx_cb, &ls));
  fx_wait_subscribers(&fx, CHANNEL, 1);
  fx_spin(&fx, 100);
  ASSERT_EQ(ss.calls + ls.calls, 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, holder, NULL), 0);
  /* One of them holds; the other waits until it releases. */
  FX_EVENTUALLY(&fx, ss.done || ls.done, 10000);
  {
    lk_lock_t *first = ss.done ? spinner : listener, *second = ss.done ? listener : spinner;
    sx_t *fs = ss.done ? &ss : &ls, *os = ss.done ? &ls : &ss;
    printf("first after the release: the %s waiter\n", first == spinner ? "spinning" : "listening");
    ASSERT_EQ(fs->status, 0);
    fx_spin(&fx, 200);
    ASSERT_EQ(os->calls, 0); /* held: the other cannot have it */
    ASSERT_EQ(sx_run(&fx, lk_lock_release, first, NULL), 0);
    rt_run_until(&fx.loop, &os->done, 10000);
    ASSERT_EQ(os->status, 0);
    ASSERT_EQ(sx_run(&fx, lk_lock_release, second, NULL), 0);
  }
  fx_close_lock(&fx, listener);
  fx_close_lock(&fx, spinner);
  fx_close_lock(&fx, holder);
  fx_close_direct_client(&fx, c2);
  fx_finish(&fx);
}
