/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* The checks every public entry point makes (a client of this process and
 * thread, not closing), and the count of a client's open objects that
 * lk_client_close guards. Plain state of the client: any layer may call
 * these. */
#include <pthread.h>

#include "core/internal.h"

/* --- fork detection: a counter bumped in every child, compared per call
 * (one load, where getpid() would be a system call) --- */

static volatile unsigned lk__fork_gen;
static pthread_once_t lk__fork_once = PTHREAD_ONCE_INIT;
static void on_fork_child(void) { lk__fork_gen++; }
static void install_fork_hook(void) { pthread_atfork(NULL, NULL, on_fork_child); }

void lk__fork_watch(lk_client_t *c) {
  pthread_once(&lk__fork_once, install_fork_hook);
  c->fork_gen = lk__fork_gen;
}

int lk__check_client(const lk_client_t *c) {
  if (c == NULL)
    return LK_EINVAL;
  if (c->fork_gen != lk__fork_gen)
    return LK_EFORKED;
  if (!uv_thread_equal(&c->thread, &(uv_thread_t){uv_thread_self()}))
    return LK_EWRONGTHREAD;
  if (c->closing)
    return LK_ECLOSED;
  return 0;
}

int lk__client_forked(const lk_client_t *c) { return c->fork_gen != lk__fork_gen; }

int lk__check_client_new(const lk_client_t *c) {
  int rc = lk__check_client(c);
  return rc == 0 && c->closing_all ? LK_ECLOSED : rc;
}

/* --- open objects --- */

void lk__object_born(lk_client_t *c) { c->objects++; }

void lk__object_died(lk_client_t *c) {
  c->objects--;
  lk__close_all_kick(c);
}

/* The step is close_all.c's (lk_client_close_all set it up); it runs from
 * the loop, never inside the call that closed an object. */
void lk__close_all_kick(lk_client_t *c) {
  if (c->closing_all && !c->closing && !lk__client_forked(c))
    lk__defer(c, &c->close_all_step);
}
