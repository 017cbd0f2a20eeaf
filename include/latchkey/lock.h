#ifndef LATCHKEY_LOCK_H
#define LATCHKEY_LOCK_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A reentrant lock, wire compatible with Redisson's RLock. One object is one
 * owner ("UUID:TID") with at most one operation pending. docs/lock.md; the
 * object contract (lifecycle, callbacks, close, outcomes) is docs/objects.md.
 * Codes are listed as errno.h explains ("the start codes"...). */
typedef struct lk_lock_s lk_lock_t;
/* The lock as a handle (docs/objects.md, "Handles"), and back (NULL when the
 * handle is not a lock's). Its generic verbs below (close, cancel, data,
 * name...) are aliases of lk_handle_'s, kept for one release. */
LK_EXTERN lk_handle_t *lk_lock_handle(lk_lock_t *lock);
LK_EXTERN lk_lock_t *lk_handle_as_lock(lk_handle_t *handle);

/* status is 0 or a negative LK_ code. Results (lk_lock_result,
 * lk_lock_error_text) are readable inside the callback. */
typedef void (*lk_lock_cb)(lk_lock_t *lock, int status, void *arg);
typedef void (*lk_lock_close_cb)(lk_lock_t *lock);

typedef struct lk_lock_opts_s {
  int64_t wait_ms;  /* 0 = try once (default), -1 = forever, N ms */
  int64_t lease_ms; /* -1 = the client's default lease, renewed by the
                       watchdog while held (default); N ms = not renewed */
  int fenced;       /* 1: also take a fencing token (lk_lock_token) */
  /* Replica sync (docs/replica-sync.md): after the grant, wait for this
   * many replicas to acknowledge it. -1 = the client's sync_replicas
   * (default), 0 = off, N = 1..1000. */
  int sync_replicas;
  /* Spin mode (docs/lock.md, "Spin mode"): the wait sleeps a back-off with
   * jitter between tries instead of listening for releases (no SUBSCRIBE).
   * -1 = the client's spin (default), 0 = off, 1 = on. The back-off starts
   * near spin_initial_ms and doubles up to spin_max_ms; 0 = the client's
   * (whose 0 is 1 and 128 ms); each 0..LK_SPIN_MAX_MS. */
  int spin;
  int64_t spin_initial_ms;
  int64_t spin_max_ms;
  /* 1 = reentrant (default): an owner that holds the lock acquires it again
   * and holds it once more. 0 = non-reentrant, as Redisson's
   * getNonReentrantLock (docs/lock.md, "Non-reentrant acquire"): an acquire
   * by an owner that holds it is refused with LK_EREENTRY and counts
   * nothing; this object's own re-entry at once, a shared owner's (or a
   * Redisson thread's) by the server. */
  int reentrant;
} lk_lock_opts_t;

LK_EXTERN void lk_lock_opts_init(lk_lock_opts_t *opts);

/* What the server holds for a lock (docs/lock.md, "Lean layout"). */
enum {
  /* Redisson's RLock: a hash NAME, field OWNER -> hold count (default);
   * shared with Redisson and every latchkey lock on the name. */
  LK_LOCK_LAYOUT_REDISSON = 0,
  /* A plain string NAME = OWNER with a PX lease, re-entries counted in the
   * object: less server work per pair. No Redisson client may use the name;
   * the owner cannot be shared (lk_lock_set_owner); lk_lock_server_hold_count
   * is LK_EINVAL. A key of the other layout is LK_EWRONGTYPE both ways. */
  LK_LOCK_LAYOUT_LEAN = 1
};

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. Sends
 * nothing. The object takes the client's lock_layout. Returns 0, the entry
 * codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_lock_new(lk_client_t *client, const char *name,
                          lk_lock_t **out);

/* Acquires (or re-enters) the lock. opts may be NULL (try once, default
 * lease).
 * At once: the start codes (LK_EINVAL also for a wait, lease, sync_replicas
 * or spin option out of range, or a hold count at its maximum); LK_EREENTRY
 * (opts.reentrant = 0 and this object holds the lock).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: held by another, or the
 * server not reachable in time; with wait 0, held by another); LK_ECONN (a
 * single try that could not be sent); LK_EUNKNOWN (the outcome stayed
 * unknown: a hold it may have taken was given back); LK_ELEASELOST (the
 * grant came back after its own local deadline, or a re-entry found the
 * earlier holds gone: given back); LK_ETOKEN (fenced: the server's counter
 * went backwards; given back); LK_ENOREPLICAS (replica sync: too few
 * replicas acknowledged the grant in time, or its WAIT went unanswered;
 * given back, docs/replica-sync.md); LK_EREENTRY (opts.reentrant = 0 and
 * the server shows this owner holding: nothing changed); LK_ECANCELED; the
 * server codes (also a WAIT the server refused: given back). */
LK_EXTERN int lk_lock_acquire(lk_lock_t *lock, const lk_lock_opts_t *opts,
                              lk_lock_cb cb, void *arg);

