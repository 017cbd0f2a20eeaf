/* Interop with Redisson's RReadWriteLock, played by the test-only emulator
 * (test/harness/redisson_rw_emu.h: our reading of Redisson's read/write
 * lock on the wire, not Redisson itself). Both sides share one lock by name, as reader and as
 * writer: each sees the other's holds, wakes on the other's releases, reads
 * the other's hold keys, and latchkey's data is what a Redisson client
 * expects to find. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockfam_rw_finish.h"
#include "raw_sub.h"
#include "redisson_rw_emu.h"
#include "rw_fixture.h"

#define EMU_UUID "8d0c3c5e-0000-4000-8000-000000000001"
#define EMU_TID 7

/* A prompt wake-up can only come from a notification. */
#define NO_REPOLL_MS 600000

static void start(fx_t *fx, int64_t repoll_ms, int64_t lease_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = repoll_ms;
  if (lease_ms > 0)
    o.default_lease_ms = lease_ms;
  fx_start_with(fx, NULL, &o);
}

static redisContext *emu(fx_t *fx) { return rt_rlock_connect(rt_server_port(fx->srv)); }

static char *mode_of(fx_t *fx, const char *name) { return rt_cmd_str(fx->srv, "HGET %s mode", name); }

/* Starts a latchkey acquire and waits until it is asleep on the channel. */
static void start_waiting(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side, const char *name,
                          sx_t *s) {
  char *channel = rt_rwlock_channel(name);
  rw_start(rw, side, rt_scaled_ms(20000), LK_LEASE_DEFAULT, s);
  fx_wait_subscribers(fx, channel, 1);
  fx_spin(fx, 100);
  ASSERT_EQ(s->done, 0);
  free(channel);
}

/* A Redisson reader and a latchkey reader share; a latchkey writer waits for
 * both, and wakes on the read release message. Redisson's unlock scan reads
 * latchkey's hold key to keep the lock alive for it. */
