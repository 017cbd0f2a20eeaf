/* MultiLock: all-or-nothing acquisition over lock objects on several
 * servers, rollback on partial failure, waiting, re-entry, loss, cancel,
 * close and bad inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multi_fixture.h"
#include "redisson_emu.h"
#include "redisson_redlock_emu.h"

/* Members A and B on server 0, C on server 1 (two clients). */
typedef struct trio_s {
  lk_lock_t *l[3];
  lk_multilock_t *ml;
} trio_t;

static const char *const trio_names[3] = {"ml-a", "ml-b", "ml-c"};

static void trio_open(mfx_t *m, lk_client_t **set, trio_t *t) {
  ASSERT_OK(lk_lock_new(set[0], trio_names[0], &t->l[0]));
  ASSERT_OK(lk_lock_new(set[0], trio_names[1], &t->l[1]));
  ASSERT_OK(lk_lock_new(set[1], trio_names[2], &t->l[2]));
  ASSERT_OK(lk_multilock_new(t->l, 3, &t->ml));
  (void)m;
}

static void trio_close(mfx_t *m, trio_t *t) {
  int i;
  mx_ml_close(m, t->ml);
  for (i = 0; i < 3; i++)
    mx_lock_close(m, t->l[i]);
}

static int trio_server(int i) { return i < 2 ? 0 : 1; }

static long long member_holds(mfx_t *m, trio_t *t, int i) {
  return mx_holds(m, trio_server(i), trio_names[i], lk_lock_owner(t->l[i]));
}

static long long key_exists(mfx_t *m, int i) {
  return rt_cmd_int(m->srv[trio_server(i)], "EXISTS %s", trio_names[i]);
}

TEST(ml_acquire_release_across_servers) {
  mfx_t m;
  trio_t t;
  mx_t s;
  int i;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_EQ(lk_multilock_size(t.ml), 3);
  ASSERT(lk_multilock_member(t.ml, 2) == t.l[2]);
  ASSERT_NULL(lk_multilock_member(t.ml, 3));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  ASSERT_EQ(s.held, 1);
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 1);
  for (i = 0; i < 3; i++) {
    ASSERT_EQ(member_holds(&m, &t, i), 1);
    ASSERT_EQ(lk_lock_hold_count(t.l[i]), 1);
    ASSERT_EQ(lk_multilock_member_status(t.ml, (size_t)i), 0);
  }
  ASSERT_OK(mx_ml_release(&m, t.ml));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(key_exists(&m, i), 0);
  ASSERT_EQ(lk_multilock_is_held(t.ml), 0);
  ASSERT_EQ(lk_multilock_release(t.ml, mx_ml_cb, &s), LK_ENOTHELD);
  trio_close(&m, &t);
  mfx_finish(&m);
}

TEST(ml_reentry_counts_on_every_member) {
  mfx_t m;
  trio_t t;
  mx_t s;
  int i;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, 5000, &s));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, 5000, &s));
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 2);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(member_holds(&m, &t, i), 2);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(member_holds(&m, &t, i), 1);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(key_exists(&m, i), 0);
  trio_close(&m, &t);
  mfx_finish(&m);
}

/* docs/reliability.md, T29 (a): C is held by someone else; [A, B, C] with a
 * 200 ms budget fails, and A and B are free the moment it reports. */
