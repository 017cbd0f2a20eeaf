/* The lock's lean layout (docs/lock.md, "Lean layout"): the server holds a
 * plain string NAME = OWNER with a PX lease, re-entries are counted in the
 * object, the release is a compare-and-delete that publishes on the lock's
 * usual channel, renewal runs scripts/lean/renew.lua. A key of Redisson's
 * layout is LK_EWRONGTYPE for a lean object and the other way round. */
#include <stdio.h>

#include "lk_fixture.h"

/* The fixture's client with lock_layout = lean (and max_repoll_ms, 0 for
 * the default). */
static void lean_start(fx_t *fx, int64_t max_repoll_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.lock_layout = LK_LOCK_LAYOUT_LEAN;
  if (max_repoll_ms > 0)
    o.max_repoll_ms = max_repoll_ms;
  fx_start_with(fx, NULL, &o);
}

static void count_lost(lk_lock_t *l, int status, void *arg) {
  (void)l;
  ASSERT_EQ(status, LK_ELEASELOST);
  ++*(int *)arg;
}

static char *get_value(fx_t *fx, const char *key) { return rt_cmd_str(fx->srv, "GET %s", key); }

/* The key is this object's string, with a lease; a re-entry leaves it as it
 * is (the count lives in the object), the first release keeps it, the last
 * deletes it. */
