/* Spin mode on the semaphores and the read/write lock (docs/semaphore.md
 * and docs/rwlock.md, "Spin mode"): no subscription, bounded waits, a
 * freed resource taken within the back-off, one callback on cancel and
 * close mid-sleep, bad options refused. The lock's cases: spin_lock.c. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rw_fixture.h"
#include "sem_fixture.h"
#include "spin_common.h"

#define SEM "spin-sem"
#define SEM_CHANNEL "redisson_sc:{" SEM "}"
#define PSEM "spin-psem"
#define PSEM_CHANNEL "redisson_sc:{" PSEM "}"
#define RW "spin-rw"
#define RW_CHANNEL "redisson_rwlock:{" RW "}"


static void sem_spin_start(lk_semaphore_t *s, int64_t wait_ms, int spin, int64_t initial_ms,
                           sx_t *x) {
  lk_semaphore_opts_t o;
  memset(x, 0, sizeof *x);
  lk_semaphore_opts_init(&o);
  o.wait_ms = wait_ms;
  o.spin = spin;
  o.spin_initial_ms = initial_ms;
  ASSERT_OK(lk_semaphore_acquire(s, &o, sem_cb, x));
}

/* No permits: a spinning wait ends LK_ETIMEDOUT within its budget without
 * a subscription; the listening control subscribes. Then a permit released
 * by another object while the spinner sleeps is taken within the back-off
 * cap, message or not. */
/* x's spinning acquire, started at t0 with a wait of wait_ms, ends with
 * LK_ETIMEDOUT no earlier than that wait and without ever subscribing to
 * channel (checked while it runs) or to anything. */
static void spin_times_out(fx_t *fx, sx_t *x, uint64_t t0, const char *channel, int64_t wait_ms) {
  for (int i = 0; !x->done && i < 500; i++) {
    ASSERT_EQ(rt_server_numsub(fx->srv, channel), 0);
    fx_spin(fx, 20);
  }
  rt_run_until(&fx->loop, &x->done, 5000);
  double took = (double)(x->t_ns - t0) / 1e6;
  ASSERT_EQ(x->status, LK_ETIMEDOUT);
  ASSERT_GE(took, (double)wait_ms);
  ASSERT_LE(took, (double)wait_ms + (double)rt_stall_bound_since_ns(t0, 500));
  ASSERT_EQ(spin_subscribes(fx->srv), 0);
}

TEST(semaphore_spin_waits_without_subscribing) {
  fx_t fx;
  lk_semaphore_t *s, *other;
  sx_t x;
  uint64_t t0;
  double took;
  long long calls;
  fx_start_no_repoll(&fx);
  s = fx_sem(&fx, SEM);
  other = fx_sem(&fx, SEM);
  rt_server_reset_stats(fx.srv);

  t0 = uv_hrtime();
  sem_spin_start(s, 600, 1, 0, &x);
  spin_times_out(&fx, &x, t0, SEM_CHANNEL, 600);

  sem_spin_start(s, 300, 0, 0, &x);
  rt_run_until(&fx.loop, &x.done, 5000);
  ASSERT_EQ(x.status, LK_ETIMEDOUT);
  ASSERT_GE(spin_subscribes(fx.srv), 1);

  /* Two permits, both taken by `other`; the spinner wants one. */
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_try_set_permits, other, 2, NULL), 0);
  ASSERT_EQ(sem_acquire(&fx, other, 2, 0), 0);
  calls = spin_script_calls(fx.srv);
  sem_spin_start(s, 20000, 1, 0, &x);
  spin_wait_for_try(&fx, calls);
  fx_spin(&fx, 400); /* its back-off reached the cap */
  ASSERT_EQ(x.calls, 0);
  t0 = uv_hrtime();
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_release, other, 1, NULL), 0);
  rt_run_until(&fx.loop, &x.done, 10000);
  ASSERT_EQ(x.status, 0);
  took = (double)(x.t_ns - t0) / 1e6;
  printf("semaphore: a released permit taken by the spinner after %.1f ms\n", took);
  ASSERT_LE(took, 128.0 + (double)rt_stall_bound_since_ns(t0, 400));
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_release, s, 1, NULL), 0);
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_release, other, 1, NULL), 0);

  fx_finish_sems(&fx, (lk_semaphore_t *[]){other, s, NULL});
}

