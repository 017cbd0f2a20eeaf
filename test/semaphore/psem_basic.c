/* Permit-expirable semaphore: ids and layout, releases by id, leases that
 * end and come back, watchdog renewal and loss, updates, a killed holder,
 * bad inputs; give-backs left to the background while the server is out of
 * reach for many reconnects, and close waiting for them (bounded). */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proxy.h"
#include "never_cb.h"
#include "sem_fixture.h"

/* The server's clock in epoch ms (scores are on it). */
static long long server_ms(fx_t *fx) {
  redisReply *r = rt_cmd(fx->srv, "TIME");
  long long ms;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  ms = strtoll(r->element[0]->str, NULL, 10) * 1000 + strtoll(r->element[1]->str, NULL, 10) / 1000;
  freeReplyObject(r);
  return ms;
}

static void hex_to_raw(const char *hex, unsigned char raw[16]) {
  int i;
  for (i = 0; i < 16; i++) {
    unsigned v;
    ASSERT_EQ(sscanf(hex + 2 * i, "%2x", &v), 1);
    raw[i] = (unsigned char)v;
  }
}

/* ZSCORE of a permit (by hex id) in the timeout zset; -1 when absent. */
static long long score_of(fx_t *fx, const char *zset, const char *hex) {
  unsigned char raw[16];
  redisReply *r;
  long long s = -1;
  hex_to_raw(hex, raw);
  r = rt_cmd(fx->srv, "ZSCORE %s %b", zset, raw, (size_t)16);
  ASSERT_NOT_NULL(r);
  if (r->type == REDIS_REPLY_STRING)
    s = strtoll(r->str, NULL, 10);
  else
    ASSERT_EQ(r->type, REDIS_REPLY_NIL);
  freeReplyObject(r);
  return s;
}

static void start_with(fx_t *fx, int64_t default_lease_ms, int64_t repoll_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  if (default_lease_ms > 0)
    o.default_lease_ms = default_lease_ms;
  if (repoll_ms > 0)
    o.max_repoll_ms = repoll_ms;
  fx_start_with(fx, NULL, &o);
}

