/* latchkey driven from libevent (include/latchkey/adapters/libevent.h); the
 * cases are in adapter_cases.h. */
#define HOST_USE_LIBEVENT
#include "adapter_cases.h"

TEST(libevent_lock_and_semaphore_exclusive_through_host) { contend(); }
TEST(libevent_lease_renewed_while_host_busy) { renew_busy(); }
TEST(libevent_detach_leaves_nothing) { detach_clean(); }
TEST(libevent_detach_from_a_latchkey_callback) { detach_in_callback(); }
TEST(libevent_attach_rejects_bad_arguments) { bad_arguments(); }
