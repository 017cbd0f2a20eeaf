/* Read/write lock outcomes: a reply of a shape the scripts never send to a
 * state-changing verb (acquire, release) is an unknown outcome, settled like
 * a lost reply (src/core/outcome.h): an acquire that cannot resend gives
 * back what its attempt took and reports LK_EUNKNOWN; a release is resent
 * and applied once. */
#include <string.h>

#include "proxy.h"
#include "rw_fixture.h"

static const char fake_reply[] = "+OK\r\n"; /* no read/write script answers so */

static rt_proxy_t *start(fx_t *fx) {
  return fx_start_proxied_timeouts(
      fx, (fx_timeouts_t){.reply_ms = 3000, .reconnect_min_ms = 20, .reconnect_max_ms = 50});
}

/* Explicit leases throughout: no watchdog renewal (also an EVALSHA) can
 * take the proxy's one replaced reply. */
#define LEASE 30000

/* A try-once acquire of either side whose grant comes back in a shape the
 * script never sends: LK_EUNKNOWN (not LK_EPROTOCOL), nothing counted, and
 * the hold the script did take is given back rather than left to its lease. */
TEST(wrong_shape_reply_to_acquire_is_unknown_and_given_back) {
  fx_t fx;
  rt_proxy_t *p = start(&fx);
  lk_rwlock_t *a = fx_rwlock(&fx, "rw-shape");
  int side;
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* connected */
  for (side = RW_R; side <= RW_W; side++) {
    lk_rwlock_side_t sd = (lk_rwlock_side_t)side;
    rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_REPLACE, fake_reply, strlen(fake_reply));
    ASSERT_EQ(rw_acquire(&fx, a, sd, 0, LEASE), LK_EUNKNOWN);
    ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
    ASSERT_EQ(lk_rwlock_hold_count(a, sd), 0);
    ASSERT_EQ(lk_rwlock_is_held(a, sd), 0);
    ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* the give-back is through */
    ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
    /* The object carries on. */
    ASSERT_OK(rw_acquire(&fx, a, sd, 0, LEASE));
    ASSERT_EQ(rw_server_holds(&fx, a, sd), 1);
    ASSERT_OK(rw_release(&fx, a, sd, NULL));
    ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  }
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

/* A release of one of two holds answered in a shape the script never
 * sends: resent (the script recognises its applied first attempt by the
 * count before it), so exactly one hold goes and the counts agree. */
TEST(wrong_shape_reply_to_release_is_resent_and_applied_once) {
  fx_t fx;
  rt_proxy_t *p = start(&fx);
  lk_rwlock_t *a = fx_rwlock(&fx, "rw-shape-rel");
  int side;
  int64_t freed = -1;
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* connected */
  for (side = RW_R; side <= RW_W; side++) {
    lk_rwlock_side_t sd = (lk_rwlock_side_t)side;
    ASSERT_OK(rw_acquire(&fx, a, sd, 0, LEASE));
    ASSERT_OK(rw_acquire(&fx, a, sd, 0, LEASE));
    ASSERT_EQ(rw_server_holds(&fx, a, sd), 2);
    rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_REPLACE, fake_reply, strlen(fake_reply));
    ASSERT_OK(rw_release(&fx, a, sd, &freed));
    ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
    ASSERT_EQ(freed, 0);
    ASSERT_EQ(lk_rwlock_hold_count(a, sd), 1);
    ASSERT_EQ(rw_server_holds(&fx, a, sd), 1); /* applied once */
    ASSERT_OK(rw_release(&fx, a, sd, &freed));
    ASSERT_EQ(freed, 1);
    ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  }
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}
