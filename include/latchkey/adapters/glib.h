/* Drives a latchkey loop (a uv_loop_t) from a GLib main context, as a
 * GSource: the uv backend fd is the source's fd, uv_backend_timeout its
 * prepare timeout, and dispatch runs the uv loop once. Header-only; link
 * glib-2.0 and libuv. The pattern and its limits (platforms, fork, when to
 * call _kick) are in docs/embedding.md.
 *
 *   lk_adapter_glib_t *a;
 *   lk_adapter_glib_attach(NULL, &uvloop, &a);  ... g_main_loop_run(ml);
 *   lk_adapter_glib_detach(a);
 *
 * Single-threaded: the context's owner thread is the uv loop's thread. */
#ifndef LATCHKEY_ADAPTERS_GLIB_H
#define LATCHKEY_ADAPTERS_GLIB_H

#include <glib.h>
#include <uv.h>

#include "../errno.h"

typedef struct lk_adapter_glib_s {
  GSource source; /* first: GLib allocates the whole struct as the source */
  uv_loop_t *loop;
  gpointer fd_tag;
  gint64 deadline_us; /* monotonic; -1: no uv timer pending */
  int kicked;
} lk_adapter_glib_t;

/* Asks the uv loop what it waits for, before GLib polls. 0 (idle handles,
 * pending work) makes the source ready now; a loop with nothing alive needs
 * no wake-up (uv reports 0 for it too). */
static inline gboolean lk_adapter_glib__prepare(GSource *s, gint *timeout) {
  lk_adapter_glib_t *a = (lk_adapter_glib_t *)s;
  int ms;
  /* uv measures its timeout from the time cached at its last run; prepare
   * runs on every host iteration, so without this the deadline would move
   * out again with each host wake-up and a uv timer would never fire. */
  uv_update_time(a->loop);
  ms = uv_loop_alive(a->loop) ? uv_backend_timeout(a->loop) : -1;
  if (a->kicked)
    ms = 0;
  *timeout = ms;
  a->deadline_us = ms >= 0 ? g_get_monotonic_time() + (gint64)ms * 1000 : -1;
  return ms == 0;
}

static inline gboolean lk_adapter_glib__check(GSource *s) {
  lk_adapter_glib_t *a = (lk_adapter_glib_t *)s;
  if (a->kicked)
    return TRUE;
  if (g_source_query_unix_fd(s, a->fd_tag) & G_IO_IN)
    return TRUE;
  /* The clock read now, not the context's time cached for this iteration:
   * that one predates the poll, and the deadline would never pass. */
  return a->deadline_us >= 0 && g_get_monotonic_time() >= a->deadline_us;
}

static inline gboolean lk_adapter_glib__dispatch(GSource *s, GSourceFunc cb, gpointer data) {
  lk_adapter_glib_t *a = (lk_adapter_glib_t *)s;
  (void)cb;
  (void)data;
  a->kicked = 0;
  uv_run(a->loop, UV_RUN_NOWAIT);
  return G_SOURCE_CONTINUE; /* the next prepare reads the new timeout */
}

static inline GSourceFuncs *lk_adapter_glib__funcs(void) {
  static GSourceFuncs funcs = {lk_adapter_glib__prepare, lk_adapter_glib__check,
                               lk_adapter_glib__dispatch, NULL, NULL, NULL};
  return &funcs;
}

/* Call after using latchkey from host code (outside a latchkey callback):
 * uv registers new sockets only inside uv_run; this makes the source ready
 * on the context's next iteration (and wakes it if it is polling). */
static inline void lk_adapter_glib_kick(lk_adapter_glib_t *a) {
  a->kicked = 1;
  g_main_context_wakeup(g_source_get_context(&a->source));
}

/* Attaches to ctx (NULL: the default context). 0 and *out set, or LK_EINVAL
 * (NULL loop or out, or a uv loop without a backend fd: Windows). Runs the
 * uv loop once soon. */
static inline int lk_adapter_glib_attach(GMainContext *ctx, uv_loop_t *loop,
                                         lk_adapter_glib_t **out) {
  lk_adapter_glib_t *a;
  int fd;
  if (out != NULL)
    *out = NULL;
  if (loop == NULL || out == NULL)
    return LK_EINVAL;
  fd = uv_backend_fd(loop);
  if (fd < 0)
    return LK_EINVAL;
  /* g_source_new aborts rather than return NULL when memory runs out. */
  a = (lk_adapter_glib_t *)g_source_new(lk_adapter_glib__funcs(), sizeof(*a));
  a->loop = loop;
  a->deadline_us = -1;
  a->kicked = 1;
  a->fd_tag = g_source_add_unix_fd(&a->source, fd, G_IO_IN);
  g_source_set_name(&a->source, "latchkey uv loop");
  g_source_attach(&a->source, ctx);
  *out = a;
  return 0;
}

/* Removes the source from its context and frees it; the uv loop is left as
 * it is. NULL is ignored. */
static inline void lk_adapter_glib_detach(lk_adapter_glib_t *a) {
  if (a == NULL)
    return;
  g_source_destroy(&a->source);
  g_source_unref(&a->source);
}

#endif /* LATCHKEY_ADAPTERS_GLIB_H */
