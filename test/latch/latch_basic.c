/* Countdown latch basics: arming, counting down, the data and messages a
 * Redisson client sees, awaits with and without a budget, re-arming,
 * delete under awaiters, cancel and close, and hygiene after close. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latch_open.h"
#include "raw_sub.h"
#include "redisson_emu.h"

#define CHANNEL(name) "redisson_countdownlatch__channel__{" name "}"

/* Waiters' re-poll far above every bound asserted here: a prompt wake-up can
 * only come from a notification. */
#define NO_REPOLL_MS 600000

static void start(fx_t *fx, int64_t max_repoll_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  if (max_repoll_ms > 0)
    o.max_repoll_ms = max_repoll_ms;
  fx_start_with(fx, NULL, &o);
}

/* The whole life of a latch, with Redisson's data and messages at each
 * step; every private key is gone once the objects are closed. */
TEST(arm_count_down_open) {
  fx_t fx;
  lk_latch_t *a, *b;
  redisContext *sub;
  int64_t res = -9;
  start(&fx, 0);
  a = lx_new(&fx, "job", 0);
  b = lx_new(&fx, "job", 0);
  sub = rs_subscribe(&fx, CHANNEL("job"));
  ASSERT_STREQ(lk_latch_name(a), "job");
  ASSERT_EQ(lk_latch_is_strict(a), 0);

  ASSERT_OK(lx_set(&fx.loop, a, 3, &res));
  ASSERT_EQ(res, 1);
  rs_expect_message(sub, "1"); /* re-armed */
  ASSERT_OK(lx_set(&fx.loop, b, 7, &res)); /* armed already: untouched */
  ASSERT_EQ(res, 0);
  rs_expect_no_message(sub, 50);
  {
    char *v = rt_cmd_str(fx.srv, "GET job");
    ASSERT_STREQ(v, "3"); /* Redisson's layout: a plain decimal string, no TTL */
    free(v);
  }
  ASSERT_EQ(rt_cmd_int(fx.srv, "PTTL job"), -1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, b, &res));
  ASSERT_EQ(res, 3);

  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, a, &res));
  ASSERT_EQ(res, 2);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, b, &res));
  ASSERT_EQ(res, 1);
  rs_expect_no_message(sub, 50);
  ASSERT_EQ(lx_await(&fx.loop, b, 0), LK_ETIMEDOUT); /* look once: still armed */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, a, &res));
  ASSERT_EQ(res, 0); /* this call opened it */
  rs_expect_message(sub, "0");
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS job"), 0); /* absent = open */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, b, &res));
  ASSERT_EQ(res, -1); /* open already: nothing counted, nothing published */
  rs_expect_no_message(sub, 50);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS job"), 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, b, &res));
  ASSERT_EQ(res, 0);
  ASSERT_OK(lx_await(&fx.loop, b, 0));
  ASSERT_OK(lx_await(&fx.loop, a, -1));

  /* Each writing object kept one request record; closing removes it. */
  ASSERT_EQ(lx_count_keys(fx.srv, "latchkey_latch_req*"), 2);
  lx_close(&fx.loop, a);
  lx_close(&fx.loop, b);
  FX_EVENTUALLY(&fx, lx_count_keys(fx.srv, "*") == 0, 2000);
  ASSERT_EQ(rt_server_numsub(fx.srv, CHANNEL("job")), 1); /* only the raw subscriber */
  redisFree(sub);
  fx_finish(&fx);
}

/* A waiting await is released by the count_down that opens the latch, by
 * its message (re-polling is out of reach), and not before. */
