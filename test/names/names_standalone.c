/* Odd names against every primitive on a standalone server (issue 25): the
 * same verdicts as on a cluster (test/cluster/cluster_names.c), so a
 * program that runs here runs on a cluster too. The table and its
 * drivers: test/names/name_shapes.h. */
#include "name_shapes.h"

static void run_standalone(const ns_kind_t *k) {
  fx_t fx;
  lk_client_opts_t o;
  fx_start_server(&fx, NULL);
  fx_client_opts(&fx, &o);
  ns_client_opts(&o);
  fx_start_client(&fx, &o);
  ns_run(&fx, k);
  fx_finish(&fx);
}

#define NS_STANDALONE(k, fam)                                                   \
  static const ns_kind_t kind_##k = NS_KIND(k, fam);                            \
  static void case_##k(void) { run_standalone(&kind_##k); }

NS_STANDALONE(lock, NS_KEY)
NS_STANDALONE(fair, NS_KEY)
NS_STANDALONE(rwlock, NS_KEY)
NS_STANDALONE(semaphore, NS_KEY)
NS_STANDALONE(psem, NS_KEY)
NS_STANDALONE(ratelimiter, NS_KEY)
NS_STANDALONE(redlock, NS_KEY)
NS_STANDALONE(leader, NS_PRE)
NS_STANDALONE(barrier, NS_PRE)
NS_STANDALONE(latch, NS_LATCH)

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
