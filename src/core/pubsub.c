/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* Pub/sub on its own connections, with our own push handling: hiredis 0.14's
 * async subscribe bookkeeping misroutes confirmations and PINGs and drops the
 * connection on one NOPERM (docs/client.md). Here every (S)SUBSCRIBE and
 * (S)UNSUBSCRIBE names one channel and so gets exactly one reply in FIFO
 * order on its connection, while "message"/"smessage" pushes are routed by
 * name.
 *
 * Where a channel lives (docs/design.md, "Pub/sub"):
 * - standalone: node 0's pub/sub connection, SUBSCRIBE; scripts PUBLISH.
 * - cluster: the pub/sub connection of the master of the channel's slot,
 *   SSUBSCRIBE (sharded pub/sub, Redis and Valkey 7.0+); scripts SPUBLISH,
 *   which the server delivers on that shard only, so the traffic of a
 *   release does not grow with the number of shards. When the slot moves
 *   (failover, migration) the old owner ends the subscription with a
 *   `sunsubscribe` push; a dead owner sends nothing, and a server could
 *   keep a subscription where nothing is published any more: then the next
 *   topology read moves it. Either way the channel follows the slot to its
 *   new owner, and every listener re-polls once it is back.
 * - a cluster without sharded pub/sub (before 7.0): SUBSCRIBE on node 0,
 *   scripts PUBLISH (broadcast to every node), one warning; with
 *   pubsub_mode SHARDED nothing is subscribed there (one error) and
 *   listeners poll.
 * - a cluster with pubsub_mode CLASSIC (to hear and wake Redisson clients
 *   that listen the classic way): SUBSCRIBE on the pub/sub connection of
 *   the master of the channel's slot, scripts PUBLISH. A classic message
 *   reaches every node, so any node would hear it; the slot's master is
 *   chosen so a channel moves exactly as a sharded one does (the topology
 *   read, a dropped connection), and only the `sunsubscribe` push, which
 *   classic subscriptions never get, is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/loglevel.h"
#include "core/pubsub.h"
#include "core/router.h"
#include "core/slot.h"

#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz) lk__malloc(sz)
#define uthash_free(ptr, sz) lk__free(ptr)

/* The most one timed try may add to a channel's round trip estimate. */
#define LK__SUB_RTT_SAMPLE_MAX_NS (10u * 1000000u)

/* MOVED replies to one channel's SSUBSCRIBE in a row before it waits for
 * the next topology read (each one has already corrected the slot map). */
#define LK__MAX_SUB_MOVES 5

enum lk__chan_state {
  LK__CHAN_PENDING = 0, /* wants a SUBSCRIBE once its connection is ready */
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
  lk__op_t *sub_op; /* the (S)SUBSCRIBE whose reply is outstanding */
  /* Where the subscription is (or is to be) made: NULL before the first
   * try. Sharded: SSUBSCRIBE there, else SUBSCRIBE. */
  lk__conn_t *conn;
  int slot; /* on a cluster, computed at the first sharded try; else -1 */
  unsigned sharded : 1;
  unsigned moves : 7; /* MOVED replies in a row */
  int dispatching; /* messages being delivered: free after */
  unsigned taken;  /* listeners that took the message being delivered */
  unsigned rationed; /* listeners given it under a count (lk__sub_ration) */
  lk__sub_t *skipper; /* the first that skipped it (lk__sub_skip), or NULL */
  int internal;    /* the heartbeat channel (standalone only) */
  /* Linger (lk__opts_t.pubsub_linger_ms): without listeners the channel
   * stays subscribed, in c->linger_chans (oldest first), until the
   * heartbeat tick after its linger ends, its slot of the cap is needed, or
   * a listener comes back. */
  lk__queue_t lnode;
  uint64_t linger_since_ns;
  unsigned lingering : 1;
  /* The last message, kept (if short) so that a wake a waiter took but
   * could not use can go to the next listener (lk__sub_pass). */
  unsigned last_ok : 1;
  size_t last_len;
  char last[48];
  lk__defer_t pass;
  /* When the subscription was last confirmed and a message last came
   * (lk__sub_start_since). */
  uint64_t confirmed_ns, last_msg_ns;
  /* How contended the name is, as this process saw it (lk__sub_heat): up
   * by one for each try on a wake that lost to another process, down by
   * one for each that won; and the last such try's round trip. Kept while
   * the channel lingers, so a busy name's next wait starts informed. */
  uint8_t heat;
  uint64_t try_rtt_ns;
  /* Other processes listening at this process's last release of the name
   * (lk__sub_note_others): how many a release wakes. 0 = not known. */
  uint32_t others;
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

static void linger_end(lk__chan_t *ch) {
  if (!ch->lingering)
    return;
  lk__queue_remove(&ch->lnode);
  ch->lingering = 0;
  ch->client->lingering--;
}

static void chan_free(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  linger_end(ch);
  lk__defer_cancel(&ch->pass);
  HASH_DEL(c->chans, ch);
  if (!ch->internal)
    c->user_chans--;
  lk__free(ch->name);
  lk__free(ch);
}

static lk__op_t *send_on(lk__conn_t *conn, const char *verb, const lk__chan_t *ch,
                         lk__op_cb cb, void *data) {
  const char *argv[2] = {verb, ch->name};
  size_t lens[2] = {strlen(verb), ch->len};
  int err = 0;
  lk__op_t *op = lk__op_internal(conn->client, 2, argv, lens, cb, data, &err);
  if (op != NULL)
    lk__conn_enqueue(conn, op);
  return op;
}

static int is_kind(const redisReply *r, const char *kind) {
  return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
         r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, kind) == 0;
}

