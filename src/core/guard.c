/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* Guarded writes (docs/guarded.md): the client-side checks, the command
 * (scripts/lock/guarded.lua for a command of the list, an EVAL of the
 * caller's script behind the same check otherwise) and the reply. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/guard.h"
#include "core/scripts.h"
#include "core/slot.h"

/* The commands a guarded write may run: each a write whose first argument
 * is its only key, or whose arguments are all keys (all_keys). Others are
 * refused (LK_EINVAL): the script must know where the keys are, to declare
 * them (a cluster routes by them, ACLs check them). */
typedef struct {
  const char *name;
  int all_keys;
} lk__guarded_cmd_t;

static const lk__guarded_cmd_t lk__guarded_cmds[] = {
    {"SET", 0},    {"DEL", 1},    {"UNLINK", 1},  {"HSET", 0},   {"HDEL", 0},
    {"HINCRBY", 0}, {"INCR", 0},  {"INCRBY", 0},  {"DECR", 0},   {"DECRBY", 0},
    {"APPEND", 0}, {"EXPIRE", 0}, {"PEXPIRE", 0}, {"PERSIST", 0}, {"SADD", 0},
    {"SREM", 0},   {"LPUSH", 0},  {"RPUSH", 0},   {"ZADD", 0},   {"ZREM", 0},
};

static size_t arg_len(const lk_guarded_op_t *op, int i) {
  return op->lens != NULL ? op->lens[i] : strlen(op->argv[i]);
}

static const lk__guarded_cmd_t *find_cmd(const char *s, size_t len) {
  size_t i;
  for (i = 0; i < sizeof(lk__guarded_cmds) / sizeof(lk__guarded_cmds[0]); i++)
    if (strlen(lk__guarded_cmds[i].name) == len && strncasecmp(s, lk__guarded_cmds[i].name, len) == 0)
      return &lk__guarded_cmds[i];
  return NULL;
}

/* The op's keys: argv[first .. first + n - 1]. */
static void key_range(const lk_guarded_op_t *op, const lk__guarded_cmd_t *cmd, int *first,
                      int *n) {
  if (op->script != NULL)
    *first = 0, *n = op->nkeys;
  else
    *first = 1, *n = cmd->all_keys ? op->argc - 1 : 1;
}

static int refuse_slot(lk__obj_t *o, const lk__guard_t *g, const char *key, size_t len,
                       uint16_t slot, uint16_t lock_slot) {
  char t[256];
  t[0] = '\0';
  strncat(t, "guarded write refused before sending: key ", sizeof(t) - 1);
  lk__put_quoted(t, sizeof(t), key, len, 32);
  snprintf(t + strlen(t), sizeof(t) - strlen(t), " is in cluster slot %u, the lock ",
           (unsigned)slot);
  lk__put_quoted(t, sizeof(t), g->lock, g->lock_len, 32);
  snprintf(t + strlen(t), sizeof(t) - strlen(t),
           " in slot %u: give the key the lock's hash tag (docs/guarded.md)",
           (unsigned)lock_slot);
  lk__obj_set_errtext(o, t);
  return LK_ECROSSSLOT;
}

int lk__guard_check(lk__obj_t *o, const lk__guard_t *g, const lk_guarded_op_t *op) {
  const lk__guarded_cmd_t *cmd = NULL;
  int i, first, n;
  uint16_t lock_slot;
  if (op == NULL || op->argv == NULL || op->argc < 1 || op->argc > LK_GUARDED_MAX_ARGS)
    return LK_EINVAL;
  for (i = 0; i < op->argc; i++)
    if (op->argv[i] == NULL)
      return LK_EINVAL;
  if (op->script != NULL) {
    size_t sl = op->script_len != 0 ? op->script_len : strlen(op->script);
    if (sl == 0 || op->nkeys < 0 || op->nkeys > op->argc)
      return LK_EINVAL;
  } else {
    cmd = find_cmd(op->argv[0], arg_len(op, 0));
    if (cmd == NULL || op->argc < 2)
      return LK_EINVAL;
  }
  /* Every key in the lock's slot, on every server: the check and the
   * write are one script, which a cluster runs on one node only. */
  lock_slot = lk__key_slot(g->lock, g->lock_len);
  key_range(op, cmd, &first, &n);
  for (i = first; i < first + n; i++) {
    size_t len = arg_len(op, i);
    uint16_t slot = lk__key_slot(op->argv[i], len);
    if (slot != lock_slot)
      return refuse_slot(o, g, op->argv[i], len, slot, lock_slot);
  }
  return 0;
}

/* The check an EVAL'd script runs first: the same as guarded.lua's, with
 * the guard's two keys and two arguments taken off KEYS and ARGV so the
 * caller's text sees exactly its own (docs/guarded.md shows it). One line,
 * so the server's line numbers in errors are the caller's. */
static const char lk__guard_prologue[] =
    "local lk__lock, lk__tkey = table.remove(KEYS, 1), table.remove(KEYS, 1) "
    "local lk__owner, lk__token = table.remove(ARGV, 1), table.remove(ARGV, 1) "
    "if redis.call('hexists', lk__lock, lk__owner) == 0 then "
    "return redis.error_reply('LK_GUARD the lock is not held by this owner') end "
    "if lk__token ~= '0' and redis.call('get', lk__tkey) ~= lk__token then "
    "return redis.error_reply('LK_GUARD a newer fencing token was issued for the lock') end ";

/* prologue + the caller's script; a "#!lua ..." first line stays first. */
static char *eval_body(const lk_guarded_op_t *op, size_t *out_len) {
  size_t sl = op->script_len != 0 ? op->script_len : strlen(op->script);
  size_t pl = sizeof(lk__guard_prologue) - 1, head = 0, pos;
  int add_nl = 0;
  char *b;
  if (sl >= 2 && op->script[0] == '#' && op->script[1] == '!') {
    const char *nl = memchr(op->script, '\n', sl);
    if (nl != NULL)
      head = (size_t)(nl - op->script) + 1;
    else
      head = sl, add_nl = 1; /* a shebang with nothing after it */
  }
  b = lk__malloc(sl + (size_t)add_nl + pl + 1);
  if (b == NULL)
    return NULL;
  memcpy(b, op->script, head);
  pos = head;
  if (add_nl)
    b[pos++] = '\n';
  memcpy(b + pos, lk__guard_prologue, pl);
  pos += pl;
  memcpy(b + pos, op->script + head, sl - head);
  pos += sl - head;
  *out_len = pos;
  return b;
}

int lk__guard_send(lk__obj_t *o, const lk__guard_t *g, const lk_guarded_op_t *op) {
  const lk__guarded_cmd_t *cmd = op->script == NULL ? find_cmd(op->argv[0], arg_len(op, 0)) : NULL;
  /* At most: EVAL, body, nkeys, 2 guard keys, 2 guard args, the op's. */
  int cap = op->argc + 8, n = 0, i, first, nk, err = 0;
  const char **a = lk__malloc(sizeof(*a) * (size_t)cap);
  size_t *l = lk__malloc(sizeof(*l) * (size_t)cap);
  char tok[24], nkeys[24], *body = NULL;
  size_t body_len = 0;
  lk__op_t *sent = NULL;
  if (a == NULL || l == NULL)
    goto out;
  key_range(op, cmd, &first, &nk);
  if (op->script != NULL) {
    body = eval_body(op, &body_len);
    if (body == NULL)
      goto out;
    a[n] = "EVAL", l[n++] = 4;
    a[n] = body, l[n++] = body_len;
    a[n] = nkeys, l[n++] = lk__i64_to_str(nkeys, (int64_t)nk + 2);
  }
  a[n] = g->lock, l[n++] = g->lock_len;
  a[n] = g->token_key, l[n++] = g->token_key_len;
  for (i = first; i < first + nk; i++)
    a[n] = op->argv[i], l[n++] = arg_len(op, i);
  a[n] = g->owner, l[n++] = g->owner_len;
  a[n] = tok, l[n++] = lk__i64_to_str(tok, g->token > 0 ? g->token : 0);
  if (op->script != NULL) {
    for (i = nk; i < op->argc; i++)
      a[n] = op->argv[i], l[n++] = arg_len(op, i);
    /* Routed by the lock's key, the first of the EVAL's. */
    sent = lk__cmd_argv_keyed(o->client, n, a, l, 3, lk__guard_reply, o, &err);
  } else {
    a[n] = op->argv[0], l[n++] = arg_len(op, 0);
    a[n] = cmd->all_keys ? "keys" : "first", l[n++] = cmd->all_keys ? 4 : 5;
    for (i = first + nk; i < op->argc; i++)
      a[n] = op->argv[i], l[n++] = arg_len(op, i);
    sent = lk__script_call(o->client, lk__script_find("lock/guarded"), 2 + nk, n - 2 - nk, a,
                           l, lk__guard_reply, o, &err);
  }
out:
  lk__free(body);
  lk__free(a);
  lk__free(l);
  o->op = sent;
  if (sent == NULL)
    return err != 0 ? err : LK_ENOMEM;
  return 0;
}

void lk__guard_reply(void *data, int status, redisReply *r) {
  lk__obj_t *o = data;
  lk_client_t *c = o->client;
  lk_guarded_reply_t view;
  o->op = NULL;
  if (status != 0) {
    lk__obj_error(o, r);
    lk__obj_finish(o, status);
    return;
  }
  memset(&view, 0, sizeof(view));
  o->result = 0;
  switch (r->type) {
  case REDIS_REPLY_INTEGER:
    view.type = LK_GUARDED_INTEGER;
    view.integer = r->integer;
    o->result = r->integer;
    break;
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    view.type = LK_GUARDED_STRING;
    view.str = r->str;
    view.len = (size_t)r->len;
    break;
  case REDIS_REPLY_ARRAY:
    view.type = LK_GUARDED_ARRAY;
    view.elements = r->elements;
    break;
  default:
    view.type = LK_GUARDED_NIL;
    break;
  }
  /* Readable during the user's callback only (the reply is freed after). */
  c->guard_obj = o;
  c->guard_reply = &view;
  lk__obj_finish(o, 0);
  c->guard_obj = NULL;
  c->guard_reply = NULL;
}

const lk_guarded_reply_t *lk__guard_current(const lk__obj_t *o) {
  if (o == NULL || o->client == NULL || o->client->guard_obj != o)
    return NULL;
  return o->client->guard_reply;
}
