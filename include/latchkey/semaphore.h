#ifndef LATCHKEY_SEMAPHORE_H
#define LATCHKEY_SEMAPHORE_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Two semaphores, wire compatible with Redisson (docs/semaphore.md):
 *
 * - lk_semaphore_t, a counting semaphore (Redisson RSemaphore). The server
 *   keeps only the number of available permits, so permits taken by a
 *   process that dies are gone for good: use lk_psem_t when that matters.
 * - lk_psem_t, the permit-expirable semaphore (Redisson
 *   RPermitExpirableSemaphore): every permit has an id and a lease, kept
 *   alive by the watchdog while its holder lives, and comes back when the
 *   lease ends.
 *
 * One object is one holder with at most one operation pending; processes
 * and waiters that compete use separate objects. The object contract
 * (lifecycle, callbacks, close, outcomes) is docs/objects.md. Codes are
 * listed as errno.h explains ("the start codes"...). */

/* The largest permit count: counts are kept exact in Redis's Lua (doubles). */
#define LK_SEMAPHORE_MAX_PERMITS ((int64_t)9007199254740991) /* 2^53 - 1 */

/* ---- counting semaphore ---------------------------------------------------- */

typedef struct lk_semaphore_s lk_semaphore_t;
/* The semaphore as a handle (docs/objects.md, "Handles"), and back (NULL
 * when the handle is not a semaphore's). Its generic verbs below (close,
 * cancel, data, name...) are aliases of lk_handle_'s, kept for one
 * release. */
LK_EXTERN lk_handle_t *lk_semaphore_handle(lk_semaphore_t *semaphore);
LK_EXTERN lk_semaphore_t *lk_handle_as_semaphore(lk_handle_t *handle);

/* status is 0 or a negative LK_ code; lk_semaphore_result() and
 * lk_semaphore_error_text() are readable inside the callback. */
typedef void (*lk_semaphore_cb)(lk_semaphore_t *sem, int status, void *arg);
typedef void (*lk_semaphore_close_cb)(lk_semaphore_t *sem);

typedef struct lk_semaphore_opts_s {
  int64_t permits; /* taken at once, 1..LK_SEMAPHORE_MAX_PERMITS (default 1) */
  int64_t wait_ms; /* 0 = try once (default), -1 = forever, N ms */
  /* Replica sync (docs/replica-sync.md): after the grant, wait for this
   * many replicas to acknowledge it. -1 = the client's sync_replicas
   * (default), 0 = off, N = 1..1000. */
  int sync_replicas;
  /* Spin mode (docs/semaphore.md, "Spin mode"): the wait sleeps a
   * back-off with jitter between tries instead of listening for releases
   * (no SUBSCRIBE). -1 = the client's spin (default), 0 = off, 1 = on. The
   * back-off starts near spin_initial_ms and doubles up to spin_max_ms; 0 =
   * the client's (whose 0 is 1 and 128 ms); each 0..LK_SPIN_MAX_MS. */
  int spin;
  int64_t spin_initial_ms;
  int64_t spin_max_ms;
} lk_semaphore_opts_t;

LK_EXTERN void lk_semaphore_opts_init(lk_semaphore_opts_t *opts);

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. Sends
 * nothing. Returns 0, the entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_semaphore_new(lk_client_t *client, const char *name,
                               lk_semaphore_t **out);

/* Takes opts->permits permits, waiting up to opts->wait_ms for them (opts
 * NULL: one permit, try once). lk_semaphore_result() = permits left
 * available.
 * At once: the start codes (LK_EINVAL also for a count, wait, sync_replicas
 * or spin option out of range, or a count that would make the object hold
 * more than the maximum).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: too few permits, or the
 * server not reachable in time; with wait 0, too few permits); LK_ECONN (a
 * single try that could not be sent); LK_EUNKNOWN (the outcome stayed
 * unknown: permits it may have taken are given back in the background);
 * LK_ENOREPLICAS (replica sync: too few replicas acknowledged the grant in
 * time, or its WAIT went unanswered; given back, docs/replica-sync.md);
 * LK_ECANCELED; the server codes (LK_EREDIS: the value is not a count; a
 * WAIT the server refused: given back). */
LK_EXTERN int lk_semaphore_acquire(lk_semaphore_t *sem,
                                   const lk_semaphore_opts_t *opts,
                                   lk_semaphore_cb cb, void *arg);
