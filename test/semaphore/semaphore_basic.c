/* Counting semaphore: counts and layout, held permits, waiting and waking,
 * cancel and close, bad inputs. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redisson_emu.h"
#include "never_cb.h"
#include "sem_fixture.h"

/* A second client (or the same) on the channel, fed by a blocking reader. */
static redisContext *subscribe_side(fx_t *fx, const char *channel) {
  redisContext *sub = rt_rlock_connect(rt_server_port(fx->srv));
  redisReply *r = redisCommand(sub, "SUBSCRIBE %s", channel);
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  return sub;
}

static long long next_message(redisContext *sub) {
  redisReply *m = rt_sub_next_message(sub, rt_scaled_ms(2000));
  long long v;
  ASSERT_NOT_NULL(m);
  v = strtoll(m->element[2]->str, NULL, 10);
  freeReplyObject(m);
  return v;
}

TEST(counts_layout_and_messages) {
  fx_t fx;
  lk_semaphore_t *s = fx_start_sem(&fx, "pool");
  redisContext *sub;
  int64_t r = -1;
  sx_t x;
  sub = subscribe_side(&fx, "redisson_sc:{pool}");
  /* Absent: no permits, nothing to wait for with wait 0. */
  ASSERT_EQ(sem_acquire(&fx, s, 1, 0), LK_ETIMEDOUT);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 3, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(next_message(sub), 3);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 7, &r));
  ASSERT_EQ(r, 0); /* exists: left alone */
  ASSERT_EQ(srv_count(fx.srv, "pool"), 3);
  /* Redisson's layout: a plain string holding the count. */
  {
    char *t = rt_cmd_str(fx.srv, "TYPE pool");
    ASSERT_STREQ(t, "string");
    free(t);
  }
  ASSERT_OK(sem_acquire_in(&fx.loop, s, 2, 0, &x));
  ASSERT_EQ(x.result, 1); /* left available */
  ASSERT_EQ(lk_semaphore_held(s), 2);
  ASSERT_EQ(srv_count(fx.srv, "pool"), 1);
  ASSERT_EQ(sem_acquire(&fx, s, 2, 0), LK_ETIMEDOUT);
  ASSERT_EQ(lk_semaphore_held(s), 2);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 1, &r));
  ASSERT_EQ(r, 2);
  ASSERT_EQ(next_message(sub), 2); /* the new count, as Redisson publishes it */
  ASSERT_EQ(lk_semaphore_held(s), 1);
  /* More than held: refused at once, nothing sent, no callback. */
  ASSERT_EQ(lk_semaphore_release(s, 2, sem_cb, NULL), LK_ENOTHELD);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 1, &r));
  ASSERT_EQ(r, 3);
  ASSERT_EQ(next_message(sub), 3);
  ASSERT_EQ(lk_semaphore_held(s), 0);
  ASSERT_EQ(lk_semaphore_release(s, 1, sem_cb, NULL), LK_ENOTHELD);
  ASSERT_OK(sem_run(&fx, lk_semaphore_available, s, &r));
  ASSERT_EQ(r, 3);
  redisFree(sub);
  fx_close_sem(&fx, s);
  /* The request mark went with the object; only the count stays. */
  ASSERT_EQ(srv_keys_matching(fx.srv, "latchkey_semaphore_req"), 0);
  ASSERT_EQ(srv_count(fx.srv, "pool"), 3);
  fx_finish(&fx);
}

TEST(add_drain_and_negative_counts) {
  fx_t fx;
  lk_semaphore_t *s = fx_start_sem(&fx, "adds");
  int64_t r = -1;
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, 5, &r));
  ASSERT_EQ(r, 5);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, -7, &r));
  ASSERT_EQ(r, -2); /* Redisson allows a negative count */
  ASSERT_EQ(sem_acquire(&fx, s, 1, 0), LK_ETIMEDOUT);
  /* Draining a negative count takes nothing and invents nothing. */
  ASSERT_OK(sem_run(&fx, lk_semaphore_drain, s, &r));
  ASSERT_EQ(r, 0);
  ASSERT_EQ(srv_count(fx.srv, "adds"), -2);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, 4, &r));
  ASSERT_EQ(r, 2);
  ASSERT_OK(sem_run(&fx, lk_semaphore_drain, s, &r));
  ASSERT_EQ(r, 2);
  ASSERT_EQ(lk_semaphore_held(s), 2); /* drained permits are held */
  ASSERT_OK(sem_run(&fx, lk_semaphore_available, s, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, &r));
  ASSERT_EQ(r, 2);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, 0, &r));
  ASSERT_EQ(r, 2);
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, NULL});
}

