/* Odd names against every primitive on a 3-master cluster (issue 25): a
 * name _new accepts keeps all of its object's keys and channels in one
 * slot, so every script runs and every wake-up reaches its waiters; any
 * other name is refused at _new with LK_EINVAL. The table and its drivers:
 * test/names/name_shapes.h (the same verdicts as standalone). */
#include "cluster_fixture.h"
#include "../names/name_shapes.h"

/* The case: a lock named "q{z" was granted on a cluster, then every
 * release failed with CROSSSLOT (its key and channel in different slots),
 * the watchdog kept the lease alive and a second owner timed out. Now the
 * name is refused at once, with the reason; were it accepted, it would have
 * to release and let the second owner in. */
TEST(lock_named_with_a_stray_brace_is_refused_or_works) {
  cfx_t f;
  lk_client_opts_t o;
  lk_lock_t *a = NULL;
  lk_client_opts_init(&o);
  cfx_start(&f, 0, &o);
  int rc = lk_lock_new(f.fx.c, "q{z", &a);
  if (rc == 0) {
    lk_lock_t *b = fx_lock(&f.fx, "q{z");
    ASSERT_OK(sx_acquire(&f.fx, a, 0, -1));
    int released = sx_run(&f.fx, lk_lock_release, a, NULL);
    if (released != 0)
      FAIL("release: %s \"%s\"", lk_err_name(released), lk_lock_error_text(a));
    ASSERT_OK(sx_acquire(&f.fx, b, 0, 30000));
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, b, NULL));
    fx_close_lock(&f.fx, b);
    fx_close_lock(&f.fx, a);
  } else {
    ASSERT_EQ(rc, LK_EINVAL);
    ASSERT_NOT_NULL(strstr(lk_client_error_text(f.fx.c), "\"q{z\" refused"));
  }
  cfx_finish(&f);
}

static void run_cluster(const ns_kind_t *k) {
  cfx_t f;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  ns_client_opts(&o);
  cfx_start(&f, 0, &o);
  ns_run(&f.fx, k);
  cfx_finish(&f);
}

#define NS_CLUSTER(k, fam)                                                      \
  static const ns_kind_t kind_##k = NS_KIND(k, fam);                            \
  static void case_##k(void) { run_cluster(&kind_##k); }

NS_CLUSTER(lock, NS_KEY)
NS_CLUSTER(fair, NS_KEY)
NS_CLUSTER(rwlock, NS_KEY)
NS_CLUSTER(semaphore, NS_KEY)
NS_CLUSTER(psem, NS_KEY)
NS_CLUSTER(ratelimiter, NS_KEY)
NS_CLUSTER(redlock, NS_KEY)
NS_CLUSTER(leader, NS_PRE)
NS_CLUSTER(barrier, NS_PRE)
NS_CLUSTER(latch, NS_LATCH)

TEST(lock_names) { case_lock(); }
TEST(fair_names) { case_fair(); }
TEST(rwlock_names) { case_rwlock(); }
TEST(semaphore_names) { case_semaphore(); }
TEST(psem_names) { case_psem(); }
TEST(ratelimiter_names) { case_ratelimiter(); }
TEST(redlock_names) { case_redlock(); }
TEST(leader_names) { case_leader(); }
TEST(barrier_names) { case_barrier(); }
TEST(latch_names) { case_latch(); }
