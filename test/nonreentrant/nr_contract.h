/* What the non-reentrant lock and the non-reentrant fair lock must both do,
 * run over a small table of each kind's typed calls (issue 29: the cases
 * were copied per kind). Each kind's test file keeps its own TEST, so
 * ctest names the kind, and passes its nr_kind_t. Header-only. */
#ifndef LK_TEST_NONREENTRANT_NR_CONTRACT_H
#define LK_TEST_NONREENTRANT_NR_CONTRACT_H

#include <stdio.h>

#include "core/scripts.h"
#include "nr_fixture.h"
#include "proxy.h"

/* One kind's calls; obj is that kind's object (lk_lock_t *, lk_fair_t *).
 * Both kinds' outcomes are sx_t (fsx_t is the same type). */
typedef struct nr_kind_s {
  const char *acquire_script; /* its name in src/core/scripts */
  void *(*open)(fx_t *fx, const char *name);
  /* A non-reentrant acquire, started: what the call returned. */
  int (*start)(void *obj, int64_t wait_ms, int64_t lease_ms, sx_t *s);
  int (*is_locked)(fx_t *fx, void *obj);
  int (*release)(fx_t *fx, void *obj);
  uint32_t (*hold_count)(void *obj);
  const char *(*owner)(void *obj);
  void (*close)(fx_t *fx, void *obj);
} nr_kind_t;

/* The reply of a non-reentrant acquire that took the lock is lost: the
 * resend finds this owner's hold, which is its own first attempt's, not a
 * second holder's. It is reported as the grant and counted once; refusing
 * it would leave the lock held with nobody counting it. */
static inline void nr_lost_reply_resend_is_the_grant(const nr_kind_t *k, const char *name) {
  fx_t fx;
  sx_t s;
  char match[64];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  rt_proxy_t *p = fx_start_proxied(&fx, &o);
  void *obj = k->open(&fx, name);
  ASSERT_OK(k->is_locked(&fx, obj)); /* connected first */
  snprintf(match, sizeof match, "EVALSHA %s", lk__script_find(k->acquire_script)->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(k->start(obj, rt_scaled_ms(3000), 30000, &s));
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_OK(s.status);
  ASSERT_EQ(k->hold_count(obj), 1);
  ASSERT_EQ(nr_hget(fx.srv, name, k->owner(obj)), 1);
  ASSERT_OK(k->release(&fx, obj));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", name), 0);
  k->close(&fx, obj);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

#endif /* LK_TEST_NONREENTRANT_NR_CONTRACT_H */
