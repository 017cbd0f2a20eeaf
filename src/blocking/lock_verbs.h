/* The typed entry points every lock-shaped blocking kind has (lock, fair
 * lock, MultiLock, RedLock: acquire, try, release, is_held, hold_count,
 * close, and the generic try and release they stand for), written once.
 * The includer defines
 *   BL_A(x)      the async API's name for x (lk_lock_##x: its opts_t)
 *   BL_B(x)      the blocking API's name for x (lk_blocking_lock_##x)
 *   BL_AS        the handle's conversion (lk_handle_as_lock)
 * and, before including this, bl_done (LK__BL_DONE) and a static
 *   acquire(BL_B(t) *, const BL_A(opts_t) *)  its acquire op (lk__bl_op_run)
 * and includes it once. */

int BL_B(acquire)(BL_B(t) *l, const BL_A(opts_t) *opts) {
  BL_A(opts_t) o;
  LK__BL_OPTS_OR_FOREVER(BL_A(opts_init), opts, o);
  return acquire(l, opts);
}

int BL_B(try)(BL_B(t) *l, int64_t wait_ms) {
  BL_A(opts_t) o;
  BL_A(opts_init)(&o);
  o.wait_ms = wait_ms;
  return acquire(l, &o);
}

static int start_release(lk_handle_t *h, lk__bl_op_t *op) {
  return BL_A(release)(BL_AS(h), bl_done, op);
}

int BL_B(release)(BL_B(t) *l) {
  lk__bl_op_t op = {.start = start_release, .flags = LK__BL_RELEASES};
  return lk__bl_op_run(LK__BL_H(l), &op, NULL);
}

int BL_B(is_held)(BL_B(t) *l) { return lk__bl_held(LK__BL_H(l), 0); }

uint32_t BL_B(hold_count)(BL_B(t) *l) { return (uint32_t)lk__bl_count(LK__BL_H(l), 0, 1); }

int BL_B(close)(BL_B(t) *l) { return lk__bl_handle_close(LK__BL_H(l)); }

/* For the kind's table: the generic verbs are these. */
static int try_any(lk__bl_handle_t *h, int64_t wait_ms) { return BL_B(try)((BL_B(t) *)h, wait_ms); }
static int release_any(lk__bl_handle_t *h) { return BL_B(release)((BL_B(t) *)h); }
