#ifndef LATCHKEY_MULTILOCK_H
#define LATCHKEY_MULTILOCK_H

#include "client.h"
#include "handle.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ===== MultiLock: several locks held all together, or none ============== */

/* Groups lock objects (possibly on different clients and servers) so they
 * are taken all together or not at all. docs/multilock.md; the object
 * contract (lifecycle, callbacks, close, outcomes) is docs/objects.md. Codes
 * are listed as errno.h explains ("the entry codes"...). */
typedef struct lk_multilock_s lk_multilock_t;
/* The MultiLock as a handle (docs/objects.md, "Handles"), and back (NULL
 * when the handle is not a MultiLock's). Its generic verbs below (close,
 * cancel, data, name...) are aliases of lk_handle_'s, kept for one
 * release. */
LK_EXTERN lk_handle_t *lk_multilock_handle(lk_multilock_t *multilock);
LK_EXTERN lk_multilock_t *lk_handle_as_multilock(lk_handle_t *handle);

typedef void (*lk_multilock_cb)(lk_multilock_t *ml, int status, void *arg);
typedef void (*lk_multilock_close_cb)(lk_multilock_t *ml);

/* The most members one MultiLock takes. */
#define LK_MULTILOCK_MAX_MEMBERS 1024

typedef struct lk_multilock_opts_s {
  int64_t wait_ms;  /* the whole group's budget: 0 = try once (default),
                       -1 = forever, N ms */
  int64_t lease_ms; /* -1 = each member's client default lease, renewed by
                       its watchdog (default); N ms = not renewed */
  int fenced;       /* 1: every member also takes its fencing token
                       (lk_lock_token(member)) */
} lk_multilock_opts_t;

LK_EXTERN void lk_multilock_opts_init(lk_multilock_opts_t *opts);

/* locks[0..n-1] become the members, in that order; the array is copied, the
 * lock objects are borrowed: they must stay open while the MultiLock is
 * (lk_lock_close on a member returns LK_EBUSY until the MultiLock's close
 * callback ran). A lock belongs to one MultiLock at a time (LK_EBUSY).
 * LK_EINVAL: n == 0, n > LK_MULTILOCK_MAX_MEMBERS, a NULL member, the same
 * lock twice or two members naming one lock on one server, members whose
 * clients run on different loops. Sends nothing. Returns 0, the entry codes
 * (of the members' clients too), LK_EBUSY or LK_ENOMEM. */
LK_EXTERN int lk_multilock_new(lk_lock_t *const *locks, size_t n,
                               lk_multilock_t **out);

/* Takes every member (or one more hold on each when held). Attempts run on
 * all members at once; when one is taken by someone else, every member taken
 * by this call is released before the next attempt, which first waits for
 * that member (holding nothing else), then tries the others at once. So two
 * groups asking for the same locks in any order never deadlock. Whatever the
 * status, nothing this call took is still held when it is not 0.
 * lk_multilock_member_status() tells each member's outcome.
 * At once: the entry codes (LK_EINVAL also for a NULL callback, a wait or
 * lease out of range, or a hold count at its maximum), LK_EBUSY, LK_ENOMEM.
 * Callback: 0; LK_ETIMEDOUT (a member stayed taken, or its server not
 * reachable, for the whole budget);
 * LK_ELEASELOST (a re-entry found the group's earlier holds gone);
 * LK_ECANCELED; or a member's failure: a status its lk_lock_acquire
 * delivered (LK_ECONN, LK_EUNKNOWN, LK_ETOKEN, LK_ELEASELOST, the server
 * codes...) or returned at once (LK_EBUSY when the member has an operation
 * of its own pending, LK_EINVAL, LK_ENOMEM, LK_EAGAIN). */
LK_EXTERN int lk_multilock_acquire(lk_multilock_t *ml,
                                   const lk_multilock_opts_t *opts,
                                   lk_multilock_cb cb, void *arg);

