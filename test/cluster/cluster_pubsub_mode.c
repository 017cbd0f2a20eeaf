/* pubsub_mode on a 3-master cluster (issue 28, item 4). Redisson with
 * shardedSubscriptionMode OFF, and Redisson before 3.22, listen and publish
 * the classic way (SUBSCRIBE/PUBLISH); Redis delivers no message between
 * classic and sharded pub/sub, so in the default mode (sharded on a 7.0+
 * cluster) such a Redisson waiter behind a latchkey holder sleeps out the
 * holder's remaining lease, and a latchkey waiter behind such a Redisson
 * holder waits for its re-poll. LK_PUBSUB_CLASSIC subscribes and publishes
 * the classic way: both directions are woken by the release message.
 *
 * Every latchkey waiter has max_repoll_ms 30 s and every Redisson
 * (emulated, classic mode) waiter sleeps up to the holder's 30 s ttl, so
 * within the bounds below only a message can wake either. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "cluster_emu.h"
#include "cluster_fixture.h"
#include "fair_fixture.h"
#include "latch_fixture.h"
#include "redisson_emu.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

#define REPOLL_MS 30000
#define LEASE 30000
#define WAIT 20000
/* A message-driven handoff takes milliseconds; anything else 30 s. */
#define WAKE_MS 2000
/* The mode the tests below run latchkey in. */
#define MODE LK_PUBSUB_CLASSIC

#define EMU_UUID "c1a55e5e-0000-4000-8000-000000000028"
#define EMU_TID 11

static void mode_opts(lk_client_opts_t *o, int mode) {
  lk_client_opts_init(o);
  o->max_repoll_ms = REPOLL_MS;
  o->pubsub_mode = mode;
}

/* The fixture with its client in `mode`, and the emulator in classic mode
 * (Redisson's shardedSubscriptionMode OFF). */
static void start(cfx_t *f, int mode) {
  lk_client_opts_t o;
  rt_emu_set_sharded(0);
  mode_opts(&o, mode);
  cfx_start(f, 0, &o);
}

/* PUBSUB CHANNELS / SHARDCHANNELS pattern on node i: how many match. */
static long long channels_on(cfx_t *f, int i, const char *verb, const char *pattern) {
  redisReply *r = rt_cmd(cfx_srv(f, i), "PUBSUB %s %s", verb, pattern);
  long long n;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  n = (long long)r->elements;
  freeReplyObject(r);
  return n;
}

/* Some channel of name is subscribed the classic way on node m (the
 * slot's master) and none the sharded way on any up node. */
static int classic_on(cfx_t *f, int m, const char *name) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "*%s*", name);
  for (int i = 0; i < rt_cluster_size(f->cl); i++)
    if (rt_cluster_up(f->cl, i) && channels_on(f, i, "SHARDCHANNELS", pattern) != 0)
      return 0;
  return channels_on(f, m, "CHANNELS", pattern) >= 1;
}

/* A classic subscriber of channel on another master than m: it hears a
 * release only if the release PUBLISHed (broadcast over the cluster). */
static redisContext *far_listener(cfx_t *f, int m, const char *channel) {
  int other = f->masters[0] != m ? f->masters[0] : f->masters[1];
  redisContext *sub = rt_rlock_connect(rt_cluster_port(f->cl, other));
  rt_sub_subscribe(sub, channel);
  return sub;
}

static void expect_heard(redisContext *sub, const char *what) {
  redisReply *m = rt_sub_next_message(sub, rt_scaled_ms(WAKE_MS));
  if (m == NULL)
    FAIL("%s: no classic message reached another master", what);
  ASSERT_STREQ(m->element[0]->str, "message");
  freeReplyObject(m);
  redisFree(sub);
}

static double ms_since(uint64_t t0) { return (double)(uv_hrtime() - t0) / 1e6; }

/* ---- Redisson (emulated, classic) waiting behind latchkey ---- */

typedef struct emu_waiter_s {
  int port;
  const char *name;
  int64_t timeout_ms;
  int rc;
  uint64_t t_start_ns, t_acq_ns;
  atomic_int done;
  atomic_int started; /* connected, about to call lock() */
  atomic_int sleeps;  /* lock() waits for a message after a failed try */
} emu_waiter_t;

