/* The countdown latch across processes, each with its own loop and client
 * made after the fork:
 *  - 50 awaiters in 4 processes are all released promptly by the final
 *    count_down (re-polling is out of reach, so by its message), and none
 *    before it;
 *  - 8 processes count down one latch concurrently: every count_down gets
 *    a distinct remaining count, exactly one opens the latch, and exactly
 *    one "opened" message is published.
 * Children report through pipes; they never ASSERT (the harness's exit
 * path belongs to the parent) but exit with a code saying what failed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "latch_open.h"
#include "redisson_emu.h"

#define CHANNEL(name) "redisson_countdownlatch__channel__{" name "}"

/* ---- child plumbing -------------------------------------------------------------------- */

typedef struct child_s {
  pid_t pid;
  int out; /* parent's read end of the child's report pipe */
  int go;  /* parent's write end of the child's start pipe */
} child_t;

typedef struct report_s {
  int32_t index;
  int32_t status;
  int64_t value; /* completion time (ns) or a count_down's result */
} report_t;

static int g_out = -1; /* in a child: where reports go */

__attribute__((noreturn)) static void child_exit(int code) { _exit(code); }

static void child_report(int32_t index, int32_t status, int64_t value) {
  report_t r = {index, status, value};
  const char *p = (const char *)&r;
  size_t left = sizeof(r);
  while (left > 0) {
    ssize_t n = write(g_out, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      child_exit(10);
    p += n;
    left -= (size_t)n;
  }
}

/* Blocks until the parent says go (one byte) or closes the pipe. */
static void child_wait_go(int go) {
  char b;
  ssize_t n;
  do
    n = read(go, &b, 1);
  while (n < 0 && errno == EINTR);
  if (n != 1)
    child_exit(11);
}

typedef void (*child_fn)(int index, int port, void *arg);

static child_t spawn(int index, int port, child_fn fn, void *arg) {
  int out[2], go[2];
  child_t c;
  ASSERT_OK(pipe(out));
  ASSERT_OK(pipe(go));
  fflush(NULL);
  c.pid = fork();
  ASSERT(c.pid >= 0);
  if (c.pid == 0) {
    close(out[0]);
    close(go[1]);
    g_out = out[1];
    child_wait_go(go[0]);
    fn(index, port, arg);
    child_exit(0);
  }
  rt_child_track(c.pid);
  close(out[1]);
  close(go[0]);
  c.out = out[0];
  c.go = go[1];
  ASSERT_OK(fcntl(c.out, F_SETFL, fcntl(c.out, F_GETFL) | O_NONBLOCK));
  return c;
}

static void child_go(child_t *c) {
  char b = 'g';
  ASSERT_EQ(write(c->go, &b, 1), 1);
  close(c->go);
}

/* Reads whatever reports are ready from every child into reps (growing
 * *n); returns how many were read. */
static size_t read_reports(child_t *kids, int nkids, report_t *reps, size_t *n, size_t cap) {
  size_t got = 0;
  for (int i = 0; i < nkids; i++) {
    for (;;) {
      report_t r;
      ssize_t k = read(kids[i].out, &r, sizeof(r));
      if (k < 0 && errno == EINTR)
        continue;
      if (k <= 0)
        break;
      /* A report is far smaller than PIPE_BUF: written and read whole. */
      ASSERT_EQ(k, (ssize_t)sizeof(r));
      ASSERT_LT(*n, cap);
      reps[(*n)++] = r;
      got++;
    }
  }
  return got;
}

/* Keeps the parent's loop running while reports arrive, until want of them
 * are in or timeout_ms (scaled) passes. */
static void collect(uv_loop_t *loop, child_t *kids, int nkids, report_t *reps, size_t *n,
                    size_t cap, size_t want, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (*n < want) {
    if (rt_now_ms() > end)
      FAIL("only %zu of %zu reports arrived", *n, want);
    read_reports(kids, nkids, reps, n, cap);
    if (loop != NULL)
      uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

static void reap(child_t *kids, int nkids) {
  for (int i = 0; i < nkids; i++) {
    int status = 0;
    int64_t end = rt_now_ms() + rt_scaled_ms(10000);
    for (;;) {
      pid_t p = waitpid(kids[i].pid, &status, WNOHANG);
      if (p == kids[i].pid)
        break;
      ASSERT(p == 0 || errno == EINTR);
      if (rt_now_ms() > end)
        FAIL("child %d did not exit", i);
      rt_sleep_ms(2);
    }
    rt_child_untrack(kids[i].pid);
    close(kids[i].out);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      FAIL("child %d ended badly (status 0x%x)", i, status);
  }
}

/* A child's own loop and client. */
typedef struct child_env_s {
  uv_loop_t loop;
  lk_client_t *c;
  int client_closed;
} child_env_t;

static void child_client_closed(lk_client_t *c) {
  child_env_t *e = lk_client_get_data(c);
  e->client_closed = 1;
}

static void child_env_start(child_env_t *e, int port, int64_t max_repoll_ms) {
  lk_client_opts_t o;
  memset(e, 0, sizeof(*e));
  if (uv_loop_init(&e->loop) != 0)
    child_exit(12);
  lk_client_opts_init(&o);
  o.port = port;
  o.max_repoll_ms = max_repoll_ms;
  if (lk_client_new(&e->loop, &o, &e->c) != 0)
    child_exit(13);
  lk_client_set_data(e->c, e);
}

static void child_env_finish(child_env_t *e) {
  if (lk_client_close(e->c, child_client_closed) != 0)
    child_exit(14);
  uv_run(&e->loop, UV_RUN_DEFAULT);
  if (!e->client_closed || uv_loop_close(&e->loop) != 0)
    child_exit(15);
}

static void child_latch_closed(lk_latch_t *l) {
  int *n = lk_latch_get_data(l);
  (*n)++;
}

/* ---- 50 awaiters in 4 processes ------------------------------------------------------------ */

#define AW_PROCS 4
#define AW_TOTAL 50
#define AW_NAME "fifty"

typedef struct awaiter_s {
  lk_latch_t *l;
  int index;
  int done;
} awaiter_t;

static int g_aw_left;

static void on_awaited(lk_latch_t *l, int status, void *arg) {
  awaiter_t *a = arg;
  (void)l;
  a->done++;
  child_report(a->index, status, (int64_t)uv_hrtime());
  g_aw_left--;
}

static void awaiter_child(int index, int port, void *arg) {
  child_env_t e;
  awaiter_t aw[AW_TOTAL];
  int n = AW_TOTAL / AW_PROCS + (index < AW_TOTAL % AW_PROCS ? 1 : 0);
  int first = index * (AW_TOTAL / AW_PROCS) + (index < AW_TOTAL % AW_PROCS ? index : AW_TOTAL % AW_PROCS);
  int closed = 0;
  (void)arg;
  /* Re-polling far beyond the bound the parent checks: only the "opened"
   * message can release the awaiters in time. */
  child_env_start(&e, port, 600000);
  g_aw_left = n;
  for (int i = 0; i < n; i++) {
    lk_latch_opts_t o;
    lk_latch_opts_init(&o);
    o.strict = i % 2; /* both modes; the parent's counter is strict */
    aw[i].index = first + i;
    aw[i].done = 0;
    if (lk_latch_new(e.c, AW_NAME, &o, &aw[i].l) != 0)
      child_exit(20);
    lk_latch_set_data(aw[i].l, &closed);
    if (lk_latch_await(aw[i].l, -1, on_awaited, &aw[i]) != 0)
      child_exit(21);
  }
  while (g_aw_left > 0)
    uv_run(&e.loop, UV_RUN_ONCE); /* the parent's timeout bounds this */
  for (int i = 0; i < n; i++) {
    if (aw[i].done != 1)
      child_exit(22);
    if (lk_latch_close(aw[i].l, child_latch_closed) != 0)
      child_exit(23);
  }
  while (closed < n)
    uv_run(&e.loop, UV_RUN_ONCE);
  child_env_finish(&e);
}

TEST(fifty_awaiters_in_four_processes) {
  fx_t fx;
  lk_latch_t *c;
  child_t kids[AW_PROCS];
  report_t reps[AW_TOTAL + 8];
  size_t n = 0;
  int64_t res;
  uint64_t t_final;
  int seen[AW_TOTAL];
  int64_t worst_ms = 0;
  fx_start(&fx, NULL);
  c = lx_new_counting(&fx, AW_NAME, 1, 3);
  for (int i = 0; i < AW_PROCS; i++)
    kids[i] = spawn(i, rt_server_port(fx.srv), awaiter_child, NULL);
  for (int i = 0; i < AW_PROCS; i++)
    child_go(&kids[i]);
  /* Every process has subscribed (each after an awaiter found it armed). */
  rt_wait_subscribers(&fx.loop, fx.srv, CHANNEL(AW_NAME), AW_PROCS);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 2);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 1);
  fx_spin(&fx, 100);
  read_reports(kids, AW_PROCS, reps, &n, AW_TOTAL + 8);
  ASSERT_EQ(n, 0); /* never opens early */
  t_final = uv_hrtime();
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, c, &res));
  ASSERT_EQ(res, 0);
  collect(&fx.loop, kids, AW_PROCS, reps, &n, AW_TOTAL + 8, AW_TOTAL, 5000);
  memset(seen, 0, sizeof(seen));
  for (size_t i = 0; i < n; i++) {
    int64_t ms;
    ASSERT_GE(reps[i].index, 0);
    ASSERT_LT(reps[i].index, AW_TOTAL);
    seen[reps[i].index]++;
    if (reps[i].status != 0)
      FAIL("awaiter %d ended with %s", reps[i].index, lk_err_name(reps[i].status));
    ASSERT_GE(reps[i].value, (int64_t)t_final); /* not before the final count_down */
    ms = (reps[i].value - (int64_t)t_final) / 1000000;
    if (ms > worst_ms)
      worst_ms = ms;
  }
  for (int i = 0; i < AW_TOTAL; i++)
    ASSERT_EQ(seen[i], 1);
  printf("# slowest of %d awaiters released %lld ms after the final count_down\n", AW_TOTAL,
         (long long)worst_ms);
  ASSERT_LT(worst_ms, rt_stall_bound_since_ns(t_final, 2000));
  reap(kids, AW_PROCS);
  lx_finish(&fx, (lk_latch_t *[]){c, NULL});
}

