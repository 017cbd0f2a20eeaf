/* The blocking fair lock (lk_fair_t per thread, owner = the thread; waiters
 * of all threads and processes queue in one FIFO, docs/fair.md), from the
 * template shared with the lock. */
#define BL_A(x) lk_fair_##x
#define BL_B(x) lk_blocking_fair_##x
#define BL_WHAT "fair"
#define BL_X fair
#define BL_AS lk_handle_as_fair
#define BL_KIND LK_KIND_FAIR
#include "blocking/lock_like.h"
