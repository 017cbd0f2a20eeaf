/* The three host loops the adapter tests drive latchkey from, behind one
 * small interface: attach the adapter, a 10 ms host tick (optionally doing
 * busy work, as a host application would), one blocking host iteration, and
 * after detach a check that the host holds nothing of the adapter. */
#ifndef LK_TEST_ADAPTERS_HOST_LOOPS_H
#define LK_TEST_ADAPTERS_HOST_LOOPS_H

#include <stdint.h>

/* One host per program: libev exports libevent-compatible symbols
 * (event_add ...), so the two never link into the same executable. The
 * including file defines HOST_USE_LIBEVENT, HOST_USE_LIBEV or HOST_USE_GLIB. */
#if defined(HOST_USE_LIBEVENT)
#include "latchkey/adapters/libevent.h"
#elif defined(HOST_USE_LIBEV)
#include "latchkey/adapters/libev.h"
#elif defined(HOST_USE_GLIB)
#include "latchkey/adapters/glib.h"
#else
#error "define HOST_USE_LIBEVENT, HOST_USE_LIBEV or HOST_USE_GLIB"
#endif


#if defined(HOST_USE_LIBEVENT)
/* 0: the host never calls event_base_priority_init (one level); else the
 * levels host_open sets up (its tick at the default, the middle one). */
static int host_libevent_priorities;
#endif

typedef struct host_s host_t;
typedef void (*host_tick_fn)(host_t *h);

struct host_s {
  uv_loop_t *loop;
  host_tick_fn on_tick;
  void *data;
  int64_t busy_us; /* work each tick does, spinning the CPU */
#if defined(HOST_USE_LIBEVENT)
  struct event_base *base;
  struct event *tick_ev;
  lk_adapter_libevent_t *a_event;
#elif defined(HOST_USE_LIBEV)
  struct ev_loop *ev;
  ev_timer tick_w;
  lk_adapter_libev_t *a_ev;
#else
  GMainContext *ctx;
  GSource *tick_src;
  lk_adapter_glib_t *a_glib;
  guint glib_id;
#endif
};

static inline void host_busy(host_t *h) {
  uint64_t end = uv_hrtime() + (uint64_t)h->busy_us * 1000u;
  while (uv_hrtime() < end) {
  }
}

static inline void host_ticked(host_t *h) {
  host_busy(h);
  if (h->on_tick != NULL)
    h->on_tick(h);
}

#if defined(HOST_USE_LIBEVENT)
static inline void host_event_tick(evutil_socket_t fd, short what, void *arg) {
  (void)fd;
  (void)what;
  host_ticked((host_t *)arg);
}

#elif defined(HOST_USE_LIBEV)
static inline void host_ev_tick(struct ev_loop *l, ev_timer *w, int revents) {
  (void)l;
  (void)revents;
  host_ticked((host_t *)w->data);
}

#else
static inline gboolean host_glib_tick(gpointer arg) {
  host_ticked((host_t *)arg);
  return G_SOURCE_CONTINUE;
}
#endif

/* Creates the host loop with its 10 ms tick and attaches the adapter. */
static inline int host_open(host_t *h, uv_loop_t *loop) {
  memset(h, 0, sizeof(*h));
  h->loop = loop;
#if defined(HOST_USE_LIBEVENT)
  struct timeval ten = {0, 10000};
  h->base = event_base_new();
  /* A host with priority levels (set up before any event is added): the
   * adapter then takes the highest for the uv loop's events. */
  if (host_libevent_priorities > 1)
    event_base_priority_init(h->base, host_libevent_priorities);
  h->tick_ev = event_new(h->base, -1, EV_PERSIST, host_event_tick, h);
  event_add(h->tick_ev, &ten);
  return lk_adapter_libevent_attach(h->base, loop, &h->a_event);
#elif defined(HOST_USE_LIBEV)
  h->ev = ev_loop_new(EVFLAG_AUTO);
  ev_timer_init(&h->tick_w, host_ev_tick, 0.01, 0.01);
  h->tick_w.data = h;
  ev_timer_start(h->ev, &h->tick_w);
  return lk_adapter_libev_attach(h->ev, loop, &h->a_ev);
#else
  h->ctx = g_main_context_new();
  h->tick_src = g_timeout_source_new(10);
  g_source_set_callback(h->tick_src, host_glib_tick, h, NULL);
  g_source_attach(h->tick_src, h->ctx);
  int rc = lk_adapter_glib_attach(h->ctx, loop, &h->a_glib);
  if (rc == 0)
    h->glib_id = g_source_get_id(&h->a_glib->source);
  return rc;
#endif
}

/* After latchkey calls made from host code (not from a latchkey callback). */
static inline void host_kick(host_t *h) {
#if defined(HOST_USE_LIBEVENT)
  lk_adapter_libevent_kick(h->a_event);
#elif defined(HOST_USE_LIBEV)
  lk_adapter_libev_kick(h->a_ev);
#else
  lk_adapter_glib_kick(h->a_glib);
#endif
}

/* One blocking iteration; the tick bounds its wait to about 10 ms. */
static inline void host_iterate(host_t *h) {
#if defined(HOST_USE_LIBEVENT)
  event_base_loop(h->base, EVLOOP_ONCE);
#elif defined(HOST_USE_LIBEV)
  ev_run(h->ev, EVRUN_ONCE);
#else
  g_main_context_iteration(h->ctx, TRUE);
#endif
}

/* Runs host iterations until *flag or timeout_ms (scaled) passes: 0 or -1. */
static inline int host_run_until(host_t *h, const int *flag, int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (!*flag && rt_now_ms() < end)
    host_iterate(h);
  return *flag ? 0 : -1;
}

static inline void host_detach(host_t *h) {
#if defined(HOST_USE_LIBEVENT)
  lk_adapter_libevent_detach(h->a_event);
  h->a_event = NULL;
#elif defined(HOST_USE_LIBEV)
  lk_adapter_libev_detach(h->a_ev);
  h->a_ev = NULL;
#else
  lk_adapter_glib_detach(h->a_glib);
  h->a_glib = NULL;
#endif
}

/* Removes the tick and frees the host loop; returns how many host events or
 * sources of the adapter were still there (must be 0 after host_detach). */
static inline int host_close(host_t *h) {
  int left = 0;
#if defined(HOST_USE_LIBEVENT)
  event_free(h->tick_ev);
  left = event_base_get_num_events(h->base, EVENT_BASE_COUNT_ADDED);
  event_base_free(h->base);
#elif defined(HOST_USE_LIBEV)
  ev_timer_stop(h->ev, &h->tick_w);
  /* ev_run returns whether watchers are still active (libev 4). */
  left = ev_run(h->ev, EVRUN_NOWAIT) ? 1 : 0;
  ev_loop_destroy(h->ev);
#else
  g_source_destroy(h->tick_src);
  g_source_unref(h->tick_src);
  if (h->glib_id != 0 && g_main_context_find_source_by_id(h->ctx, h->glib_id) != NULL)
    left = 1;
  g_main_context_unref(h->ctx);
#endif
  return left;
}

#endif /* LK_TEST_ADAPTERS_HOST_LOOPS_H */
