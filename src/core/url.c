/* Connection URLs: placeholder until the parser lands; every URL is
 * refused. */
#include "core/url.h"

int lk__url_apply(lk_client_opts_t *o, const char *url, char **storage) {
  (void)o;
  (void)url;
  *storage = NULL;
  return LK_EINVAL;
}