TEST(psem_ids_layout_and_counts) {
  fx_t fx;
  lk_psem_t *p = fx_start_psem(&fx, "ps");
  int64_t r = -1;
  long long now, sc;
  char id0[33], id1[33];
  sx_t x;
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, p, 3, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(psem_acquire_in(&fx.loop, p, 2, 0, 5000, &x));
  ASSERT_EQ(x.result, 2);
  ASSERT_EQ(lk_psem_permit_count(p), 2);
  ASSERT(lk_psem_is_held(p));
  snprintf(id0, sizeof id0, "%s", lk_psem_permit_id(p, 0));
  snprintf(id1, sizeof id1, "%s", lk_psem_permit_id(p, 1));
  ASSERT_EQ(strlen(id0), LK_PSEM_ID_LEN);
  ASSERT(strcmp(id0, id1) != 0);
  ASSERT_NULL(lk_psem_permit_id(p, 2));
  /* Redisson's layout: count in NAME, raw 16-byte ids in {NAME}:timeout
   * scored by the end of their lease on the server's clock. */
  ASSERT_EQ(srv_count(fx.srv, "ps"), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {ps}:timeout"), 2);
  now = server_ms(&fx);
  sc = score_of(&fx, "{ps}:timeout", id0);
  ASSERT_GT(sc, now + 4000);
  ASSERT_LE(sc, now + 5000);
  ASSERT_OK(psem_run(&fx, lk_psem_available, p, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(psem_run(&fx, lk_psem_acquired, p, &r));
  ASSERT_EQ(r, 2);
  /* One by id, then the rest. */
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, p, id0, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(lk_psem_permit_count(p), 1);
  ASSERT_STREQ(lk_psem_permit_id(p, 0), id1);
  ASSERT_EQ(score_of(&fx, "{ps}:timeout", id0), -1);
  ASSERT_EQ(srv_count(fx.srv, "ps"), 2);
  ASSERT_EQ(lk_psem_release(p, id0, psem_cb, NULL), LK_ENOTHELD); /* not ours any more */
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, p, NULL, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(lk_psem_permit_count(p), 0);
  ASSERT(!lk_psem_is_held(p));
  ASSERT_EQ(lk_psem_release(p, NULL, psem_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(srv_count(fx.srv, "ps"), 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS {ps}:timeout"), 0);
  ASSERT_OK(psem_run_n(&fx, lk_psem_add_permits, p, -1, &r));
  ASSERT_EQ(r, 2);
  fx_finish_psems(&fx, (lk_psem_t *[]){p, NULL});
}

/* A fixed lease ends on the server: the permit comes back through the
 * reclaim of the next script, and a waiter gets it soon after, not before. */
/* name set to one permit, a takes it for lease_ms; b, waiting up to
 * wait_ms, gets it once that lease has ended on the server (not before,
 * and within slack_ms of it, machine stalls excused). */
static void b_gets_the_permit_when_a_lease_ends(fx_t *fx, lk_psem_t *a, lk_psem_t *b,
                                                const char *name, int64_t lease_ms,
                                                int64_t wait_ms, int64_t slack_ms) {
  char key[64];
  sx_t x;
  snprintf(key, sizeof key, "{%s}:timeout", name);
  ASSERT_OK(psem_run_n(fx, lk_psem_try_set_permits, a, 1, NULL));
  ASSERT_OK(psem_acquire(fx, a, 1, 0, lease_ms));
  long long expiry = score_of(fx, key, lk_psem_permit_id(a, 0));
  const int64_t mark = rt_stall_mark();
  ASSERT_OK(psem_acquire_in(&fx->loop, b, 1, wait_ms, 5000, &x));
  long long got = server_ms(fx);
  ASSERT_GE(got, expiry); /* safety: not before the lease ended */
  ASSERT_LT(got, expiry + rt_stall_bound_ms(mark, slack_ms));
}

TEST(psem_fixed_lease_ends_and_permit_returns) {
  fx_t fx;
  lk_psem_t *a, *b;
  int64_t r;
  fx_start(&fx, NULL);
  a = fx_psem(&fx, "fl");
  b = fx_psem(&fx, "fl");
  b_gets_the_permit_when_a_lease_ends(&fx, a, b, "fl", 400, 5000, 500);
  ASSERT(!lk_psem_is_held(a)); /* its local deadline passed too */
  /* a's release finds its permit reclaimed: told, and nothing added. */
  ASSERT_EQ(psem_run_id(&fx, lk_psem_release, a, NULL, &r), LK_ELEASELOST);
  ASSERT_EQ(r, 0);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  ASSERT_EQ(srv_count(fx.srv, "fl"), 0);
  ASSERT_OK(psem_run(&fx, lk_psem_acquired, a, &r));
  ASSERT_EQ(r, 1);
  fx_close_psem(&fx, b);
  ASSERT_EQ(srv_count(fx.srv, "fl"), 1);
  fx_finish_psems(&fx, (lk_psem_t *[]){a, NULL});
}

/* The default lease is renewed by the watchdog while the object holds the
 * permits: they outlive many leases, and others stay out. */
TEST(psem_watchdog_keeps_permits) {
  /* Scaled: the hold survives only while every renewal comes back within
   * about 2/3 of a lease. */
  const int64_t lease = rt_scaled_ms(600);
  fx_t fx;
  lk_psem_t *a, *b;
  lk_client_stats_t st;
  int64_t r;
  start_with(&fx, lease, 0);
  a = fx_psem(&fx, "wd");
  b = fx_psem(&fx, "wd");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, LK_LEASE_DEFAULT));
  /* A machine stall longer than a renewal's slack may take the permits;
   * b is never let in while a believes it holds them, stall or not. */
  const int64_t mark = rt_stall_mark(), slack = fx_renewal_slack(lease);
  fx_spin(&fx, lease * 10 / 3); /* 10 periods */
  int held = EXPECT_HOLD(lk_psem_is_held(a), mark, slack);
  if (held) {
    const int rc = psem_acquire(&fx, b, 1, 0, 5000);
    if (rc == 0)
      ASSERT(!lk_psem_is_held(a)); /* safety: b got a permit a no longer has */
    held = EXPECT_HOLD(rc == LK_ETIMEDOUT, mark, slack);
  }
  if (held)
    held = EXPECT_HOLD(score_of(&fx, "{wd}:timeout", lk_psem_permit_id(a, 1)) > server_ms(&fx),
                       mark, slack);
  if (!held) {
    ASSERT(!lk_psem_is_held(a)); /* it knows */
    fx_finish_psems(&fx, (lk_psem_t *[]){a, b, NULL});
    return;
  }
  lk_client_get_stats(fx.c, &st);
  ASSERT_GE(st.renewals, 4);
  ASSERT_EQ(st.leases_lost, 0);
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, a, NULL, &r));
  ASSERT_EQ(r, 2);
  /* Nothing is renewed after the release. */
  lk_client_get_stats(fx.c, &st);
  {
    uint64_t before = st.renewals;
    fx_spin(&fx, lease * 7 / 6); /* 3.5 periods */
    lk_client_get_stats(fx.c, &st);
    ASSERT_EQ(st.renewals, before);
  }
  fx_finish_psems(&fx, (lk_psem_t *[]){a, b, NULL});
}

typedef struct {
  int calls;
  int status;
  size_t permits_then;
} lost_t;

static void on_lost(lk_psem_t *p, int status, void *arg) {
  lost_t *l = arg;
  l->calls++;
  l->status = status;
  l->permits_then = lk_psem_permit_count(p);
}

/* A renewed permit that vanishes (deleted from outside) is reported lost
 * within a renewal period; the object's other, fixed-lease permit stays. */
TEST(psem_lost_permit_is_reported) {
  fx_t fx;
  lk_psem_t *a;
  lost_t lost;
  unsigned char raw[16];
  int64_t t0, r;
  char fixed[33];
  start_with(&fx, 600, 0);
  a = fx_psem(&fx, "lost");
  memset(&lost, 0, sizeof lost);
  ASSERT_OK(lk_psem_set_lost_cb(a, on_lost, &lost));
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 3, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, 60000));
  snprintf(fixed, sizeof fixed, "%s", lk_psem_permit_id(a, 0));
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_psem_permit_count(a), 3);
  hex_to_raw(lk_psem_permit_id(a, 2), raw);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZREM {lost}:timeout %b", raw, (size_t)16), 1);
  t0 = rt_now_ms();
  FX_EVENTUALLY(&fx, lost.calls != 0, 2000);
  ASSERT_EQ(lost.calls, 1);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_LT(rt_now_ms() - t0, 200 + rt_stall_bound_ms(t0, 400)); /* within a period (lease/3) */
  ASSERT_EQ(lost.permits_then, 1);
  ASSERT_STREQ(lk_psem_permit_id(a, 0), fixed);
  /* The surviving renewed permit was given back; the deleted one is gone
   * from the count (it was removed from outside, not released). */
  fx_spin(&fx, 50);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {lost}:timeout"), 1);
  ASSERT_EQ(srv_count(fx.srv, "lost"), 1);
  ASSERT_OK(psem_run_id(&fx, lk_psem_release, a, NULL, &r));
  ASSERT_EQ(srv_count(fx.srv, "lost"), 2);
  fx_finish_psems(&fx, (lk_psem_t *[]){a, NULL});
}

