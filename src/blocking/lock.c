/* The blocking lock (lk_lock_t per thread, owner = the thread), from the
 * template shared with the fair lock. */
#define BL_A(x) lk_lock_##x
#define BL_B(x) lk_blocking_lock_##x
#define BL_WHAT "lock"
#define BL_X lock
#define BL_AS lk_handle_as_lock
#define BL_KIND LK_KIND_LOCK
#include "blocking/lock_like.h"
