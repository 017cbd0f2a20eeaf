#ifndef LK_CORE_TOKENS_H
#define LK_CORE_TOKENS_H

#include "core/internal.h"

/* The highest fencing token this client has seen per name. The acquire
 * scripts get one above it as their floor: a counter found below it (it went
 * backwards while present: set back by hand, an old backup restored) is
 * lifted and the grant refused (LK_ETOKEN), and a missing counter is seeded
 * no lower than it (a restart without persistence seeds from the server's
 * clock; docs/lock.md, "Fencing tokens"). One small record per fenced name,
 * freed with the client. */
int64_t lk__token_highest(const lk_client_t *c, const char *name, size_t len);
int lk__token_seen(lk_client_t *c, const char *name, size_t len, int64_t token);
void lk__tokens_free(lk_client_t *c);

#endif /* LK_CORE_TOKENS_H */
