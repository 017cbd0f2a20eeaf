/* Interop with Redisson's RLock, played by the test-only emulator
 * (test/harness/redisson_emu.h: our reading of Redisson's RLock on the wire,
 * not Redisson itself). Both sides share one lock by name: each must see the
 * other's holds, wake on the other's release, and latchkey's data must be
 * exactly what a Redisson client expects to find. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "raw_sub.h"
#include "emu_waiter.h"
#include "redisson_emu.h"

/* The Redisson side: a made-up client id and Java thread id. */
#define EMU_UUID "8d0c3c5e-0000-4000-8000-000000000001"
#define EMU_TID 7
#define EMU_OWNER EMU_UUID ":7"

/* HGET name field as a number; 0 when absent. */
static long long hget(fx_t *fx, const char *name, const char *field) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", name, field);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

static void assert_no_latch_keys(fx_t *fx) {
  redisReply *r = rt_cmd(fx->srv, "KEYS redisson_unlock_latch*");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  if (r->elements != 0)
    FAIL("unlock latch key left behind: %s", r->element[0]->str);
  freeReplyObject(r);
}

static void assert_pttl_within(fx_t *fx, const char *name, long long lease) {
  long long t = rt_cmd_int(fx->srv, "PTTL %s", name);
  ASSERT_GT(t, 0);
  ASSERT_LE(t, lease);
}

/* Runs the loop (so the client stays serviced) while polling until the
 * channel has at least one subscriber. */
