/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Server replies to LK_ codes. Error replies carry their class in the first
 * word; errors raised by redis.call inside a script keep that word in Redis
 * 7 but may be wrapped, so the whole text is searched as a fallback. */
#include <string.h>

#include "core/internal.h"

typedef struct {
  const char *prefix;
  int code;
} lk__err_prefix_t;

static const lk__err_prefix_t lk__err_prefixes[] = {
    {"WRONGTYPE", LK_EWRONGTYPE}, {"NOPERM", LK_ENOPERM},
    {"WRONGPASS", LK_EAUTH},      {"NOAUTH", LK_EAUTH},
    {"OOM", LK_EOOM},             {"READONLY", LK_EREADONLY},
    {"LOADING", LK_ELOADING},     {"BUSY", LK_ESERVERBUSY},
    {"MISCONF", LK_EMISCONF},     {"MOVED", LK_ECLUSTER},
    {"ASK", LK_ECLUSTER},         {"CLUSTERDOWN", LK_ECLUSTER},
    {"TRYAGAIN", LK_ECLUSTER},    {"CROSSSLOT", LK_ECLUSTER},
    /* A non-reentrant acquire's refusal (scripts/lock/acquire.lua,
     * scripts/fair/acquire.lua): the word Redisson's non-reentrant locks use. */
    {"NON_REENTRANT_REACQUIRE", LK_EREENTRY},
    /* A guarded write's refusal (scripts/lock/guarded.lua, core/guard.c). */
    {"LK_GUARD", LK_EGUARD},
};

static int word_is(const char *text, size_t len, const char *w) {
  size_t n = strlen(w);
  return len >= n && memcmp(text, w, n) == 0 && (len == n || text[n] == ' ');
}

static int contains(const char *text, size_t len, const char *needle) {
  size_t n = strlen(needle), i;
  for (i = 0; n <= len && i <= len - n; i++)
    if (memcmp(text + i, needle, n) == 0)
      return 1;
  return 0;
}

int lk__status_from_error(const char *text, size_t len) {
  size_t i;
  for (i = 0; i < sizeof(lk__err_prefixes) / sizeof(lk__err_prefixes[0]); i++)
    if (word_is(text, len, lk__err_prefixes[i].prefix))
      return lk__err_prefixes[i].code;
  /* Script-wrapped or ERR-class texts that still name a known cause. */
  if (contains(text, len, "WRONGTYPE"))
    return LK_EWRONGTYPE;
  if (contains(text, len, "can't access at least one of the keys") ||
      contains(text, len, "has no permissions") || contains(text, len, "NOPERM") ||
      contains(text, len, "can't run this command"))
    return LK_ENOPERM;
  if (contains(text, len, "OOM command not allowed"))
    return LK_EOOM;
  if (contains(text, len, "READONLY"))
    return LK_EREADONLY;
  if (contains(text, len, "NON_REENTRANT_REACQUIRE"))
    return LK_EREENTRY;
  if (contains(text, len, "LK_GUARD "))
    return LK_EGUARD;
  if (contains(text, len, "invalid username-password") ||
      contains(text, len, "Authentication required"))
    return LK_EAUTH;
  return LK_EREDIS;
}

int lk__status_of(redisReply *r) {
  if (r == NULL)
    return LK_EPROTOCOL;
  if (r->type == REDIS_REPLY_ERROR)
    return lk__status_from_error(r->str, r->len);
  return 0;
}

int lk__reply_is_int(const redisReply *r, long long *out) {
  if (r == NULL || r->type != REDIS_REPLY_INTEGER)
    return 0;
  *out = r->integer;
  return 1;
}

int lk__reply_int_array(const redisReply *r) {
  size_t i;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY)
    return 0;
  for (i = 0; i < r->elements; i++)
    if (r->element[i]->type != REDIS_REPLY_INTEGER)
      return 0;
  return 1;
}

/* What a script that returned nil or false answers through its wrapper
 * ({tag}): handed to callbacks as the nil reply the script would have given
 * unwrapped. Never written. */
static redisReply lk__nil_reply = {.type = REDIS_REPLY_NIL};

int lk__reply_unwrap(const lk__op_t *op, redisReply *r, redisReply **inner) {
  const redisReply *t;
  *inner = r;
  if (r->type == REDIS_REPLY_ERROR)
    return 1; /* not wrapped: see cmake/EmbedScripts.cmake */
  if (op->loads != NULL)
    return r->type == REDIS_REPLY_STRING && r->len == 40 &&
           memcmp(r->str, op->loads->sha1, 40) == 0;
  if (op->expect_type != 0)
    return r->type == op->expect_type;
  if (op->tag_len == 0)
    return 1; /* not a script call: untagged, see docs/design.md */
  if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->elements > 2)
    return 0;
  t = r->element[0];
  if (t == NULL || t->type != REDIS_REPLY_STRING || t->len != op->tag_len ||
      memcmp(t->str, op->tag, op->tag_len) != 0)
    return 0;
  if (r->elements == 2 && r->element[1] == NULL)
    return 0;
  *inner = r->elements == 2 ? r->element[1] : &lk__nil_reply;
  return 1;
}
