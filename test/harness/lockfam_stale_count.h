/* One contract of the fair lock and of the read/write lock's write side
 * (issue 29: each test file had its own copy, the type renamed). The server
 * counts one hold more for this owner than the object does (a release whose
 * reply was lost did not apply, or a give-back was lost). A first attempt
 * must not take that count for its own grant: that reading is for resends
 * after a lost reply only. It restarts the count from the object's and
 * takes a fresh token, and the object's releases then free the lock.
 *
 * Each kind's test file keeps its own TEST (so ctest names the kind) and
 * passes a small table of that kind's typed calls (lf_stale_kind_t); the
 * owner and the token are read through the generic handle
 * (include/latchkey/handle.h). Header-only. */
#ifndef LK_TEST_HARNESS_LOCKFAM_STALE_COUNT_H
#define LK_TEST_HARNESS_LOCKFAM_STALE_COUNT_H

#include "lk_fixture.h"

/* One kind's calls; obj is that kind's object (lk_fair_t *, lk_rwlock_t *). */
typedef struct lf_stale_kind_s {
  /* The owner's field in the lock's hash is the owner followed by this
   * ("" for the fair lock, ":write" for the write side). */
  const char *field_suffix;
  void *(*open)(fx_t *fx, const char *name);
  lk_handle_t *(*handle)(void *obj);
  /* A fenced acquire, run to its end: its status. */
  int (*acquire_fenced)(fx_t *fx, void *obj);
  uint32_t (*hold_count)(void *obj);
  /* The owner's count as the server has it. */
  long long (*server_holds)(fx_t *fx, void *obj);
  /* One release; *freed gets 1 when it freed the lock. */
  int (*release)(fx_t *fx, void *obj, int64_t *freed);
  void (*close)(fx_t *fx, void *obj);
} lf_stale_kind_t;

static inline void lf_first_attempt_never_takes_a_stale_count(const lf_stale_kind_t *k,
                                                              const char *name) {
  fx_t fx;
  void *obj;
  lk_handle_t *h;
  int64_t freed = -1, t1;
  fx_start(&fx, NULL);
  obj = k->open(&fx, name);
  h = k->handle(obj);
  ASSERT_OK(k->acquire_fenced(&fx, obj));
  t1 = lk_handle_token(h);
  ASSERT_GT(t1, 0);
  /* A hold of this owner the object does not count. */
  ASSERT_EQ(rt_cmd_int(fx.srv, "HINCRBY %s %s%s 1", name, lk_handle_owner(h), k->field_suffix),
            2);
  ASSERT_OK(k->acquire_fenced(&fx, obj));
  ASSERT_EQ(k->hold_count(obj), 2);
  ASSERT_GT(lk_handle_token(h), t1); /* a fresh one, not the last one again */
  ASSERT_EQ(k->server_holds(&fx, obj), 2);
  /* The count restarted from the object's: its releases free the lock. */
  ASSERT_OK(k->release(&fx, obj, &freed));
  ASSERT_EQ(freed, 0);
  ASSERT_OK(k->release(&fx, obj, &freed));
  ASSERT_EQ(freed, 1);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", name), 0);
  k->close(&fx, obj);
  fx_finish(&fx);
}

#endif /* LK_TEST_HARNESS_LOCKFAM_STALE_COUNT_H */
