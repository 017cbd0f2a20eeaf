#ifndef LATCHKEY_FAIR_H
#define LATCHKEY_FAIR_H

#include "client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reentrant fair lock, wire compatible with Redisson's RFairLock: waiters
 * are served strictly in the order they joined the queue, and each is woken
 * on a channel of its own when its turn comes. One object is one owner
 * ("UUID:TID") with at most one operation pending. docs/fair.md; the object
 * contract (lifecycle, callbacks, close, outcomes) is docs/objects.md. Codes
 * are listed as errno.h explains ("the start codes"...). */
typedef struct lk_fair_s lk_fair_t;

/* status is 0 or a negative LK_ code. Results (lk_fair_result,
 * lk_fair_error_text, lk_fair_position) are readable inside the callback. */
typedef void (*lk_fair_cb)(lk_fair_t *fair, int status, void *arg);
typedef void (*lk_fair_close_cb)(lk_fair_t *fair);

/* How long a queued waiter may stay silent before the others skip it, by
 * default. Redisson's fairLockWaitTimeout is 300 000. */
#define LK_FAIR_WAITER_TIMEOUT_DEFAULT ((int64_t)10000)
/* The shortest accepted (waiters re-poll every timeout/3 at least). */
#define LK_FAIR_WAITER_TIMEOUT_MIN ((int64_t)30)

typedef struct lk_fair_opts_s {
  int64_t wait_ms;  /* 0 = try once, never queue (default); -1 = forever; N ms */
  int64_t lease_ms; /* -1 = the client's default lease, renewed by the
                       watchdog while held (default); N ms = not renewed */
  int fenced;       /* 1: also take a fencing token (lk_fair_token) */
  /* While queued, this waiter refreshes its deadline in the queue at least
   * every waiter_timeout_ms / 3; a waiter whose deadline passes (its process
   * died, or it could not reach the server for that long) is skipped.
   * LK_FAIR_WAITER_TIMEOUT_MIN..LK_MAX_TIME_MS; default
   * LK_FAIR_WAITER_TIMEOUT_DEFAULT. */
  int64_t waiter_timeout_ms;
  /* Replica sync (docs/replica-sync.md): after the grant, wait for this
   * many replicas to acknowledge it. -1 = the client's sync_replicas
   * (default), 0 = off, N = 1..1000. */
  int sync_replicas;
  /* 1 = reentrant (default). 0 = non-reentrant, as Redisson's
   * getNonReentrantFairLock (docs/fair.md, "Non-reentrant acquire"): an
   * acquire by an owner that holds the lock is refused with LK_EREENTRY,
   * never queued and never counted; this object's own re-entry at once, a
   * shared owner's (or a Redisson thread's) by the server. */
  int reentrant;
} lk_fair_opts_t;

LK_EXTERN void lk_fair_opts_init(lk_fair_opts_t *opts);

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. Sends
 * nothing. Returns 0, the entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_fair_new(lk_client_t *client, const char *name,
                          lk_fair_t **out);

/* Acquires (or re-enters) the lock; a waiting acquire joins the queue and
 * is served in order. opts may be NULL (try once, default lease). An acquire
 * that ends without the lock leaves the queue.
 * At once: the start codes (LK_EINVAL also for a wait, lease, waiter
 * timeout or sync_replicas out of range, or a hold count at its maximum);
 * LK_EREENTRY (opts.reentrant = 0 and this object holds the lock).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: not this waiter's turn, or
 * the server not reachable in time; with wait 0, not free for it);
 * LK_ECONN (a single try that could not be sent); LK_EUNKNOWN (the outcome
 * stayed unknown: a hold it may have taken was given back); LK_ELEASELOST
 * (the grant came back after its own local deadline, or a re-entry found
 * the earlier holds gone: given back); LK_ETOKEN (fenced: the server's
 * counter went backwards; given back); LK_ENOREPLICAS (replica sync: too
 * few replicas acknowledged the grant in time, or its WAIT went unanswered;
 * given back, docs/replica-sync.md); LK_EREENTRY (opts.reentrant = 0 and
 * the server shows this owner holding: nothing changed, and the waiter left
 * the queue); LK_ECANCELED; the server codes (also a WAIT the server
 * refused: given back). */
LK_EXTERN int lk_fair_acquire(lk_fair_t *fair, const lk_fair_opts_t *opts,
                              lk_fair_cb cb, void *arg);

/* Drops one hold; the last one wakes the next waiter in line.
 * At once: the start codes; LK_ENOTHELD (this object holds nothing);
 * LK_ELEASELOST (on_lost told the loss: the object starts afresh).
 * Callback: 0 (lk_fair_result: 1 released, 0 still held); LK_ENOTOWNER (the
 * server no longer has this owner's hold); LK_ECONN (not sent: still held);
 * LK_EUNKNOWN (may or may not have applied); LK_ECANCELED; the server
 * codes. */
LK_EXTERN int lk_fair_release(lk_fair_t *fair, lk_fair_cb cb, void *arg);

