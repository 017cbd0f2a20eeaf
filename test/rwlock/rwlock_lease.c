/* Read/write lock leases: the watchdog keeps both sides, the read side's
 * renewal touches only its own holds (a SIGKILLed reader's hold expires
 * while a live reader keeps renewing: Redisson's "zombie reader"), lost
 * leases on both sides (deleted behind the holder's back, or a cut
 * connection), lost replies resent without counting twice, and stale
 * counts never taken for a grant. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lockfam_stale_count.h"
#include "proxy.h"
#include "rw_fixture.h"

typedef struct {
  int calls;
  int status;
  int held_r, held_w; /* lk_rwlock_is_held inside on_lost */
  uint64_t t_ns;
} lost_t;

static void on_lost(lk_rwlock_t *rw, int status, void *arg) {
  lost_t *x = arg;
  x->calls++;
  x->status = status;
  x->held_r = lk_rwlock_is_held(rw, RW_R);
  x->held_w = lk_rwlock_is_held(rw, RW_W);
  x->t_ns = uv_hrtime();
}

/* Loop + server + a client with the given watchdog lease. */
static void start_with_lease(fx_t *fx, int64_t lease_ms, int64_t reply_timeout_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.default_lease_ms = lease_ms;
  o.reconnect_max_ms = 100;
  if (reply_timeout_ms > 0) {
    o.reply_timeout_ms = reply_timeout_ms;
    o.connect_timeout_ms = reply_timeout_ms;
  }
  fx_start_with(fx, NULL, &o);
}

/* The same behind a fault proxy (returned), with no watchdog lease of its
 * own: a reply lost through it ends its connection at reply_timeout_ms. */
static rt_proxy_t *start_proxied_with_timeout(fx_t *fx, int64_t reply_timeout_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.reconnect_max_ms = 100;
  o.reply_timeout_ms = reply_timeout_ms;
  o.connect_timeout_ms = reply_timeout_ms;
  return fx_start_proxied(fx, &o);
}

/* A read/write lock of fx's whose losses *lost records (cleared). */
static lk_rwlock_t *rwlock_telling_losses(fx_t *fx, const char *name, lost_t *lost) {
  lk_rwlock_t *rw = fx_rwlock(fx, name);
  memset(lost, 0, sizeof(*lost));
  ASSERT_OK(lk_rwlock_set_lost_cb(rw, on_lost, lost));
  return rw;
}

static char *hold_key(const lk_rwlock_t *rw, const char *name, int i) {
  char *k = NULL;
  ASSERT(asprintf(&k, "{%s}:%s:rwlock_timeout:%d", name, lk_rwlock_owner(rw), i) > 0);
  return k;
}

static int exists(fx_t *fx, const char *key) { return (int)rt_cmd_int(fx->srv, "EXISTS %s", key); }

/* What the server has, read in one round trip: while the test waits for it
 * the loop does not run, so a renewal due meanwhile goes out late. */
typedef struct {
  long long hash, hold, hash_pttl, hold_pttl;
} rw_view_t;

static rw_view_t server_view(fx_t *fx, const char *hash, const char *hold) {
  rw_view_t v = {0, 0, 0, 0};
  redisReply *r = rt_cmd(fx->srv,
                         "EVAL %s 2 %s %s",
                         "return {redis.call('EXISTS', KEYS[1]), redis.call('EXISTS', KEYS[2]), "
                         "redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}",
                         hash, hold);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 4);
  for (size_t i = 0; i < 4; i++)
    ASSERT_EQ(r->element[i]->type, REDIS_REPLY_INTEGER);
  v.hash = r->element[0]->integer;
  v.hold = r->element[1]->integer;
  v.hash_pttl = r->element[2]->integer;
  v.hold_pttl = r->element[3]->integer;
  freeReplyObject(r);
  return v;
}

/* The longest time the test kept its loop from running for its own reads,
 * beyond the machine stall inside that time (which the stall monitor
 * already counts): renewals due in it went out that much later, so it
 * comes off the slack a renewal has. */
static rw_view_t timed_view(fx_t *fx, const char *hash, const char *hold, int64_t *own_ms) {
  const int64_t t0 = rt_now_ms();
  rw_view_t v = server_view(fx, hash, hold);
  const int64_t t1 = rt_now_ms();
  const int64_t own = (t1 - t0) - rt_stall_longest_between(t0, t1);
  if (own > *own_ms)
    *own_ms = own;
  return v;
}

/* Both sides kept alive for many leases, through a downgrade; every check
 * finds the hash and the hold key alive with a TTL within one lease. */
