/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* Spin mode's back-off (spin.h). */
#include "core/spin.h"

int lk__obj_spin_want(lk__obj_t *o, int64_t wait_ms, int spin, int64_t initial_ms,
                      int64_t max_ms) {
  const lk__opts_t *co = &o->client->o;
  int on;
  if (!lk__valid_spin(spin) || !lk__valid_spin_ms(initial_ms) || !lk__valid_spin_ms(max_ms))
    return LK_EINVAL;
  on = spin < 0 ? co->spin : spin;
  if (initial_ms == 0)
    initial_ms = co->spin_initial_ms != 0 ? co->spin_initial_ms : LK__SPIN_INITIAL_MS;
  if (max_ms == 0)
    max_ms = co->spin_max_ms;
  if (max_ms == 0) {
    /* The default largest back-off follows a larger first one up. */
    max_ms = initial_ms > LK__SPIN_MAX_MS ? initial_ms : LK__SPIN_MAX_MS;
  } else if (max_ms < initial_ms) {
    return LK_EINVAL; /* a largest back-off below the first one, both chosen */
  }
  if (on && wait_ms != 0 && lk__obj_want_timer(o) != 0)
    return LK_ENOMEM;
  o->spin = on != 0;
  if (o->w != NULL) {
    o->w->spin_base_ms = (uint32_t)initial_ms;
    o->w->spin_max_ms = (uint32_t)max_ms;
  }
  return 0;
}

int64_t lk__spin_next(lk__obj_t *o) {
  lk__obj_wait_t *w = o->w;
  uint32_t base = w->spin_base_ms, lo;
  if (base == 0) /* not set up by lk__obj_spin_want: the defaults */
    base = LK__SPIN_INITIAL_MS;
  if (w->spin_max_ms == 0)
    w->spin_max_ms = LK__SPIN_MAX_MS;
  w->spin_base_ms = base > w->spin_max_ms / 2 ? w->spin_max_ms : base * 2;
  /* Between half the base (rounded up) and the base, evenly. */
  lo = base - base / 2;
  return (int64_t)lo + (int64_t)lk__jitter(o->client, base - lo + 1);
}

int lk__obj_wait_wants(lk__obj_t *o, int sync_replicas, int64_t wait_ms, int spin,
                       int64_t initial_ms, int64_t max_ms) {
  int rc = lk__obj_sync_want(o, sync_replicas);
  return rc != 0 ? rc : lk__obj_spin_want(o, wait_ms, spin, initial_ms, max_ms);
}
