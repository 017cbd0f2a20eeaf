/* The blocking API against its own races and edges (docs/blocking.md): a
 * handle closed while other threads keep calling on it, and a MultiLock's
 * fixed lease ending is_held without a round trip. */
#include <stdatomic.h>
#include <string.h>

#include "latchkey.h"
#include "redis_server.h"
#include "test.h"
#include "blocking_fixture.h"

/* ---- a handle closed under threads that keep calling on it ------------------- */

#define HC_THREADS 4
#define HC_ROUNDS 2000 /* a bound: the close ends every worker long before */

typedef struct {
  lk_blocking_lock_t *l;
  _Atomic int calls;
  _Atomic int bad; /* a code other than 0, LK_ECANCELED, LK_ECLOSED */
  _Atomic int bad_code;
  _Atomic int ended; /* workers that saw the close (LK_ECANCELED, LK_ECLOSED) */
} hammer_t;

/* 1: go on; 0: the close was seen, stop (no call may start once the close
 * could have returned: the handle's memory goes with it). */
static int hammer_check(hammer_t *hm, int rc) {
  atomic_fetch_add(&hm->calls, 1);
  if (rc == 0)
    return 1;
  if (rc == LK_ECANCELED || rc == LK_ECLOSED) {
    atomic_fetch_add(&hm->ended, 1);
    return 0;
  }
  atomic_fetch_add(&hm->bad, 1);
  atomic_store(&hm->bad_code, rc);
  return 0;
}

static void hammer_worker(void *arg) {
  hammer_t *hm = arg;
  for (int i = 0; i < HC_ROUNDS; i++) {
    if (!hammer_check(hm, lk_blocking_lock_acquire(hm->l, NULL)))
      return;
    if (!hammer_check(hm, lk_blocking_lock_release(hm->l)))
      return;
  }
}

/* Workers race the close between their entry checks and the queueing of
 * their call (each verb's window): before the fix the close could free a
 * slot that a call queued just behind it then started on. A race, so it
 * shows only sometimes, under ASan or TSan: every call must end with 0,
 * LK_ECANCELED or LK_ECLOSED, and the holds are given back. Residual
 * hazard of any such program, not of the library: a worker that got 0 and
 * is then descheduled for the whole close would start its next call on
 * freed memory; the close's own round trips make that window tiny. */
TEST(handle_close_races_callers) {
  bx_t x;
  hammer_t hm;
  uv_thread_t t[HC_THREADS];
  int64_t deadline;
  memset(&hm, 0, sizeof(hm));
  bx_start(&x);
  ASSERT_OK(lk_blocking_lock_new(x.b, "bl_race_close", &hm.l));
  for (int i = 0; i < HC_THREADS; i++)
    ASSERT_OK(uv_thread_create(&t[i], hammer_worker, &hm));
  /* Close while they are busy: after a few calls each. */
  deadline = rt_now_ms() + rt_scaled_ms(5000);
  while (atomic_load(&hm.calls) < HC_THREADS * 10 && rt_now_ms() < deadline)
    rt_sleep_ms(1);
  ASSERT_GE(atomic_load(&hm.calls), HC_THREADS * 10);
  ASSERT_OK(lk_blocking_lock_close(hm.l));
  for (int i = 0; i < HC_THREADS; i++)
    uv_thread_join(&t[i]);
  ASSERT_EQ(atomic_load(&hm.bad_code), 0);
  ASSERT_EQ(atomic_load(&hm.bad), 0);
  ASSERT_EQ(atomic_load(&hm.ended), HC_THREADS);
  ASSERT_EQ(rt_cmd_int(x.srv, "EXISTS bl_race_close"), 0); /* given back */
  bx_finish(&x);
}

/* ---- a MultiLock's fixed lease ends is_held ------------------------------------ */

TEST(multilock_fixed_lease_ends_is_held) {
  bx_t x;
  lk_blocking_multilock_t *g;
  const char *names[] = {"bl_mlf_a", "bl_mlf_b"};
  lk_multilock_opts_t o;
  int64_t t0, t1;
  bx_start(&x);
  ASSERT_OK(lk_blocking_multilock_new(x.b, names, 2, &g));
  lk_multilock_opts_init(&o);
  o.lease_ms = 300; /* fixed: not renewed, no loss callback */
  t0 = rt_now_ms();
  ASSERT_OK(lk_blocking_multilock_acquire(g, &o));
  t1 = rt_now_ms();
  /* Held while the lease runs (unless this thread was starved past it). */
  if (rt_now_ms() - t0 < 250)
    ASSERT_EQ(lk_blocking_multilock_is_held(g), 1);
  /* The lease ends at most 300 ms after the acquire returned (its time is
   * taken before the request leaves): from then on is_held says 0, with no
   * call in between. A wait for a time, not for a condition. */
  while (rt_now_ms() < t1 + 320)
    rt_sleep_ms(5);
  ASSERT_EQ(lk_blocking_multilock_is_held(g), 0);
  ASSERT_OK(lk_blocking_multilock_close(g));
  bx_finish(&x);
}