TEST(psem_update_lease) {
  fx_t fx;
  lk_psem_t *a;
  char id[33];
  long long now;
  /* Scaled: the first fixed lease must last until both updates are
   * answered (300 ms left a preempted test little room), and the renewed
   * permit must live on its renewals. The spin outlasts the first lease by
   * 400 ms: a permit the updates missed would be gone by then. */
  const int64_t first_lease = rt_scaled_ms(800);
  start_with(&fx, rt_scaled_ms(600), 0);
  a = fx_psem(&fx, "upd");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, first_lease));
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(a, 0));
  /* One permit gets a longer fixed lease, the other is renewed. */
  ASSERT_OK(psem_update(&fx, a, id, 5000));
  now = server_ms(&fx);
  ASSERT_GT(score_of(&fx, "{upd}:timeout", id), now + 4000);
  /* A machine stall longer than a renewal's slack may take the renewed
   * permit (docs/reliability.md, "Tests on a loaded machine"). */
  const int64_t mark = rt_stall_mark();
  ASSERT_OK(psem_update(&fx, a, lk_psem_permit_id(a, 1), LK_LEASE_DEFAULT));
  fx_spin(&fx, first_lease + 400);
  if (!EXPECT_HOLD(lk_psem_permit_count(a) == 2 && lk_psem_is_held(a) &&
                       rt_cmd_int(fx.srv, "ZCARD {upd}:timeout") == 2,
                   mark, fx_renewal_slack(rt_scaled_ms(600)))) {
    fx_finish_psems(&fx, (lk_psem_t *[]){a, NULL});
    return;
  }
  /* A permit whose lease ended: the update says so and drops it. */
  ASSERT_OK(psem_update(&fx, a, NULL, 200));
  fx_spin(&fx, 400);
  ASSERT_EQ(psem_update(&fx, a, NULL, 5000), LK_ELEASELOST);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  ASSERT_EQ(srv_count(fx.srv, "upd"), 2);
  /* Ids this object does not hold, malformed ids, bad leases. */
  ASSERT_EQ(lk_psem_update_lease(a, id, 100, psem_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(lk_psem_update_lease(a, NULL, 100, psem_cb, NULL), LK_ENOTHELD);
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, 1000));
  ASSERT_EQ(lk_psem_update_lease(a, NULL, 0, psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_update_lease(a, NULL, -2, psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_update_lease(a, "zz", 100, psem_cb, NULL), LK_EINVAL);
  fx_finish_psem_count(&fx, "upd", 2, a);
}

/* Any client may give back a permit by id (Redisson's release(id)); the
 * holder then learns it is gone. */
TEST(psem_release_by_id_from_another_object) {
  fx_t fx;
  lk_psem_t *a, *b;
  char id[33];
  int64_t r;
  fx_start(&fx, NULL);
  a = fx_psem(&fx, "rid");
  b = fx_psem(&fx, "rid");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 1, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, 10000));
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(a, 0));
  ASSERT_OK(psem_run_id(&fx, lk_psem_release_id, b, id, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(srv_count(fx.srv, "rid"), 1);
  ASSERT_EQ(psem_run_id(&fx, lk_psem_release_id, b, id, &r), LK_ENOTHELD);
  ASSERT_EQ(srv_count(fx.srv, "rid"), 1); /* never a second permit */
  ASSERT_EQ(psem_run_id(&fx, lk_psem_release, a, id, &r), LK_ELEASELOST);
  ASSERT_EQ(srv_count(fx.srv, "rid"), 1);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  /* Upper-case hex is the same id. */
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, 10000));
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(a, 0));
  {
    char *c;
    for (c = id; *c; c++)
      if (*c >= 'a' && *c <= 'f')
        *c = (char)(*c - 'a' + 'A');
  }
  ASSERT_OK(psem_run_id(&fx, lk_psem_release_id, a, id, &r)); /* its own, by id */
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  ASSERT_EQ(srv_count(fx.srv, "rid"), 1);
  fx_finish_psems(&fx, (lk_psem_t *[]){a, b, NULL});
}

