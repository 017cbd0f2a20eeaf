/* Fair lock under faults: a cancel racing the grant, pub/sub killed while
 * queued, lost replies while queued, a server restart that loses the queue,
 * a user without channel permission, replies of a shape the script never
 * sends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scripts.h"
#include "fair_fixture.h"
#include "lockfam_late_renewal_row.h"
#include "lockfam_no_channels.h"
#include "lockfam_stale_count.h"
#include "proxy.h"

static void start_proxied(fx_t *fx, rt_proxy_t **p, int64_t reply_timeout_ms) {
  *p = fx_start_proxied_timeouts(fx, (fx_timeouts_t){.reply_ms = reply_timeout_ms,
                                                     .connect_ms = reply_timeout_ms,
                                                     .reconnect_max_ms = 100});
}

static long long holds_of(fx_t *fx, const char *name, const char *owner) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", name, owner);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* The fixture of the queued-waiter faults: the holder h on a second, direct
 * client (the proxy's faults never reach it) holds name; the waiter w is on
 * the proxied client (reply and connect timeouts reply_timeout_ms). */
static void start_holder_and_proxied_waiter(fx_t *fx, rt_proxy_t **p, lk_client_t **c2,
                                            const char *name, int64_t reply_timeout_ms,
                                            lk_fair_t **h, lk_fair_t **w) {
  start_proxied(fx, p, reply_timeout_ms);
  *c2 = fx_direct_client(fx);
  ASSERT_OK(lk_fair_new(*c2, name, h));
  *w = fx_fair(fx, name);
  ASSERT_OK(fsx_acquire(fx, *h, 0, 30000));
}

/* Closes what start_holder_and_proxied_waiter made, the main client aside. */
static void close_holder_and_waiter(fx_t *fx, lk_client_t *c2, lk_fair_t *h, lk_fair_t *w) {
  int closed = 0;
  fx_close_fair(fx, w);
  lk_fair_set_data(h, &closed);
  ASSERT_OK(lk_fair_close(h, fx_fair_closed_cb));
  rt_run_until(&fx->loop, &closed, 5000);
  fx_close_direct_client(fx, c2);
}

/* The waiter's winning attempt is on its way back when the acquire is
 * canceled: the server granted it, so the grant is released, the queue
 * holds no trace, and the object goes on under a fresh identity. */
TEST(cancel_racing_the_grant_gives_it_back) {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_t *c2;
  lk_fair_t *h, *w;
  fsx_t s, s2;
  char old_owner[128];
  start_holder_and_proxied_waiter(&fx, &p, &c2, "race", 3000, &h, &w);
  fsx_start(w, 30000, 30000, 0, &s);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "race") == 1, 3000);
  {
    char *ch = fair_channel_of(w);
    FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 1, 3000);
    free(ch);
  }
  fx_spin(&fx, 20);
  snprintf(old_owner, sizeof(old_owner), "%s", lk_fair_owner(w));
  /* From now on the proxy holds the replies to w's scripts (its refresh's,
   * if one goes out first, and every later one): held, not delayed, so no
   * stall of this process can let the grant's reply through early. */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_HOLD, NULL, 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  /* The message reaches w, its attempt reaches the server and is granted;
   * the reply is held by the proxy when we cancel (the rule applied: a
   * reply still on its way to the proxy would be held after the release
   * below, until the reply timeout). */
  FX_EVENTUALLY(&fx,
                holds_of(&fx, "race", old_owner) == 1 &&
                    rt_proxy_rule_state(p) == RT_PROXY_RULE_APPLIED,
                5000);
  ASSERT_EQ(s.done, 0);
  ASSERT_OK(lk_fair_cancel(w));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_fair_hold_count(w), 0);
  ASSERT(strcmp(lk_fair_owner(w), old_owner) != 0);
  /* Given back once the late reply came: lock free, queue and deadlines
   * empty. */
  rt_proxy_release(p);
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS race") == 0, 5000);
  ASSERT_EQ(fair_llen(fx.srv, "race"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "race"), 0);
  /* The object works on under its new identity. */
  fsx_start(w, 5000, 30000, 0, &s2);
  rt_run_until(&fx.loop, &s2.done, 5000);
  ASSERT_OK(s2.status);
  ASSERT_EQ(holds_of(&fx, "race", lk_fair_owner(w)), 1);
  close_holder_and_waiter(&fx, c2, h, w);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