static void *emu_waiter_main(void *arg) {
  emu_waiter_t *w = arg;
  redisContext *c = rt_rlock_connect(w->port);
  redisContext *sub = rt_rlock_connect(w->port);
  w->t_start_ns = uv_hrtime();
  atomic_store(&w->started, 1);
  w->rc = rt_rlock_lock_blocking_counted(c, sub, w->name, EMU_UUID, EMU_TID, LEASE, w->timeout_ms,
                                         &w->sleeps);
  w->t_acq_ns = uv_hrtime();
  redisFree(sub);
  redisFree(c);
  atomic_store(&w->done, 1);
  return NULL;
}

/* latchkey (client in `mode`) holds a lock on master m with a 30 s lease;
 * the emulator blocks in lock() with a classic SUBSCRIBE on m, for at most
 * emu_timeout_ms (it sleeps until a message or that bound, then tries once
 * more); latchkey releases. Returns the emulator's lock() result (0
 * acquired, -1 timed out), its time from the release in *ms and how long
 * its lock() took in all in *slept. */
static int emu_behind_latchkey(int mode, int64_t emu_timeout_ms, double *ms, double *slept) {
  cfx_t f;
  char name[64], channel[256];
  emu_waiter_t ew;
  pthread_t th;
  start(&f, mode);
  int m = f.masters[2];
  cfx_name_on(&f, m, "psm-emu-w-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
  lk_lock_t *h = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, h, 0, LEASE));
  memset(&ew, 0, sizeof ew);
  ew.port = rt_cluster_port(f.cl, m);
  ew.name = name;
  ew.timeout_ms = emu_timeout_ms;
  atomic_init(&ew.done, 0);
  atomic_init(&ew.started, 0);
  atomic_init(&ew.sleeps, 0);
  ASSERT_OK(pthread_create(&th, NULL, emu_waiter_main, &ew));
  /* The emulator asleep on its subscription. Not the subscription seen on
   * the server: after it, the emulator tries once more before it sleeps,
   * and a release before that try let the try take the lock at once (in
   * the Valkey lane the auto-mode emulator had it 1 ms after the release:
   * no message, the try). */
  FX_EVENTUALLY(&f.fx, atomic_load(&ew.sleeps) >= 1 && classic_on(&f, m, name), 5000);
  if (atomic_load(&ew.done))
    FAIL("the emulator's lock() returned (rc %d) while latchkey held the lock", ew.rc);
  uint64_t t0 = cfx_release_last(&f, h);
  int64_t end = rt_now_ms() + emu_timeout_ms + rt_scaled_ms(5000);
  while (!atomic_load(&ew.done) && rt_now_ms() < end)
    rt_sleep_ms(1);
  if (!atomic_load(&ew.done))
    FAIL("the emulator's lock() did not return");
  ASSERT_OK(pthread_join(th, NULL));
  *ms = cfx_ms_since(t0, ew.t_acq_ns);
  *slept = cfx_ms_since(ew.t_start_ns, ew.t_acq_ns);
  printf("the emulator's lock() began %.1f ms before the release\n", cfx_ms_since(ew.t_start_ns, t0));
  if (ew.rc == 0) {
    redisContext *emu = rt_rlock_connect(ew.port);
    ASSERT_EQ(rt_rlock_unlock(emu, name, EMU_UUID, EMU_TID), 1);
    redisFree(emu);
  } else {
    ASSERT_EQ(cfx_exists(&f, m, name), 0); /* free all along: nobody said so */
  }
  cfx_finish_locks(&f, (lk_lock_t *[]){h, NULL});
  return ew.rc;
}

/* Classic mode: latchkey's release PUBLISHes, the classic Redisson waiter
 * has the lock at once instead of after the 30 s lease. */
TEST(classic_mode_release_wakes_a_classic_redisson_waiter) {
  double ms = 0, slept = 0;
  ASSERT_EQ(emu_behind_latchkey(MODE, rt_scaled_ms(10000), &ms, &slept), 0);
  printf("the classic emulator had the lock %.2f ms after latchkey's release\n", ms);
  ASSERT_LT(ms, rt_scaled_ms(WAKE_MS));
}

/* Why the mode exists: in auto mode the release SPUBLISHes, which a
 * classic subscriber never hears; the emulator, told nothing, sleeps out
 * its whole bound (3 s here; in Redisson the 30 s lease's remainder) and
 * only then finds the lock free. */
