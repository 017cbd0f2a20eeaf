/* What MultiLock and RedLock do to their lock objects, on a plain lock: an
 * acquire abandoned in flight (canceled, or timed out by the group) and a
 * new acquire on the same object right after. The abandoned one's late
 * grant must be given back without taking the new one's hold with it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "proxy.h"

static long long server_holds(fx_t *fx, lk_lock_t *l) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", lk_lock_name(l), lk_lock_owner(l));
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

TEST(cancel_in_flight_then_reacquire_keeps_the_new_hold) {
  fx_t fx;
  rt_proxy_t *px;
  lk_client_opts_t o;
  lk_lock_t *l;
  sx_t a, b;
  lk_lock_opts_t lo;
  lk_client_opts_init(&o);
  px = fx_start_proxied(&fx, &o);
  l = fx_lock(&fx, "reuse");
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000)); /* connected */
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));

  rt_proxy_delay(px, 100);
  lk_lock_opts_init(&lo);
  lo.lease_ms = 10000;
  memset(&a, 0, sizeof(a));
  ASSERT_OK(lk_lock_acquire(l, &lo, sx_cb, &a));
  ASSERT_OK(lk_lock_cancel(l));
  rt_run_until(&fx.loop, &a.done, 2000);
  ASSERT_EQ(a.status, LK_ECANCELED);
  /* At once: the canceled acquire is still on its way to the server. */
  ASSERT_EQ(sx_acquire_in(&fx.loop, l, 0, 10000, &b), 0);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  /* Let the canceled one's give-back run its course, then the server must
   * still show exactly the one hold the object counts. */
  fx_spin(&fx, 600);
  ASSERT_EQ(server_holds(&fx, l), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  ASSERT_EQ(server_holds(&fx, l), 0);
  rt_proxy_delay(px, 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
  rt_proxy_stop(px);
}
