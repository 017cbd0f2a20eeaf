#ifndef LATCHKEY_RWLOCK_H
#define LATCHKEY_RWLOCK_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A read/write lock, wire compatible with Redisson's RReadWriteLock. One
 * object is one owner ("UUID:TID") with both sides: many readers may hold the
 * lock at once, a writer excludes everyone else. Both sides are reentrant; a
 * writer may also take read holds (and keep them when it lets the write go:
 * a downgrade); a reader asking for the write side is refused with
 * LK_EUPGRADE. At most one operation is pending per object. docs/rwlock.md;
 * the object contract (lifecycle, callbacks, close, outcomes) is
 * docs/objects.md. Codes are listed as errno.h explains ("the start
 * codes"...). */
typedef struct lk_rwlock_s lk_rwlock_t;
/* The read/write lock as a handle (docs/objects.md, "Handles"), and back
 * (NULL when the handle is not a read/write lock's). Its generic verbs below
 * (close, cancel, data, name...) are aliases of lk_handle_'s, kept for one
 * release. */
LK_EXTERN lk_handle_t *lk_rwlock_handle(lk_rwlock_t *rwlock);
LK_EXTERN lk_rwlock_t *lk_handle_as_rwlock(lk_handle_t *handle);

typedef enum { LK_RW_READ = 1, LK_RW_WRITE = 2 } lk_rwlock_side_t;

/* status is 0 or a negative LK_ code. Results (lk_rwlock_result,
 * lk_rwlock_error_text) are readable inside the callback. */
typedef void (*lk_rwlock_cb)(lk_rwlock_t *rw, int status, void *arg);
typedef void (*lk_rwlock_close_cb)(lk_rwlock_t *rw);

typedef struct lk_rwlock_opts_s {
  int64_t wait_ms;  /* 0 = try once (default), -1 = forever, N ms */
  int64_t lease_ms; /* -1 = the client's default lease, renewed by the
                       watchdog while held (default); N ms = not renewed */
  int fenced;       /* 1: also take a fencing token (lk_rwlock_token) */
  /* Replica sync (docs/replica-sync.md): after the grant, wait for this
   * many replicas to acknowledge it. -1 = the client's sync_replicas
   * (default), 0 = off, N = 1..1000. */
  int sync_replicas;
  /* Spin mode (docs/rwlock.md, "Spin mode"): the wait sleeps a
   * back-off with jitter between tries instead of listening for releases
   * (no SUBSCRIBE). -1 = the client's spin (default), 0 = off, 1 = on. The
   * back-off starts near spin_initial_ms and doubles up to spin_max_ms; 0 =
   * the client's (whose 0 is 1 and 128 ms); each 0..LK_SPIN_MAX_MS. */
  int spin;
  int64_t spin_initial_ms;
  int64_t spin_max_ms;
} lk_rwlock_opts_t;

LK_EXTERN void lk_rwlock_opts_init(lk_rwlock_opts_t *opts);

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. Sends
 * nothing. Returns 0, the entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_rwlock_new(lk_client_t *client, const char *name,
                            lk_rwlock_t **out);

/* Takes one hold on `side` (or one more when this owner has it). opts may be
 * NULL (try once, default lease).
 * At once: the start codes (LK_EINVAL also for a bad side, a wait, lease,
 * sync_replicas or spin option out of range, or a hold count at its
 * maximum); LK_EUPGRADE
 * when the object holds read and no write and asks for write (it would wait
 * for itself).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: held by others, or the
 * server not reachable in time; with wait 0, held by others); LK_ECONN (a
 * single try that could not be sent); LK_EUNKNOWN (the outcome stayed
 * unknown: a hold it may have taken was given back); LK_EUPGRADE (another
 * object sharing this owner holds read); LK_ELEASELOST (the grant came back
 * after its own local deadline, or a re-entry found earlier holds of either
 * side gone: given back); LK_ETOKEN (fenced: the server's counter went
 * backwards; given back); LK_ENOREPLICAS (replica sync: too few replicas
 * acknowledged the grant in time, or its WAIT went unanswered; given back,
 * docs/replica-sync.md); LK_ECANCELED; the server codes (also a WAIT the
 * server refused: given back). */
LK_EXTERN int lk_rwlock_acquire(lk_rwlock_t *rw, lk_rwlock_side_t side,
                                const lk_rwlock_opts_t *opts, lk_rwlock_cb cb,
                                void *arg);

/* Drops one hold of `side`. Releasing the write side while read holds
 * remain is the downgrade: the lock stays read-locked by this owner.
 * At once: the start codes (LK_EINVAL also for a bad side); LK_ENOTHELD
 * (the object holds none on that side); LK_ELEASELOST (on_lost told the
 * loss: the object starts afresh).
 * Callback: 0 (lk_rwlock_result: 1 = that side's last hold went, 0 = holds
 * remain); LK_ENOTOWNER (the server no longer has this owner's hold on that
 * side); LK_ECONN (not sent: still held); LK_EUNKNOWN (may or may not have
 * applied); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_rwlock_release(lk_rwlock_t *rw, lk_rwlock_side_t side,
                                lk_rwlock_cb cb, void *arg);

/* Deletes the lock whoever holds it, in either mode, and wakes every waiter.
 * lk_rwlock_result() is 1 when a lock was deleted, 0 when there was none.
 * This object's holds are forgotten.
 * At once: the start codes.
 * Callback: 0; LK_EWRONGTYPE (the key is not a hash: left alone); LK_ECONN;
 * LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_rwlock_force_release(lk_rwlock_t *rw, lk_rwlock_cb cb,
                                      void *arg);

/* Server queries; the answer is lk_rwlock_result() inside the callback:
 * mode: 0 free, LK_RW_READ, LK_RW_WRITE; remaining_ttl: ms, -2 no lock, -1 no
 * expiry; server_hold_count: this owner's hold count of `side` on the
 * server.
 * At once: the start codes (server_hold_count: LK_EINVAL also for a bad
 * side).
 * Callback: 0; LK_EPROTOCOL (a reply the query cannot read, e.g. a mode
 * field that is neither read nor write); LK_ECONN; LK_EUNKNOWN (no answer:
 * ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_rwlock_mode(lk_rwlock_t *rw, lk_rwlock_cb cb, void *arg);
LK_EXTERN int lk_rwlock_remaining_ttl(lk_rwlock_t *rw, lk_rwlock_cb cb,
                                      void *arg);
LK_EXTERN int lk_rwlock_server_hold_count(lk_rwlock_t *rw,
                                          lk_rwlock_side_t side,
                                          lk_rwlock_cb cb, void *arg);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED (from the
 * loop, not inside this call). A hold the server may have granted meanwhile
 * is given back. Returns 0 or the entry codes; LK_EINVAL when no acquire is
 * pending (or its callback is already on its way). */
LK_EXTERN int lk_rwlock_cancel(lk_rwlock_t *rw);

/* A pending operation completes with LK_ECANCELED, holds of both sides are
 * released (best effort), then close_cb (may be NULL) runs and the object is
 * freed. Returns 0 or the entry codes (LK_ECLOSED: already closing;
 * LK_EFORKED: in a forked child, where only the memory is freed and no
 * callback runs). */
LK_EXTERN int lk_rwlock_close(lk_rwlock_t *rw, lk_rwlock_close_cb close_cb);

/* Called with LK_ELEASELOST when a watchdog-renewed hold of either side is
 * lost (a renewal found it gone, or its local deadline passed unconfirmed).
 * It comes before any other callback of this object. The object is then
 * LOST as a whole: both sides' holds are given back, nothing is renewed,
 * lk_rwlock_release returns LK_ELEASELOST and the next acquire starts afresh.
 * Set it any time; NULL removes it. Returns 0 or the entry codes. */
LK_EXTERN int lk_rwlock_set_lost_cb(lk_rwlock_t *rw, lk_rwlock_cb on_lost,
                                    void *arg);
/* 1 while this object holds `side` by its own reckoning: at least one hold,
 * not lost, local deadline not passed. No round trip. */
LK_EXTERN int lk_rwlock_is_held(const lk_rwlock_t *rw, lk_rwlock_side_t side);
/* Holds this object has on `side` (local count; no round trip). */
LK_EXTERN uint32_t lk_rwlock_hold_count(const lk_rwlock_t *rw,
                                        lk_rwlock_side_t side);
/* The fencing token of the last fenced acquisition, either side (0 if
 * none). Tokens strictly increase per name across all clients and sides. */
LK_EXTERN int64_t lk_rwlock_token(const lk_rwlock_t *rw);
/* As lk_lock_sync_acked (docs/replica-sync.md). */
LK_EXTERN int lk_rwlock_sync_acked(const lk_rwlock_t *rw);

LK_EXTERN int64_t lk_rwlock_result(const lk_rwlock_t *rw);
/* Server error text of the last failed operation, or "". Borrowed, valid
 * until the next operation starts. */
LK_EXTERN const char *lk_rwlock_error_text(const lk_rwlock_t *rw);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_rwlock_name(const lk_rwlock_t *rw);
/* The owner id "UUID:TID" (the reader field; the writer field adds
 * ":write"). A secret in effect: never log it. Borrowed. */
LK_EXTERN const char *lk_rwlock_owner(const lk_rwlock_t *rw);

/* Acts as the owner client_id:thread_id (NULL client_id = this client's id),
 * e.g. to share an identity between objects or act as a Redisson thread.
 * Only while the object holds nothing and has nothing pending (else
 * LK_EBUSY). Objects sharing an owner rely on the server's hold counts, so
 * an operation whose reply is lost is reported LK_EUNKNOWN, not resent.
 * Returns 0, the entry codes (LK_EINVAL also for a bad client_id, as for
 * lk_lock_set_owner), LK_EBUSY or LK_ENOMEM. */
LK_EXTERN int lk_rwlock_set_owner(lk_rwlock_t *rw, const char *client_id,
                                  uint64_t thread_id);

LK_EXTERN lk_client_t *lk_rwlock_client(const lk_rwlock_t *rw);
LK_EXTERN void *lk_rwlock_get_data(const lk_rwlock_t *rw);
LK_EXTERN void lk_rwlock_set_data(lk_rwlock_t *rw, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_RWLOCK_H */