static int error_has(const redisReply *r, const char *text) {
  return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL &&
         strstr(r->str, text) != NULL;
}

/* Where ch is to be subscribed now, and how. */
static lk__conn_t *route(lk__chan_t *ch, int *sharded) {
  lk_client_t *c = ch->client;
  if (c->cluster_on && !ch->internal &&
      (!c->ps_classic || c->o.pubsub_mode == LK_PUBSUB_CLASSIC)) {
    if (ch->slot < 0)
      ch->slot = lk__key_slot(ch->name, ch->len);
    *sharded = c->o.pubsub_mode != LK_PUBSUB_CLASSIC;
    return lk__router_ps_conn(c, ch->slot);
  }
  *sharded = 0;
  return &c->ps;
}

/* Undoes ch's subscription (made or under way) on its connection: the
 * reply still due is re-aimed at nothing, the UNSUBSCRIBE behind it undoes
 * it. The channel is left PENDING and unrouted. */
static void chan_detach(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  lk__conn_t *conn = ch->conn;
  if (ch->sub_op != NULL)
    lk__op_retarget(ch->sub_op, NULL, NULL);
  if (conn != NULL && (ch->state == LK__CHAN_SUBSCRIBED || ch->sub_op != NULL) &&
      conn->state == LK__CONN_READY && !c->closing)
    send_on(conn, ch->sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE", ch, NULL, NULL);
  ch->sub_op = NULL;
  ch->state = LK__CHAN_PENDING;
  ch->conn = NULL;
}

/* Sharded pub/sub is missing (a cluster of servers before 7.0): every
 * channel moves to classic SUBSCRIBE on node 0, and scripts PUBLISH
 * (lk__publish_cmd). */
static void go_classic(lk_client_t *c, const char *why) {
  if (c->o.pubsub_mode == LK_PUBSUB_SHARDED) {
    /* Asked for sharded only: no fallback; the channels end up denied
     * (on_subscribed) and their listeners poll. */
    if (!c->ps_told_unsharded)
      lk__log(c, LK_LOG_ERROR,
              "%s: pubsub_mode is sharded but the cluster has no sharded pub/sub "
              "(SSUBSCRIBE/SPUBLISH, Redis 7.0+); waiters poll every %lld ms",
              why, (long long)c->o.max_repoll_ms);
    c->ps_told_unsharded = 1;
    return;
  }
  if (c->ps_classic)
    return;
  c->ps_classic = 1;
  lk__log(c, LK_LOG_WARN,
          "%s: sharded pub/sub (SSUBSCRIBE/SPUBLISH, Redis 7.0+) unavailable; "
          "release messages are broadcast to every node",
          why);
  lk__pubsub_on_topology(c);
}

static void on_subscribed(void *data, int status, redisReply *r) {
  lk__chan_t *ch = data;
  lk_client_t *c = ch->client;
  ch->sub_op = NULL;
  if (ch->state != LK__CHAN_SUBSCRIBING)
    return; /* the connection dropped meanwhile; on_down handled it */
  if (status == 0 && is_kind(r, ch->sharded ? "ssubscribe" : "subscribe")) {
    ch->state = LK__CHAN_SUBSCRIBED;
    ch->moves = 0;
    ch->confirmed_ns = lk__now_ns();
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
  } else if (ch->sharded && lk__router_note_moved(ch->conn, r)) {
    /* The slot has another owner (the map is corrected already): follow
     * it, a few times in a row; then the next topology read retries. */
    ch->state = LK__CHAN_PENDING;
    if (++ch->moves <= LK__MAX_SUB_MOVES)
      chan_subscribe(ch);
    else
      poke_all(ch, LK_ECLUSTER);
  } else if (ch->sharded && error_has(r, "unknown command")) {
    ch->state = LK__CHAN_PENDING;
    go_classic(c, "SSUBSCRIBE refused as an unknown command");
    if (c->o.pubsub_mode == LK_PUBSUB_SHARDED) {
      ch->state = LK__CHAN_DENIED; /* listeners poll, as without permission */
      poke_all(ch, LK_ENOPERM);
      return;
    }
    if (ch->state == LK__CHAN_PENDING && ch->sub_op == NULL)
      chan_subscribe(ch); /* classic now (go_classic moved the others) */
  } else if (status != 0 && r != NULL && c->cluster_on) {
    /* CLUSTERDOWN during an election, ASK, TRYAGAIN...: the channel waits
     * for the next topology read (asked for now), which retries it. */
    ch->state = LK__CHAN_PENDING;
    poke_all(ch, status);
    lk__router_refresh(c);
  } else {
    /* Anything else is a broken connection or protocol: start over. */
    ch->state = LK__CHAN_PENDING;
    poke_all(ch, status ? status : LK_EPROTOCOL);
    if (status == 0)
      lk__conn_drop(ch->conn, LK_EPROTOCOL, "unexpected SUBSCRIBE reply");
  }
}

static void chan_subscribe(lk__chan_t *ch) {
  int sharded = 0;
  lk__conn_t *conn = route(ch, &sharded);
  ch->conn = conn;
  ch->sharded = (unsigned)sharded;
  if (conn->state != LK__CONN_READY) {
    lk__conn_start(conn); /* on_ready(conn) subscribes */
    return;
  }
  ch->sub_op = send_on(conn, sharded ? "SSUBSCRIBE" : "SUBSCRIBE", ch, on_subscribed, ch);
  if (ch->sub_op != NULL)
    ch->state = LK__CHAN_SUBSCRIBING;
}

static void chan_drop(lk__chan_t *ch) {
  chan_detach(ch);
  chan_free(ch);
}

/* Last listener gone: the channel lingers (a busy name is subscribed once,
 * not once per wait), or with no linger is unsubscribed and forgotten. A
 * denied channel has no subscription worth keeping. */
static void chan_release(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  if (!lk__queue_empty(&ch->listeners) || ch->dispatching || ch->internal || ch->lingering)
    return;
  if (c->o.pubsub_linger_ms <= 0 || c->o.pubsub_linger_max == 0 || c->closing ||
      ch->state == LK__CHAN_DENIED) {
    chan_drop(ch);
    return;
  }
  if (c->linger_chans.next == NULL)
    lk__queue_init(&c->linger_chans);
  ch->lingering = 1;
  ch->linger_since_ns = lk__now_ns();
  lk__queue_insert_tail(&c->linger_chans, &ch->lnode);
  c->lingering++;
  while (c->lingering > c->o.pubsub_linger_max)
    chan_drop(lk__container_of(lk__queue_head(&c->linger_chans), lk__chan_t, lnode));
}

/* From the heartbeat tick: channels whose linger is over are unsubscribed
 * (one timer for all of them). */
static void linger_expire(lk_client_t *c) {
  uint64_t now = lk__now_ns(), span = (uint64_t)c->o.pubsub_linger_ms * 1000000u;
  while (c->lingering > 0) {
    lk__chan_t *ch = lk__container_of(lk__queue_head(&c->linger_chans), lk__chan_t, lnode);
    if (now - ch->linger_since_ns < span)
      return;
    chan_drop(ch);
  }
}

static lk__chan_t *chan_find(lk_client_t *c, const char *name, size_t len) {
  lk__chan_t *ch = NULL;
  HASH_FIND(hh, c->chans, name, len, ch);
  return ch;
}

static void deliver(lk__chan_t *ch, const char *msg, size_t len);

/* A wake taken by a listener that will not use it goes to the others. */
static void on_pass(lk__defer_t *d) {
  lk__chan_t *ch = lk__container_of(d, lk__chan_t, pass);
  deliver(ch, ch->last, ch->last_len);
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
  ch->slot = -1;
  ch->internal = internal;
  lk__queue_init(&ch->listeners);
  lk__defer_init(&ch->pass, on_pass);
  HASH_ADD_KEYPTR(hh, c->chans, ch->name, ch->len, ch);
  if (!internal)
    c->user_chans++;
  return ch;
}

int lk__sub_start(lk_client_t *c, lk__sub_t *s, const char *channel,
                  size_t len, lk__sub_cb cb) {
  return lk__sub_start_since(c, s, channel, len, cb, 0);
}

int lk__sub_start_since(lk_client_t *c, lk__sub_t *s, const char *channel, size_t len,
                        lk__sub_cb cb, uint64_t since_ns) {
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
  linger_end(ch); /* subscribed (or on its way) already: no SUBSCRIBE */
  /* Standalone: the heartbeat channel rides along with the first user
   * channel (a cluster checks its connections with PING instead). */
  if (!c->cluster_on && c->hb_channel != NULL &&
      chan_find(c, c->hb_channel, c->hb_channel_len) == NULL) {
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
  if (ch->state == LK__CHAN_SUBSCRIBED &&
      (ch->confirmed_ns >= since_ns || ch->last_msg_ns >= since_ns))
    poke(s, 0);
  else if (ch->state == LK__CHAN_DENIED)
    poke(s, LK_ENOPERM);
  else if (ch->conn != NULL && ch->conn->state == LK__CONN_BACKOFF)
    poke(s, LK_ECONN); /* known down: poll until it comes back */
  if (!uv_is_active((uv_handle_t *)&c->hb_timer))
    uv_timer_start(&c->hb_timer, hb_tick, (uint64_t)c->o.heartbeat_ms,
                   (uint64_t)c->o.heartbeat_ms);
  return 0;
}

unsigned lk__sub_take(lk__sub_t *s) {
  return s->chan != NULL ? s->chan->taken++ : 0;
}

unsigned lk__sub_ration(lk__sub_t *s) {
  return s->chan != NULL ? s->chan->rationed++ : 0;
}

void lk__sub_skip(lk__sub_t *s) {
  if (s->chan != NULL && s->chan->skipper == NULL)
    s->chan->skipper = s;
}

unsigned lk__sub_heat(const lk__sub_t *s) { return s->chan != NULL ? s->chan->heat : 0; }

uint64_t lk__sub_try_rtt_ns(const lk__sub_t *s) {
  return s->chan != NULL ? s->chan->try_rtt_ns : 0;
}

void lk__sub_tried(lk__sub_t *s, int won, uint64_t rtt_ns) {
  lk__chan_t *ch = s->chan;
  if (ch == NULL)
    return;
  if (won && ch->heat > 0)
    ch->heat--;
  else if (!won && ch->heat < LK__SUB_HEAT_MAX)
    ch->heat++;
  /* Smoothed, one sample capped: a try stuck behind a reconnect must not
   * stretch every fallback (they are capped by max_repoll_ms anyway). */
  if (rtt_ns > LK__SUB_RTT_SAMPLE_MAX_NS)
    rtt_ns = LK__SUB_RTT_SAMPLE_MAX_NS;
  if (rtt_ns > 0)
    ch->try_rtt_ns = ch->try_rtt_ns == 0 ? rtt_ns : (ch->try_rtt_ns * 7 + rtt_ns) / 8;
}

void lk__sub_note_others(lk_client_t *c, const char *channel, size_t len, long long heard) {
  lk__chan_t *ch = chan_find(c, channel, len);
  if (ch == NULL)
    return; /* this process never listened: nothing to thin */
  /* Our own subscription (waiters or a linger) heard it too. */
  if (ch->state == LK__CHAN_SUBSCRIBED && heard > 0)
    heard--;
  ch->others = heard < 0 ? 0 : heard > 65535 ? 65535 : (uint32_t)heard;
}

unsigned lk__sub_others(const lk__sub_t *s) { return s->chan != NULL ? s->chan->others : 0; }

int lk__sub_peek(lk_client_t *c, const char *channel, size_t len, lk__sub_cb cb,
                 lk__sub_peek_t *out) {
  lk__chan_t *ch = chan_find(c, channel, len);
  lk__queue_t *q;
  memset(out, 0, sizeof(*out));
  if (ch == NULL)
    return 0;
  /* Waiters are the listeners with cb; a watcher (inspect, a RedLock's
   * node, a leader observer) on the same channel is not one. The first
   * match ends the walk: waiters come first in practice. */
  for (q = ch->listeners.next; q != &ch->listeners; q = q->next) {
    if (lk__container_of(q, lk__sub_t, node)->cb == cb) {
      out->listeners = 1;
      break;
    }
  }
  out->subscribed = ch->state == LK__CHAN_SUBSCRIBED;
  out->heat = ch->heat;
  out->others = ch->others;
  out->try_rtt_ns = ch->try_rtt_ns;
  out->last_msg_ns = ch->last_msg_ns;
  return 1;
}

void lk__sub_pass(lk__sub_t *s) {
  lk__chan_t *ch = s->chan;
  if (ch != NULL && ch->last_ok)
    lk__defer(ch->client, &ch->pass);
}

static void sub_stop(lk__sub_t *s, int linger) {
  lk__chan_t *ch = s->chan;
  if (ch == NULL)
    return;
  lk__defer_cancel(&s->poke);
  lk__queue_remove(&s->node);
  if (ch->skipper == s)
    ch->skipper = NULL;
  s->chan = NULL;
  if (!linger && lk__queue_empty(&ch->listeners) && !ch->dispatching && !ch->internal) {
    chan_drop(ch);
    return;
  }
  chan_release(ch);
}

void lk__sub_stop(lk__sub_t *s) { sub_stop(s, 1); }

void lk__sub_stop_now(lk__sub_t *s) { sub_stop(s, 0); }

/* --- connection hooks --- */

void lk__pubsub_on_ready(lk__conn_t *conn) {
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, conn->client->chans, ch, tmp) {
    if (ch->conn == conn && ch->state == LK__CHAN_PENDING && ch->sub_op == NULL)
      chan_subscribe(ch);
  }
}

void lk__pubsub_on_down(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  lk__chan_t *ch, *tmp;
  int any = 0;
  if (conn == &c->ps)
    c->hb_expect_ns = 0;
  HASH_ITER(hh, c->chans, ch, tmp) {
    if (ch->conn != conn)
      continue;
    /* SUBSCRIBE replies still due are failed by the connection right
     * after this and find the channel PENDING. A denial is retried too: the
     * ACL may have changed. */
    ch->state = LK__CHAN_PENDING;
    poke_all(ch, LK_ECONN);
    any = 1;
  }
  /* Its node may have failed over: the next topology read moves the
   * channels to the new master (lk__pubsub_on_topology), else they come
   * back with the connection (lk__pubsub_on_ready). */
  if (any && c->cluster_on)
    lk__router_refresh(c);
}

int lk__pubsub_has_channels(const lk__conn_t *conn) {
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, conn->client->chans, ch, tmp) {
    if (ch->conn == conn)
      return 1;
  }
  return 0;
}

