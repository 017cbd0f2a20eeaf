/* Read/write lock basics: sharing and exclusion, reentrancy on both sides,
 * the downgrade, the refused upgrade, the Redisson data layout, wake-ups
 * (a write release wakes every local waiter, a read release one), queries,
 * force release, cancel and close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lockfam_rw_finish.h"
#include "rw_fixture.h"

static char *str(fx_t *fx, const char *fmt, const char *a, const char *b) {
  return rt_cmd_str(fx->srv, fmt, a, b);
}

/* The timeout key of `owner`'s i-th read hold on a name without braces. */
static void hold_key(char *out, size_t n, const char *name, const char *owner, int i) {
  snprintf(out, n, "{%s}:%s:rwlock_timeout:%d", name, owner, i);
}

static long long evalsha_calls(fx_t *fx) {
  char *v = rt_server_info(fx->srv, "commandstats", "cmdstat_evalsha");
  long long n = 0;
  if (v != NULL)
    ASSERT_EQ(sscanf(v, "calls=%lld", &n), 1);
  free(v);
  return n;
}

/* Polls (bounded, loop running) until the server holds no key at all. */
static void wait_db_empty(fx_t *fx) {
  int64_t end = rt_now_ms() + rt_scaled_ms(3000);
  while (rt_server_count_keys(fx->srv, "*") != 0) {
    if (rt_now_ms() > end)
      FAIL("keys left behind");
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
}

/* A fenced try-once acquire of side, run to its end: its status. */
static int acquire_fenced(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  lk_rwlock_opts_t o;
  sx_t s;
  lk_rwlock_opts_init(&o);
  o.fenced = 1;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_rwlock_acquire(rw, side, &o, rw_cb, &s));
  rt_run_until(&fx->loop, &s.done, 5000);
  return s.status;
}

/* A try-once acquire of side, canceled while its command is on its way:
 * it ends LK_ECANCELED. */
static void start_and_cancel(fx_t *fx, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t s;
  rw_start(rw, side, 0, LK_LEASE_DEFAULT, &s);
  ASSERT_OK(lk_rwlock_cancel(rw));
  rt_run_until(&fx->loop, &s.done, 2000);
  ASSERT_EQ(s.status, LK_ECANCELED);
}

