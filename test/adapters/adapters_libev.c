/* latchkey driven from libev (include/latchkey/adapters/libev.h); the
 * cases are in adapter_cases.h. */
#define HOST_USE_LIBEV
#include "adapter_cases.h"

TEST(libev_lock_and_semaphore_exclusive_through_host) { contend(); }
TEST(libev_lease_renewed_while_host_busy) { renew_busy(); }
TEST(libev_detach_leaves_nothing) { detach_clean(); }
TEST(libev_detach_from_a_latchkey_callback) { detach_in_callback(); }
TEST(libev_attach_rejects_bad_arguments) { bad_arguments(); }
