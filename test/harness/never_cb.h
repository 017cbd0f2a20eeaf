/* Callbacks a refused call must never run, one for each kind's callback
 * type, all counting into rt_never_calls, and the fixture's end that checks
 * none ran (issue 29: each bad-input test file had its own copy).
 * Header-only: each test program has its own count. */
#ifndef LK_TEST_HARNESS_NEVER_CB_H
#define LK_TEST_HARNESS_NEVER_CB_H

#include "latchkey.h"
#include "lk_fixture.h"

static int rt_never_calls;

#define RT_NEVER_CB(name, type)                                                                   \
  static inline void name(type *obj, int status, void *arg) {                                     \
    (void)obj;                                                                                    \
    (void)status;                                                                                 \
    (void)arg;                                                                                    \
    rt_never_calls++;                                                                             \
  }

RT_NEVER_CB(rt_never_lock_cb, lk_lock_t)
RT_NEVER_CB(rt_never_rwlock_cb, lk_rwlock_t)
RT_NEVER_CB(rt_never_latch_cb, lk_latch_t)
RT_NEVER_CB(rt_never_sem_cb, lk_semaphore_t)
RT_NEVER_CB(rt_never_psem_cb, lk_psem_t)

/* Ends the fixture (fx_finish), then fails if a never callback ran. */
static inline void rt_never_finish(fx_t *fx) {
  fx_finish(fx);
  ASSERT_EQ(rt_never_calls, 0);
}

/* The same, after closing the locks in the order given (NULL-terminated,
 * e.g. (lk_lock_t *[]){a, b, NULL}). */
static inline void rt_never_finish_locks(fx_t *fx, lk_lock_t *const *locks) {
  for (; *locks != NULL; locks++)
    fx_close_lock(fx, *locks);
  rt_never_finish(fx);
}

#endif /* LK_TEST_HARNESS_NEVER_CB_H */
