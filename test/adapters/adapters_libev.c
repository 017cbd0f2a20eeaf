/* latchkey driven from libev (include/latchkey/adapters/libev.h); the
 * cases are in adapter_cases.h. */
#define HOST_USE_LIBEV
#include "adapter_cases.h"

TEST(libev_lock_and_semaphore_exclusive_through_host) { contend(); }
TEST(libev_lease_renewed_while_host_busy) { renew_busy(); }
TEST(libev_detach_leaves_nothing) { detach_clean(); }
TEST(libev_detach_from_a_latchkey_callback) { detach_in_callback(); }
TEST(libev_attach_rejects_bad_arguments) { bad_arguments(); }

/* The adapter's watchers run at libev's highest priority, before host
 * watchers pending in the same iteration: a reply that arrived while a busy
 * host callback ran is not served after the next host callbacks too
 * (bench/adapters_host.c, "host busy 80%"). */
TEST(libev_adapter_takes_the_highest_priority) {
  uv_loop_t loop;
  host_t h;
  ASSERT_OK(uv_loop_init(&loop));
  ASSERT_OK(host_open(&h, &loop));
  ASSERT_EQ(ev_priority(&h.a_ev->io), EV_MAXPRI);
  ASSERT_EQ(ev_priority(&h.a_ev->timer), EV_MAXPRI);
  ASSERT_EQ(ev_priority(&h.tick_w), 0);
  host_detach(&h);
  ASSERT_EQ(host_close(&h), 0);
  ASSERT_OK(uv_loop_close(&loop));
}
