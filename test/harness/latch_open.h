/* How the countdown latch cases open (issue 29: each spelled out the
 * start, the object and the count it is set to). Header-only, over
 * latch_fixture.h. */
#ifndef LK_TEST_HARNESS_LATCH_OPEN_H
#define LK_TEST_HARNESS_LATCH_OPEN_H

#include "latch_fixture.h"

/* A latch on name (strict or not) whose count is set to count. */
static inline lk_latch_t *lx_new_counting(fx_t *fx, const char *name, int strict, int64_t count) {
  lk_latch_t *l = lx_new(fx, name, strict);
  ASSERT_OK(lx_set(&fx->loop, l, count, NULL));
  return l;
}

/* Starts the fixture (a server and a client) and opens one latch on name:
 * how the single-latch cases open. */
static inline lk_latch_t *fx_start_latch(fx_t *fx, const char *name, int strict) {
  fx_start(fx, NULL);
  return lx_new(fx, name, strict);
}

#endif /* LK_TEST_HARNESS_LATCH_OPEN_H */