TEST(watchdog_keeps_both_sides) {
  const int64_t lease = 600;
  fx_t fx;
  lk_rwlock_t *a;
  lost_t lost;
  char *k;
  int64_t end;
  int checks = 0;
  start_with_lease(&fx, lease, 0);
  a = rwlock_telling_losses(&fx, "kept", &lost);
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  k = hold_key(a, "kept", 1);
  /* A machine stall longer than a renewal's slack may take the holds (the
   * object is lost as a whole); never renewed past a lease, and never
   * believed held where the server has no hash, either way. */
  const int64_t mark = rt_stall_mark(), slack = fx_renewal_slack(lease);
  int64_t own_ms = 0;
  int held = 1;
  end = rt_now_ms() + lease * 3;
  while (held && rt_now_ms() < end) {
    fx_spin(&fx, 20);
    const rw_view_t v = timed_view(&fx, "kept", k, &own_ms);
    ASSERT_LE(v.hold_pttl, lease);
    if (!v.hash)
      ASSERT_EQ(lk_rwlock_is_held(a, RW_W) || lk_rwlock_is_held(a, RW_R), 0);
    held = EXPECT_HOLD(v.hash == 1 && v.hold == 1 && lk_rwlock_is_held(a, RW_W) == 1 &&
                           lk_rwlock_is_held(a, RW_R) == 1 && lost.calls == 0,
                       mark, slack - own_ms);
    checks++;
  }
  /* Downgraded: only the read side is renewed from now on. */
  if (held)
    held = EXPECT_HOLD(rw_try_release(&fx, a, RW_W) == 0, mark, slack - own_ms);
  end = rt_now_ms() + lease * 3;
  while (held && rt_now_ms() < end) {
    fx_spin(&fx, 20);
    const rw_view_t v = timed_view(&fx, "kept", k, &own_ms);
    ASSERT_LE(v.hash_pttl, lease);
    held = EXPECT_HOLD(v.hold == 1 && lk_rwlock_is_held(a, RW_R) == 1 && lost.calls == 0, mark,
                       slack - own_ms);
    checks++;
  }
  if (!held) {
    FX_LOSS_TOLD_ONCE(&fx, lost.calls, lk_rwlock_is_held(a, RW_W) || lk_rwlock_is_held(a, RW_R));
    FX_EVENTUALLY(&fx, rt_server_count_keys(fx.srv, "*") == 0, 3000); /* given back */
    free(k);
    fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
    return;
  }
  ASSERT_EQ(lost.calls, 0);
  ASSERT_GT(checks, 20);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  /* Nothing is renewed after the release: the ring is empty. */
  {
    lk_client_stats_t st0, st1;
    lk_client_get_stats(fx.c, &st0);
    fx_spin(&fx, lease);
    lk_client_get_stats(fx.c, &st1);
    ASSERT_EQ(st1.renewal_commands, st0.renewal_commands);
  }
  free(k);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
}

/* A read hold whose key vanishes behind its back: the next renewal says so,
 * on_lost runs, the object gives its field back and refuses to release;
 * another reader is not affected. */
TEST(lost_read_side) {
  /* Scaled: b's hold must survive the whole case on its renewals. */
  const int64_t lease = rt_scaled_ms(600);
  fx_t fx;
  lk_rwlock_t *a, *b;
  lost_t lost;
  char *k;
  sx_t s;
  start_with_lease(&fx, lease, 0);
  a = rwlock_telling_losses(&fx, "lr", &lost);
  b = fx_rwlock(&fx, "lr");
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  const int64_t mark = rt_stall_mark(); /* b's hold from here on */
  k = hold_key(a, "lr", 1);
  freeReplyObject(rt_cmd(fx.srv, "DEL %s", k));
  rt_run_until(&fx.loop, &lost.calls, lease * 2);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_EQ(lost.held_r, 0);
  ASSERT_EQ(lk_rwlock_is_held(a, RW_R), 0);
  /* The give-back is on its way; b still holds. */
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS lr %s", lk_rwlock_owner(a)), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS lr %s", lk_rwlock_owner(b)), 1);
  ASSERT_EQ(lk_rwlock_release(a, RW_R, rw_cb, &s), LK_ELEASELOST);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 0);
  fx_spin(&fx, lease);
  /* b is not affected; a machine stall longer than a renewal's slack may
   * take its hold all the same (b has no on_lost: its release says so). */
  const int b_held = EXPECT_HOLD(lk_rwlock_is_held(b, RW_R) == 1, mark, fx_renewal_slack(lease));
  ASSERT_EQ(lost.calls, 1);
  /* A fresh start works. */
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  if (b_held)
    ASSERT_OK(rw_release(&fx, b, RW_R, NULL));
  else
    ASSERT_LOSS_CODE(rw_try_release(&fx, b, RW_R));
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  free(k);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, b, NULL});
}

/* The write side's lock deleted behind the holder's back (a foreign force
 * release, say): on_lost, and another writer may then enter. */