TEST(release_unheld_is_explicit) {
  fx_t fx;
  lk_semaphore_t *s = fx_start_sem(&fx, "jdk");
  int64_t r = -1;
  ASSERT_EQ(lk_semaphore_release(s, 1, sem_cb, NULL), LK_ENOTHELD);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release_unheld, s, 2, &r));
  ASSERT_EQ(r, 2);
  ASSERT_EQ(lk_semaphore_held(s), 0);
  ASSERT_OK(sem_acquire(&fx, s, 2, 0));
  ASSERT_EQ(lk_semaphore_held(s), 2);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release_unheld, s, 1, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(lk_semaphore_held(s), 2); /* not counted against what it holds */
  /* Closing gives back the 2 it held. */
  fx_finish_sems_count(&fx, "jdk", 3, (lk_semaphore_t *[]){s, NULL});
}

TEST(bad_inputs_are_refused_at_once) {
  fx_t fx;
  lk_semaphore_t *s, *out = NULL;
  lk_semaphore_opts_t o;
  int64_t r = 0;
  sx_t x;
  char big[5000];
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_semaphore_new(NULL, "x", &out), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_new(fx.c, NULL, &out), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_new(fx.c, "", &out), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_new(fx.c, "x", NULL), LK_EINVAL);
  memset(big, 'n', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  ASSERT_EQ(lk_semaphore_new(fx.c, big, &out), LK_ENAMETOOLONG);
  ASSERT_NULL(out);
  s = fx_sem(&fx, "bad");
  lk_semaphore_opts_init(&o);
  ASSERT_EQ(lk_semaphore_acquire(s, &o, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_acquire(NULL, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.permits = 0;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.permits = -1;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.permits = LK_SEMAPHORE_MAX_PERMITS + 1;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.permits = INT64_MIN;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.permits = 1;
  o.wait_ms = -2;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  o.wait_ms = INT64_MAX;
  ASSERT_EQ(lk_semaphore_acquire(s, &o, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_try_acquire(s, 0, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_release(s, 0, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_release(s, -3, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_release_unheld(s, 0, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_release_unheld(s, LK_SEMAPHORE_MAX_PERMITS + 1, rt_never_sem_cb, NULL),
            LK_EINVAL);
  ASSERT_EQ(lk_semaphore_try_set_permits(s, -1, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_try_set_permits(s, LK_SEMAPHORE_MAX_PERMITS + 1, rt_never_sem_cb, NULL),
            LK_EINVAL);
  ASSERT_EQ(lk_semaphore_add_permits(s, INT64_MIN, rt_never_sem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_add_permits(s, LK_SEMAPHORE_MAX_PERMITS + 1, rt_never_sem_cb, NULL),
            LK_EINVAL);
  ASSERT_EQ(lk_semaphore_cancel(s), LK_EINVAL); /* nothing pending */
  ASSERT_EQ(lk_semaphore_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_semaphore_available(s, NULL, NULL), LK_EINVAL);

  /* Counts that would overflow on the server: refused there, unchanged. */
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, LK_SEMAPHORE_MAX_PERMITS, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_release_unheld, s, 1, &r), LK_EINVAL);
  ASSERT(strstr(lk_semaphore_error_text(s), "ERANGE") != NULL);
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_add_permits, s, 1, &r), LK_EINVAL);
  ASSERT_EQ(srv_count(fx.srv, "bad"), LK_SEMAPHORE_MAX_PERMITS);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, -LK_SEMAPHORE_MAX_PERMITS, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, -LK_SEMAPHORE_MAX_PERMITS, &r));
  ASSERT_EQ(r, -LK_SEMAPHORE_MAX_PERMITS);
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_add_permits, s, -1, &r), LK_EINVAL);
  ASSERT_EQ(srv_count(fx.srv, "bad"), -LK_SEMAPHORE_MAX_PERMITS);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, LK_SEMAPHORE_MAX_PERMITS, &r));
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_add_permits, s, LK_SEMAPHORE_MAX_PERMITS, &r));
  /* Held + n past the maximum: refused before sending. */
  ASSERT_OK(sem_acquire(&fx, s, LK_SEMAPHORE_MAX_PERMITS, 0));
  ASSERT_EQ(lk_semaphore_held(s), LK_SEMAPHORE_MAX_PERMITS);
  ASSERT_EQ(lk_semaphore_try_acquire(s, 1, rt_never_sem_cb, NULL), LK_EINVAL);

  /* One operation at a time. */
  memset(&x, 0, sizeof x);
  ASSERT_OK(lk_semaphore_available(s, sem_cb, &x));
  ASSERT_EQ(lk_semaphore_available(s, rt_never_sem_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_semaphore_release(s, 1, rt_never_sem_cb, NULL), LK_EBUSY);
  rt_run_until(&fx.loop, &x.done, 5000);
  ASSERT_OK(x.status);
  ASSERT_EQ(x.result, 0);

  fx_close_sem(&fx, s);
  ASSERT_EQ(srv_count(fx.srv, "bad"), LK_SEMAPHORE_MAX_PERMITS);
  ASSERT_EQ(lk_semaphore_close(NULL, NULL), LK_EINVAL);
  fx_finish(&fx);
  ASSERT_EQ(rt_never_calls, 0);
}