TEST(auto_mode_release_does_not_reach_a_classic_redisson_waiter) {
  double ms = 0, slept = 0;
  int64_t bound = rt_scaled_ms(3000);
  ASSERT_EQ(emu_behind_latchkey(LK_PUBSUB_AUTO, bound, &ms, &slept), 0);
  printf("auto mode: the classic emulator got the lock %.0f ms after the release, "
         "when its %lld ms sleep ran out\n",
         ms, (long long)bound);
  /* Not woken: the emulator sleeps out its bound (a message would come
   * within milliseconds of the release). It began to sleep before the
   * release, so the release is over before the bound has run. */
  ASSERT_GE(slept, (double)bound - 2.0); /* its deadline is in whole ms */
  ASSERT_GT(ms, 0.0);
}

/* ---- latchkey waiting behind Redisson (emulated, classic) ---- */

/* The emulator holds on master m and unlocks with PUBLISH: the latchkey
 * waiter, subscribed the classic way on m, gets in at once. */
TEST(classic_redisson_release_wakes_a_classic_mode_latchkey_waiter) {
  cfx_t f;
  char name[64];
  sx_t sw;
  start(&f, MODE);
  int m = f.masters[1];
  cfx_name_on(&f, m, "psm-emu-h-", name, sizeof name);
  redisContext *emu = cfx_emu_hold(&f, m, name, EMU_UUID, EMU_TID, LEASE);
  lk_lock_t *w = fx_lock(&f.fx, name);
  cfx_acquire_start(w, WAIT, LEASE, 0, &sw);
  FX_EVENTUALLY(&f.fx, classic_on(&f, m, name), 5000);
  ASSERT_EQ(sw.done, 0);
  cfx_emu_unlock_wakes(&f, emu, name, EMU_UUID, EMU_TID, &sw, WAKE_MS,
                       "the classic emulator's unlock");
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, w, NULL));
  redisFree(emu);
  cfx_finish_locks(&f, (lk_lock_t *[]){w, NULL});
}

/* ---- every other primitive that publishes, classic on a cluster ---- */

/* The call the release sent at t0 lets in (its outcome in s) gets in
 * within WAKE_MS: by the message, not a re-poll. who, by: for the note. */
static void in_by_message(cfx_t *f, sx_t *s, uint64_t t0, const char *who, const char *by) {
  rt_run_until(&f->fx.loop, &s->done, rt_scaled_ms(10000));
  ASSERT_OK(s->status);
  printf("%s %.2f ms after the %s\n", who, ms_since(t0), by);
  ASSERT_LT(cfx_ms_since(t0, s->t_ns), rt_scaled_ms(WAKE_MS));
}

/* A second client in the same mode, seeded at another master. */
static lk_client_t *peer(cfx_t *f, int mode) {
  lk_client_opts_t o;
  mode_opts(&o, mode);
  return cfx_client(f, f->masters[2], &o);
}

TEST(classic_mode_fair_release_wakes_the_next_waiter) {
  cfx_t f;
  char name[64];
  fsx_t ws;
  start(&f, MODE);
  lk_client_t *c2 = peer(&f, MODE);
  int m = f.masters[0];
  cfx_name_on(&f, m, "psm-fair-", name, sizeof name);
  lk_fair_t *h = fx_fair(&f.fx, name), *w = NULL;
  ASSERT_OK(lk_fair_new(c2, name, &w));
  ASSERT_OK(fsx_acquire(&f.fx, h, 0, LEASE));
  fsx_start(w, WAIT, LEASE, 0, &ws);
  FX_EVENTUALLY(&f.fx, classic_on(&f, m, name), 5000);
  ASSERT_EQ(ws.done, 0);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(fsx_run(&f.fx, lk_fair_release, h, NULL));
  in_by_message(&f, &ws, t0, "fair: the next waiter had the lock", "release");
  ASSERT_OK(fsx_run(&f.fx, lk_fair_release, w, NULL));
  fx_close_fair(&f.fx, h);
  fx_close_fair(&f.fx, w);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

TEST(classic_mode_semaphore_release_wakes_a_waiter) {
  cfx_t f;
  char name[64], channel[128];
  sx_t xa, xb;
  int64_t res = 0;
  start(&f, MODE);
  lk_client_t *c2 = peer(&f, MODE);
  int m = f.masters[1];
  cfx_name_on(&f, m, "psm-sem-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_sc:{%s}", name);
  lk_semaphore_t *a = fx_sem(&f.fx, name), *b = NULL;
  ASSERT_OK(lk_semaphore_new(c2, name, &b));
  ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_try_set_permits, a, 1, &res));
  ASSERT_EQ(res, 1);
  ASSERT_EQ(sem_acquire_in(&f.fx.loop, a, 1, 0, &xa), 0);
  sem_start_acquire(b, 1, WAIT, &xb);
  FX_EVENTUALLY(&f.fx, classic_on(&f, m, name), 5000);
  ASSERT_EQ(xb.done, 0);
  redisContext *far = far_listener(&f, m, channel);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_release, a, 1, NULL));
  in_by_message(&f, &xb, t0, "semaphore: the waiter had its permit", "release");
  expect_heard(far, "semaphore release");
  ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_release, b, 1, NULL));
  fx_close_sem(&f.fx, a);
  fx_close_sem(&f.fx, b);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