/* The budget runs out while a waiting attempt is unanswered (its reply is
 * swallowed): the acquire ends (LK_EUNKNOWN once the reply timeout drops
 * the connection, LK_ETIMEDOUT if the budget's guard comes first), and what
 * the attempt left is removed once the connection recovers. */
TEST(budget_spent_with_attempt_unanswered_leaves_no_trace) {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_t *c2;
  lk_fair_t *h, *w;
  fsx_t s;
  start_holder_and_proxied_waiter(&fx, &p, &c2, "unans", 400, &h, &w);
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, w, NULL)); /* connected */
  /* Let the attempt reach the server, then swallow the reply. */
  rt_proxy_delay(p, 150);
  fsx_start(w, 100, 30000, 0, &s);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "unans") == 1, 3000);
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT(s.status == LK_EUNKNOWN || s.status == LK_ETIMEDOUT);
  rt_proxy_blackhole(p, 0);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "unans") == 0, 5000);
  ASSERT_EQ(fair_zcard(fx.srv, "unans"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN unans"), 1); /* h's hold only */
  close_holder_and_waiter(&fx, c2, h, w);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS unans"), 0);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

/* Replies lost while queued: re-polls are resent (a resend is a refresh),
 * so the waiter stays in the queue exactly once and is served in turn. */
TEST(lost_replies_while_queued_keep_one_entry) {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_t *c2;
  lk_fair_t *h, *w;
  fsx_t s;
  start_holder_and_proxied_waiter(&fx, &p, &c2, "lost", 400, &h, &w);
  /* re-polls every 100 ms (timeout 300 / 3) */
  fsx_start(w, 20000, 30000, 300, &s);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "lost") == 1, 3000);
  rt_proxy_blackhole(p, 1);
  fx_spin(&fx, 700); /* a reply timeout or two: reconnect attempts */
  rt_proxy_blackhole(p, 0);
  fx_spin(&fx, 300);
  ASSERT_EQ(s.done, 0);
  /* Cut off for longer than its timeout, w may have been skipped and
   * re-joined; either way it is in the queue exactly once. */
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "lost") == 1, 3000);
  ASSERT_EQ(fair_zcard(fx.srv, "lost"), 1);
  ASSERT_EQ(fair_lpos(fx.srv, "lost", lk_fair_owner(w)), 0);
  ASSERT_OK(fsx_run(&fx, lk_fair_release, h, NULL));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(holds_of(&fx, "lost", lk_fair_owner(w)), 1);
  ASSERT_EQ(fair_llen(fx.srv, "lost"), 0);
  close_holder_and_waiter(&fx, c2, h, w);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

/* The pub/sub connection is killed while a waiter depends on it; re-polls
 * are 20 s apart, so only the resubscription (and the attempt it triggers)
 * plus the turn message can wake it in time. Then again with the release
 * happening while pub/sub is down (its message is lost). */
TEST(pubsub_killed_while_queued_still_acquires_promptly) {
  fx_t fx;
  lk_fair_t *h, *w;
  fsx_t s;
  char *ch;
  int round;
  fx_start_slow_repoll_fast_reconnect(&fx);
  h = fx_fair(&fx, "psk");
  w = fx_fair(&fx, "psk");
  ch = fair_channel_of(w);
  for (round = 0; round < 2; round++) {
    ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
    fsx_start(w, 60000, 60000, 60000, &s); /* refresh every 20 s */
    FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 1 && fair_llen(fx.srv, "psk") == 1, 3000);
    fx_spin(&fx, 20);
    ASSERT_GE(rt_cmd_int(fx.srv, "CLIENT KILL TYPE pubsub"), 1);
    if (round == 0) {
      fx_spin(&fx, 30);
      FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, ch) == 1, 3000);
      fx_spin(&fx, 20);
    }
    ASSERT_EQ(s.done, 0);
    fsx_release_wakes(&fx, h, &s, 1000);
    ASSERT_OK(fsx_run(&fx, lk_fair_release, w, NULL));
  }
  free(ch);
  fx_finish_fairs(&fx, (lk_fair_t *[]){h, w, NULL});
}

/* A restart without persistence loses the lock and the queue: the waiter's
 * next re-poll finds a free lock and takes it. */