TEST(lost_write_side) {
  const int64_t lease = 300;
  fx_t fx;
  lk_rwlock_t *a, *b;
  lost_t lost;
  start_with_lease(&fx, lease, 0);
  a = rwlock_telling_losses(&fx, "lw", &lost);
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  freeReplyObject(rt_cmd(fx.srv, "DEL lw"));
  rt_run_until(&fx.loop, &lost.calls, lease * 2);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_EQ(lost.held_w, 0);
  b = fx_rwlock(&fx, "lw");
  ASSERT_OK(rw_acquire(&fx, b, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_rwlock_release(a, RW_W, rw_cb, NULL), LK_ELEASELOST);
  /* A re-entry that finds its earlier holds gone reports the loss too. */
  ASSERT_OK(rw_release(&fx, b, RW_W, NULL));
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  freeReplyObject(rt_cmd(fx.srv, "DEL lw"));
  ASSERT_EQ(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT), LK_ELEASELOST);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_W), 0);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 0);
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL));
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, b, NULL});
}


/* The connection goes silent: each side's on_lost comes strictly before
 * its local deadline (acquire + lease) when the loop runs on time, and never
 * after a timer due at that deadline when it does not; a writer on another
 * client never enters before the loss was told. */
static void cut_off(lk_rwlock_side_t side) {
  const int64_t lease = 600;
  fx_t fx;
  rt_proxy_t *p;
  lk_client_t *c2;
  lk_client_opts_t o;
  lk_rwlock_t *a, *w;
  lost_t lost;
  sx_t s, ws;
  lk_client_opts_init(&o);
  o.default_lease_ms = lease;
  o.reconnect_max_ms = 100;
  o.reply_timeout_ms = lease * 3; /* the loss must come from the deadline */
  p = fx_start_proxied(&fx, &o);
  c2 = fx_direct_client(&fx);
  a = rwlock_telling_losses(&fx, "cut", &lost);
  ASSERT_OK(lk_rwlock_new(c2, "cut", &w));
  uint64_t asked_ns = uv_hrtime(); /* no later than the acquire was sent */
  ASSERT_OK(rw_acquire_in(&fx.loop, a, side, 0, LK_LEASE_DEFAULT, &s));
  rt_proxy_blackhole(p, 1);
  {
    fx_probe_t pr;
    double late;
    /* The local deadline is (acquire sent) + lease - drift, before this. */
    fx_probe_start(&fx.loop, &pr, s.t_ns + (uint64_t)(lease - (lease / 100 + 2)) * 1000000u);
    rw_start(w, RW_W, rt_scaled_ms(10000), 5000, &ws);
    rt_run_until(&fx.loop, &lost.calls, lease * 3);
    ASSERT_EQ(lost.status, LK_ELEASELOST);
    late = fx_probe_lateness_ms(&fx.loop, &pr);
    printf("on_lost %.1f ms after the acquire; the deadline probe ran %.1f ms late\n",
           (double)(lost.t_ns - s.t_ns) / 1e6, late);
    /* Safety: never after the deadline's own timer... */
    ASSERT_LE(lost.t_ns, pr.fired_ns + 3000000u); /* both timers have ms steps */
    /* ...and strictly before the lease could end on the server whenever the
     * loop ran on time. */
    if (late < 5)
      ASSERT_LT((int64_t)(lost.t_ns - s.t_ns) / 1000000, lease);
    fx_probe_close(&fx.loop, &pr);
  }
  rt_run_until(&fx.loop, &ws.done, 10000);
  ASSERT_OK(ws.status);
  /* The writer (another client) got it after the holder's local deadline,
   * which counts from when the acquire was sent, not from its callback: a
   * stall while the grant's reply waited to be read makes the callback late
   * and the server's lease no longer (run 46: at least 123 ms). Not necessarily
   * after on_lost: when the loop wakes late, the writer's grant (I/O) and
   * the holder's deadline (a timer) can be handled in either order, and
   * only callbacks of the same client are ordered. */
  ASSERT_GT(ws.t_ns, asked_ns + (uint64_t)(lease - (lease / 100 + 2)) * 1000000u);
  ASSERT_EQ(lk_rwlock_is_held(a, side), 0);
  rt_proxy_blackhole(p, 0);
  {
    int closed = 0;
    lk_rwlock_set_data(w, &closed);
    ASSERT_OK(lk_rwlock_close(w, fx_rwlock_closed_cb));
    rt_run_until(&fx.loop, &closed, 5000);
  }
  fx_close_rwlock(&fx, a);
  fx_close_direct_client(&fx, c2);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

TEST(cut_off_reader_told_before_deadline) { cut_off(RW_R); }
TEST(cut_off_writer_told_before_deadline) { cut_off(RW_W); }

/* ---- the zombie reader ------------------------------------------------------------ */

/* A reader in a child process (its own loop and client, watchdog lease
 * `lease`) acquires, reports, and waits to be killed. */
static pid_t spawn_reader(fx_t *fx, int64_t lease, char *owner_out, size_t owner_len) {
  int pipefd[2];
  pid_t pid;
  ASSERT_OK(pipe(pipefd));
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    uv_loop_t loop;
    lk_client_t *c;
    lk_client_opts_t o;
    lk_rwlock_t *rw;
    sx_t cs;
    char buf[128];
    close(pipefd[0]);
    uv_loop_init(&loop);
    lk_client_opts_init(&o);
    o.port = rt_server_port(fx->srv);
    o.default_lease_ms = lease;
    if (lk_client_new(&loop, &o, &c) != 0 || lk_rwlock_new(c, "zombie", &rw) != 0 ||
        rw_acquire_in(&loop, rw, RW_R, 0, LK_LEASE_DEFAULT, &cs) != 0)
      _exit(3);
    snprintf(buf, sizeof(buf), "%s", lk_rwlock_owner(rw));
    if (write(pipefd[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
      _exit(4);
    /* Keep renewing until killed. */
    uv_run(&loop, UV_RUN_DEFAULT);
    _exit(5);
  }
  rt_child_track(pid);
  close(pipefd[1]);
  {
    char buf[128];
    ASSERT_EQ(read(pipefd[0], buf, sizeof(buf)), (ssize_t)sizeof(buf));
    snprintf(owner_out, owner_len, "%s", buf);
  }
  close(pipefd[0]);
  return pid;
}

TEST(dead_reader_expires_while_live_reader_renews) {
  const int64_t lease = 1500;
  fx_t fx;
  lk_rwlock_t *live, *w;
  char dead_owner[128], *dead_key, *live_key;
  pid_t pid;
  sx_t ws, rs;
  uint64_t t_kill, t_gone = 0, t_rel;
  int64_t end;
  start_with_lease(&fx, lease, 0);
  pid = spawn_reader(&fx, lease, dead_owner, sizeof(dead_owner));
  ASSERT(asprintf(&dead_key, "{zombie}:%s:rwlock_timeout:1", dead_owner) > 0);
  live = fx_rwlock(&fx, "zombie");
  w = fx_rwlock(&fx, "zombie");
  ASSERT_OK(rw_acquire(&fx, live, RW_R, 0, LK_LEASE_DEFAULT));
  live_key = hold_key(live, "zombie", 1);
  ASSERT_EQ(exists(&fx, dead_key), 1);
  kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, NULL, 0), pid);
  rt_child_untrack(pid);
  t_kill = uv_hrtime();
  /* A writer waits meanwhile: it must not enter while the live reader
   * holds. */
  rw_start(w, RW_W, rt_scaled_ms(30000), LK_LEASE_DEFAULT, &ws);
  /* The live reader renews for three leases; the dead one's hold is not
   * kept alive by it and expires within one lease of the kill. */
  end = rt_now_ms() + lease * 3;
  while (rt_now_ms() < end) {
    fx_spin(&fx, 10);
    ASSERT_EQ(exists(&fx, live_key), 1);
    ASSERT_EQ(lk_rwlock_is_held(live, RW_R), 1);
    ASSERT_EQ(ws.done, 0);
    if (t_gone == 0 && exists(&fx, dead_key) == 0)
      t_gone = uv_hrtime();
  }
  ASSERT_NE(t_gone, 0);
  /* The dead reader's last renewal was before the kill, so its key goes by
   * kill + lease; the margin covers the 10 ms polling and a preempted test
   * (renewals on its behalf would keep it from going at all: t_gone 0). */
  ASSERT_LE((int64_t)(t_gone - t_kill) / 1000000, lease + rt_stall_bound_since_ns(t_kill, 300));
  printf("dead reader's hold gone %.0f ms after the kill (lease %lld ms)\n",
         (double)(t_gone - t_kill) / 1e6, (long long)lease);
  /* The dead reader's field stays (nobody may remove another's field), but
   * once the live reader leaves the lock goes at once: its release finds no
   * live hold key. The writer enters promptly, not a lease later. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS zombie %s", dead_owner), 1);
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, live, RW_R, NULL));
  rt_run_until(&fx.loop, &ws.done, 10000);
  ASSERT_OK(ws.status);
  ASSERT_LT((int64_t)(ws.t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, lease / 3));
  ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  /* And readers get in again. */
  ASSERT_OK(rw_acquire_in(&fx.loop, live, RW_R, 0, LK_LEASE_DEFAULT, &rs));
  ASSERT_OK(rw_release(&fx, live, RW_R, NULL));
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  free(dead_key);
  free(live_key);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){live, w, NULL});
}