TEST(classic_mode_latch_count_down_wakes_an_await) {
  cfx_t f;
  char name[64], channel[128];
  int64_t res = 0;
  lx_t aw;
  start(&f, MODE);
  lk_client_t *c2 = peer(&f, MODE);
  int m = f.masters[2];
  cfx_name_on(&f, m, "psm-latch-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_countdownlatch__channel__{%s}", name);
  lk_latch_t *waiter = lx_new(&f.fx, name, 0), *counter = NULL;
  ASSERT_OK(lk_latch_new(c2, name, NULL, &counter));
  ASSERT_OK(lx_set(&f.fx.loop, waiter, 1, &res));
  ASSERT_EQ(res, 1);
  lx_await_start(waiter, WAIT, &aw);
  FX_EVENTUALLY(&f.fx, classic_on(&f, m, name), 5000);
  ASSERT_EQ(aw.done, 0);
  redisContext *far = far_listener(&f, m, channel);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(lx_run(&f.fx.loop, lk_latch_count_down, counter, &res));
  ASSERT_EQ(res, 0);
  in_by_message(&f, &aw, t0, "latch: the await returned", "count down");
  expect_heard(far, "latch count down");
  lx_close(&f.fx.loop, waiter);
  lx_close(&f.fx.loop, counter);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

TEST(classic_mode_rwlock_write_release_wakes_a_reader) {
  cfx_t f;
  char name[64], channel[128];
  sx_t sw, sr;
  start(&f, MODE);
  lk_client_t *c2 = peer(&f, MODE);
  int m = f.masters[0];
  cfx_name_on(&f, m, "psm-rw-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_rwlock:{%s}", name);
  lk_rwlock_t *wr = fx_rwlock(&f.fx, name), *rd = NULL;
  ASSERT_OK(lk_rwlock_new(c2, name, &rd));
  ASSERT_OK(rw_acquire_in(&f.fx.loop, wr, LK_RW_WRITE, 0, LEASE, &sw));
  rw_start(rd, LK_RW_READ, WAIT, LEASE, &sr);
  FX_EVENTUALLY(&f.fx, classic_on(&f, m, name), 5000);
  ASSERT_EQ(sr.done, 0);
  redisContext *far = far_listener(&f, m, channel);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(rw_release(&f.fx, wr, LK_RW_WRITE, NULL));
  in_by_message(&f, &sr, t0, "rwlock: the reader got in", "write release");
  expect_heard(far, "write release");
  ASSERT_OK(rw_release(&f.fx, rd, LK_RW_READ, NULL));
  fx_close_rwlock(&f.fx, wr);
  fx_close_rwlock(&f.fx, rd);
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- what each mode costs ---- */

/* Commands the servers ran (INFO commandstats, every up node), without the
 * test's own probes, the clients' periodic ones (topology reads, the
 * heartbeat's PING) and their one-off set-up (SCRIPT LOAD on each new
 * connection): script calls and the calls they make, (S)SUBSCRIBE. */
static long long server_calls(cfx_t *f, long long *pub, long long *sub, long long *scripts) {
  static const char *const skip[] = {"info",  "config", "cluster", "pubsub",  "ping",
                                     "client", "hello", "auth",    "select", "readonly",
                                     "script"};
  long long n = 0;
  *pub = *sub = *scripts = 0;
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    redisReply *r = rt_cmd(cfx_srv(f, i), "INFO commandstats");
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    for (const char *p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
      char cmd[64];
      long long calls;
      if (sscanf(p, "cmdstat_%63[^:]:calls=%lld", cmd, &calls) != 2)
        continue;
      int skipped = 0;
      for (size_t k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
        skipped |= strncmp(cmd, skip[k], strlen(skip[k])) == 0;
      if (skipped)
        continue;
      n += calls;
      if (strcmp(cmd, "publish") == 0 || strcmp(cmd, "spublish") == 0)
        *pub += calls;
      if (strcmp(cmd, "subscribe") == 0 || strcmp(cmd, "ssubscribe") == 0)
        *sub += calls;
      if (strcmp(cmd, "evalsha") == 0 || strcmp(cmd, "eval") == 0)
        *scripts += calls;
    }
    freeReplyObject(r);
  }
  return n;
}

/* Pub/sub messages received over the cluster bus, every up node. */
static long long bus_publish_messages(cfx_t *f) {
  long long n = 0;
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    redisReply *r = rt_cmd(cfx_srv(f, i), "CLUSTER INFO");
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    static const char *const fields[] = {"cluster_stats_messages_publish_received:",
                                         "cluster_stats_messages_publishshard_received:"};
    for (int k = 0; k < 2; k++) {
      const char *p = strstr(r->str, fields[k]);
      if (p != NULL)
        n += strtoll(p + strlen(fields[k]), NULL, 10);
    }
    freeReplyObject(r);
  }
  return n;
}

/* CPU the server processes used so far (INFO cpu, user + system, every up
 * node), in microseconds: what the bus traffic costs shows here, not in
 * commandstats. */
static double server_cpu_us(cfx_t *f) {
  double us = 0;
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    static const char *const fields[] = {"used_cpu_user", "used_cpu_sys"};
    for (int k = 0; k < 2; k++) {
      char *v = rt_server_info(cfx_srv(f, i), "cpu", fields[k]);
      ASSERT_NOT_NULL(v);
      us += strtod(v, NULL) * 1e6;
      free(v);
    }
  }
  return us;
}

