/* The entry points both blocking semaphores have alike (semaphore.c:
 * lk_semaphore_t, psem.c: lk_psem_t: try_set_permits, available, held,
 * close), written once. The includer defines
 *   BL_A(x)      the async API's name for x (lk_semaphore_##x)
 *   BL_B(x)      the blocking API's name for x (lk_blocking_semaphore_##x)
 *   BL_AS        the handle's conversion (lk_handle_as_semaphore)
 * and bl_done (LK__BL_DONE), and includes this once. */

static int start_try_set(lk_handle_t *h, lk__bl_op_t *op) {
  return BL_A(try_set_permits)(BL_AS(h), op->n, bl_done, op);
}

int BL_B(try_set_permits)(BL_B(t) *s, int64_t permits) {
  lk__bl_op_t op = {.start = start_try_set, .n = permits};
  return lk__bl_yes_no(LK__BL_H(s), &op);
}

static int start_available(lk_handle_t *h, lk__bl_op_t *op) {
  return BL_A(available)(BL_AS(h), bl_done, op);
}

int64_t BL_B(available)(BL_B(t) *s) {
  lk__bl_op_t op = {.start = start_available};
  return lk__bl_answer(LK__BL_H(s), &op);
}

int64_t BL_B(held)(BL_B(t) *s) { return lk__bl_count(LK__BL_H(s), 0, 0); }

int BL_B(close)(BL_B(t) *s) { return lk__bl_handle_close(LK__BL_H(s)); }
