/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* Sending commands: formatted into an operation record (core/op.c), routed
 * to the connection of their key's slot, scripts called by SHA, and the
 * follow-ups that undo an abandoned command's late success. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/loglevel.h"
#include "core/router.h"
#include "core/slot.h"

static lk__op_t *format_argv(lk_client_t *c, int argc, const char **argv,
                             const size_t *lens, const lk__script_t *script,
                             lk__op_cb cb, void *data, int *err) {
  lk__op_t *op = lk__op_new(c, cb, data, err);
  int len;
  if (op == NULL)
    return NULL;
  /* Binary-safe: explicit lengths, user bytes never meet a format string. */
  len = lk__format_command(&op->cmd, &op->cmd_cap, argc, argv, lens);
  if (len < 0) {
    lk__op_free(op);
    *err = LK_ENOMEM;
    return NULL;
  }
  op->cmd_len = (size_t)len;
  op->script = script;
  return op;
}

int lk__op_submit(lk_client_t *c, lk__op_t *op) {
  if (c->closing >= 2)
    return LK_ECLOSED;
  if (c->inflight >= c->o.max_inflight)
    return LK_EAGAIN;
  c->inflight++;
  lk__conn_enqueue(lk__router_cmd_conn(c, op->slot), op);
  lk__client_busy_poll(c);
  return 0;
}

static lk__op_t *send_argv(lk_client_t *c, int argc, const char **argv,
                           const size_t *lens, const lk__script_t *script, int key,
                           lk__op_cb cb, void *data, int *err) {
  lk__op_t *op;
  if (c->inflight >= c->o.max_inflight) {
    *err = LK_EAGAIN;
    return NULL;
  }
  op = format_argv(c, argc, argv, lens, script, cb, data, err);
  /* Every plain command we send names its key first (HGET, PTTL, GET...),
   * but an EVAL (lk__cmd_argv_keyed). */
  if (op != NULL && c->cluster_on && argc > key)
    op->slot = lk__key_slot(argv[key], lens != NULL ? lens[key] : strlen(argv[key]));
  if (op != NULL && (*err = lk__op_submit(c, op)) != 0) {
    lk__op_free(op);
    op = NULL;
  }
  return op;
}

lk__op_t *lk__cmd_argv(lk_client_t *c, int argc, const char **argv,
                       const size_t *lens, lk__op_cb cb, void *data, int *err) {
  return send_argv(c, argc, argv, lens, NULL, 1, cb, data, err);
}

lk__op_t *lk__cmd_argv_keyed(lk_client_t *c, int argc, const char **argv,
                             const size_t *lens, int key, lk__op_cb cb, void *data,
                             int *err) {
  return send_argv(c, argc, argv, lens, NULL, key, cb, data, err);
}

/* Small calls build their argument vector on the stack; renewal batches
 * (hundreds of arguments) get one allocation. */
#define LK__STACK_ARGS 32
/* EVALSHA, SHA1, key count before the keys; the request tag after the args. */
#define LK__SCRIPT_EXTRA 4

