/* A kind's row of the late-renewal contract (late_renewal_contract.h),
 * written once for the kinds whose API has the same words: the lock and the
 * fair lock (issue 29: each test file carried its own copy of these calls,
 * the type renamed). LF_LATE_RENEWAL_ROW(k, run) defines the typed calls
 * behind the row's untyped slots and the row itself, `lf_lr_<k>`: k is the
 * kind's word in the API (lock, fair), run its "run until the callback"
 * helper (sx_run, fsx_run). The row's start_fenced is a fenced acquire that
 * waits up to 5 s with the default lease; a test may use it on its own.
 * Header-only. */
#ifndef LK_TEST_HARNESS_LOCKFAM_LATE_RENEWAL_ROW_H
#define LK_TEST_HARNESS_LOCKFAM_LATE_RENEWAL_ROW_H

#include <string.h>

#include "late_renewal_contract.h"

#define LF_LATE_RENEWAL_ROW(k, run)                                                               \
  static inline void *lf_lr_open_##k(fx_t *fx, const char *name) { return fx_##k(fx, name); }    \
  static inline lk_handle_t *lf_lr_handle_##k(void *obj) { return lk_##k##_handle(obj); }       \
  static inline void lf_lr_acq_cb_##k(lk_##k##_t *obj, int status, void *arg) {                  \
    (void)obj;                                                                                   \
    lr_acq_done(arg, status);                                                                    \
  }                                                                                              \
  static inline void lf_lr_start_fenced_##k(void *obj, lr_acq_t *a) {                            \
    lk_##k##_opts_t o;                                                                           \
    memset(a, 0, sizeof(*a));                                                                    \
    lk_##k##_opts_init(&o);                                                                      \
    o.wait_ms = 5000;                                                                            \
    o.fenced = 1;                                                                                \
    ASSERT_OK(lk_##k##_acquire(obj, &o, lf_lr_acq_cb_##k, a));                                   \
  }                                                                                              \
  /* The holder is told at once and acquires again from on_lost. */                              \
  static inline void lf_lr_on_lost_##k(lk_##k##_t *obj, int status, void *arg) {                 \
    lr_relost_t *r = arg;                                                                        \
    ASSERT_EQ(status, LK_ELEASELOST);                                                            \
    r->lost++;                                                                                   \
    lf_lr_start_fenced_##k(obj, r->acq);                                                         \
  }                                                                                              \
  static inline int lf_lr_set_lost_##k(void *obj, lr_relost_t *r) {                              \
    return lk_##k##_set_lost_cb(obj, lf_lr_on_lost_##k, r);                                      \
  }                                                                                              \
  static inline int lf_lr_hold_count_##k(fx_t *fx, void *obj, int64_t *n) {                      \
    return run(fx, lk_##k##_server_hold_count, obj, n);                                          \
  }                                                                                              \
  static inline int lf_lr_release_##k(fx_t *fx, void *obj, int64_t *n) {                         \
    return run(fx, lk_##k##_release, obj, n);                                                    \
  }                                                                                              \
  static inline void lf_lr_close_##k(fx_t *fx, void *obj) { fx_close_##k(fx, obj); }             \
  static const lr_kind_t lf_lr_##k = {lf_lr_open_##k,          lf_lr_handle_##k,                 \
                                      lf_lr_set_lost_##k,      lf_lr_start_fenced_##k,           \
                                      lf_lr_hold_count_##k,    lf_lr_release_##k,                \
                                      lf_lr_close_##k}

#endif /* LK_TEST_HARNESS_LOCKFAM_LATE_RENEWAL_ROW_H */