TEST(ml_partial_failure_leaves_nothing_held) {
  mfx_t m;
  trio_t t;
  lk_lock_t *other;
  mx_t s;
  uint64_t t0;
  int64_t took_ms;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_lock_new(m.c[1], "ml-c", &other));
  ASSERT_OK(sx_acquire_in(&m.loop, other, 0, 10000, &(sx_t){0}));

  t0 = uv_hrtime();
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 200, -1, &s), LK_ETIMEDOUT);
  took_ms = (int64_t)((s.t_ns - t0) / 1000000u);
  ASSERT_GE(took_ms, 200 - 1);
  ASSERT_LE(took_ms, rt_stall_bound_since_ns(t0, 200 + 1500));
  ASSERT_EQ(key_exists(&m, 0), 0);
  ASSERT_EQ(key_exists(&m, 1), 0);
  ASSERT_EQ(lk_multilock_member_status(t.ml, 2), LK_ETIMEDOUT);
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 0);
  ASSERT_EQ(lk_lock_hold_count(t.l[0]), 0);
  ASSERT_EQ(lk_lock_hold_count(t.l[1]), 0);
  ASSERT_EQ(s.held, 0);

  /* wait 0: one round, same outcome. */
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 0, -1, &s), LK_ETIMEDOUT);
  ASSERT_EQ(key_exists(&m, 0), 0);
  ASSERT_EQ(key_exists(&m, 1), 0);

  mx_lock_close(&m, other);
  trio_close(&m, &t);
  mfx_finish(&m);
}

static void release_other_cb(uv_timer_t *tm) {
  lk_lock_t *other = tm->data;
  ASSERT_OK(lk_lock_release(other, sx_cb, lk_lock_get_data(other)));
}

TEST(ml_waits_for_a_taken_member) {
  mfx_t m;
  trio_t t;
  lk_lock_t *other;
  uv_timer_t tm;
  sx_t rel;
  mx_t s;
  int closed = 0;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_lock_new(m.c[0], "ml-b", &other));
  ASSERT_OK(sx_acquire_in(&m.loop, other, 0, 30000, &(sx_t){0}));
  memset(&rel, 0, sizeof(rel));
  lk_lock_set_data(other, &rel);
  uv_timer_init(&m.loop, &tm);
  tm.data = other;
  uv_timer_start(&tm, release_other_cb, 150, 0);
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 10000, -1, &s));
  ASSERT(rel.done);
  /* Woken by the release, not by the holder's 30 s ttl nor a 1 s re-poll. */
  ASSERT_LT((int64_t)((s.t_ns - rel.t_ns) / 1000000u), rt_stall_bound_since_ns(rel.t_ns, 900));
  ASSERT_EQ(member_holds(&m, &t, 1), 1);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  uv_close((uv_handle_t *)&tm, NULL);
  mx_lock_close(&m, other);
  (void)closed;
  trio_close(&m, &t);
  mfx_finish(&m);
}

/* T29(b): 10 groups over the same names try once at the same moment:
 * exactly one gets them. */
TEST(ml_concurrent_try_once_exactly_one_wins) {
  enum { G = 10 };
  mfx_t m;
  trio_t t[G];
  mx_t s[G];
  int i, wins = 0;
  lk_multilock_opts_t o;
  mfx_start(&m, 2, NULL);
  for (i = 0; i < G; i++)
    trio_open(&m, m.c, &t[i]);
  lk_multilock_opts_init(&o);
  o.lease_ms = 10000;
  memset(s, 0, sizeof(s));
  for (i = 0; i < G; i++)
    ASSERT_OK(lk_multilock_acquire(t[i].ml, &o, mx_ml_cb, &s[i]));
  for (i = 0; i < G; i++) {
    mfx_run_until(&m, &s[i].done, 10000);
    if (s[i].status == 0)
      wins++;
    else
      ASSERT_EQ(s[i].status, LK_ETIMEDOUT);
  }
  ASSERT_EQ(wins, 1);
  for (i = 0; i < G; i++)
    if (s[i].status == 0) {
      int k;
      for (k = 0; k < 3; k++)
        ASSERT_EQ(member_holds(&m, &t[i], k), 1);
    }
  for (i = 0; i < G; i++)
    trio_close(&m, &t[i]);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(key_exists(&m, i), 0);
  mfx_finish(&m);
}

/* A member failing with an error that waiting cannot fix ends the
 * acquisition at once, with nothing left held. */
