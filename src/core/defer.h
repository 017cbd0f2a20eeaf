/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#ifndef LK_CORE_DEFER_H
#define LK_CORE_DEFER_H

#include "core/queue.h"

/* Work run from the loop rather than inside an lk_ call: completions that are
 * known at call time still reach the user only after the call returned. The
 * node is embedded in its owner; queueing twice is a no-op. */
typedef struct lk__defer_s lk__defer_t;
typedef void (*lk__defer_fn)(lk__defer_t *d);
struct lk__defer_s {
  lk__queue_t node;
  lk__defer_fn fn;
};

struct lk_client_s;
void lk__defer_init(lk__defer_t *d, lk__defer_fn fn);
void lk__defer(struct lk_client_s *c, lk__defer_t *d);
void lk__defer_cancel(lk__defer_t *d);
/* Runs the work deferred so far (not what it defers in turn: that waits for
 * the next pass). For the client's idle callback. */
void lk__defer_run(struct lk_client_s *c);
/* Whether busy polling keeps the idle handle running (core/defer.c). */
int lk__busy_polling(const struct lk_client_s *c);

#endif /* LK_CORE_DEFER_H */
