/* Semaphores under faults: replies lost after the server applied a release
 * or an acquire (proxy blackhole, connection reset), an attempt that
 * reaches the server after its sender gave up, and a waiter whose pub/sub
 * connection dies. Permits are never created and never lost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "sem_fixture.h"

/* A client through a proxy, with short timeouts so faults resolve fast. */
static rt_proxy_t *start_proxied(fx_t *fx) {
  /* connect_ms: a handshake lost in the blackhole */
  return fx_start_proxied_timeouts(
      fx, (fx_timeouts_t){.reply_ms = 400, .connect_ms = 400, .reconnect_max_ms = 100});
}

/* Spins until the server's count under name is want: the command was
 * applied (its reply is then still held by the proxy's delay). */
static void wait_applied(fx_t *fx, const char *name, long long want) {
  ASSERT(fx_wait_count(fx, name, want, 3000));
}

static void finish_proxied(fx_t *fx, rt_proxy_t *p) {
  fx_finish(fx);
  rt_proxy_stop(p);
}

/* The command x waits for was started behind a 150 ms reply delay: once the
 * server shows it applied (count want under name), its reply is swallowed
 * (blackhole; the reply timeout drops the connection) and the resend, once
 * the proxy lets traffic through again, ends it. */
static void swallow_reply_once_applied(fx_t *fx, rt_proxy_t *p, const char *name,
                                       long long want, sx_t *x) {
  wait_applied(fx, name, want);
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  fx_spin(fx, 500); /* reply timeout: the connection is dropped */
  ASSERT_EQ(x->done, 0);
  rt_proxy_blackhole(p, 0);
  rt_run_until(&fx->loop, &x->done, 5000);
}

/* As above, but the connection is reset once the command is applied. */
static void reset_once_applied(fx_t *fx, rt_proxy_t *p, const char *name, long long want,
                               sx_t *x) {
  wait_applied(fx, name, want);
  rt_proxy_reset_all(p);
  rt_proxy_delay(p, 0);
  rt_run_until(&fx->loop, &x->done, 5000);
}

/* The release reaches the server; its reply is swallowed; the resend after
 * the reply timeout finds it applied and adds nothing. */
TEST(lost_release_reply_creates_no_permit) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "lrr");
  lk_client_stats_t st;
  sx_t r;
  int64_t v;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 3, NULL));
  ASSERT_OK(sem_acquire(&fx, s, 2, 0));
  rt_proxy_delay(p, 150);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_semaphore_release(s, 2, sem_cb, &r));
  swallow_reply_once_applied(&fx, p, "lrr", 3, &r);
  ASSERT_OK(r.status);
  ASSERT_EQ(r.result, 3);
  ASSERT_EQ(lk_semaphore_held(s), 0);
  ASSERT_EQ(srv_count(fx.srv, "lrr"), 3);
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.unknown_outcomes, 1);
  ASSERT_OK(sem_run(&fx, lk_semaphore_available, s, &v));
  ASSERT_EQ(v, 3);
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "lrr"), 3);
  finish_proxied(&fx, p);
}

/* The connection is killed after the release was sent and applied. */
TEST(connection_reset_after_release_creates_no_permit) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "crr");
  sx_t r;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 4, NULL));
  ASSERT_OK(sem_acquire(&fx, s, 3, 0));
  rt_proxy_delay(p, 150);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_semaphore_release(s, 1, sem_cb, &r));
  reset_once_applied(&fx, p, "crr", 2, &r);
  ASSERT_OK(r.status);
  ASSERT_EQ(lk_semaphore_held(s), 2);
  ASSERT_EQ(srv_count(fx.srv, "crr"), 2);
  /* The object goes on as normal. */
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, NULL));
  ASSERT_EQ(srv_count(fx.srv, "crr"), 4);
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "crr"), 4);
  finish_proxied(&fx, p);
}

/* The acquire is applied, its reply lost: the resend recognises its own
 * request and takes nothing more. */
