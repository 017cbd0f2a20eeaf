/* Pub/sub on its own connection, with our own push handling: hiredis 0.14's
 * async subscribe bookkeeping misroutes confirmations and PINGs and drops the
 * connection on one NOPERM (research/hiredis-0.14.md). Here every SUBSCRIBE
 * and UNSUBSCRIBE names one channel and so gets exactly one reply in FIFO
 * order on the connection, while "message" pushes are routed by name. */
#include <stdio.h>
#include <string.h>
#include <uthash.h>

#include "core/pubsub.h"

#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz) lk__malloc(sz)
#define uthash_free(ptr, sz) lk__free(ptr)

enum lk__chan_state {
  LK__CHAN_PENDING = 0, /* wants a SUBSCRIBE once the connection is ready */
  LK__CHAN_SUBSCRIBING,
  LK__CHAN_SUBSCRIBED,
  LK__CHAN_DENIED /* NOPERM: listeners poll */
};

struct lk__chan_s {
  UT_hash_handle hh;
  lk_client_t *client;
  char *name;
  size_t len;
  lk__queue_t listeners;
  enum lk__chan_state state;
  lk__op_t *sub_op; /* the SUBSCRIBE whose reply is outstanding */
  int dispatching; /* messages being delivered: free after */
  unsigned taken;  /* listeners that took the message being delivered */
  int internal;    /* the heartbeat channel */
};

static void chan_subscribe(lk__chan_t *ch);
static void hb_tick(uv_timer_t *t);

/* --- listeners --- */

static void on_poke(lk__defer_t *d) {
  lk__sub_t *s = lk__container_of(d, lk__sub_t, poke);
  s->cb(s, LK__SUB_POKE, s->poke_status, NULL, 0);
}

static void poke(lk__sub_t *s, int status) {
  s->poke_status = status;
  lk__defer(s->client, &s->poke);
}

static void poke_all(lk__chan_t *ch, int status) {
  lk__queue_t *q;
  for (q = ch->listeners.next; q != &ch->listeners; q = q->next)
    poke(lk__container_of(q, lk__sub_t, node), status);
}

/* --- channels --- */

static void chan_free(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  HASH_DEL(c->chans, ch);
  if (!ch->internal)
    c->user_chans--;
  lk__free(ch->name);
  lk__free(ch);
}

static lk__op_t *send_on_ps(lk_client_t *c, const char *verb, lk__chan_t *ch,
                            lk__op_cb cb, void *data) {
  const char *argv[2] = {verb, ch->name};
  size_t lens[2] = {strlen(verb), ch->len};
  int err = 0;
  lk__op_t *op = lk__op_new(c, cb, data, &err);
  int len;
  if (op == NULL)
    return NULL;
  op->internal = 1;
  len = lk__format_command(&op->cmd, &op->cmd_cap, 2, argv, lens);
  if (len < 0) {
    lk__op_free(op);
    return NULL;
  }
  op->cmd_len = (size_t)len;
  lk__conn_enqueue(&c->ps, op);
  return op;
}

static int is_subscribe_ack(const redisReply *r) {
  return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         r->element[0]->type == REDIS_REPLY_STRING &&
         strcmp(r->element[0]->str, "subscribe") == 0;
}

static void on_subscribed(void *data, int status, redisReply *r) {
  lk__chan_t *ch = data;
  lk_client_t *c = ch->client;
  ch->sub_op = NULL;
  if (ch->state != LK__CHAN_SUBSCRIBING)
    return; /* the connection dropped meanwhile; on_down handled it */
  if (status == 0 && is_subscribe_ack(r)) {
    ch->state = LK__CHAN_SUBSCRIBED;
    poke_all(ch, 0);
  } else if (status == LK_ENOPERM) {
    ch->state = LK__CHAN_DENIED;
    if (!c->warned_nochannel) {
      c->warned_nochannel = 1;
      lk__log(c, LK_LOG_WARN,
              "no permission to subscribe (ACL channels): waiters fall back to "
              "polling every %lld ms",
              (long long)c->o.max_repoll_ms);
    }
    poke_all(ch, LK_ENOPERM);
  } else {
    /* Anything else is a broken connection or protocol: start over. */
    ch->state = LK__CHAN_PENDING;
    poke_all(ch, status ? status : LK_EPROTOCOL);
    if (status == 0)
      lk__conn_drop(&c->ps, LK_EPROTOCOL, "unexpected SUBSCRIBE reply");
  }
}

static void chan_subscribe(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  if (c->ps.state != LK__CONN_READY) {
    lk__conn_start(&c->ps);
    return;
  }
  ch->sub_op = send_on_ps(c, "SUBSCRIBE", ch, on_subscribed, ch);
  if (ch->sub_op != NULL)
    ch->state = LK__CHAN_SUBSCRIBING;
}