TEST(psem_bad_inputs) {
  fx_t fx;
  lk_psem_t *p, *out = NULL;
  lk_psem_opts_t o;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_psem_new(fx.c, "", &out), LK_EINVAL);
  ASSERT_EQ(lk_psem_new(NULL, "x", &out), LK_EINVAL);
  ASSERT_NULL(out);
  p = fx_psem(&fx, "pbad");
  lk_psem_opts_init(&o);
  ASSERT_EQ(o.lease_ms, LK_LEASE_DEFAULT);
  o.permits = 0;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  o.permits = LK_PSEM_MAX_ACQUIRE + 1;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  o.permits = 1;
  o.lease_ms = 0;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  o.lease_ms = -5;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  o.lease_ms = LK_MAX_TIME_MS + 1;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  o.lease_ms = 1000;
  o.wait_ms = -3;
  ASSERT_EQ(lk_psem_acquire(p, &o, rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_acquire(p, NULL, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_release(p, NULL, rt_never_psem_cb, NULL), LK_ENOTHELD);
  ASSERT_EQ(lk_psem_release(p, "0123", rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_release(p, "0123456789abcdef0123456789abcdeg", rt_never_psem_cb, NULL),
            LK_EINVAL);
  ASSERT_EQ(lk_psem_release(p, "0123456789abcdef0123456789abcdef0", rt_never_psem_cb, NULL),
            LK_EINVAL);
  ASSERT_EQ(lk_psem_release(p, "0123456789abcdef0123456789abcdef", rt_never_psem_cb, NULL),
            LK_ENOTHELD);
  ASSERT_EQ(lk_psem_release_id(p, NULL, rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_release_id(p, "xyz", rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_try_set_permits(p, -1, rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_add_permits(p, INT64_MAX, rt_never_psem_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_psem_cancel(p), LK_EINVAL);
  ASSERT_EQ(lk_psem_set_lost_cb(NULL, NULL, NULL), LK_EINVAL);
  ASSERT_NULL(lk_psem_permit_id(p, 0));
  ASSERT_EQ(lk_psem_permit_count(NULL), 0);
  fx_finish_psems(&fx, (lk_psem_t *[]){p, NULL});
  ASSERT_EQ(rt_never_calls, 0);
}

/* A holder killed with SIGKILL: its permits come back when their lease
 * ends on the server (not before), for a fixed lease and for a
 * watchdog-renewed one (renewals stop with the process). */
static void killed_holder(int64_t lease_ms) {
  const int64_t renewed_lease_ms = 1500;
  fx_t fx;
  int pipefd[2];
  pid_t pid;
  lk_psem_t *b;
  sx_t x;
  long long expiry, got, killed_at;
  char c = 0;
  fx_start(&fx, NULL);
  ASSERT_OK(pipe(pipefd));
  fflush(NULL);
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    uv_loop_t loop;
    lk_client_t *cl;
    lk_client_opts_t o;
    lk_psem_t *p;
    sx_t cx;
    close(pipefd[0]);
    uv_loop_init(&loop);
    lk_client_opts_init(&o);
    o.port = rt_server_port(fx.srv);
    o.default_lease_ms = renewed_lease_ms;
    if (lk_client_new(&loop, &o, &cl) != 0 || lk_psem_new(cl, "kh", &p) != 0)
      _exit(3);
    memset(&cx, 0, sizeof cx);
    if (lk_psem_try_set_permits(p, 2, psem_cb, &cx) != 0)
      _exit(4);
    while (!cx.done)
      uv_run(&loop, UV_RUN_ONCE);
    if (psem_acquire_in(&loop, p, 2, 0, lease_ms, &cx) != 0)
      _exit(5);
    if (write(pipefd[1], "k", 1) != 1)
      _exit(6);
    uv_run(&loop, UV_RUN_DEFAULT); /* renewing, until killed */
    _exit(7);
  }
  rt_child_track(pid);
  close(pipefd[1]);
  ASSERT_EQ(read(pipefd[0], &c, 1), 1);
  close(pipefd[0]);
  /* The renewed one outlives its lease (renewals every third of it; the
   * lease leaves a loaded machine's child room to renew late). */
  rt_sleep_ms(lease_ms < 0 ? renewed_lease_ms * 5 / 3 : 100);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {kh}:timeout"), 2);
  kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, NULL, 0), pid);
  rt_child_untrack(pid);
  killed_at = server_ms(&fx);
  const int64_t mark = rt_stall_mark();
  {
    redisReply *r = rt_cmd(fx.srv, "ZRANGE {kh}:timeout -1 -1 WITHSCORES");
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->elements, 2);
    expiry = strtoll(r->element[1]->str, NULL, 10);
    freeReplyObject(r);
  }
  b = fx_psem(&fx, "kh");
  ASSERT_OK(psem_acquire_in(&fx.loop, b, 2, 10000, 10000, &x));
  got = server_ms(&fx);
  printf("permits back %lld ms after the kill (lease ended %lld ms after it)\n",
         got - killed_at, expiry - killed_at);
  ASSERT_GE(got, expiry); /* safety: not before the last lease ended */
  ASSERT_LT(got, expiry + rt_stall_bound_ms(mark, 1000)); /* b re-polls at the holder's ttl */
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {kh}:timeout"), 2); /* b's two */
  fx_finish_psem_count(&fx, "kh", 2, b);
}

TEST(psem_killed_holder_fixed_lease) { killed_holder(800); }

TEST(psem_killed_holder_renewed_lease) { killed_holder(LK_LEASE_DEFAULT); }

TEST(psem_close_gives_back_and_cancels) {
  fx_t fx;
  lk_psem_t *a, *b;
  sx_t x;
  int closed = 0;
  fx_start(&fx, NULL);
  a = fx_psem(&fx, "pc");
  b = fx_psem(&fx, "pc");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, LK_LEASE_DEFAULT));
  psem_start_acquire(b, 1, 30000, 5000, &x);
  fx_wait_subscribers(&fx, "redisson_sc:{pc}", 1);
  fx_close_psem(&fx, a); /* gives back: b is woken and takes one */
  rt_run_until(&fx.loop, &x.done, 3000);
  ASSERT_OK(x.status);
  ASSERT_EQ(srv_count(fx.srv, "pc"), 1);
  /* Closing b with an acquire in flight: canceled, the late grant given
   * back. */
  psem_start_acquire(b, 1, 0, 5000, &x);
  lk_psem_set_data(b, &closed);
  ASSERT_OK(lk_psem_close(b, fx_psem_closed_cb));
  rt_run_until(&fx.loop, &closed, 5000);
  ASSERT_EQ(x.status, LK_ECANCELED);
  ASSERT(fx_wait_count(&fx, "pc", 2, 3000));
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {pc}:timeout"), 0);
  fx_finish(&fx);
}

