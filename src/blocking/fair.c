/* The blocking fair lock (lk_fair_t per thread, owner = the thread; waiters
 * of all threads and processes queue in one FIFO, docs/fair.md), from the
 * template shared with the lock. */
#define BL_A(x) lk_fair_##x
#define BL_B(x) lk_blocking_fair_##x
#define BL_WHAT "fair"
#include "blocking/lock_like.h"