/* ---- lost replies ------------------------------------------------------------------- */

/* Waits until the server shows this owner's count on side == want, running
 * the loop. */
static void wait_server_count(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side, int want) {
  char field[160];
  snprintf(field, sizeof(field), "%s%s", lk_rwlock_owner(rw), side == RW_W ? ":write" : "");
  FX_EVENTUALLY(fx, rw_hget(fx, "lost-reply", field) == want, 3000);
}

/* The call started into *s (its command delayed by the proxy) reaches the
 * server, which counts `count` holds of side then; its reply is swallowed
 * (the connection silent past the reply timeout), and the resend after the
 * reconnect ends the call, successfully. */
static void reply_swallowed_then_resent(fx_t *fx, rt_proxy_t *p, lk_rwlock_t *a,
                                        lk_rwlock_side_t side, int count, sx_t *s) {
  wait_server_count(fx, a, side, count);
  rt_proxy_blackhole(p, 1);
  rt_proxy_delay(p, 0);
  fx_spin(fx, 500);
  rt_proxy_blackhole(p, 0);
  rt_run_until(&fx->loop, &s->done, 5000);
  ASSERT_OK(s->status);
}

/* An acquire and a release whose replies are swallowed: the connection
 * drops at the reply timeout, the client resends, and each is applied once
 * (the scripts recognise the earlier attempt by the expected count). */
