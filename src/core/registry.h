#ifndef LK_CORE_REGISTRY_H
#define LK_CORE_REGISTRY_H

/* Owner descriptions (docs/owners.md): the client's hooks. Nothing happens
 * unless the client was made with describe_owner. */

#include "core/internal.h"
#include "core/watchdog.h"

typedef struct lk__registry_s lk__registry_t;

/* From lk_client_new, once the connection is starting: writes the
 * description (queued until the connection is ready) and starts its
 * timer, a handle of the client's (handles_open). Out of memory: logged,
 * the client works without it. */
void lk__registry_start(lk_client_t *c);
/* From the start of the client's close: deletes the key (the drain waits
 * for it) and closes the timer. */
void lk__registry_close(lk_client_t *c);
/* Memory only (also in a forked child). */
void lk__registry_free(lk_client_t *c);

#endif /* LK_CORE_REGISTRY_H */
