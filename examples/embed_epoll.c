/* A hand-written epoll loop driving latchkey (docs/embedding.md): the uv
 * loop's backend fd sits in the host's epoll set, the host's wait is capped
 * by uv_backend_timeout, and uv_run(UV_RUN_NOWAIT) runs whenever that fd is
 * readable or the timeout ran out. Takes a lock, holds it for a few host
 * ticks, releases it and exits.
 *
 *   build/examples/embed_epoll [port]     (a Redis on 127.0.0.1, default 6379) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "latchkey.h"

static int done;
static int status_seen;

static void on_released(lk_lock_t *l, int status, void *arg) {
  (void)l;
  (void)arg;
  printf("released: %s\n", status == 0 ? "ok" : lk_strerror(status));
  done = 1;
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)arg;
  status_seen = status;
  printf("acquired: %s\n", status == 0 ? "ok" : lk_strerror(status));
  if (status != 0 || lk_lock_release(l, on_released, NULL) != 0)
    done = 1;
}

static int lock_closed, client_closed;

static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  lock_closed = 1;
}

static void on_client_closed(lk_client_t *c) {
  (void)c;
  client_closed = 1;
}

/* The host's wait: uv's wish (-1 none, 0 again at once) capped by the host's
 * own 100 ms tick. uv_update_time first: uv measures from its last run. */
static int host_timeout(uv_loop_t *loop) {
  uv_update_time(loop);
  int uv_ms = uv_loop_alive(loop) ? uv_backend_timeout(loop) : -1;
  return (uv_ms < 0 || uv_ms > 100) ? 100 : uv_ms;
}

int main(int argc, char **argv) {
  uv_loop_t loop;
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  lk_lock_t *l = NULL;
  struct epoll_event ev = {0}, got[8];
  int ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0 || uv_loop_init(&loop) != 0)
    return 1;
  ev.events = EPOLLIN;
  ev.data.ptr = &loop; /* the host's other fds would carry their own */
  if (uv_backend_fd(&loop) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, uv_backend_fd(&loop), &ev) != 0) {
    fprintf(stderr, "no uv backend fd to watch\n");
    return 1;
  }
  lk_client_opts_init(&o);
  o.port = argc > 1 ? atoi(argv[1]) : 6379;
  if (lk_client_new(&loop, &o, &c) != 0 || lk_lock_new(c, "embed:epoll", &l) != 0)
    return 1;
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.wait_ms = 5000;
  if (lk_lock_acquire(l, &lo, on_acquired, NULL) != 0)
    return 1;
  /* Calls made from host code: uv registers their sockets inside uv_run,
   * so the first pass runs at once (timeout 0). */
  int timeout = 0;
  int stage = 0; /* 0: working, 1: closing the lock, 2: the client */
  for (int ticks = 0; !client_closed && ticks < 300; ticks++) {
    int n = epoll_wait(ep, got, 8, timeout);
    (void)n; /* readable or timed out: either way uv gets a pass */
    uv_run(&loop, UV_RUN_NOWAIT);
    /* Objects close before their client; both from host code here. */
    if (stage == 0 && (done || ticks >= 200)) {
      lk_lock_close(l, on_lock_closed);
      stage = 1;
    } else if (stage == 1 && lock_closed) {
      lk_client_close(c, on_client_closed);
      stage = 2;
    }
    timeout = stage > 0 ? 0 : host_timeout(&loop);
  }
  /* The host lets go of the fd; uv finishes its closing handles alone. */
  epoll_ctl(ep, EPOLL_CTL_DEL, uv_backend_fd(&loop), NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&loop);
  printf("uv_loop_close: %d\n", rc);
  return (done && status_seen == 0 && rc == 0) ? 0 : 1;
}