static void lost_replies(lk_rwlock_side_t side) {
  fx_t fx;
  rt_proxy_t *p;
  lk_rwlock_t *a;
  sx_t s;
  p = start_proxied_with_timeout(&fx, 400);
  a = fx_rwlock(&fx, "lost-reply");
  ASSERT_OK(rw_acquire(&fx, a, side, 0, LK_LEASE_DEFAULT));
  /* The re-entry reaches the server; its reply is swallowed. */
  rt_proxy_delay(p, 150);
  rw_start(a, side, rt_scaled_ms(10000), LK_LEASE_DEFAULT, &s);
  reply_swallowed_then_resent(&fx, p, a, side, 2, &s);
  ASSERT_EQ(lk_rwlock_hold_count(a, side), 2);
  ASSERT_EQ(rw_server_holds(&fx, a, side), 2);
  if (side == RW_R) {
    char key[256];
    snprintf(key, sizeof(key), "{lost-reply}:%s:rwlock_timeout:3", lk_rwlock_owner(a));
    ASSERT_EQ(exists(&fx, key), 0);
  }
  /* Same for a release: the outer hold survives. */
  rt_proxy_delay(p, 150);
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_rwlock_release(a, side, rw_cb, &s));
  reply_swallowed_then_resent(&fx, p, a, side, 1, &s);
  ASSERT_EQ(s.result, 0);
  ASSERT_EQ(lk_rwlock_hold_count(a, side), 1);
  ASSERT_EQ(rw_server_holds(&fx, a, side), 1);
  ASSERT_OK(rw_release(&fx, a, side, NULL));
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

TEST(lost_replies_read_side_applied_once) { lost_replies(RW_R); }
TEST(lost_replies_write_side_applied_once) { lost_replies(RW_W); }

/* ---- stale counts ------------------------------------------------------------------ */

/* The scripts read "an earlier attempt whose reply was lost took the hold"
 * from the owner's count being one above the object's: on resends only. On a
 * first attempt such a count is a stale one (holds of this owner the object
 * no longer counts: a give-back that did not apply), and reading it as this
 * attempt's grant handed the counter's last token out again. These cases
 * make the stale hold behind the object's back. Explicit leases: no renewal
 * runs meanwhile. */

#define STALE_LEASE 30000

static void rw_start_fenced(lk_rwlock_t *rw, lk_rwlock_side_t side, int64_t wait_ms, sx_t *s) {
  lk_rwlock_opts_t o = rw_opts(wait_ms, STALE_LEASE);
  o.fenced = 1;
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_rwlock_acquire(rw, side, &o, rw_cb, s));
}

/* Nothing is left on the server of the lock name: only the token counter
 * its fenced grants used. */
static void only_the_token_counter_left(fx_t *fx, const char *name) {
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS %s", name), 0);
  ASSERT_EQ(rt_server_count_keys(fx->srv, "*"), 1);
}

static int rw_acquire_fenced(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t s;
  rw_start_fenced(rw, side, 0, &s);
  rt_run_until(&fx->loop, &s.done, 5000);
  return s.status;
}

/* A stale read hold of rw's owner: its count one up, and hold key i alive. */
static void make_stale_read_hold(fx_t *fx, lk_rwlock_t *rw, const char *name, int i) {
  char *k = hold_key(rw, name, i);
  ASSERT_EQ(rt_cmd_int(fx->srv, "HINCRBY %s %s 1", name, lk_rwlock_owner(rw)), i);
  freeReplyObject(rt_cmd(fx->srv, "SET %s 1 PX %d", k, STALE_LEASE));
  free(k);
}