/* Drops one hold on every member, all at once; the group's hold is given up
 * on every member whatever the status (lk_multilock_member_status for each).
 * At once: the entry codes (LK_EINVAL also for a NULL callback), LK_EBUSY;
 * LK_ENOTHELD (the group holds nothing); LK_ELEASELOST (after on_lost).
 * Callback: 0; LK_ELEASELOST (the group's holds were lost meanwhile);
 * LK_ECANCELED; or the first member's failure: a status its lk_lock_release
 * delivered (LK_ENOTOWNER, LK_ECONN, LK_EUNKNOWN, the server codes...) or
 * returned at once (LK_ENOTHELD, LK_ELEASELOST, LK_EBUSY, LK_ENOMEM,
 * LK_EAGAIN). */
LK_EXTERN int lk_multilock_release(lk_multilock_t *ml, lk_multilock_cb cb,
                                   void *arg);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED from the
 * loop; holds it took are given back. Returns 0 or the entry codes;
 * LK_EINVAL when no acquire is pending (or its callback is on its way). */
LK_EXTERN int lk_multilock_cancel(lk_multilock_t *ml);

/* Cancels what is pending, gives back the group's holds (best effort), lets
 * go of the members (they stay open: close them afterwards), then runs
 * close_cb (may be NULL) and frees the object. Returns 0 or the entry codes
 * (LK_ECLOSED: already closing; LK_EFORKED: in a forked child, where only
 * the memory is freed and no callback runs). */
LK_EXTERN int lk_multilock_close(lk_multilock_t *ml,
                                 lk_multilock_close_cb close_cb);

/* Called with LK_ELEASELOST when a member's watchdog-renewed hold is lost;
 * the group's holds on the other members are then given back and release
 * returns LK_ELEASELOST. Returns 0 or the entry codes. */
LK_EXTERN int lk_multilock_set_lost_cb(lk_multilock_t *ml, lk_multilock_cb on_lost,
                                       void *arg);
/* 1 while the group holds every member by its own reckoning (no round trip). */
LK_EXTERN int lk_multilock_is_held(const lk_multilock_t *ml);
LK_EXTERN uint32_t lk_multilock_hold_count(const lk_multilock_t *ml);
LK_EXTERN size_t lk_multilock_size(const lk_multilock_t *ml);
/* Member i (borrowed), NULL when out of range. */
LK_EXTERN lk_lock_t *lk_multilock_member(const lk_multilock_t *ml, size_t i);
/* Member i's outcome in the last operation: 0, or its code (LK_ETIMEDOUT:
 * taken by someone else). Valid inside the callback. */
LK_EXTERN int lk_multilock_member_status(const lk_multilock_t *ml, size_t i);
LK_EXTERN void *lk_multilock_get_data(const lk_multilock_t *ml);
LK_EXTERN void lk_multilock_set_data(lk_multilock_t *ml, void *data);

/* ===== RedLock: a quorum of independent Redis masters =================== */

/* One lock name on N independent masters (one client each), held while a
 * majority (N/2 + 1) holds it for this object within its validity time. On
 * each master the data is Redisson's RLock layout, or the lean layout
 * (lk_redlock_config_t.layout). docs/multilock.md; the object contract is
 * docs/objects.md. */
typedef struct lk_redlock_s lk_redlock_t;
/* The RedLock as a handle (docs/objects.md, "Handles"), and back (NULL when
 * the handle is not a RedLock's). Its generic verbs below (close, cancel,
 * data, name...) are aliases of lk_handle_'s, kept for one release. */
LK_EXTERN lk_handle_t *lk_redlock_handle(lk_redlock_t *redlock);
LK_EXTERN lk_redlock_t *lk_handle_as_redlock(lk_handle_t *handle);

typedef void (*lk_redlock_cb)(lk_redlock_t *rl, int status, void *arg);
typedef void (*lk_redlock_close_cb)(lk_redlock_t *rl);

#define LK_REDLOCK_MAX_NODES 64

/* What each master holds (lk_redlock_config_t.layout). */
enum {
  /* Redisson's RLock: a hash NAME, field OWNER -> hold count; reentrant;
   * shared with Redisson and latchkey's lock on the same name. */
  LK_REDLOCK_LAYOUT_REDISSON = 0,
  /* A plain string NAME = OWNER with a PX lease (SET NX PX): less work per
   * master. Not reentrant (a re-entry is LK_EINVAL). Never mix it with the
   * Redisson layout on one name: each then fails with LK_EWRONGTYPE
   * (docs/multilock.md, "Lean layout"). */
  LK_REDLOCK_LAYOUT_LEAN = 1
};