static void wait_for_subscriber(fx_t *fx, const char *channel) {
  int64_t end = rt_now_ms() + rt_scaled_ms(5000);
  while (rt_server_numsub(fx->srv, channel) < 1) {
    if (rt_now_ms() > end)
      FAIL("nobody subscribed to %s", channel);
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
}

static redisContext *emu_connect(fx_t *fx) { return rt_rlock_connect(rt_server_port(fx->srv)); }

/* ---- latchkey waits, the emulator releases from a timer on the test loop ---------------- */

typedef struct releaser_s {
  fx_t *fx;
  redisContext *emu;
  const char *name;
  const char *channel;
  const sx_t *acq;
  uv_timer_t timer;
  int64_t t_seen_ms; /* when the channel first had a subscriber */
  uint64_t t_unlock_ns;
  int unlock_rc;
  int unlocked;
  int acquired_first; /* latchkey's acquire completed while the emulator held */
  int closed;
} releaser_t;

static void releaser_tick(uv_timer_t *t) {
  releaser_t *r = t->data;
  if (r->acq->done) {
    r->acquired_first = 1;
    uv_timer_stop(t);
    return;
  }
  int64_t now = rt_now_ms();
  if (r->t_seen_ms == 0) {
    if (rt_server_numsub(r->fx->srv, r->channel) >= 1)
      r->t_seen_ms = now;
    return;
  }
  if (now - r->t_seen_ms < 200)
    return; /* let latchkey settle into its sleep */
  r->t_unlock_ns = uv_hrtime();
  r->unlock_rc = rt_rlock_unlock(r->emu, r->name, EMU_UUID, EMU_TID);
  r->unlocked = 1;
  uv_timer_stop(t);
}

static void releaser_closed(uv_handle_t *h) { ((releaser_t *)h->data)->closed = 1; }

/* The emulator holds name. Starts a latchkey acquire on l (wait 5 s scaled),
 * has the emulator unlock once latchkey is subscribed and sleeping, and
 * returns how long after the unlock latchkey had the lock, in us. */
static int64_t emulator_release_wakes_latchkey(fx_t *fx, redisContext *emu, const char *name,
                                               lk_lock_t *l) {
  char *channel = rt_rlock_channel(name);
  sx_t s;
  memset(&s, 0, sizeof(s));
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = rt_scaled_ms(5000);
  o.lease_ms = 10000;
  releaser_t r;
  memset(&r, 0, sizeof(r));
  r.fx = fx;
  r.emu = emu;
  r.name = name;
  r.channel = channel;
  r.acq = &s;
  ASSERT_OK(uv_timer_init(&fx->loop, &r.timer));
  r.timer.data = &r;
  ASSERT_OK(uv_timer_start(&r.timer, releaser_tick, 5, 5));
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  rt_run_until(&fx->loop, &s.done, 10000);
  uv_close((uv_handle_t *)&r.timer, releaser_closed);
  rt_run_until(&fx->loop, &r.closed, 1000);
  if (!r.unlocked && s.status == 0)
    FAIL("latchkey acquired %s while the emulator held it", name);
  if (!r.unlocked)
    FAIL("latchkey's acquire ended with %s before the emulator released; %s", lk_err_name(s.status),
         r.t_seen_ms ? "it was subscribed" : "nobody ever subscribed to the lock's channel");
  ASSERT_EQ(r.acquired_first, 0);
  ASSERT_EQ(r.unlock_rc, 1);
  ASSERT_OK(s.status);
  ASSERT_GE(s.t_ns, r.t_unlock_ns);
  int64_t wake_us = (int64_t)(s.t_ns - r.t_unlock_ns) / 1000;
  const int64_t wake_bound_ms = rt_stall_bound_since_ns(r.t_unlock_ns, 1000);
  printf("%s: latchkey waited %.1f ms, had the lock %.3f ms after the emulator's unlock\n", name,
         (double)(s.t_ns - t0) / 1e6, (double)wake_us / 1e3);
  /* The emulator's lease was 30 s and latchkey re-polls every 10 min: only
   * the release message can explain a wake-up this soon. */
  ASSERT_LT(wake_us, wake_bound_ms * 1000); /* liveness: grows by measured stalls */
  free(channel);
  return wake_us;
}

/* How the cases with the emulator in the lead open: a client whose waiters
 * never re-poll, the emulator's connection (*emu) holding name (its thread
 * EMU_TID, a 30 s lease), and a latchkey lock object on name, returned. */
static lk_lock_t *start_with_emulator_holding(fx_t *fx, redisContext **emu, const char *name) {
  fx_start_no_repoll(fx);
  *emu = emu_connect(fx);
  ASSERT_EQ(rt_rlock_try(*emu, name, EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  return fx_lock(fx, name);
}

/* How the cases with the emulator end: the lock objects are closed (in the
 * order given, NULL-terminated), the emulator's connection too, and the
 * fixture ends. */
static void finish_with_emulator(fx_t *fx, redisContext *emu, lk_lock_t *const *locks) {
  for (; *locks != NULL; locks++)
    fx_close_lock(fx, *locks);
  redisFree(emu);
  fx_finish(fx);
}

/* ---- the emulator on its own ------------------------------------------------------------ */

TEST(redisson_emulator_self_check) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  char *ch = rt_rlock_channel("x");
  ASSERT_STREQ(ch, "redisson_lock__channel:{x}");
  free(ch);
  ch = rt_rlock_channel("a{b}c");
  ASSERT_STREQ(ch, "redisson_lock__channel:a{b}c");
  free(ch);
  ch = rt_rlock_latch_key("x", "00ff");
  ASSERT_STREQ(ch, "redisson_unlock_latch:{x}:00ff");
  free(ch);

  redisContext *emu = emu_connect(&fx);
  redisContext *sub = rs_subscribe(&fx, "redisson_lock__channel:{x}");
  ASSERT_EQ(rt_rlock_try(emu, "x", EMU_UUID, 1, 10000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rlock_try(emu, "x", EMU_UUID, 1, 10000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(hget(&fx, "x", EMU_UUID ":1"), 2);
  long long ttl = rt_rlock_try(emu, "x", EMU_UUID, 2, 10000);
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 10000);
  ASSERT_EQ(rt_rlock_unlock(emu, "x", EMU_UUID, 2), -1);
  ASSERT_EQ(rt_rlock_unlock_lease(emu, "x", EMU_UUID, 1, 5000), 0);
  assert_pttl_within(&fx, "x", 5000);
  rs_expect_no_message(sub, 100);
  ASSERT_EQ(rt_rlock_unlock(emu, "x", EMU_UUID, 1), 1);
  rs_expect_message_on(sub, "redisson_lock__channel:{x}", "0");
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS x"), 0);
  assert_no_latch_keys(&fx);

  /* A retried unlock with the same request id is answered by its latch. */
  const char *req = "0123456789abcdef0123456789abcdef";
  ASSERT_EQ(rt_rlock_try(emu, "x", EMU_UUID, 1, 10000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rlock_unlock_req(emu, "x", EMU_UUID, 1, 30000, req, 0), 1);
  ASSERT_EQ(rt_rlock_unlock_req(emu, "x", EMU_UUID, 1, 30000, req, 0), 1);
  long long latch_ttl =
      rt_cmd_int(fx.srv, "PTTL redisson_unlock_latch:{x}:%s", req);
  ASSERT_GT(latch_ttl, 0);
  ASSERT_LE(latch_ttl, RT_RLOCK_LATCH_TTL_MS);
  ASSERT_EQ(rt_rlock_unlock(emu, "x", EMU_UUID, 1), -1); /* a new request: not owner */
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL redisson_unlock_latch:{x}:%s", req), 1);

  /* lock(): free at once; bounded when the holder never leaves; woken by
   * the holder's lease running out when nobody publishes. */
  redisContext *wsub = emu_connect(&fx);
  ASSERT_EQ(rt_rlock_lock_blocking(emu, wsub, "y", EMU_UUID, 1, 10000, 1000), 0);
  int64_t t0 = rt_now_ms();
  ASSERT_EQ(rt_rlock_lock_blocking(emu, wsub, "y", EMU_UUID, 2, 10000, 300), -1);
  ASSERT_GE(rt_now_ms() - t0, 300);
  ASSERT_EQ(rt_server_numsub(fx.srv, "redisson_lock__channel:{y}"), 0); /* unsubscribed again */
  ASSERT_EQ(rt_cmd_int(fx.srv, "PEXPIRE y 300"), 1);
  t0 = rt_now_ms();
  ASSERT_EQ(rt_rlock_lock_blocking(emu, wsub, "y", EMU_UUID, 2, 10000, rt_scaled_ms(5000)), 0);
  ASSERT_LT(rt_now_ms() - t0, rt_stall_bound_ms(t0, 2000));
  ASSERT_EQ(hget(&fx, "y", EMU_UUID ":2"), 1);
  redisFree(wsub);
  redisFree(sub);
  redisFree(emu);
  fx_finish(&fx);
}

/* ---- latchkey holds, the emulator is excluded, then admitted ----------------------------- */

TEST(redisson_latchkey_holds_emulator_sees_ttl) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  redisContext *emu = emu_connect(&fx);
  lk_lock_t *l = fx_lock(&fx, "shared");
  ASSERT_OK(sx_acquire(&fx, l, 0, 10000));

  long long ttl = rt_rlock_try(emu, "shared", EMU_UUID, EMU_TID, 30000);
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 10000);
  /* Any other Redisson thread is excluded too, and cannot unlock it. */
  ttl = rt_rlock_try(emu, "shared", EMU_UUID, EMU_TID + 1, 30000);
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 10000);
  ASSERT_EQ(rt_rlock_unlock(emu, "shared", EMU_UUID, EMU_TID), -1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN shared"), 1);
  ASSERT_EQ(hget(&fx, "shared", lk_lock_owner(l)), 1);
  ASSERT_EQ(hget(&fx, "shared", EMU_OWNER), 0);

  int64_t r = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_rlock_try(emu, "shared", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(hget(&fx, "shared", EMU_OWNER), 1);
  assert_pttl_within(&fx, "shared", 30000);
  /* Now latchkey is the one shut out. */
  ASSERT_EQ(sx_acquire(&fx, l, 0, 10000), LK_ETIMEDOUT);
  ASSERT_EQ(rt_rlock_unlock(emu, "shared", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS shared"), 0);
  assert_no_latch_keys(&fx);
  finish_with_emulator(&fx, emu, (lk_lock_t *[]){l, NULL});
}

/* ---- the emulator blocks in lock() on another thread; latchkey's release wakes it -------- */

/* Redisson's lock(), 30 s lease (rt_emu_wait_fn). */
static int emu_lock_wait(redisContext *c, redisContext *sub, const char *name, int64_t timeout_ms) {
  return rt_rlock_lock_blocking(c, sub, name, EMU_UUID, EMU_TID, 30000, timeout_ms);
}

TEST(redisson_latchkey_release_wakes_emulator) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  lk_lock_t *l = fx_lock(&fx, "handoff");
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));

  rt_emu_waiter_t w;
  pthread_t th;
  rt_emu_waiter_start(&w, &th, emu_lock_wait, rt_server_port(fx.srv), "handoff");
  wait_for_subscriber(&fx, "redisson_lock__channel:{handoff}");
  fx_spin(&fx, 200);
  if (atomic_load(&w.done))
    FAIL("the emulator's lock() returned (rc %d) while latchkey held the lock", w.result);

  uint64_t t_rel = uv_hrtime();
  int64_t r = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
  if (!rt_emu_waiter_returned_within(&w, 5000))
    FAIL("the emulator's lock() did not return after latchkey released");
  ASSERT_OK(pthread_join(th, NULL));
  ASSERT_EQ(w.result, 0);
  ASSERT_GE(w.t_ns, t_rel);
  int64_t wake_us = (int64_t)(w.t_ns - t_rel) / 1000;
  const int64_t wake_bound_ms = rt_stall_bound_since_ns(t_rel, 1000);
  printf("the emulator had the lock %.3f ms after latchkey's release was invoked\n",
         (double)wake_us / 1e3);
  /* latchkey's lease was 30 s: only its "0" on the channel explains this. */
  ASSERT_LT(wake_us, wake_bound_ms * 1000); /* liveness: grows by measured stalls */

  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN handoff"), 1);
  ASSERT_EQ(hget(&fx, "handoff", EMU_OWNER), 1);
  ASSERT_EQ(rt_server_numsub(fx.srv, "redisson_lock__channel:{handoff}"), 0);
  redisContext *emu = emu_connect(&fx);
  ASSERT_EQ(rt_rlock_unlock(emu, "handoff", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS handoff"), 0);
  finish_with_emulator(&fx, emu, (lk_lock_t *[]){l, NULL});
}

/* ---- the emulator holds; latchkey waits and wakes on the emulator's release -------------- */

TEST(redisson_emulator_release_wakes_latchkey) {
  fx_t fx;
  redisContext *emu;
  lk_lock_t *l = start_with_emulator_holding(&fx, &emu, "waitme");
  emulator_release_wakes_latchkey(&fx, emu, "waitme", l);
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN waitme"), 1);
  ASSERT_EQ(hget(&fx, "waitme", lk_lock_owner(l)), 1);
  assert_pttl_within(&fx, "waitme", 10000);
  assert_no_latch_keys(&fx);
  /* And the emulator is shut out in turn. */
  long long ttl = rt_rlock_try(emu, "waitme", EMU_UUID, EMU_TID, 30000);
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 10000);
  int64_t r = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS waitme"), 0);
  finish_with_emulator(&fx, emu, (lk_lock_t *[]){l, NULL});
}

/* With no release at all, latchkey's wait is bounded by the holder's ttl: it
 * takes the lock once the emulator's lease runs out, never before. */
TEST(redisson_emulator_lease_expiry_admits_latchkey) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  redisContext *emu = emu_connect(&fx);
  lk_lock_t *l = fx_lock(&fx, "expiring");
  uint64_t t0 = uv_hrtime();
  ASSERT_EQ(rt_rlock_try(emu, "expiring", EMU_UUID, EMU_TID, 500), RT_RLOCK_ACQUIRED);
  sx_t s;
  ASSERT_OK(sx_acquire_in(&fx.loop, l, rt_scaled_ms(5000), 10000, &s));
  int64_t ms = (int64_t)(s.t_ns - t0) / 1000000;
  printf("latchkey had the lock %lld ms after the emulator took a 500 ms lease\n",
         (long long)ms);
  ASSERT_GE(ms, 499); /* safety: not before the lease ended */
  ASSERT_LT(ms, 500 + rt_stall_bound_since_ns(t0, 1500)); /* liveness: the ttl bounded the sleep */
  ASSERT_EQ(hget(&fx, "expiring", lk_lock_owner(l)), 1);
  ASSERT_EQ(hget(&fx, "expiring", EMU_OWNER), 0);
  fx_close_lock(&fx, l);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS expiring"), 0);
  redisFree(emu);
  fx_finish(&fx);
}

/* ---- what latchkey writes is exactly Redisson's ------------------------------------------ */

static void assert_uuid4(const char *id) {
  ASSERT_EQ(strlen(id), 36);
  for (int i = 0; i < 36; i++) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      ASSERT_EQ(id[i], '-');
    } else if (!isdigit((unsigned char)id[i]) && !(id[i] >= 'a' && id[i] <= 'f')) {
      FAIL("client id \"%s\": character %d is not lower-case hex", id, i);
    }
  }
  ASSERT_EQ(id[14], '4');
  ASSERT(strchr("89ab", id[19]) != NULL);
}

TEST(redisson_hash_layout_matches) {
  fx_t fx;
  fx_start_no_repoll(&fx);
  lk_lock_t *l = fx_lock(&fx, "layout");
  const char *id = lk_client_id(fx.c);
  const char *owner = lk_lock_owner(l);
  assert_uuid4(id);
  /* Owner field "UUID:TID", TID a decimal (Java long). */
  size_t idlen = strlen(id);
  ASSERT_EQ(strncmp(owner, id, idlen), 0);
  ASSERT_EQ(owner[idlen], ':');
  ASSERT(owner[idlen + 1] != '\0');
  for (const char *p = owner + idlen + 1; *p; p++)
    ASSERT(isdigit((unsigned char)*p));

  redisContext *sub = rs_subscribe(&fx, "redisson_lock__channel:{layout}");
  ASSERT_OK(sx_acquire(&fx, l, 0, 20000));
  redisReply *r = rt_cmd(fx.srv, "HGETALL layout");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ASSERT_EQ(r->elements, 2);
  ASSERT_STREQ(r->element[0]->str, owner);
  ASSERT_STREQ(r->element[1]->str, "1");
  freeReplyObject(r);
  char *type = rt_cmd_str(fx.srv, "TYPE layout");
  ASSERT_STREQ(type, "hash");
  free(type);
  assert_pttl_within(&fx, "layout", 20000);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 1); /* no private keys for a plain lock */

  /* Re-entry counts in the same field and restarts the lease. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "PEXPIRE layout 5000"), 1);
  ASSERT_OK(sx_acquire(&fx, l, 0, 20000));
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN layout"), 1);
  ASSERT_EQ(hget(&fx, "layout", owner), 2);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL layout"), 5000);
  assert_pttl_within(&fx, "layout", 20000);

  /* A partial release publishes nothing; the full one publishes "0". */
  int64_t res = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &res));
  ASSERT_EQ(res, 0);
  ASSERT_EQ(hget(&fx, "layout", owner), 1);
  assert_pttl_within(&fx, "layout", 20000);
  rs_expect_no_message(sub, 100);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &res));
  ASSERT_EQ(res, 1);
  rs_expect_message_on(sub, "redisson_lock__channel:{layout}", "0");
  rs_expect_no_message(sub, 50);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  redisFree(sub);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