/* A waiter whose only way forward is a lease ending: the busy reply says
 * when, so it tries then, not a full re-poll later. */
TEST(psem_waiter_retries_when_the_nearest_lease_ends) {
  fx_t fx;
  lk_psem_t *a, *b;
  start_with(&fx, 0, 600000);
  a = fx_psem(&fx, "near");
  b = fx_psem(&fx, "near");
  b_gets_the_permit_when_a_lease_ends(&fx, a, b, "near", 700, 10000, 300);
  fx_finish_psems(&fx, (lk_psem_t *[]){a, b, NULL});
}

/* Many holders share the watchdog's batched renewals (up to 100 per
 * script): every permit outlives several leases, in few commands. */
TEST(psem_watchdog_batches_many_holders) {
  enum { HOLDERS = 150 };
  /* Scaled: every holder must live on renewals batched 100 to a script. */
  const int64_t lease = rt_scaled_ms(600);
  fx_t fx;
  lk_psem_t *h[HOLDERS];
  lk_client_stats_t st;
  int64_t t0, ticks;
  int i;
  start_with(&fx, lease, 0);
  t0 = rt_now_ms();
  for (i = 0; i < HOLDERS; i++)
    h[i] = fx_psem(&fx, "many");
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, h[0], HOLDERS, NULL));
  int64_t mark = rt_stall_mark();
  for (i = 0; i < HOLDERS; i++)
    ASSERT_OK(psem_acquire(&fx, h[i], 1, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(srv_count(fx.srv, "many"), 0);
  fx_spin(&fx, lease * 3); /* three leases */
  lk_client_get_stats(fx.c, &st);
  /* Read with the count of losses, in one expectation: a stall between the
   * two would end a deadline (not held) before the loop could count it. */
  int all_held = 1;
  for (i = 0; i < HOLDERS; i++)
    all_held = all_held && lk_psem_is_held(h[i]);
  /* A machine stall past a renewal period's slack loses leases rightly. */
  if (!EXPECT_HOLD(st.leases_lost == 0 && all_held, mark, fx_renewal_slack(lease))) {
    for (i = 0; i < HOLDERS; i++)
      fx_close_psem(&fx, h[i]);
    fx_finish(&fx);
    return;
  }
  ASSERT_GE(st.renewals, (uint64_t)HOLDERS * 3);
  /* Batched, not one each: a tick (lease/6, 100 ms at timing 1) renews
   * whatever is due in at most two scripts for 150 holders (100 keys per
   * script), however slowly the acquisitions spread them (a sanitizer build
   * is slow). */
  ticks = (rt_now_ms() - t0) / (lease / 6) + 2;
  ASSERT_LE(st.renewal_commands, (uint64_t)(2 * ticks));
  ASSERT_LE(st.renewal_commands * 10, st.renewals);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {many}:timeout"), HOLDERS);
  for (i = 0; i < HOLDERS; i++)
    fx_close_psem(&fx, h[i]);
  ASSERT_EQ(srv_count(fx.srv, "many"), HOLDERS);
  fx_finish(&fx);
}

/* --- give-backs left to the background while the server is out of reach
 * --- */

/* A client through a proxy with short timeouts and a fast reconnect, so
 * that a refused server costs a reconnect cycle every few tens of ms. */
static rt_proxy_t *start_fast_proxied(fx_t *fx, int64_t default_lease_ms) {
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.reconnect_min_ms = 10;
  o.reconnect_max_ms = 50;
  o.reply_timeout_ms = 150;
  o.connect_timeout_ms = 150;
  if (default_lease_ms > 0)
    o.default_lease_ms = default_lease_ms;
  return fx_start_proxied(fx, &o);
}

static uint64_t reconnects(fx_t *fx) {
  lk_client_stats_t st;
  lk_client_get_stats(fx->c, &st);
  return st.reconnects;
}

/* Refused for many more reconnect cycles than the five sends a give-back
 * used to get: the count stays where it is meanwhile. */
static void stay_refused(fx_t *fx, const char *name, long long count) {
  uint64_t before = reconnects(fx);
  /* About 20 cycles in 800 ms; a stall of the machine makes fewer. */
  FX_EVENTUALLY(fx, reconnects(fx) - before >= 8, 800);
  ASSERT_EQ(srv_count(fx->srv, name), count);
}

/* p's acquire of 2 permits (60 s lease) whose reply is cut, reconnects
 * refused from then on: it completes with LK_EUNKNOWN. */
static void unknown_acquire(fx_t *fx, rt_proxy_t *px, lk_psem_t *p, sx_t *x) {
  rt_proxy_refuse(px, 1);
  rt_proxy_on_reply(px, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  psem_start_acquire(p, 2, 0, 60000, x);
  rt_run_until(&fx->loop, &x->done, 3000);
  ASSERT_EQ(x->status, LK_EUNKNOWN);
}

/* The connection heals: the count must reach want promptly (the give-back
 * goes out on the first connection), well before lease_end (server ms),
 * when the permits would come back anyway. Returns ms from heal to give
 * back. */
static long long heal_and_wait(fx_t *fx, rt_proxy_t *px, const char *name, long long want,
                               long long lease_end) {
  long long healed, got;
  rt_proxy_refuse(px, 0);
  healed = server_ms(fx);
  const int64_t mark = rt_stall_mark();
  while (srv_count(fx->srv, name) != want && !rt_stall_expired(mark, 3000)) {
    uv_run(&fx->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(2);
  }
  got = server_ms(fx);
  printf("%s: given back %lld ms after the heal; the lease ends %lld ms after it\n", name,
         got - healed, lease_end - healed);
  ASSERT_EQ(srv_count(fx->srv, name), want);
  ASSERT_LT(got, lease_end - 300); /* given back, not expired */
  ASSERT_LT(got - healed, rt_stall_bound_ms(mark, 1000));
  return got - healed;
}

/* name's 2 of 3 permits, taken by a with a 60 s lease, stay out while
 * reconnects are refused, then come back promptly once they are not; a
 * closed, the test and its proxy ended. */
static void given_back_after_the_refusals(fx_t *fx, rt_proxy_t *px, lk_psem_t *a,
                                          const char *name) {
  stay_refused(fx, name, 1);
  long long now = server_ms(fx);
  heal_and_wait(fx, px, name, 3, now + 59000);
  ASSERT_EQ(rt_cmd_int(fx->srv, "ZCARD {%s}:timeout", name), 0);
  fx_close_psem(fx, a);
  ASSERT_EQ(srv_count(fx->srv, name), 3);
  fx_finish(fx);
  rt_proxy_stop(px);
}

/* A renewed permit's lease is lost while no connection gets through: the
 * renewal that ran on the server had its reply cut, so the lease there runs
 * a renewal period past the object's deadline. The give-back of the lost
 * permit is refused for many reconnects, then the connection heals before
 * the lease ends: the permit comes back right away, not at lease end. */
TEST(psem_lost_lease_given_back_after_long_cut) {
  fx_t fx;
  /* Scaled like the refused period (stay_refused), so the lease still ends
   * well after the heal under a sanitizer's timing. */
  rt_proxy_t *px = start_fast_proxied(&fx, rt_scaled_ms(6000));
  lk_psem_t *a = fx_psem(&fx, "llc");
  lost_t lost;
  lk_client_stats_t st;
  long long first, expiry;
  char id[33];
  memset(&lost, 0, sizeof lost);
  ASSERT_OK(lk_psem_set_lost_cb(a, on_lost, &lost));
  ASSERT_OK(psem_run_n(&fx, lk_psem_try_set_permits, a, 2, NULL));
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, LK_LEASE_DEFAULT));
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(a, 0));
  first = score_of(&fx, "{llc}:timeout", id);
  /* One renewal goes through (its script is then cached: the next
   * EVALSHA is the next renewal). */
  FX_EVENTUALLY(&fx, score_of(&fx, "{llc}:timeout", id) != first, 5000);
  ASSERT_GT(score_of(&fx, "{llc}:timeout", id), first);
  fx_spin(&fx, 50);
  lk_client_get_stats(fx.c, &st);
  ASSERT_EQ(st.leases_lost, 0);
  /* The next renewal runs, its reply is lost with the connection, and no
   * new connection gets through. */
  rt_proxy_refuse(px, 1);
  rt_proxy_on_reply(px, "EVALSHA", 1, RT_PROXY_DROP_CUT, NULL, 0);
  FX_WAIT_RULE_APPLIED(&fx, px, 4000);
  expiry = score_of(&fx, "{llc}:timeout", id);
  /* The object's deadline (the last confirmed renewal's) passes first. */
  rt_run_until(&fx.loop, &lost.calls, 6000);
  ASSERT_EQ(lost.calls, 1);
  ASSERT_EQ(lost.status, LK_ELEASELOST);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  stay_refused(&fx, "llc", 1);
  ASSERT_EQ(score_of(&fx, "{llc}:timeout", id), expiry);
  ASSERT_GT(expiry, server_ms(&fx) + 800); /* room to tell a give-back from expiry */
  heal_and_wait(&fx, px, "llc", 2, expiry);
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD {llc}:timeout"), 0);
  ASSERT_EQ(lost.calls, 1);
  fx_finish_psem_count(&fx, "llc", 2, a);
  rt_proxy_stop(px);
}

