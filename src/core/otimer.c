/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* A timer that may outlive its object (otimer.h). */
#include "core/otimer.h"

struct lk__otimer_s {
  uv_timer_t t;
  void *owner; /* NULL once the owner closed it */
  lk__otimer_fn fn;
};

int lk__otimer_want(lk__otimer_t **t, uv_loop_t *loop, void *owner) {
  if (*t != NULL)
    return 0;
  *t = lk__calloc(1, sizeof(**t));
  if (*t == NULL)
    return LK_ENOMEM;
  uv_timer_init(loop, &(*t)->t);
  (*t)->t.data = *t;
  (*t)->owner = owner;
  return 0;
}

static void on_timer(uv_timer_t *h) {
  lk__otimer_t *t = h->data;
  if (t->owner != NULL)
    t->fn(t->owner);
}

void lk__otimer_start(lk__otimer_t *t, lk__otimer_fn fn, uint64_t ms, uint64_t repeat_ms) {
  if (t == NULL)
    return;
  t->fn = fn;
  uv_update_time(t->t.loop); /* the delay is from the real now */
  uv_timer_start(&t->t, on_timer, ms, repeat_ms);
}

void lk__otimer_stop(lk__otimer_t *t) {
  if (t != NULL)
    uv_timer_stop(&t->t);
}

int lk__otimer_active(const lk__otimer_t *t) {
  return t != NULL && uv_is_active((const uv_handle_t *)&t->t);
}

static void on_closed(uv_handle_t *h) { lk__free(h->data); }

void lk__otimer_close(lk__otimer_t **t) {
  if (*t == NULL)
    return;
  (*t)->owner = NULL;
  uv_close((uv_handle_t *)&(*t)->t, on_closed);
  *t = NULL;
}

void lk__otimer_free(lk__otimer_t **t) {
  lk__free(*t); /* never closed on this loop */
  *t = NULL;
}