/* The topology was read: every channel whose slot now belongs to another
 * master (or whose mode changed: cluster found, sharded pub/sub missing)
 * moves there; channels left waiting by a redirection or an election are
 * retried. After the move each one is confirmed again, which makes its
 * listeners re-poll (a message may have gone to the old owner). */
void lk__pubsub_on_topology(lk_client_t *c) {
  lk__chan_t *ch, *tmp;
  if (c->closing)
    return;
  HASH_ITER(hh, c->chans, ch, tmp) {
    int sharded = 0;
    lk__conn_t *to;
    if (ch->internal && c->cluster_on) {
      /* Subscribed before the server turned out to be a cluster node. */
      chan_detach(ch);
      chan_free(ch);
      continue;
    }
    if (ch->conn == NULL || ch->state == LK__CHAN_DENIED)
      continue;
    to = route(ch, &sharded);
    if (to != ch->conn || (unsigned)sharded != ch->sharded) {
      chan_detach(ch);
      ch->moves = 0;
      chan_subscribe(ch);
    } else if (ch->state == LK__CHAN_PENDING && ch->sub_op == NULL) {
      ch->moves = 0;
      chan_subscribe(ch); /* now, or when its connection is ready */
    }
  }
}

/* Whether the oldest command in flight on conn is our SUNSUBSCRIBE of
 * name: its reply has the same shape as the server's own `sunsubscribe`
 * push in RESP2, and only the FIFO tells them apart. */
