/* Reentrant lock: counts, ownership, queries, waiting, cancel and close. */
#include <signal.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lk_fixture.h"

static long long server_holds(fx_t *fx, lk_lock_t *l) {
  char *v = rt_cmd_str(fx->srv, "HGET %s %s", lk_lock_name(l), lk_lock_owner(l));
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

TEST(reentrancy_counts) {
  fx_t fx;
  lk_lock_t *l;
  int64_t r = -1;
  int i;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "re");
  for (i = 1; i <= 3; i++) {
    ASSERT_OK(sx_acquire(&fx, l, 0, 5000));
    ASSERT_EQ(lk_lock_hold_count(l), i);
    ASSERT_EQ(server_holds(&fx, l), i);
  }
  ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, l, &r));
  ASSERT_EQ(r, 3);
  /* The layout is Redisson's: one field, the owner, and a lease. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "HLEN re"), 1);
  r = rt_cmd_int(fx.srv, "PTTL re");
  ASSERT_GT(r, 0);
  ASSERT_LE(r, 5000);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 0); /* still held */
  ASSERT_EQ(server_holds(&fx, l), 2);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, &r));
  ASSERT_EQ(r, 1); /* released */
  ASSERT_EQ(lk_lock_hold_count(l), 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS re"), 0);
  /* Nothing held: refused at once, and the callback never runs. */
  ASSERT_EQ(lk_lock_release(l, sx_cb, NULL), LK_ENOTHELD);
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(second_owner_excluded_then_admitted) {
  fx_t fx;
  lk_lock_t *a, *b;
  fx_start(&fx, NULL);
  a = fx_lock(&fx, "ex");
  b = fx_lock(&fx, "ex");
  ASSERT_STREQ(lk_lock_name(a), lk_lock_name(b));
  ASSERT(strcmp(lk_lock_owner(a), lk_lock_owner(b)) != 0);
  ASSERT_OK(sx_acquire(&fx, a, 0, 5000));
  ASSERT_EQ(sx_acquire(&fx, b, 0, 5000), LK_ETIMEDOUT);
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  ASSERT_OK(sx_acquire(&fx, b, 0, 5000));
  ASSERT_EQ(server_holds(&fx, b), 1);
  fx_close_lock(&fx, a);
  fx_close_lock(&fx, b);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS ex"), 0); /* close released b */
  fx_finish(&fx);
}

/* lk_lock_owner's text stays readable for the object's life, also across
 * owners that no longer fit where the first one was (the ASan lane catches a
 * freed one), and always shows the owner the server sees. */
TEST(owner_text_stays_readable_across_new_owners) {
  static const char *ids[3] = {NULL, "a-client-id-long-enough-to-need-storage-of-its-own",
                               "a-client-id-long-enough-to-need-storage-of-its-own-0123456789ab"};
  static const uint64_t tids[3] = {3, 123456789, 18446744073709551615ull};
  fx_t fx;
  lk_lock_t *a;
  const char *seen[3];
  char want[128];
  int i;
  fx_start(&fx, NULL);
  a = fx_lock(&fx, "owners");
  for (i = 0; i < 3; i++) {
    ASSERT_OK(lk_lock_set_owner(a, ids[i], tids[i]));
    seen[i] = lk_lock_owner(a);
    snprintf(want, sizeof(want), "%s:%llu", ids[i] ? ids[i] : lk_client_id(fx.c),
             (unsigned long long)tids[i]);
    ASSERT_STREQ(seen[i], want);
    ASSERT_OK(sx_acquire(&fx, a, 0, 5000));
    ASSERT_EQ(rt_cmd_int(fx.srv, "HEXISTS owners %s", want), 1);
    ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  }
  /* Every pointer handed out is still readable text. */
  for (i = 0; i < 3; i++)
    ASSERT_GT(strlen(seen[i]), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

TEST(release_after_lease_taken_over_is_not_owner) {
  fx_t fx;
  lk_lock_t *a, *b;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "to", 150, &a, &b);
  ASSERT(fx_wait_key_gone(&fx, "to", 5000));
  ASSERT_OK(sx_acquire(&fx, b, 0, 10000));
  ASSERT_EQ(sx_run(&fx, lk_lock_release, a, NULL), LK_ENOTOWNER);
  ASSERT_EQ(lk_lock_hold_count(a), 0);
  /* b's hold is untouched by a's stale release. */
  ASSERT_EQ(server_holds(&fx, b), 1);
  ASSERT_GT(rt_cmd_int(fx.srv, "PTTL to"), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

TEST(force_release_and_queries) {
  fx_t fx;
  lk_lock_t *a, *b;
  int64_t r = -9;
  fx_start(&fx, NULL);
  a = fx_lock(&fx, "fq");
  b = fx_lock(&fx, "fq");
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, b, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_remaining_ttl, b, &r));
  ASSERT_EQ(r, -2);
  ASSERT_OK(sx_acquire(&fx, a, 0, 4000));
  ASSERT_OK(sx_run(&fx, lk_lock_is_locked, b, &r));
  ASSERT_EQ(r, 1);
  ASSERT_OK(sx_run(&fx, lk_lock_remaining_ttl, b, &r));
  ASSERT_GT(r, 0);
  ASSERT_LE(r, 4000);
  ASSERT_OK(sx_run(&fx, lk_lock_server_hold_count, b, &r));
  ASSERT_EQ(r, 0);
  ASSERT_OK(sx_run(&fx, lk_lock_force_release, b, &r));
  ASSERT_EQ(r, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS fq"), 0);
  ASSERT_OK(sx_run(&fx, lk_lock_force_release, b, &r));
  ASSERT_EQ(r, 0); /* nothing left to delete */
  ASSERT_EQ(sx_run(&fx, lk_lock_release, a, NULL), LK_ENOTOWNER);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

TEST(explicit_lease_applies_and_expires) {
  fx_t fx;
  lk_lock_t *a;
  long long ttl;
  fx_start(&fx, NULL);
  a = fx_lock(&fx, "lease");
  ASSERT_OK(sx_acquire(&fx, a, 0, 700));
  ttl = rt_cmd_int(fx.srv, "PTTL lease");
  ASSERT_GT(ttl, 0);
  ASSERT_LE(ttl, 700);
  ASSERT(fx_wait_key_gone(&fx, "lease", 5000));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

TEST(wait_budget_is_bounded) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t s;
  uint64_t t0;
  int64_t took;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "wb", 20000, &a, &b);
  t0 = uv_hrtime();
  ASSERT_EQ(sx_acquire_in(&fx.loop, b, 300, 5000, &s), LK_ETIMEDOUT);
  took = (int64_t)((s.t_ns - t0) / 1000000u);
  ASSERT_GE(took, 299); /* never gives up early */
  ASSERT_LE(took, 300 + rt_stall_bound_since_ns(t0, 400));
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* With re-polling slowed to 20 s, only the release message can wake the
 * waiter this fast. */
TEST(waiter_wakes_promptly_on_release) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t s;
  fx_start_slow_repoll(&fx);
  fx_lock_holder_and_other(&fx, "wake", 30000, &a, &b);
  sx_start(b, 20000, LK_LEASE_DEFAULT, &s);
  /* Let b reach its wait (subscribed and re-tried). */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{wake}") != 0, 3000);
  fx_spin(&fx, 50); /* the post-subscribe retry lands */
  ASSERT_EQ(s.done, 0);
  sx_release_wakes(&fx, a, &s, 10000, 500);
  fx_close_lock(&fx, a);
  fx_close_lock(&fx, b);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS wake"), 0);
  /* The channel is unsubscribed once nobody waits, after its linger
   * (pubsub_linger_ms 2 s, ended on a heartbeat tick: docs/objects.md). */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{wake}") == 0, 5000);
  fx_finish(&fx);
}

TEST(killed_holder_frees_after_lease) {
  fx_t fx;
  int pipefd[2];
  pid_t pid;
  char buf[32];
  lk_lock_t *b;
  sx_t s;
  uint64_t child_sent_ns, child_got_ns;
  const int64_t lease = 800;
  fx_start(&fx, NULL);
  ASSERT_OK(pipe(pipefd));
  pid = fork();
  ASSERT(pid >= 0);
  if (pid == 0) {
    /* The holder: its own loop and client, made after fork. */
    uv_loop_t loop;
    lk_client_t *c;
    lk_client_opts_t o;
    lk_lock_t *l;
    sx_t cs;
    unsigned long long now[2];
    close(pipefd[0]);
    uv_loop_init(&loop);
    lk_client_opts_init(&o);
    o.port = rt_server_port(fx.srv);
    if (lk_client_new(&loop, &o, &c) != 0 || lk_lock_new(c, "killed", &l) != 0)
      _exit(3);
    /* Connected first, so the acquire below is about one round trip. */
    memset(&cs, 0, sizeof(cs));
    if (lk_lock_is_locked(l, sx_cb, &cs) != 0)
      _exit(3);
    rt_run_until(&loop, &cs.done, 15000);
    /* Before the acquire is sent (the server starts the lease after it) and
     * at its reply (after it): the clock is the same monotonic one as the
     * parent's. */
    now[0] = (unsigned long long)uv_hrtime();
    if (sx_acquire_in(&loop, l, 0, lease, &cs) != 0)
      _exit(3);
    now[1] = (unsigned long long)cs.t_ns;
    if (write(pipefd[1], now, sizeof(now)) != (ssize_t)sizeof(now))
      _exit(4);
    for (;;)
      pause();
  }
  rt_child_track(pid);
  close(pipefd[1]);
  ASSERT_EQ(read(pipefd[0], buf, 2 * sizeof(unsigned long long)),
            (ssize_t)(2 * sizeof(unsigned long long)));
  memcpy(&child_sent_ns, buf, sizeof(child_sent_ns));
  memcpy(&child_got_ns, buf + sizeof(child_sent_ns), sizeof(child_got_ns));
  close(pipefd[0]);
  kill(pid, SIGKILL);
  ASSERT_EQ(waitpid(pid, NULL, 0), pid);
  rt_child_untrack(pid);
  b = fx_lock(&fx, "killed");
  ASSERT_OK(sx_acquire_in(&fx.loop, b, 10000, 5000, &s));
  /* Safety: not before the dead holder's lease ran out on the server, which
   * started it after child_sent_ns (measured from the child's reply instead,
   * a child preempted before its callback left the bound too tight; the
   * server's clock has millisecond steps). Liveness: soon after it (the
   * waiter re-polls at the holder's TTL). */
  ASSERT_GE((int64_t)((s.t_ns - child_sent_ns) / 1000000u), lease - 2);
  ASSERT_LE((int64_t)((s.t_ns - child_got_ns) / 1000000u),
            lease + rt_stall_bound_since_ns(child_got_ns, 600));
  fx_finish_locks(&fx, (lk_lock_t *[]){b, NULL});
}

TEST(wrong_type_key_is_never_overwritten) {
  fx_t fx;
  lk_lock_t *a;
  char *v;
  int64_t r;
  fx_start(&fx, NULL);
  freeReplyObject(rt_cmd(fx.srv, "SET wt precious"));
  a = fx_lock(&fx, "wt");
  ASSERT_EQ(sx_acquire(&fx, a, 0, 5000), LK_EWRONGTYPE);
  ASSERT(strstr(lk_lock_error_text(a), "WRONGTYPE") != NULL);
  ASSERT_EQ(sx_acquire(&fx, a, 2000, 5000), LK_EWRONGTYPE); /* no waiting on it */
  ASSERT_EQ(sx_run(&fx, lk_lock_force_release, a, &r), LK_EWRONGTYPE);
  v = rt_cmd_str(fx.srv, "GET wt");
  ASSERT_STREQ(v, "precious");
  free(v);
  fx_finish_locks(&fx, (lk_lock_t *[]){a, NULL});
}

TEST(cancel_waiting_acquire) {
  fx_t fx;
  lk_lock_t *a, *b;
  sx_t s;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "cw", 20000, &a, &b);
  sx_start(b, LK_WAIT_FOREVER, LK_LEASE_DEFAULT, &s);
  ASSERT_OK(lk_lock_cancel(b));
  ASSERT_EQ(s.done, 0); /* never inside the call */
  ASSERT_EQ(lk_lock_cancel(b), LK_EINVAL); /* already canceled */
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  /* The canceled attempt may have been in flight: whatever it took is given
   * back, so the lock ends free. */
  ASSERT(fx_wait_key_gone(&fx, "cw", 3000));
  fx_finish_locks(&fx, (lk_lock_t *[]){a, b, NULL});
}

/* The attempt is certainly in flight and will succeed: the late grant must
 * be given back. */
TEST(cancel_in_flight_gives_back_late_grant) {
  fx_t fx;
  lk_lock_t *b;
  sx_t s;
  fx_start(&fx, NULL);
  b = fx_lock(&fx, "cf");
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_lock_acquire(b, NULL, sx_cb, &s));
  ASSERT_OK(lk_lock_cancel(b));
  rt_run_until(&fx.loop, &s.done, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  ASSERT(fx_wait_key_gone(&fx, "cf", 3000));
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  fx_finish_locks(&fx, (lk_lock_t *[]){b, NULL});
}

typedef struct {
  int acquired_cb, closed;
  int order_ok;
} close_cb_state_t;

static void on_close_in_cb_closed(lk_lock_t *l) {
  close_cb_state_t *st = lk_lock_get_data(l);
  st->order_ok = st->acquired_cb == 1;
  st->closed = 1;
}

static void on_acquired_then_close(lk_lock_t *l, int status, void *arg) {
  close_cb_state_t *st = arg;
  ASSERT_OK(status);
  st->acquired_cb++;
  ASSERT_EQ(lk_lock_hold_count(l), 1);
  ASSERT_OK(lk_lock_close(l, on_close_in_cb_closed));
  ASSERT_EQ(lk_lock_close(l, on_close_in_cb_closed), LK_ECLOSED);
}

TEST(close_from_inside_callback_releases) {
  fx_t fx;
  lk_lock_t *a;
  close_cb_state_t st;
  memset(&st, 0, sizeof(st));
  fx_start(&fx, NULL);
  a = fx_lock(&fx, "cic");
  lk_lock_set_data(a, &st);
  ASSERT_OK(lk_lock_acquire(a, NULL, on_acquired_then_close, &st));
  rt_run_until(&fx.loop, &st.closed, 5000);
  ASSERT(st.order_ok);
  /* close waited for its release: the key is gone by close_cb. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cic"), 0);
  fx_finish(&fx);
}

/* Closing from inside a callback that was delivered later (a cancel's
 * LK_ECANCELED): the object and an idle one closed in the same callback are
 * each closed exactly once, and the client then closes. The waiting object
 * has its wait part (timer) by then; the idle one never had one. */
typedef struct {
  lk_lock_t *other;
  int canceled, closed_waiter, closed_other;
} close_in_cancel_t;

static void on_waiter_closed(lk_lock_t *l) {
  close_in_cancel_t *st = lk_lock_get_data(l);
  st->closed_waiter++;
}

static void on_other_closed(lk_lock_t *l) {
  close_in_cancel_t *st = lk_lock_get_data(l);
  st->closed_other++;
}

static void on_canceled_close_both(lk_lock_t *l, int status, void *arg) {
  close_in_cancel_t *st = arg;
  ASSERT_EQ(status, LK_ECANCELED);
  st->canceled++;
  ASSERT_OK(lk_lock_close(l, on_waiter_closed));
  ASSERT_OK(lk_lock_close(st->other, on_other_closed));
}

TEST(close_inside_a_cancel_callback_closes_each_once) {
  fx_t fx;
  lk_lock_t *holder, *waiter, *idle;
  close_in_cancel_t st;
  lk_lock_opts_t o;
  memset(&st, 0, sizeof(st));
  fx_start(&fx, NULL);
  holder = fx_lock(&fx, "cicb");
  waiter = fx_lock(&fx, "cicb");
  idle = fx_lock(&fx, "cicb-idle");
  st.other = idle;
  lk_lock_set_data(waiter, &st);
  lk_lock_set_data(idle, &st);
  ASSERT_OK(sx_acquire(&fx, holder, 0, 20000));
  lk_lock_opts_init(&o);
  o.wait_ms = 5000;
  ASSERT_OK(lk_lock_acquire(waiter, &o, on_canceled_close_both, &st));
  /* Waiting: its timer and subscription are made. */
  fx_wait_subscribers(&fx, "redisson_lock__channel:{cicb}", 1);
  ASSERT_OK(lk_lock_cancel(waiter));
  rt_run_until(&fx.loop, &st.closed_other, 5000);
  rt_run_until(&fx.loop, &st.closed_waiter, 5000);
  fx_spin(&fx, 50); /* a second close would come now */
  ASSERT_EQ(st.canceled, 1);
  ASSERT_EQ(st.closed_waiter, 1);
  ASSERT_EQ(st.closed_other, 1);
  fx_close_lock(&fx, holder);
  fx_finish(&fx); /* fails unless every object is gone */
}

typedef struct {
  sx_t op;
  int closed;
  int op_before_close;
} close_order_t;

static void on_order_closed(lk_lock_t *l) {
  close_order_t *st = lk_lock_get_data(l);
  st->op_before_close = st->op.done;
  st->closed = 1;
}

TEST(close_with_operation_in_flight) {
  fx_t fx;
  lk_lock_t *a, *b;
  close_order_t st;
  lk_lock_opts_t o;
  fx_start(&fx, NULL);
  fx_lock_holder_and_other(&fx, "cif", 20000, &a, &b);
  ASSERT_OK(sx_acquire(&fx, a, 0, 20000)); /* two holds */
  /* b waits, then is closed while waiting: its callback comes first with
   * LK_ECANCELED, then its close_cb. */
  memset(&st, 0, sizeof(st));
  lk_lock_opts_init(&o);
  o.wait_ms = 10000;
  lk_lock_set_data(b, &st);
  ASSERT_OK(lk_lock_acquire(b, &o, sx_cb, &st.op));
  ASSERT_OK(lk_lock_close(b, on_order_closed));
  ASSERT_EQ(lk_lock_acquire(b, &o, sx_cb, &st.op), LK_ECLOSED);
  rt_run_until(&fx.loop, &st.closed, 5000);
  ASSERT(st.op_before_close);
  ASSERT_EQ(st.op.status, LK_ECANCELED);
  /* a closes holding twice: both holds go. */
  fx_close_lock(&fx, a);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cif"), 0);
  fx_finish(&fx);
}

/* An acquire whose command is on its way when the close comes: the server
 * grants it, the close abandons it and gives the grant back. close_cb
 * comes after that give-back's answer, so the name is free when it runs
 * (before, close_cb came first and the give-back landed behind it). */
typedef struct {
  sx_t op;
  rt_server_t *srv;
  long long exists_at_close;
  int closed;
} close_grant_t;

static void on_grant_race_closed(lk_lock_t *l) {
  close_grant_t *st = lk_lock_get_data(l);
  st->exists_at_close = rt_cmd_int(st->srv, "EXISTS cgr");
  st->closed = 1;
}

TEST(close_cb_comes_after_an_abandoned_grant_is_given_back) {
  fx_t fx;
  close_grant_t st;
  lk_lock_t *a;
  fx_start(&fx, NULL);
  for (int round = 0; round < 20; round++) {
    a = fx_lock(&fx, "cgr");
    memset(&st, 0, sizeof(st));
    st.srv = fx.srv;
    st.exists_at_close = -1;
    lk_lock_set_data(a, &st);
    ASSERT_OK(lk_lock_acquire(a, NULL, sx_cb, &st.op));
    ASSERT_OK(lk_lock_close(a, on_grant_race_closed));
    rt_run_until(&fx.loop, &st.closed, 5000);
    ASSERT_EQ(st.op.status, LK_ECANCELED);
    ASSERT_EQ(st.exists_at_close, 0);
  }
  fx_finish(&fx);
}

TEST(names_with_braces_spaces_and_crlf_are_independent) {
  static const char *names[] = {"a", "{a}", "a{b}c", "a b", "a\r\nb", "%s%n", "a}{b}"};
  enum { N = sizeof(names) / sizeof(names[0]) };
  fx_t fx;
  lk_lock_t *l[N];
  int i;
  fx_start(&fx, NULL);
  for (i = 0; i < N; i++) {
    l[i] = fx_lock(&fx, names[i]);
    ASSERT_OK(sx_acquire(&fx, l[i], 0, 10000));
  }
  for (i = 0; i < N; i++) {
    const char *argv[2] = {"EXISTS", names[i]};
    redisReply *r = rt_cmd_argv(fx.srv, 2, argv, NULL);
    ASSERT_NOT_NULL(r);
    ASSERT_EQ(r->integer, 1);
    freeReplyObject(r);
  }
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), N);
  for (i = 0; i < N; i++)
    fx_close_lock(&fx, l[i]);
  ASSERT_EQ(rt_server_count_keys(fx.srv, "*"), 0);
  fx_finish(&fx);
}
