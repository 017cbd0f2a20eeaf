#ifndef LK_LOCK_INTERNAL_H
#define LK_LOCK_INTERNAL_H

/* What the lock offers to the objects built from locks (MultiLock groups
 * user lock objects; RedLock drives one lock object per master). The public
 * API does the work; these only observe or bind. */

#include "core/internal.h"

/* A group (MultiLock) takes the lock as a member: lk_lock_close then
 * returns LK_EBUSY until the group lets go, so the group never points at a
 * freed member. LK_EBUSY when another group has it. */
int lk__lock_bind(lk_lock_t *l, void *group);
void lk__lock_unbind(lk_lock_t *l);

/* Told right after the lock's own on_lost when a watchdog-renewed hold is
 * lost (the lock has given its holds back by then). NULL removes it. */
typedef void (*lk__lock_lost_fn)(lk_lock_t *l, void *data);
void lk__lock_set_lost_observer(lk_lock_t *l, lk__lock_lost_fn fn, void *data);

/* The holder's remaining ttl (ms) seen by the current or last acquire when
 * it found the lock taken (-1: no expiry), or LK__LOCK_NOT_BUSY when it never
 * did: an LK_ETIMEDOUT without it means no answer came in time. */
#define LK__LOCK_NOT_BUSY INT64_MIN
int64_t lk__lock_busy_ttl(const lk_lock_t *l);

/* status, the lock's last callback's, is worth retrying within a budget
 * (lk__obj_retryable: a cluster's TRYAGAIN or CLUSTERDOWN included). */
int lk__lock_retryable(const lk_lock_t *l, int status);

/* Local deadline (monotonic ns) of the current holding: the watchdog's when
 * it renews the lease, else send time + lease - drift. 0 when nothing is
 * held or the holding was lost. */
uint64_t lk__lock_deadline_ns(const lk_lock_t *l);

/* Forgets n of this object's holds and gives them back without waiting for
 * the answer (best effort: what cannot be sent expires with its lease). For
 * holds a group no longer counts on; the object must have nothing pending. */
void lk__lock_drop_holds(lk_lock_t *l, uint32_t n);

/* Another data layout on the server for a lock object: the scripts its
 * acquire, release and give-backs run, and the watchdog class that renews
 * it. Each script takes the arguments and answers the shape of the default
 * one (scripts/lock/acquire.lua, acquire_fenced.lua, release.lua,
 * renew.lua, force_release.lua). The one there is: the lean layout
 * (src/lock/lean_layout.c), one bit in the lock, so an idle lock pays
 * nothing for it. */
struct lk__wd_class_s;
typedef struct lk__lock_layout_s {
  const char *acquire, *acquire_fenced, *release, *force_release; /* script names */
  const struct lk__wd_class_s *renew;
} lk__lock_layout_t;
extern const lk__lock_layout_t lk__lock_lean_layout;
/* Uses lk__lock_lean_layout (lean = 1) or Redisson's RLock layout (0). Set
 * before the first acquire. */
void lk__lock_set_lean(lk_lock_t *l, int lean);

#endif /* LK_LOCK_INTERNAL_H */