TEST(lost_acquire_reply_takes_once) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "lar");
  sx_t a;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 5, NULL));
  rt_proxy_delay(p, 150);
  sem_start_acquire(s, 2, 5000, &a);
  reset_once_applied(&fx, p, "lar", 3, &a);
  ASSERT_OK(a.status);
  ASSERT_EQ(a.result, 3);
  ASSERT_EQ(lk_semaphore_held(s), 2);
  ASSERT_EQ(srv_count(fx.srv, "lar"), 3);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, NULL));
  ASSERT_EQ(srv_count(fx.srv, "lar"), 5);
  fx_close_sem(&fx, s);
  finish_proxied(&fx, p);
}

/* A one-try acquire times out in flight (LK_EUNKNOWN); its command still
 * reaches the server later. The object queues a settle: when the settle
 * lands first it voids the attempt, which then takes nothing; when the
 * attempt lands first the settle gives its permits back. Either way nothing
 * stays taken. */
static void unknown_acquire(int attempt_first) {
  fx_t fx;
  lk_semaphore_t *s;
  sx_t a;
  lk_client_opts_t o;
  rt_proxy_t *p;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 10;
  o.reconnect_max_ms = 50;
  o.reply_timeout_ms = 150;
  p = fx_start_proxied(&fx, &o);
  s = fx_sem(&fx, "ua");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 2, NULL));
  rt_proxy_delay(p, 400);
  sem_start_acquire(s, 2, 0, &a);
  rt_run_until(&fx.loop, &a.done, 3000);
  ASSERT_EQ(a.status, LK_EUNKNOWN);
  ASSERT_EQ(lk_semaphore_held(s), 0);
  if (attempt_first) {
    /* The reconnect and the settle go through the same delay: the attempt
     * lands first and takes the permits. */
    ASSERT(fx_wait_count(&fx, "ua", 0, 3000));
  }
  rt_proxy_delay(p, 0); /* else the settle overtakes the delayed attempt */
  fx_spin(&fx, 600);    /* whatever is delayed lands meanwhile */
  ASSERT(fx_wait_count(&fx, "ua", 2, 3000));
  fx_spin(&fx, 200);
  ASSERT_EQ(srv_count(fx.srv, "ua"), 2);
  /* The object still works, under a fresh mark. */
  ASSERT_OK(sem_acquire(&fx, s, 2, 0));
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, NULL));
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "ua"), 2);
  finish_proxied(&fx, p);
}

TEST(unknown_acquire_voided_by_settle) { unknown_acquire(0); }

TEST(unknown_acquire_given_back_by_settle) { unknown_acquire(1); }

TEST(psem_lost_release_reply_creates_no_permit) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_psem_t *a = fx_psem(&fx, "plr");
  sx_t r;
  int64_t v;
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 3, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 3, 0, LK_LEASE_DEFAULT));
  rt_proxy_delay(p, 150);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_psem_release(a, NULL, psem_cb, &r));
  swallow_reply_once_applied(&fx, p, "plr", 3, &r);
  ASSERT_OK(r.status);
  ASSERT_EQ(r.result, 3);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  ASSERT_EQ(srv_count(fx.srv, "plr"), 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {plr}:timeout"), 0);
  ASSERT_OK(psem_run(&fx, lk_psem_available, a, &v));
  ASSERT_EQ(v, 3);
  fx_close_psem(&fx, a);
  finish_proxied(&fx, p);
}

TEST(psem_lost_acquire_reply_takes_once) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_psem_t *a = fx_psem(&fx, "pla");
  sx_t x;
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 4, NULL));
  rt_proxy_delay(p, 150);
  psem_start_acquire(a, 2, 5000, LK_LEASE_DEFAULT, &x);
  reset_once_applied(&fx, p, "pla", 2, &x);
  ASSERT_OK(x.status);
  ASSERT_EQ(lk_psem_permit_count(a), 2);
  ASSERT_EQ(srv_count(fx.srv, "pla"), 2);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {pla}:timeout"), 2);
  fx_close_psem(&fx, a);
  ASSERT_EQ(srv_count(fx.srv, "pla"), 4);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {pla}:timeout"), 0);
  finish_proxied(&fx, p);
}

/* The pub/sub connection is killed while a waiter depends on it; re-polling
 * is slowed to 20 s, so only the resubscription (and the try it triggers)
 * and the release message can wake the waiter in time. */
