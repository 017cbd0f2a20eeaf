/* Server-side faults and hostile replies (docs/reliability.md: faults T12,
 * T20, T21, T34, T36, T37, T38 and bad inputs 24-35) against the reentrant
 * lock and the watchdog. */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/scripts.h"
#include "fault_util.h"
#include "workers.h"

/* ---- T12: a slow script makes the server BUSY ---------------------------------------------- */

static int t12_port;
/* Writes first (so SCRIPT KILL could not stop it: UNKILLABLE): its start
 * in server time, then spins for 1.5 s. */
static void t12_busy_script(int index, void *arg) {
  (void)index;
  (void)arg;
  if (rt_busy_script(t12_port, 1500, "t12-busy") != 0)
    _exit(4);
}

TEST(t12_busy_script_is_transient_and_lease_lost_by_deadline) {
  fx_t fx;
  lk_client_opts_t o;
  rt_server_opts_t so;
  const char *extra[] = {"--busy-reply-threshold", "200", NULL};
  fu_logs_t logs = {"LK_ESERVERBUSY", 0, 0};
  rt_server_opts_init(&so);
  so.extra_args = extra;
  fx_start_server(&fx, &so);
  t12_port = rt_server_port(fx.srv);
  fx_client_opts(&fx, &o);
  o.default_lease_ms = 1000;
  o.reply_timeout_ms = 3000; /* BUSY answers come at once; no timeout needed */
  o.log = fu_on_log;
  o.log_arg = &logs;
  fx_start_client(&fx, &o);
  lk_lock_t *a = fx_lock(&fx, "t12");
  lk_lock_t *b = fx_lock(&fx, "t12");
  fu_lost_t lost = {0};
  lk_lock_set_lost_cb(a, fu_on_lost, &lost);
  ASSERT_OK(sx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
  rt_server_reset_stats(fx.srv);
  rt_worker_t w;
  ASSERT_OK(rt_worker_start(&w, 0, t12_busy_script, NULL));
  fu_spin(&fx.loop, 300); /* past the busy threshold */
  sx_t s;
  fu_start_acquire(b, 5000, 30000, 0, &s);
  /* The holder cannot renew: it is told by its local deadline, while the
   * script still runs. */
  rt_run_until(&fx.loop, &lost.calls, 3000);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_EQ(s.done, 0); /* BUSY is transient: the waiter keeps trying */
  ASSERT_EQ(rt_workers_wait(&w, 1, rt_scaled_ms(10000)), 0);
  ASSERT_EQ(rt_worker_exit_code(&w), 0);
  /* Safety, unscaled: every renewal the server answered ran before the
   * script, so was sent before it started, and its 1000 ms lease ends
   * before start + 1000. The script's start, not the fork: a starved
   * worker may start it late, and until it runs the holder renews. The
   * server's clock is the wall clock; lost.t_ns is monotonic. */
  {
    char *start_us = rt_cmd_str(fx.srv, "GET t12-busy"); /* "seconds micros" */
    ASSERT_NOT_NULL(start_us);
    long long sec = 0, usec = 0;
    ASSERT_EQ(sscanf(start_us, "%lld %lld", &sec, &usec), 2);
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    int64_t lost_wall_us = ((int64_t)wall.tv_sec * 1000000 + wall.tv_nsec / 1000) -
                           (int64_t)(uv_hrtime() - lost.t_ns) / 1000;
    int64_t after_start_ms = (lost_wall_us - (sec * 1000000 + usec)) / 1000;
    free(start_us);
    printf("lost %lld ms after the script started\n", (long long)after_start_ms);
    ASSERT_LT(after_start_ms, 1500);
  }
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_OK(s.status);
  ASSERT_GE(s.t_ns, lost.t_ns);
  ASSERT_GE(logs.matched, 1); /* the renewals' errors were classified BUSY */
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "script|kill"), 0); /* never sent */
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* ---- T20: a replica answers READONLY; failover without WAIT is unsafe ------------------------ */

static const char *const no_sync_delay[] = {"--repl-diskless-sync-delay", "0", NULL};

static rt_server_t *start_replica_of(int master_port) {
  char port[16];
  snprintf(port, sizeof port, "%d", master_port);
  const char *extra[] = {"--replicaof", "127.0.0.1", port, NULL};
  /* (The master is started with --repl-diskless-sync-delay 0.) */
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  so.extra_args = extra;
  rt_server_t *r = rt_server_start(&so);
  ASSERT_NOT_NULL(r);
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  for (;;) {
    char *st = rt_server_info(r, "replication", "master_link_status");
    int up = st != NULL && strcmp(st, "up") == 0;
    free(st);
    if (up)
      break;
    ASSERT_LT(rt_now_ms(), end);
    rt_sleep_ms(20);
  }
  return r;
}