static int subscribed(cfx_t *f, int m, const char *name, int mode) {
  char pattern[128];
  snprintf(pattern, sizeof pattern, "*%s*", name);
  if (mode == LK_PUBSUB_CLASSIC)
    return classic_on(f, m, name);
  return channels_on(f, m, "SHARDCHANNELS", pattern) >= 1;
}

/* One client holds, another waits and is handed the lock by the release
 * message, `rounds` times on one name; returns the commands per
 * acquisition, and in *bus the bus messages per release. */
static double handoff_cost(cfx_t *f, int mode, int rounds, double *scripts, double *pubs,
                           double *subs, double *bus, double *cpu_us) {
  char name[64];
  lk_client_t *a = peer(f, mode), *b = peer(f, mode);
  int m = f->masters[1];
  snprintf(name, sizeof name, "psm-cost-%d-", mode);
  cfx_name_on(f, m, name, name, sizeof name);
  lk_lock_t *h = NULL, *w = NULL;
  ASSERT_OK(lk_lock_new(a, name, &h));
  ASSERT_OK(lk_lock_new(b, name, &w));
  for (int i = 0; i < rt_cluster_size(f->cl); i++) {
    if (!rt_cluster_up(f->cl, i))
      continue;
    redisReply *r = rt_cmd(cfx_srv(f, i), "CONFIG RESETSTAT");
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
    freeReplyObject(r);
  }
  long long bus0 = bus_publish_messages(f);
  double cpu0 = server_cpu_us(f);
  for (int k = 0; k < rounds; k++) {
    sx_t sw;
    ASSERT_OK(sx_acquire(&f->fx, h, 0, LEASE));
    cfx_acquire_start(w, WAIT, LEASE, 0, &sw);
    FX_EVENTUALLY(&f->fx, subscribed(f, m, name, mode), 5000);
    uint64_t t0 = uv_hrtime();
    ASSERT_OK(sx_run(&f->fx, lk_lock_release, h, NULL));
    rt_run_until(&f->fx.loop, &sw.done, rt_scaled_ms(10000));
    ASSERT_OK(sw.status);
    ASSERT_LT(cfx_ms_since(t0, sw.t_ns), rt_scaled_ms(WAKE_MS));
    ASSERT_OK(sx_run(&f->fx, lk_lock_release, w, NULL));
  }
  *cpu_us = (server_cpu_us(f) - cpu0) / (2.0 * rounds);
  long long pub, sub, scr, n = server_calls(f, &pub, &sub, &scr);
  *scripts = (double)scr / (2.0 * rounds);
  *bus = (double)(bus_publish_messages(f) - bus0) / (2.0 * rounds); /* two releases a round */
  *pubs = (double)pub / (2.0 * rounds);
  *subs = (double)sub / (2.0 * rounds);
  fx_close_lock(&f->fx, h);
  fx_close_lock(&f->fx, w);
  fx_close_direct_client(&f->fx, a);
  fx_close_direct_client(&f->fx, b);
  return (double)n / (2.0 * rounds);
}

