#ifndef LATCHKEY_RATELIMITER_H
#define LATCHKEY_RATELIMITER_H

#include "client.h"
#include "handle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A rate limiter, wire compatible with Redisson's RRateLimiter
 * (docs/ratelimiter.md): at most `rate` permits are granted in any sliding
 * window of `interval_ms`, to every client together (OVERALL) or to each
 * client on its own (PER_CLIENT). A Java service using Redisson and a C
 * service using latchkey share one limiter by name.
 *
 * Granted permits are spent, not held: nothing is given back, on close or
 * ever; they leave the window when it slides past them. One object has at
 * most one operation pending; the object contract (lifecycle, callbacks,
 * close, outcomes) is docs/objects.md. Codes are listed as errno.h explains
 * ("the start codes"...). */
typedef struct lk_ratelimiter_s lk_ratelimiter_t;
/* The rate limiter as a handle (docs/objects.md, "Handles"), and back (NULL
 * when the handle is not a rate limiter's). Its generic verbs below (close,
 * cancel, data, name...) are aliases of lk_handle_'s, kept for one
 * release. */
LK_EXTERN lk_handle_t *lk_ratelimiter_handle(lk_ratelimiter_t *ratelimiter);
LK_EXTERN lk_ratelimiter_t *lk_handle_as_ratelimiter(lk_handle_t *handle);

typedef void (*lk_ratelimiter_cb)(lk_ratelimiter_t *rl, int status, void *arg);
typedef void (*lk_ratelimiter_close_cb)(lk_ratelimiter_t *rl);

/* Redisson's RateType, by its ordinal (what the config hash stores). */
typedef enum {
  LK_RATE_OVERALL = 0,   /* one budget shared by every client */
  LK_RATE_PER_CLIENT = 1 /* one budget per client (per lk_client_t: its id) */
} lk_rate_type_t;

/* The largest rate: counts stay exact in Redis's Lua numbers (doubles). */
#define LK_RATELIMITER_MAX_RATE ((int64_t)9007199254740991) /* 2^53 - 1 */
/* The most permits one acquire takes: Redisson records each grant's count
 * in 4 bytes. */
#define LK_RATELIMITER_MAX_PERMITS ((int64_t)4294967295) /* 2^32 - 1 */

/* A limiter's configuration (Redisson's config hash). */
typedef struct lk_ratelimiter_config_s {
  lk_rate_type_t type;   /* default LK_RATE_OVERALL */
  int64_t rate;          /* permits per interval, 1..LK_RATELIMITER_MAX_RATE */
  int64_t interval_ms;   /* the window, 1..LK_MAX_TIME_MS */
  /* 0 = the limiter's keys never expire (default); else, as Redisson's
   * keepAliveTime, interval_ms..LK_MAX_TIME_MS: every key of the limiter
   * expires this long after its last acquire. */
  int64_t keep_alive_ms;
} lk_ratelimiter_config_t;

/* Every field to its default; rate and interval_ms are 0 and must be set. */
LK_EXTERN void lk_ratelimiter_config_init(lk_ratelimiter_config_t *cfg);

typedef struct lk_ratelimiter_opts_s {
  int64_t permits; /* taken at once, 1..LK_RATELIMITER_MAX_PERMITS (default 1) */
  int64_t wait_ms; /* 0 = try once (default), -1 = forever, N ms */
} lk_ratelimiter_opts_t;

LK_EXTERN void lk_ratelimiter_opts_init(lk_ratelimiter_opts_t *opts);

/* name is copied; binary-safe except NUL; 1..max_name_len bytes. Sends
 * nothing. Returns 0, the entry codes, LK_ENAMETOOLONG or LK_ENOMEM. */
LK_EXTERN int lk_ratelimiter_new(lk_client_t *client, const char *name,
                                 lk_ratelimiter_t **out);

/* Redisson's trySetRate: sets the configuration only when none is set.
 * lk_ratelimiter_result(): 1 set by this call, 0 one was set (unchanged).
 * At once: the start codes (LK_EINVAL also for a type, rate, interval or
 * keep-alive out of range, or cfg NULL).
 * Callback: 0; LK_ECONN; LK_EUNKNOWN (may or may not have applied: read it
 * back with lk_ratelimiter_get_config); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_ratelimiter_try_set_rate(lk_ratelimiter_t *rl,
                                          const lk_ratelimiter_config_t *cfg,
                                          lk_ratelimiter_cb cb, void *arg);
/* Redisson's setRate: overwrites the configuration and, as Redisson does,
 * starts the window afresh (for PER_CLIENT: this client's window only).
 * result 1. Codes as lk_ratelimiter_try_set_rate. */