/* How the masters behave; read by lk_redlock_new. */
typedef struct lk_redlock_config_s {
  /* 0 (default): a master seen to restart (its run_id changed) may have
   * lost its locks, so it abstains from votes for quarantine_ms after the
   * restart was seen (the delayed-restart rule of the Redlock algorithm).
   * 1: the masters persist every write (appendfsync always): a restarted
   * master votes at once. */
  int persistent;
  /* 0 (default): the longest lease in play (this acquire's, or the node
   * clients' default lease). Set it to the longest lease any client uses on
   * these masters. */
  int64_t quarantine_ms;
  /* A retry after a failed attempt, woken by a release message or a timer,
   * starts after a random 0..retry_jitter_ms so contenders spread out
   * (default 5). */
  int64_t retry_jitter_ms;
  /* LK_REDLOCK_LAYOUT_REDISSON (default) or LK_REDLOCK_LAYOUT_LEAN. */
  int layout;
} lk_redlock_config_t;

typedef struct lk_redlock_opts_s {
  int64_t wait_ms;  /* 0 = one attempt (default), -1 = forever, N ms */
  int64_t lease_ms; /* -1 = the node clients' default lease, renewed by
                       their watchdogs (default); N ms = not renewed */
  int64_t node_timeout_ms; /* how long one master may take to answer an
                              attempt; 0 (default) = lease / 20 */
  int fenced;       /* 1: take a quorum fencing token (lk_redlock_token) */
} lk_redlock_opts_t;

LK_EXTERN void lk_redlock_config_init(lk_redlock_config_t *cfg);
LK_EXTERN void lk_redlock_opts_init(lk_redlock_opts_t *opts);

/* clients[0..n-1]: one per master, distinct servers (LK_EINVAL for the same
 * client or the same address twice, n == 0, n > LK_REDLOCK_MAX_NODES, or
 * clients on different loops). The array is copied, the clients borrowed
 * (each keeps LK_EBUSY from lk_client_close while the RedLock is open).
 * name is copied; cfg may be NULL (defaults; LK_EINVAL for an unknown
 * layout). Sends nothing. An even n is
 * allowed but tolerates no more failures than n - 1. Returns 0, the entry
 * codes (of the clients; LK_EINVAL also for a bad cfg), LK_ENAMETOOLONG or
 * LK_ENOMEM. */
LK_EXTERN int lk_redlock_new(lk_client_t *const *clients, size_t n,
                             const char *name, const lk_redlock_config_t *cfg,
                             lk_redlock_t **out);

/* Sends the lock's acquire to every master at once and succeeds when a
 * quorum granted it within validity = lease - time since the first send -
 * drift (lease / 100 + 2 ms). Otherwise every grant is given back, on every
 * master, and the attempt is retried within the budget, woken by a release
 * message from any master or the holders' ttl. Re-entry (while held) adds a
 * hold on the masters that hold it, again needing a quorum (the lean layout
 * refuses it: LK_EINVAL). Per master: lk_redlock_node_status.
 * At once: the entry codes (LK_EINVAL also for a NULL callback, a wait,
 * lease or node timeout out of range, a hold count at its maximum, or two
 * clients that turned out to reach one server), LK_EBUSY, LK_ENOMEM.
 * Callback: 0; LK_ETIMEDOUT (enough masters answered, but the lock was
 * taken for the whole budget); LK_ENOQUORUM (too few masters answered in
 * time, or the validity was spent); LK_EWRONGTYPE (the attempt failed and a
 * master's key holds the other layout, or no lock at all: not retried);
 * LK_ELEASELOST (a re-entry found the quorum's holds gone); LK_ECANCELED. */
LK_EXTERN int lk_redlock_acquire(lk_redlock_t *rl, const lk_redlock_opts_t *opts,
                                 lk_redlock_cb cb, void *arg);