TEST(t20_replica_answers_readonly_not_busy) {
  fx_t fx;
  lk_client_opts_t o;
  memset(&fx, 0, sizeof fx);
  ASSERT_OK(uv_loop_init(&fx.loop));
  rt_server_opts_t mo;
  rt_server_opts_init(&mo);
  mo.extra_args = no_sync_delay;
  rt_server_t *master = rt_server_start(&mo);
  ASSERT_NOT_NULL(master);
  fx.srv = start_replica_of(rt_server_port(master));
  fx_client_opts(&fx, &o);
  fx_start_client(&fx, &o);
  lk_lock_t *a = fx_lock(&fx, "t20");
  sx_t s;
  uint64_t t0 = uv_hrtime();
  fu_start_acquire(a, 2000, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_EQ(s.status, LK_EREADONLY); /* never "busy", never retried for 2 s */
  ASSERT_LT(fu_ms_between(t0, s.t_ns), rt_stall_bound_since_ns(t0, 300));
  ASSERT_EQ(lk_lock_hold_count(a), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
  rt_server_stop(master);
}

/* The expected hazard (reliability.md S1: no safety under failover): the
 * key never reached the replica, which is then promoted; a second client
 * acquires the same lock there while the first still believes it holds it.
 * latchkey has no WAIT mode (docs/reliability.md says why); this case keeps
 * the documentation honest and fails the day that changes. */
TEST(t20_failover_without_wait_admits_a_second_holder) {
  fx_t fx;
  lk_client_opts_t o;
  rt_server_opts_t mo;
  rt_server_opts_init(&mo);
  mo.extra_args = no_sync_delay;
  fx_start_server(&fx, &mo);
  /* The replica follows the master through a proxy, so replication can be
   * cut without touching the clients. */
  rt_proxy_t *link = rt_proxy_start(rt_server_port(fx.srv));
  ASSERT_NOT_NULL(link);
  rt_server_t *replica = start_replica_of(rt_proxy_port(link));
  fx_client_opts(&fx, &o);
  fx_start_client(&fx, &o);
  lk_lock_t *a = fx_lock(&fx, "t20f");
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, a, NULL)); /* connected */
  rt_proxy_blackhole(link, 1); /* replication stalls */
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  rt_server_kill(fx.srv, SIGKILL); /* the master dies with the only copy */
  ASSERT_EQ(rt_cmd_int(replica, "EXISTS t20f"), 0);
  char *ok = rt_cmd_str(replica, "REPLICAOF NO ONE");
  free(ok);
  lk_client_t *c2 = fu_client(&fx.loop, rt_server_port(replica), NULL);
  lk_lock_t *b = fu_lock(c2, "t20f");
  sx_t s;
  ASSERT_OK(sx_acquire_in(&fx.loop, b, 2000, 30000, &s)); /* the hazard */
  ASSERT(lk_lock_is_held(a)); /* a's local lease has not run out */
  ASSERT(lk_lock_is_held(b));
  fu_close_lock(&fx.loop, b);
  fu_close_client(&fx.loop, c2);
  /* a's release cannot reach the dead master: close gives up after the
   * reply timeout at worst. */
  fx_close_lock(&fx, a);
  lk_client_set_data(fx.c, &fx);
  fx.client_closed = 0;
  ASSERT_OK(lk_client_close(fx.c, fx_on_client_closed));
  rt_run_until(&fx.loop, &fx.client_closed, 10000);
  fx.c = NULL;
  rt_loop_close_clean(&fx.loop);
  rt_server_stop(fx.srv);
  rt_server_stop(replica);
  rt_proxy_stop(link);
}

/* ---- T21: an evicting policy: warned at connect; an evicted lock is lost ----------------------- */

