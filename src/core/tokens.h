#ifndef LK_CORE_TOKENS_H
#define LK_CORE_TOKENS_H

#include "core/internal.h"

/* The highest fencing token this client has seen per name, so a counter that
 * went backwards (a restart without persistence) is caught instead of handed
 * out. One small record per fenced name, freed with the client. */
int64_t lk__token_highest(const lk_client_t *c, const char *name, size_t len);
int lk__token_seen(lk_client_t *c, const char *name, size_t len, int64_t token);
void lk__tokens_free(lk_client_t *c);

#endif /* LK_CORE_TOKENS_H */