/* The write side's row of the stale-count contract
 * (test/harness/lockfam_stale_count.h): fenced try-once acquires with an
 * explicit lease; the server's count through lk_rwlock_server_hold_count. */
static void *stale_open(fx_t *fx, const char *name) { return fx_rwlock(fx, name); }
static lk_handle_t *stale_handle(void *obj) { return lk_rwlock_handle(obj); }
static int stale_acquire_fenced(fx_t *fx, void *obj) { return rw_acquire_fenced(fx, obj, RW_W); }
static uint32_t stale_hold_count(void *obj) { return lk_rwlock_hold_count(obj, RW_W); }
static long long stale_server_holds(fx_t *fx, void *obj) { return rw_server_holds(fx, obj, RW_W); }
static int stale_release(fx_t *fx, void *obj, int64_t *freed) {
  return rw_release(fx, obj, RW_W, freed);
}
static void stale_close(fx_t *fx, void *obj) { fx_close_rwlock(fx, obj); }

static const lf_stale_kind_t stale_write = {
    ":write",         stale_open,         stale_handle,  stale_acquire_fenced,
    stale_hold_count, stale_server_holds, stale_release, stale_close};

TEST(write_first_attempt_never_takes_a_stale_count_for_its_grant) {
  lf_first_attempt_never_takes_a_stale_count(&stale_write, "stale-w");
}

TEST(read_first_attempt_never_takes_a_stale_count_for_its_grant) {
  fx_t fx;
  lk_rwlock_t *a = fx_start_rwlock(&fx, "stale-r");
  char *k2, *k3;
  int64_t freed = -1, t1;
  k2 = hold_key(a, "stale-r", 2);
  k3 = hold_key(a, "stale-r", 3);
  ASSERT_OK(rw_acquire_fenced(&fx, a, RW_R));
  t1 = lk_rwlock_token(a);
  ASSERT_GT(t1, 0);
  /* A read hold of this owner the object does not count, its key alive
   * (what an earlier resend would have found for its own grant). */
  make_stale_read_hold(&fx, a, "stale-r", 2);
  ASSERT_OK(rw_acquire_fenced(&fx, a, RW_R));
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 2);
  ASSERT_GT(lk_rwlock_token(a), t1); /* a fresh one, not the last one again */
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 2);
  /* Hold 2 is this grant's, with its own lease; no hold 3. */
  ASSERT_EQ(exists(&fx, k2), 1);
  ASSERT_EQ(exists(&fx, k3), 0);
  ASSERT_OK(rw_release(&fx, a, RW_R, &freed));
  ASSERT_EQ(freed, 0);
  ASSERT_OK(rw_release(&fx, a, RW_R, &freed));
  ASSERT_EQ(freed, 1);
  only_the_token_counter_left(&fx, "stale-r");
  free(k2);
  free(k3);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
}

/* The nemesis's case: a reader that holds nothing finds a stale hold of its
 * own (a lost give-back) while another reader holds. Taking it for its grant
 * reported the counter's value: the other reader's token. */
TEST(stale_reader_count_never_hands_out_another_readers_token) {
  fx_t fx;
  lk_rwlock_t *a, *b;
  int64_t freed = -1;
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "stale-2");
  b = fx_rwlock(&fx, "stale-2");
  ASSERT_OK(rw_acquire_fenced(&fx, b, RW_R));
  ASSERT_GT(lk_rwlock_token(b), 0);
  make_stale_read_hold(&fx, a, "stale-2", 1);
  ASSERT_OK(rw_acquire_fenced(&fx, a, RW_R));
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 1);
  ASSERT_GT(lk_rwlock_token(a), lk_rwlock_token(b)); /* its own, not b's */
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 1);
  /* a's one release takes its holds off: b alone keeps the lock, and its
   * release frees it. */
  ASSERT_OK(rw_release(&fx, a, RW_R, &freed));
  ASSERT_EQ(freed, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS stale-2 %s", lk_rwlock_owner(a)), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS stale-2"), 1);
  ASSERT_OK(rw_release(&fx, b, RW_R, &freed));
  only_the_token_counter_left(&fx, "stale-2");
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, b, NULL});
}

/* A stale count is restarted only while every hold the object counts is
 * alive: a counted hold whose key is gone is lost and is never revived by
 * the stale hold's live key. The re-entry reports the loss and gives every
 * hold back. */