TEST(waiter_survives_pubsub_kill) {
  fx_t fx;
  lk_client_opts_t o;
  lk_semaphore_t *a, *b;
  lk_psem_t *pa, *pb;
  sx_t w, pw;
  uint64_t t_rel;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 20000;
  o.reconnect_max_ms = 100;
  fx_start_with(&fx, NULL, &o);
  a = fx_sem(&fx, "pk");
  b = fx_sem(&fx, "pk");
  pa = fx_psem(&fx, "ppk");
  pb = fx_psem(&fx, "ppk");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, a, 1, NULL));
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, pa, 1, NULL));
  ASSERT_OK(sem_acquire(&fx, a, 1, 0));
  ASSERT_OK(psem_acquire(&fx, pa, 1, 0, 60000));
  sem_start_acquire(b, 1, 30000, &w);
  psem_start_acquire(pb, 1, 30000, 60000, &pw);
  fx_wait_subscribers(&fx, "redisson_sc:{pk}", 1);
  fx_wait_subscribers(&fx, "redisson_sc:{ppk}", 1);
  ASSERT_GE(rt_cmd_int(fx.srv, "CLIENT KILL TYPE pubsub"), 1);
  fx_spin(&fx, 50);
  fx_wait_subscribers(&fx, "redisson_sc:{pk}", 1);
  fx_wait_subscribers(&fx, "redisson_sc:{ppk}", 1);
  fx_spin(&fx, 20);
  ASSERT_EQ(w.done, 0);
  ASSERT_EQ(pw.done, 0);
  t_rel = uv_hrtime();
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, a, 1, NULL));
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, pa, NULL, NULL));
  rt_run_until(&fx.loop, &w.done, 5000);
  rt_run_until(&fx.loop, &pw.done, 5000);
  ASSERT_OK(w.status);
  ASSERT_OK(pw.status);
  ASSERT_LT((int64_t)((w.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 1000));
  ASSERT_LT((int64_t)((pw.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 1000));
  fx_close_sem(&fx, a);
  fx_close_sem(&fx, b);
  fx_close_psem(&fx, pa);
  fx_close_psem(&fx, pb);
  ASSERT_EQ(srv_count(fx.srv, "pk"), 1);
  ASSERT_EQ(srv_count(fx.srv, "ppk"), 1);
  fx_finish(&fx);
}

static void count_lost(lk_psem_t *p, int status, void *arg) {
  (void)p;
  ASSERT_EQ(status, LK_ELEASELOST);
  (*(int *)arg)++;
}

/* The server restarts without persistence while an expirable holder keeps
 * its permits renewed: the renewal finds them gone and reports the loss;
 * nothing is invented when the semaphore is set up again. */
TEST(psem_server_restart_reports_loss) {
  fx_t fx;
  lk_client_opts_t o;
  lk_psem_t *a;
  int lost = 0;
  int64_t v;
  lk_client_opts_init(&o);
  o.default_lease_ms = 900;
  o.reconnect_max_ms = 100;
  fx_start_with(&fx, NULL, &o);
  a = fx_psem(&fx, "rs");
  ASSERT_OK(lk_psem_set_lost_cb(a, count_lost, &lost));
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rt_server_restart(fx.srv));
  FX_EVENTUALLY(&fx, lost != 0, 3000);
  ASSERT_EQ(lost, 1);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  ASSERT(!lk_psem_is_held(a));
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, &v));
  ASSERT_EQ(v, 1);
  fx_spin(&fx, 50); /* the give-back of the lost ids finds nothing to add */
  ASSERT_OK(psem_run(&fx, lk_psem_available, a, &v));
  ASSERT_EQ(v, 2);
  fx_finish_psems(&fx, (lk_psem_t *[]){a, NULL});
}

/* --- acquires whose outcome stays unknown while the server stays out of
 * reach for many reconnect cycles: the settle must not give up --- */

static rt_proxy_t *start_fast(fx_t *fx) {
  return fx_start_proxied_timeouts(fx, (fx_timeouts_t){.reply_ms = 150,
                                                       .connect_ms = 150,
                                                       .reconnect_min_ms = 10,
                                                       .reconnect_max_ms = 50});
}

/* The scripts are cached on the server, so the next EVALSHA is the acquire
 * itself (not a NOSCRIPT answer). */