static int awaiting_sunsubscribe(const lk__conn_t *conn, const char *name, size_t len) {
  static const char verb[] = "*2\r\n$12\r\nSUNSUBSCRIBE\r\n";
  const size_t vlen = sizeof(verb) - 1;
  const lk__op_t *op;
  char hdr[32];
  int n;
  if (lk__queue_empty(&conn->sent))
    return 0;
  op = lk__container_of(lk__queue_head(&conn->sent), lk__op_t, node);
  n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", len);
  return op->cmd_len == vlen + (size_t)n + len + 2 && memcmp(op->cmd, verb, vlen) == 0 &&
         memcmp(op->cmd + vlen, hdr, (size_t)n) == 0 &&
         memcmp(op->cmd + vlen + (size_t)n, name, len) == 0;
}

/* The server ended a sharded subscription on its own: the channel's slot
 * has a new owner (failover or migration). Listeners re-poll now (a
 * message may have been missed), the channel follows the slot. */
static void slot_moved(lk__chan_t *ch) {
  lk_client_t *c = ch->client;
  lk__log(c, LK_LOG_INFO, "sharded subscription to %s ended by the server: resubscribing",
          ch->name);
  lk__op_forget(&ch->sub_op);
  ch->state = LK__CHAN_PENDING;
  ch->moves = 0;
  poke_all(ch, 0);
  lk__router_refresh(c);
  chan_subscribe(ch);
}

