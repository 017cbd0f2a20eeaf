/* Double barrier over several processes (label barrier): five member
 * processes entering at staggered times are released together (the spread
 * of release times is printed; no member is released before the last one
 * entered), and a member killed (kill -9) between enter and leave is
 * dropped after its lease, so the others' leave completes and names it.
 * Times are uv_hrtime(), the machine's one monotonic clock, so they compare
 * across processes. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "barrier_fixture.h"
#include "workers.h"

#define N 5
/* The server's clock in ms, as the scripts read it. */
#define SERVER_MS                                                              \
  "local t = redis.call('time') return t[1] * 1000 + math.floor(t[2] / 1000)"

/* What each worker reports, in memory shared with the test. */
typedef struct slot_s {
  volatile uint64_t enter_ns, entered_ns, leave_ns, left_ns;
  volatile int enter_status, leave_status, entered, left;
  volatile int64_t round;
} slot_t;

typedef struct cfg_s {
  int port;
  int64_t lease_ms;
  const char *name;
  slot_t *slots;
} cfg_t;

static slot_t *shared_slots(int n) {
  void *p = mmap(NULL, sizeof(slot_t) * (size_t)n, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  memset(p, 0, sizeof(slot_t) * (size_t)n);
  return p;
}

/* ---- a member process ---- */

typedef struct member_s {
  uv_loop_t loop;
  lk_client_t *c;
  lk_barrier_t *b;
  uv_timer_t start;
  const cfg_t *cfg;
  slot_t *slot;
  int idx, hold_forever;
} member_t;

static void on_closed(lk_barrier_t *b) {
  member_t *m = lk_barrier_get_data(b);
  lk_client_close(m->c, NULL);
}

static void finish(member_t *m) {
  uv_close((uv_handle_t *)&m->start, NULL);
  lk_barrier_close(m->b, on_closed);
}

static void on_left(lk_barrier_t *b, int status, void *arg) {
  member_t *m = arg;
  (void)b;
  m->slot->left_ns = uv_hrtime();
  m->slot->leave_status = status;
  m->slot->left = 1;
  finish(m);
}

static void on_leave_timer(uv_timer_t *t) {
  member_t *m = t->data;
  lk_barrier_opts_t o;
  lk_barrier_opts_init(&o);
  o.wait_ms = 20000;
  m->slot->leave_ns = uv_hrtime();
  if (lk_barrier_leave(m->b, &o, on_left, m) != 0)
    rt_worker_die(m->idx, "leave refused");
}

static void on_entered(lk_barrier_t *b, int status, void *arg) {
  member_t *m = arg;
  m->slot->entered_ns = uv_hrtime();
  m->slot->enter_status = status;
  m->slot->round = lk_barrier_round(b);
  m->slot->entered = 1;
  if (status != 0) {
    finish(m);
    return;
  }
  if (m->hold_forever)
    return; /* the lease is renewed until the test kills this process */
  /* Work a little (a different time each), then leave. */
  uv_timer_start(&m->start, on_leave_timer, (uint64_t)(20 * m->idx), 0);
}

static void on_start_timer(uv_timer_t *t) {
  member_t *m = t->data;
  lk_barrier_opts_t o;
  char id[16];
  snprintf(id, sizeof(id), "w%d", m->idx);
  lk_barrier_opts_init(&o);
  o.wait_ms = 20000;
  o.lease_ms = m->cfg->lease_ms;
  o.member = id;
  m->slot->enter_ns = uv_hrtime();
  if (lk_barrier_enter(m->b, &o, on_entered, m) != 0)
    rt_worker_die(m->idx, "enter refused");
}

static void run_member(int idx, const cfg_t *cfg, uint64_t delay_ms, int hold_forever) {
  member_t m;
  lk_client_opts_t co;
  memset(&m, 0, sizeof(m));
  m.cfg = cfg;
  m.idx = idx;
  m.slot = &cfg->slots[idx];
  m.hold_forever = hold_forever;
  if (uv_loop_init(&m.loop) != 0)
    rt_worker_die(idx, "uv_loop_init");
  lk_client_opts_init(&co);
  co.port = cfg->port;
  if (lk_client_new(&m.loop, &co, &m.c) != 0 || lk_barrier_new(m.c, cfg->name, N, &m.b) != 0)
    rt_worker_die(idx, "client or barrier");
  lk_barrier_set_data(m.b, &m);
  uv_timer_init(&m.loop, &m.start);
  m.start.data = &m;
  uv_timer_start(&m.start, on_start_timer, delay_ms, 0);
  uv_run(&m.loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&m.loop) != 0)
    rt_worker_die(idx, "loop not closed");
}