/* The same with wait 0: one try; the same codes. */
LK_EXTERN int lk_semaphore_try_acquire(lk_semaphore_t *sem, int64_t permits,
                                       lk_semaphore_cb cb, void *arg);

/* Gives back permits this object holds. lk_semaphore_result() = permits
 * available after. A resend after a lost reply is applied at most once.
 * At once: the start codes (LK_EINVAL also for a count out of range);
 * LK_ENOTHELD (the object holds fewer).
 * Callback: 0; LK_EINVAL (the count would pass LK_SEMAPHORE_MAX_PERMITS:
 * nothing changed); LK_ECONN (not sent: still held); LK_EUNKNOWN (the
 * permits are no longer the object's; the release is finished in the
 * background, at most once); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_semaphore_release(lk_semaphore_t *sem, int64_t permits,
                                   lk_semaphore_cb cb, void *arg);
/* Redisson's release without acquire: adds permits this object does not
 * hold (JDK semantics; it raises the total). Idempotent like release, with
 * release's codes but for LK_ENOTHELD. */
LK_EXTERN int lk_semaphore_release_unheld(lk_semaphore_t *sem, int64_t permits,
                                          lk_semaphore_cb cb, void *arg);

/* Sets the number of permits when the semaphore does not exist yet:
 * lk_semaphore_result() 1 set, 0 it existed (unchanged). 0..MAX.
 * At once: the start codes (LK_EINVAL also for a count out of range).
 * Callback: 0; LK_ECONN; LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_semaphore_try_set_permits(lk_semaphore_t *sem, int64_t permits,
                                           lk_semaphore_cb cb, void *arg);
/* Adds delta permits (may be negative, as in Redisson); result = the new
 * count.
 * At once: the start codes (LK_EINVAL also for a delta out of range).
 * Callback: 0; LK_EINVAL (the count would pass +-LK_SEMAPHORE_MAX_PERMITS:
 * nothing changed); LK_ECONN; LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_semaphore_add_permits(lk_semaphore_t *sem, int64_t delta,
                                       lk_semaphore_cb cb, void *arg);
/* result = permits available now (0 when the semaphore does not exist).
 * At once: the start codes.
 * Callback: 0; LK_EPROTOCOL (the key holds no integer); LK_ECONN;
 * LK_EUNKNOWN (no answer: ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_semaphore_available(lk_semaphore_t *sem, lk_semaphore_cb cb,
                                     void *arg);
/* Takes every available permit; result = how many (they count as held by
 * this object, as if acquired). A resend after a lost reply is applied at
 * most once and reports what the first attempt took.
 * At once: the start codes.
 * Callback: 0; LK_ECONN (not sent: nothing taken); LK_EUNKNOWN (the object
 * holds none of it; whatever it took is given back in the background);
 * LK_ECANCELED (a close: the same); the server codes (LK_EREDIS: the value
 * is not a count). */
LK_EXTERN int lk_semaphore_drain(lk_semaphore_t *sem, lk_semaphore_cb cb,
                                 void *arg);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED (from the
 * loop). Permits the server may have granted meanwhile are given back.
 * Returns 0 or the entry codes; LK_EINVAL when no acquire is pending (or its
 * callback is already on its way). */
LK_EXTERN int lk_semaphore_cancel(lk_semaphore_t *sem);
/* A pending operation completes with LK_ECANCELED, held permits are given
 * back (best effort), then close_cb (may be NULL) runs and the object is
 * freed. Returns 0 or the entry codes (LK_ECLOSED: already closing;
 * LK_EFORKED: in a forked child, where only the memory is freed and no
 * callback runs). */
LK_EXTERN int lk_semaphore_close(lk_semaphore_t *sem,
                                 lk_semaphore_close_cb close_cb);

/* Permits this object holds (local; no round trip). */
LK_EXTERN int64_t lk_semaphore_held(const lk_semaphore_t *sem);
LK_EXTERN int64_t lk_semaphore_result(const lk_semaphore_t *sem);
/* As lk_lock_sync_acked (docs/replica-sync.md). */
LK_EXTERN int lk_semaphore_sync_acked(const lk_semaphore_t *sem);
/* Server error text of the last failed operation, or "". Borrowed, valid
 * until the next operation starts. */