/* Returns 1 when r was a push (consumed here), 0 for a command's reply. */
int lk__pubsub_on_push(lk__conn_t *conn, redisReply *r) {
  lk_client_t *c = conn->client;
  lk__chan_t *ch;
  redisReply *ty, *name, *msg;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
    return 0;
  ty = r->element[0], name = r->element[1], msg = r->element[2];
  if (ty->type != REDIS_REPLY_STRING)
    return 0;
  if (strcmp(ty->str, "sunsubscribe") == 0) {
    if (name->type != REDIS_REPLY_STRING || awaiting_sunsubscribe(conn, name->str, name->len))
      return 0;
    ch = chan_find(c, name->str, name->len);
    /* A push for a subscription we have since moved elsewhere is stale. */
    if (ch != NULL && ch->conn == conn && ch->sharded && !ch->internal)
      slot_moved(ch);
    return 1;
  }
  if (strcmp(ty->str, "message") != 0 && strcmp(ty->str, "smessage") != 0)
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
  ch->last_msg_ns = lk__now_ns();
  ch->last_ok = msg->len <= sizeof(ch->last);
  ch->last_len = ch->last_ok ? msg->len : 0;
  if (ch->last_ok)
    memcpy(ch->last, msg->str, msg->len);
  lk__defer_cancel(&ch->pass); /* this message wakes anew */
  deliver(ch, msg->str, msg->len);
  return 1;
}