TEST(wrong_type_and_garbage_values_are_left_alone) {
  fx_t fx;
  lk_semaphore_t *s, *g;
  int64_t r;
  char *v;
  fx_start(&fx, NULL);
  freeReplyObject(rt_cmd(fx.srv, "HSET wt f 1"));
  freeReplyObject(rt_cmd(fx.srv, "SET garbage precious"));
  s = fx_sem(&fx, "wt");
  g = fx_sem(&fx, "garbage");
  ASSERT_EQ(sem_acquire(&fx, s, 1, 2000), LK_EWRONGTYPE); /* no waiting on it */
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_release_unheld, s, 1, &r), LK_EWRONGTYPE);
  ASSERT_EQ(sem_run(&fx, lk_semaphore_available, s, &r), LK_EWRONGTYPE);
  ASSERT_EQ(sem_acquire(&fx, g, 1, 0), LK_EREDIS);
  ASSERT(strstr(lk_semaphore_error_text(g), "not an integer") != NULL);
  ASSERT_EQ(sem_run_n(&fx, lk_semaphore_add_permits, g, 1, &r), LK_EREDIS);
  ASSERT_EQ(sem_run(&fx, lk_semaphore_available, g, &r), LK_EPROTOCOL);
  v = rt_cmd_str(fx.srv, "GET garbage");
  ASSERT_STREQ(v, "precious");
  free(v);
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN wt"), 1);
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, g, NULL});
}

/* A waiter is woken by the release message: re-polling is slowed far past
 * the bound, so only the notification explains a prompt acquisition. */
TEST(waiter_wakes_on_release_message) {
  fx_t fx;
  lk_client_opts_t o;
  lk_semaphore_t *a, *b;
  sx_t w, rel;
  uint64_t t_rel;
  lk_client_stats_t st;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 600000;
  o.pubsub_linger_ms = 0; /* the channel goes with its last waiter (checked below) */
  fx_start_with(&fx, NULL, &o);
  a = fx_sem(&fx, "wake");
  b = fx_sem(&fx, "wake");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, a, 2, NULL));
  ASSERT_OK(sem_acquire(&fx, a, 2, 0));
  sem_start_acquire(b, 1, 20000, &w);
  fx_wait_subscribers(&fx, "redisson_sc:{wake}", 1);
  fx_spin(&fx, 50);
  ASSERT_EQ(w.done, 0);
  memset(&rel, 0, sizeof rel);
  t_rel = uv_hrtime();
  ASSERT_OK(lk_semaphore_release(a, 1, sem_cb, &rel));
  rt_run_until(&fx.loop, &w.done, 5000);
  ASSERT_OK(w.status);
  ASSERT_LT((int64_t)((w.t_ns - t_rel) / 1000000u), rt_stall_bound_since_ns(t_rel, 500));
  rt_run_until(&fx.loop, &rel.done, 5000);
  ASSERT_OK(rel.status);
  ASSERT_EQ(lk_semaphore_held(b), 1);
  ASSERT_EQ(lk_semaphore_held(a), 1);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.acquire_waits, 1);
  /* The waiter left the channel once it acquired. */
  fx_spin(&fx, 20);
  ASSERT_EQ(rt_server_numsub(fx.srv, "redisson_sc:{wake}"), 0);
  fx_finish_sems_count(&fx, "wake", 2, (lk_semaphore_t *[]){a, b, NULL});
}

