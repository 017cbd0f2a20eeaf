/* The case guarded writes exist for (docs/guarded.md): a holder process
 * is paused (SIGSTOP) past its lease, another process takes the lock and
 * writes, and the first one's guarded write, sent when it wakes, is
 * refused: the data stays the second holder's. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "lk_fixture.h"
#include "workers.h"

#define PAUSE_LEASE_MS 1000

typedef struct pause_s {
  int port;
  int ready[2]; /* worker -> test: "I hold the lock" */
  int go[2];    /* test -> worker: "write now" */
  int fenced;
} pause_t;

typedef struct wsx_s {
  int done, status;
} wsx_t;

static void w_cb(lk_lock_t *l, int status, void *arg) {
  wsx_t *s = arg;
  (void)l;
  s->done = 1;
  s->status = status;
}

static void w_run(int index, uv_loop_t *loop, wsx_t *s) {
  int64_t end = rt_now_ms() + rt_scaled_ms(20000);
  while (!s->done) {
    if (rt_now_ms() > end)
      rt_worker_die(index, "no callback in time");
    uv_run(loop, UV_RUN_ONCE);
  }
}

/* The holder: acquires with a watchdog-renewed lease of PAUSE_LEASE_MS,
 * says so, keeps its loop running (renewing) until told to write, then
 * tries its guarded INCRBY. Exit 0 when it was refused with LK_EGUARD. */
static void holder(int index, void *arg) {
  pause_t *p = arg;
  uv_loop_t loop;
  lk_client_t *c;
  lk_client_opts_t o;
  lk_lock_t *l;
  lk_lock_opts_t lo;
  wsx_t s = {0, 0};
  char b = 0;
  close(p->ready[0]);
  close(p->go[1]);
  if (uv_loop_init(&loop) != 0)
    rt_worker_die(index, "loop");
  lk_client_opts_init(&o);
  o.port = p->port;
  o.default_lease_ms = PAUSE_LEASE_MS;
  if (lk_client_new(&loop, &o, &c) != 0 || lk_lock_new(c, "g-pause", &l) != 0)
    rt_worker_die(index, "client");
  lk_lock_opts_init(&lo);
  lo.fenced = p->fenced;
  if (lk_lock_acquire(l, &lo, w_cb, &s) != 0)
    rt_worker_die(index, "acquire start");
  w_run(index, &loop, &s);
  if (s.status != 0)
    rt_worker_die(index, "acquire: %s", lk_err_name(s.status));
  if (write(p->ready[1], "r", 1) != 1)
    rt_worker_die(index, "ready pipe");
  /* Renewing while it runs; the test stops it somewhere in here. */
  for (;;) {
    struct pollfd pf = {p->go[0], POLLIN, 0};
    uv_run(&loop, UV_RUN_NOWAIT);
    if (poll(&pf, 1, 5) == 1)
      break;
  }
  if (read(p->go[0], &b, 1) != 1)
    rt_worker_die(index, "go pipe");
  const char *argv[] = {"INCRBY", "{g-pause}:balance", "1"};
  lk_guarded_op_t op;
  memset(&op, 0, sizeof(op));
  op.argc = 3;
  op.argv = argv;
  s.done = 0;
  if (lk_lock_guarded(l, &op, w_cb, &s) != 0)
    rt_worker_die(index, "guarded start");
  w_run(index, &loop, &s);
  if (s.status != LK_EGUARD)
    rt_worker_die(index, "the paused holder's write got %s, not LK_EGUARD",
                  lk_err_name(s.status));
  /* The worker's own teardown: close everything, as any test does. */
  int closed = 0;
  lk_lock_set_data(l, &closed);
  lk_lock_close(l, fx_lock_closed_cb);
  rt_run_until(&loop, &closed, 10000);
  int cdone = 0;
  lk_client_set_data(c, &cdone);
  lk_client_close(c, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
}

static void run_pause_case(int fenced) {
  fx_t fx;
  pause_t p;
  rt_worker_t w;
  char b;
  fx_start(&fx, NULL);
  memset(&p, 0, sizeof(p));
  p.port = rt_server_port(fx.srv);
  p.fenced = fenced;
  ASSERT_OK(pipe(p.ready));
  ASSERT_OK(pipe(p.go));
  ASSERT_OK(rt_worker_start(&w, 0, holder, &p));
  close(p.ready[1]);
  close(p.go[0]);
  struct pollfd pf = {p.ready[0], POLLIN, 0};
  ASSERT_EQ(poll(&pf, 1, (int)rt_scaled_ms(20000)), 1);
  ASSERT_EQ(read(p.ready[0], &b, 1), 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS g-pause"), 1);
  rt_worker_stop(&w);
  /* Paused: no renewal, so the lease runs out on the server. */
  ASSERT_EQ(fx_wait_key_gone(&fx, "g-pause", rt_scaled_ms(10000) + PAUSE_LEASE_MS), 1);
  lk_lock_t *l = fx_lock(&fx, "g-pause");
  lk_lock_opts_t lo;
  sx_t s;
  memset(&s, 0, sizeof(s));
  lk_lock_opts_init(&lo);
  lo.fenced = fenced;
  lo.lease_ms = 30000;
  ASSERT_OK(lk_lock_acquire(l, &lo, sx_cb, &s));
  rt_run_until(&fx.loop, &s.done, 15000);
  ASSERT_OK(s.status);
  const char *set[] = {"SET", "{g-pause}:balance", "100"};
  lk_guarded_op_t op = {.argc = 3, .argv = set};
  ASSERT_OK(sx_guarded(&fx, l, &op, NULL));
  /* The paused holder wakes and writes at once. */
  ASSERT_EQ(write(p.go[1], "g", 1), 1);
  rt_worker_cont(&w);
  ASSERT_EQ(rt_workers_wait(&w, 1, rt_scaled_ms(30000)), 0);
  ASSERT_EQ(rt_worker_exit_code(&w), 0);
  char *v = rt_cmd_str(fx.srv, "GET {g-pause}:balance");
  ASSERT_STREQ(v, "100");
  free(v);
  close(p.ready[0]);
  close(p.go[1]);
  ASSERT_OK(sx_run(&fx, lk_lock_release, l, NULL));
  fx_finish_locks(&fx, (lk_lock_t *[]){l, NULL});
}

TEST(paused_holder_write_refused_after_another_took_the_lock) { run_pause_case(0); }

TEST(paused_fenced_holder_write_refused_after_a_newer_token) { run_pause_case(1); }