static cfg_t *g_cfg;

/* Staggered: member i enters 40 ms after member i - 1. */
static void spread_worker(int idx, void *arg) {
  (void)arg;
  run_member(idx, g_cfg, (uint64_t)(40 * idx), 0);
}

TEST(release_spread) {
  rt_server_t *srv = rt_server_start(NULL);
  rt_worker_t w[N];
  cfg_t cfg = {rt_server_port(srv), 3000, "spread", shared_slots(N)};
  g_cfg = &cfg;
  memset(w, 0, sizeof(w));
  for (int i = 0; i < N; i++)
    ASSERT_OK(rt_worker_start(&w[i], i, spread_worker, NULL));
  ASSERT_EQ(rt_workers_wait(w, N, rt_scaled_ms(30000)), 0);
  uint64_t last_enter = 0, first_in = UINT64_MAX, last_in = 0;
  uint64_t last_leave = 0, first_out = UINT64_MAX, last_out = 0;
  for (int i = 0; i < N; i++) {
    slot_t *s = &cfg.slots[i];
    ASSERT_EQ(rt_worker_exit_code(&w[i]), 0);
    ASSERT_EQ(s->entered, 1);
    ASSERT_OK(s->enter_status);
    ASSERT_EQ(s->round, 1);
    ASSERT_EQ(s->left, 1);
    ASSERT_OK(s->leave_status);
    last_enter = s->enter_ns > last_enter ? s->enter_ns : last_enter;
    first_in = s->entered_ns < first_in ? s->entered_ns : first_in;
    last_in = s->entered_ns > last_in ? s->entered_ns : last_in;
    last_leave = s->leave_ns > last_leave ? s->leave_ns : last_leave;
    first_out = s->left_ns < first_out ? s->left_ns : first_out;
    last_out = s->left_ns > last_out ? s->left_ns : last_out;
  }
  /* Safety: nobody is released before the last member entered, nobody's
   * leave completes before the last member left. */
  ASSERT_GE(first_in, last_enter);
  ASSERT_GE(first_out, last_leave);
  double spread = (double)(last_in - first_in) / 1e6;
  double out_spread = (double)(last_out - first_out) / 1e6;
  printf("release spread (first to last enter callback, %d processes): %.2f ms; "
         "last enter call to last release: %.2f ms; leave spread: %.2f ms\n",
         N, spread, (double)(last_in - last_enter) / 1e6, out_spread);
  /* Liveness: the bounds grow by the machine stalls since the last member
   * entered (forked members are tracked children: their run-queue stalls
   * count). */
  ASSERT_LT(spread, (double)rt_stall_bound_since_ns((uint64_t)last_enter, 1000));
  ASSERT_LT(out_spread, (double)rt_stall_bound_since_ns((uint64_t)last_enter, 1000));
  ASSERT_EQ(rt_cmd_int(srv, "ZCARD " BR_MEMBERS("spread")), 0);
  munmap(cfg.slots, sizeof(slot_t) * N);
  rt_server_stop(srv);
}

/* The victim enters and then keeps its lease alive until it is killed. */
static void victim_worker(int idx, void *arg) {
  (void)arg;
  run_member(idx, g_cfg, 0, 1);
}

/* N - 1 members in the test process, one in a process that is killed
 * (kill -9) after entering: the others' leave completes once its lease
 * has run out, and names it. */