/* Three local waiters for one permit each; a release of two wakes two of
 * them (the message carries the count), the third keeps waiting. */
TEST(release_wakes_as_many_waiters_as_permits) {
  fx_t fx;
  lk_client_opts_t o;
  lk_semaphore_t *a, *w[3];
  sx_t x[3];
  int i, done;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 600000;
  fx_start_with(&fx, NULL, &o);
  a = fx_sem(&fx, "many");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, a, 2, NULL));
  ASSERT_OK(sem_acquire(&fx, a, 2, 0));
  for (i = 0; i < 3; i++) {
    w[i] = fx_sem(&fx, "many");
    sem_start_acquire(w[i], 1, 30000, &x[i]);
  }
  fx_wait_subscribers(&fx, "redisson_sc:{many}", 1);
  fx_spin(&fx, 50);
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, a, 2, NULL));
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(3000);
    do {
      uv_run(&fx.loop, UV_RUN_NOWAIT);
      rt_sleep_ms(1);
      for (i = 0, done = 0; i < 3; i++)
        done += x[i].done;
    } while (done < 2 && rt_now_ms() < end);
  }
  fx_spin(&fx, 100);
  for (i = 0, done = 0; i < 3; i++) {
    done += x[i].done;
    if (x[i].done)
      ASSERT_OK(x[i].status);
  }
  ASSERT_EQ(done, 2);
  ASSERT_EQ(srv_count(fx.srv, "many"), 0);
  /* One more permit: the last waiter gets it. */
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release_unheld, a, 1, NULL));
  for (i = 0; i < 3; i++) {
    rt_run_until(&fx.loop, &x[i].done, 3000);
    ASSERT_OK(x[i].status);
    ASSERT_EQ(lk_semaphore_held(w[i]), 1);
  }
  for (i = 0; i < 3; i++)
    fx_close_sem(&fx, w[i]);
  fx_finish_sems_count(&fx, "many", 3, (lk_semaphore_t *[]){a, NULL});
}

TEST(wait_budget_is_bounded_and_repolled) {
  fx_t fx;
  lk_client_opts_t o;
  lk_semaphore_t *s, *t;
  sx_t x;
  uint64_t t0;
  int64_t took;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 100;
  fx_start_with(&fx, NULL, &o);
  s = fx_sem(&fx, "budget");
  t0 = uv_hrtime();
  ASSERT_EQ(sem_acquire_in(&fx.loop, s, 1, 300, &x), LK_ETIMEDOUT);
  took = (int64_t)((x.t_ns - t0) / 1000000u);
  ASSERT_GE(took, 300); /* never ends early */
  ASSERT_LT(took, 300 + rt_stall_bound_since_ns(t0, 400));
  /* Permits that appear without any message (a raw SET from outside) are
   * found by the re-poll. */
  t = fx_sem(&fx, "budget");
  sem_start_acquire(t, 2, 10000, &x);
  fx_spin(&fx, 150);
  ASSERT_EQ(x.done, 0);
  free(rt_cmd_str(fx.srv, "SET budget 2"));
  t0 = uv_hrtime();
  rt_run_until(&fx.loop, &x.done, 3000);
  ASSERT_OK(x.status);
  ASSERT_LT((int64_t)((x.t_ns - t0) / 1000000u), 100 + rt_stall_bound_since_ns(t0, 300));
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, t, NULL});
}