TEST(restart_losing_the_queue_admits_the_waiter) {
  fx_t fx;
  lk_client_opts_t o;
  lk_fair_t *h, *w;
  fsx_t s;
  lk_client_opts_init(&o);
  o.reconnect_max_ms = 200;
  fx_start_with(&fx, NULL, &o);
  h = fx_fair(&fx, "rst");
  w = fx_fair(&fx, "rst");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fsx_start(w, 20000, 10000, 0, &s);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "rst") == 1, 3000);
  ASSERT_OK(rt_server_restart(fx.srv));
  rt_run_until(&fx.loop, &s.done, 8000);
  ASSERT_OK(s.status);
  ASSERT_EQ(holds_of(&fx, "rst", lk_fair_owner(w)), 1);
  ASSERT_EQ(fsx_run(&fx, lk_fair_release, h, NULL), LK_ENOTOWNER);
  fx_finish_fairs_gone(&fx, "rst", (lk_fair_t *[]){h, w, NULL});
}

/* Redis 7 gives new ACL users no channels: the waiter is still served in
 * turn, by re-polling, and the release is not refused. */
TEST(user_without_channel_access_is_served_by_polling) {
  fx_t fx;
  lk_fair_t *h, *w;
  fsx_t s;
  lf_start_without_channels(&fx, 200, NULL, NULL);
  h = fx_fair(&fx, "nch");
  w = fx_fair(&fx, "nch");
  ASSERT_OK(fsx_acquire(&fx, h, 0, 60000));
  fsx_start(w, 20000, 10000, 0, &s);
  FX_EVENTUALLY(&fx, fair_llen(fx.srv, "nch") == 1, 3000);
  fx_spin(&fx, 100);
  fsx_release_wakes(&fx, h, &s, 1000);
  fx_finish_fairs_gone(&fx, "nch", (lk_fair_t *[]){h, w, NULL});
}

/* ---- a renewal answered after the loss ---- */

/* The fair lock's row of the shared contract (test/harness/late_renewal_contract.h,
 * test/harness/lockfam_late_renewal_row.h). */
LF_LATE_RENEWAL_ROW(fair, fsx_run);

TEST(late_renewal_reply_never_undoes_the_next_grant) {
  lr_late_renewal_reply_never_undoes_the_next_grant(&lf_lr_fair);
}

/* The fair lock's row of the stale-count contract
 * (test/harness/lockfam_stale_count.h): a fenced acquire is the late-renewal
 * row's (wait 5 s, default lease); the server's count is read from the hash. */
static int stale_acquire_fenced(fx_t *fx, void *obj) {
  lr_acq_t s;
  lf_lr_start_fenced_fair(obj, &s);
  rt_run_until(&fx->loop, &s.done, 5000);
  return s.status;
}

static uint32_t stale_hold_count(void *obj) { return lk_fair_hold_count(obj); }

static long long stale_server_holds(fx_t *fx, void *obj) {
  return holds_of(fx, lk_fair_name(obj), lk_fair_owner(obj));
}

static const lf_stale_kind_t stale_fair = {
    "",               lf_lr_open_fair,    lf_lr_handle_fair,  stale_acquire_fenced,
    stale_hold_count, stale_server_holds, lf_lr_release_fair, lf_lr_close_fair};

TEST(first_attempt_never_takes_a_stale_count_for_its_grant) {
  lf_first_attempt_never_takes_a_stale_count(&stale_fair, "stale");
}

/* A re-entry (the object holds 2) is held up on its way and canceled;
 * meanwhile the lock is force-released, so someone else may take it and
 * leave. When the late attempt reaches the server it must not grant a fresh
 * hold to this owner: the object's next re-entry would then go on counting
 * across the gap (and the watchdog would renew it). It grants nothing, and
 * the next acquire reports the loss. Found by review. */