TEST(awaiter_released_by_final_count_down) {
  fx_t fx;
  lk_latch_t *w, *c;
  lx_t s;
  int64_t res;
  uint64_t before_last;
  start(&fx, NO_REPOLL_MS);
  w = lx_new(&fx, "rel", 0);
  c = lx_new_counting(&fx, "rel", 0, 2);
  lx_await_start(w, -1, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("rel"), 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(s.done, 0); /* never opens early */
  before_last = uv_hrtime();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_OK(s.status);
  ASSERT_GE(s.t_ns, before_last);
  ASSERT_LT((int64_t)((s.t_ns - before_last) / 1000000u),
            rt_stall_bound_since_ns(before_last, 1000));
  lx_finish(&fx, (lk_latch_t *[]){w, c, NULL});
}

/* The budget bounds the wait on both sides: not before it, and not much
 * after. wait 0 looks once. */
TEST(await_with_timeout) {
  fx_t fx;
  lk_latch_t *w;
  lx_t s;
  uint64_t t0;
  int64_t took;
  start(&fx, 0);
  w = lx_new_counting(&fx, "to", 0, 1);
  t0 = uv_hrtime();
  ASSERT_EQ(lx_await(&fx.loop, w, 0), LK_ETIMEDOUT);
  ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  t0 = uv_hrtime();
  lx_await_start(w, 300, &s);
  rt_run_until(&fx.loop, &s.done, 3000);
  took = (int64_t)((s.t_ns - t0) / 1000000u);
  ASSERT_EQ(s.status, LK_ETIMEDOUT);
  ASSERT_GE(took, 300);
  ASSERT_LT(took, 300 + rt_stall_bound_since_ns(t0, 1000));
  ASSERT_EQ(lx_get(fx.srv, "to", -1), 1); /* an await changes nothing */
  lx_finish(&fx, (lk_latch_t *[]){w, NULL});
}

/* A message that never comes costs one re-poll interval, never the wait:
 * the latch is opened behind the library's back (DEL, no publish). */
TEST(lost_message_costs_one_repoll) {
  fx_t fx;
  lk_latch_t *w;
  lx_t s;
  uint64_t t0;
  start(&fx, 200);
  w = lx_new_counting(&fx, "quiet", 0, 1);
  lx_await_start(w, -1, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("quiet"), 1);
  fx_spin(&fx, 30);
  ASSERT_EQ(s.done, 0);
  t0 = uv_hrtime();
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL quiet"), 1);
  rt_run_until(&fx.loop, &s.done, 3000);
  ASSERT_OK(s.status);
  ASSERT_LT((int64_t)((s.t_ns - t0) / 1000000u), 200 + rt_stall_bound_since_ns(t0, 500));
  lx_finish(&fx, (lk_latch_t *[]){w, NULL});
}

/* After opening, the latch can be armed again: awaiters wait again, and
 * the next final count_down releases them. */
TEST(rearm_after_open) {
  fx_t fx;
  lk_latch_t *w, *c;
  lx_t s;
  int64_t res;
  redisContext *sub;
  start(&fx, NO_REPOLL_MS);
  w = lx_new(&fx, "again", 0);
  c = lx_new(&fx, "again", 0);
  sub = rs_subscribe(&fx, CHANNEL("again"));
  ASSERT_OK(lx_set(&fx.loop, c, 1, NULL));
  rs_expect_message(sub, "1");
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rs_expect_message(sub, "0");
  ASSERT_OK(lx_await(&fx.loop, w, 0)); /* open */

  ASSERT_OK(lx_set(&fx.loop, c, 2, &res));
  ASSERT_EQ(res, 1);
  rs_expect_message(sub, "1");
  ASSERT_EQ(lx_await(&fx.loop, w, 0), LK_ETIMEDOUT); /* armed again */
  lx_await_start(w, 20000, &s);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("again"), 2);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  fx_spin(&fx, 30);
  ASSERT_EQ(s.done, 0);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  rs_expect_message(sub, "0");
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_OK(s.status);
  redisFree(sub);
  lx_finish(&fx, (lk_latch_t *[]){w, c, NULL});
}

/* delete() releases pending awaiters with LK_EDELETED, interop and strict
 * alike, promptly (Redisson's "1" message makes them look); Redisson
 * clients get their "1". A fresh await then reads the absent key the way
 * its mode says. */
