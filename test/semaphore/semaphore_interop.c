/* Interop with Redisson's RSemaphore and RPermitExpirableSemaphore, played
 * by the test-only emulator (test/harness/redisson_emu.h: our reading of
 * Redisson's semaphores on the wire, not Redisson itself). Both sides share one
 * semaphore by name: each sees the other's permits, wakes on the other's
 * release, and neither creates or loses a permit. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_waiter.h"
#include "redisson_emu.h"
#include "sem_fixture.h"

/* How the cases open: the fixture without re-polling (wake-ups come from
 * messages only), and the emulator's own connection to its server. */
static redisContext *start_with_emulator(fx_t *fx) {
  fx_start_no_repoll(fx);
  return rt_rlock_connect(rt_server_port(fx->srv));
}

TEST(redisson_semaphore_shared_permits) {
  fx_t fx;
  lk_semaphore_t *s;
  redisContext *emu = start_with_emulator(&fx);
  int64_t r;
  s = fx_sem(&fx, "shared");
  /* The emulator sets it up; latchkey sees the same count. */
  ASSERT_EQ(rt_rsem_try_set_permits(emu, "shared", 3), 1);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 9, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sem_acquire(&fx, s, 2, 0));
  ASSERT_EQ(rt_rsem_available(emu, "shared"), 1);
  ASSERT_EQ(rt_rsem_try_acquire(emu, "shared", 2), 0);
  ASSERT_EQ(rt_rsem_try_acquire(emu, "shared", 1), 1);
  ASSERT_EQ(sem_acquire(&fx, s, 1, 0), LK_ETIMEDOUT);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, &r));
  ASSERT_EQ(r, 2);
  ASSERT_EQ(rt_rsem_try_acquire(emu, "shared", 2), 1);
  ASSERT_EQ(rt_rsem_release(emu, "shared", 3), 3);
  ASSERT_OK(sem_run(&fx, lk_semaphore_available, s, &r));
  ASSERT_EQ(r, 3);
  /* latchkey's private mark lives beside Redisson's key, under its hash
   * tag, and goes when the object closes. */
  ASSERT_EQ(srv_keys_matching(fx.srv, "latchkey_semaphore_req:{shared}:"), 1);
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_keys_matching(fx.srv, "latchkey_semaphore_req"), 0);
  ASSERT_EQ(rt_rsem_available(emu, "shared"), 3);
  redisFree(emu);
  fx_finish(&fx);
}

TEST(redisson_semaphore_release_wakes_latchkey) {
  fx_t fx;
  lk_semaphore_t *s;
  redisContext *emu = start_with_emulator(&fx);
  sx_t w;
  uint64_t t_rel;
  s = fx_sem(&fx, "e2l");
  ASSERT_EQ(rt_rsem_try_set_permits(emu, "e2l", 1), 1);
  ASSERT_EQ(rt_rsem_try_acquire(emu, "e2l", 1), 1);
  sem_start_acquire(s, 1, 30000, &w);
  fx_wait_subscribers(&fx, "redisson_sc:{e2l}", 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(w.done, 0);
  t_rel = uv_hrtime();
  ASSERT_EQ(rt_rsem_release(emu, "e2l", 1), 1);
  rt_run_until(&fx.loop, &w.done, 5000);
  ASSERT_OK(w.status);
  ASSERT_LT((int64_t)((w.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 500));
  ASSERT_EQ(rt_rsem_available(emu, "e2l"), 0);
  fx_close_sem(&fx, s);
  ASSERT_EQ(rt_rsem_available(emu, "e2l"), 1);
  redisFree(emu);
  fx_finish(&fx);
}

/* The emulator's acquire() of one permit blocks in a thread until
 * latchkey releases (rt_emu_wait_fn). */
static int emu_acquire_wait(redisContext *ctx, redisContext *sub, const char *name,
                            int64_t timeout_ms) {
  return rt_rsem_acquire_blocking(ctx, sub, name, 1, timeout_ms);
}

TEST(redisson_semaphore_latchkey_release_wakes_emulator) {
  fx_t fx;
  lk_semaphore_t *s;
  rt_emu_waiter_t w;
  pthread_t th;
  uint64_t t_rel;
  fx_start_no_repoll(&fx);
  s = fx_sem(&fx, "l2e");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 1, NULL));
  ASSERT_OK(sem_acquire(&fx, s, 1, 0));
  rt_emu_waiter_start(&w, &th, emu_acquire_wait, rt_server_port(fx.srv), "l2e");
  fx_wait_subscribers(&fx, "redisson_sc:{l2e}", 1);
  fx_spin(&fx, 100);
  ASSERT_EQ(atomic_load(&w.done), 0);
  t_rel = uv_hrtime();
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 1, NULL));
  ASSERT(rt_emu_waiter_returned_within(&w, 5000));
  ASSERT_OK(pthread_join(th, NULL));
  ASSERT_EQ(w.result, 0);
  printf("the emulator had the permit %.3f ms after latchkey's release was invoked\n",
         (double)(w.t_ns - t_rel) / 1e6);
  /* Only latchkey's message (the new count) explains a prompt wake-up. */
  ASSERT_LT((int64_t)((w.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 1000));
  ASSERT_EQ(srv_count(fx.srv, "l2e"), 0);
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, NULL});
}

