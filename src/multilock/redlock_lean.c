/* RedLock's lean member layout (docs/multilock.md, "Lean layout"): each
 * master's lock object runs these scripts instead of Redisson's RLock
 * scripts. They take the same arguments and answer the same shapes
 * (src/lock/lock_internal.h), so the lock object's machinery (resends after
 * a lost reply, give-backs of abandoned grants, watchdog renewal, lost-lease
 * detection, fencing) is the hash layout's, unchanged. */
#include "core/watchdog.h"
#include "lock/lock_internal.h"

/* Renewed in chunks of many keys per script, as the hash layout's leases. */
static const lk__wd_class_t lean_renew = {"multilock/lean_renew", 1, NULL, 0};

const lk__lock_layout_t lk__lock_lean_layout = {
    "multilock/lean_acquire",
    "multilock/lean_acquire_fenced",
    "multilock/lean_release",
    &lean_renew,
};
