/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Key naming shared by every primitive (Redisson's prefixName rule, kept for
 * wire compatibility and so that all of an object's keys share a slot). */
#include <string.h>

#include "core/internal.h"

static size_t prefix_name_len(const char *prefix, const char *name, size_t name_len,
                              int *braced) {
  *braced = memchr(name, '{', name_len) != NULL;
  return strlen(prefix) + 1 + name_len + (*braced ? 0 : 2);
}

/* Writes prefix:{NAME} (or prefix:NAME) and a NUL into k. */
static void prefix_name_write(char *k, const char *prefix, const char *name, size_t name_len,
                              int braced) {
  size_t pl = strlen(prefix);
  char *p = k;
  memcpy(p, prefix, pl), p += pl;
  *p++ = ':';
  if (!braced)
    *p++ = '{';
  memcpy(p, name, name_len), p += name_len;
  if (!braced)
    *p++ = '}';
  *p = '\0';
}

char *lk__prefix_name(const char *prefix, const char *name, size_t name_len,
                      size_t *out_len) {
  int braced;
  size_t n = prefix_name_len(prefix, name, name_len, &braced);
  char *k = lk__malloc(n + 1);
  if (k == NULL)
    return NULL;
  prefix_name_write(k, prefix, name, name_len, braced);
  *out_len = n;
  return k;
}

const char *lk__scratch_prefix_name(lk_client_t *c, const char *prefix, const char *name,
                                    size_t name_len, size_t *out_len) {
  int braced;
  size_t n = prefix_name_len(prefix, name, name_len, &braced);
  if (n + 1 > c->scratch_cap) {
    /* Grows to the longest name used, then stays: no allocation after. */
    char *k = lk__realloc(c->scratch, n + 1);
    if (k == NULL)
      return NULL;
    c->scratch = k;
    c->scratch_cap = n + 1;
  }
  prefix_name_write(c->scratch, prefix, name, name_len, braced);
  *out_len = n;
  return c->scratch;
}

char *lk__braced_name(const char *prefix, const char *name, size_t name_len, size_t *out_len) {
  size_t pl = strlen(prefix), n = pl + name_len + 2;
  char *k = lk__malloc(n + 1);
  if (k == NULL)
    return NULL;
  memcpy(k, prefix, pl);
  k[pl] = '{';
  memcpy(k + pl + 1, name, name_len);
  k[n - 1] = '}';
  k[n] = '\0';
  *out_len = n;
  return k;
}

char *lk__suffix_name(const char *name, size_t name_len, const char *suffix,
                      size_t *out_len) {
  size_t sl = strlen(suffix);
  int braced = memchr(name, '{', name_len) != NULL;
  size_t n = name_len + (braced ? 0 : 2) + 1 + sl;
  char *k = lk__malloc(n + 1), *p = k;
  if (k == NULL)
    return NULL;
  if (!braced)
    *p++ = '{';
  memcpy(p, name, name_len), p += name_len;
  if (!braced)
    *p++ = '}';
  *p++ = ':';
  memcpy(p, suffix, sl), p += sl;
  *p = '\0';
  *out_len = n;
  return k;
}

int lk__check_name(const lk_client_t *c, const char *name, size_t *len) {
  size_t n;
  if (name == NULL)
    return LK_EINVAL;
  /* Bounded scan: a huge name is refused without reading all of it. */
  n = strnlen(name, c->o.max_name_len + 1);
  if (n == 0)
    return LK_EINVAL;
  if (n > c->o.max_name_len)
    return LK_ENAMETOOLONG;
  *len = n;
  return 0;
}