TEST(stale_read_count_never_revives_dead_counted_holds) {
  fx_t fx;
  lk_rwlock_t *a = fx_start_rwlock(&fx, "stale-dead");
  char *k1, *k2;
  k1 = hold_key(a, "stale-dead", 1);
  k2 = hold_key(a, "stale-dead", 2);
  ASSERT_OK(rw_acquire_fenced(&fx, a, RW_R));
  make_stale_read_hold(&fx, a, "stale-dead", 2);
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL %s", k1), 1); /* the counted hold ends */
  ASSERT_EQ(rw_acquire_fenced(&fx, a, RW_R), LK_ELEASELOST);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 0);
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* the give-back is through */
  only_the_token_counter_left(&fx, "stale-dead");
  ASSERT_EQ(exists(&fx, k2), 0);
  free(k1);
  free(k2);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
}

/* A resent read acquire whose lost attempt did take the hold reports it once,
 * with a fresh token: between the lost reply and the resend another reader
 * took the counter's next token (here an INCR stands in for it), and the
 * counter's value is that reader's. */
TEST(resent_read_acquire_never_reports_another_readers_token) {
  fx_t fx;
  rt_proxy_t *p;
  lk_rwlock_t *a;
  sx_t s;
  int64_t freed = -1, lost, other;
  p = start_proxied_with_timeout(&fx, 300);
  a = fx_rwlock(&fx, "resent");
  /* The acquire runs on the server; its reply is dropped, the connection
   * stays until the reply timeout. */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_STALL, NULL, 0);
  rw_start_fenced(a, RW_R, rt_scaled_ms(10000), &s); /* a budget to resend in */
  while (rt_proxy_rule_state(p) != RT_PROXY_RULE_APPLIED) {
    ASSERT_EQ(s.done, 0);
    uv_run(&fx.loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
  lost = fx_token_counter(&fx, "resent"); /* the lost attempt's */
  ASSERT_GT(lost, 0);
  other = rt_cmd_int(fx.srv, "INCR redisson_lock_token:{resent}");
  ASSERT_EQ(other, lost + 1);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 1);
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 1); /* applied once */
  ASSERT_GT(lk_rwlock_token(a), other); /* neither the lost one nor the other's */
  ASSERT_OK(rw_release(&fx, a, RW_R, &freed));
  ASSERT_EQ(freed, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS resent"), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

static int g_closed;
static void closed_flag(lk_rwlock_t *rw) {
  (void)rw;
  g_closed = 1;
}
static void close_on_lost(lk_rwlock_t *rw, int status, void *arg) {
  lost_t *x = arg;
  x->calls++;
  x->status = status;
  ASSERT_OK(lk_rwlock_close(rw, closed_flag));
}

/* A re-entry finds its holds gone and on_lost closes the object right
 * there: the acquire still gets exactly one callback (canceled by the
 * close), then the close callback; nothing is left on the server. */
TEST(close_inside_on_lost_during_reentry) {
  fx_t fx;
  lk_rwlock_t *a;
  lost_t lost;
  sx_t s;
  memset(&lost, 0, sizeof(lost));
  g_closed = 0;
  start_with_lease(&fx, 30000, 0);
  a = fx_rwlock(&fx, "cl");
  ASSERT_OK(lk_rwlock_set_lost_cb(a, close_on_lost, &lost));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  freeReplyObject(rt_cmd(fx.srv, "DEL cl"));
  rw_start(a, RW_R, 0, LK_LEASE_DEFAULT, &s);
  rt_run_until(&fx.loop, &g_closed, 5000);
  ASSERT_EQ(lost.calls, 1);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(s.status, LK_ECANCELED);
  fx_spin(&fx, 50);
  ASSERT_EQ(s.calls, 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish(&fx);
}

/* A grant whose reply comes back after the hold's own local deadline (the
 * round trip took longer than the lease) is of no use: it is given back and
 * the acquire fails with LK_ELEASELOST, on both sides. */
TEST(grant_answered_after_its_deadline_is_given_back) {
  const int64_t lease = 150;
  fx_t fx;
  rt_proxy_t *p;
  lk_client_opts_t o;
  lk_rwlock_t *a;
  int side;
  lk_client_opts_init(&o);
  o.reply_timeout_ms = 5000;
  p = fx_start_proxied(&fx, &o);
  a = fx_rwlock(&fx, "late-grant");
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* connected */
  for (side = RW_R; side <= RW_W; side++) {
    rt_proxy_delay(p, (int)lease); /* each way: the reply comes 2 leases on */
    ASSERT_EQ(rw_acquire(&fx, a, (lk_rwlock_side_t)side, 0, lease), LK_ELEASELOST);
    rt_proxy_delay(p, 0);
    ASSERT_EQ(lk_rwlock_hold_count(a, (lk_rwlock_side_t)side), 0);
    ASSERT_EQ(lk_rwlock_is_held(a, (lk_rwlock_side_t)side), 0);
    ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL)); /* the give-back is through */
    ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  }
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

/* ---- an unknown outcome left open by a transient error ---- */

/* A waiting writer's winning attempt runs on the server but its reply is
 * lost with the connection; the resend (which finds that grant) is answered
 * LOADING, a transient error, so the writer sleeps with the outcome still
 * open. Canceled then, it must give back the hold that attempt took
 * (conditionally, by count), not leave it until its lease runs out. */
TEST(cancel_after_unknown_then_loading_gives_the_grant_back) {
  fx_t fx;
  rt_proxy_t *p;
  lk_client_opts_t o;
  lk_client_t *direct;
  lk_rwlock_t *holder, *waiter;
  sx_t s;
  static const char loading[] = "-LOADING Redis is loading the dataset in memory\r\n";
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 300; /* time to arm the next rule */
  o.reconnect_max_ms = 300;
  o.max_repoll_ms = 10000; /* the sleep after LOADING outlasts the test */
  p = fx_start_proxied(&fx, &o);
  direct = fx_direct_client(&fx);
  ASSERT_OK(lk_rwlock_new(direct, "unk", &holder));
  waiter = fx_rwlock(&fx, "unk");
  ASSERT_OK(rw_acquire(&fx, holder, RW_W, 0, 60000));
  rw_start(waiter, RW_W, 20000, 60000, &s);
  fx_wait_subscribers(&fx, "redisson_rwlock:{unk}", 1);
  fx_spin(&fx, 50);
  /* The waiter's next attempt wins; its reply is lost with the connection. */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_OK(rw_release(&fx, holder, RW_W, NULL));
  FX_WAIT_RULE_APPLIED(&fx, p, 3000);
  {
    char field[160];
    snprintf(field, sizeof field, "%s:write", lk_rwlock_owner(waiter));
    ASSERT_EQ(rw_hget(&fx, "unk", field), 1); /* the waiter's grant */
  }
  /* The resend after the reconnect finds it; its reply becomes LOADING. */
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_REPLACE, loading, sizeof loading - 1);
  FX_WAIT_RULE_APPLIED(&fx, p, 3000);
  fx_spin(&fx, 50);
  ASSERT_EQ(s.done, 0); /* asleep, outcome open */
  ASSERT_OK(lk_rwlock_cancel(waiter));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  /* Given back at once, not at the end of its 60 s lease. */
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS unk") == 0, 2000);
  fx_close_rwlock(&fx, waiter);
  fx_close_rwlock(&fx, holder);
  fx_close_direct_client(&fx, direct);
  fx_finish(&fx);
  rt_proxy_stop(p);
}