TEST(readers_share_writer_excluded) {
  fx_t fx;
  lk_rwlock_t *a, *b, *w;
  char *mode, key[256];
  fx_start(&fx, NULL);
  fx_rwlock_holder_and_others(&fx, "shared", RW_R, LK_LEASE_DEFAULT, &a, &b, &w);
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_rwlock_is_held(a, RW_R), 1);
  ASSERT_EQ(lk_rwlock_is_held(b, RW_R), 1);
  ASSERT_EQ(lk_rwlock_is_held(a, RW_W), 0);
  /* Redisson's layout: mode, one field per reader, one key per read hold. */
  mode = str(&fx, "HGET %s %s", "shared", "mode");
  ASSERT_STREQ(mode, "read");
  free(mode);
  ASSERT_EQ(rw_hget(&fx, "shared", lk_rwlock_owner(a)), 1);
  ASSERT_EQ(rw_hget(&fx, "shared", lk_rwlock_owner(b)), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN shared"), 3);
  hold_key(key, sizeof(key), "shared", lk_rwlock_owner(a), 1);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL %s", key), 25000);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL shared"), 25000);
  /* A writer cannot enter, with or without waiting. */
  ASSERT_EQ(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rw_acquire(&fx, w, RW_W, 150, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(lk_rwlock_hold_count(w, RW_W), 0);
  /* One reader leaves: its field and key go, the lock stays read-locked. */
  int64_t result = -1;
  ASSERT_OK(rw_release(&fx, a, RW_R, &result));
  ASSERT_EQ(result, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS shared %s", lk_rwlock_owner(a)), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 0);
  ASSERT_EQ(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  /* The last reader leaves: the lock is gone, the writer enters and then
   * excludes readers. */
  ASSERT_OK(rw_release(&fx, b, RW_R, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS shared"), 0);
  ASSERT_OK(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT));
  mode = str(&fx, "HGET %s %s", "shared", "mode");
  ASSERT_STREQ(mode, "write");
  free(mode);
  {
    char field[160];
    snprintf(field, sizeof(field), "%s:write", lk_rwlock_owner(w));
    ASSERT_EQ(rw_hget(&fx, "shared", field), 1);
  }
  ASSERT_EQ(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rw_acquire(&fx, b, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_OK(rw_release(&fx, w, RW_W, &result));
  ASSERT_EQ(result, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS shared"), 0);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, b, w, NULL});
}

TEST(reentrancy_on_both_sides) {
  fx_t fx;
  lk_rwlock_t *a, *b;
  char key[256], field[160];
  int64_t result;
  int i;
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "re");
  b = fx_rwlock(&fx, "re");
  for (i = 1; i <= 3; i++) {
    ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
    ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), i);
    hold_key(key, sizeof(key), "re", lk_rwlock_owner(a), i);
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  }
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 3);
  /* Holds go newest first, each with its own key. */
  ASSERT_OK(rw_release(&fx, a, RW_R, &result));
  ASSERT_EQ(result, 0);
  hold_key(key, sizeof(key), "re", lk_rwlock_owner(a), 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 0);
  hold_key(key, sizeof(key), "re", lk_rwlock_owner(a), 2);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_OK(rw_release(&fx, a, RW_R, &result));
  ASSERT_EQ(result, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS re"), 0);
  /* The write side re-enters too, and keeps others out until the last. */
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, 5000)); /* the watchdog's lease stays */
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_W), 2);
  snprintf(field, sizeof(field), "%s:write", lk_rwlock_owner(a));
  ASSERT_EQ(rw_hget(&fx, "re", field), 2);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL re"), 25000);
  ASSERT_OK(rw_release(&fx, a, RW_W, &result));
  ASSERT_EQ(result, 0);
  ASSERT_EQ(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_OK(rw_release(&fx, a, RW_W, &result));
  ASSERT_EQ(result, 1);
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  /* Releasing what the object does not hold is refused at once. */
  ASSERT_EQ(lk_rwlock_release(a, RW_W, rw_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(lk_rwlock_release(a, RW_R, rw_cb, NULL), LK_ENOTHELD);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, b, NULL});
}

/* write -> read -> release write: the owner keeps reading, others may read
 * with it, nobody may write. */
TEST(downgrade) {
  fx_t fx;
  lk_rwlock_t *a, *b, *c;
  char *mode;
  int64_t result;
  fx_start(&fx, NULL);
  fx_rwlock_holder_and_others(&fx, "down", RW_W, LK_LEASE_DEFAULT, &a, &b, &c);
  /* The writer may read; nobody else may. */
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  mode = str(&fx, "HGET %s %s", "down", "mode");
  ASSERT_STREQ(mode, "write");
  free(mode);
  ASSERT_OK(rw_release(&fx, a, RW_W, &result));
  ASSERT_EQ(result, 1);
  mode = str(&fx, "HGET %s %s", "down", "mode");
  ASSERT_STREQ(mode, "read");
  free(mode);
  ASSERT_EQ(lk_rwlock_hold_count(a, RW_R), 1);
  ASSERT_EQ(lk_rwlock_is_held(a, RW_R), 1);
  ASSERT_EQ(lk_rwlock_is_held(a, RW_W), 0);
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_acquire(&fx, c, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  /* ...and the downgraded owner cannot go back up. */
  ASSERT_EQ(lk_rwlock_acquire(a, RW_W, NULL, rw_cb, NULL), LK_EUPGRADE);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_OK(rw_release(&fx, b, RW_R, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS down"), 0);
  ASSERT_OK(rw_acquire(&fx, c, RW_W, 0, LK_LEASE_DEFAULT));
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, b, c, NULL});
}

/* A reader asking for the write side would wait for itself forever: refused
 * at once, also through another object sharing the owner (from the server's
 * answer, with a long budget that must not be spent). */
TEST(upgrade_refused) {
  fx_t fx;
  lk_rwlock_t *a, *twin;
  sx_t s;
  uint64_t t0;
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "up");
  twin = fx_rwlock(&fx, "up");
  ASSERT_OK(lk_rwlock_set_owner(a, NULL, 4242));
  ASSERT_OK(lk_rwlock_set_owner(twin, NULL, 4242));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_rwlock_acquire(a, RW_W, NULL, rw_cb, &s), LK_EUPGRADE);
  t0 = uv_hrtime();
  ASSERT_EQ(rw_acquire_in(&fx.loop, twin, RW_W, 10000, LK_LEASE_DEFAULT, &s), LK_EUPGRADE);
  ASSERT_LT((int64_t)(uv_hrtime() - t0) / 1000000, rt_stall_bound_since_ns(t0, 2000));
  ASSERT_EQ(lk_rwlock_hold_count(twin, RW_W), 0);
  /* The reader's hold is untouched; reading more through the twin is fine. */
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 1);
  ASSERT_OK(rw_acquire(&fx, twin, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 2);
  ASSERT_OK(rw_release(&fx, twin, RW_R, NULL));
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  /* Once nothing is read, writing is fine. */
  ASSERT_OK(rw_acquire(&fx, a, RW_W, 0, LK_LEASE_DEFAULT));
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, twin, NULL});
}