/* Drops one hold; the last one deletes the lock and wakes waiters.
 * At once: the start codes; LK_ENOTHELD (this object holds nothing);
 * LK_ELEASELOST (on_lost told the loss: the object starts afresh).
 * Callback: 0 (lk_lock_result: 1 released, 0 still held); LK_ENOTOWNER (the
 * server no longer has this owner's hold); LK_ECONN (not sent: still held);
 * LK_EUNKNOWN (may or may not have applied; the object still counts the
 * hold); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_lock_release(lk_lock_t *lock, lk_lock_cb cb, void *arg);

/* Deletes the lock whoever holds it and wakes waiters. lk_lock_result() is 1
 * when a lock was deleted, 0 when there was none. This object's holds are
 * forgotten.
 * At once: the start codes.
 * Callback: 0; LK_EWRONGTYPE (the key is not a lock: left alone); LK_ECONN;
 * LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_lock_force_release(lk_lock_t *lock, lk_lock_cb cb, void *arg);

/* Server queries; the answer is lk_lock_result() inside the callback:
 * is_locked: 1/0; remaining_ttl: ms, -2 no lock, -1 no expiry;
 * server_hold_count: this owner's hold count on the server.
 * At once: the start codes (server_hold_count: LK_EINVAL with
 * LK_LOCK_LAYOUT_LEAN, whose server keeps no count).
 * Callback: 0; LK_EPROTOCOL (a reply the query cannot read); LK_ECONN;
 * LK_EUNKNOWN (no answer: ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_lock_is_locked(lk_lock_t *lock, lk_lock_cb cb, void *arg);
LK_EXTERN int lk_lock_remaining_ttl(lk_lock_t *lock, lk_lock_cb cb, void *arg);
LK_EXTERN int lk_lock_server_hold_count(lk_lock_t *lock, lk_lock_cb cb,
                                        void *arg);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED (from the
 * loop, not inside this call). A hold the server may have granted meanwhile is
 * given back. Returns 0 or the entry codes; LK_EINVAL when no acquire is
 * pending (or its callback is already on its way). */
LK_EXTERN int lk_lock_cancel(lk_lock_t *lock);

/* A pending operation completes with LK_ECANCELED, holds are released (best
 * effort), then close_cb (may be NULL) runs and the object is freed.
 * Returns 0 or the entry codes (LK_ECLOSED: already closing; LK_EFORKED: in
 * a forked child, where only the memory is freed and no callback runs);
 * LK_EBUSY while the lock is a MultiLock's member or a RedLock's node. */
LK_EXTERN int lk_lock_close(lk_lock_t *lock, lk_lock_close_cb close_cb);

/* Called with LK_ELEASELOST when a watchdog-renewed hold is lost: a renewal
 * found the lock gone or owned by another, or the local deadline (last
 * confirmed renewal + lease - drift) passed without a confirmed renewal.
 * It comes before any other callback of this object. The object is then
 * LOST: nothing is renewed, latchkey gives back whatever the server may
 * still hold, and lk_lock_release returns LK_ELEASELOST. Set it any time;
 * NULL removes it. Returns 0 or the entry codes. */
LK_EXTERN int lk_lock_set_lost_cb(lk_lock_t *lock, lk_lock_cb on_lost,
                                  void *arg);
/* 1 while this object holds the lock by its own reckoning: at least one
 * hold, not lost, and its local deadline not passed. No round trip. */
LK_EXTERN int lk_lock_is_held(const lk_lock_t *lock);
/* The fencing token of the last fenced acquisition (0 if none). Tokens
 * strictly increase per name across all clients. */
LK_EXTERN int64_t lk_lock_token(const lk_lock_t *lock);
/* Replica sync (docs/replica-sync.md): how many replicas acknowledged the
 * last acquire's grant, readable in its callback (also with LK_SYNC_REPORT's
 * success and with LK_ENOREPLICAS); -1 when that acquire waited for none
 * (sync off) or got no count (WAIT refused or unanswered, canceled). */
LK_EXTERN int lk_lock_sync_acked(const lk_lock_t *lock);

/* Holds this object has (local count; no round trip). */
LK_EXTERN uint32_t lk_lock_hold_count(const lk_lock_t *lock);
LK_EXTERN int64_t lk_lock_result(const lk_lock_t *lock);
/* Server error text of the last failed operation, or "". Borrowed, valid
 * until the next operation starts. */
LK_EXTERN const char *lk_lock_error_text(const lk_lock_t *lock);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_lock_name(const lk_lock_t *lock);
/* The owner id "UUID:TID". A secret in effect: never log it. Borrowed:
 * readable until close, and the current owner until the next
 * lk_lock_set_owner (ask again after one). */
LK_EXTERN const char *lk_lock_owner(const lk_lock_t *lock);

/* Acts as the owner client_id:thread_id (NULL client_id = this client's id),
 * so two objects can share one identity, or act as a Redisson thread. Only
 * while the object holds nothing and has nothing pending (else LK_EBUSY).
 * Objects sharing an owner rely on the server's hold count, so a retried
 * operation after a lost reply is no longer idempotent for them. Returns
 * 0, the entry codes (LK_EINVAL also for a client_id empty, over 64 bytes,
 * or with ':', spaces or bytes outside printable ASCII, and on an object
 * with LK_LOCK_LAYOUT_LEAN, whose re-entries only the object counts),
 * LK_EBUSY or LK_ENOMEM. */
LK_EXTERN int lk_lock_set_owner(lk_lock_t *lock, const char *client_id,
                                uint64_t thread_id);

/* Sets this object's layout (LK_LOCK_LAYOUT_*), overriding the client's
 * lock_layout. Only while the object holds nothing and has nothing pending
 * (else LK_EBUSY). Returns 0, the entry codes (LK_EINVAL also for another
 * value, or LK_LOCK_LAYOUT_LEAN on an object whose owner was set with
 * lk_lock_set_owner) or LK_EBUSY. */
LK_EXTERN int lk_lock_set_layout(lk_lock_t *lock, int layout);
/* The object's layout (LK_LOCK_LAYOUT_*); -1 for NULL. */
LK_EXTERN int lk_lock_layout(const lk_lock_t *lock);

LK_EXTERN lk_client_t *lk_lock_client(const lk_lock_t *lock);
LK_EXTERN void *lk_lock_get_data(const lk_lock_t *lock);
LK_EXTERN void lk_lock_set_data(lk_lock_t *lock, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_LOCK_H */