static lk__op_t *script_op(lk_client_t *c, const lk__script_t *s, int nkeys,
                           int nargs, const char **argv, const size_t *lens,
                           lk__op_cb cb, void *data, int send, int *err) {
  const char *a_stack[LK__STACK_ARGS + LK__SCRIPT_EXTRA];
  size_t l_stack[LK__STACK_ARGS + LK__SCRIPT_EXTRA];
  const char **a = a_stack;
  size_t *l = l_stack;
  char nk[24], tag[24];
  size_t tag_len;
  int i, n = nkeys + nargs;
  lk__op_t *op;
  if (nkeys < 0 || nargs < 0 || s == NULL) {
    *err = LK_EINVAL;
    return NULL;
  }
  if (send && c->inflight >= c->o.max_inflight) {
    *err = LK_EAGAIN;
    return NULL;
  }
  if (n > LK__STACK_ARGS) {
    a = lk__malloc(sizeof(*a) * (size_t)(n + LK__SCRIPT_EXTRA));
    l = lk__malloc(sizeof(*l) * (size_t)(n + LK__SCRIPT_EXTRA));
    if (a == NULL || l == NULL) {
      lk__free(a);
      lk__free(l);
      *err = LK_ENOMEM;
      return NULL;
    }
  }
  /* The request tag: every script's reply carries it back, so a reply that
   * is not this command's own is seen (lk__reply_unwrap). Unique per client:
   * a counter, never reused while the client lives. */
  tag_len = lk__i64_to_str(tag, (int64_t)(++c->next_tag & INT64_MAX));
  a[0] = "EVALSHA", l[0] = 7;
  a[1] = s->sha1, l[1] = 40;
  a[2] = nk, l[2] = lk__i64_to_str(nk, nkeys);
  for (i = 0; i < n; i++) {
    a[i + 3] = argv[i];
    l[i + 3] = lens != NULL ? lens[i] : strlen(argv[i]);
  }
  a[n + 3] = tag, l[n + 3] = tag_len;
  op = format_argv(c, n + LK__SCRIPT_EXTRA, a, l, s, cb, data, err);
  if (op != NULL) {
    /* On a cluster the first key decides the node: every key of a call
     * shares the object's hash tag. */
    if (c->cluster_on && nkeys > 0)
      op->slot = lk__key_slot(a[3], l[3]);
    memcpy(op->tag, tag, tag_len);
    op->tag_len = (unsigned char)tag_len;
    if (send && (*err = lk__op_submit(c, op)) != 0) {
      lk__op_free(op);
      op = NULL;
    }
  }
  if (a != a_stack) {
    lk__free(a);
    lk__free(l);
  }
  return op;
}

lk__op_t *lk__script_call(lk_client_t *c, const lk__script_t *s, int nkeys,
                          int nargs, const char **argv, const size_t *lens,
                          lk__op_cb cb, void *data, int *err) {
  return script_op(c, s, nkeys, nargs, argv, lens, cb, data, 1, err);
}

lk__op_t *lk__script_prepare(lk_client_t *c, const lk__script_t *s, int nkeys,
                             int nargs, const char **argv, const size_t *lens,
                             lk__op_cb cb, void *data, int *err) {
  return script_op(c, s, nkeys, nargs, argv, lens, cb, data, 0, err);
}

/* --- clean-up commands nobody waits for --- */

void lk__cleanup_cb(void *data, int status, redisReply *r) {
  lk_client_t *c = data;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(c, lk__trouble_level(status),
            "clean-up command failed (%s); what it meant to give back expires "
            "with its lease",
            lk_err_name(status));
}

typedef struct lk__follow_s {
  lk_client_t *client;
  lk__op_t *next;
  lk__follow_pred pred;
  lk__follow_done done;
  void *done_arg;
} lk__follow_t;

static void on_followed(void *data, int status, redisReply *r) {
  lk__follow_t *f = data;
  lk__follow_done done = f->done;
  void *arg = f->done_arg;
  if (f->pred(status, r) && lk__op_submit(f->client, f->next) == 0)
    f->next = NULL;
  if (f->next != NULL)
    lk__op_free(f->next);
  lk__free(f);
  if (done != NULL)
    done(arg);
}

int lk__op_follow_up_then(lk_client_t *c, lk__op_t *abandoned, lk__op_t *next,
                          lk__follow_pred pred, lk__follow_done done, void *done_arg) {
  lk__follow_t *f = lk__malloc(sizeof(*f));
  if (f == NULL) {
    lk__op_free(next);
    lk__op_retarget(abandoned, NULL, NULL);
    return LK_ENOMEM;
  }
  f->client = c;
  f->next = next;
  f->pred = pred;
  f->done = done;
  f->done_arg = done_arg;
  lk__op_retarget(abandoned, on_followed, f);
  return 0;
}

int lk__op_follow_up(lk_client_t *c, lk__op_t *abandoned, lk__op_t *next,
                     lk__follow_pred pred) {
  return lk__op_follow_up_then(c, abandoned, next, pred, NULL, NULL);
}
