/* Contention in one process costs the server what it must and no more
 * (docs/objects.md, "Waiting"): a release wakes one local waiter, not every
 * waiter of the name, and a busy name's channel is subscribed once, not
 * once per wait. Bounded by what the server counted (INFO commandstats),
 * with a generous margin; the old behaviour was ~50 scripts per handoff
 * among 50 waiters and one SUBSCRIBE per wait. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "server_faults.h"
#include "latchkey/inspect.h"

static long long scripts(rt_server_t *srv) {
  return rt_server_cmd_calls(srv, "evalsha") + rt_server_cmd_calls(srv, "eval");
}

/* ---- many waiters of one process on one name ---- */

#define MAXW 64

typedef struct {
  lk_lock_t *locks[MAXW];
  int n;
  int target;   /* acquisitions to make in all */
  int acquired; /* so far */
  int holders;  /* at once: never above 1 */
  int max_holders;
  int active; /* objects with an operation pending */
  int failures;
  int all_done;
} run_t;

static void start_acquire(run_t *r, lk_lock_t *l);

static void on_released(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  if (status != 0)
    r->failures++;
  /* Re-wait while acquisitions are left to make, else stop. */
  if (r->acquired < r->target) {
    start_acquire(r, l);
    return;
  }
  if (--r->active == 0)
    r->all_done = 1;
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  run_t *r = arg;
  if (status != 0) {
    r->failures++;
    if (--r->active == 0)
      r->all_done = 1;
    return;
  }
  r->acquired++;
  if (++r->holders > r->max_holders)
    r->max_holders = r->holders;
  r->holders--; /* released at once: the hold is ~0 ms */
  ASSERT_OK(lk_lock_release(l, on_released, r));
}

static void start_acquire(run_t *r, lk_lock_t *l) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.wait_ms = 60000;
  o.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(l, &o, on_acquired, r));
}

/* Runs n objects on one name until target acquisitions were made: object
 * i on clients[i % nclients], or on the fixture's client when nclients is
 * 0 (each client is a process as far as the server can tell: its own
 * connections and subscriptions). */
static void run_handoffs_on(fx_t *fx, run_t *r, int n, int target, lk_client_t **clients,
                            int nclients) {
  int i;
  memset(r, 0, sizeof(*r));
  r->n = n;
  r->target = target;
  for (i = 0; i < n; i++) {
    if (nclients > 0)
      ASSERT_OK(lk_lock_new(clients[i % nclients], "contended", &r->locks[i]));
    else
      r->locks[i] = fx_lock(fx, "contended");
  }
  for (i = 0; i < n; i++) {
    r->active++;
    start_acquire(r, r->locks[i]);
  }
  rt_run_until(&fx->loop, &r->all_done, 60000);
  ASSERT_EQ(r->failures, 0);
  ASSERT(r->acquired >= target);
  ASSERT_EQ(r->max_holders, 1);
  for (i = 0; i < n; i++)
    fx_close_lock(fx, r->locks[i]);
}

static void run_handoffs(fx_t *fx, run_t *r, int n, int target) {
  run_handoffs_on(fx, r, n, target, NULL, 0);
}

/* A long re-poll, so that what is counted is what releases cause. */
static void quiet_client(fx_t *fx, lk_client_opts_t *o) {
  fx_start_server(fx, NULL);
  fx_client_opts(fx, o);
  o->max_repoll_ms = 20000;
}