TEST(member_killed_between_enter_and_leave) {
  fx_t fx;
  rt_worker_t w;
  br_op_t e[N - 1], l[N - 1];
  lk_barrier_t *b[N - 1];
  const int64_t lease = 1000;
  char id[8];
  fx_start(&fx, NULL);
  cfg_t cfg = {rt_server_port(fx.srv), lease, "crash", shared_slots(N)};
  g_cfg = &cfg;
  memset(&w, 0, sizeof(w));
  ASSERT_OK(rt_worker_start(&w, N - 1, victim_worker, NULL)); /* member "w4" */
  for (int i = 0; i < N - 1; i++) {
    b[i] = br_new(fx.c, "crash", N);
    snprintf(id, sizeof(id), "m%d", i);
    br_enter(b[i], 20000, lease, id, &e[i]);
  }
  for (int i = 0; i < N - 1; i++) {
    rt_run_until(&fx.loop, &e[i].done, 20000);
    ASSERT_OK(e[i].status);
  }
  FX_EVENTUALLY(&fx, cfg.slots[N - 1].entered, 10000);
  ASSERT_OK(cfg.slots[N - 1].enter_status);
  /* Past a few renewals, so the victim's lease is its renewed one. */
  fx_spin(&fx, lease);
  ASSERT_GT(rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("crash")), N - 1);
  rt_worker_kill(&w);
  uint64_t t_kill = uv_hrtime();
  /* Its lease deadline (server ms): nothing renews it any more. */
  char *dl = rt_cmd_str(fx.srv, "ZSCORE " BR_MEMBERS("crash") " w4");
  ASSERT_NOT_NULL(dl);
  long long deadline = atoll(dl);
  free(dl);
  for (int i = 0; i < N - 1; i++)
    br_leave(b[i], 20000, &l[i]);
  for (int i = 0; i < N - 1; i++) {
    rt_run_until(&fx.loop, &l[i].done, 20000);
    /* Safety: not before the victim's lease ran out on the server's clock
     * (read at once after the first callback: an early one would show). */
    if (i == 0)
      ASSERT_GE(rt_cmd_int(fx.srv, "EVAL %s 0", SERVER_MS), deadline);
    ASSERT_OK(l[i].status);
    ASSERT_EQ(l[i].ndropped, 1);
    ASSERT_STREQ(l[i].dropped, "w4");
  }
  int64_t after_ms = (int64_t)((l[0].t_ns - t_kill) / 1000000u);
  printf("leave completed %lld ms after kill -9 of a member (lease %lld ms, "
         "renewed every %lld ms)\n",
         (long long)after_ms, (long long)lease, (long long)lease / 3);
  /* Liveness: within its lease + a re-poll. */
  ASSERT_LT(after_ms, rt_stall_bound_since_ns(t_kill, lease + 1000 + 500));
  ASSERT_EQ(rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("crash")), 0);
  for (int i = 0; i < N - 1; i++)
    br_close(&fx.loop, b[i]);
  munmap(cfg.slots, sizeof(slot_t) * N);
  fx_finish(&fx);
}

/* A member killed before the round is released no longer counts: once its
 * lease has run out it is dropped, N live members release the round, and
 * their enter names the dropped one. */
TEST(member_killed_before_release) {
  fx_t fx;
  rt_worker_t w;
  br_op_t e[N];
  lk_barrier_t *b[N];
  const int64_t lease = 600;
  char id[8];
  fx_start(&fx, NULL);
  cfg_t cfg = {rt_server_port(fx.srv), lease, "early", shared_slots(N)};
  g_cfg = &cfg;
  memset(&w, 0, sizeof(w));
  ASSERT_OK(rt_worker_start(&w, N - 1, victim_worker, NULL)); /* member "w4" */
  BR_WAIT_MEMBERS(&fx, "early", 1);
  rt_worker_kill(&w);
  for (int i = 0; i < N; i++)
    b[i] = br_new(fx.c, "early", N);
  /* The victim and N - 2 live members: one short of N. */
  for (int i = 0; i < N - 2; i++) {
    snprintf(id, sizeof(id), "m%d", i);
    br_enter(b[i], 20000, lease, id, &e[i]);
  }
  BR_WAIT_MEMBERS(&fx, "early", N - 1);
  /* Dropped once its lease has run out (a waiter's re-poll drops it). */
  FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "ZCARD " BR_MEMBERS("early")) == N - 2,
                lease + 2000);
  /* One more live member: still one short, the dead one no longer counts. */
  br_enter(b[N - 2], 20000, lease, "m3", &e[N - 2]);
  BR_WAIT_MEMBERS(&fx, "early", N - 1);
  fx_spin(&fx, 50);
  for (int i = 0; i < N - 1; i++)
    ASSERT_EQ(e[i].done, 0);
  br_enter(b[N - 1], 20000, lease, "m4", &e[N - 1]);
  for (int i = 0; i < N; i++) {
    rt_run_until(&fx.loop, &e[i].done, 10000);
    ASSERT_OK(e[i].status);
    ASSERT_EQ(e[i].ndropped, 1);
    ASSERT_STREQ(e[i].dropped, "w4");
  }
  for (int i = 0; i < N; i++)
    br_close(&fx.loop, b[i]);
  BR_WAIT_MEMBERS(&fx, "early", 0);
  munmap(cfg.slots, sizeof(slot_t) * N);
  fx_finish(&fx);
}