/* ---- a resend restarts the lease ---- */

/* The first attempt's reply is lost with its connection; the resend, a
 * reconnect later, finds the hold the first attempt took. The object dates
 * the hold's lease from the resend, so the server must restart it then too:
 * otherwise is_held() would say held for up to a reconnect's time after the
 * server's lease ended (found by review). */
static void resend_restarts_lease(lk_rwlock_side_t side) {
  const int64_t lease = 4000, gap = 1000; /* half the gap is the margin for a slow loop */
  fx_t fx;
  rt_proxy_t *p;
  lk_client_opts_t o;
  lk_rwlock_t *a;
  sx_t s;
  long long pttl;
  char *k;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = gap;
  o.reconnect_max_ms = gap;
  p = fx_start_proxied(&fx, &o);
  a = fx_rwlock(&fx, "rsl");
  /* Scripts cached: the next EVALSHA is the acquire itself. */
  ASSERT_OK(rw_acquire(&fx, a, side, 0, lease));
  ASSERT_OK(rw_release(&fx, a, side, NULL));
  rt_proxy_on_reply(p, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  const int64_t mark = rt_stall_mark();
  rw_start(a, side, 10000, lease, &s);
  rt_run_until(&fx.loop, &s.done, 10000);
  ASSERT_OK(s.status);
  ASSERT_EQ(rt_proxy_rule_state(p), RT_PROXY_RULE_APPLIED);
  k = side == RW_R ? hold_key(a, "rsl", 1) : strdup("rsl");
  pttl = rt_cmd_int(fx.srv, "PTTL %s", k);
  free(k);
  printf("PTTL %lld ms right after the resend's grant (lease %lld, reconnect %lld)\n", pttl,
         (long long)lease, (long long)gap);
  /* Without the restart the PTTL is at most lease - gap by now. A stall of
   * more than gap / 2 between the resend and the PTTL read blurs the two
   * (run under load): only such a measured stall excuses it. */
  EXPECT_HOLD(pttl > lease - gap / 2, mark, gap / 2);
  ASSERT_OK(rw_release(&fx, a, side, NULL));
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
  rt_proxy_stop(p);
}

TEST(read_resend_restarts_the_lease) { resend_restarts_lease(RW_R); }
TEST(write_resend_restarts_the_lease) { resend_restarts_lease(RW_W); }
