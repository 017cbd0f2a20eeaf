/* The one blocking handle (latchkey/blocking.h, "one handle for every
 * kind"): every kind's handle begins with lk__bl_handle_t, so converting is
 * a cast, and each generic verb is answered from the kind's table (the
 * typed verb it stands for) or from the calling thread's slot. */
#include "blocking/blocking_internal.h"

#define LK__BL_CONVERSION(X)                                                   \
  lk_blocking_handle_t *lk_blocking_##X##_handle(lk_blocking_##X##_t *x) {     \
    return (lk_blocking_handle_t *)(void *)x;                                  \
  }

LK__BL_CONVERSION(lock)
LK__BL_CONVERSION(fair)
LK__BL_CONVERSION(rwlock)
LK__BL_CONVERSION(semaphore)
LK__BL_CONVERSION(psem)
LK__BL_CONVERSION(latch)
LK__BL_CONVERSION(multilock)
LK__BL_CONVERSION(redlock)
LK__BL_CONVERSION(leader)
LK__BL_CONVERSION(ratelimiter)

int lk_blocking_handle_kind(const lk_blocking_handle_t *h) {
  return h != NULL ? h->kind->kind : LK_EINVAL;
}

const char *lk_blocking_handle_name(const lk_blocking_handle_t *h) {
  return h != NULL ? h->name : NULL;
}

int lk_blocking_handle_try(lk_blocking_handle_t *h, int64_t wait_ms) {
  if (h == NULL || h->kind->try_any == NULL)
    return LK_EINVAL;
  return h->kind->try_any(h, wait_ms);
}

int lk_blocking_handle_acquire(lk_blocking_handle_t *h) {
  return lk_blocking_handle_try(h, LK_WAIT_FOREVER);
}

int lk_blocking_handle_release(lk_blocking_handle_t *h) {
  if (h == NULL || h->kind->release_any == NULL)
    return LK_EINVAL;
  return h->kind->release_any(h);
}

int lk_blocking_handle_is_held(lk_blocking_handle_t *h) {
  int held = 0;
  if (h == NULL || !h->kind->holds)
    return LK_EINVAL;
  for (int i = 0; i < (int)h->kind->sides; i++)
    held = held || lk__bl_held(h, i);
  return held;
}

int64_t lk_blocking_handle_hold_count(lk_blocking_handle_t *h) {
  int64_t n = 0;
  if (h == NULL || !h->kind->holds)
    return LK_EINVAL;
  for (int i = 0; i < (int)h->kind->sides; i++)
    n += lk__bl_count(h, i, 1);
  return n;
}

int64_t lk_blocking_handle_token(lk_blocking_handle_t *h) {
  if (h == NULL || !h->kind->has_token)
    return LK_EINVAL;
  return lk__bl_token(h);
}

int lk_blocking_handle_close(lk_blocking_handle_t *h) { return lk__bl_handle_close(h); }