/* ---- 8 processes count down one latch ------------------------------------------------------ */

#define CD_PROCS 8
#define CD_EACH 50 /* the latch starts at CD_PROCS * CD_EACH */
#define CD_EXTRA 1 /* each process counts down once more than its share */
#define CD_NAME "eight"
#define CD_TOTAL (CD_PROCS * (CD_EACH + CD_EXTRA))

typedef struct counter_s {
  lk_latch_t *l;
  int index;
  int left;
} counter_t;

static void on_counted(lk_latch_t *l, int status, void *arg) {
  counter_t *k = arg;
  child_report(k->index, status, status == 0 ? lk_latch_result(l) : 0);
  if (--k->left > 0 && lk_latch_count_down(l, on_counted, k) != 0)
    child_exit(30);
}

static void counter_child(int index, int port, void *arg) {
  child_env_t e;
  counter_t k;
  lk_latch_opts_t o;
  int closed = 0;
  (void)arg;
  child_env_start(&e, port, 1000);
  lk_latch_opts_init(&o);
  /* Strict (every counter of a strict latch must be): the extra
   * count_downs after the opening find the marker and count nothing. */
  o.strict = 1;
  k.index = index;
  k.left = CD_EACH + CD_EXTRA;
  if (lk_latch_new(e.c, CD_NAME, &o, &k.l) != 0)
    child_exit(31);
  if (lk_latch_count_down(k.l, on_counted, &k) != 0)
    child_exit(32);
  while (k.left > 0)
    uv_run(&e.loop, UV_RUN_ONCE);
  lk_latch_set_data(k.l, &closed);
  if (lk_latch_close(k.l, child_latch_closed) != 0)
    child_exit(33);
  while (!closed)
    uv_run(&e.loop, UV_RUN_ONCE);
  child_env_finish(&e);
}