static void warm_up(fx_t *fx, lk_semaphore_t *s, const char *name, long long permits) {
  ASSERT_OK(sem_run_n(fx, lk_semaphore_try_set_permits, s, permits, NULL));
  ASSERT_OK(sem_acquire(fx, s, 1, 0));
  ASSERT_OK(sem_run_n(fx, lk_semaphore_release, s, 1, NULL));
  ASSERT_EQ(srv_count(fx->srv, name), permits);
}

static void start_acquire_two(lk_semaphore_t *s, sx_t *x) { sem_start_acquire(s, 2, 0, x); }

static void start_drain(lk_semaphore_t *s, sx_t *x) {
  memset(x, 0, sizeof *x);
  ASSERT_OK(lk_semaphore_drain(s, sem_cb, x));
}

/* start's command runs on the server, its reply is dropped with the
 * connection, and every new connection is refused from then on (until the
 * caller lifts it): the call ends LK_EUNKNOWN. */
static void unknown_with_server_unreachable(fx_t *fx, rt_proxy_t *p, lk_semaphore_t *s,
                                            void (*start)(lk_semaphore_t *, sx_t *), sx_t *x) {
  rt_proxy_refuse(p, 1); /* new connections only: this one stays */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  start(s, x);
  rt_run_until(&fx->loop, &x->done, 3000);
  ASSERT_EQ(x->status, LK_EUNKNOWN);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
}

/* The acquire runs on the server; its reply is dropped and the connection
 * cut; then every new connection is refused for many reconnect cycles. The
 * settle waits for the server however many cycles that takes, and gives the
 * permits back once it is reachable. */
TEST(unknown_acquire_settled_after_many_reconnects) {
  fx_t fx;
  rt_proxy_t *p = start_fast(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "umr");
  lk_client_stats_t st;
  sx_t a;
  warm_up(&fx, s, "umr", 3);
  unknown_with_server_unreachable(&fx, p, s, start_acquire_two, &a);
  ASSERT_EQ(srv_count(fx.srv, "umr"), 1); /* it took them */
  ASSERT_EQ(lk_semaphore_held(s), 0);
  fx_spin(&fx, rt_scaled_ms(1200)); /* tens of refused reconnects */
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.reconnects, 8);
  rt_proxy_refuse(p, 0);
  ASSERT(fx_wait_count(&fx, "umr", 3, 3000));
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "umr"), 3);
  finish_proxied(&fx, p);
}

/* The same with the server paused (SIGSTOP): the acquire sits in the
 * server's socket buffer, the client times out, every reconnect's handshake
 * times out, and the server runs the acquire once resumed. */
TEST(unknown_acquire_settled_after_server_pause) {
  fx_t fx;
  rt_proxy_t *p = start_fast(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "usp");
  sx_t a;
  warm_up(&fx, s, "usp", 3);
  rt_server_pause(fx.srv);
  sem_start_acquire(s, 2, 0, &a);
  rt_run_until(&fx.loop, &a.done, 3000);
  ASSERT_EQ(a.status, LK_EUNKNOWN);
  fx_spin(&fx, rt_scaled_ms(1500));
  rt_server_resume(fx.srv);
  fx_spin(&fx, rt_scaled_ms(300));
  ASSERT(fx_wait_count(&fx, "usp", 3, 3000));
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "usp"), 3);
  finish_proxied(&fx, p);
}

static void note_closed(lk_semaphore_t *s) { *(int *)lk_semaphore_get_data(s) = 1; }

/* Close with a settle still pending and the server out of reach: close
 * waits for it (within its bound), so closing the client right after loses
 * nothing. */
TEST(close_waits_for_pending_settle) {
  fx_t fx;
  rt_proxy_t *p = start_fast(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "cws");
  sx_t a;
  int closed = 0;
  warm_up(&fx, s, "cws", 3);
  unknown_with_server_unreachable(&fx, p, s, start_acquire_two, &a);
  ASSERT_EQ(srv_count(fx.srv, "cws"), 1);
  lk_semaphore_set_data(s, &closed);
  ASSERT_OK(lk_semaphore_close(s, note_closed));
  fx_spin(&fx, rt_scaled_ms(200));
  ASSERT_EQ(closed, 0); /* still waiting for the settle */
  rt_proxy_refuse(p, 0);
  rt_run_until(&fx.loop, &closed, 3000);
  ASSERT_EQ(closed, 1);
  ASSERT_EQ(srv_count(fx.srv, "cws"), 3); /* settled before close completed */
  finish_proxied(&fx, p);
}