TEST(ml_member_error_fails_fast_and_rolls_back) {
  mfx_t m;
  trio_t t;
  mx_t s;
  uint64_t t0;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  free(rt_cmd_str(m.srv[1], "SET ml-c not-a-lock"));
  t0 = uv_hrtime();
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 5000, -1, &s), LK_EWRONGTYPE);
  ASSERT_LT((int64_t)((s.t_ns - t0) / 1000000u), rt_stall_bound_since_ns(t0, 1000));
  ASSERT_EQ(lk_multilock_member_status(t.ml, 2), LK_EWRONGTYPE);
  ASSERT_EQ(key_exists(&m, 0), 0);
  ASSERT_EQ(key_exists(&m, 1), 0);
  {
    char *v = rt_cmd_str(m.srv[1], "GET ml-c");
    ASSERT_STREQ(v, "not-a-lock"); /* never overwritten */
    free(v);
  }
  trio_close(&m, &t);
  mfx_finish(&m);
}

static void count_lost(lk_multilock_t *ml, int status, void *arg) {
  int *n = arg;
  ASSERT_EQ(status, LK_ELEASELOST);
  ASSERT_EQ(lk_multilock_is_held(ml), 0);
  (*n)++;
}

/* A member's lease lost (its key deleted under it): on_lost fires, the
 * other members are given back, release reports the loss. */
TEST(ml_member_loss_fires_on_lost_and_gives_back) {
  mfx_t m;
  trio_t t;
  mx_t s;
  int lost = 0;
  mfx_start_lease(&m, 2, NULL, 600);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_multilock_set_lost_cb(t.ml, count_lost, &lost));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  ASSERT_EQ(rt_cmd_int(m.srv[1], "DEL ml-c"), 1);
  /* The next renewal (every 200 ms) finds it gone. */
  mfx_run_until(&m, &lost, 2000);
  ASSERT_EQ(lost, 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 0, "ml-a", 2000), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "EXISTS ml-b"), 0);
  ASSERT_EQ(lk_multilock_release(t.ml, mx_ml_cb, &s), LK_ELEASELOST);
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 0);
  /* And it can be taken again. */
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  ASSERT_EQ(member_holds(&m, &t, 2), 1);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  ASSERT_EQ(lost, 1);
  trio_close(&m, &t);
  mfx_finish(&m);
}

/* A re-entry after the members' explicit leases ran out finds the group's
 * holds gone: LK_ELEASELOST, nothing left held, and a fresh acquire works. */
TEST(ml_reentry_after_leases_expired_reports_loss) {
  mfx_t m;
  trio_t t;
  mx_t s;
  int lost = 0, i;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_multilock_set_lost_cb(t.ml, count_lost, &lost));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, 300, &s));
  for (i = 0; i < 3; i++)
    ASSERT_EQ(mfx_wait_key_gone(&m, trio_server(i), trio_names[i], 2000), 1);
  ASSERT_EQ(lk_multilock_is_held(t.ml), 0);
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 0, 300, &s), LK_ELEASELOST);
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 0);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(mfx_wait_key_gone(&m, trio_server(i), trio_names[i], 2000), 1);
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, 5000, &s));
  ASSERT_EQ(lk_multilock_hold_count(t.ml), 1);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(member_holds(&m, &t, i), 1);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  trio_close(&m, &t);
  mfx_finish(&m);
}

TEST(ml_cancel_waiting_acquire_gives_back) {
  mfx_t m;
  trio_t t;
  lk_lock_t *other;
  mx_t s;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_lock_new(m.c[1], "ml-c", &other));
  ASSERT_OK(sx_acquire_in(&m.loop, other, 0, 10000, &(sx_t){0}));
  memset(&s, 0, sizeof(s));
  {
    lk_multilock_opts_t o;
    lk_multilock_opts_init(&o);
    o.wait_ms = 10000;
    ASSERT_OK(lk_multilock_acquire(t.ml, &o, mx_ml_cb, &s));
  }
  ASSERT_OK(lk_multilock_cancel(t.ml));
  ASSERT_EQ(s.done, 0); /* never inside the call */
  mfx_run_until(&m, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_multilock_cancel(t.ml), LK_EINVAL);
  ASSERT_EQ(mfx_wait_key_gone(&m, 0, "ml-a", 2000), 1);
  ASSERT_EQ(mfx_wait_key_gone(&m, 0, "ml-b", 2000), 1);
  /* Usable again at once: the next acquire waits for stragglers itself. */
  ASSERT_OK(mx_lock_run(&m, lk_lock_release, other));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 2000, -1, &s));
  ASSERT_OK(mx_ml_release(&m, t.ml));
  mx_lock_close(&m, other);
  trio_close(&m, &t);
  mfx_finish(&m);
}