/* The fast client's timeouts are 150 ms (start_fast_proxied): a machine
 * stall longer than that may end a warm-up call LK_ECONN (not sent, nothing
 * to undo) before the case's own faults begin. Such a call is tried again,
 * at most 3 times, and only past a measured stall of 150 ms (the rule of
 * EXPECT_HOLD, which prints it); otherwise it fails as before. */
#define FAST_CALL_OK(call)                                                     \
  do {                                                                         \
    const int64_t fc_mark_ = rt_stall_mark();                                  \
    int fc_rc_ = (call);                                                       \
    for (int fc_i_ = 0; fc_rc_ == LK_ECONN && fc_i_ < 3; fc_i_++) {            \
      rt_hold_excused_at(__FILE__, __LINE__, #call, fc_mark_, 150);            \
      fc_rc_ = (call);                                                         \
    }                                                                          \
    ASSERT_OK(fc_rc_);                                                         \
  } while (0)

/* The scripts are cached on the server, so the next EVALSHA is the
 * operation itself (not a NOSCRIPT answer). */
static void psem_warm_up(fx_t *fx, lk_psem_t *p, long long permits) {
  FAST_CALL_OK(psem_run_n(fx, lk_psem_try_set_permits, p, permits, NULL));
  FAST_CALL_OK(psem_acquire(fx, p, 1, 0, 60000));
  FAST_CALL_OK(psem_run_id(fx, lk_psem_release, p, NULL, NULL));
}

/* name's psem behind a fast proxy (start_fast_proxied), warmed up with 3
 * permits. */
static lk_psem_t *warm_psem_behind_proxy(fx_t *fx, rt_proxy_t **px, const char *name) {
  *px = start_fast_proxied(fx, 0);
  lk_psem_t *p = fx_psem(fx, name);
  psem_warm_up(fx, p, 3);
  return p;
}

/* An acquire runs on the server and its reply is lost with the connection;
 * then every reconnect is refused for many cycles. The give-back of its
 * ids waits for the server however many cycles that takes. */
TEST(psem_unknown_acquire_given_back_after_many_reconnects) {
  fx_t fx;
  rt_proxy_t *px;
  lk_psem_t *a = warm_psem_behind_proxy(&fx, &px, "uag");
  sx_t x;
  unknown_acquire(&fx, px, a, &x);
  ASSERT_EQ(rt_proxy_rule_state(px), RT_PROXY_RULE_APPLIED);
  ASSERT_EQ(srv_count(fx.srv, "uag"), 1); /* it took them */
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  given_back_after_the_refusals(&fx, px, a, "uag");
}

/* A release is sent into a blackhole (never run) and its resends fail: it
 * completes with LK_EUNKNOWN and is finished in the background, which
 * waits out many refused reconnects. */
TEST(psem_unknown_release_given_back_after_many_reconnects) {
  fx_t fx;
  rt_proxy_t *px;
  lk_psem_t *a = warm_psem_behind_proxy(&fx, &px, "urg");
  sx_t r;
  ASSERT_OK(psem_acquire(&fx, a, 2, 0, 60000));
  ASSERT_EQ(srv_count(fx.srv, "urg"), 1);
  rt_proxy_blackhole(px, 1);
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_psem_release(a, NULL, psem_cb, &r));
  rt_run_until(&fx.loop, &r.done, 5000);
  ASSERT_EQ(r.status, LK_EUNKNOWN);
  ASSERT_EQ(lk_psem_permit_count(a), 0);
  /* From the blackhole to refused connections (the connection that lost
   * bytes goes first). */
  rt_proxy_refuse(px, 1);
  rt_proxy_reset_all(px);
  rt_proxy_blackhole(px, 0);
  given_back_after_the_refusals(&fx, px, a, "urg");
}