/* Last listener gone: unsubscribe and forget the channel. A SUBSCRIBE reply
 * still due is re-aimed at nothing; the UNSUBSCRIBE behind it undoes it. */
static void chan_release(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  if (!lk__queue_empty(&ch->listeners) || ch->dispatching || ch->internal)
    return;
  if (ch->sub_op != NULL)
    lk__op_retarget(ch->sub_op, NULL, NULL);
  if ((ch->state == LK__CHAN_SUBSCRIBED || ch->sub_op != NULL) &&
      c->ps.state == LK__CONN_READY && !c->closing)
    send_on_ps(c, "UNSUBSCRIBE", ch, NULL, NULL);
  chan_free(ch);
}

static lk__chan_t *chan_find(lk_client_t *c, const char *name, size_t len) {
  lk__chan_t *ch = NULL;
  HASH_FIND(hh, c->chans, name, len, ch);
  return ch;
}

/* A channel record, not yet subscribed. */
static lk__chan_t *chan_new(lk_client_t *c, const char *name, size_t len, int internal) {
  lk__chan_t *ch = lk__calloc(1, sizeof(*ch));
  if (ch == NULL)
    return NULL;
  ch->name = lk__memdup0(name, len);
  if (ch->name == NULL) {
    lk__free(ch);
    return NULL;
  }
  ch->client = c;
  ch->len = len;
  ch->internal = internal;
  lk__queue_init(&ch->listeners);
  HASH_ADD_KEYPTR(hh, c->chans, ch->name, ch->len, ch);
  if (!internal)
    c->user_chans++;
  return ch;
}

int lk__sub_start(lk_client_t *c, lk__sub_t *s, const char *channel,
                  size_t len, lk__sub_cb cb) {
  lk__chan_t *ch, *hb;
  int fresh = 0;
  if (c->closing)
    return LK_ECLOSED;
  /* The name is copied before anything that can call out to the user (a
   * connect that fails at once logs): channel may be in the client's scratch
   * buffer, which a call made from the log callback would reuse. */
  ch = chan_find(c, channel, len);
  if (ch == NULL) {
    ch = chan_new(c, channel, len, 0);
    if (ch == NULL)
      return LK_ENOMEM;
    fresh = 1;
  }
  /* The heartbeat channel rides along with the first user channel. */
  if (c->hb_channel != NULL && chan_find(c, c->hb_channel, c->hb_channel_len) == NULL) {
    hb = chan_new(c, c->hb_channel, c->hb_channel_len, 1);
    if (hb == NULL) {
      if (fresh)
        chan_free(ch);
      return LK_ENOMEM;
    }
    chan_subscribe(hb);
  }
  if (fresh)
    chan_subscribe(ch);
  s->chan = ch;
  s->cb = cb;
  s->client = c;
  lk__defer_init(&s->poke, on_poke);
  lk__queue_insert_tail(&ch->listeners, &s->node);
  if (ch->state == LK__CHAN_SUBSCRIBED)
    poke(s, 0);
  else if (ch->state == LK__CHAN_DENIED)
    poke(s, LK_ENOPERM);
  else if (c->ps.state == LK__CONN_BACKOFF)
    poke(s, LK_ECONN); /* known down: poll until it comes back */
  if (!uv_is_active((uv_handle_t *)&c->hb_timer))
    uv_timer_start(&c->hb_timer, hb_tick, (uint64_t)c->o.heartbeat_ms,
                   (uint64_t)c->o.heartbeat_ms);
  return 0;
}

unsigned lk__sub_take(lk__sub_t *s) {
  return s->chan != NULL ? s->chan->taken++ : 0;
}

void lk__sub_stop(lk__sub_t *s) {
  lk__chan_t *ch = s->chan;
  if (ch == NULL)
    return;
  lk__defer_cancel(&s->poke);
  lk__queue_remove(&s->node);
  s->chan = NULL;
  chan_release(ch);
}

/* --- connection hooks --- */

void lk__pubsub_on_ready(lk_client_t *c) {
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, c->chans, ch, tmp) {
    if (ch->state == LK__CHAN_PENDING && ch->sub_op == NULL)
      chan_subscribe(ch);
  }
}

void lk__pubsub_on_down(lk_client_t *c) {
  lk__chan_t *ch, *tmp;
  c->hb_expect_ns = 0;
  HASH_ITER(hh, c->chans, ch, tmp) {
    /* SUBSCRIBE replies still due are failed by the connection right
     * after this and find the channel PENDING. A denial is retried too: the
     * ACL may have changed. */
    ch->state = LK__CHAN_PENDING;
    poke_all(ch, LK_ECONN);
  }
}

