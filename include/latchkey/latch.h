#ifndef LATCHKEY_LATCH_H
#define LATCHKEY_LATCH_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A countdown latch, wire compatible with Redisson's RCountDownLatch: the
 * string NAME holds the remaining count, and an absent key means "open".
 * One object has at most one operation pending; concurrent awaiters in one
 * process use separate objects. docs/latch.md; the object contract
 * (lifecycle, callbacks, close, outcomes) is docs/objects.md. Codes are
 * listed as errno.h explains ("the start codes"...). */
typedef struct lk_latch_s lk_latch_t;
/* The latch as a handle (docs/objects.md, "Handles"), and back (NULL when
 * the handle is not a latch's). Its generic verbs below (close, cancel,
 * data, name...) are aliases of lk_handle_'s, kept for one release. */
LK_EXTERN lk_handle_t *lk_latch_handle(lk_latch_t *latch);
LK_EXTERN lk_latch_t *lk_handle_as_latch(lk_handle_t *handle);

/* status is 0 or a negative LK_ code. lk_latch_result and
 * lk_latch_error_text are readable inside the callback. */
typedef void (*lk_latch_cb)(lk_latch_t *latch, int status, void *arg);
typedef void (*lk_latch_close_cb)(lk_latch_t *latch);

/* The largest count accepted: counts stay exact in the Lua scripts' numbers
 * (doubles) below 2^53. */
#define LK_LATCH_MAX_COUNT ((int64_t)9007199254740991) /* 2^53 - 1 */

/* Default life of the strict mode's "opened" marker: longer than any bounded
 * await (LK_MAX_TIME_MS) plus a day. */
#define LK_LATCH_MARKER_TTL_DEFAULT (LK_MAX_TIME_MS + (int64_t)24 * 3600 * 1000)

typedef struct lk_latch_opts_s {
  /* 0 (default), interop mode: an absent key means "open", exactly as in
   * Redisson. 1, strict mode: a count_down that opens the latch also leaves
   * a private "opened" marker, and an absent key without that marker
   * (server restarted without persistence, eviction, a foreign DEL) gives
   * LK_ELATCHLOST instead of "open". Sound only when every object counting
   * down and arming this latch is a strict latchkey object. */
  int strict;
  /* strict mode: how long the "opened" marker lives, in ms
   * (1..LK_LATCH_MARKER_TTL_DEFAULT, default LK_LATCH_MARKER_TTL_DEFAULT).
   * An await that has not looked at the latch for longer than this after it
   * opened gets LK_ELATCHLOST. */
  int64_t marker_ttl_ms;
} lk_latch_opts_t;

LK_EXTERN void lk_latch_opts_init(lk_latch_opts_t *opts);

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. opts may be
 * NULL (interop mode) and is read during the call only. Sends nothing.
 * Returns 0, the entry codes (LK_EINVAL also for a marker_ttl_ms out of
 * range), LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_latch_new(lk_client_t *client, const char *name,
                           const lk_latch_opts_t *opts, lk_latch_t **out);

/* Arms the latch with count (1..LK_LATCH_MAX_COUNT) if it is not armed.
 * lk_latch_result(): 1 armed by this call, 0 already armed (left as it was).
 * Applied at most once even when resent after a lost reply.
 * At once: the start codes (LK_EINVAL also for a count out of range).
 * Callback: 0; LK_EWRONGTYPE (the name holds something else: left alone);
 * LK_ECONN (not sent); LK_EUNKNOWN (may or may not have applied);
 * LK_ECANCELED; the server codes. */
LK_EXTERN int lk_latch_try_set_count(lk_latch_t *latch, int64_t count,
                                     lk_latch_cb cb, void *arg);