LK_EXTERN const char *lk_semaphore_error_text(const lk_semaphore_t *sem);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_semaphore_name(const lk_semaphore_t *sem);
LK_EXTERN lk_client_t *lk_semaphore_client(const lk_semaphore_t *sem);
LK_EXTERN void *lk_semaphore_get_data(const lk_semaphore_t *sem);
LK_EXTERN void lk_semaphore_set_data(lk_semaphore_t *sem, void *data);

/* ---- permit-expirable semaphore -------------------------------------------- */

typedef struct lk_psem_s lk_psem_t;
/* The permit semaphore as a handle (docs/objects.md, "Handles"), and back
 * (NULL when the handle is not a permit semaphore's). Its generic verbs
 * below (close, cancel, data, name...) are aliases of lk_handle_'s, kept for
 * one release. */
LK_EXTERN lk_handle_t *lk_psem_handle(lk_psem_t *psem);
LK_EXTERN lk_psem_t *lk_handle_as_psem(lk_handle_t *handle);

typedef void (*lk_psem_cb)(lk_psem_t *ps, int status, void *arg);
typedef void (*lk_psem_close_cb)(lk_psem_t *ps);

/* Permits taken by one acquire, at most. */
#define LK_PSEM_MAX_ACQUIRE 1000
/* A permit id as text: 32 lower-case hex characters (Redisson's form). */
#define LK_PSEM_ID_LEN 32

typedef struct lk_psem_opts_s {
  int64_t permits;  /* taken at once, 1..LK_PSEM_MAX_ACQUIRE (default 1) */
  int64_t wait_ms;  /* 0 = try once (default), -1 = forever, N ms */
  int64_t lease_ms; /* -1 = the client's default lease, renewed by the
                       watchdog while this object lives (default); N ms =
                       fixed, not renewed */
  /* Replica sync (docs/replica-sync.md): after the grant, wait for this
   * many replicas to acknowledge it. -1 = the client's sync_replicas
   * (default), 0 = off, N = 1..1000. */
  int sync_replicas;
  /* Spin mode (docs/semaphore.md, "Spin mode"): the wait sleeps a
   * back-off with jitter between tries instead of listening for releases
   * (no SUBSCRIBE). -1 = the client's spin (default), 0 = off, 1 = on. The
   * back-off starts near spin_initial_ms and doubles up to spin_max_ms; 0 =
   * the client's (whose 0 is 1 and 128 ms); each 0..LK_SPIN_MAX_MS. */
  int spin;
  int64_t spin_initial_ms;
  int64_t spin_max_ms;
} lk_psem_opts_t;

LK_EXTERN void lk_psem_opts_init(lk_psem_opts_t *opts);

/* As lk_semaphore_new: 0, the entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_psem_new(lk_client_t *client, const char *name, lk_psem_t **out);

/* Takes opts->permits permits, each with its own id and lease. The new ids
 * are the last lk_psem_result() entries of lk_psem_permit_id();
 * lk_psem_result() = how many were taken.
 * At once: the start codes (LK_EINVAL also for a count, wait, lease,
 * sync_replicas or spin option out of range), or the OS's code when no
 * random ids can be
 * drawn.
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: too few permits, or the
 * server not reachable in time; with wait 0, too few permits); LK_ECONN (a
 * single try that could not be sent); LK_EUNKNOWN (the outcome stayed
 * unknown: ids it may have taken are given back in the background);
 * LK_ENOMEM (taken, but no memory to track them: given back);
 * LK_ENOREPLICAS (replica sync: too few replicas acknowledged the grant in
 * time, or its WAIT went unanswered; given back, docs/replica-sync.md);
 * LK_ECANCELED; the server codes (also a WAIT the server refused: given
 * back). */
LK_EXTERN int lk_psem_acquire(lk_psem_t *ps, const lk_psem_opts_t *opts,
                              lk_psem_cb cb, void *arg);

/* Gives back one permit of this object's by id (LK_PSEM_ID_LEN hex
 * characters), or every permit it holds (id NULL); result = permits
 * released by this call. A resend never adds a permit twice.
 * At once: the start codes (LK_EINVAL also for a malformed id);
 * LK_ENOTHELD (the object does not hold that id, or holds nothing).
 * Callback: 0; LK_ELEASELOST (a lease had ended first: that permit came
 * back through its expiry, not twice); LK_ECONN (not sent: still held);
 * LK_EUNKNOWN (the permits are no longer the object's; the release is
 * finished in the background); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_psem_release(lk_psem_t *ps, const char *id, lk_psem_cb cb,
                              void *arg);
/* Gives back any permit by id, also one taken by another object, process
 * or Redisson client.
 * At once: the start codes (LK_EINVAL also for a NULL or malformed id).
 * Callback: 0 (result 1); LK_ENOTHELD (no such permit is held: released or
 * expired already); then as lk_psem_release (LK_ELEASELOST for one of this
 * object's own permits whose lease had ended, LK_ECONN, LK_EUNKNOWN,
 * LK_ECANCELED, the server codes). */
