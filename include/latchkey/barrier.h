#ifndef LATCHKEY_BARRIER_H
#define LATCHKEY_BARRIER_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A double barrier (as Curator's DistributedDoubleBarrier): N members enter
 * a named barrier and are released together once N have entered, work, then
 * leave, and each leave completes once every member has left. A member's
 * presence is a lease the object renews while it lives, so a member that
 * crashes is dropped when its lease runs out and the others go on; the
 * callbacks say who was dropped. The same name serves round after round.
 * docs/barrier.md; the object contract (lifecycle, callbacks, close,
 * outcomes) is docs/objects.md. One object is one member with at most one
 * operation pending; members in one process use separate objects. */
typedef struct lk_barrier_s lk_barrier_t;
/* The barrier as a handle (docs/objects.md, "Handles"), and back (NULL when
 * the handle is not a barrier's). Its generic verbs below (close, cancel,
 * data, name...) are aliases of lk_handle_'s, kept for one release. */
LK_EXTERN lk_handle_t *lk_barrier_handle(lk_barrier_t *barrier);
LK_EXTERN lk_barrier_t *lk_handle_as_barrier(lk_handle_t *handle);

/* status is 0 or a negative LK_ code. lk_barrier_dropped* and
 * lk_barrier_round are readable inside the callback. */
typedef void (*lk_barrier_cb)(lk_barrier_t *barrier, int status, void *arg);
typedef void (*lk_barrier_close_cb)(lk_barrier_t *barrier);

/* Bounds. */
#define LK_BARRIER_MAX_MEMBERS 100000
#define LK_BARRIER_LEASE_MIN_MS 100
#define LK_BARRIER_MEMBER_MAX 256

typedef struct lk_barrier_opts_s {
  /* The wait's budget: -1 = until released (default), 0 = look once, else
   * 1..LK_MAX_TIME_MS. */
  int64_t wait_ms;
  /* enter only: how long the server keeps this member without a renewal
   * (a crashed member is dropped after it). Renewed every lease/3 from the
   * enter until the leave. -1 = the client's default_lease_ms (default),
   * else LK_BARRIER_LEASE_MIN_MS..LK_MAX_TIME_MS. */
  int64_t lease_ms;
  /* enter only: the member's id in the barrier and in the dropped lists,
   * a C string of 1..LK_BARRIER_MEMBER_MAX bytes, copied; unique among the
   * barrier's members. NULL = the object's owner id "UUID:TID" (default). */
  const char *member;
} lk_barrier_opts_t;

LK_EXTERN void lk_barrier_opts_init(lk_barrier_opts_t *opts);

/* name is copied; 1..max_name_len bytes. members: N, 1..
 * LK_BARRIER_MAX_MEMBERS, the same for every member. Sends nothing.
 * Returns 0, the entry codes (LK_EINVAL also for members out of range),
 * LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_barrier_new(lk_client_t *client, const char *name, int members,
                             lk_barrier_t **out);

/* Enters the barrier: the callback runs with 0 once N members have entered
 * the current round (at once for the one that completes it). A member that
 * enters while a released round still has members joins the next round: it
 * waits until every member of the current round has left or was dropped.
 * opts may be NULL (defaults).
 * At once: the start codes (LK_EINVAL also for a wait, lease or member
 * out of range); LK_EBUSY also while this object is in the barrier
 * (entered and not yet left).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out first: this member is
 * taken out again); LK_ELEASELOST (this member was dropped, its lease ran
 * out: a stalled process); LK_EINVAL (the round's members were entered with
 * another N); LK_ECANCELED; LK_ECONN (a single look that could not be
 * sent); LK_EUNKNOWN (the outcome stayed unknown: taken out again); the
 * server codes. */
LK_EXTERN int lk_barrier_enter(lk_barrier_t *barrier, const lk_barrier_opts_t *opts,
                               lk_barrier_cb cb, void *arg);

/* Leaves the barrier entered last: this member is out at once, and the
 * callback runs with 0 once every member of the round has left or was
 * dropped. Only wait_ms of opts is read; NULL = wait until all left.
 * At once: the start codes; LK_ENOTHELD (this object has not entered).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out while others stayed: this
 * member has left all the same); LK_ELEASELOST (this member had been
 * dropped); LK_ECANCELED; LK_EUNKNOWN; the server codes. */
LK_EXTERN int lk_barrier_leave(lk_barrier_t *barrier, const lk_barrier_opts_t *opts,
                               lk_barrier_cb cb, void *arg);

/* Ends the pending enter or leave with LK_ECANCELED (a canceled enter takes
 * this member out again). Returns 0 or the entry codes; LK_EINVAL when
 * nothing is pending (or its callback is on its way). */
LK_EXTERN int lk_barrier_cancel(lk_barrier_t *barrier);

/* The members dropped (their lease ran out) during the last enter's or
 * leave's phase of the round, as far as its last reply showed: i from 0 to
 * lk_barrier_dropped_count() - 1. Borrowed: valid until the next operation
 * starts. NULL when i is out of range. */
LK_EXTERN size_t lk_barrier_dropped_count(const lk_barrier_t *barrier);
LK_EXTERN const char *lk_barrier_dropped(const lk_barrier_t *barrier, size_t i);
/* The round this member entered last (1, 2, ... per name), 0 if none. */
LK_EXTERN int64_t lk_barrier_round(const lk_barrier_t *barrier);
/* This member's id: the member option of the last enter, else the owner
 * id. Borrowed: valid until the next enter or close. */
LK_EXTERN const char *lk_barrier_member(const lk_barrier_t *barrier);

/* A pending enter or leave completes with LK_ECANCELED, this member is
 * taken out of the barrier (best effort: else it is dropped after its
 * lease), then close_cb (may be NULL) runs and the object is freed. Returns
 * 0 or the entry codes (LK_EFORKED in a forked child: only the memory is
 * freed). */
LK_EXTERN int lk_barrier_close(lk_barrier_t *barrier, lk_barrier_close_cb close_cb);

/* Server error text of the last failed operation, or "". */
LK_EXTERN const char *lk_barrier_error_text(const lk_barrier_t *barrier);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_barrier_name(const lk_barrier_t *barrier);
LK_EXTERN int lk_barrier_members(const lk_barrier_t *barrier);
LK_EXTERN lk_client_t *lk_barrier_client(const lk_barrier_t *barrier);
LK_EXTERN void *lk_barrier_get_data(const lk_barrier_t *barrier);
LK_EXTERN void lk_barrier_set_data(lk_barrier_t *barrier, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_BARRIER_H */