TEST(semaphore_spin_cancel_and_close_mid_sleep_call_back_once) {
  fx_t fx;
  lk_semaphore_t *s;
  sx_t x;
  int closed = 0;
  long long calls;
  fx_start_no_repoll(&fx);
  s = fx_sem(&fx, SEM);
  calls = spin_script_calls(fx.srv);
  sem_spin_start(s, 30000, 1, 2000, &x);
  spin_asleep(&fx, &x, calls);
  ASSERT_OK(lk_semaphore_cancel(s));
  spin_ended_canceled(&fx, &x, &x.done);

  calls = spin_script_calls(fx.srv);
  sem_spin_start(s, 30000, 1, 2000, &x);
  spin_asleep(&fx, &x, calls);
  lk_semaphore_set_data(s, &closed);
  ASSERT_OK(lk_semaphore_close(s, fx_sem_closed_cb));
  spin_ended_canceled(&fx, &x, &closed);
  fx_finish(&fx);
}

TEST(semaphore_spin_bad_options_are_einval) {
  fx_t fx;
  lk_semaphore_t *s;
  lk_psem_t *p;
  lk_semaphore_opts_t so;
  lk_psem_opts_t po;
  sx_t x;
  fx_start_no_repoll(&fx);
  s = fx_sem(&fx, SEM);
  p = fx_psem(&fx, PSEM);
  const struct {
    int spin;
    int64_t initial, max;
  } bad[] = {{2, 0, 0}, {-2, 0, 0}, {1, -1, 0}, {1, 0, LK_SPIN_MAX_MS + 1}, {1, 100, 50}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lk_semaphore_opts_init(&so);
    so.wait_ms = 1000;
    so.spin = bad[i].spin;
    so.spin_initial_ms = bad[i].initial;
    so.spin_max_ms = bad[i].max;
    ASSERT_EQ(lk_semaphore_acquire(s, &so, sem_cb, &x), LK_EINVAL);
    lk_psem_opts_init(&po);
    po.wait_ms = 1000;
    po.spin = bad[i].spin;
    po.spin_initial_ms = bad[i].initial;
    po.spin_max_ms = bad[i].max;
    ASSERT_EQ(lk_psem_acquire(p, &po, psem_cb, &x), LK_EINVAL);
  }
  ASSERT_EQ(so.spin, 1); /* the last bad one: bounds, not the switch */
  /* Nothing was left pending. */
  so.spin_initial_ms = 0;
  so.spin_max_ms = 0;
  so.wait_ms = 0;
  memset(&x, 0, sizeof x);
  ASSERT_OK(lk_semaphore_acquire(s, &so, sem_cb, &x));
  rt_run_until(&fx.loop, &x.done, 5000);
  ASSERT_EQ(x.status, LK_ETIMEDOUT); /* no permits: one try */
  fx_close_psem(&fx, p);
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, NULL});
}

/* The expirable semaphore: a spinning wait makes no subscription and ends
 * within its budget; a permit whose lease ends while it spins is taken
 * (its busy answer bounds the sleep by the nearest lease's end). */