LK_EXTERN int lk_psem_release_id(lk_psem_t *ps, const char *id, lk_psem_cb cb,
                                 void *arg);
/* Sets a new lease on one of this object's permits (or all, id NULL):
 * lease_ms N = fixed from now, -1 = the default lease renewed by the
 * watchdog.
 * At once: the start codes (LK_EINVAL also for a lease out of range or a
 * malformed id); LK_ENOTHELD as for lk_psem_release.
 * Callback: 0; LK_ELEASELOST (a permit's lease had ended: it is dropped, the
 * others are updated); LK_ECONN; LK_EUNKNOWN (the permits keep their old
 * terms); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_psem_update_lease(lk_psem_t *ps, const char *id,
                                   int64_t lease_ms, lk_psem_cb cb, void *arg);

/* Sets the number of permits when the semaphore does not exist yet: result
 * 1 set, 0 it existed. 0..MAX. Codes as lk_semaphore_try_set_permits. */
LK_EXTERN int lk_psem_try_set_permits(lk_psem_t *ps, int64_t permits,
                                      lk_psem_cb cb, void *arg);
/* Adds delta available permits (may be negative); result = the new count.
 * Codes as lk_semaphore_add_permits. */
LK_EXTERN int lk_psem_add_permits(lk_psem_t *ps, int64_t delta, lk_psem_cb cb,
                                  void *arg);
/* result = permits available / permits acquired (leases not ended), after
 * expired permits are reclaimed.
 * At once: the start codes.
 * Callback: 0; LK_EPROTOCOL (a reply the query cannot read); LK_ECONN;
 * LK_EUNKNOWN (no answer: ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_psem_available(lk_psem_t *ps, lk_psem_cb cb, void *arg);
LK_EXTERN int lk_psem_acquired(lk_psem_t *ps, lk_psem_cb cb, void *arg);

/* Cancels the pending acquire, as lk_semaphore_cancel (same codes); ids the
 * server may have granted meanwhile are given back. */
LK_EXTERN int lk_psem_cancel(lk_psem_t *ps);
/* A pending operation completes with LK_ECANCELED, renewal stops, held
 * permits are given back (best effort), then close_cb and the free. Codes
 * as lk_semaphore_close. */
LK_EXTERN int lk_psem_close(lk_psem_t *ps, lk_psem_close_cb close_cb);

/* Called with LK_ELEASELOST when watchdog-renewed permits are lost: a
 * renewal found one gone, or the local deadline (last confirmed renewal +
 * lease - drift) passed unconfirmed. Those permits leave the object (what
 * the server still has of them is given back) before any other callback of
 * the object. NULL removes it. Returns 0 or the entry codes. */
LK_EXTERN int lk_psem_set_lost_cb(lk_psem_t *ps, lk_psem_cb on_lost, void *arg);

/* Permits this object holds, and their ids (NUL-terminated hex, borrowed
 * until the object's permits change: an acquire, release, update, loss or
 * close). No round trip. */
LK_EXTERN size_t lk_psem_permit_count(const lk_psem_t *ps);
LK_EXTERN const char *lk_psem_permit_id(const lk_psem_t *ps, size_t i);
/* 1 while the object holds a permit whose local deadline has not passed. */
LK_EXTERN int lk_psem_is_held(const lk_psem_t *ps);

LK_EXTERN int64_t lk_psem_result(const lk_psem_t *ps);
/* As lk_lock_sync_acked (docs/replica-sync.md). */
LK_EXTERN int lk_psem_sync_acked(const lk_psem_t *ps);
LK_EXTERN const char *lk_psem_error_text(const lk_psem_t *ps);
LK_EXTERN const char *lk_psem_name(const lk_psem_t *ps);
LK_EXTERN lk_client_t *lk_psem_client(const lk_psem_t *ps);
LK_EXTERN void *lk_psem_get_data(const lk_psem_t *ps);
LK_EXTERN void lk_psem_set_data(lk_psem_t *ps, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_SEMAPHORE_H */