/* The same contended handoffs in both modes on one cluster: the commands
 * are the same (a release publishes once, either way); classic's cost is
 * the broadcast, one bus message per other node for every release, where
 * sharded sends one to each replica of the slot's shard only. */
TEST(cost_per_acquisition_classic_vs_sharded) {
  enum { ROUNDS = 20 };
  cfx_t f;
  double se, sp, ss, sb, su, ce, cp, cs, cb, cu;
  start(&f, LK_PUBSUB_SHARDED);
  double sharded = handoff_cost(&f, LK_PUBSUB_SHARDED, ROUNDS, &se, &sp, &ss, &sb, &su);
  double classic = handoff_cost(&f, LK_PUBSUB_CLASSIC, ROUNDS, &ce, &cp, &cs, &cb, &cu);
  printf("per acquisition (%d contended handoffs, %d nodes; server calls, a script's own "
         "calls included; server CPU of every node): sharded %.2f calls (%.2f scripts, %.2f "
         "publish, %.2f subscribe), %.2f bus messages per release, %.0f us CPU; classic %.2f "
         "calls (%.2f scripts, %.2f publish, %.2f subscribe), %.2f bus messages per release, "
         "%.0f us CPU\n",
         ROUNDS, rt_cluster_size(f.cl), sharded, se, sp, ss, sb, su, classic, ce, cp, cs, cb,
         cu);
  ASSERT_GT(cb, 2 * sb);
  cfx_finish(&f);
}

/* ---- sharded only, where the cluster has no sharded pub/sub ---- */

static int errors_seen, fallback_warnings;

static void count_unsharded_logs(lk_log_level_t level, const char *msg, void *arg) {
  (void)arg;
  if (level == LK_LOG_ERROR && strstr(msg, "pubsub_mode is sharded") != NULL)
    errors_seen++;
  if (level == LK_LOG_WARN && strstr(msg, "release messages are broadcast") != NULL)
    fallback_warnings++;
}

/* SSUBSCRIBE and SPUBLISH renamed away, as on a server before 7.0: with
 * pubsub_mode SHARDED there is no classic fallback: the client says so once
 * (an error), subscribes nothing, and the waiter gets in by its re-poll. */
TEST(sharded_mode_without_sharded_pubsub_polls_and_says_so) {
  enum { POLL_MS = 300 };
  cfx_t f;
  rt_cluster_opts_t co;
  lk_client_opts_t o;
  char name[64], pattern[96];
  sx_t sw;
  cfx_opts_no_sharded_pubsub(&co);
  mode_opts(&o, LK_PUBSUB_SHARDED);
  o.max_repoll_ms = POLL_MS;
  o.log = count_unsharded_logs;
  cfx_start_with(&f, &co, 0, &o);
  int m = f.masters[1];
  cfx_name_on(&f, m, "psm-unsharded-", name, sizeof name);
  snprintf(pattern, sizeof pattern, "*%s*", name);
  lk_lock_t *h = fx_lock(&f.fx, name), *w = fx_lock(&f.fx, name);
  ASSERT_OK(sx_acquire(&f.fx, h, 0, LEASE));
  cfx_acquire_start(w, WAIT, LEASE, 0, &sw);
  FX_EVENTUALLY(&f.fx, errors_seen >= 1, 5000);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, h, NULL));
  rt_run_until(&f.fx.loop, &sw.done, rt_scaled_ms(10000));
  ASSERT_OK(sw.status);
  for (int i = 0; i < rt_cluster_size(f.cl); i++)
    ASSERT_EQ(channels_on(&f, i, "CHANNELS", pattern), 0);
  ASSERT_EQ(errors_seen, 1);
  ASSERT_EQ(fallback_warnings, 0);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, w, NULL));
  cfx_finish_locks(&f, (lk_lock_t *[]){h, w, NULL});
}

/* ---- classic subscriptions follow a failover ---- */