static void count_closed(lk_psem_t *p) { (*(int *)lk_psem_get_data(p))++; }

/* Close with a give-back still pending and the server out of reach: close
 * waits for it (within its bound), so the permits are back when close_cb
 * runs. */
TEST(psem_close_waits_for_pending_give_back) {
  fx_t fx;
  rt_proxy_t *px;
  lk_psem_t *a = warm_psem_behind_proxy(&fx, &px, "cwg");
  sx_t x;
  int closed = 0;
  unknown_acquire(&fx, px, a, &x);
  ASSERT_EQ(srv_count(fx.srv, "cwg"), 1);
  lk_psem_set_data(a, &closed);
  /* Close's bound is 2 x (connect + reply timeout) + reconnect_max_ms =
   * 650 ms; the server is back in reach 200 ms in, and the give-back needs
   * a reconnect (up to 50 ms) and a round trip. A machine stall longer
   * than what is left (300 ms, with room for the round trip) may end the
   * close first: the permits then come back with their lease, never
   * twice. */
  const int64_t mark = rt_stall_mark(), slack = 650 - 200 - 150;
  ASSERT_OK(lk_psem_close(a, count_closed));
  fx_spin(&fx, rt_scaled_ms(200));
  int in_time = EXPECT_HOLD(closed == 0, mark, slack); /* still waiting for the give-back */
  rt_proxy_refuse(px, 0);
  rt_run_until(&fx.loop, &closed, 3000);
  const long long count = srv_count(fx.srv, "cwg");
  ASSERT_LE(count, 3);
  if (in_time) /* given back before close completed */
    EXPECT_HOLD(count == 3, mark, slack);
  fx_spin(&fx, 50);
  ASSERT_EQ(closed, 1);
  fx_finish(&fx);
  rt_proxy_stop(px);
}