/* --- drains whose reply is lost: the drain is numbered under the object's
 * request mark like an acquire --- */

/* Caches the drain script on the server (so the next EVALSHA is the drain
 * itself), leaving `permits` available and none held. */
static void warm_up_drain(fx_t *fx, lk_semaphore_t *s, const char *name, long long permits) {
  int64_t n = 0;
  ASSERT_OK(sem_run_n(fx, lk_semaphore_try_set_permits, s, permits, NULL));
  ASSERT_OK(sem_run(fx, lk_semaphore_drain, s, &n));
  ASSERT_EQ(n, permits);
  ASSERT_OK(sem_run_n(fx, lk_semaphore_release, s, permits, NULL));
  ASSERT_EQ(srv_count(fx->srv, name), permits);
}

/* The drain runs, its reply is lost with the connection: the resend finds
 * it applied and reports how many the first attempt took, taking nothing
 * more (permits added meanwhile stay available). */
TEST(lost_drain_reply_takes_once) {
  fx_t fx;
  rt_proxy_t *p = start_fast(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "ldr");
  sx_t d;
  warm_up_drain(&fx, s, "ldr", 3);
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  memset(&d, 0, sizeof d);
  ASSERT_OK(lk_semaphore_drain(s, sem_cb, &d));
  ASSERT(fx_wait_count(&fx, "ldr", 0, 3000));
  ASSERT_EQ(rt_cmd_int(fx.srv, "INCRBY ldr 2"), 2); /* another client's add */
  rt_run_until(&fx.loop, &d.done, 5000);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  ASSERT_OK(d.status);
  ASSERT_EQ(d.result, 3);
  ASSERT_EQ(lk_semaphore_held(s), 3);
  ASSERT_EQ(srv_count(fx.srv, "ldr"), 2);
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "ldr"), 5);
  finish_proxied(&fx, p);
}

/* The drain runs, its reply is lost, and the server stays out of reach for
 * every resend: LK_EUNKNOWN, the object holds nothing, and what the drain
 * took is given back once the server is reachable (as for an acquire). */
TEST(unknown_drain_given_back_by_settle) {
  fx_t fx;
  rt_proxy_t *p = start_fast(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "udg");
  sx_t d;
  warm_up_drain(&fx, s, "udg", 3);
  unknown_with_server_unreachable(&fx, p, s, start_drain, &d);
  ASSERT_EQ(srv_count(fx.srv, "udg"), 0); /* it took them */
  ASSERT_EQ(lk_semaphore_held(s), 0);
  fx_spin(&fx, rt_scaled_ms(300)); /* refused reconnects */
  ASSERT_EQ(srv_count(fx.srv, "udg"), 0);
  rt_proxy_refuse(p, 0);
  ASSERT(fx_wait_count(&fx, "udg", 3, 3000));
  /* The object goes on, under a fresh mark. */
  ASSERT_OK(sem_acquire(&fx, s, 3, 0));
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 3, NULL));
  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "udg"), 3);
  finish_proxied(&fx, p);
}

/* Close while a drain is in flight: the drain is canceled, and what it took
 * when it reaches the server is given back before close completes. */
TEST(close_during_drain_loses_no_permit) {
  fx_t fx;
  rt_proxy_t *p = start_proxied(&fx);
  lk_semaphore_t *s = fx_sem(&fx, "cdd");
  sx_t d;
  int closed = 0;
  warm_up_drain(&fx, s, "cdd", 4);
  rt_proxy_delay(p, 150);
  memset(&d, 0, sizeof d);
  ASSERT_OK(lk_semaphore_drain(s, sem_cb, &d));
  lk_semaphore_set_data(s, &closed);
  ASSERT_OK(lk_semaphore_close(s, note_closed));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(d.done, 1);
  ASSERT_EQ(d.status, LK_ECANCELED);
  ASSERT_EQ(srv_count(fx.srv, "cdd"), 4);
  rt_proxy_delay(p, 0);
  finish_proxied(&fx, p);
}
