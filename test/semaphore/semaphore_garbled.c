/* Semaphores against a reply of a shape the script never sends, to a command
 * the server did apply (issue 15). Whatever the client makes of such a reply
 * (an unknown outcome settled like a lost one, or a dropped connection once
 * replies are tagged), the contract holds: permits are conserved once every
 * object is closed, a 1-permit semaphore never has two holders, and an
 * expirable permit taken by a garbled acquire comes back promptly rather
 * than at the end of its lease. */
#include <stdio.h>
#include <string.h>

#include "core/scripts.h"
#include "proxy.h"
#include "sem_fixture.h"

/* "+OK" is a shape none of the semaphore scripts ever answers. */
static const char fake[] = "+OK\r\n";

static rt_proxy_t *start(fx_t *fx) {
  return fx_start_proxied_timeouts(
      fx, (fx_timeouts_t){.reply_ms = 1000, .reconnect_min_ms = 20, .reconnect_max_ms = 50});
}

/* Arms the proxy to replace the reply to the next run of the script. */
static void garble_next(rt_proxy_t *p, const char *script) {
  char match[80];
  snprintf(match, sizeof match, "EVALSHA %s", lk__script_find(script)->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_REPLACE, fake, strlen(fake));
}

static void finish(fx_t *fx, rt_proxy_t *p) {
  fx_finish(fx);
  rt_proxy_stop(p);
}

/* (1) A release applied on the server whose reply is garbled: the object
 * must not go on counting the permit, or a second holder gets it while the
 * first still believes it holds it, and close gives it back twice. */
TEST(garbled_release_reply_creates_no_permit) {
  fx_t fx;
  rt_proxy_t *p = start(&fx);
  lk_semaphore_t *a = fx_sem(&fx, "gr"), *b = fx_sem(&fx, "gr");
  sx_t r, x;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, a, 1, NULL));
  ASSERT_OK(sem_acquire(&fx, a, 1, 0));
  ASSERT_EQ(srv_count(fx.srv, "gr"), 0);
  garble_next(p, "semaphore/release");
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_semaphore_release(a, 1, sem_cb, &r));
  rt_run_until(&fx.loop, &r.done, 10000);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  /* Another holder may now take the single permit: the first must not
   * still count it. */
  if (sem_acquire_in(&fx.loop, b, 1, 3000, &x) == 0)
    ASSERT_EQ(lk_semaphore_held(a), 0);
  ASSERT_LE(lk_semaphore_held(a) + lk_semaphore_held(b), 1);
  fx_close_sem(&fx, a);
  fx_close_sem(&fx, b);
  ASSERT_EQ(srv_count(fx.srv, "gr"), 1);
  finish(&fx, p);
}

/* (2) An acquire applied on the server whose reply is garbled: the permit
 * is either the object's (and given back by close) or given back at once,
 * never lost. wait_ms 0 has no budget for a resend; 3000 has. */
static void garbled_acquire(int64_t wait_ms) {
  fx_t fx;
  rt_proxy_t *p = start(&fx);
  lk_semaphore_t *a = fx_sem(&fx, "ga"), *b = fx_sem(&fx, "ga");
  sx_t x, y;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, a, 1, NULL));
  garble_next(p, "semaphore/acquire");
  sem_acquire_in(&fx.loop, a, 1, wait_ms, &x);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_NE(x.status, LK_EPROTOCOL);
  ASSERT_EQ(lk_semaphore_held(a), x.status == 0 ? 1 : 0);
  if (x.status != 0) {
    /* Given back by the object's settle, promptly. */
    ASSERT(fx_wait_count(&fx, "ga", 1, 3000));
  }
  /* Never two holders. */
  if (sem_acquire_in(&fx.loop, b, 1, 0, &y) == 0)
    ASSERT_EQ(lk_semaphore_held(a), 0);
  fx_close_sem(&fx, a);
  fx_close_sem(&fx, b);
  ASSERT_EQ(srv_count(fx.srv, "ga"), 1);
  finish(&fx, p);
}

TEST(garbled_acquire_reply_loses_no_permit) { garbled_acquire(0); }

TEST(garbled_acquire_reply_in_a_wait_loses_no_permit) { garbled_acquire(3000); }

/* (3) An expirable acquire applied on the server whose reply is garbled:
 * its permit must not stay taken for the whole (long) lease. */
static void garbled_psem_acquire(int64_t wait_ms) {
  fx_t fx;
  rt_proxy_t *p = start(&fx);
  lk_psem_t *a = fx_psem(&fx, "gp"), *b = fx_psem(&fx, "gp");
  sx_t x, y;
  int64_t lease = rt_scaled_ms(30000);
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 1, NULL));
  garble_next(p, "semaphore/psem_acquire");
  psem_acquire_in(&fx.loop, a, 1, wait_ms, lease, &x);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_NE(x.status, LK_EPROTOCOL);
  ASSERT_EQ(lk_psem_permit_count(a), x.status == 0 ? 1u : 0u);
  if (x.status != 0) {
    /* Back within a few round trips, not after the 30 s lease. */
    ASSERT(fx_wait_count(&fx, "gp", 1, 3000));
    ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {gp}:timeout"), 0);
  }
  if (psem_acquire_in(&fx.loop, b, 1, 0, lease, &y) == 0)
    ASSERT_EQ(lk_psem_permit_count(a), 0u);
  fx_close_psem(&fx, a);
  fx_close_psem(&fx, b);
  ASSERT_EQ(srv_count(fx.srv, "gp"), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {gp}:timeout"), 0);
  finish(&fx, p);
}

TEST(garbled_psem_acquire_reply_gives_the_permit_back) { garbled_psem_acquire(0); }

TEST(garbled_psem_acquire_reply_in_a_wait_gives_the_permit_back) {
  garbled_psem_acquire(3000);
}
