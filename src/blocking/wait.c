/* One caller sleeps until the loop thread ends its call. On Linux a futex
 * on the record's own word: no mutex, one system call each side, and a wake
 * that may land after the caller returned is harmless (the kernel only
 * compares an address). Elsewhere a mutex and condition variable, signalled
 * under the mutex so the caller cannot free them before the signal is
 * done. */
#include "blocking/blocking_internal.h"

#ifdef __linux__
#include <errno.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

void lk__bl_wait_init(lk__bl_wait_t *w) { atomic_init(&w->done, 0); }

void lk__bl_wait_block(lk__bl_wait_t *w) {
  while (atomic_load_explicit(&w->done, memory_order_acquire) == 0)
    syscall(SYS_futex, &w->done, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

void lk__bl_wait_wake(lk__bl_wait_t *w) {
  atomic_store_explicit(&w->done, 1, memory_order_release);
  syscall(SYS_futex, &w->done, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void lk__bl_wait_destroy(lk__bl_wait_t *w) { (void)w; }

#else

void lk__bl_wait_init(lk__bl_wait_t *w) {
  atomic_init(&w->done, 0);
  uv_mutex_init(&w->mu);
  uv_cond_init(&w->cond);
}

void lk__bl_wait_block(lk__bl_wait_t *w) {
  uv_mutex_lock(&w->mu);
  while (atomic_load_explicit(&w->done, memory_order_acquire) == 0)
    uv_cond_wait(&w->cond, &w->mu);
  uv_mutex_unlock(&w->mu);
}

void lk__bl_wait_wake(lk__bl_wait_t *w) {
  uv_mutex_lock(&w->mu);
  atomic_store_explicit(&w->done, 1, memory_order_release);
  uv_cond_signal(&w->cond);
  uv_mutex_unlock(&w->mu);
}

void lk__bl_wait_destroy(lk__bl_wait_t *w) {
  uv_cond_destroy(&w->cond);
  uv_mutex_destroy(&w->mu);
}

#endif