/* ---- latchkey acting as the emulator's thread -------------------------------------------- */

TEST(redisson_latchkey_reenters_emulator_hold) {
  fx_t fx;
  redisContext *emu;
  lk_lock_t *l = start_with_emulator_holding(&fx, &emu, "reent");
  lk_lock_t *stranger = fx_lock(&fx, "reent");
  ASSERT_OK(lk_lock_set_owner(l, EMU_UUID, EMU_TID));
  ASSERT_STREQ(lk_lock_owner(l), EMU_OWNER);

  /* latchkey re-enters the Redisson thread's hold: count 2, one field. */
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN reent"), 1);
  ASSERT_EQ(hget(&fx, "reent", EMU_OWNER), 2);
  int64_t res = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, l, &res));
  ASSERT_EQ(res, 2);
  ASSERT_EQ(sx_acquire(&fx, stranger, 0, 30000), LK_ETIMEDOUT);

  /* The emulator's unlock only decrements; the lock stays held. */
  ASSERT_EQ(rt_rlock_unlock(emu, "reent", EMU_UUID, EMU_TID), 0);
  ASSERT_EQ(hget(&fx, "reent", EMU_OWNER), 1);
  assert_pttl_within(&fx, "reent", 30000);
  ASSERT_EQ(sx_acquire(&fx, stranger, 0, 30000), LK_ETIMEDOUT);
  /* latchkey's release is the last one. */
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &res));
  ASSERT_EQ(res, 1);
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS reent"), 0);

  /* The other order: latchkey leaves first, the emulator's unlock ends it. */
  ASSERT_EQ(rt_rlock_try(emu, "reent", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_OK(sx_acquire(&fx, l, 0, 30000));
  ASSERT_EQ(hget(&fx, "reent", EMU_OWNER), 2);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &res));
  ASSERT_EQ(res, 0);
  ASSERT_EQ(hget(&fx, "reent", EMU_OWNER), 1);
  ASSERT_EQ(rt_rlock_unlock(emu, "reent", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS reent"), 0);
  assert_no_latch_keys(&fx);
  finish_with_emulator(&fx, emu, (lk_lock_t *[]){stranger, l, NULL});
}

/* ---- names with braces keep their own hash tag ------------------------------------------- */

TEST(redisson_braced_name_channel) {
  fx_t fx;
  const char *name = "a{b}c";
  redisContext *emu;
  lk_lock_t *l = start_with_emulator_holding(&fx, &emu, name);

  /* latchkey waits on "redisson_lock__channel:a{b}c" (no extra braces) and
   * the emulator's release there wakes it. The channel check runs while it
   * waits: the releaser only acts once that channel has a subscriber. */
  emulator_release_wakes_latchkey(&fx, emu, name, l);
  ASSERT_EQ(rt_server_numsub(fx.srv, "redisson_lock__channel:{a{b}c}"), 0);
  ASSERT_EQ(hget(&fx, name, lk_lock_owner(l)), 1);
  assert_no_latch_keys(&fx);

  /* latchkey's own release is published on the same channel. */
  redisContext *sub = rs_subscribe(&fx, "redisson_lock__channel:a{b}c");
  redisContext *wrong = rs_subscribe(&fx, "redisson_lock__channel:{a{b}c}");
  int64_t res = -1;
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &res));
  ASSERT_EQ(res, 1);
  rs_expect_message_on(sub, "redisson_lock__channel:a{b}c", "0");
  rs_expect_no_message(wrong, 100);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", name), 0);
  redisFree(wrong);
  redisFree(sub);
  finish_with_emulator(&fx, emu, (lk_lock_t *[]){l, NULL});
}