/* A write release publishes "1": every local waiter (readers here) tries
 * again at once and all of them enter. */
TEST(write_release_wakes_every_waiter) {
  enum { N = 3 };
  fx_t fx;
  lk_rwlock_t *w, *r[N];
  sx_t s[N];
  uint64_t t_rel;
  int i;
  fx_start_no_repoll(&fx);
  w = fx_rwlock(&fx, "wake-all");
  ASSERT_OK(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT));
  for (i = 0; i < N; i++) {
    r[i] = fx_rwlock(&fx, "wake-all");
    rw_start(r[i], RW_R, rt_scaled_ms(20000), LK_LEASE_DEFAULT, &s[i]);
  }
  fx_wait_subscribers(&fx, "redisson_rwlock:{wake-all}", 1);
  fx_spin(&fx, 100); /* every waiter has made its post-subscribe try */
  for (i = 0; i < N; i++)
    ASSERT_EQ(s[i].done, 0);
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, w, RW_W, NULL));
  for (i = 0; i < N; i++) {
    rt_run_until(&fx.loop, &s[i].done, 5000);
    ASSERT_OK(s[i].status);
    ASSERT_LT((int64_t)(s[i].t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN wake-all"), 1 + N);
  for (i = 0; i < N; i++)
    fx_close_rwlock(&fx, r[i]);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){w, NULL});
}

/* A read release that frees the lock publishes "0": one local waiter tries
 * again (one writer can use it); the other keeps sleeping, until the first
 * writer's release ("1") wakes it. */
