/* What a watchdog test records of a lock's on_lost (issue 29: both watchdog
 * test files had this copy): how often it came, with what status, whether
 * the lock still said it was held inside the callback, when, and in which
 * order among the case's callbacks (wd_seq). Header-only. */
#ifndef LK_TEST_WATCHDOG_WD_LOST_H
#define LK_TEST_WATCHDOG_WD_LOST_H

#include <stdint.h>
#include <string.h>

#include "lk_fixture.h"

static long wd_seq; /* orders callbacks within a case */

typedef struct {
  int calls;
  int status;
  int held_in_cb; /* lk_lock_is_held() inside on_lost */
  uint64_t t_ns;
  long seq;
} lost_t;

static inline void on_lost(lk_lock_t *l, int status, void *arg) {
  lost_t *x = arg;
  x->calls++;
  x->status = status;
  x->held_in_cb = lk_lock_is_held(l);
  x->t_ns = uv_hrtime();
  x->seq = ++wd_seq;
}

/* A lock named name on fx's client, its on_lost recorded in *lost
 * (cleared first). */
static inline lk_lock_t *wd_watched_lock(fx_t *fx, const char *name, lost_t *lost) {
  lk_lock_t *l = fx_lock(fx, name);
  memset(lost, 0, sizeof(*lost));
  ASSERT_OK(lk_lock_set_lost_cb(l, on_lost, lost));
  return l;
}

#endif /* LK_TEST_WATCHDOG_WD_LOST_H */