TEST(delete_releases_awaiters) {
  fx_t fx;
  lk_latch_t *w1, *w2, *d;
  lx_t s1, s2;
  int64_t res;
  uint64_t t0;
  redisContext *sub;
  start(&fx, NO_REPOLL_MS);
  w1 = lx_new(&fx, "gone", 0);
  w2 = lx_new(&fx, "gone", 1);
  d = lx_new(&fx, "gone", 0);
  sub = rs_subscribe(&fx, CHANNEL("gone"));
  ASSERT_OK(lx_set(&fx.loop, d, 5, NULL));
  rs_expect_message(sub, "1");
  lx_await_start(w1, -1, &s1);
  lx_await_start(w2, -1, &s2);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("gone"), 2);
  fx_spin(&fx, 30);
  t0 = uv_hrtime();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_delete, d, &res));
  ASSERT_EQ(res, 1);
  rs_expect_message(sub, "1");
  rt_run_until(&fx.loop, &s1.done, 2000);
  rt_run_until(&fx.loop, &s2.done, 2000);
  ASSERT_EQ(s1.status, LK_EDELETED);
  ASSERT_EQ(s2.status, LK_EDELETED);
  ASSERT_LT((int64_t)((s1.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT_LT((int64_t)((s2.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS gone"), 0);
  {
    long long ttl = rt_cmd_int(fx.srv, "PTTL latchkey_latch_deleted:{gone}");
    ASSERT_GT(ttl, 0);
    ASSERT_LE(ttl, 300000 + 4 * 1000 * 1000); /* bounded, not forever */
  }
  /* Nothing left to delete. */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_delete, d, &res));
  ASSERT_EQ(res, 0);
  rs_expect_no_message(sub, 50);
  /* Afterwards: absent is "open" for interop, deleted for strict. */
  ASSERT_OK(lx_await(&fx.loop, w1, 0));
  ASSERT_EQ(lx_await(&fx.loop, w2, 0), LK_EDELETED);
  /* Re-armed after the deletion: an await that saw it armed is released
   * as opened, not as deleted, by the next final count_down. */
  ASSERT_OK(lx_set(&fx.loop, d, 1, NULL));
  lx_await_start(w1, 20000, &s1);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("gone"), 2);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, d, &res));
  ASSERT_EQ(res, 0);
  rt_run_until(&fx.loop, &s1.done, 2000);
  ASSERT_OK(s1.status);
  redisFree(sub);
  lx_finish(&fx, (lk_latch_t *[]){w1, w2, d, NULL});
}

/* Cancel and close end a pending await exactly once, from the loop, and
 * leave no subscription behind. */
TEST(cancel_and_close_pending_await) {
  fx_t fx;
  lk_latch_t *w1, *w2;
  lx_t s1, s2;
  int closed = 0;
  start(&fx, 0);
  w1 = lx_new(&fx, "cc", 0);
  w2 = lx_new(&fx, "cc", 0);
  ASSERT_OK(lx_set(&fx.loop, w1, 1, NULL));
  ASSERT_EQ(lk_latch_cancel(w1), LK_EINVAL); /* nothing pending */
  lx_await_start(w1, -1, &s1);
  lx_await_start(w2, -1, &s2);
  ASSERT_EQ(lk_latch_count_down(w1, lx_cb, &s2), LK_EBUSY);
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL("cc"), 1);
  ASSERT_OK(lk_latch_cancel(w1));
  ASSERT_EQ(s1.done, 0); /* never inside the call */
  ASSERT_EQ(lk_latch_cancel(w1), LK_EINVAL); /* its completion is queued */
  rt_run_until(&fx.loop, &s1.done, 2000);
  ASSERT_EQ(s1.status, LK_ECANCELED);
  lk_latch_set_data(w2, &closed);
  ASSERT_OK(lk_latch_close(w2, lx_closed_cb));
  ASSERT_EQ(s2.done, 0);
  ASSERT_EQ(lk_latch_close(w2, lx_closed_cb), LK_ECLOSED);
  ASSERT_EQ(lk_latch_await(w2, 0, lx_cb, &s2), LK_ECLOSED);
  rt_run_until(&fx.loop, &closed, 2000);
  ASSERT_EQ(s2.done, 1);
  ASSERT_EQ(s2.status, LK_ECANCELED);
  ASSERT_EQ(s1.calls, 1);
  ASSERT_EQ(s2.calls, 1);
  /* After the channel's linger (2 s, ended on a heartbeat tick). */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, CHANNEL("cc")) == 0, 5000);
  lx_finish(&fx, (lk_latch_t *[]){w1, NULL});
}

typedef struct closer_s {
  fx_t *fx;
  int closed;
  int calls;
  int status;
} closer_t;

static void closer_closed(lk_latch_t *l) {
  closer_t *c = lk_latch_get_data(l);
  c->closed = 1;
}

