/* latchkey driven from glib (include/latchkey/adapters/glib.h); the
 * cases are in adapter_cases.h. */
#define HOST_USE_GLIB
#include "adapter_cases.h"

TEST(glib_lock_and_semaphore_exclusive_through_host) { contend(); }
TEST(glib_lease_renewed_while_host_busy) { renew_busy(); }
TEST(glib_detach_leaves_nothing) { detach_clean(); }
TEST(glib_detach_from_a_latchkey_callback) { detach_in_callback(); }
TEST(glib_attach_rejects_bad_arguments) { bad_arguments(); }