/* A coordinated failover of the lock's master: a classic subscription gets
 * no sunsubscribe push, so the topology read moves it to the new master
 * (as it would a sharded one whose push was lost); the release there wakes
 * the waiter. */
TEST(classic_mode_subscription_follows_a_failover) {
  cfx_t f;
  lk_client_opts_t o;
  cfx_handoff_t x;
  rt_emu_set_sharded(0);
  mode_opts(&o, MODE);
  o.cluster_refresh_ms = 200;
  cfx_start(&f, 0, &o);
  int old = f.masters[2];
  int replica = rt_cluster_replica_of(f.cl, old);
  ASSERT_GE(replica, 0);
  cfx_handoff_hold(&f, &x, peer(&f, MODE), old, "psm-fo-", 60000);
  cfx_handoff_wait(&x, WAIT, LEASE);
  FX_EVENTUALLY(&f.fx, classic_on(&f, old, x.name), 5000);
  ASSERT_OK(rt_cluster_failover(f.cl, replica, NULL));
  FX_EVENTUALLY(&f.fx, classic_on(&f, replica, x.name) && !classic_on(&f, old, x.name), 5000);
  ASSERT_EQ(x.sw.done, 0);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.h, NULL));
  in_by_message(&f, &x.sw, t0, "after the failover the waiter had the lock", "release");
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, x.w, NULL));
  cfx_handoff_finish(&f, &x);
}

/* ---- the permit semaphore's renewal, which publishes what it reclaims ---- */

/* A permit whose lease ran out comes back when a watched holder of the same
 * semaphore is renewed (psem_renew.lua), and the renewal announces the new
 * count on the channel the way the renewing client's mode says. Nothing
 * else runs on the semaphore meanwhile (no waiter, whose own tries would
 * reclaim it too), so a classic subscriber on another master hears the
 * renewal's PUBLISH or nothing. */
TEST(classic_mode_permit_reclaimed_by_a_renewal_is_published_classic) {
  enum { SHORT_LEASE = 1000 };
  cfx_t f;
  char name[64], channel[128];
  int64_t res = 0;
  lk_client_opts_t ro;
  start(&f, MODE);
  lk_client_t *c2 = peer(&f, MODE);
  mode_opts(&ro, MODE);
  ro.default_lease_ms = 900; /* renewed every 300 ms */
  lk_client_t *renewing = cfx_client(&f, f.masters[1], &ro);
  int m = f.masters[0];
  cfx_name_on(&f, m, "psm-psem-", name, sizeof name);
  snprintf(channel, sizeof channel, "redisson_sc:{%s}", name);
  lk_psem_t *setter = fx_psem(&f.fx, name), *expiring = NULL, *watched = NULL;
  ASSERT_OK(lk_psem_new(c2, name, &expiring));
  ASSERT_OK(lk_psem_new(renewing, name, &watched));
  ASSERT_OK(psem_run_n(&f.fx, lk_psem_try_set_permits, setter, 2, &res));
  ASSERT_EQ(res, 1);
  ASSERT_OK(psem_acquire(&f.fx, watched, 1, 0, LK_LEASE_DEFAULT));
  redisContext *far = far_listener(&f, m, channel);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(psem_acquire(&f.fx, expiring, 1, 0, SHORT_LEASE));
  /* The listener reads in this thread: let the loop run the renewals. */
  redisReply *msg = NULL;
  int64_t end = rt_now_ms() + SHORT_LEASE + rt_scaled_ms(3000);
  while (msg == NULL && rt_now_ms() < end) {
    fx_spin(&f.fx, 20);
    msg = rt_sub_next_message(far, 0);
  }
  if (msg == NULL)
    FAIL("no classic message announced the reclaimed permit");
  double ms = ms_since(t0);
  ASSERT_STREQ(msg->element[0]->str, "message");
  ASSERT_STREQ(msg->element[2]->str, "1"); /* one permit available again */
  printf("the reclaimed permit was announced %.0f ms after its %d ms lease began\n", ms,
         SHORT_LEASE);
  ASSERT_GE(ms, (double)SHORT_LEASE - 50);
  freeReplyObject(msg);
  redisFree(far);
  fx_close_psem(&f.fx, setter);
  fx_close_psem(&f.fx, expiring);
  fx_close_psem(&f.fx, watched);
  fx_close_direct_client(&f.fx, c2);
  fx_close_direct_client(&f.fx, renewing);
  cfx_finish(&f);
}