/* Hands msg to every listener in the order they came (the longest waiting
 * first: wake-one waiters rely on it, lk__sub_take). A lingering channel
 * has none: the message is dropped here. */
static void deliver(lk__chan_t *ch, const char *msg, size_t len) {
  lk__queue_t pending;
  /* Listeners may stop themselves or others, or start new ones, from the
   * callback: walk a private list and put each back before calling it. */
  lk__queue_init(&pending);
  lk__queue_move(&ch->listeners, &pending);
  ch->dispatching = 1;
  ch->taken = 0;
  ch->rationed = 0;
  ch->skipper = NULL;
  while (!lk__queue_empty(&pending)) {
    lk__sub_t *s = lk__container_of(lk__queue_head(&pending), lk__sub_t, node);
    lk__queue_remove(&s->node);
    lk__queue_insert_tail(&ch->listeners, &s->node);
    s->cb(s, LK__SUB_MESSAGE, 0, msg, len);
  }
  /* A wake for one that every listener left to another: the one that
   * skipped it first (still listening: lk__sub_stop clears it) gets it. */
  if (ch->taken == 0 && ch->skipper != NULL) {
    lk__sub_t *s = ch->skipper;
    ch->skipper = NULL;
    s->cb(s, LK__SUB_UNTAKEN, 0, msg, len);
  }
  ch->skipper = NULL;
  ch->dispatching = 0;
  chan_release(ch);
}