/* Returns 1 when r was a pushed message (consumed here). */
int lk__pubsub_on_push(lk_client_t *c, redisReply *r) {
  lk__chan_t *ch;
  lk__queue_t pending;
  redisReply *ty, *name, *msg;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
    return 0;
  ty = r->element[0], name = r->element[1], msg = r->element[2];
  if (ty->type != REDIS_REPLY_STRING || strcmp(ty->str, "message") != 0)
    return 0;
  if (name->type != REDIS_REPLY_STRING || msg->type != REDIS_REPLY_STRING)
    return 1;
  c->stats.pubsub_messages++;
  ch = chan_find(c, name->str, name->len);
  if (ch == NULL)
    return 1;
  if (ch->internal) {
    c->hb_expect_ns = 0;
    return 1;
  }
  /* Listeners may stop themselves or others, or start new ones, from the
   * callback: walk a private list and put each back before calling it. */
  lk__queue_init(&pending);
  lk__queue_move(&ch->listeners, &pending);
  ch->dispatching = 1;
  ch->taken = 0;
  while (!lk__queue_empty(&pending)) {
    lk__sub_t *s = lk__container_of(lk__queue_head(&pending), lk__sub_t, node);
    lk__queue_remove(&s->node);
    lk__queue_insert_tail(&ch->listeners, &s->node);
    s->cb(s, LK__SUB_MESSAGE, 0, msg->str, msg->len);
  }
  ch->dispatching = 0;
  chan_release(ch);
  return 1;
}

/* --- heartbeat: PUBLISH on the command connection to our own channel; the
 * integer reply says whether the server still sees our subscriber, and the
 * message must then arrive within the reply timeout. --- */

static void on_hb_reply(void *data, int status, redisReply *r) {
  lk_client_t *c = data;
  long long n;
  c->hb_inflight = 0;
  if (c->closing)
    return;
  if (status == LK_ENOPERM) {
    if (!c->hb_denied)
      lk__log(c, LK_LOG_WARN, "no permission to PUBLISH: pub/sub health "
                              "checks disabled, waiters still re-poll");
    c->hb_denied = 1;
    return;
  }
  if (status != 0 || !lk__reply_is_int(r, &n) || c->ps.state != LK__CONN_READY)
    return;
  if (n == 0) {
    lk__conn_drop(&c->ps, LK_EUNKNOWN, "server no longer sees our subscriber");
    return;
  }
  if (c->hb_expect_ns == 0)
    c->hb_expect_ns = c->hb_sent_ns;
}

static void hb_tick(uv_timer_t *t) {
  lk_client_t *c = t->data;
  lk__chan_t *hb;
  const char *argv[3] = {"PUBLISH", c->hb_channel, "1"};
  size_t lens[3] = {7, c->hb_channel_len, 1};
  int err = 0;
  if (c->user_chans == 0) {
    uv_timer_stop(&c->hb_timer);
    return;
  }
  hb = chan_find(c, c->hb_channel, c->hb_channel_len);
  if (c->hb_denied || c->hb_inflight || c->ps.state != LK__CONN_READY ||
      hb == NULL || hb->state != LK__CHAN_SUBSCRIBED || c->cmd.state != LK__CONN_READY)
    return;
  if (c->hb_expect_ns != 0 &&
      lk__now_ns() - c->hb_expect_ns > (uint64_t)c->o.reply_timeout_ms * 1000000u) {
    lk__conn_drop(&c->ps, LK_EUNKNOWN, "heartbeat message never arrived");
    return;
  }
  c->hb_sent_ns = lk__now_ns();
  if (lk__cmd_argv(c, 3, argv, lens, on_hb_reply, c, &err) != NULL)
    c->hb_inflight = 1;
}

/* --- lifecycle --- */

int lk__pubsub_init(lk_client_t *c) {
  char buf[64];
  int n = snprintf(buf, sizeof(buf), "latchkey:hb:%s", c->id);
  c->hb_channel = lk__memdup0(buf, (size_t)n);
  if (c->hb_channel == NULL)
    return LK_ENOMEM;
  c->hb_channel_len = (size_t)n;
  return 0;
}

void lk__pubsub_shutdown(lk_client_t *c) {
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, c->chans, ch, tmp) {
    while (!lk__queue_empty(&ch->listeners)) {
      lk__sub_t *s = lk__container_of(lk__queue_head(&ch->listeners), lk__sub_t, node);
      lk__defer_cancel(&s->poke);
      lk__queue_remove(&s->node);
      s->chan = NULL;
    }
  }
}

void lk__pubsub_free(lk_client_t *c) {
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, c->chans, ch, tmp) { chan_free(ch); }
  lk__free(c->hb_channel);
  c->hb_channel = NULL;
}