/* Expirable: the emulator's permits and latchkey's share one pool; each
 * side can release the other's permit by id; an emulator permit whose
 * lease ended is reclaimed by latchkey's scripts. */
TEST(redisson_permit_semaphore_shared_pool) {
  fx_t fx;
  lk_psem_t *p;
  redisContext *emu = start_with_emulator(&fx);
  char eid[33], lid[33];
  int64_t r;
  p = fx_psem(&fx, "pool");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, p, 3, NULL));
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 60000, eid), 1);
  ASSERT_OK(psem_acquire(&fx, p, 1, 0, 60000));
  snprintf(lid, sizeof lid, "%s", lk_psem_permit_id(p, 0));
  ASSERT_OK(psem_run(&fx, lk_psem_acquired, p, &r));
  ASSERT_EQ(r, 2);
  ASSERT_OK(psem_run(&fx, lk_psem_available, p, &r));
  ASSERT_EQ(r, 1);
  /* Each releases the other's permit by id. */
  ASSERT_EQ(rt_rpsem_release(emu, "pool", lid), 1);
  ASSERT_EQ(rt_rpsem_release(emu, "pool", lid), -1); /* never twice */
  ASSERT_OK(psem_run_id(&fx, lk_psem_release_id, p, eid, &r));
  ASSERT_EQ(rt_rpsem_available(emu, "pool"), 3);
  /* latchkey's object learns its permit is gone when it releases it. */
  ASSERT_EQ(psem_run_id(&fx, lk_psem_release, p, lid, &r), LK_ELEASELOST);
  ASSERT_EQ(rt_rpsem_available(emu, "pool"), 3);
  /* An emulator permit with a short lease comes back through latchkey. */
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 300, eid), 1);
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 300, eid), 1);
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 300, eid), 1);
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 300, eid), 0);
  ASSERT_OK(psem_acquire(&fx, p, 3, 5000, 60000));
  ASSERT_EQ(rt_rpsem_available(emu, "pool"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {pool}:timeout"), 3);
  /* And latchkey's, once released, are the emulator's to take. */
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, p, NULL, &r));
  ASSERT_EQ(r, 3);
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "pool", 60000, eid), 1);
  ASSERT_EQ(rt_rpsem_release(emu, "pool", eid), 1);
  fx_close_psem(&fx, p);
  ASSERT_EQ(rt_rpsem_available(emu, "pool"), 3);
  redisFree(emu);
  fx_finish(&fx);
}

/* A Redisson permit without lease never expires: latchkey counts it,
 * waits without spinning (busy reply -1), and wakes on its release. */
TEST(redisson_permit_without_lease) {
  fx_t fx;
  lk_psem_t *p;
  redisContext *emu = start_with_emulator(&fx);
  char eid[33];
  sx_t w;
  lk_client_stats_t before, after;
  uint64_t t_rel;
  int64_t r;
  p = fx_psem(&fx, "nolease");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, p, 1, NULL));
  ASSERT_EQ(rt_rpsem_try_acquire(emu, "nolease", 0, eid), 1);
  {
    redisReply *z = rt_cmd(fx.srv, "ZRANGE {nolease}:timeout 0 -1 WITHSCORES");
    ASSERT_NOT_NULL(z);
    ASSERT_EQ(z->elements, 2);
    ASSERT_EQ(strtoll(z->element[1]->str, NULL, 10), RT_RPSEM_NEVER);
    freeReplyObject(z);
  }
  ASSERT_OK(psem_run(&fx, lk_psem_acquired, p, &r));
  ASSERT_EQ(r, 1);
  psem_start_acquire(p, 1, 30000, 5000, &w);
  fx_wait_subscribers(&fx, "redisson_sc:{nolease}", 1);
  lk_client_get_stats(fx.c, &before);
  fx_spin(&fx, 300);
  lk_client_get_stats(fx.c, &after);
  ASSERT_EQ(w.done, 0);
  ASSERT_LE(after.commands_sent - before.commands_sent, 1); /* a heartbeat at most */
  t_rel = uv_hrtime();
  ASSERT_EQ(rt_rpsem_release(emu, "nolease", eid), 1);
  rt_run_until(&fx.loop, &w.done, 5000);
  ASSERT_OK(w.status);
  ASSERT_LT((int64_t)((w.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 500));
  fx_close_psem(&fx, p);
  ASSERT_EQ(rt_rpsem_available(emu, "nolease"), 1);
  redisFree(emu);
  fx_finish(&fx);
}
