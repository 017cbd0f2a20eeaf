/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#include <string.h>
#include <uthash.h>

#include "core/tokens.h"

#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz) lk__malloc(sz)
#define uthash_free(ptr, sz) lk__free(ptr)

struct lk__token_s {
  UT_hash_handle hh;
  int64_t highest;
  size_t len;
  char name[]; /* the key of the hash */
};

int64_t lk__token_highest(const lk_client_t *c, const char *name, size_t len) {
  struct lk__token_s *t = NULL;
  HASH_FIND(hh, c->tokens, name, len, t);
  return t != NULL ? t->highest : 0;
}

int lk__token_seen(lk_client_t *c, const char *name, size_t len, int64_t token) {
  struct lk__token_s *t = NULL;
  HASH_FIND(hh, c->tokens, name, len, t);
  if (t == NULL) {
    t = lk__malloc(sizeof(*t) + len);
    if (t == NULL)
      return LK_ENOMEM;
    memcpy(t->name, name, len);
    t->len = len;
    t->highest = 0;
    HASH_ADD(hh, c->tokens, name[0], len, t);
  }
  if (token > t->highest)
    t->highest = token;
  return 0;
}

void lk__tokens_free(lk_client_t *c) {
  struct lk__token_s *t, *tmp;
  HASH_ITER(hh, c->tokens, t, tmp) {
    HASH_DEL(c->tokens, t);
    lk__free(t);
  }
}