LK_EXTERN int lk_ratelimiter_set_rate(lk_ratelimiter_t *rl,
                                      const lk_ratelimiter_config_t *cfg,
                                      lk_ratelimiter_cb cb, void *arg);

/* Takes opts->permits permits (opts NULL: one, try once). When the window
 * has too few, the server says how long until its oldest grant leaves it;
 * the object waits that long (at most the client's max_repoll_ms, and never
 * past its budget) and tries again.
 * After success: lk_ratelimiter_result() = permits left in the window, and
 * lk_ratelimiter_grant_time_ms() = the server's time of the grant.
 * After LK_ETIMEDOUT: lk_ratelimiter_result() = the server's last estimate
 * of the wait in ms (-1 when it gave none).
 * At once: the start codes (LK_EINVAL also for a count or wait out of
 * range).
 * Callback: 0; LK_ETIMEDOUT (the budget ran out: too few permits, or the
 * server not reachable in time; with wait 0, too few permits now);
 * LK_EINVAL (more permits than the rate, refused at once, or no rate set:
 * lk_ratelimiter_error_text() says which); LK_ECONN (a single try that
 * could not be sent); LK_EUNKNOWN (the outcome stayed unknown: the permits
 * may have been spent); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_ratelimiter_acquire(lk_ratelimiter_t *rl,
                                     const lk_ratelimiter_opts_t *opts,
                                     lk_ratelimiter_cb cb, void *arg);
/* The same with wait 0: one try; the same codes. */
LK_EXTERN int lk_ratelimiter_try_acquire(lk_ratelimiter_t *rl, int64_t permits,
                                         lk_ratelimiter_cb cb, void *arg);

/* Redisson's availablePermits: result = permits left in the window now (for
 * PER_CLIENT, this client's).
 * At once: the start codes.
 * Callback: 0; LK_EINVAL (no rate set); LK_ECONN; LK_EUNKNOWN (no answer:
 * ask again); LK_ECANCELED; the server codes. */
LK_EXTERN int lk_ratelimiter_available(lk_ratelimiter_t *rl, lk_ratelimiter_cb cb,
                                       void *arg);
/* Redisson's getConfig: reads the configuration; result 1 and
 * lk_ratelimiter_config() fills it, or result 0 when none is set.
 * Callback: 0; LK_EPROTOCOL (the hash is not a limiter's); LK_ECONN;
 * LK_EUNKNOWN; LK_ECANCELED; the server codes. */
LK_EXTERN int lk_ratelimiter_get_config(lk_ratelimiter_t *rl, lk_ratelimiter_cb cb,
                                        void *arg);
/* The configuration the last lk_ratelimiter_get_config read. */
LK_EXTERN void lk_ratelimiter_config(const lk_ratelimiter_t *rl,
                                     lk_ratelimiter_config_t *out);

/* Cancels the pending acquire: its callback runs with LK_ECANCELED (from
 * the loop). A grant the server may make meanwhile stays spent. Returns 0
 * or the entry codes; LK_EINVAL when no acquire is pending (or its callback
 * is already on its way). */
LK_EXTERN int lk_ratelimiter_cancel(lk_ratelimiter_t *rl);
/* A pending operation completes with LK_ECANCELED, then close_cb (may be
 * NULL) runs and the object is freed. Nothing is given back. Returns 0 or
 * the entry codes (LK_ECLOSED: already closing; LK_EFORKED: in a forked
 * child, where only the memory is freed and no callback runs). */
LK_EXTERN int lk_ratelimiter_close(lk_ratelimiter_t *rl,
                                   lk_ratelimiter_close_cb close_cb);

LK_EXTERN int64_t lk_ratelimiter_result(const lk_ratelimiter_t *rl);
/* The server's time (ms since the epoch) of the last grant, 0 before one. */
LK_EXTERN int64_t lk_ratelimiter_grant_time_ms(const lk_ratelimiter_t *rl);
LK_EXTERN const char *lk_ratelimiter_error_text(const lk_ratelimiter_t *rl);
LK_EXTERN const char *lk_ratelimiter_name(const lk_ratelimiter_t *rl);
LK_EXTERN lk_client_t *lk_ratelimiter_client(const lk_ratelimiter_t *rl);
LK_EXTERN void *lk_ratelimiter_get_data(const lk_ratelimiter_t *rl);
LK_EXTERN void lk_ratelimiter_set_data(lk_ratelimiter_t *rl, void *data);

#ifdef __cplusplus
}
#endif
#endif /* LATCHKEY_RATELIMITER_H */