/* Counts down by one, applied at most once even when resent after a lost
 * reply. lk_latch_result(): the count left (> 0), 0 when this call opened
 * the latch, -1 when it was open already (nothing counted).
 * At once: the start codes.
 * Callback: 0; LK_ELATCHLOST (strict mode: neither armed nor marked
 * opened); LK_EDELETED (strict mode: deleted by lk_latch_delete);
 * LK_EWRONGTYPE (the name holds something other than a count: left alone);
 * LK_ECONN (not sent); LK_EUNKNOWN (may or may not have applied);
 * LK_ECANCELED (a count_down already sent may still apply); the server
 * codes. */
LK_EXTERN int lk_latch_count_down(lk_latch_t *latch, lk_latch_cb cb, void *arg);

/* lk_latch_result(): the current count, 0 when open.
 * At once: the start codes.
 * Callback: 0; LK_ELATCHLOST (strict mode: an absent key without the
 * "opened" marker); LK_EDELETED (strict mode: deleted by lk_latch_delete);
 * LK_EWRONGTYPE; LK_EPROTOCOL (a reply the read cannot parse); LK_ECONN (no
 * answer, a lost reply included: a read changes nothing); LK_ECANCELED; the
 * server codes. */
LK_EXTERN int lk_latch_get_count(lk_latch_t *latch, lk_latch_cb cb, void *arg);

/* Completes with 0 once the latch is open: at once if it is open now.
 * wait_ms: 0 = look once, -1 = forever, else 1..LK_MAX_TIME_MS. Every wait
 * is re-polled at least every max_repoll_ms, so a lost notification costs
 * one interval, never the wait.
 * At once: the start codes (LK_EINVAL also for a wait out of range).
 * Callback: 0; LK_ETIMEDOUT (still armed when the budget ran out, or the
 * server not reachable in time); LK_EDELETED (lk_latch_delete removed the
 * latch while this object waited on it); LK_ELATCHLOST (strict mode);
 * LK_EWRONGTYPE; LK_EPROTOCOL (a reply the read cannot parse); LK_ECONN (a
 * single look that got no answer); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_latch_await(lk_latch_t *latch, int64_t wait_ms,
                             lk_latch_cb cb, void *arg);

/* Cancels the pending await: its callback runs with LK_ECANCELED (from the
 * loop, not inside this call). Returns 0 or the entry codes; LK_EINVAL when
 * no await is pending (or its callback is already on its way). */
LK_EXTERN int lk_latch_cancel(lk_latch_t *latch);

/* Deletes the latch (and its strict-mode marker) and tells Redisson clients
 * ("1" on the channel). latchkey awaiters that saw it armed complete with
 * LK_EDELETED instead of "open". lk_latch_result(): 1 something was
 * deleted, 0 there was nothing.
 * At once: the start codes.
 * Callback: 0; LK_EWRONGTYPE (another kind of key: left alone); LK_ECONN;
 * LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_latch_delete(lk_latch_t *latch, lk_latch_cb cb, void *arg);

/* A pending operation completes with LK_ECANCELED (a count_down in flight
 * may still apply), then close_cb (may be NULL) runs and the object is
 * freed. Returns 0 or the entry codes (LK_ECLOSED: already closing;
 * LK_EFORKED: in a forked child, where only the memory is freed and no
 * callback runs). */
LK_EXTERN int lk_latch_close(lk_latch_t *latch, lk_latch_close_cb close_cb);

LK_EXTERN int64_t lk_latch_result(const lk_latch_t *latch);
/* Server error text of the last failed operation, or "". Borrowed, valid
 * until the next operation starts. */
LK_EXTERN const char *lk_latch_error_text(const lk_latch_t *latch);
/* The name as given; borrowed for the object's life. */
LK_EXTERN const char *lk_latch_name(const lk_latch_t *latch);
LK_EXTERN int lk_latch_is_strict(const lk_latch_t *latch);
LK_EXTERN lk_client_t *lk_latch_client(const lk_latch_t *latch);
LK_EXTERN void *lk_latch_get_data(const lk_latch_t *latch);
LK_EXTERN void lk_latch_set_data(lk_latch_t *latch, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_LATCH_H */