TEST(t21_eviction_policy_warned_and_evicted_lock_reported_lost) {
  fx_t fx;
  lk_client_opts_t o;
  fu_logs_t logs = {"maxmemory-policy", 0, 0};
  /* Scaled, and long enough that a period plus the margin below stays well
   * short of the local deadline (a loss found only by it would come some
   * 2/3 of a lease or more after the eviction). */
  const int64_t lease = rt_scaled_ms(1200);
  fx_start_server(&fx, NULL);
  rt_server_maxmemory(fx.srv, 4 << 20, "volatile-lru");
  fx_client_opts(&fx, &o);
  o.default_lease_ms = lease;
  o.log = fu_on_log;
  o.log_arg = &logs;
  fx_start_client(&fx, &o);
  lk_lock_t *a = fx_lock(&fx, "t21");
  fu_lost_t lost = {0};
  lk_lock_set_lost_cb(a, fu_on_lost, &lost);
  ASSERT_OK(sx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(logs.matched, 1); /* warned once, at connect */
  /* volatile-ttl evicts the key closest to expiry first: the lock's. */
  rt_server_maxmemory(fx.srv, 4 << 20, "volatile-ttl");
  char *val = malloc(4096);
  ASSERT_NOT_NULL(val);
  memset(val, 'v', 4095);
  val[4095] = '\0';
  uint64_t gone = 0;
  for (int i = 0; i < 20000 && gone == 0; i++) {
    redisReply *r = rt_cmd(fx.srv, "SET fill:%d %s PX 600000", i, val);
    ASSERT_NOT_NULL(r);
    freeReplyObject(r);
    if (i % 20 == 0 && rt_cmd_int(fx.srv, "EXISTS t21") == 0)
      gone = uv_hrtime();
    if (i % 20 == 0)
      uv_run(&fx.loop, UV_RUN_NOWAIT);
  }
  free(val);
  ASSERT_GT(gone, 0);
  ASSERT_GT(rt_server_info_int(fx.srv, "stats", "evicted_keys"), 0);
  /* The watchdog notices within one renewal period (lease/3): liveness,
   * so it grows by the machine stalls measured meanwhile. Safety, strict:
   * the last renewal that worked was sent before the key was seen gone, so
   * the loss is reported within a lease of that. */
  int64_t mark = (int64_t)(gone / 1000000u);
  rt_run_until(&fx.loop, &lost.calls, 2000);
  ASSERT_LE(fu_ms_between(gone, lost.t_ns), lease);
  ASSERT_LE(fu_ms_between(gone, lost.t_ns), lease / 3 + rt_stall_bound_ms(mark, 200));
  ASSERT(!lk_lock_is_held(a));
  rt_server_maxmemory(fx.srv, 0, "noeviction");
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* ---- T36: ACL matrix ------------------------------------------------------------------------- */

/* A server with ACL user `user` (password "pw", rules acl) and client
 * options that log in as it; no client yet. */
static void start_acl_server(fx_t *fx, const char *user, const char *acl, lk_client_opts_t *o) {
  fx_start_server(fx, NULL);
  rt_server_acl_user(fx->srv, user, "pw", acl);
  fx_client_opts(fx, o);
  o->username = user;
  o->password = "pw";
}

/* start_acl_server, then the fixture's client, logged in as user. */
static void start_acl_client(fx_t *fx, const char *user, const char *acl) {
  lk_client_opts_t o;
  start_acl_server(fx, user, acl, &o);
  fx_start_client(fx, &o);
}

/* An acquire of l (budget wait_ms, 30 s lease) refused: it ends with
 * LK_ENOPERM within 3 s, and nothing of lock name is left on the server.
 * When it ended (uv_hrtime). */
static uint64_t acquire_is_enoperm(fx_t *fx, lk_lock_t *l, int64_t wait_ms) {
  sx_t s;
  fu_start_acquire(l, wait_ms, 30000, 0, &s);
  rt_run_until(&fx->loop, &s.done, 3000);
  ASSERT_EQ(s.status, LK_ENOPERM);
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", lk_lock_name(l)), 0);
  return s.t_ns;
}

TEST(t36_key_outside_acl_pattern_is_enoperm_at_once) {
  fx_t fx;
  /* Scripts declare the release channel as a key (as Redisson's do), so a
   * user needs key access to it too (docs/reliability.md, minimal ACL). */
  start_acl_client(&fx, "app", "~app:* ~redisson_lock__channel:{app:* &* +@all");
  lk_lock_t *in = fx_lock(&fx, "app:ok");
  ASSERT_OK(sx_acquire(&fx, in, 0, 30000)); /* connected, and allowed there */
  lk_lock_t *out = fx_lock(&fx, "other:x");
  lk_client_stats_t st0, st1;
  lk_client_get_stats(fx.c, &st0);
  uint64_t t0 = uv_hrtime();
  uint64_t refused = acquire_is_enoperm(&fx, out, 2000); /* permanent: no retry for 2 s */
  ASSERT_LT(fu_ms_between(t0, refused), rt_stall_bound_since_ns(t0, 200));
  lk_client_get_stats(fx.c, &st1);
  ASSERT_LE(st1.commands_sent - st0.commands_sent, 2);
  ASSERT_OK(sx_run(&fx, lk_lock_release, in, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){in, out, NULL});
}

/* The minimal ACL docs/reliability.md recommends for locks named app:*:
 * everything works (waits wake by message, fencing, renewal) and latchkey
 * logs no warning at all, so nothing it uses is missing. Script commands
 * are checked against the ACL like any other. */
#define MINIMAL_ACL                                                                      \
  "+evalsha +eval +script|load +info +client|setname +subscribe +unsubscribe +publish " \
  "+hget +hset +hexists +hincrby +exists +pexpire +pttl +del +type +get +set +incr "    \
  "+time "                                                                              \
  "~app:* ~redisson_lock_token:{app:* ~redisson_lock__channel:{app:* "                  \
  "&redisson_lock__channel:{app:* &latchkey:hb:*"

/* A command denied inside a script is a permission error, not "some error". */
TEST(t36_script_command_denied_is_enoperm) {
  fx_t fx;
  start_acl_client(&fx, "nohincr", "~* &* +@all -hincrby");
  lk_lock_t *a = fx_lock(&fx, "t36c");
  acquire_is_enoperm(&fx, a, 1000);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* Counts as fu_on_log does, and prints each warning: a failure then says
 * which one came (once under load, run 65 of docs/reliability.md's
 * rehearsals, its text was not kept). */
static void t36_on_log(lk_log_level_t level, const char *msg, void *arg) {
  if (level >= LK_LOG_WARN)
    fprintf(stderr, "latchkey warned: %s\n", msg);
  fu_on_log(level, msg, arg);
}

TEST(t36_minimal_acl_runs_everything_without_warnings) {
  fx_t fx;
  lk_client_opts_t o;
  fu_logs_t logs = {NULL, 0, 0};
  start_acl_server(&fx, "locker", MINIMAL_ACL, &o);
  o.default_lease_ms = 600;
  o.max_repoll_ms = 20000; /* waits must wake by message */
  o.log = t36_on_log;
  o.log_arg = &logs;
  fx_start_client(&fx, &o);
  lk_client_t *c2 = fu_client(&fx.loop, rt_server_port(fx.srv), &o);
  lk_lock_t *a = fx_lock(&fx, "app:t36");
  lk_lock_t *b = fu_lock(c2, "app:t36");
  int64_t last_token = 0;
  int excused = 0;
  const int64_t mark0 = rt_stall_mark();
  for (int i = 0; i < 25; i++) {
    sx_t s, t;
    /* A machine stall longer than a renewal's slack (600 - 200 ms) may take
     * a's hold before its release: the release then finds nothing (and the
     * library may warn of the loss); b is still admitted, tokens still grow. */
    const int64_t mark = rt_stall_mark();
    fu_start_acquire(a, 5000, LK_LEASE_DEFAULT, 1, &s);
    rt_run_until(&fx.loop, &s.done, 6000);
    if (s.status != 0)
      FAIL("acquire %d: %s (%s)", i, lk_err_name(s.status), lk_lock_error_text(a));
    ASSERT_GT(lk_lock_token(a), last_token);
    last_token = lk_lock_token(a);
    fu_start_acquire(b, 5000, LK_LEASE_DEFAULT, 1, &t); /* waits for a */
    fu_spin(&fx.loop, i == 0 ? 700 : 5); /* once across a renewal */
    uint64_t rel = uv_hrtime();
    const int rc = sx_try_run(&fx, lk_lock_release, a, NULL);
    if (!EXPECT_HOLD(rc == 0, mark, 600 - 200)) {
      excused = 1;
      ASSERT(rc == LK_ENOTOWNER || rc == LK_ELEASELOST);
      ASSERT_EQ(lk_lock_is_held(a), 0);
    }
    rt_run_until(&fx.loop, &t.done, 6000);
    ASSERT_OK(t.status);
    /* Woken, not polled (a liveness bound: it grows by measured stalls). */
    ASSERT_LT(fu_ms_between(rel, t.t_ns), rt_stall_bound_ms((int64_t)(rel / 1000000u), 500));
    ASSERT_GT(lk_lock_token(b), last_token);
    last_token = lk_lock_token(b);
    if (!EXPECT_HOLD(sx_try_run(&fx, lk_lock_release, b, NULL) == 0, mark, 600 - 200))
      excused = 1;
  }
  if (!excused && logs.warnings != 0)
    rt_stall_print("warned", mark0);
  if (!excused)
    ASSERT_EQ(logs.warnings, 0);
  fx_close_lock(&fx, a);
  fu_close_lock(&fx.loop, b);
  fu_close_client(&fx.loop, c2);
  fx_finish(&fx);
}

/* ---- T37: NOSCRIPT after SCRIPT FLUSH, renewal included ---------------------------------------- */

TEST(t37_script_flush_before_every_op_runs_each_once) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  /* Renewed every 500 ms (ticks 250 ms apart): a 1 s stall of a loaded
   * machine still leaves the hold in place (at 600 ms one did not). */
  o.default_lease_ms = 1500;
  fx_start_with(&fx, NULL, &o);
  lk_lock_t *a = fx_lock(&fx, "t37");
  fu_lost_t lost = {0};
  lk_lock_set_lost_cb(a, fu_on_lost, &lost);
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, a, NULL)); /* connected */
  lk_client_stats_t st;
  /* Each script is loaded on a connection before its first call there
   * (docs/client.md): used once each, so that every flush below leaves the
   * connection calling a script the server no longer has. */
  ASSERT_OK(sx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
  FX_EVENTUALLY(&fx, (lk_client_get_stats(fx.c, &st), st.renewal_commands >= 1), 3000);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  rt_server_reset_stats(fx.srv);
  uint64_t first_reloads = st.noscript_reloads;
  /* After a flush each call reaches a server without its script: it meets
   * NOSCRIPT and runs as EVAL, or (the connection saw NOSCRIPT for it
   * before) is preceded by a SCRIPT LOAD. Either way the server is given
   * the script again: given counts EVAL + SCRIPT LOAD. */
  long long given = 0, now_given;
  int64_t n = -1;
  for (int i = 1; i <= 3; i++) { /* acquire, then two re-entries */
    rt_server_script_flush(fx.srv);
    ASSERT_OK(sx_acquire(&fx, a, 0, LK_LEASE_DEFAULT));
    ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, a, &n));
    ASSERT_EQ(n, i); /* ran exactly once */
    now_given = rt_server_cmd_calls(fx.srv, "eval") + rt_server_cmd_calls(fx.srv, "script|load");
    ASSERT_GE(now_given, given + 1); /* + a renewal's, if one was due */
    ASSERT_LE(now_given, given + 2);
    given = now_given;
  }
  /* The renewal after a flush. */
  rt_server_script_flush(fx.srv);
  fu_spin(&fx.loop, 1000); /* a renewal is due within 750 ms */
  ASSERT_EQ(lost.calls, 0);
  now_given = rt_server_cmd_calls(fx.srv, "eval") + rt_server_cmd_calls(fx.srv, "script|load");
  ASSERT_GE(now_given, given + 1);
  given = now_given;
  for (int i = 2; i >= 0; i--) {
    rt_server_script_flush(fx.srv);
    ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
    now_given = rt_server_cmd_calls(fx.srv, "eval") + rt_server_cmd_calls(fx.srv, "script|load");
    ASSERT_GE(now_given, given + 1); /* + a renewal's, if one was due */
    ASSERT_LE(now_given, given + 2);
    given = now_given;
    if (i > 0) {
      ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, a, &n));
      ASSERT_EQ(n, i);
    }
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS t37"), 0);
  /* The server saw exactly one EVAL per NOSCRIPT, and the NOSCRIPT path
   * was taken (every other flush meets a script the connection believed
   * loaded). */
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "eval"), (long long)(st.noscript_reloads - first_reloads));
  ASSERT_GE(st.noscript_reloads - first_reloads, 2);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* ---- T38: LOADING ------------------------------------------------------------------------------ */

