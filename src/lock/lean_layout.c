/* The lean lock layout (docs/lock.md, "Lean layout"; docs/multilock.md,
 * "Lean layout"): a lock object with it (lk_lock_set_layout, the client's
 * lock_layout, a RedLock's members) runs these scripts instead of Redisson's
 * RLock scripts. They take the same arguments and answer the same shapes
 * (src/lock/lock_internal.h), so the lock object's machinery (resends after
 * a lost reply, give-backs of abandoned grants, watchdog renewal, lost-lease
 * detection, fencing) is the hash layout's, unchanged. */
#include "core/watchdog.h"
#include "lock/lock_internal.h"

/* Renewed in chunks of many keys per script, as the hash layout's leases. */
static const lk__wd_class_t lean_renew = {"lean/renew", 1, NULL, 0};

const lk__lock_layout_t lk__lock_lean_layout = {
    "lean/acquire", "lean/acquire_fenced", "lean/release", "lean/force_release", &lean_renew,
};