TEST(ml_close_with_acquire_pending) {
  mfx_t m;
  trio_t t;
  lk_lock_t *other;
  mx_t s;
  int closed = 0, i;
  lk_multilock_opts_t o;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(lk_lock_new(m.c[0], "ml-a", &other));
  ASSERT_OK(sx_acquire_in(&m.loop, other, 0, 10000, &(sx_t){0}));
  lk_multilock_opts_init(&o);
  o.wait_ms = 10000;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_multilock_acquire(t.ml, &o, mx_ml_cb, &s));
  /* A member may not close while the group uses it. */
  ASSERT_EQ(lk_lock_close(t.l[1], NULL), LK_EBUSY);
  lk_multilock_set_data(t.ml, &closed);
  ASSERT_OK(lk_multilock_close(t.ml, mx_ml_closed));
  ASSERT_EQ(lk_multilock_close(t.ml, mx_ml_closed), LK_ECLOSED);
  mfx_run_until(&m, &closed, 5000);
  ASSERT_EQ(s.done, 1); /* its callback came first */
  ASSERT_EQ(s.status, LK_ECANCELED);
  for (i = 0; i < 3; i++)
    mx_lock_close(&m, t.l[i]);
  ASSERT_EQ(key_exists(&m, 1), 0);
  ASSERT_EQ(key_exists(&m, 2), 0);
  mx_lock_close(&m, other);
  mfx_finish(&m);
}

TEST(ml_close_while_held_gives_back) {
  mfx_t m;
  trio_t t;
  mx_t s;
  int i;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  mx_ml_close(&m, t.ml);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(mfx_wait_key_gone(&m, trio_server(i), trio_names[i], 2000), 1);
  for (i = 0; i < 3; i++)
    mx_lock_close(&m, t.l[i]);
  mfx_finish(&m);
}

/* A member the user already holds: the group adds a hold and its rollback
 * or release never drops the user's own. */
TEST(ml_member_already_held_by_user_keeps_outer_hold) {
  mfx_t m;
  trio_t t;
  lk_lock_t *other;
  mx_t s;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  ASSERT_OK(sx_acquire_in(&m.loop, t.l[0], 0, 10000, &(sx_t){0}));
  ASSERT_OK(lk_lock_new(m.c[1], "ml-c", &other));
  ASSERT_OK(sx_acquire_in(&m.loop, other, 0, 10000, &(sx_t){0}));
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 0, 10000, &s), LK_ETIMEDOUT);
  ASSERT_EQ(member_holds(&m, &t, 0), 1); /* the user's own hold stays */
  ASSERT_OK(mx_lock_run(&m, lk_lock_release, other));
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, 10000, &s));
  ASSERT_EQ(member_holds(&m, &t, 0), 2);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  ASSERT_EQ(member_holds(&m, &t, 0), 1);
  ASSERT_OK(mx_lock_run(&m, lk_lock_release, t.l[0]));
  mx_lock_close(&m, other);
  trio_close(&m, &t);
  mfx_finish(&m);
}

TEST(ml_fenced_members_take_tokens) {
  mfx_t m;
  trio_t t;
  mx_t s;
  lk_multilock_opts_t o;
  int i;
  int64_t first[3];
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  lk_multilock_opts_init(&o);
  o.fenced = 1;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_multilock_acquire(t.ml, &o, mx_ml_cb, &s));
  mfx_run_until(&m, &s.done, 5000);
  ASSERT_OK(s.status);
  for (i = 0; i < 3; i++) {
    first[i] = lk_lock_token(t.l[i]);
    ASSERT_GT(first[i], 0);
  }
  ASSERT_OK(mx_ml_release(&m, t.ml));
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_multilock_acquire(t.ml, &o, mx_ml_cb, &s));
  mfx_run_until(&m, &s.done, 5000);
  ASSERT_OK(s.status);
  for (i = 0; i < 3; i++)
    ASSERT_GT(lk_lock_token(t.l[i]), first[i]);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  trio_close(&m, &t);
  mfx_finish(&m);
}

