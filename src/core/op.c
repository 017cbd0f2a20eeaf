/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* Operation records: owned by the client, not by the object that asked, so
 * an object can close while its command is still in flight; the late reply
 * then meets whatever the object re-targeted the record to (or nothing).
 * A connection carries them and completes them (core/conn.c); sending one
 * where it belongs is ops.c's. */
#include <string.h>

#include "core/internal.h"
#include "core/slot.h"

/* Records kept for reuse, and the largest command buffer worth keeping. */
#define LK__OP_POOL_MAX 1024
#define LK__OP_KEEP_CMD 4096

lk__op_t *lk__op_new(lk_client_t *c, lk__op_cb cb, void *data, int *err) {
  lk__op_t *op;
  char *cmd = NULL;
  size_t cap = 0;
  /* While the client drains (closing == 1) internal clean-up, such as giving
   * back a lock a canceled acquire took, may still be sent. */
  if (c->closing >= 2) {
    *err = LK_ECLOSED;
    return NULL;
  }
  op = c->op_pool;
  if (op != NULL) {
    c->op_pool = (lk__op_t *)op->data;
    c->op_pool_len--;
    cmd = op->cmd;
    cap = op->cmd_cap;
    memset(op, 0, sizeof(*op));
  } else {
    op = lk__calloc(1, sizeof(*op));
    if (op == NULL) {
      *err = LK_ENOMEM;
      return NULL;
    }
  }
  lk__queue_init(&op->node);
  op->cmd = cmd;
  op->cmd_cap = cap;
  op->client = c;
  op->cb = cb;
  op->data = data;
  op->slot = LK__NO_SLOT;
  return op;
}

lk__op_t *lk__op_internal(lk_client_t *c, int argc, const char **argv, const size_t *lens,
                          lk__op_cb cb, void *data, int *err) {
  size_t l[4];
  int i, len;
  lk__op_t *op;
  if (argc > 4) {
    *err = LK_EINVAL;
    return NULL;
  }
  for (i = 0; i < argc; i++)
    l[i] = lens != NULL ? lens[i] : strlen(argv[i]);
  op = lk__op_new(c, cb, data, err);
  if (op == NULL)
    return NULL;
  op->internal = 1;
  len = lk__format_command(&op->cmd, &op->cmd_cap, argc, argv, l);
  if (len < 0) {
    lk__op_free(op);
    *err = LK_ENOMEM;
    return NULL;
  }
  op->cmd_len = (size_t)len;
  return op;
}

void lk__op_free(lk__op_t *op) {
  lk_client_t *c = op->client;
  if (c != NULL && c->closing < 3 && c->op_pool_len < LK__OP_POOL_MAX) {
    if (op->cmd_cap > LK__OP_KEEP_CMD) {
      lk__free(op->cmd); /* one big batch must not pin its buffer */
      op->cmd = NULL;
      op->cmd_cap = 0;
    }
    op->data = c->op_pool; /* the pool's link */
    c->op_pool = op;
    c->op_pool_len++;
    return;
  }
  lk__free(op->cmd);
  lk__free(op);
}

void lk__op_pool_free(lk_client_t *c) {
  while (c->op_pool != NULL) {
    lk__op_t *op = c->op_pool;
    c->op_pool = (lk__op_t *)op->data;
    lk__free(op->cmd);
    lk__free(op);
  }
  c->op_pool_len = 0;
}

void lk__op_complete(lk__op_t *op, int status, redisReply *reply) {
  lk__op_cb cb = op->cb;
  void *data = op->data;
  lk__conn_t *conn = op->conn, *outer = NULL;
  lk_client_t *c = conn != NULL ? conn->client : NULL;
  if (c != NULL) {
    c->completing_sent_ns = op->sent_ns;
    /* Where the reply came from, for a grant's WAIT (core/sync.c); a
     * command that failed came from nowhere. Restored after the callback:
     * completions nest when a callback's work drops a connection. The
     * client outlives the callback (it is freed from handle callbacks). */
    outer = c->completing_conn;
    c->completing_conn = reply != NULL ? conn : NULL;
  }
  if (c != NULL && !op->internal) {
    c->inflight--;
    if (status == LK_EUNKNOWN)
      c->stats.unknown_outcomes++;
  }
  lk__op_free(op);
  if (cb != NULL)
    cb(data, status, reply);
  if (c != NULL)
    c->completing_conn = outer;
}

void lk__op_retarget(lk__op_t *op, lk__op_cb cb, void *data) {
  op->cb = cb;
  op->data = data;
}

void lk__op_forget(lk__op_t **op) {
  if (*op != NULL)
    lk__op_retarget(*op, NULL, NULL);
  *op = NULL;
}