TEST(read_release_wakes_one_waiter) {
  fx_t fx;
  lk_rwlock_t *r, *w1, *w2, *first, *second;
  sx_t s1, s2, *sf, *ss;
  long long calls;
  uint64_t t_rel;
  fx_start_no_repoll(&fx);
  fx_rwlock_holder_and_others(&fx, "wake-one", RW_R, LK_LEASE_DEFAULT, &r, &w1, &w2);
  rw_start(w1, RW_W, rt_scaled_ms(20000), LK_LEASE_DEFAULT, &s1);
  rw_start(w2, RW_W, rt_scaled_ms(20000), LK_LEASE_DEFAULT, &s2);
  fx_wait_subscribers(&fx, "redisson_rwlock:{wake-one}", 1);
  fx_spin(&fx, 100);
  ASSERT_EQ(s1.done + s2.done, 0);
  calls = evalsha_calls(&fx);
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, r, RW_R, NULL));
  /* Exactly one writer gets it, promptly. */
  while (!s1.done && !s2.done)
    uv_run(&fx.loop, UV_RUN_ONCE);
  first = s1.done ? w1 : w2;
  second = s1.done ? w2 : w1;
  sf = s1.done ? &s1 : &s2;
  ss = s1.done ? &s2 : &s1;
  ASSERT_OK(sf->status);
  ASSERT_LT((int64_t)(sf->t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  fx_spin(&fx, 100);
  ASSERT_EQ(ss->done, 0);
  /* The release and one retry: the other waiter did not even try. */
  ASSERT_EQ(evalsha_calls(&fx) - calls, 2);
  t_rel = uv_hrtime();
  ASSERT_OK(rw_release(&fx, first, RW_W, NULL));
  rt_run_until(&fx.loop, &ss->done, 5000);
  ASSERT_OK(ss->status);
  ASSERT_LT((int64_t)(ss->t_ns - t_rel) / 1000000, rt_stall_bound_since_ns(t_rel, 1000));
  ASSERT_EQ(lk_rwlock_hold_count(second, RW_W), 1);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){r, w1, w2, NULL});
}

/* A read hold with an explicit lease ends with it: not renewed, is_held
 * turns false, a writer enters once the lock has expired. */
TEST(explicit_lease_expires) {
  fx_t fx;
  lk_rwlock_t *r, *w;
  sx_t s;
  const int64_t lease = 400;
  uint64_t t_acq;
  fx_start(&fx, NULL);
  r = fx_rwlock(&fx, "short");
  w = fx_rwlock(&fx, "short");
  t_acq = uv_hrtime(); /* the server set the lease after this */
  ASSERT_OK(rw_acquire_in(&fx.loop, r, RW_R, 0, lease, &s));
  ASSERT_LE(rt_cmd_int(fx.srv, "PTTL short"), lease);
  ASSERT_EQ(lk_rwlock_is_held(r, RW_R), 1);
  ASSERT_OK(rw_acquire_in(&fx.loop, w, RW_W, 10000, 5000, &s));
  /* Safety: not before the reader's lease ended (the server's clock has
   * millisecond steps); liveness: soon after. */
  ASSERT_GE((int64_t)(s.t_ns - t_acq) / 1000000, lease - 2);
  ASSERT_LE((int64_t)(s.t_ns - t_acq) / 1000000, lease + rt_stall_bound_since_ns(t_acq, 1500));
  ASSERT_EQ(lk_rwlock_is_held(r, RW_R), 0);
  memset(&s, 0, sizeof(s));
  ASSERT_EQ(lk_rwlock_release(r, RW_R, rw_cb, &s), 0);
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ENOTOWNER);
  ASSERT_EQ(lk_rwlock_hold_count(r, RW_R), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){r, w, NULL});
}

