/* lk_list: one SCAN step with the keys classified on the server
 * (scripts/inspect/list.lua, docs/inspect.md "Listing"). A one-shot op like
 * lk_inspect. On a cluster the script has no key, so it runs on the seed
 * node only: visiting every master is left to a later change (documented). */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

typedef struct list_req_s {
  lk_client_t *c;
  lk_list_cb cb;
  void *arg;
} list_req_t;

static lk_inspect_kind_t kind_of(const char *s) {
  static const struct {
    const char *name;
    lk_inspect_kind_t kind;
  } kinds[] = {{"lock", LK_INSPECT_LOCK},   {"fair", LK_INSPECT_FAIR},
               {"rwlock", LK_INSPECT_RWLOCK}, {"count", LK_INSPECT_COUNT},
               {"psem", LK_INSPECT_PSEM},   {"token", LK_INSPECT_TOKEN}};
  size_t i;
  for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (strcmp(s, kinds[i].name) == 0)
      return kinds[i].kind;
  return LK_INSPECT_OTHER;
}

static void on_list(void *data, int status, redisReply *r) {
  list_req_t *q = data;
  lk_list_entry_t *entries = NULL;
  redisReply *names;
  size_t i, n = 0;
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_ERROR)
    status = lk__status_of(r);
  if (status == 0 && (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                      r->element[0]->type != REDIS_REPLY_STRING ||
                      r->element[1]->type != REDIS_REPLY_ARRAY ||
                      r->element[1]->elements % 2 != 0))
    status = LK_EPROTOCOL;
  if (status == 0) {
    names = r->element[1];
    n = names->elements / 2;
    if (n > 0 && (entries = lk__malloc(n * sizeof(*entries))) == NULL)
      status = LK_ENOMEM;
    for (i = 0; status == 0 && i < n; i++) {
      if (names->element[2 * i]->type != REDIS_REPLY_STRING ||
          names->element[2 * i + 1]->type != REDIS_REPLY_STRING) {
        status = LK_EPROTOCOL;
        break;
      }
      entries[i].name = names->element[2 * i]->str;
      entries[i].kind = kind_of(names->element[2 * i + 1]->str);
    }
  }
  if (status == 0)
    q->cb(q->c, 0, entries, n, r->element[0]->str, q->arg);
  else
    q->cb(q->c, status, NULL, 0, NULL, q->arg);
  lk__free(entries);
  lk__free(q);
}

/* A SCAN cursor is a decimal number (an unsigned 64-bit value). */
static int valid_cursor(const char *s) {
  size_t n = 0;
  for (; s[n] != '\0'; n++)
    if (s[n] < '0' || s[n] > '9' || n >= 20)
      return 0;
  return n > 0;
}

int lk_list(lk_client_t *c, const char *pattern, const char *cursor, int count, lk_list_cb cb,
            void *arg) {
  const char *argv[3];
  char cnt[24];
  list_req_t *q;
  int rc;
  if ((rc = lk__check_client(c)) != 0)
    return rc;
  if (cb == NULL || cursor == NULL || !valid_cursor(cursor) || count < 1 || count > 10000)
    return LK_EINVAL;
  if (pattern == NULL)
    pattern = "*";
  if (pattern[0] == '\0' || strlen(pattern) > c->o.max_name_len)
    return LK_EINVAL;
  if ((q = lk__malloc(sizeof(*q))) == NULL)
    return LK_ENOMEM;
  q->c = c, q->cb = cb, q->arg = arg;
  argv[0] = cursor, argv[1] = pattern;
  lk__i64_to_str(cnt, count);
  argv[2] = cnt;
  if (lk__script_call(c, lk__script_find("inspect/list"), 0, 3, argv, NULL, on_list, q, &rc) ==
      NULL) {
    lk__free(q);
    return rc;
  }
  return 0;
}
