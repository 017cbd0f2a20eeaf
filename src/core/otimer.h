/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#ifndef LK_CORE_OTIMER_H
#define LK_CORE_OTIMER_H

/* A timer an object keeps that may fire and close after the object is gone
 * (the object does not wait for its close callback): made on first use,
 * freed by its own close callback. Leader election's observer and a lease
 * its object renews itself (core/watchdog.h, lk__wd_own_t) keep one. */

#include <uv.h>

#include "core/internal.h"

typedef struct lk__otimer_s lk__otimer_t;
typedef void (*lk__otimer_fn)(void *owner);

/* Makes *t on first use, for owner: 0 or LK_ENOMEM. */
int lk__otimer_want(lk__otimer_t **t, uv_loop_t *loop, void *owner);
/* Runs fn(owner) after ms, then every repeat_ms (0: once), counted from
 * the real now. Nothing when *t was never made. */
void lk__otimer_start(lk__otimer_t *t, lk__otimer_fn fn, uint64_t ms, uint64_t repeat_ms);
void lk__otimer_stop(lk__otimer_t *t);
int lk__otimer_active(const lk__otimer_t *t);
/* The owner closes: fn is not run any more, and the timer frees itself
 * once closed. *t becomes NULL. */
void lk__otimer_close(lk__otimer_t **t);
/* The owner is freed without a close (a forked child): the timer too. */
void lk__otimer_free(lk__otimer_t **t);

#endif /* LK_CORE_OTIMER_H */
