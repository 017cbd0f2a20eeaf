/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Deferred work and busy polling: both ride the client's idle handle. The
 * handle's callback is the client's (lk_client_s.idle_cb, client.c): a pass
 * over the deferred work is wrapped in what the owner does around it (lost
 * leases told first, commands corked), so this file calls nothing above it. */
#include "core/internal.h"

void lk__defer_init(lk__defer_t *d, lk__defer_fn fn) {
  lk__queue_init(&d->node);
  d->fn = fn;
}

void lk__defer(lk_client_t *c, lk__defer_t *d) {
  if (lk__queue_linked(&d->node))
    return;
  lk__queue_insert_tail(&c->deferred, &d->node);
  uv_idle_start(&c->idle, c->idle_cb);
}

void lk__defer_cancel(lk__defer_t *d) {
  if (lk__queue_linked(&d->node))
    lk__queue_remove(&d->node);
}

void lk__defer_run(lk_client_t *c) {
  lk__queue_t ready;
  /* Snapshot first (libuv's timer pattern): work deferred by these
   * callbacks runs on the next pass, so one pass always ends. */
  lk__queue_init(&ready);
  lk__queue_move(&c->deferred, &ready);
  while (!lk__queue_empty(&ready)) {
    lk__defer_t *d = lk__container_of(lk__queue_head(&ready), lk__defer_t, node);
    lk__queue_remove(&d->node);
    d->fn(d);
  }
}

/* Busy polling (lk_client_opts_t.busy_poll_us, or a fan-out's answers
 * due: lk__client_spin_until): replies outstanding and the window still
 * open. */
int lk__busy_polling(const lk_client_t *c) {
  return c->inflight > 0 && c->closing == 0 && lk__now_ns() < c->busy_until_ns;
}

void lk__client_spin_until(lk_client_t *c, uint64_t until_ns) {
  if (c->closing != 0 || c->inflight == 0)
    return;
  if (until_ns > c->busy_until_ns)
    c->busy_until_ns = until_ns;
  /* An active idle handle makes the loop poll with a zero timeout: it
   * spins instead of sleeping until the window closes (the client's idle
   * callback). */
  uv_idle_start(&c->idle, c->idle_cb);
}

void lk__client_busy_poll(lk_client_t *c) {
  if (c->o.busy_poll_us <= 0)
    return;
  lk__client_spin_until(c, lk__now_ns() + (uint64_t)c->o.busy_poll_us * 1000u);
}