/* Close on a server that stays out of reach: the release of the held
 * permits fails, its give-back and an acquire's are waited for, but only
 * up to close's bound (2 x (connect + reply timeout) + reconnect_max_ms =
 * 650 ms here): close_cb runs once, in bounded time. */
TEST(psem_close_bounded_while_server_unreachable) {
  fx_t fx;
  rt_proxy_t *px = start_fast_proxied(&fx, 0);
  lk_psem_t *a = fx_psem(&fx, "cbu"), *b = fx_psem(&fx, "cbu");
  sx_t x;
  int closed = 0;
  int64_t t0, took;
  psem_warm_up(&fx, a, 4);
  ASSERT_OK(psem_acquire(&fx, a, 1, 0, 60000));
  unknown_acquire(&fx, px, b, &x);
  ASSERT_EQ(srv_count(fx.srv, "cbu"), 1);
  lk_psem_set_data(a, &closed);
  lk_psem_set_data(b, &closed);
  t0 = rt_now_ms();
  ASSERT_OK(lk_psem_close(a, count_closed));
  ASSERT_OK(lk_psem_close(b, count_closed));
  {
    int64_t end = t0 + rt_scaled_ms(5000);
    while (closed < 2 && rt_now_ms() < end) {
      uv_run(&fx.loop, UV_RUN_NOWAIT);
      rt_sleep_ms(1);
    }
  }
  took = rt_now_ms() - t0;
  printf("both closed %lld ms after close with the server unreachable\n", (long long)took);
  ASSERT_EQ(closed, 2);
  ASSERT_GE(took, 500); /* they waited for the give-backs */
  ASSERT_LT(took, 650 + rt_stall_bound_ms(t0, 1000)); /* but not past the bound */
  fx_spin(&fx, 100);
  ASSERT_EQ(closed, 2); /* once each */
  ASSERT_EQ(srv_count(fx.srv, "cbu"), 1); /* nothing invented */
  rt_proxy_refuse(px, 0);
  fx_finish(&fx);
  rt_proxy_stop(px);
}