static void flag_client_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

/* Redisson's MultiLock (emulated: members one after another, all or
 * nothing) and ours exclude each other on the same locks. */
TEST(ml_redisson_multilock_interop) {
  mfx_t m;
  trio_t t;
  redisContext *ctx[2];
  const char *uuids[2] = {"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
                          "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"};
  const char *names2[2] = {"ml-b", "ml-c"};
  int held[2], i;
  mx_t s;
  mfx_start(&m, 2, NULL);
  trio_open(&m, m.c, &t);
  for (i = 0; i < 2; i++)
    ctx[i] = rt_rlock_connect(rt_server_port(m.srv[i]));
  /* Redisson holds ml-b (server 0) and ml-c (server 1): a MultiLock over
   * one lock per server. */
  ASSERT_EQ(rt_rmulti_try(ctx, 2, names2, uuids, 3, 10000, 0, held), 1);
  ASSERT_EQ(mx_ml_acquire(&m, t.ml, 0, -1, &s), LK_ETIMEDOUT);
  ASSERT_EQ(key_exists(&m, 0), 0);
  ASSERT_EQ(lk_multilock_member_status(t.ml, 1), LK_ETIMEDOUT);
  ASSERT_EQ(lk_multilock_member_status(t.ml, 2), LK_ETIMEDOUT);
  rt_rmulti_unlock(ctx, 2, names2, uuids, 3, held);
  /* Ours holds: Redisson's all-or-nothing try over the same two locks
   * fails and leaves nothing behind. */
  ASSERT_OK(mx_ml_acquire(&m, t.ml, 0, -1, &s));
  ASSERT_EQ(rt_rmulti_try(ctx, 2, names2, uuids, 3, 10000, 0, held), 0);
  ASSERT_EQ(held[0] + held[1], 0);
  for (i = 0; i < 3; i++)
    ASSERT_EQ(member_holds(&m, &t, i), 1);
  ASSERT_EQ(rt_cmd_int(m.srv[0], "HLEN ml-b"), 1); /* ours alone */
  ASSERT_EQ(rt_cmd_int(m.srv[1], "HLEN ml-c"), 1);
  ASSERT_OK(mx_ml_release(&m, t.ml));
  for (i = 0; i < 2; i++)
    redisFree(ctx[i]);
  trio_close(&m, &t);
  mfx_finish(&m);
}

