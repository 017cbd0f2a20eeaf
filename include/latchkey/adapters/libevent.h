/* Drives a latchkey loop (a uv_loop_t) from a libevent 2 event_base.
 * Header-only; link libevent (pkg-config libevent) and libuv. The pattern and
 * its limits (platforms, fork, when to call _kick) are in docs/embedding.md.
 *
 *   lk_adapter_libevent_t *a;
 *   lk_adapter_libevent_attach(base, &uvloop, &a);  ... event_base_dispatch(base);
 *   lk_adapter_libevent_detach(a);  (before event_base_free)
 *
 * Single-threaded: the event_base's thread is the uv loop's thread. */
#ifndef LATCHKEY_ADAPTERS_LIBEVENT_H
#define LATCHKEY_ADAPTERS_LIBEVENT_H

#include <stdlib.h>

#include <event2/event.h>
#include <uv.h>

#include "../errno.h"

typedef struct lk_adapter_libevent_s {
  struct event_base *base;
  uv_loop_t *loop;
  struct event *io;    /* the loop's backend fd turned readable */
  struct event *timer; /* the loop's next timer, or "again soon" (0) */
  int running;         /* inside uv_run: a detach now must not free */
  int detached;        /* detached from a latchkey callback: free after uv_run */
} lk_adapter_libevent_t;

/* Sets the host timer from what the uv loop wants next. -1: nothing timed
 * (the backend fd will wake us); 0: idle handles or pending work, so run
 * again on the host's next iteration, after the host's own ready events. A
 * loop with nothing alive needs no wake-up at all (uv reports 0 for it). */
static inline void lk_adapter_libevent__rearm(lk_adapter_libevent_t *a) {
  int ms = uv_loop_alive(a->loop) ? uv_backend_timeout(a->loop) : -1;
  evtimer_del(a->timer);
  if (ms >= 0) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    evtimer_add(a->timer, &tv);
  }
}

static inline void lk_adapter_libevent__free(lk_adapter_libevent_t *a) {
  event_free(a->io); /* event_free deletes a pending event first */
  event_free(a->timer);
  free(a);
}

static inline void lk_adapter_libevent__run(evutil_socket_t fd, short what, void *arg) {
  lk_adapter_libevent_t *a = (lk_adapter_libevent_t *)arg;
  (void)fd;
  (void)what;
  a->running = 1;
  uv_run(a->loop, UV_RUN_NOWAIT);
  a->running = 0;
  if (a->detached) { /* a latchkey callback above detached us */
    lk_adapter_libevent__free(a);
    return;
  }
  /* Callbacks run above may have started timers or closed handles: the
   * timeout read before is stale. */
  lk_adapter_libevent__rearm(a);
}

/* Call after using latchkey from host code (outside a latchkey callback):
 * uv registers new sockets and timers with its backend only inside uv_run,
 * so this schedules one on the host's next iteration. Cheap; safe any time
 * on the loop's thread. */
static inline void lk_adapter_libevent_kick(lk_adapter_libevent_t *a) {
  struct timeval zero = {0, 0};
  evtimer_del(a->timer);
  evtimer_add(a->timer, &zero);
}

/* 0 and *out set, or LK_EINVAL (NULL argument, or a uv loop without a
 * backend fd: Windows), or LK_ENOMEM. Runs the uv loop once soon. */
static inline int lk_adapter_libevent_attach(struct event_base *base, uv_loop_t *loop,
                                             lk_adapter_libevent_t **out) {
  lk_adapter_libevent_t *a;
  int fd;
  if (out != NULL)
    *out = NULL;
  if (base == NULL || loop == NULL || out == NULL)
    return LK_EINVAL;
  fd = uv_backend_fd(loop);
  if (fd < 0)
    return LK_EINVAL;
  a = (lk_adapter_libevent_t *)calloc(1, sizeof(*a));
  if (a == NULL)
    return LK_ENOMEM;
  a->base = base;
  a->loop = loop;
  a->io = event_new(base, fd, EV_READ | EV_PERSIST, lk_adapter_libevent__run, a);
  a->timer = evtimer_new(base, lk_adapter_libevent__run, a);
  /* A host that set up priorities (event_base_priority_init) gets the uv
   * loop's events at the highest one, so latchkey's replies are not served
   * after every host callback that became ready at the same time. */
  if (a->io != NULL && a->timer != NULL && event_base_get_npriorities(base) > 1) {
    event_priority_set(a->io, 0);
    event_priority_set(a->timer, 0);
  }
  if (a->io == NULL || a->timer == NULL || event_add(a->io, NULL) != 0) {
    if (a->io != NULL)
      event_free(a->io);
    if (a->timer != NULL)
      event_free(a->timer);
    free(a);
    return LK_ENOMEM;
  }
  lk_adapter_libevent_kick(a);
  *out = a;
  return 0;
}

/* Removes both host events and frees the adapter; the uv loop is left as
 * it is (finish it with uv_run as usual). NULL is ignored. Safe from inside
 * a latchkey callback: the adapter is then freed once its uv_run returns. */
static inline void lk_adapter_libevent_detach(lk_adapter_libevent_t *a) {
  if (a == NULL)
    return;
  if (a->running) {
    event_del(a->io);
    event_del(a->timer);
    a->detached = 1;
    return;
  }
  lk_adapter_libevent__free(a);
}

#endif /* LATCHKEY_ADAPTERS_LIBEVENT_H */