static void close_in_cb(lk_latch_t *l, int status, void *arg) {
  closer_t *c = arg;
  c->calls++;
  c->status = status;
  lk_latch_set_data(l, c);
  ASSERT_OK(lk_latch_close(l, closer_closed));
}

/* Any lk_ call may be made inside a callback, closing the object included. */
TEST(close_from_inside_callback) {
  fx_t fx;
  lk_latch_t *l;
  closer_t c;
  memset(&c, 0, sizeof(c));
  start(&fx, 0);
  l = lx_new(&fx, "inside", 0);
  ASSERT_OK(lk_latch_try_set_count(l, 2, close_in_cb, &c));
  rt_run_until(&fx.loop, &c.closed, 5000);
  ASSERT_EQ(c.calls, 1);
  ASSERT_OK(c.status);
  ASSERT_EQ(lx_get(fx.srv, "inside", -1), 2);
  fx_finish(&fx);
}

/* Names are binary-safe. A name with a brace is refused (issue 25): the
 * channel wraps the raw name in braces (Redisson's rule), so its hash tag
 * could never be the one of the latch's keys (docs/objects.md, "Names and
 * cluster slots"); the same on a standalone server as on a cluster. */
TEST(names_with_spaces_work_names_with_braces_are_refused) {
  fx_t fx;
  lk_latch_t *a, *b, *refused = NULL;
  redisContext *sub;
  int64_t res;
  start(&fx, 0);
  ASSERT_EQ(lk_latch_new(fx.c, "a{b}c", NULL, &refused), LK_EINVAL);
  ASSERT_NULL(refused);
  ASSERT_NOT_NULL(strstr(lk_client_error_text(fx.c), "latch name \"a{b}c\" refused"));
  a = lx_new(&fx, "a-b.c", 1);
  b = lx_new(&fx, "a b\r\n", 0);
  sub = rs_subscribe(&fx, "redisson_countdownlatch__channel__{a-b.c}");
  ASSERT_OK(lx_set(&fx.loop, a, 1, NULL));
  rs_expect_message(sub, "1");
  ASSERT_OK(lx_set(&fx.loop, b, 4, NULL));
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, a, &res));
  ASSERT_EQ(res, 0);
  rs_expect_message(sub, "0");
  /* strict marker under the name's tag */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS latchkey_latch_open:{a-b.c}"), 1);
  {
    const char *argv[2] = {"GET", "a b\r\n"};
    redisReply *r = rt_cmd_argv(fx.srv, 2, argv, NULL);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->type, REDIS_REPLY_STRING);
    ASSERT_STREQ(r->str, "4");
    freeReplyObject(r);
  }
  redisFree(sub);
  lx_finish(&fx, (lk_latch_t *[]){a, b, NULL});
}

/* A key of another kind under the name is never touched: every operation
 * reports LK_EWRONGTYPE. */
TEST(wrong_type_key_is_left_alone) {
  fx_t fx;
  lk_latch_t *l;
  int64_t res;
  start(&fx, 0);
  l = lx_new(&fx, "h", 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HSET h f 1"), 1);
  ASSERT_EQ(lx_set(&fx.loop, l, 3, NULL), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_count_down, l, NULL), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_get_count, l, NULL), LK_EWRONGTYPE);
  ASSERT_NE(strlen(lk_latch_error_text(l)), 0);
  ASSERT_EQ(lx_await(&fx.loop, l, 1000), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_delete, l, NULL), LK_EWRONGTYPE);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN h"), 1);
  /* A string that is not a count is not a latch either. */
  lx_close(&fx.loop, l);
  l = lx_new(&fx, "s", 0);
  {
    char *ok = rt_cmd_str(fx.srv, "SET s hello");
    free(ok);
  }
  ASSERT_EQ(lx_await(&fx.loop, l, 0), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_get_count, l, &res), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_count_down, l, NULL), LK_EWRONGTYPE);
  ASSERT_EQ(lx_set(&fx.loop, l, 3, NULL), LK_EWRONGTYPE);
  ASSERT_EQ(lx_run(&fx.loop, lk_latch_delete, l, NULL), LK_EWRONGTYPE);
  {
    char *v = rt_cmd_str(fx.srv, "GET s");
    ASSERT_STREQ(v, "hello");
    free(v);
  }
  lx_finish(&fx, (lk_latch_t *[]){l, NULL});
}