TEST(queries_and_force_release) {
  fx_t fx;
  lk_rwlock_t *a, *b;
  int64_t v;
  char key[256];
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "q");
  b = fx_rwlock(&fx, "q");
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(rw_run(&fx, lk_rwlock_remaining_ttl, a, &v));
  ASSERT_EQ(v, -2);
  ASSERT_OK(rw_run(&fx, lk_rwlock_force_release, a, &v));
  ASSERT_EQ(v, 0);
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, &v));
  ASSERT_EQ(v, LK_RW_READ);
  ASSERT_OK(rw_run(&fx, lk_rwlock_remaining_ttl, a, &v));
  ASSERT_GT(v, 25000);
  ASSERT_EQ(rw_server_holds(&fx, a, RW_R), 2);
  ASSERT_EQ(rw_server_holds(&fx, a, RW_W), 0);
  /* Force release in read mode takes every reader's hold keys with it. */
  ASSERT_OK(rw_run(&fx, lk_rwlock_force_release, b, &v));
  ASSERT_EQ(v, 1);
  ASSERT_EQ(lk_rwlock_hold_count(b, RW_R), 0);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  /* a still counts its holds; the server says they are gone. */
  ASSERT_EQ(rw_release(&fx, a, RW_R, NULL), LK_ENOTOWNER);
  ASSERT_OK(rw_acquire(&fx, b, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, &v));
  ASSERT_EQ(v, LK_RW_WRITE);
  ASSERT_EQ(rw_server_holds(&fx, b, RW_W), 1);
  ASSERT_OK(rw_run(&fx, lk_rwlock_force_release, a, &v));
  ASSERT_EQ(v, 1);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  /* A key of another type is never touched. */
  freeReplyObject(rt_cmd(fx.srv, "SET q precious"));
  ASSERT_EQ(rw_run(&fx, lk_rwlock_force_release, a, &v), LK_EWRONGTYPE);
  ASSERT_EQ(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT), LK_EWRONGTYPE);
  ASSERT_EQ(rw_acquire(&fx, a, RW_W, 2000, LK_LEASE_DEFAULT), LK_EWRONGTYPE);
  ASSERT_EQ(rw_run(&fx, lk_rwlock_mode, a, &v), LK_EWRONGTYPE);
  {
    char *s = rt_cmd_str(fx.srv, "GET q");
    ASSERT_STREQ(s, "precious");
    free(s);
  }
  hold_key(key, sizeof(key), "q", lk_rwlock_owner(a), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 0);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, b, NULL});
}

/* A hash without a mode (an RLock of the same name) is held by someone:
 * neither side takes it over. */
TEST(plain_lock_of_the_same_name_is_not_taken) {
  fx_t fx;
  lk_rwlock_t *rw;
  lk_lock_t *l;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "mixed");
  rw = fx_rwlock(&fx, "mixed");
  ASSERT_OK(sx_acquire(&fx, l, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rw_acquire(&fx, rw, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS mixed mode"), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN mixed"), 1);
  fx_close_lock(&fx, l);
  /* ...and the other way round: the lock does not take a read/write lock. */
  l = fx_lock(&fx, "mixed");
  ASSERT_OK(rw_acquire(&fx, rw, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(sx_acquire(&fx, l, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  fx_close_lock(&fx, l);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){rw, NULL});
}

/* Hash tags and odd names: "a{b}c" keeps its own braces for the hold keys
 * and the channel; names with spaces and CR/LF are ordinary. */
TEST(names_with_braces_and_odd_bytes) {
  fx_t fx;
  lk_rwlock_t *a, *b, *c;
  char key[300];
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "a{b}c");
  b = fx_rwlock(&fx, "a b\r\nc");
  c = fx_rwlock(&fx, "a");
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, b, RW_W, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, c, RW_W, 0, LK_LEASE_DEFAULT));
  snprintf(key, sizeof(key), "a{b}c:%s:rwlock_timeout:1", lk_rwlock_owner(a));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 1);
  {
    const char *argv[] = {"EXISTS", "a b\r\nc"};
    size_t lens[] = {6, 6};
    redisReply *r = rt_cmd_argv(fx.srv, 2, argv, lens);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->integer, 1);
    freeReplyObject(r);
  }
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", key), 0);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, b, c, NULL});
}

