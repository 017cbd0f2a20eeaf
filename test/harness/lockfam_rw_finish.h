/* How most read/write lock cases end (issue 29: each case spelled it out,
 * one close a line): the objects are closed in the order given, the server
 * is left with no key at all, and the fixture ends. Header-only. */
#ifndef LK_TEST_HARNESS_LOCKFAM_RW_FINISH_H
#define LK_TEST_HARNESS_LOCKFAM_RW_FINISH_H

#include "rw_fixture.h"

/* rws: the objects, NULL-terminated, e.g. (lk_rwlock_t *[]){a, b, NULL}. */
static inline void rw_finish_empty(fx_t *fx, lk_rwlock_t *const *rws) {
  for (; *rws != NULL; rws++)
    fx_close_rwlock(fx, *rws);
  ASSERT_EQ(rt_server_count_keys(fx->srv, "*"), 0);
  fx_finish(fx);
}

#endif /* LK_TEST_HARNESS_LOCKFAM_RW_FINISH_H */