TEST(ml_bad_inputs) {
  mfx_t m;
  lk_lock_t *a, *b, *a2, *c1, *x;
  lk_lock_t *arr[3];
  lk_multilock_t *ml = NULL, *ml2 = NULL;
  lk_multilock_opts_t o;
  mx_t s;
  uv_loop_t other_loop;
  lk_client_t *oc;
  lk_client_opts_t co;
  mfx_start(&m, 2, NULL);
  ASSERT_OK(lk_lock_new(m.c[0], "bad-a", &a));
  ASSERT_OK(lk_lock_new(m.c[0], "bad-b", &b));
  ASSERT_OK(lk_lock_new(m.c[0], "bad-a", &a2));
  ASSERT_OK(lk_lock_new(m.c[1], "bad-a", &c1));

  arr[0] = a;
  ASSERT_EQ(lk_multilock_new(arr, 0, &ml), LK_EINVAL);
  ASSERT_EQ(lk_multilock_new(NULL, 1, &ml), LK_EINVAL);
  ASSERT_EQ(lk_multilock_new(arr, 1, NULL), LK_EINVAL);
  ASSERT_EQ(lk_multilock_new(arr, LK_MULTILOCK_MAX_MEMBERS + 1, &ml), LK_EINVAL);
  arr[0] = a, arr[1] = NULL;
  ASSERT_EQ(lk_multilock_new(arr, 2, &ml), LK_EINVAL);
  arr[0] = a, arr[1] = a;
  ASSERT_EQ(lk_multilock_new(arr, 2, &ml), LK_EINVAL); /* the same object twice */
  arr[0] = a, arr[1] = a2;
  ASSERT_EQ(lk_multilock_new(arr, 2, &ml), LK_EINVAL); /* one lock, two objects */
  ASSERT_NULL(ml);
  /* The same name on another server is another lock. */
  arr[0] = a, arr[1] = c1, arr[2] = b;
  ASSERT_OK(lk_multilock_new(arr, 3, &ml));
  /* A lock belongs to one group at a time. */
  arr[0] = b;
  ASSERT_EQ(lk_multilock_new(arr, 1, &ml2), LK_EBUSY);
  ASSERT_EQ(lk_lock_close(a, NULL), LK_EBUSY);

  /* Members on another loop. */
  ASSERT_OK(uv_loop_init(&other_loop));
  mfx_client_opts(&m, 0, &co);
  ASSERT_OK(lk_client_new(&other_loop, &co, &oc));
  ASSERT_OK(lk_lock_new(oc, "bad-z", &x));
  arr[0] = a2, arr[1] = x;
  ASSERT_EQ(lk_multilock_new(arr, 2, &ml2), LK_EINVAL);

  lk_multilock_opts_init(&o);
  o.wait_ms = -2;
  ASSERT_EQ(lk_multilock_acquire(ml, &o, mx_ml_cb, &s), LK_EINVAL);
  lk_multilock_opts_init(&o);
  o.lease_ms = 0;
  ASSERT_EQ(lk_multilock_acquire(ml, &o, mx_ml_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_multilock_acquire(ml, NULL, NULL, &s), LK_EINVAL);
  ASSERT_EQ(lk_multilock_acquire(NULL, NULL, mx_ml_cb, &s), LK_EINVAL);
  ASSERT_EQ(lk_multilock_release(ml, mx_ml_cb, &s), LK_ENOTHELD);
  ASSERT_EQ(lk_multilock_cancel(ml), LK_EINVAL);
  ASSERT_EQ(lk_multilock_member_status(ml, 9), LK_EINVAL);
  /* A second operation while one is pending. */
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_multilock_acquire(ml, NULL, mx_ml_cb, &s));
  ASSERT_EQ(lk_multilock_acquire(ml, NULL, mx_ml_cb, &s), LK_EBUSY);
  mfx_run_until(&m, &s.done, 5000);
  ASSERT_OK(s.status);
  /* A member with an operation of its own pending fails the group. */
  ASSERT_OK(mx_ml_release(&m, ml));
  {
    sx_t q;
    memset(&q, 0, sizeof(q));
    ASSERT_OK(lk_lock_is_locked(b, sx_cb, &q));
    ASSERT_EQ(mx_ml_acquire(&m, ml, 0, -1, &s), LK_EBUSY);
    mfx_run_until(&m, &q.done, 5000);
    ASSERT_EQ(rt_cmd_int(m.srv[0], "EXISTS bad-a"), 0);
  }

  mx_ml_close(&m, ml);
  {
    int xc = 0;
    lk_lock_set_data(x, &xc);
    ASSERT_OK(lk_lock_close(x, fx_lock_closed_cb));
    rt_run_until(&other_loop, &xc, 5000);
  }
  mx_lock_close(&m, a);
  mx_lock_close(&m, b);
  mx_lock_close(&m, a2);
  mx_lock_close(&m, c1);
  {
    int closed = 0;
    lk_client_set_data(oc, &closed);
    ASSERT_OK(lk_client_close(oc, flag_client_closed));
    rt_run_until(&other_loop, &closed, 5000);
    rt_loop_close_clean(&other_loop);
  }
  mfx_finish(&m);
}