TEST(fenced_tokens_increase_across_sides) {
  fx_t fx;
  lk_rwlock_t *a, *b;
  int64_t t1, t2, t3;
  fx_start(&fx, NULL);
  a = fx_rwlock(&fx, "fence");
  b = fx_rwlock(&fx, "fence");
  ASSERT_OK(acquire_fenced(&fx, a, RW_R));
  t1 = lk_rwlock_token(a);
  ASSERT_OK(acquire_fenced(&fx, b, RW_R));
  t2 = lk_rwlock_token(b);
  ASSERT_GT(t2, t1);
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_OK(rw_release(&fx, b, RW_R, NULL));
  ASSERT_OK(acquire_fenced(&fx, a, RW_W));
  t3 = lk_rwlock_token(a);
  ASSERT_GT(t3, t2);
  {
    char *v = rt_cmd_str(fx.srv, "GET redisson_lock_token:{fence}");
    ASSERT_NOT_NULL(v);
    ASSERT_EQ(atoll(v), t3);
    free(v);
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "PTTL redisson_lock_token:{fence}"), -1);
  /* A counter that went backwards (lost data) is refused, then lifted. */
  freeReplyObject(rt_cmd(fx.srv, "SET redisson_lock_token:{fence} 1"));
  ASSERT_OK(rw_release(&fx, a, RW_W, NULL));
  ASSERT_EQ(acquire_fenced(&fx, b, RW_W), LK_ETOKEN);
  ASSERT_EQ(lk_rwlock_hold_count(b, RW_W), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS fence"), 0);
  ASSERT_OK(acquire_fenced(&fx, b, RW_W));
  ASSERT_GT(lk_rwlock_token(b), t3);
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, b, NULL});
}

TEST(cancel_waiting_acquire) {
  fx_t fx;
  lk_rwlock_t *w, *r;
  sx_t s;
  fx_start_rwlock_holder_and_waiter(&fx, "cancel", RW_W, RW_R, 10000, &w, &r, &s);
  fx_wait_subscribers(&fx, "redisson_rwlock:{cancel}", 1);
  ASSERT_OK(lk_rwlock_cancel(r));
  ASSERT_EQ(s.done, 0); /* never inside the call */
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_rwlock_cancel(r), LK_EINVAL);
  ASSERT_EQ(lk_rwlock_hold_count(r, RW_R), 0);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){r, w, NULL});
}

/* A canceled acquire whose command is already on its way: the late grant is
 * given back by the client, nothing is left. */
TEST(cancel_in_flight_gives_back_late_grant) {
  fx_t fx;
  lk_rwlock_t *a = fx_start_rwlock(&fx, "late");
  int side;
  for (side = RW_R; side <= RW_W; side++) {
    start_and_cancel(&fx, a, (lk_rwlock_side_t)side);
    /* Commands leave in order: once this query is answered, the acquire
     * was answered too and any give-back is on its way. */
    ASSERT_OK(rw_run(&fx, lk_rwlock_mode, a, NULL));
    wait_db_empty(&fx);
  }
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, NULL});
}

/* Close gives back both sides (a downgrade in progress here) and the
 * canceled acquire's callback comes first. */
TEST(close_releases_both_sides) {
  fx_t fx;
  lk_rwlock_t *a, *b;
  sx_t s;
  int closed = 0;
  fx_start(&fx, NULL);
  fx_rwlock_holder_and_others(&fx, "close", RW_W, LK_LEASE_DEFAULT, &a, &b, NULL);
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(rw_acquire(&fx, a, RW_R, 0, 10000));
  rw_start(b, RW_R, 10000, LK_LEASE_DEFAULT, &s);
  fx_spin(&fx, 50);
  lk_rwlock_set_data(b, &closed);
  ASSERT_OK(lk_rwlock_close(b, fx_rwlock_closed_cb));
  ASSERT_EQ(lk_rwlock_close(b, NULL), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 2000);
  ASSERT_EQ(s.done, 1);
  ASSERT_EQ(s.status, LK_ECANCELED);
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, NULL});
}

static void close_in_cb(lk_rwlock_t *rw, int status, void *arg) {
  int *flag = arg;
  ASSERT_OK(status);
  lk_rwlock_set_data(rw, flag);
  ASSERT_OK(lk_rwlock_close(rw, fx_rwlock_closed_cb));
}