TEST(handoffs_cost_a_few_commands) {
  fx_t fx;
  lk_client_opts_t o;
  run_t r;
  long long before, used, subs;
  lk_lock_t *warm;
  quiet_client(&fx, &o);
  fx_start_client(&fx, &o);
  warm = fx_lock(&fx, "warm");
  ASSERT_EQ(sx_acquire(&fx, warm, 0, 1000), 0); /* loads the script */
  fx_close_lock(&fx, warm);
  rt_server_reset_stats(fx.srv);
  before = scripts(fx.srv);
  run_handoffs(&fx, &r, 50, 200);
  used = scripts(fx.srv) - before;
  subs = rt_server_cmd_calls(fx.srv, "subscribe") + rt_server_cmd_calls(fx.srv, "unsubscribe");
  fprintf(stderr, "200 handoffs among 50 waiters: %lld scripts, %lld (un)subscribes, %.2f per handoff\n",
          used, subs, (double)(used + subs) / r.acquired);
  /* Per handoff: the winner's acquire and its release (a releaser that
   * acquires again joins the queue without a try); once per waiter: its
   * first try and the try on the subscription's confirmation. Trying first
   * made ~3.5 per handoff; every waiter retrying on every release (the
   * rule before wake-one) ~50. */
  ASSERT(used + subs <= 3LL * r.acquired + 50);
  fx_finish(&fx);
}

/* Twelve clients (twelve processes to the server), one waiter each, every
 * holder re-acquiring at once after its release: every release wakes a
 * waiter in each of the others. Without thinning each of them tried on
 * each release (~8 scripts per acquisition here); thinned, about two tries go
 * out per release, and a client that just released waits as one of the
 * others instead of trying. */
#define PROCS 12
TEST(processes_thin_their_tries) {
  fx_t fx;
  lk_client_opts_t o;
  run_t r;
  lk_client_t *clients[PROCS];
  long long before, used;
  int i;
  quiet_client(&fx, &o);
  fx_start_client(&fx, &o);
  clients[0] = fx.c;
  for (i = 1; i < PROCS; i++)
    clients[i] = fx_direct_client(&fx);
  rt_server_reset_stats(fx.srv);
  before = scripts(fx.srv);
  run_handoffs_on(&fx, &r, PROCS, 600, clients, PROCS);
  used = scripts(fx.srv) - before;
  fprintf(stderr, "%d acquisitions among %d clients: %lld scripts, %.2f per acquisition\n",
          r.acquired, PROCS, used, (double)used / r.acquired);
  /* The release, the winner's try and about one lost try per release; once
   * per client its first tries before it learned the name is contended. */
  ASSERT(used <= 6LL * r.acquired + 4LL * PROCS);
  for (i = 1; i < PROCS; i++)
    fx_close_direct_client(&fx, clients[i]);
  fx_finish(&fx);
}

/* Only waiters queue a new acquire: a watcher of the name in the same
 * client (lk_inspect_watch listens on the lock's channel) is no queue, so
 * an acquire of the free name tries at once and wins with one script. */
static void on_watch(lk_inspect_watch_t *w, int status, const char *channel, void *arg) {
  (void)w, (void)status, (void)channel, (void)arg;
}

TEST(watcher_is_not_a_queue) {
  fx_t fx;
  lk_client_opts_t o;
  lk_inspect_watch_t *w = NULL;
  lk_lock_t *l;
  long long before, t0;
  quiet_client(&fx, &o);
  fx_start_client(&fx, &o);
  ASSERT_OK(lk_inspect_watch(fx.c, "watched", on_watch, NULL, &w));
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{watched}") == 1, 5000);
  l = fx_lock(&fx, "watched");
  before = scripts(fx.srv);
  t0 = rt_now_ms();
  ASSERT_EQ(sx_acquire(&fx, l, 60000, 30000), 0);
  /* Tried at once: one script, long before the 20 s re-poll a queued
   * waiter would sleep. */
  ASSERT_EQ(scripts(fx.srv) - before, 1);
  ASSERT(rt_now_ms() - t0 < 10000);
  fx_close_lock(&fx, l);
  lk_inspect_watch_stop(w);
  fx_finish(&fx);
}

