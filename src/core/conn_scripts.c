/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* The scripts of one connection: which of the library's scripts this
 * connection has loaded (a bit each, cleared by every new handshake), the
 * SCRIPT LOAD sent just before a script's first call, and the one retry
 * path: a call that meets NOSCRIPT is sent again as EVAL, once. */
#include <stdio.h>
#include <string.h>

#include "core/conn_parts.h"
#include "core/internal.h"

/* Turns "EVALSHA sha ..." into "EVAL text ..." in place of the op's command:
 * the first two arguments are replaced, the rest is reused byte for byte. */
static int rewrite_as_eval(lk__op_t *op) {
  const lk__script_t *s = op->script;
  char *p = memchr(op->cmd, '\n', op->cmd_len);
  size_t hdr, skip, rest_len, n;
  char lenbuf[32];
  char *cmd;
  if (p == NULL)
    return LK_EPROTOCOL;
  hdr = (size_t)(p - op->cmd) + 1;
  skip = hdr + strlen("$7\r\nEVALSHA\r\n") + strlen("$40\r\n") + 40 + 2;
  if (skip > op->cmd_len)
    return LK_EPROTOCOL;
  rest_len = op->cmd_len - skip;
  snprintf(lenbuf, sizeof(lenbuf), "$%zu\r\n", s->len);
  n = hdr + strlen("$4\r\nEVAL\r\n") + strlen(lenbuf) + s->len + 2 + rest_len;
  cmd = lk__malloc(n);
  if (cmd == NULL)
    return LK_ENOMEM;
  p = cmd;
  memcpy(p, op->cmd, hdr), p += hdr;
  memcpy(p, "$4\r\nEVAL\r\n", 10), p += 10;
  memcpy(p, lenbuf, strlen(lenbuf)), p += strlen(lenbuf);
  memcpy(p, s->text, s->len), p += s->len;
  memcpy(p, "\r\n", 2), p += 2;
  memcpy(p, op->cmd + skip, rest_len);
  lk__free(op->cmd);
  op->cmd = cmd;
  op->cmd_len = op->cmd_cap = n;
  return 0;
}

static int is_noscript(const redisReply *r) {
  return r->type == REDIS_REPLY_ERROR && r->len >= 8 &&
         memcmp(r->str, "NOSCRIPT", 8) == 0;
}

/* s's place in the generated table (its bit in scripts_loaded); -1 for a
 * script that is not the table's. */
static long script_index(const lk__script_t *s) {
  uintptr_t at = (uintptr_t)s, first = (uintptr_t)lk__scripts;
  if (at < first || at >= first + lk__script_count * sizeof(*s))
    return -1;
  return (long)((at - first) / sizeof(*s));
}

static int script_loaded(const lk__conn_t *conn, const lk__script_t *s) {
  long i = script_index(s);
  return i >= 0 && (conn->scripts_loaded[i / 64] & ((uint64_t)1 << (i % 64))) != 0;
}

static void script_forget(lk__conn_t *conn, const lk__script_t *s) {
  long i = script_index(s);
  if (i >= 0)
    conn->scripts_loaded[i / 64] &= ~((uint64_t)1 << (i % 64));
}

/* A SCRIPT LOAD's reply: an ACL refusal (NOPERM) stops the loads on this
 * connection; its calls meet NOSCRIPT and go as EVAL. Any other error
 * (-LOADING after a restart, -BUSY behind another client's long script) is
 * about that moment only: the call behind it meets NOSCRIPT (or the same
 * error), and a NOSCRIPT marks the script not loaded (dispatch), so a later
 * call loads it again. Only a reply touches conn: a failed load (the
 * connection lost, the client closing) says nothing about the server. */
static void on_script_loaded(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  if (r != NULL && status == LK_ENOPERM && !conn->script_load_denied) {
    conn->script_load_denied = 1;
    lk__log(conn->client, LK_LOG_INFO,
            "SCRIPT LOAD refused (%s): scripts are sent with EVAL when missing",
            lk_err_name(status));
  }
}

/* The first call of a script on this connection: its SCRIPT LOAD goes just
 * before it, in the same write, so the call costs one round trip as if the
 * script had been loaded long ago. SCRIPT LOAD rather than EVAL because
 * servers evict scripts that EVAL cached (Redis 8, Valkey 8: the oldest of
 * 500), never loaded ones. It counts as loaded from now on: every later call
 * is queued behind this load. Whatever goes wrong (no memory, the load
 * refused, a SCRIPT FLUSH in between), the call meets NOSCRIPT, which means
 * it did not run, and dispatch sends it again as EVAL, once: the one retry
 * path, also what a restart or a failover to a server that never loaded
 * anything comes to when a call was already on its way. */
static lk__op_t *load_before_first_call(lk__conn_t *conn, const lk__script_t *s) {
  const char *a[3] = {"SCRIPT", "LOAD", s->text};
  size_t l[3] = {6, 4, s->len};
  long i = script_index(s);
  lk__op_t *load;
  int err = 0;
  if (i < 0 || conn->script_load_denied || script_loaded(conn, s))
    return NULL; /* not one of the table's: its NOSCRIPT loads it */
  conn->scripts_loaded[i / 64] |= (uint64_t)1 << (i % 64);
  load = lk__op_internal(conn->client, 3, a, l, on_script_loaded, conn, &err);
  if (load != NULL)
    load->loads = s;
  return load;
}

lk__op_t *lk__conn_script_load_first(lk__conn_t *conn, lk__op_t *op) {
  /* Not a script's EVALSHA, or one sent again as EVAL (it carries its text). */
  if (op->script == NULL || op->retried)
    return NULL;
  if (!conn->after_asking)
    return load_before_first_call(conn, op->script);
  /* Right after ASKING nothing may come between it and the call it admits:
   * a script not loaded here yet goes as EVAL (a slot in migration, rare). */
  if (!script_loaded(conn, op->script) && rewrite_as_eval(op) == 0)
    op->retried = 1;
  return NULL;
}

int lk__conn_script_missing(lk__conn_t *conn, lk__op_t *op, const redisReply *r) {
  if (op->script == NULL || op->retried || !is_noscript(r))
    return 0;
  /* NOSCRIPT means the script did not run, so resending is safe. EVAL
   * both loads and runs it: one round trip, not SCRIPT LOAD + EVALSHA.
   * The server forgot it (SCRIPT FLUSH, a load that failed): the next
   * call loads it again, so it does not live on in EVAL's evictable
   * cache alone. */
  op->retried = 1;
  script_forget(conn, op->script);
  conn->client->stats.noscript_reloads++;
  return rewrite_as_eval(op) == 0;
}
