#ifndef LK_CORE_URL_H
#define LK_CORE_URL_H

#include "latchkey.h"

/* Parses url (the forms of lk_client_opts_t.url, docs/client.md
 * "Connection URL") into the fields of *o it names. The strings it sets
 * point into *storage, allocated here, which the caller frees with lk__free
 * once they are copied (also on failure). Returns 0, LK_EINVAL (not one of
 * the forms) or LK_ENOMEM. */
int lk__url_apply(lk_client_opts_t *o, const char *url, char **storage);

#endif