TEST(eight_objects_subscribe_once) {
  fx_t fx;
  lk_client_opts_t o;
  run_t r;
  long long subs;
  quiet_client(&fx, &o);
  fx_start_client(&fx, &o);
  rt_server_reset_stats(fx.srv);
  run_handoffs(&fx, &r, 8, 800);
  subs = rt_server_cmd_calls(fx.srv, "subscribe");
  fprintf(stderr, "8 objects, %d acquisitions: %lld SUBSCRIBE (one is the heartbeat's)\n",
          r.acquired, subs);
  /* ≤ 0.01 per acquisition; the channel's own and the heartbeat's. */
  ASSERT(subs * 100 <= r.acquired);
  ASSERT(subs <= 2);
  fx_finish(&fx);
}

/* ---- linger ---- */

/* n waits that time out on a name another client holds. */
static void busy_waits(fx_t *fx, lk_lock_t *l, int n) {
  int i;
  for (i = 0; i < n; i++)
    ASSERT_EQ(sx_acquire(fx, l, 20, 10000), LK_ETIMEDOUT);
}

#define CHAN "redisson_lock__channel:{busy}"

/* "busy" held by another client, and our lock on it, for the linger tests:
 * a quiet client with pubsub_linger_ms linger_ms and, unless 0,
 * heartbeat_ms heartbeat_ms. */
typedef struct {
  lk_client_t *holder_c;
  lk_lock_t *holder, *l;
} busy_t;

static void busy_start(fx_t *fx, busy_t *b, int64_t linger_ms, int64_t heartbeat_ms) {
  lk_client_opts_t o;
  quiet_client(fx, &o);
  o.pubsub_linger_ms = linger_ms;
  if (heartbeat_ms != 0)
    o.heartbeat_ms = heartbeat_ms;
  fx_start_client(fx, &o);
  b->holder_c = fx_direct_client(fx);
  ASSERT_OK(lk_lock_new(b->holder_c, "busy", &b->holder));
  ASSERT_EQ(sx_acquire(fx, b->holder, 0, 60000), 0);
  b->l = fx_lock(fx, "busy");
  rt_server_reset_stats(fx->srv);
}

static void busy_finish(fx_t *fx, busy_t *b) {
  fx_close_lock(fx, b->l);
  fx_close_lock(fx, b->holder);
  fx_close_direct_client(fx, b->holder_c);
  fx_finish(fx);
}

TEST(busy_name_subscribed_once_then_unsubscribed) {
  fx_t fx;
  busy_t b;
  busy_start(&fx, &b, 300, 50);
  busy_waits(&fx, b.l, 20);
  /* The channel and the heartbeat's, once each, for 20 waits. */
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "subscribe"), 2);
  ASSERT_EQ(rt_server_numsub(fx.srv, CHAN), 1);
  /* The linger ends on a heartbeat tick: one UNSUBSCRIBE. */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, CHAN) == 0, 5000);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "unsubscribe"), 1);
  busy_finish(&fx, &b);
}

TEST(linger_zero_unsubscribes_each_time) {
  fx_t fx;
  busy_t b;
  busy_start(&fx, &b, 0, 0);
  const int64_t mark = rt_stall_mark();
  busy_waits(&fx, b.l, 5);
  /* Each wait subscribes anew: 5 + the heartbeat's. A wait whose try came
   * back after its 20 ms budget (a stall longer than that) ends
   * LK_ETIMEDOUT before it subscribes; then fewer, and at least one. */
  const long long subs = rt_server_cmd_calls(fx.srv, "subscribe");
  EXPECT_HOLD(subs == 6, mark, 20);
  ASSERT_GE(subs, 2);
  ASSERT_LE(subs, 6);
  /* ... and every one of them ends with its wait: nothing lingers. */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, CHAN) == 0, 5000);
  ASSERT_EQ(rt_server_cmd_calls(fx.srv, "unsubscribe"), subs - 1);
  busy_finish(&fx, &b);
}