TEST(close_from_inside_callback_releases) {
  fx_t fx;
  lk_rwlock_t *a = fx_start_rwlock(&fx, "inside");
  int closed = 0;
  ASSERT_OK(lk_rwlock_acquire(a, RW_W, NULL, close_in_cb, &closed));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish(&fx);
}

/* Readers that died leave their fields behind (their hold keys expire): the
 * release of the last live reader finds no live hold, deletes the lock and
 * wakes a writer at once. While a live reader remains, the lock stays and
 * its TTL is never shortened (docs/rwlock.md, "Read release"). */
TEST(dead_readers_never_keep_writers_out) {
  fx_t fx;
  lk_rwlock_t *a, *b, *w;
  int i;
  fx_start(&fx, NULL);
  fx_rwlock_holder_and_others(&fx, "dead", RW_R, 60000, &a, &b, &w);
  ASSERT_OK(rw_acquire(&fx, b, RW_R, 0, LK_LEASE_DEFAULT));
  /* Twenty readers whose hold keys are gone: dead. */
  for (i = 0; i < 20; i++)
    freeReplyObject(rt_cmd(fx.srv, "HSET dead 11111111-1111-4111-8111-%012d:1 2", i));
  /* a leaves: b still reads; the 60 s TTL a's lease gave the lock stays. */
  ASSERT_OK(rw_release(&fx, a, RW_R, NULL));
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL dead"), 55000);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS dead %s", lk_rwlock_owner(b)), 1);
  ASSERT_EQ(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT), LK_ETIMEDOUT);
  /* b leaves: nobody alive holds it any more. */
  ASSERT_OK(rw_release(&fx, b, RW_R, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS dead"), 0);
  ASSERT_OK(rw_acquire(&fx, w, RW_W, 0, LK_LEASE_DEFAULT));
  rw_finish_empty(&fx, (lk_rwlock_t *[]){a, b, w, NULL});
}

/* A re-entry canceled in flight, then at once another acquire, or a
 * release: the server's late grant is given back first, and the new command
 * waits for that (sent earlier, the acquire would take the late grant for
 * its own and then lose it to the give-back; the release would drop the late
 * grant and leave a hold nobody counts). Counts agree afterwards. */
TEST(commands_after_a_canceled_reentry_wait_for_its_give_back) {
  fx_t fx;
  lk_rwlock_t *a = fx_start_rwlock(&fx, "settle");
  sx_t t;
  int side;
  for (side = RW_R; side <= RW_W; side++) {
    ASSERT_OK(rw_acquire(&fx, a, (lk_rwlock_side_t)side, 0, LK_LEASE_DEFAULT));
    /* A re-entry goes out and is canceled; at once another acquire. */
    start_and_cancel(&fx, a, (lk_rwlock_side_t)side);
    rw_start(a, (lk_rwlock_side_t)side, 0, LK_LEASE_DEFAULT, &t);
    rt_run_until(&fx.loop, &t.done, 5000);
    ASSERT_OK(t.status);
    ASSERT_EQ(lk_rwlock_hold_count(a, (lk_rwlock_side_t)side), 2);
    ASSERT_EQ(rw_server_holds(&fx, a, (lk_rwlock_side_t)side), 2);
    /* Again, with a release right after the cancel. */
    start_and_cancel(&fx, a, (lk_rwlock_side_t)side);
    ASSERT_OK(rw_release(&fx, a, (lk_rwlock_side_t)side, NULL));
    ASSERT_EQ(lk_rwlock_hold_count(a, (lk_rwlock_side_t)side), 1);
    ASSERT_EQ(rw_server_holds(&fx, a, (lk_rwlock_side_t)side), 1);
    ASSERT_OK(rw_release(&fx, a, (lk_rwlock_side_t)side, NULL));
    ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  }
  fx_finish_rwlocks(&fx, (lk_rwlock_t *[]){a, NULL});
}