/* Drops one hold on every master that has one, all at once; completes once
 * a quorum of them confirmed (the others settle in the background:
 * lk_redlock_node_status is LK_EUNKNOWN until each answers), or else once
 * every master answered or timed out. The hold is given up either way, and
 * what an unreachable master still has expires with its lease.
 * At once: the entry codes (LK_EINVAL also for a NULL callback), LK_EBUSY;
 * LK_ENOTHELD (nothing is held); LK_ELEASELOST (after on_lost).
 * Callback: 0 (a quorum confirmed); LK_ELEASELOST (the quorum was lost
 * meanwhile); LK_ECANCELED; or, short of a quorum, the first master's
 * failure (lk_redlock_node_status): LK_ETIMEDOUT (no
 * answer within the node timeout), a status its lock's lk_lock_release
 * delivered (LK_ENOTOWNER, LK_ECONN, LK_EUNKNOWN, the server codes...) or
 * returned at once (LK_ELEASELOST, LK_EBUSY, LK_ENOMEM, LK_EAGAIN). */
LK_EXTERN int lk_redlock_release(lk_redlock_t *rl, lk_redlock_cb cb, void *arg);
/* Cancels the pending acquire: its callback runs with LK_ECANCELED from the
 * loop; grants are given back as they come. Returns 0 or the entry codes;
 * LK_EINVAL when no acquire is pending (or its callback is on its way). */
LK_EXTERN int lk_redlock_cancel(lk_redlock_t *rl);
/* Cancels what is pending and closes every master's lock object (each gives
 * back its holds), then runs close_cb (may be NULL) and frees the object.
 * Returns 0 or the entry codes (LK_ECLOSED: already closing; LK_EFORKED: in
 * a forked child, where only the memory is freed and no callback runs). */
LK_EXTERN int lk_redlock_close(lk_redlock_t *rl, lk_redlock_close_cb close_cb);

/* Called with LK_ELEASELOST when fewer than a quorum of masters still hold
 * the lock by their watchdogs' reckoning (a renewal found it gone, or the
 * renewals did not reach a quorum in time). Then the remaining holds are
 * given back and release returns LK_ELEASELOST. Returns 0 or the entry
 * codes. */
LK_EXTERN int lk_redlock_set_lost_cb(lk_redlock_t *rl, lk_redlock_cb on_lost,
                                     void *arg);
/* 1 while held by this object's reckoning: a quorum of masters holds it and
 * the quorum's validity has not passed. No round trip. */
LK_EXTERN int lk_redlock_is_held(const lk_redlock_t *rl);
/* Milliseconds of validity left (0 when not held): the quorum-th latest of
 * the masters' local deadlines, minus now. */
LK_EXTERN int64_t lk_redlock_validity_ms(const lk_redlock_t *rl);
/* The quorum fencing token of the last fenced acquisition (0 if none). */
LK_EXTERN int64_t lk_redlock_token(const lk_redlock_t *rl);
LK_EXTERN uint32_t lk_redlock_hold_count(const lk_redlock_t *rl);
LK_EXTERN size_t lk_redlock_size(const lk_redlock_t *rl);
LK_EXTERN size_t lk_redlock_quorum(const lk_redlock_t *rl);
/* Masters that granted the last attempt and still hold it for this
 * object. */
LK_EXTERN size_t lk_redlock_votes(const lk_redlock_t *rl);
/* Master i's outcome in the last attempt: 0 granted (it holds the lock for
 * this object), LK_ENOTOWNER held by another owner, LK_ETIMEDOUT no answer
 * within the node timeout, LK_EUNKNOWN no answer yet (the attempt was
 * decided before it answered; updated when it does), LK_ENOQUORUM abstained
 * (restart quarantine), LK_ENOTHELD not asked by a re-entry (it does not
 * hold it), LK_EBUSY not asked (still settling an earlier give-back), or
 * the error it answered. */
LK_EXTERN int lk_redlock_node_status(const lk_redlock_t *rl, size_t i);
/* 1 while master i abstains after a restart (see lk_redlock_config_t). */
LK_EXTERN int lk_redlock_node_quarantined(const lk_redlock_t *rl, size_t i);
/* The lock object driving master i (borrowed; owned by the RedLock: read
 * its owner id or hold count, never call operations on it or close it). */
LK_EXTERN lk_lock_t *lk_redlock_node_lock(const lk_redlock_t *rl, size_t i);
LK_EXTERN const char *lk_redlock_name(const lk_redlock_t *rl);
LK_EXTERN void *lk_redlock_get_data(const lk_redlock_t *rl);
LK_EXTERN void lk_redlock_set_data(lk_redlock_t *rl, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_MULTILOCK_H */