TEST(linger_cap_unsubscribes_the_oldest) {
  fx_t fx;
  lk_client_opts_t o;
  lk_client_t *holder_c;
  lk_lock_t *holders[3], *ls[3];
  char name[16], chan[64];
  int i;
  quiet_client(&fx, &o);
  o.pubsub_linger_ms = 600000; /* only the cap ends a linger here */
  o.pubsub_linger_max = 2;
  fx_start_client(&fx, &o);
  holder_c = fx_direct_client(&fx);
  for (i = 0; i < 3; i++) {
    snprintf(name, sizeof(name), "busy%d", i);
    ASSERT_OK(lk_lock_new(holder_c, name, &holders[i]));
    ASSERT_EQ(sx_acquire(&fx, holders[i], 0, 60000), 0);
    ls[i] = fx_lock(&fx, name);
    busy_waits(&fx, ls[i], 1);
  }
  /* Three channels left lingering, two may: the first went. */
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{busy0}") == 0, 5000);
  for (i = 1; i < 3; i++) {
    snprintf(chan, sizeof(chan), "redisson_lock__channel:{busy%d}", i);
    ASSERT_EQ(rt_server_numsub(fx.srv, chan), 1);
  }
  for (i = 0; i < 3; i++) {
    fx_close_lock(&fx, ls[i]);
    fx_close_lock(&fx, holders[i]);
  }
  fx_close_direct_client(&fx, holder_c);
  fx_finish(&fx);
}

/* ---- the safety net: a woken waiter that leaves passes the wake on ---- */

static void note_done(lk_lock_t *l, int status, void *arg) {
  sx_t *s = arg;
  (void)l;
  s->calls++;
  s->done = 1;
  s->status = status;
}

static uint64_t sent(lk_client_t *c) {
  lk_client_stats_t st;
  lk_client_get_stats(c, &st);
  return st.commands_sent;
}

/* A wake taken by `first` (waiting longest), whose try is still out when it
 * is canceled; the lock then goes free without a message of its own. Only
 * the passed wake can bring `second` in before its 20 s re-poll. */
TEST(canceled_woken_waiter_passes_the_wake) {
  fx_t fx;
  lk_client_opts_t o;
  lk_lock_t *holder, *first, *second;
  lk_lock_opts_t ao;
  sx_t a, b;
  uint64_t before;
  int64_t end;
  quiet_client(&fx, &o);
  o.heartbeat_ms = 600000; /* no heartbeat PUBLISH among the commands counted */
  fx_start_client(&fx, &o);
  holder = fx_lock(&fx, "handed");
  first = fx_lock(&fx, "handed");
  second = fx_lock(&fx, "handed");
  ASSERT_EQ(sx_acquire(&fx, holder, 0, 60000), 0);
  lk_lock_opts_init(&ao);
  ao.wait_ms = 60000;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  ASSERT_OK(lk_lock_acquire(first, &ao, note_done, &a));
  ASSERT_OK(lk_lock_acquire(second, &ao, note_done, &b));
  fx_wait_subscribers(&fx, "redisson_lock__channel:{handed}", 1);
  fx_spin(&fx, 50); /* both saw the confirmation and tried once */
  /* A release message while the lock is still held: `first` takes it and
   * tries (that try will find it busy). */
  before = sent(fx.c);
  ASSERT_EQ(rt_cmd_int(fx.srv, "PUBLISH redisson_lock__channel:{handed} 0"), 1);
  end = rt_now_ms() + rt_scaled_ms(5000);
  while (sent(fx.c) == before) {
    ASSERT(rt_now_ms() < end);
    uv_run(&fx.loop, UV_RUN_NOWAIT);
  }
  ASSERT_EQ(sent(fx.c), before + 1); /* one waiter woken, not both */
  ASSERT_OK(lk_lock_cancel(first));
  /* The lock goes free silently (as an expiry would). */
  ASSERT_EQ(rt_cmd_int(fx.srv, "DEL handed"), 1);
  rt_run_until(&fx.loop, &a.done, 5000);
  ASSERT_EQ(a.status, LK_ECANCELED);
  rt_run_until(&fx.loop, &b.done, 5000);
  ASSERT_EQ(b.status, 0);
  ASSERT_EQ(b.calls, 1);
  fx_finish_locks(&fx, (lk_lock_t *[]){first, second, holder, NULL});
}
