/* Drives a latchkey loop (a uv_loop_t) from a libev loop. Header-only; link
 * libev (-lev; Debian ships no .pc file for it) and libuv. The pattern and its
 * limits (platforms, fork, when to call _kick) are in docs/embedding.md.
 *
 *   lk_adapter_libev_t *a;
 *   lk_adapter_libev_attach(EV_DEFAULT, &uvloop, &a);  ... ev_run(EV_DEFAULT, 0);
 *   lk_adapter_libev_detach(a);
 *
 * Single-threaded: the libev loop's thread is the uv loop's thread. */
#ifndef LATCHKEY_ADAPTERS_LIBEV_H
#define LATCHKEY_ADAPTERS_LIBEV_H

#include <stdlib.h>

#include <ev.h>
#include <uv.h>

#include "../errno.h"

typedef struct lk_adapter_libev_s {
  struct ev_loop *host;
  uv_loop_t *loop;
  ev_io io;       /* the loop's backend fd turned readable */
  ev_timer timer; /* the loop's next timer, or "again soon" (0) */
  int running;    /* inside uv_run: a detach now must not free */
  int detached;   /* detached from a latchkey callback: free after uv_run */
} lk_adapter_libev_t;

/* -1: nothing timed; 0: idle handles or pending work, run again on the
 * host's next iteration; a loop with nothing alive needs no wake-up. */
static inline void lk_adapter_libev__rearm(lk_adapter_libev_t *a) {
  int ms = uv_loop_alive(a->loop) ? uv_backend_timeout(a->loop) : -1;
  ev_timer_stop(a->host, &a->timer);
  if (ms >= 0) {
    ev_timer_set(&a->timer, ms / 1000.0, 0.);
    ev_timer_start(a->host, &a->timer);
  }
}

static inline void lk_adapter_libev__run(lk_adapter_libev_t *a) {
  a->running = 1;
  uv_run(a->loop, UV_RUN_NOWAIT);
  a->running = 0;
  if (a->detached) { /* a latchkey callback above detached us */
    free(a);
    return;
  }
  lk_adapter_libev__rearm(a); /* the timeout read before is stale now */
}

static inline void lk_adapter_libev__io_cb(struct ev_loop *host, ev_io *w, int revents) {
  (void)host;
  (void)revents;
  lk_adapter_libev__run((lk_adapter_libev_t *)w->data);
}

static inline void lk_adapter_libev__timer_cb(struct ev_loop *host, ev_timer *w, int revents) {
  (void)host;
  (void)revents;
  lk_adapter_libev__run((lk_adapter_libev_t *)w->data);
}

/* Call after using latchkey from host code (outside a latchkey callback):
 * uv registers new sockets and timers only inside uv_run; this schedules
 * one on the host's next iteration. */
static inline void lk_adapter_libev_kick(lk_adapter_libev_t *a) {
  ev_timer_stop(a->host, &a->timer);
  ev_timer_set(&a->timer, 0., 0.);
  ev_timer_start(a->host, &a->timer);
}

/* 0 and *out set, or LK_EINVAL (NULL argument, or a uv loop without a
 * backend fd: Windows), or LK_ENOMEM. Runs the uv loop once soon. */
static inline int lk_adapter_libev_attach(struct ev_loop *host, uv_loop_t *loop,
                                          lk_adapter_libev_t **out) {
  lk_adapter_libev_t *a;
  int fd;
  if (out != NULL)
    *out = NULL;
  if (host == NULL || loop == NULL || out == NULL)
    return LK_EINVAL;
  fd = uv_backend_fd(loop);
  if (fd < 0)
    return LK_EINVAL;
  a = (lk_adapter_libev_t *)calloc(1, sizeof(*a));
  if (a == NULL)
    return LK_ENOMEM;
  a->host = host;
  a->loop = loop;
  ev_io_init(&a->io, lk_adapter_libev__io_cb, fd, EV_READ);
  a->io.data = a;
  ev_timer_init(&a->timer, lk_adapter_libev__timer_cb, 0., 0.);
  a->timer.data = a;
  /* The highest priority: of the watchers pending in one iteration, the
   * uv loop's run first, so latchkey's replies are not served after every
   * host callback that became ready at the same time. */
  ev_set_priority(&a->io, EV_MAXPRI);
  ev_set_priority(&a->timer, EV_MAXPRI);
  ev_io_start(host, &a->io);
  lk_adapter_libev_kick(a);
  *out = a;
  return 0;
}

/* Stops both watchers and frees the adapter; the uv loop is left as it is.
 * NULL is ignored. Safe from inside a latchkey callback: the adapter is then
 * freed once its uv_run returns. */
static inline void lk_adapter_libev_detach(lk_adapter_libev_t *a) {
  if (a == NULL)
    return;
  ev_io_stop(a->host, &a->io);
  ev_timer_stop(a->host, &a->timer);
  if (a->running)
    a->detached = 1;
  else
    free(a);
}

#endif /* LATCHKEY_ADAPTERS_LIBEV_H */