TEST(eight_processes_count_down_to_exactly_zero) {
  rt_server_t *srv = rt_server_start(NULL);
  child_t kids[CD_PROCS];
  static report_t reps[CD_TOTAL + 8];
  static int hits[CD_PROCS * CD_EACH];
  size_t n = 0;
  int already_open = 0, openers = 0;
  redisContext *sub;
  redisReply *m;
  char *v;
  ASSERT_NOT_NULL(srv);
  v = rt_cmd_str(srv, "SET %s %d", CD_NAME, CD_PROCS * CD_EACH);
  free(v);
  sub = rt_rlock_connect(rt_server_port(srv));
  m = redisCommand(sub, "SUBSCRIBE %s", CHANNEL(CD_NAME));
  ASSERT_NOT_NULL(m);
  freeReplyObject(m);
  for (int i = 0; i < CD_PROCS; i++)
    kids[i] = spawn(i, rt_server_port(srv), counter_child, NULL);
  for (int i = 0; i < CD_PROCS; i++)
    child_go(&kids[i]);
  collect(NULL, kids, CD_PROCS, reps, &n, CD_TOTAL + 8, CD_TOTAL, 20000);
  reap(kids, CD_PROCS);
  memset(hits, 0, sizeof(hits));
  for (size_t i = 0; i < n; i++) {
    int64_t r = reps[i].value;
    if (reps[i].status != 0)
      FAIL("process %d: count_down ended with %s", reps[i].index, lk_err_name(reps[i].status));
    if (r == -1) {
      already_open++;
      continue;
    }
    ASSERT_GE(r, 0);
    ASSERT_LT(r, CD_PROCS * CD_EACH);
    hits[r]++;
    openers += r == 0;
  }
  /* Each remaining count was reported exactly once: no count_down was lost
   * or applied twice, and they were atomic. */
  for (int i = 0; i < CD_PROCS * CD_EACH; i++)
    if (hits[i] != 1)
      FAIL("remaining count %d reported %d times", i, hits[i]);
  ASSERT_EQ(openers, 1);
  ASSERT_EQ(already_open, CD_PROCS * CD_EXTRA);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS %s", CD_NAME), 0);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS latchkey_latch_open:{%s}", CD_NAME), 1);
  /* Exactly one "opened" message. */
  m = rt_sub_next_message(sub, rt_scaled_ms(2000));
  ASSERT_NOT_NULL(m);
  ASSERT_STREQ(m->element[2]->str, "0");
  freeReplyObject(m);
  m = rt_sub_next_message(sub, 300);
  ASSERT_NULL(m);
  redisFree(sub);
  rt_server_stop(srv);
}