TEST(lean_acquire_reenter_release) {
  fx_t fx;
  int64_t r = -1;
  lean_start(&fx, 0);
  lk_lock_t *a = fx_lock(&fx, "ln"), *b = fx_lock(&fx, "ln");
  ASSERT_EQ(lk_lock_layout(a), LK_LOCK_LAYOUT_LEAN);
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  char *v = get_value(&fx, "ln");
  ASSERT_NOT_NULL(v);
  ASSERT_STREQ(v, lk_lock_owner(a));
  free(v);
  long long ttl = rt_cmd_int(fx.srv, "PTTL ln");
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 30000);
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_EQ(lk_lock_hold_count(a), 2);
  ASSERT_EQ(sx_acquire(&fx, b, 0, 30000), LK_ETIMEDOUT); /* another owner */
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, &r));
  ASSERT_EQ(r, 0); /* one hold left */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ln"), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ln"), 0);
  ASSERT_EQ(sx_try_run(&fx, lk_lock_release, a, NULL), LK_ENOTHELD);
  /* Queries: the layout's server keeps no count. */
  ASSERT_EQ(lk_lock_server_hold_count(a, sx_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_lock_set_owner(a, NULL, 7), LK_EINVAL);
  ASSERT_OK(sx_acquire(&fx, b, 0, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, a, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(sx_run(&fx, lk_lock_force_release, a, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ln"), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, b, NULL), LK_ENOTOWNER);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* With re-polling slowed to 20 s, only the release's message on the usual
 * channel can wake the waiter this fast. */
TEST(lean_release_wakes_a_waiter) {
  fx_t fx;
  sx_t s, r;
  lean_start(&fx, 20000);
  lk_lock_t *a = fx_lock(&fx, "lw"), *b = fx_lock(&fx, "lw");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  memset(&s, 0, sizeof(s));
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.wait_ms = 20000;
  lo.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(b, &lo, sx_cb, &s));
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{lw}") != 0, 3000);
  fx_spin(&fx, 50); /* the post-subscribe retry lands */
  ASSERT_EQ(s.done, 0);
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_lock_release(a, sx_cb, &r));
  uint64_t released = uv_hrtime();
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  ASSERT_LT((int64_t)((s.t_ns - released) / 1000000u), rt_stall_bound_since_ns(released, 500));
  rt_run_until(&fx.loop, &r.done, 5000);
  ASSERT_GE(r.result, 1);
  char *v = get_value(&fx, "lw");
  ASSERT_NOT_NULL(v);
  ASSERT_STREQ(v, lk_lock_owner(b));
  free(v);
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* An explicit lease is not renewed: the key goes when it ends, and the
 * release then finds nothing of this owner's. */
TEST(lean_explicit_lease_expires) {
  fx_t fx;
  lean_start(&fx, 0);
  lk_lock_t *a = fx_lock(&fx, "le");
  ASSERT_OK(sx_acquire(&fx, a, 0, 500));
  ASSERT(fx_wait_key_gone(&fx, "le", 5000));
  ASSERT_EQ(sx_run(&fx, lk_lock_release, a, NULL), LK_ENOTOWNER);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* The default lease is renewed by the watchdog (lean/renew) past its end;
 * a renewal that finds another owner's value reports the loss. */
TEST(lean_watchdog_renews_and_reports_loss) {
  fx_t fx;
  lk_client_opts_t o;
  int lost = 0;
  lk_client_opts_init(&o);
  o.lock_layout = LK_LOCK_LAYOUT_LEAN;
  o.default_lease_ms = rt_scaled_ms(900);
  fx_start_with(&fx, NULL, &o);
  lk_lock_t *a = fx_lock(&fx, "lr");
  ASSERT_OK(lk_lock_set_lost_cb(a, count_lost, &lost));
  ASSERT_OK(sx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
  lk_client_stats_t st;
  lk_client_get_stats(fx.c, &st);
  uint64_t base = st.renewals;
  fx_spin(&fx, 2 * o.default_lease_ms);
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.renewals, base + 2);
  ASSERT_EQ(lost, 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lr"), 1);
  ASSERT(lk_lock_is_held(a));
  /* Someone else's value now: the next renewal reports the loss. */
  char *ok = rt_cmd_str(fx.srv, "SET lr other:1 PX 60000");
  ASSERT_STREQ(ok, "OK");
  free(ok);
  FX_EVENTUALLY(&fx, lost == 1, 2 * o.default_lease_ms);
  ASSERT(!lk_lock_is_held(a));
  char *v = get_value(&fx, "lr");
  ASSERT_STREQ(v, "other:1"); /* the give-back leaves another's value alone */
  free(v);
  ASSERT_EQ(sx_try_run(&fx, lk_lock_release, a, NULL), LK_ELEASELOST);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* Fencing: the same counter key as the hash layout, strictly increasing. */
TEST(lean_fenced_acquire_takes_increasing_tokens) {
  fx_t fx;
  sx_t s;
  lean_start(&fx, 0);
  lk_lock_t *a = fx_lock(&fx, "lf");
  int64_t last = 0;
  for (int i = 0; i < 3; i++) {
    lk_lock_opts_t lo;
    lk_lock_opts_init(&lo);
    lo.lease_ms = 30000;
    lo.fenced = 1;
    memset(&s, 0, sizeof(s));
    ASSERT_OK(lk_lock_acquire(a, &lo, sx_cb, &s));
    rt_run_until(&fx.loop, &s.done, 10000);
    ASSERT_OK(s.status);
    ASSERT_GT(lk_lock_token(a), last);
    last = lk_lock_token(a);
    ASSERT_EQ(fx_token_counter(&fx, "lf"), last);
    ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lf"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* Neither layout takes the other's key for a grant or a release: each gets
 * LK_EWRONGTYPE and the key stays as it was. */
TEST(lean_and_redisson_layouts_are_wrongtype_both_ways) {
  fx_t fx;
  lean_start(&fx, 0);
  lk_lock_t *lean = fx_lock(&fx, "lx"), *hash = fx_lock(&fx, "lx");
  ASSERT_OK(lk_lock_set_layout(hash, LK_LOCK_LAYOUT_REDISSON));
  ASSERT_EQ(lk_lock_layout(hash), LK_LOCK_LAYOUT_REDISSON);
  ASSERT_EQ(lk_lock_set_layout(hash, 2), LK_EINVAL);

  ASSERT_OK(sx_acquire(&fx, hash, 0, 30000));
  ASSERT_EQ(sx_acquire(&fx, lean, 0, 30000), LK_EWRONGTYPE);
  ASSERT_EQ(lk_lock_hold_count(lean), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_force_release, lean, NULL), LK_EWRONGTYPE);
  char *count = rt_cmd_str(fx.srv, "HGET lx %s", lk_lock_owner(hash));
  ASSERT_STREQ(count, "1");
  free(count);
  ASSERT_OK(sx_run(&fx, lk_lock_release, hash, NULL));

  ASSERT_OK(sx_acquire(&fx, lean, 0, 30000));
  ASSERT_EQ(sx_acquire(&fx, hash, 0, 30000), LK_EWRONGTYPE);
  ASSERT_EQ(lk_lock_hold_count(hash), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_force_release, hash, NULL), LK_EWRONGTYPE);
  char *v = get_value(&fx, "lx");
  ASSERT_STREQ(v, lk_lock_owner(lean));
  free(v);
  /* A layout changes only while nothing is held. */
  ASSERT_EQ(lk_lock_set_layout(lean, LK_LOCK_LAYOUT_REDISSON), LK_EBUSY);
  ASSERT_OK(sx_run(&fx, lk_lock_release, lean, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS lx"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){lean, hash, NULL});
}