/* Deletes the lock whoever holds it and wakes the next waiter.
 * lk_fair_result() is 1 when a lock was deleted, 0 when there was none. This
 * object's holds are forgotten. The queue is kept.
 * At once: the start codes.
 * Callback: 0; LK_EWRONGTYPE (the key is not a lock: left alone); LK_ECONN;
 * LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_fair_force_release(lk_fair_t *fair, lk_fair_cb cb, void *arg);

/* Server queries; the answer is lk_fair_result() inside the callback:
 * is_locked: 1/0; remaining_ttl: ms, -2 no lock, -1 no expiry;
 * server_hold_count: this owner's hold count on the server;
 * queue_length: waiters queued whose deadline has not passed.
 * At once: the start codes.
 * Callback: 0; LK_EPROTOCOL (a reply the query cannot read); LK_ECONN;
 * LK_EUNKNOWN (no answer: ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_fair_is_locked(lk_fair_t *fair, lk_fair_cb cb, void *arg);
LK_EXTERN int lk_fair_remaining_ttl(lk_fair_t *fair, lk_fair_cb cb, void *arg);
LK_EXTERN int lk_fair_server_hold_count(lk_fair_t *fair, lk_fair_cb cb,
                                        void *arg);
LK_EXTERN int lk_fair_queue_length(lk_fair_t *fair, lk_fair_cb cb, void *arg);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED (from the
 * loop, not inside this call), and the waiter leaves the queue. A hold the
 * server may have granted meanwhile is given back. Returns 0 or the entry
 * codes; LK_EINVAL when no acquire is pending (or its callback is already on
 * its way). */
LK_EXTERN int lk_fair_cancel(lk_fair_t *fair);

/* A pending operation completes with LK_ECANCELED, the object leaves the
 * queue, its holds are released (best effort), then close_cb (may be NULL)
 * runs and the object is freed. Returns 0 or the entry codes (LK_ECLOSED:
 * already closing; LK_EFORKED: in a forked child, where only the memory is
 * freed and no callback runs). */
LK_EXTERN int lk_fair_close(lk_fair_t *fair, lk_fair_close_cb close_cb);

/* Called with LK_ELEASELOST when a watchdog-renewed hold is lost (see
 * lk_lock_set_lost_cb: same rules). Set it any time; NULL removes it.
 * Returns 0 or the entry codes. */
LK_EXTERN int lk_fair_set_lost_cb(lk_fair_t *fair, lk_fair_cb on_lost,
                                  void *arg);
/* Called with status 0 while an acquire of this object waits, each time the
 * server reports a position for it that differs from the last one (first
 * when it joins the queue); lk_fair_position() tells it. Always before the
 * acquire's own callback. Set it any time; NULL removes it. Returns 0 or
 * the entry codes. */
LK_EXTERN int lk_fair_set_queue_cb(lk_fair_t *fair, lk_fair_cb on_queued,
                                   void *arg);
/* This object's place in the queue as the server last reported it: 0 = next
 * in line, -1 = not queued. No round trip. */
LK_EXTERN int64_t lk_fair_position(const lk_fair_t *fair);

/* 1 while this object holds the lock by its own reckoning: at least one
 * hold, not lost, and its local deadline not passed. No round trip. */
LK_EXTERN int lk_fair_is_held(const lk_fair_t *fair);
/* The fencing token of the last fenced acquisition (0 if none). */
LK_EXTERN int64_t lk_fair_token(const lk_fair_t *fair);
/* As lk_lock_sync_acked (docs/replica-sync.md). */
LK_EXTERN int lk_fair_sync_acked(const lk_fair_t *fair);
/* Holds this object has (local count; no round trip). */
LK_EXTERN uint32_t lk_fair_hold_count(const lk_fair_t *fair);
LK_EXTERN int64_t lk_fair_result(const lk_fair_t *fair);
/* Server error text of the last failed operation, or "". Borrowed, valid
 * until the next operation starts. */
LK_EXTERN const char *lk_fair_error_text(const lk_fair_t *fair);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_fair_name(const lk_fair_t *fair);
/* The owner id "UUID:TID". A secret in effect: never log it. Borrowed; it
 * changes when an abandoned acquire's identity is retired (docs/fair.md). */
LK_EXTERN const char *lk_fair_owner(const lk_fair_t *fair);

/* Acts as the owner client_id:thread_id (NULL client_id = this client's id),
 * e.g. a given Redisson thread. Only while the object holds nothing and has
 * nothing pending (else LK_EBUSY). As for the lock, objects sharing an owner
 * rely on the server's hold count. Returns 0, the entry codes (LK_EINVAL
 * also for a bad client_id, as for lk_lock_set_owner) or LK_EBUSY. */
LK_EXTERN int lk_fair_set_owner(lk_fair_t *fair, const char *client_id,
                                uint64_t thread_id);

LK_EXTERN lk_client_t *lk_fair_client(const lk_fair_t *fair);
LK_EXTERN void *lk_fair_get_data(const lk_fair_t *fair);
LK_EXTERN void lk_fair_set_data(lk_fair_t *fair, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_FAIR_H */