TEST(late_reentry_after_a_force_release_grants_nothing) {
  fx_t fx;
  rt_proxy_t *p;
  lk_fair_t *w;
  fsx_t s;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  p = fx_start_proxied(&fx, &o);
  w = fx_fair(&fx, "rev");
  ASSERT_OK(fsx_acquire(&fx, w, 0, 60000));
  ASSERT_OK(fsx_acquire(&fx, w, 0, 60000));
  ASSERT_EQ(lk_fair_hold_count(w), 2);
  /* A third re-entry, held up on the way, then canceled. */
  rt_proxy_pause(p, RT_PROXY_UP, 1);
  fsx_start(w, 5000, 60000, 0, &s);
  fx_spin(&fx, 50);
  ASSERT_OK(lk_fair_cancel(w));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  /* An administrator force-releases the lock meanwhile. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL rev"), 1);
  rt_proxy_pause(p, RT_PROXY_UP, 0);
  /* The late attempt and the clean-up behind it run; a query behind them
   * answers once they have. */
  ASSERT_OK(fsx_run(&fx, lk_fair_is_locked, w, NULL));
  ASSERT_EQ(holds_of(&fx, "rev", lk_fair_owner(w)), 0); /* nothing granted */
  fsx_start(w, 0, 60000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ELEASELOST);
  ASSERT_EQ(lk_fair_hold_count(w), 0);
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS rev") == 0, 2000);
  fx_finish_fairs(&fx, (lk_fair_t *[]){w, NULL});
  rt_proxy_stop(p);
}

/* A proxied client with one fair lock on name (*w), connected; the reply to
 * its next acquire script is replaced by fake (a shape it never sends). That
 * acquire is started (wait budget wait_ms, 30 s lease): its status, awaited
 * for at most run_ms. */
static int acquire_with_reply_replaced(fx_t *fx, rt_proxy_t **p, const char *name,
                                       const char *fake, int64_t wait_ms, int64_t run_ms,
                                       lk_fair_t **w) {
  char match[96];
  lk_client_opts_t o;
  fsx_t s;
  lk_client_opts_init(&o);
  *p = fx_start_proxied(fx, &o);
  *w = fx_fair(fx, name);
  ASSERT_OK(fsx_run(fx, lk_fair_is_locked, *w, NULL)); /* connected */
  snprintf(match, sizeof(match), "EVALSHA %s", lk__script_find("fair/acquire")->sha1);
  rt_proxy_on_reply(*p, match, 1, RT_PROXY_REPLACE, fake, strlen(fake));
  fsx_start(*w, wait_ms, 30000, 0, &s);
  rt_run_until(&fx->loop, &s.done, run_ms);
  return s.status;
}

/* Where those cases end: w's release frees the lock, and all is closed. */
static void release_frees_then_finish(fx_t *fx, rt_proxy_t *p, lk_fair_t *w) {
  ASSERT_OK(fsx_run(fx, lk_fair_release, w, NULL));
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", lk_fair_name(w)), 0);
  fx_close_fair(fx, w);
  fx_finish(fx);
  rt_proxy_stop(p);
}

/* A reply of a shape the acquire script never sends, to a try-once whose
 * script did grant: what ran is unknown, so the acquire ends LK_EUNKNOWN
 * (no budget for a resend), not held, and the hold is given back. */
TEST(wrong_shape_reply_to_acquire_is_unknown_and_given_back) {
  fx_t fx;
  rt_proxy_t *p;
  lk_fair_t *w;
  ASSERT_EQ(acquire_with_reply_replaced(&fx, &p, "shape", "+OK\r\n", 0, 5000, &w), LK_EUNKNOWN);
  ASSERT_EQ(lk_fair_hold_count(w), 0);
  ASSERT(!lk_fair_is_held(w));
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS shape") == 0, 3000);
  ASSERT_EQ(fair_llen(fx.srv, "shape"), 0);
  ASSERT_EQ(fair_zcard(fx.srv, "shape"), 0);
  /* The object carries on. */
  ASSERT_OK(fsx_acquire(&fx, w, 0, 30000));
  ASSERT_EQ(holds_of(&fx, "shape", lk_fair_owner(w)), 1);
  release_frees_then_finish(&fx, p, w);
}

/* The same with a wait budget: the attempt is resent, the resend reads the
 * grant the first one took from the count, and the hold is counted once. */
TEST(wrong_shape_reply_with_budget_is_resent_and_counted_once) {
  fx_t fx;
  rt_proxy_t *p;
  lk_fair_t *w;
  ASSERT_OK(acquire_with_reply_replaced(&fx, &p, "shape2", ":7\r\n", 5000, 7000, &w));
  ASSERT_EQ(lk_fair_hold_count(w), 1);
  ASSERT_EQ(holds_of(&fx, "shape2", lk_fair_owner(w)), 1);
  ASSERT_EQ(fair_llen(fx.srv, "shape2"), 0);
  release_frees_then_finish(&fx, p, w);
}