TEST(psem_spin_waits_without_subscribing) {
  fx_t fx;
  lk_psem_t *p, *other;
  lk_psem_opts_t o;
  sx_t x;
  uint64_t t0;
  fx_start_no_repoll(&fx);
  p = fx_psem(&fx, PSEM);
  other = fx_psem(&fx, PSEM);
  ASSERT_EQ(psem_run_n(&fx, lk_psem_try_set_permits, other, 1, NULL), 0);
  lk_psem_opts_init(&o);
  o.lease_ms = 30000;
  memset(&x, 0, sizeof x);
  ASSERT_OK(lk_psem_acquire(other, &o, psem_cb, &x));
  rt_run_until(&fx.loop, &x.done, 5000);
  ASSERT_EQ(x.status, 0);
  rt_server_reset_stats(fx.srv);

  lk_psem_opts_init(&o);
  o.wait_ms = 500;
  o.spin = 1;
  memset(&x, 0, sizeof x);
  t0 = uv_hrtime();
  ASSERT_OK(lk_psem_acquire(p, &o, psem_cb, &x));
  spin_times_out(&fx, &x, t0, PSEM_CHANNEL, 500);
  fx_close_psem(&fx, other); /* gives its permit back */

  memset(&x, 0, sizeof x);
  o.wait_ms = 10000;
  ASSERT_OK(lk_psem_acquire(p, &o, psem_cb, &x));
  rt_run_until(&fx.loop, &x.done, 10000);
  ASSERT_EQ(x.status, 0);
  ASSERT_EQ(spin_subscribes(fx.srv), 0);
  fx_finish_psems(&fx, (lk_psem_t *[]){p, NULL});
}

/* A spinning writer behind a reader: no subscription, and the read
 * release (which publishes) is seen at the writer's next try. */
TEST(rwlock_spin_writer_waits_for_a_reader_without_subscribing) {
  fx_t fx;
  lk_rwlock_t *reader, *writer;
  lk_rwlock_opts_t o;
  sx_t x;
  uint64_t t0;
  long long calls;
  double took;
  fx_start_no_repoll(&fx);
  reader = fx_rwlock(&fx, RW);
  writer = fx_rwlock(&fx, RW);
  ASSERT_EQ(rw_acquire(&fx, reader, LK_RW_READ, 0, -1), 0);
  rt_server_reset_stats(fx.srv);
  lk_rwlock_opts_init(&o);
  o.wait_ms = 20000;
  o.spin = 1;
  memset(&x, 0, sizeof x);
  calls = spin_script_calls(fx.srv);
  ASSERT_OK(lk_rwlock_acquire(writer, LK_RW_WRITE, &o, rw_cb, &x));
  spin_wait_for_try(&fx, calls);
  for (int i = 0; i < 20; i++) {
    ASSERT_EQ(rt_server_numsub(fx.srv, RW_CHANNEL), 0);
    fx_spin(&fx, 20);
  }
  ASSERT_EQ(x.calls, 0);
  t0 = uv_hrtime();
  ASSERT_EQ(rw_release(&fx, reader, LK_RW_READ, NULL), 0);
  rt_run_until(&fx.loop, &x.done, 10000);
  ASSERT_EQ(x.status, 0);
  took = (double)(x.t_ns - t0) / 1e6;
  printf("rwlock: the spinning writer held %.1f ms after the read release\n", took);
  ASSERT_LE(took, 128.0 + (double)rt_stall_bound_since_ns(t0, 400));
  ASSERT_EQ(spin_subscribes(fx.srv), 0);
  /* And a spinning reader behind that writer: bounded, no subscription. */
  memset(&x, 0, sizeof x);
  o.wait_ms = 300;
  ASSERT_OK(lk_rwlock_acquire(reader, LK_RW_READ, &o, rw_cb, &x));
  rt_run_until(&fx.loop, &x.done, 5000);
  ASSERT_EQ(x.status, LK_ETIMEDOUT);
  ASSERT_EQ(spin_subscribes(fx.srv), 0);
  o.spin = 7;
  ASSERT_EQ(lk_rwlock_acquire(reader, LK_RW_READ, &o, rw_cb, &x), LK_EINVAL);
  ASSERT_EQ(rw_release(&fx, writer, LK_RW_WRITE, NULL), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){writer, reader, NULL});
}
