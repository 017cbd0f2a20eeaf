/* One contract shared by the lock and the fair lock (issue 29: it was
 * copied per kind): a renewal whose reply arrives after the holder was told
 * it lost the lease (the reply was slow; the server did extend). The loss's
 * give-back was sent behind that renewal and undoes the extension. Nothing
 * more may be sent when the late reply arrives: the holder may have acquired
 * again meanwhile, and a give-back sent then would reach the server after
 * that grant and delete it (the nemesis saw two holders of a fair lock this
 * way).
 *
 * Each kind's test file keeps its own TEST (so ctest names the kind) and
 * passes a small table of that kind's typed calls (lr_kind_t); what both
 * kinds share is read through the generic handle (include/latchkey/handle.h).
 * Header-only. */
#ifndef LK_TEST_HARNESS_LATE_RENEWAL_CONTRACT_H
#define LK_TEST_HARNESS_LATE_RENEWAL_CONTRACT_H

#include <string.h>

#include "lk_fixture.h"
#include "proxy.h"

/* The body's view of one acquire: the kinds' own sx_t / fsx_t stay theirs. */
typedef struct lr_acq_s {
  int done;
  int calls; /* more than 1 breaks the exactly-once rule */
  int status;
} lr_acq_t;

static inline void lr_acq_done(lr_acq_t *a, int status) {
  a->calls++;
  ASSERT_EQ(a->calls, 1);
  a->done = 1;
  a->status = status;
}

typedef struct lr_relost_s {
  int lost;
  lr_acq_t *acq;
} lr_relost_t;

/* One kind's calls; obj is that kind's object (lk_lock_t *, lk_fair_t *). */
typedef struct lr_kind_s {
  void *(*open)(fx_t *fx, const char *name);
  lk_handle_t *(*handle)(void *obj);
  /* Sets the kind's typed on_lost: counts the loss (LK_ELEASELOST only)
   * and acquires again at once with start_fenced into r->acq. */
  int (*set_lost_acquire_again)(void *obj, lr_relost_t *r);
  /* A fenced acquire, wait 5 s, default lease; asserts it started. */
  void (*start_fenced)(void *obj, lr_acq_t *a);
  int (*server_hold_count)(fx_t *fx, void *obj, int64_t *n);
  int (*release)(fx_t *fx, void *obj, int64_t *n);
  void (*close)(fx_t *fx, void *obj);
} lr_kind_t;

/* The longest machine stall the renewal survives: it goes out at most a
 * period and half a tick after the grant (lease / 3 + lease / 12, see
 * src/core/watchdog.c) and must beat the local deadline (the lease less the
 * drift allowance, lease / 100 + 2 ms). Tighter than fx_renewal_slack: a
 * stall just past this slack must be excused, not fail the test. */
static inline int64_t lr_renewal_slack_ms(int64_t lease_ms) {
  return lease_ms - (lease_ms / 100 + 2) - (lease_ms / 3 + lease_ms / 12);
}

static inline void lr_late_renewal_reply_never_undoes_the_next_grant(const lr_kind_t *k) {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_opts_t o;
  void *obj;
  lk_handle_t *h;
  lr_acq_t first, again;
  lr_relost_t r;
  int64_t n = -1, t1;
  lk_client_opts_init(&o);
  o.default_lease_ms = 1500;
  o.reply_timeout_ms = 5000; /* held replies are late, not lost */
  p = fx_start_proxied(&fx, &o);
  obj = k->open(&fx, "late");
  h = k->handle(obj);
  memset(&r, 0, sizeof(r));
  r.acq = &again;
  ASSERT_OK(k->set_lost_acquire_again(obj, &r));
  k->start_fenced(obj, &first);
  rt_run_until(&fx.loop, &first.done, 5000);
  ASSERT_OK(first.status);
  int64_t granted = rt_stall_mark();
  t1 = lk_handle_token(h);
  ASSERT_GT(t1, 0);
  long long scripts = rt_server_cmd_calls(fx.srv, "evalsha");
  /* The next request is the watchdog's renewal: it runs, its reply (and
   * every later one) is held past the local deadline. */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_HOLD, NULL, 0);
  /* The premise: that renewal went out (its reply is held) before the
   * deadline. A machine stall longer than lr_renewal_slack_ms can skip it:
   * the loss then comes first and only its give-back runs. */
  FX_EVENTUALLY(&fx, rt_proxy_rule_state(p) == RT_PROXY_RULE_APPLIED || r.lost, 5000);
  int renewed = EXPECT_HOLD(r.lost == 0, granted, lr_renewal_slack_ms(o.default_lease_ms));
  rt_run_until(&fx.loop, &r.lost, 5000);
  ASSERT_EQ(r.lost, 1);
  /* The renewal and the loss's give-back ran (two scripts). The give-back's
   * answer is held too, and the new acquisition waits for it, so it has
   * taken no token yet: sent before that answer, it could be overtaken by
   * the give-back (a cluster's router keeps a command that met TRYAGAIN for
   * a later retry). */
  FX_EVENTUALLY(&fx, rt_server_cmd_calls(fx.srv, "evalsha") >= scripts + 1 + renewed, 3000);
  ASSERT_EQ(fx_token_counter(&fx, "late"), t1);
  ASSERT_EQ(again.done, 0);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  rt_proxy_release(p);
  rt_run_until(&fx.loop, &again.done, 5000);
  ASSERT_OK(again.status);
  ASSERT_GT(lk_handle_token(h), t1);
  ASSERT_EQ(lk_handle_token(h), fx_token_counter(&fx, "late"));
  /* Whatever the late reply set off was sent before this query. */
  ASSERT_OK(k->server_hold_count(&fx, obj, &n));
  ASSERT_EQ(n, 1);
  ASSERT(lk_handle_is_held(h));
  ASSERT_EQ(r.lost, 1);
  ASSERT_OK(k->release(&fx, obj, &n));
  ASSERT_EQ(n, 1); /* 1: released (lk_lock_result / lk_fair_result) */
  k->close(&fx, obj);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS late"), 0);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

#endif /* LK_TEST_HARNESS_LATE_RENEWAL_CONTRACT_H */