TEST(cancel_waiting_and_in_flight) {
  fx_t fx;
  lk_semaphore_t *s = fx_start_sem(&fx, "cx");
  sx_t x;
  /* Waiting: canceled, nothing taken. */
  sem_start_acquire(s, 1, 30000, &x);
  fx_wait_subscribers(&fx, "redisson_sc:{cx}", 1);
  ASSERT_OK(lk_semaphore_cancel(s));
  ASSERT_EQ(lk_semaphore_cancel(s), LK_EINVAL); /* already on its way */
  rt_run_until(&fx.loop, &x.done, 3000);
  ASSERT_EQ(x.status, LK_ECANCELED);
  ASSERT_EQ(lk_semaphore_held(s), 0);
  /* In flight and bound to succeed: the late grant is given back. */
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 2, NULL));
  sem_start_acquire(s, 2, 0, &x);
  ASSERT_OK(lk_semaphore_cancel(s));
  rt_run_until(&fx.loop, &x.done, 3000);
  ASSERT_EQ(x.status, LK_ECANCELED);
  ASSERT(fx_wait_count(&fx, "cx", 2, 3000));
  ASSERT_EQ(lk_semaphore_held(s), 0);
  /* The object goes on under a fresh mark: it can acquire at once. */
  ASSERT_OK(sem_acquire(&fx, s, 2, 0));
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_release, s, 2, NULL));
  fx_spin(&fx, 50);
  ASSERT_EQ(srv_count(fx.srv, "cx"), 2);
  fx_finish_sems(&fx, (lk_semaphore_t *[]){s, NULL});
}

typedef struct {
  int acquired, closed, order_ok;
} close_state_t;

static void on_closed_in_cb(lk_semaphore_t *s) {
  close_state_t *st = lk_semaphore_get_data(s);
  st->order_ok = st->acquired == 1;
  st->closed = 1;
}

static void on_acquired_then_close(lk_semaphore_t *s, int status, void *arg) {
  close_state_t *st = arg;
  ASSERT_OK(status);
  st->acquired++;
  ASSERT_EQ(lk_semaphore_held(s), 2);
  lk_semaphore_set_data(s, st);
  ASSERT_OK(lk_semaphore_close(s, on_closed_in_cb));
  ASSERT_EQ(lk_semaphore_close(s, on_closed_in_cb), LK_ECLOSED);
  ASSERT_EQ(lk_semaphore_available(s, sem_cb, NULL), LK_ECLOSED);
}

TEST(close_gives_back_held_permits) {
  fx_t fx;
  lk_semaphore_t *s, *p;
  close_state_t st;
  sx_t x;
  int closed = 0;
  fx_start(&fx, NULL);
  s = fx_sem(&fx, "cl");
  ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s, 3, NULL));
  memset(&st, 0, sizeof st);
  ASSERT_OK(lk_semaphore_try_acquire(s, 2, on_acquired_then_close, &st));
  rt_run_until(&fx.loop, &st.closed, 5000);
  ASSERT(st.order_ok);
  ASSERT_EQ(srv_count(fx.srv, "cl"), 3);
  /* Closing with an acquire pending: its callback first (canceled), then
   * the close callback; nothing stays taken. */
  p = fx_sem(&fx, "cl");
  sem_start_acquire(p, 3, 0, &x);
  lk_semaphore_set_data(p, &closed);
  ASSERT_OK(lk_semaphore_close(p, fx_sem_closed_cb));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(x.done, 1);
  ASSERT_EQ(x.status, LK_ECANCELED);
  ASSERT(fx_wait_count(&fx, "cl", 3, 3000));
  fx_finish(&fx);
}

TEST(odd_names_are_independent) {
  fx_t fx;
  const char *names[] = {"a", "a}{b}", "{a}", "a b", "a\r\nb", "%s%n", "x:{y}:z"};
  lk_semaphore_t *s[7];
  int i;
  int64_t r;
  fx_start(&fx, NULL);
  for (i = 0; i < 7; i++) {
    s[i] = fx_sem(&fx, names[i]);
    ASSERT_OK(sem_run_n(&fx, lk_semaphore_try_set_permits, s[i], i + 1, &r));
    ASSERT_EQ(r, 1);
  }
  for (i = 0; i < 7; i++) {
    ASSERT_OK(sem_acquire(&fx, s[i], i + 1, 0));
    ASSERT_OK(sem_run(&fx, lk_semaphore_available, s[i], &r));
    ASSERT_EQ(r, 0);
  }
  for (i = 0; i < 7; i++)
    fx_close_sem(&fx, s[i]);
  for (i = 0; i < 7; i++) {
    redisReply *v = rt_cmd(fx.srv, "GET %b", names[i], strlen(names[i]));
    ASSERT_NOT_NULL(v);
    ASSERT_EQ(v->type, REDIS_REPLY_STRING);
    ASSERT_EQ(strtoll(v->str, NULL, 10), i + 1);
    freeReplyObject(v);
  }
  fx_finish(&fx);
}