TEST(readers_of_both_kinds_share) {
  fx_t fx;
  redisContext *e;
  lk_rwlock_t *r, *w;
  sx_t ws;
  uint64_t t_rel;
  char *m;
  start(&fx, NO_REPOLL_MS, 0);
  e = emu(&fx);
  r = fx_rwlock(&fx, "share");
  w = fx_rwlock(&fx, "share");
  ASSERT_EQ(rt_rwlock_read_try(e, "share", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_OK(rw_acquire(&fx, r, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN share"), 3);
  /* A Redisson writer is kept out by latchkey's read hold. */
  ASSERT_GE(rt_rwlock_write_try(e, "share", EMU_UUID, 99, 30000), 0);
  start_waiting(&fx, w, RW_W, "share", &ws);
  /* Redisson's reader leaves: latchkey's hold key keeps the lock (its
   * scan found it), nobody is woken. */
  ASSERT_EQ(rt_rwlock_read_unlock(e, "share", EMU_UUID, EMU_TID), 0);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL share"), 25000);
  m = mode_of(&fx, "share");
  ASSERT_STREQ(m, "read");
  free(m);
  fx_spin(&fx, 50);
  ASSERT_EQ(ws.done, 0);
  /* latchkey's reader leaves: "0" wakes the waiting writer at once. */
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, r, RW_R, NULL));
  rt_run_until(&fx.loop, &ws.done, 5000);
  ASSERT_OK(ws.status);
  ASSERT_LT((int64_t)(ws.t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  /* Now Redisson cannot read. */
  ASSERT_GE(rt_rwlock_read_try(e, "share", EMU_UUID, EMU_TID, 30000), 0);
  ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  ASSERT_EQ(rt_rwlock_read_try(e, "share", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rwlock_read_unlock(e, "share", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  redisFree(e);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){r, w, NULL});
}

/* A Redisson writer holds; latchkey readers wait and all wake on its write
 * release ("1"). */
TEST(redisson_writer_release_wakes_latchkey_readers) {
  enum { N = 2 };
  fx_t fx;
  redisContext *e;
  lk_rwlock_t *r[N];
  sx_t s[N];
  uint64_t t_rel;
  int i;
  start(&fx, NO_REPOLL_MS, 0);
  e = emu(&fx);
  ASSERT_EQ(rt_rwlock_write_try(e, "rw", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rwlock_write_try(e, "rw", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  for (i = 0; i < N; i++) {
    r[i] = fx_rwlock(&fx, "rw");
    start_waiting(&fx, r[i], RW_R, "rw", &s[i]);
  }
  /* Re-entered: the first unlock keeps it. */
  ASSERT_EQ(rt_rwlock_write_unlock(e, "rw", EMU_UUID, EMU_TID), 0);
  fx_spin(&fx, 50);
  ASSERT_EQ(s[0].done + s[1].done, 0);
  t_rel = uv_hrtime();
  ASSERT_EQ(rt_rwlock_write_unlock(e, "rw", EMU_UUID, EMU_TID), 1);
  for (i = 0; i < N; i++) {
    rt_run_until(&fx.loop, &s[i].done, 5000);
    ASSERT_OK(s[i].status);
    ASSERT_LT((int64_t)(s[i].t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  }
  /* Redisson reads along with them. */
  ASSERT_EQ(rt_rwlock_read_try(e, "rw", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rwlock_read_unlock(e, "rw", EMU_UUID, EMU_TID), 0);
  redisFree(e);
  for (i = 0; i < N; i++)
    fx_close_rwlock(&fx, r[i]);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish(&fx);
}

/* ---- Redisson waits on latchkey (a blocking emulator in a thread) ---------- */

typedef struct {
  int port;
  int write;
  int64_t timeout_ms;
  int rc;
  uint64_t t_ns;
} blocker_t;

static void *blocker_main(void *arg) {
  blocker_t *b = arg;
  redisContext *c = rt_rlock_connect(b->port), *sub = rt_rlock_connect(b->port);
  b->rc = rt_rwlock_lock_blocking(c, sub, "lkw", EMU_UUID, EMU_TID, b->write, 30000,
                                  b->timeout_ms);
  b->t_ns = uv_hrtime();
  if (b->rc == 0) {
    if (b->write)
      b->rc = rt_rwlock_write_unlock(c, "lkw", EMU_UUID, EMU_TID) == 1 ? 0 : -2;
    else
      b->rc = rt_rwlock_read_unlock(c, "lkw", EMU_UUID, EMU_TID) == 1 ? 0 : -2;
  }
  redisFree(c);
  redisFree(sub);
  return NULL;
}

/* latchkey holds one side; a blocked Redisson client of the other kind
 * wakes on latchkey's release message (its only wake-up within the bound:
 * latchkey's lease is 30 s). Messages are exactly Redisson's. */
static void redisson_waits_for_latchkey(lk_rwlock_side_t held, int emu_write) {
  fx_t fx;
  lk_rwlock_t *a;
  pthread_t th;
  blocker_t b;
  redisContext *sub;
  uint64_t t_rel;
  start(&fx, NO_REPOLL_MS, 0);
  a = fx_rwlock(&fx, "lkw");
  sub = rs_subscribe(&fx, "redisson_rwlock:{lkw}");
  ASSERT_OK(rw_acquire(&fx, a, held, 0, LK_LEASE_DEFAULT));
  memset(&b, 0, sizeof(b));
  b.port = rt_server_port(fx.srv);
  b.write = emu_write;
  b.timeout_ms = rt_scaled_ms(10000);
  ASSERT_OK(pthread_create(&th, NULL, blocker_main, &b));
  fx_wait_subscribers(&fx, "redisson_rwlock:{lkw}", 2);
  fx_spin(&fx, 100);
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, a, held, NULL));
  ASSERT_OK(pthread_join(th, NULL));
  ASSERT_OK(b.rc);
  ASSERT_LT((int64_t)(b.t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  rs_expect_message(sub, held == RW_W ? "1" : "0");
  /* ...then the emulator's own release message. */
  rs_expect_message(sub, emu_write ? "1" : "0");
  redisFree(sub);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, NULL});
}

TEST(redisson_reader_waits_for_latchkey_writer) { redisson_waits_for_latchkey(RW_W, 0); }
TEST(redisson_writer_waits_for_latchkey_writer) { redisson_waits_for_latchkey(RW_W, 1); }
TEST(redisson_writer_waits_for_latchkey_reader) { redisson_waits_for_latchkey(RW_R, 1); }

/* latchkey acting as a Redisson thread (set_owner): the two implementations
 * count the same holds in the same fields; Redisson's unlock drops
 * latchkey's holds and the other way round. */
TEST(same_thread_across_implementations) {
  fx_t fx;
  redisContext *e;
  lk_rwlock_t *a;
  char key[256];
  start(&fx, 1000, 0);
  e = emu(&fx);
  a = fx_rwlock(&fx, "thread");
  ASSERT_OK(lk_rwlock_set_owner(a, EMU_UUID, EMU_TID));
  /* Redisson writes; latchkey (same thread) re-enters and reads too. */
  ASSERT_EQ(rt_rwlock_write_try(e, "thread", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_server_holds(&fx, a, RW_W), 2);
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  snprintf(key, sizeof(key), "{thread}:%s:%d:rwlock_timeout:1", EMU_UUID, EMU_TID);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  /* Redisson's unlocks: write twice (the second downgrades, no message from
   * Redisson), then the read latchkey took. */
  ASSERT_EQ(rt_rwlock_write_unlock(e, "thread", EMU_UUID, EMU_TID), 0);
  ASSERT_EQ(rt_rwlock_write_unlock(e, "thread", EMU_UUID, EMU_TID), 1);
  {
    char *m = mode_of(&fx, "thread");
    ASSERT_STREQ(m, "read");
    free(m);
  }
  ASSERT_EQ(rt_rwlock_read_unlock(e, "thread", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  /* latchkey's releases find the server empty: not the owner any more. */
  ASSERT_EQ(rw_release(&fx, a, RW_R, NULL), LK_ENOTOWNER);
  ASSERT_EQ(rw_release(&fx, a, RW_W, NULL), LK_ENOTOWNER);
  /* The other way: Redisson reads, latchkey (same thread) reads on and
   * releases its own hold; Redisson's hold stays. */
  ASSERT_EQ(rt_rwlock_read_try(e, "thread", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 2);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 1);
  /* A read-holding thread asking latchkey for the write side is refused. */
  ASSERT_EQ(rw_acquire(&fx, a, RW_W, 5000, LK_LEASE_DEFAULT), LK_EUPGRADE);
  ASSERT_EQ(rt_rwlock_read_unlock(e, "thread", EMU_UUID, EMU_TID), 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  redisFree(e);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
}

/* Redisson downgrades without a message: a waiting latchkey reader still
 * gets in within its re-poll interval (every wait is bounded). latchkey's
 * own downgrade publishes "1", so waiting readers enter at once. */
TEST(downgrades_of_both_kinds) {
  fx_t fx;
  redisContext *e, *sub;
  lk_rwlock_t *a, *r;
  sx_t s;
  uint64_t t_rel;
  const int64_t repoll = 300;
  start(&fx, repoll, 0);
  e = emu(&fx);
  a = fx_rwlock(&fx, "dg");
  r = fx_rwlock(&fx, "dg");
  sub = rs_subscribe(&fx, "redisson_rwlock:{dg}");
  ASSERT_EQ(rt_rwlock_write_try(e, "dg", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rwlock_read_try(e, "dg", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  start_waiting(&fx, r, RW_R, "dg", &s);
  t_rel = uv_hrtime();
  ASSERT_EQ(rt_rwlock_write_unlock(e, "dg", EMU_UUID, EMU_TID), 1);
  rs_expect_no_message(sub, 50);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_OK(s.status);
  ASSERT_LE((int64_t)(s.t_ns - t_rel) / 1000000, repoll + rt_stall_bound_since_ns(t_rel, 300));
  ASSERT_OK(rw_release(&fx, r, RW_R, NULL));
  ASSERT_EQ(rt_rwlock_read_unlock(e, "dg", EMU_UUID, EMU_TID), 1);
  rs_expect_message(sub, "0");
  /* latchkey's downgrade: "1", and a Redisson reader may then enter. */
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_GE(rt_rwlock_read_try(e, "dg", EMU_UUID, EMU_TID, 30000), 0);
  ASSERT_OK(rw_release(&fx, a, RW_W, NULL));
  rs_expect_message(sub, "1");
  ASSERT_EQ(rt_rwlock_read_try(e, "dg", EMU_UUID, EMU_TID, 30000), RT_RLOCK_ACQUIRED);
  ASSERT_GE(rt_rwlock_write_try(e, "dg", EMU_UUID, 99, 30000), 0);
  ASSERT_EQ(rt_rwlock_read_unlock(e, "dg", EMU_UUID, EMU_TID), 0);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  rs_expect_message(sub, "0");
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  redisFree(sub);
  redisFree(e);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, r, NULL});
}

/* A Redisson reader whose hold is not renewed (a short lease: as if its
 * process died) is not kept alive by latchkey's renewing reader, and once
 * latchkey's reader leaves, the lock goes at once. */
TEST(latchkey_renewal_never_keeps_a_redisson_reader) {
  /* Scaled: latchkey's reader must live on its renewals through the case. */
  const int64_t lease = rt_scaled_ms(600);
  fx_t fx;
  redisContext *e;
  lk_rwlock_t *r, *w;
  char *emu_key;
  start(&fx, 1000, lease);
  e = emu(&fx);
  r = fx_rwlock(&fx, "zr");
  w = fx_rwlock(&fx, "zr");
  emu_key = rt_rwlock_hold_key("zr", EMU_UUID, EMU_TID, 1);
  ASSERT_EQ(rt_rwlock_read_try(e, "zr", EMU_UUID, EMU_TID, lease), RT_RLOCK_ACQUIRED);
  ASSERT_OK(rw_acquire(&fx, r, RW_R, 0, LK_LEASE_DEFAULT));
  /* A machine stall longer than a renewal's slack may take r's hold; the
   * Redisson reader must expire either way. */
  const int64_t mark = rt_stall_mark();
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS %s", emu_key) != 1, lease * 3);
  fx_spin(&fx, lease); /* latchkey renews meanwhile */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", emu_key), 0);
  if (!EXPECT_HOLD(lk_rwlock_is_held(r, RW_R) == 1, mark, fx_renewal_slack(lease))) {
    ASSERT_LOSS_CODE(rw_try_release(&fx, r, RW_R)); /* it knows */
    free(emu_key);
    redisFree(e);
    fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){r, w, NULL});
    return;
  }
  const int wrc = rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT);
  if (wrc == 0) { /* safety: the writer is never in while r believes it reads */
    ASSERT_EQ(lk_rwlock_is_held(r, RW_R), 0);
    ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  }
  if (EXPECT_HOLD(wrc == LK_ETIMEDOUT, mark, fx_renewal_slack(lease)))
    ASSERT_OK(rw_release(&fx, r, RW_R, NULL));
  else
    ASSERT_LOSS_CODE(rw_try_release(&fx, r, RW_R));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS zr"), 0);
  ASSERT_OK(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  free(emu_key);
  redisFree(e);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){r, w, NULL});
}
