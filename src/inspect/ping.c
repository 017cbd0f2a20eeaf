/* lk_ping: INFO server, timed, for `latchkey ping` and health checks
 * (docs/inspect.md). INFO is untagged like every read that decides nothing
 * (docs/design.md, "Replies are attributable"). */
#include <string.h>

#include "core/internal.h"
#include "core/router.h"

typedef struct ping_req_s {
  lk_client_t *c;
  lk_ping_cb cb;
  void *arg;
  uint64_t t0;
} ping_req_t;

/* Copies the value of "field:" in an INFO text into out (cut at cap). */
static int info_field(const char *info, size_t len, const char *field, char *out, size_t cap) {
  size_t fl = strlen(field), i = 0;
  while (i < len) {
    const char *line = info + i, *nl = memchr(line, '\n', len - i);
    size_t ll = nl != NULL ? (size_t)(nl - line) : len - i;
    if (ll > fl && memcmp(line, field, fl) == 0 && line[fl] == ':') {
      size_t vl = ll - fl - 1;
      if (vl > 0 && line[fl + vl] == '\r')
        vl--;
      if (vl >= cap)
        vl = cap - 1;
      memcpy(out, line + fl + 1, vl);
      out[vl] = '\0';
      return 1;
    }
    i += ll + 1;
  }
  return 0;
}

static void on_info(void *data, int status, redisReply *r) {
  ping_req_t *q = data;
  char version[64] = "", valkey[64] = "";
  lk_ping_t p;
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_ERROR)
    status = lk__status_of(r);
  if (status == 0 && (r == NULL || r->type != REDIS_REPLY_STRING))
    status = LK_EPROTOCOL;
  if (status == 0) {
    memset(&p, 0, sizeof(p));
    /* From when the command left (not from the call: a first call waits
     * for the connection). */
    p.rtt_us = (int64_t)((lk__now_ns() - (q->c->completing_sent_ns != 0
                                               ? q->c->completing_sent_ns
                                               : q->t0)) / 1000);
    info_field(r->str, r->len, "redis_version", version, sizeof(version));
    p.server = "redis";
    if (info_field(r->str, r->len, "valkey_version", valkey, sizeof(valkey))) {
      p.server = "valkey";
      memcpy(version, valkey, sizeof(version));
    }
    p.version = version;
    p.mode = lk__cluster(q->c) ? "cluster" : "standalone";
    q->cb(q->c, 0, &p, q->arg);
  } else {
    q->cb(q->c, status, NULL, q->arg);
  }
  lk__free(q);
}

int lk_ping(lk_client_t *c, lk_ping_cb cb, void *arg) {
  const char *argv[2] = {"INFO", "server"};
  ping_req_t *q;
  int rc;
  if ((rc = lk__check_client(c)) != 0)
    return rc;
  if (cb == NULL)
    return LK_EINVAL;
  if ((q = lk__malloc(sizeof(*q))) == NULL)
    return LK_ENOMEM;
  q->c = c, q->cb = cb, q->arg = arg;
  q->t0 = lk__now_ns();
  if (lk__cmd_argv(c, 2, argv, NULL, on_info, q, &rc) == NULL) {
    lk__free(q);
    return rc;
  }
  return 0;
}
