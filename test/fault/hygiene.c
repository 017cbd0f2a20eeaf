/* L6 / T39 hygiene under faults: after a session that met resets, a killed
 * pub/sub connection, a lost reply and a server restart, closing everything
 * leaves no file descriptor, no allocation, no key and no subscription
 * behind, and uv_loop_close() returns 0. */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "core/scripts.h"
#include "fault_util.h"

static atomic_long live_allocs;

static void *count_malloc(size_t n) {
  void *p = malloc(n);
  if (p != NULL)
    atomic_fetch_add(&live_allocs, 1);
  return p;
}

static void *count_calloc(size_t n, size_t sz) {
  void *p = calloc(n, sz);
  if (p != NULL)
    atomic_fetch_add(&live_allocs, 1);
  return p;
}

static void *count_realloc(void *old, size_t n) {
  void *p = realloc(old, n);
  if (p != NULL && old == NULL)
    atomic_fetch_add(&live_allocs, 1);
  return p;
}

static void count_free(void *p) {
  if (p != NULL)
    atomic_fetch_sub(&live_allocs, 1);
  free(p);
}

TEST(t39_faulted_session_leaves_nothing_behind) {
  ASSERT_OK(lk_replace_allocator(count_malloc, count_realloc, count_calloc, count_free));
  rt_server_opts_t so;
  rt_server_opts_init(&so);
  so.appendonly = 1;
  rt_server_t *srv = rt_server_start(&so);
  ASSERT_NOT_NULL(srv);
  rt_proxy_t *p = rt_proxy_start(rt_server_port(srv));
  ASSERT_NOT_NULL(p);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS warm"), 0); /* the side channel is open */

  int fds0 = fu_open_fds();
  ASSERT_GT(fds0, 0);
  uv_loop_t loop;
  ASSERT_OK(uv_loop_init(&loop));
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  /* Scaled: b's hold must outlive the AOF restart below, which blocks this
   * loop, plus the reconnect and one renewal. */
  o.default_lease_ms = rt_scaled_ms(1500);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 100;
  o.reply_timeout_ms = 500;
  o.max_repoll_ms = 200;
  lk_client_t *c = fu_client(&loop, rt_proxy_port(p), &o);
  lk_lock_t *a = fu_lock(c, "t39");
  lk_lock_t *b = fu_lock(c, "t39");
  sx_t s, t;

  /* A hold, a waiter, and a reset of every connection. */
  ASSERT_OK(sx_acquire_in(&loop, a, 0, LK_LEASE_DEFAULT, &s));
  fu_start_acquire(b, 20000, LK_LEASE_DEFAULT, 1, &t);
  fu_spin(&loop, 100);
  rt_proxy_reset_all(p);
  fu_spin(&loop, 300);
  /* The pub/sub connection killed by the server while waiting. */
  ASSERT_GE(rt_server_kill_clients_of_type(srv, "pubsub"), 1);
  fu_spin(&loop, 200);
  /* A lost reply to the release. */
  char match[64];
  snprintf(match, sizeof match, "EVALSHA %s", lk__script_find("lock/release")->sha1);
  rt_proxy_on_reply(p, match, 1, RT_PROXY_DROP_CUT, NULL, 0);
  sx_t r;
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_lock_release(a, sx_cb, &r));
  rt_run_until(&loop, &r.done, 5000);
  ASSERT_OK(r.status);
  rt_run_until(&loop, &t.done, 5000);
  ASSERT_OK(t.status);
  /* A server restart (AOF) while b holds. */
  ASSERT_OK(rt_server_restart(srv));
  fu_spin(&loop, 500);
  ASSERT(lk_lock_is_held(b));
  /* Close with b still holding and a pending acquire on a. */
  fu_start_acquire(a, 20000, LK_LEASE_DEFAULT, 0, &s);
  fu_spin(&loop, 50);
  int ca = 0, cb = 0;
  lk_lock_set_data(a, &ca);
  lk_lock_set_data(b, &cb);
  ASSERT_OK(lk_lock_close(a, fx_lock_closed_cb));
  ASSERT_OK(lk_lock_close(b, fx_lock_closed_cb));
  rt_run_until(&loop, &ca, 5000);
  rt_run_until(&loop, &cb, 5000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  fu_close_client(&loop, c);
  rt_loop_close_clean(&loop);

  ASSERT_EQ(atomic_load(&live_allocs), 0);
  /* The proxy (a thread of this process) closes its legs of the client's
   * connections once it sees them close. */
  int64_t pend = rt_now_ms() + rt_scaled_ms(2000);
  while (rt_proxy_connections(p) != 0 && rt_now_ms() < pend)
    rt_sleep_ms(2);
  ASSERT_EQ(rt_proxy_connections(p), 0);
  ASSERT_EQ(fu_open_fds(), fds0);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS t39"), 0);
  int64_t end = rt_now_ms() + rt_scaled_ms(2000);
  while (rt_server_numsub(srv, "redisson_lock__channel:{t39}") != 0 && rt_now_ms() < end)
    rt_sleep_ms(5);
  ASSERT_EQ(rt_server_numsub(srv, "redisson_lock__channel:{t39}"), 0);
  rt_proxy_stop(p);
  rt_server_stop(srv);
}

/* A write to a reset connection must not kill the process: the first client
 * of a process ignores SIGPIPE when it was at its default, and leaves a
 * disposition the application chose alone. Each half runs in a fresh child
 * (the choice is made once per process). */
static void on_pipe(int sig) { (void)sig; }

static int sigpipe_child(int set_handler) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = set_handler ? on_pipe : SIG_DFL;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, NULL);
  uv_loop_t loop;
  lk_client_t *c = NULL;
  lk_client_opts_t o;
  uv_loop_init(&loop);
  lk_client_opts_init(&o);
  o.port = 1; /* never connects; only the set-up matters */
  if (lk_client_new(&loop, &o, &c) != 0)
    return 3;
  sigaction(SIGPIPE, NULL, &sa);
  int ok = set_handler ? sa.sa_handler == on_pipe : sa.sa_handler == SIG_IGN;
  /* And the point of it: a write to a closed pipe now fails with EPIPE. */
  int p[2];
  if (!set_handler && pipe(p) == 0) {
    close(p[0]);
    ok = ok && write(p[1], "x", 1) == -1 && errno == EPIPE;
    close(p[1]);
  }
  return ok ? 0 : 4;
}

TEST(sigpipe_ignored_unless_the_application_chose) {
  for (int set_handler = 0; set_handler <= 1; set_handler++) {
    fflush(NULL);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0)
      _exit(sigpipe_child(set_handler)); /* its client stays open: memory only */
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st))
      FAIL("child %d died of signal %d", set_handler, WTERMSIG(st));
    ASSERT_EQ(WEXITSTATUS(st), 0);
  }
}