TEST(t38_loading_is_transient_and_bounded) {
  fx_t fx;
  lk_client_opts_t o;
  rt_server_opts_t so;
  /* Each key takes 20 us more to load (in practice about 100: sleep
   * granularity; some 2.5 s for 25k keys), and
   * clients are served every KiB of the file meanwhile. */
  const char *extra[] = {"--key-load-delay", "20", "--loading-process-events-interval-bytes",
                         "1024", NULL};
  rt_server_opts_init(&so);
  so.debug_command = 1;
  so.extra_args = extra;
  fx_start_server(&fx, &so);
  free(rt_cmd_str(fx.srv, "DEBUG POPULATE 25000 fill 10"));
  free(rt_cmd_str(fx.srv, "SAVE"));
  ASSERT_OK(rt_server_restart_loading(fx.srv));
  ASSERT_EQ(rt_server_info_int(fx.srv, "persistence", "loading"), 1);
  fx_client_opts(&fx, &o);
  fx_start_client(&fx, &o);
  lk_lock_t *a = fx_lock(&fx, "t38");
  sx_t s;
  uint64_t t0 = uv_hrtime();
  fu_start_acquire(a, 300, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 3000);
  if (s.status != LK_ELOADING && s.status != LK_ETIMEDOUT)
    FAIL("acquire while loading ended with %s", lk_err_name(s.status));
  ASSERT_GE(fu_ms_between(t0, s.t_ns), 300);
  ASSERT_LE(fu_ms_between(t0, s.t_ns), 300 + rt_stall_bound_since_ns(t0, 500));
  ASSERT_EQ(rt_server_info_int(fx.srv, "persistence", "loading"), 1); /* still */
  /* With a budget longer than the load, it gets the lock once loaded. */
  fu_start_acquire(a, 20000, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 25000);
  ASSERT_OK(s.status);
  ASSERT_EQ(rt_server_info_int(fx.srv, "persistence", "loading"), 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* ---- item 34: MISCONF (snapshots failing with stop-writes-on-bgsave-error) ---------------------- */

static void bgsave_and_wait(rt_server_t *s, const char *want) {
  redisReply *r = rt_cmd(s, "BGSAVE");
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  for (;;) {
    char *st = rt_server_info(s, "persistence", "rdb_last_bgsave_status");
    long long running = rt_server_info_int(s, "persistence", "rdb_bgsave_in_progress");
    int done = st != NULL && strcmp(st, want) == 0 && running == 0;
    free(st);
    if (done)
      return;
    ASSERT_LT(rt_now_ms(), end);
    rt_sleep_ms(10);
  }
}

TEST(misconf_refuses_acquire_and_reports_release_failure) {
  fx_t fx;
  rt_server_opts_t so;
  const char *extra[] = {"--enable-protected-configs", "yes", NULL};
  rt_server_opts_init(&so);
  so.extra_args = extra;
  fx_start(&fx, &so);
  lk_lock_t *a = fx_lock(&fx, "misconf-a");
  lk_lock_t *b = fx_lock(&fx, "misconf-b");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  /* Snapshots into an unwritable place fail; with save points set, Redis
   * then refuses writes. */
  free(rt_cmd_str(fx.srv, "CONFIG SET save %s", "3600 1"));
  free(rt_cmd_str(fx.srv, "CONFIG SET dir /proc"));
  bgsave_and_wait(fx.srv, "err");
  sx_t s;
  fu_start_acquire(b, 1000, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_EQ(s.status, LK_EMISCONF);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS misconf-b"), 0);
  /* The release fails too, and says so; the lock is still held. */
  ASSERT_EQ(sx_run(&fx, lk_lock_release, a, NULL), LK_EMISCONF);
  ASSERT_EQ(lk_lock_hold_count(a), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS misconf-a"), 1);
  /* Fixed: the same object releases normally. */
  free(rt_cmd_str(fx.srv, "CONFIG SET dir %s", rt_server_dir(fx.srv)));
  bgsave_and_wait(fx.srv, "ok");
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS misconf-a"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* ---- item 35: pointed at a cluster node ---------------------------------------------------------- */

/* A cluster node that serves no slot answers CLUSTERDOWN: the router sends
 * the command again (an election can end any moment) for as long as the
 * reply timeout allows, the acquire tries again within its budget, and it
 * ends with LK_ETIMEDOUT, the reason in its error text. Not a hang. */
TEST(cluster_node_with_no_slots_ends_a_budgeted_acquire_etimedout_within_budget) {
  fx_t fx;
  rt_server_opts_t so;
  lk_client_opts_t o;
  lk_client_stats_t st;
  const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", NULL};
  rt_server_opts_init(&so);
  so.extra_args = extra;
  lk_client_opts_init(&o);
  o.reply_timeout_ms = 1000;
  fx_start_with(&fx, &so, &o);
  lk_lock_t *a = fx_lock(&fx, "t-cluster");
  sx_t s;
  uint64_t t0 = uv_hrtime();
  int64_t mark = rt_stall_mark();
  fu_start_acquire(a, 2000, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, rt_scaled_ms(6000));
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(a), "CLUSTERDOWN")); /* no slot served */
  ASSERT_LT(fu_ms_between(t0, s.t_ns), rt_stall_bound_ms(mark, 2000 + 1000 + 500));
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.cluster_retries, 1);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* With cluster support turned off, the same node's answer ends the command
 * at once. */
TEST(cluster_support_off_gives_ecluster_at_once) {
  fx_t fx;
  rt_server_opts_t so;
  lk_client_opts_t o;
  const char *extra[] = {"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", NULL};
  rt_server_opts_init(&so);
  so.extra_args = extra;
  lk_client_opts_init(&o);
  o.cluster = LK_CLUSTER_OFF;
  fx_start_with(&fx, &so, &o);
  lk_lock_t *a = fx_lock(&fx, "t-cluster");
  sx_t s;
  uint64_t t0 = uv_hrtime();
  fu_start_acquire(a, 2000, 30000, 0, &s);
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_EQ(s.status, LK_ECLUSTER);
  ASSERT_LT(fu_ms_between(t0, s.t_ns), rt_stall_bound_since_ns(t0, 300));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

/* ---- items 24-26: unexpected, garbage and hostile replies ---------------------------------------- */

typedef struct {
  fx_t fx;
  rt_proxy_t *p;
  lk_lock_t *a;
  char match[64];
} hostile_t;

static void hostile_start(hostile_t *h, const char *name, int64_t reply_timeout_ms) {
  lk_client_opts_t o;
  memset(h, 0, sizeof *h);
  ASSERT_OK(uv_loop_init(&h->fx.loop));
  h->fx.srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(h->fx.srv);
  h->p = rt_proxy_start(rt_server_port(h->fx.srv));
  ASSERT_NOT_NULL(h->p);
  lk_client_opts_init(&o);
  o.port = rt_proxy_port(h->p);
  o.reply_timeout_ms = reply_timeout_ms;
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  fx_start_client(&h->fx, &o);
  h->a = fx_lock(&h->fx, name);
  ASSERT_OK(sx_run(&h->fx, lk_lock_is_locked, h->a, NULL)); /* connected */
  snprintf(h->match, sizeof h->match, "EVALSHA %s", lk__script_find("lock/acquire")->sha1);
}

static void hostile_finish(hostile_t *h) {
  fx_close_lock(&h->fx, h->a);
  fx_finish(&h->fx);
  rt_proxy_stop(h->p);
}

/* A reply of the wrong type to an acquire: LK_EUNKNOWN, not held, and the
 * hold the script did take is given back (the outcome was unknowable). It is
 * not the script's own reply (it lacks the request tag, docs/design.md
 * "Replies are attributable"), so the connection is dropped and the acquire
 * settled as after a lost reply. */
TEST(wrong_type_reply_to_acquire_is_unknown_and_given_back) {
  hostile_t h;
  hostile_start(&h, "t-wrongtype", 3000);
  const char fake[] = "+OK\r\n";
  rt_proxy_on_reply(h.p, h.match, 1, RT_PROXY_REPLACE, fake, strlen(fake));
  sx_t s;
  fu_start_acquire(h.a, 0, 30000, 0, &s);
  rt_run_until(&h.fx.loop, &s.done, 3000);
  /* A shape the script never sends: whether it ran is unknown, and a try
   * once has no budget for a resend. */
  ASSERT_EQ(s.status, LK_EUNKNOWN);
  ASSERT_EQ(lk_lock_hold_count(h.a), 0);
  ASSERT_GT(fu_wait_gone(&h.fx.loop, h.fx.srv, "t-wrongtype", 1000), 0);
  lk_client_stats_t st;
  lk_client_get_stats(h.fx.c, &st);
  ASSERT_EQ(st.unattributable_replies, 1);
  ASSERT_GE(st.reconnects, 1);
  /* The client carries on. */
  ASSERT_OK(sx_acquire(&h.fx, h.a, 0, 30000));
  ASSERT_OK(sx_run(&h.fx, lk_lock_release, h.a, NULL));
  hostile_finish(&h);
}

/* Bytes that are not RESP: the connection is dropped and re-made; the
 * acquire is resent within its budget and counted once. */
TEST(garbage_reply_drops_connection_and_acquire_counts_once) {
  hostile_t h;
  hostile_start(&h, "t-garbage", 3000);
  const char junk[] = "hello, this is not RESP\r\n";
  rt_proxy_on_reply(h.p, h.match, 1, RT_PROXY_REPLACE, junk, strlen(junk));
  sx_t s;
  fu_start_acquire(h.a, 3000, 30000, 0, &s);
  rt_run_until(&h.fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  char *v = rt_cmd_str(h.fx.srv, "HGET t-garbage %s", lk_lock_owner(h.a));
  ASSERT_STREQ(v, "1");
  free(v);
  lk_client_stats_t st;
  lk_client_get_stats(h.fx.c, &st);
  ASSERT_GE(st.reconnects, 1);
  ASSERT_OK(sx_run(&h.fx, lk_lock_release, h.a, NULL));
  ASSERT_EQ(rt_cmd_int(h.fx.srv, "EXISTS t-garbage"), 0);
  hostile_finish(&h);
}

/* A hostile multi-bulk header announcing 10^8 elements: a connection fault,
 * not 800 MB of memory. */
static long max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static void hostile_header_case(void) {
  hostile_t h;
  hostile_start(&h, "t-hostile", 1000);
  const char header[] = "*100000000\r\n";
  rt_proxy_on_reply(h.p, h.match, 1, RT_PROXY_REPLACE, header, strlen(header));
  long rss0 = max_rss_kb();
  sx_t s;
  fu_start_acquire(h.a, 3000, 30000, 0, &s);
  rt_run_until(&h.fx.loop, &s.done, 6000);
  ASSERT_OK(s.status); /* resent after the drop */
  ASSERT_LT(max_rss_kb() - rss0, 100 * 1024); /* no 800 MB element vector */
  char *v = rt_cmd_str(h.fx.srv, "HGET t-hostile %s", lk_lock_owner(h.a));
  ASSERT_STREQ(v, "1");
  free(v);
  ASSERT_OK(sx_run(&h.fx, lk_lock_release, h.a, NULL));
  hostile_finish(&h);
}

TEST(hostile_multibulk_header_is_a_connection_fault) { hostile_header_case(); }

/* The same under an address-space limit (ulimit -v): a clean failure, never
 * an abort. ASan reserves terabytes of address space and cannot start under
 * such a limit, so the case is skipped there. */
TEST(hostile_multibulk_header_under_ulimit_v) {
#if defined(__SANITIZE_ADDRESS__)
  printf("SKIP: ulimit -v cannot be used under AddressSanitizer\n");
#else
  struct rlimit rl = {(rlim_t)768 << 20, (rlim_t)768 << 20};
  ASSERT_OK(setrlimit(RLIMIT_AS, &rl));
  hostile_header_case();
#endif
}

/* ---- T34: the client's wall clock jumps (libfaketime) -------------------------------------------- */

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

static int t34_child(const char *port_s, const char *file) {
  uv_loop_t loop;
  lk_client_t *c;
  lk_lock_t *l;
  lk_client_opts_t o;
  fu_lost_t lost = {0};
  struct timespec r0, m0;
  clock_gettime(CLOCK_REALTIME, &r0);
  clock_gettime(CLOCK_MONOTONIC, &m0);
  uv_loop_init(&loop);
  lk_client_opts_init(&o);
  o.port = atoi(port_s);
  o.default_lease_ms = 600;
  if (lk_client_new(&loop, &o, &c) != 0 || lk_lock_new(c, "t34", &l) != 0)
    return 3;
  lk_lock_set_lost_cb(l, fu_on_lost, &lost);
  sx_t s;
  /* A machine stall longer than a renewal's slack (600 - 200 ms) may take
   * the hold (EXPECT_HOLD excuses it; the child has its own stall monitor):
   * the loss is then told once and the child ends early. */
  const int64_t mark = rt_stall_mark();
  if (sx_acquire_in(&loop, l, 0, LK_LEASE_DEFAULT, &s) != 0)
    return 4;
  int jumped_fwd = 0, jumped_back = 0, held = 1;
  for (int step = 0; step < 30; step++) { /* 3 s: +1 h at 1 s, -1 h at 2 s */
    if (step == 10 || step == 20) {
      FILE *f = fopen(file, "w");
      if (f == NULL)
        return 5;
      fprintf(f, "%s\n", step == 10 ? "+3600" : "-3600");
      fclose(f);
    }
    fu_spin(&loop, 100);
    if (!EXPECT_HOLD(lk_lock_is_held(l) && lost.calls == 0, mark, 600 - 200)) {
      rt_run_until(&loop, &lost.calls, 3000);
      if (lost.calls != 1 || lk_lock_is_held(l))
        return 6;
      held = 0;
      /* Tells the parent the renewals stopped early (its count of them). */
      char excused[700];
      snprintf(excused, sizeof excused, "%s.excused", file);
      FILE *x = fopen(excused, "w");
      if (x == NULL)
        return 11;
      fclose(x);
      break;
    }
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    double skew = (double)(r.tv_sec - r0.tv_sec) - (double)(m.tv_sec - m0.tv_sec);
    if (skew > 3000)
      jumped_fwd = 1;
    if (skew < -3000)
      jumped_back = 1;
  }
  if (held && (!jumped_fwd || !jumped_back))
    return 7; /* the clock never moved: nothing was tested */
  if (held && lost.calls != 0)
    return 8;
  sx_t r;
  memset(&r, 0, sizeof r);
  if (held && lk_lock_release(l, sx_cb, &r) != 0)
    return 9;
  if (held)
    rt_run_until(&loop, &r.done, 5000);
  if (held && r.status != 0)
    return 10;
  int closed = 0;
  lk_lock_set_data(l, &closed);
  lk_lock_close(l, fx_lock_closed_cb);
  rt_run_until(&loop, &closed, 5000);
  fu_close_client(&loop, c);
  uv_loop_close(&loop);
  return 0;
}

TEST(t34_client_wall_clock_jump_changes_nothing) {
  const char *child_port = getenv("LK_T34_PORT");
  if (child_port != NULL) {
    int rc = t34_child(child_port, getenv("LK_T34_FILE"));
    if (rc != 0)
      FAIL("faketime child failed at step %d", rc);
    return;
  }
#if defined(__SANITIZE_ADDRESS__)
  printf("SKIP: libfaketime cannot be preloaded ahead of the ASan runtime\n");
#else
  if (access(FAKETIME_LIB, R_OK) != 0)
    FAIL("%s missing: install libfaketime (tools/install-deps.sh does)", FAKETIME_LIB);
  rt_server_t *srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  char port[16], file[600];
  snprintf(port, sizeof port, "%d", rt_server_port(srv));
  snprintf(file, sizeof file, "%s/faketime", rt_server_dir(srv));
  FILE *f = fopen(file, "w");
  ASSERT_NOT_NULL(f);
  fprintf(f, "+0\n");
  fclose(f);
  rt_server_reset_stats(srv);
  fflush(NULL);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("LK_T34_PORT", port, 1);
    setenv("LK_T34_FILE", file, 1);
    setenv("LD_PRELOAD", FAKETIME_LIB, 1);
    setenv("FAKETIME_TIMESTAMP_FILE", file, 1);
    setenv("FAKETIME_NO_CACHE", "1", 1);
    setenv("FAKETIME_DONT_FAKE_MONOTONIC", "1", 1);
    execl("/proc/self/exe", "t34", "t34_client_wall_clock_jump_changes_nothing", (char *)NULL);
    _exit(127);
  }
  rt_child_track(pid);
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  rt_child_untrack(pid);
  ASSERT(WIFEXITED(st));
  ASSERT_EQ(WEXITSTATUS(st), 0);
  /* Renewal cadence on the server: one renewal per lease/3 (200 ms) over
   * 3 s, neither stopped nor storming through the jumps (not stopped: unless
   * the child's hold was lost to an excused stall, which ends it early). */
  long long renewals = rt_server_cmd_calls(srv, "evalsha") + rt_server_cmd_calls(srv, "eval");
  char excused[700];
  snprintf(excused, sizeof excused, "%s.excused", file);
  if (access(excused, F_OK) != 0)
    ASSERT_GE(renewals, 3 * 5 - 4);
  ASSERT_LE(renewals, 3 * 5 + 8);
  rt_server_stop(srv);
#endif
}

/* A command the router holds for a TRYAGAIN retry when the client closes,
 * and its connection drops during the close: the close still finishes (the
 * held command ends LK_ECANCELED) instead of waiting for ever with the
 * command stuck on a closed connection. Found by review; before the fix
 * close_cb never ran. */
TEST(close_with_a_cluster_retry_pending_and_its_connection_dropped_finishes) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_stats_t st;
  char match[64];
  const char tryagain[] = "-TRYAGAIN Multiple keys request during rehashing of slot\r\n";
  lk_client_opts_init(&o);
  o.cluster = LK_CLUSTER_ON; /* a standalone server: every slot is node 0's */
  o.reply_timeout_ms = 3000;
  rt_proxy_t *p = fx_start_proxied(&fx, &o);
  snprintf(match, sizeof match, "EVALSHA %s", lk__script_find("lock/acquire")->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_REPLACE, tryagain, strlen(tryagain));
  lk_lock_t *a = fx_lock(&fx, "t-close-retry");
  sx_t s;
  fu_start_acquire(a, 0, 30000, 0, &s);
  FX_EVENTUALLY(&fx, (lk_client_get_stats(fx.c, &st), st.cluster_retries > 0), 5000);
  ASSERT_OK(lk_lock_cancel(a));
  fx_close_lock(&fx, a);
  ASSERT_EQ(s.status, LK_ECANCELED);
  lk_client_set_data(fx.c, &fx);
  ASSERT_OK(lk_client_close(fx.c, fx_on_client_closed));
  rt_proxy_reset_all(p); /* the retried command's connection drops meanwhile */
  rt_run_until(&fx.loop, &fx.client_closed, rt_scaled_ms(5000));
  ASSERT_EQ(fx.client_closed, 1);
  fx.c = NULL;
  fx_finish(&fx);
  rt_proxy_stop(p);
}
