/* latchkey driven from libevent (include/latchkey/adapters/libevent.h); the
 * cases are in adapter_cases.h. */
#define HOST_USE_LIBEVENT
#include "adapter_cases.h"

TEST(libevent_lock_and_semaphore_exclusive_through_host) { contend(); }
TEST(libevent_lease_renewed_while_host_busy) { renew_busy(); }
TEST(libevent_detach_leaves_nothing) { detach_clean(); }
TEST(libevent_detach_from_a_latchkey_callback) { detach_in_callback(); }
TEST(libevent_attach_rejects_bad_arguments) { bad_arguments(); }

/* A host that set up priority levels gets the uv loop's events at the
 * highest (without them a busy host callback ready in the same iteration
 * may run first: bench/adapters_host.c, "host busy 80%"), and contention
 * still works. */
TEST(libevent_adapter_takes_the_hosts_highest_priority) {
  uv_loop_t loop;
  host_t h;
  host_libevent_priorities = 3;
  ASSERT_OK(uv_loop_init(&loop));
  ASSERT_OK(host_open(&h, &loop));
  ASSERT_EQ(event_base_get_npriorities(h.base), 3);
  ASSERT_EQ(event_get_priority(h.a_event->io), 0);
  ASSERT_EQ(event_get_priority(h.a_event->timer), 0);
  ASSERT_EQ(event_get_priority(h.tick_ev), 1);
  host_detach(&h);
  ASSERT_EQ(host_close(&h), 0);
  ASSERT_OK(uv_loop_close(&loop));
  contend();
  host_libevent_priorities = 0;
}