/* The handshake's INFO of a node: a cluster of servers before 7.0 has no
 * sharded pub/sub, and every process must know before its first release
 * (a script's SPUBLISH would fail there, silently under pcall). */
void lk__pubsub_on_info(lk__conn_t *conn, const char *info, size_t len) {
  lk_client_t *c = conn->client;
  const char *p = memmem(info, len, "redis_version:", 14);
  if (p == NULL || !c->cluster_on || c->ps_classic || c->o.pubsub_mode == LK_PUBSUB_CLASSIC)
    return;
  if (strtol(p + 14, NULL, 10) < 7)
    go_classic(c, "cluster node older than 7.0");
}

/* --- heartbeat ---
 *
 * Standalone: PUBLISH on the command connection to our own channel; the
 * integer reply says whether the server still sees our subscriber, and the
 * message must then arrive within the reply timeout.
 *
 * Cluster: that cannot work per shard (a PUBLISH counts the receivers of
 * the node it runs on; an SPUBLISH to a private channel would test one
 * slot's owner only). Instead every pub/sub connection that carries a
 * subscription gets a PING when nothing else is in flight on it: a
 * subscribed RESP2 connection answers ["pong", ""], a reply like any other
 * (FIFO), so a node that stopped answering trips the connection's reply
 * timeout, the connection is dropped and its channels resubscribe when it
 * is back (or on the slot's new master). What the PUBLISH count also
 * catches, a server that quietly forgot us, happens on a cluster when a
 * slot moves: the server says so with a `sunsubscribe` push, or (Redis 7.0
 * migrations) the topology read moves the channel. Cost: one PING per
 * subscribed node per period, none on nodes without our channels. */

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

static void on_ping_reply(void *data, int status, redisReply *r) {
  lk__conn_t *conn = data;
  if (status != 0 || conn->state != LK__CONN_READY)
    return; /* a lost connection is handled where it is seen */
  if (is_kind(r, "pong") ||
      (r->type == REDIS_REPLY_STATUS && r->len == 4 && memcmp(r->str, "PONG", 4) == 0))
    return;
  lk__conn_drop(conn, LK_EPROTOCOL, "unexpected reply to PING");
}

static void ping_tick(lk_client_t *c) {
  const char *argv[1] = {"PING"};
  size_t lens[1] = {4};
  lk__chan_t *ch, *tmp;
  HASH_ITER(hh, c->chans, ch, tmp) {
    lk__conn_t *conn = ch->conn;
    lk__op_t *op;
    int err = 0;
    /* Something in flight already has the reply timeout watching. */
    if (ch->state != LK__CHAN_SUBSCRIBED || conn == NULL ||
        conn->state != LK__CONN_READY || lk__conn_is_busy(conn))
      continue;
    op = lk__op_internal(c, 1, argv, lens, on_ping_reply, conn, &err);
    if (op == NULL)
      return;
    lk__conn_enqueue(conn, op); /* busy from now on: one PING per connection */
  }
}

static void hb_tick(uv_timer_t *t) {
  lk_client_t *c = t->data;
  lk__chan_t *hb;
  const char *argv[3] = {"PUBLISH", c->hb_channel, "1"};
  size_t lens[3] = {7, c->hb_channel_len, 1};
  int err = 0;
  linger_expire(c);
  if (c->user_chans == 0) {
    uv_timer_stop(&c->hb_timer);
    return;
  }
  if (c->cluster_on) {
    ping_tick(c);
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
