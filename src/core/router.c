/* The router (router.h): nodes, slot routing, redirections, topology. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/router.h"
#include "core/sentinel.h"
#include "core/slot.h"
#include "core/topology.h"
#include "core/watchdog.h"

/* A command redirected more often than this ends with its last error. */
#define LK__MAX_REDIRECTS 16
/* Topology refreshes start at most this often (a burst of MOVED replies
 * during a migration costs one). */
#define LK__REFRESH_MIN_NS (100u * 1000000u)

/* --- nodes --- */

/* Node 0 is the configured server (or seed) and uses the client's own two
 * connections; every other node carries its pair after the struct. */
static lk__node_t *node_add(lk_client_t *c, const char *host, int port) {
  lk__node_t *n, **grown;
  lk__conn_t *pair;
  if (c->n_nodes == c->nodes_cap) {
    size_t cap = c->nodes_cap < 4 ? 8 : c->nodes_cap * 2;
    grown = lk__malloc(cap * sizeof(*grown));
    if (grown == NULL)
      return NULL;
    memcpy(grown, c->nodes, c->n_nodes * sizeof(*grown));
    if (c->nodes != c->node0_list)
      lk__free(c->nodes);
    c->nodes = grown;
    c->nodes_cap = cap;
  }
  n = lk__calloc(1, sizeof(*n) + 2 * sizeof(lk__conn_t));
  if (n == NULL)
    return NULL;
  n->host = lk__strdup(host);
  if (n->host == NULL) {
    lk__free(n);
    return NULL;
  }
  pair = (lk__conn_t *)(n + 1);
  n->client = c;
  n->port = port;
  n->idx = (uint16_t)c->n_nodes;
  n->cmd = &pair[0];
  n->ps = &pair[1];
  lk__conn_init(c, n->cmd, LK__CONN_CMD);
  lk__conn_init(c, n->ps, LK__CONN_PUBSUB);
  n->cmd->node = n;
  n->ps->node = n;
  c->nodes[c->n_nodes++] = n;
  return n;
}

static const char *node_host(const lk_client_t *c, const lk__node_t *n) {
  return n->host != NULL ? n->host : c->o.host;
}
static int node_port(const lk_client_t *c, const lk__node_t *n) {
  return n->host != NULL ? n->port : c->o.port;
}

static lk__node_t *node_find(lk_client_t *c, const char *host, size_t host_len, int port) {
  size_t i;
  for (i = 0; i < c->n_nodes; i++) {
    lk__node_t *n = c->nodes[i];
    const char *h = node_host(c, n);
    if (node_port(c, n) == port && strlen(h) == host_len && memcmp(h, host, host_len) == 0)
      return n;
  }
  return NULL;
}

static lk__node_t *node_get(lk_client_t *c, const char *host, size_t host_len, int port) {
  lk__node_t *n = node_find(c, host, host_len, port);
  char *h;
  if (n != NULL || c->n_nodes >= LK__TOPO_MAX_NODES)
    return n;
  h = lk__memdup0(host, host_len);
  if (h == NULL)
    return NULL;
  n = node_add(c, h, port);
  lk__free(h);
  return n;
}

/* --- routing --- */

static lk__node_t *slot_owner(lk_client_t *c, int slot) {
  uint16_t i;
  if (slot < 0 || c->slot_node == NULL)
    return NULL;
  i = c->slot_node[slot];
  return i == LK__TOPO_NONE || i >= c->n_nodes ? NULL : c->nodes[i];
}

lk__conn_t *lk__router_cmd_conn(lk_client_t *c, int slot) {
  lk__node_t *n = c->cluster_on ? slot_owner(c, slot) : NULL;
  return n != NULL ? n->cmd : &c->cmd;
}

lk__conn_t *lk__router_ps_conn(lk_client_t *c, int slot) {
  lk__node_t *n = c->cluster_on ? slot_owner(c, slot) : NULL;
  return n != NULL ? n->ps : &c->ps;
}

/* --- cluster mode --- */

static void refresh_soon(lk_client_t *c);

static int cluster_begin(lk_client_t *c) {
  size_t i;
  if (c->cluster_on)
    return 0;
  if (c->o.cluster == LK_CLUSTER_OFF)
    return LK_ECLUSTER;
  c->slot_node = lk__malloc(LK__SLOTS * sizeof(*c->slot_node));
  if (c->slot_node == NULL)
    return LK_ENOMEM;
  for (i = 0; i < LK__SLOTS; i++)
    c->slot_node[i] = LK__TOPO_NONE;
  c->cluster_on = 1;
  lk__log(c, LK_LOG_INFO, "the server is a cluster node: routing by slot");
  if (c->o.db != 0)
    lk__log(c, LK_LOG_WARN, "db %d is not used: a cluster has only database 0", c->o.db);
  if (c->loop != NULL && c->topo_timer.data == c)
    refresh_soon(c);
  return 0;
}

void lk__router_on_info(lk__conn_t *conn, const char *info, size_t len) {
  lk_client_t *c = conn->client;
  const char *p = memmem(info, len, "cluster_enabled:1", 17);
  if (p != NULL && !c->cluster_on && c->o.cluster != LK_CLUSTER_OFF)
    cluster_begin(c);
  lk__pubsub_on_info(conn, info, len);
}

/* --- topology --- */

static void on_topology(void *data, int status, redisReply *r);

static lk__conn_t *any_ready_cmd(lk_client_t *c) {
  size_t i;
  if (c->cmd.state == LK__CONN_READY)
    return &c->cmd;
  for (i = 0; i < c->n_nodes; i++)
    if (c->nodes[i]->cmd->state == LK__CONN_READY)
      return c->nodes[i]->cmd;
  return NULL;
}

static int send_topology_query(lk_client_t *c, const char *what) {
  const char *argv[2] = {"CLUSTER", what};
  size_t lens[2] = {7, strlen(what)};
  lk__conn_t *conn = any_ready_cmd(c);
  int err = 0;
  lk__op_t *op;
  if (conn == NULL) {
    /* Nobody is ready: the first node that becomes ready asks. */
    c->topo_wanted = 1;
    lk__conn_start(&c->cmd);
    return 0;
  }
  op = lk__op_internal(c, 2, argv, lens, on_topology, c, &err);
  if (op == NULL)
    return err;
  /* on_topology reads the reply as the query that was really sent. */
  c->topo_asked_slots = what[0] == 'S' && what[1] == 'L';
  c->topo_inflight = 1;
  c->topo_last_ns = lk__now_ns();
  lk__conn_enqueue(conn, op);
  return 0;
}

static void on_refresh_timer(uv_timer_t *t) {
  lk_client_t *c = t->data;
  if (c->closing || !c->cluster_on)
    return;
  if (!c->topo_inflight)
    send_topology_query(c, "SHARDS");
  /* Periodic refresh: a failover is noticed even when no command meets a
   * MOVED. */
  uv_timer_start(&c->topo_timer, on_refresh_timer, (uint64_t)c->o.cluster_refresh_ms, 0);
}

static void refresh_soon(lk_client_t *c) {
  uint64_t now = lk__now_ns(), wait_ns = 0;
  if (c->closing || !c->cluster_on)
    return;
  if (c->topo_inflight) {
    c->topo_again = 1;
    return;
  }
  if (c->topo_last_ns != 0 && now - c->topo_last_ns < LK__REFRESH_MIN_NS)
    wait_ns = LK__REFRESH_MIN_NS - (now - c->topo_last_ns);
  uv_update_time(c->loop);
  uv_timer_start(&c->topo_timer, on_refresh_timer, (wait_ns + 999999u) / 1000000u, 0);
}

/* The map says who owns what: slots whose master changed are a loss event
 * for the holds in them (verified now); new masters get node records
 * (connected when first used). */
static void apply_topology(lk_client_t *c, lk__topo_t *t) {
  uint8_t changed[LK__SLOTS / 8];
  uint16_t *map;
  size_t i, n_changed;
  uint16_t *idx = lk__calloc(t->n_nodes ? t->n_nodes : 1, sizeof(*idx));
  if (idx == NULL) {
    lk__topo_free(t);
    return;
  }
  for (i = 0; i < t->n_nodes; i++) {
    const lk__topo_node_t *tn = &t->nodes[i];
    lk__node_t *n = NULL;
    /* CLUSTER SHARDS names both ports of a node with TLS: a TLS client
     * dials the TLS one (docs/tls.md). */
    int port = c->tls != NULL && tn->tls_port > 0 ? tn->tls_port : tn->port;
    idx[i] = LK__TOPO_NONE;
    if (tn->role != LK__TOPO_MASTER || port == 0)
      continue;
    n = node_get(c, tn->host, strlen(tn->host), port);
    if (n != NULL)
      idx[i] = n->idx;
  }
  map = c->slot_node;
  for (i = 0; i < LK__SLOTS; i++)
    map[i] = t->slot_node[i] == LK__TOPO_NONE ? LK__TOPO_NONE : idx[t->slot_node[i]];
  lk__free(idx);
  n_changed = c->topo != NULL ? lk__topo_diff(c->topo, t, changed) : 0;
  lk__topo_free(c->topo);
  c->topo = t;
  c->stats.topology_refreshes++;
  if (n_changed > 0) {
    /* Replication is asynchronous: a hold on a master that failed over, or
     * in a slot that moved, may be gone. Verify every watched one in those
     * slots now: a renewal that finds it gone reports it lost (on_lost). */
    c->stats.topology_changes++;
    lk__log(c, lk__event_level(c),
            "cluster topology changed: %zu slot(s) have a new master; "
            "holds in them are being verified",
            n_changed);
    /* ... so to a RedLock this cluster is a member that may have lost its
     * data, as after a restart without persistence: it abstains for the
     * quarantine (docs/multilock.md). */
    c->restarted_ns = lk__now_ns();
    lk__wd_verify_slots(c, changed);
    lk__emit(c, LK_EVENT_TOPOLOGY_CHANGED);
  }
  /* Subscriptions follow their slots (and retry after a redirection). */
  lk__pubsub_on_topology(c);
}

static void on_topology(void *data, int status, redisReply *r) {
  lk_client_t *c = data;
  lk__topo_t *t = NULL;
  int rc, was_slots = 0;
  c->topo_inflight = 0;
  if (c->closing)
    return;
  if (status == 0 || status == LK_EREDIS) {
    /* Which query this answers: SHARDS first, SLOTS as the fallback. */
    was_slots = c->topo_asked_slots;
    rc = was_slots ? lk__topo_from_slots(r, NULL, &t) : lk__topo_from_shards(r, NULL, &t);
    if (rc == 0) {
      apply_topology(c, t);
    } else if (!was_slots && (rc == LK_EREDIS || rc == LK_ECLUSTER)) {
      /* No CLUSTER SHARDS (an older server), or a shard caught in the
       * middle of a failover: CLUSTER SLOTS names each range's owner. */
      if (send_topology_query(c, "SLOTS") == 0 && c->topo_inflight)
        return;
    } else {
      lk__log(c, LK_LOG_WARN, "cluster topology reply not usable (%s)", lk_err_name(rc));
    }
  }
  c->topo_asked_slots = 0;
  if (c->topo_again) {
    c->topo_again = 0;
    refresh_soon(c);
  }
}

/* --- redirections --- */

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381". The host may be
 * empty (a node that announces no endpoint): then it is the host the reply
 * came from. 0, or -1 when the text is not of that form. */
static int parse_redirect(const redisReply *r, size_t skip, int *slot, const char **host,
                          size_t *host_len, int *port) {
  const char *p = r->str + skip, *end = r->str + r->len, *colon;
  char *stop;
  long v = strtol(p, &stop, 10);
  if (stop == p || v < 0 || v >= LK__SLOTS || stop >= end || *stop != ' ')
    return -1;
  *slot = (int)v;
  p = stop + 1;
  colon = NULL;
  for (const char *q = p; q < end; q++)
    if (*q == ':')
      colon = q; /* the last one: IPv6 addresses have several */
  if (colon == NULL)
    return -1;
  v = strtol(colon + 1, &stop, 10);
  if (stop == colon + 1 || v <= 0 || v > 65535)
    return -1;
  *host = p;
  *host_len = (size_t)(colon - p);
  *port = (int)v;
  return 0;
}

/* A redirection that names no host means the node it came from; a node
 * reached over a unix socket has no host to name, so it cannot be
 * followed (the command ends with the error). */
static int redirect_host(const lk_client_t *c, const lk__conn_t *conn, const char **host,
                         size_t *len) {
  if (conn->node->host == NULL && c->o.unix_path != NULL)
    return 0;
  *host = node_host(c, conn->node);
  *len = strlen(*host);
  return 1;
}

static int starts(const redisReply *r, const char *word) {
  size_t n = strlen(word);
  return r->len >= n && memcmp(r->str, word, n) == 0;
}

static void on_retry_timer(uv_timer_t *t);

/* Sends op again through the router: to its slot's owner, or `to`. */
static void resend(lk_client_t *c, lk__op_t *op, lk__conn_t *to) {
  lk__conn_enqueue(to != NULL ? to : lk__router_cmd_conn(c, op->slot), op);
}

/* TRYAGAIN (a multi-key command during a slot's migration) and CLUSTERDOWN
 * (an election in progress): the command did not run; it is sent again
 * after a pause, as long as the reply timeout, counted from its first send,
 * is not spent. */
static int retry_later(lk_client_t *c, lk__op_t *op) {
  uint64_t now = lk__now_ns();
  uint64_t budget = (uint64_t)c->o.reply_timeout_ms * 1000000u;
  uint64_t pause_ms = 10u << (op->redirects < 5 ? op->redirects : 5);
  if (now - op->first_sent_ns >= budget)
    return 0;
  /* The last resend goes at the reply timeout's end, not a pause past it. */
  if (pause_ms * 1000000u > op->first_sent_ns + budget - now)
    pause_ms = (op->first_sent_ns + budget - now + 999999u) / 1000000u;
  op->retry_at_ns = now + pause_ms * 1000000u;
  lk__queue_insert_tail(&c->retry_ops, &op->node);
  /* Armed for a later retry: this one is due first. */
  if (!uv_is_active((uv_handle_t *)&c->retry_timer) ||
      uv_timer_get_due_in(&c->retry_timer) > pause_ms) {
    uv_update_time(c->loop);
    uv_timer_start(&c->retry_timer, on_retry_timer, pause_ms, 0);
  }
  c->stats.cluster_retries++;
  return 1;
}

static void on_retry_timer(uv_timer_t *t) {
  lk_client_t *c = t->data;
  uint64_t now = lk__now_ns(), next = 0;
  lk__queue_t due, *q;
  lk__queue_init(&due);
  for (q = c->retry_ops.next; q != &c->retry_ops;) {
    lk__op_t *op = lk__container_of(q, lk__op_t, node);
    q = q->next;
    if (op->retry_at_ns <= now) {
      lk__queue_remove(&op->node);
      lk__queue_insert_tail(&due, &op->node);
    } else if (next == 0 || op->retry_at_ns < next) {
      next = op->retry_at_ns;
    }
  }
  lk__client_cork(c);
  while (!lk__queue_empty(&due)) {
    lk__op_t *op = lk__container_of(lk__queue_head(&due), lk__op_t, node);
    lk__queue_remove(&op->node);
    resend(c, op, NULL);
  }
  lk__client_uncork(c);
  if (next != 0) {
    uv_update_time(c->loop);
    uv_timer_start(&c->retry_timer, on_retry_timer, (next - now + 999999u) / 1000000u, 0);
  }
  /* A close waiting for the retry list may go on now. */
  lk__client_maybe_finish_close(c);
}

int lk__router_try_later(const lk_client_t *c, const redisReply *r) {
  /* A redirection the router stopped following (too many in a row: a long
   * migration alternates TRYAGAIN at the source and ASK to the target) did
   * not run either. */
  return c->cluster_on && r != NULL && r->type == REDIS_REPLY_ERROR &&
         (starts(r, "TRYAGAIN") || starts(r, "CLUSTERDOWN") || starts(r, "MOVED ") ||
          starts(r, "ASK "));
}

int lk__router_redirected(lk__conn_t *conn, lk__op_t *op, redisReply *r) {
  lk_client_t *c = conn->client;
  const char *host;
  size_t host_len;
  int slot, port, ask;
  lk__node_t *n;
  if (r->type != REDIS_REPLY_ERROR || c->closing >= 2 || op->redirects >= LK__MAX_REDIRECTS)
    return 0;
  /* With sentinels, READONLY means node 0 is a replica now: the command
   * did not run and goes to the master they name next. */
  if (c->sentinel != NULL && starts(r, "READONLY"))
    return lk__sentinel_readonly(conn, op);
  if (op->first_sent_ns == 0)
    op->first_sent_ns = op->sent_ns;
  if (starts(r, "TRYAGAIN") || starts(r, "CLUSTERDOWN")) {
    if (!c->cluster_on || (op->tryagain_ends && starts(r, "TRYAGAIN")))
      return 0;
    op->redirects++;
    return retry_later(c, op);
  }
  ask = starts(r, "ASK ");
  if (!ask && !starts(r, "MOVED "))
    return 0;
  if (parse_redirect(r, ask ? 4 : 6, &slot, &host, &host_len, &port) != 0)
    return 0;
  if (!c->cluster_on && cluster_begin(c) != 0)
    return 0; /* cluster support turned off: the error stands */
  if (host_len == 0 && !redirect_host(c, conn, &host, &host_len))
    return 0;
  n = node_get(c, host, host_len, port);
  if (n == NULL)
    return 0;
  op->redirects++;
  op->slot = slot;
  if (ask) {
    /* The slot is being migrated and this key already lives on the target:
     * ASKING lets the next command in, once. The map stays as it is. */
    c->stats.ask_redirects++;
    if (lk__router_asking(c, n->cmd) != 0)
      return 0;
    resend(c, op, n->cmd);
    return 1;
  }
  c->stats.moved_redirects++;
  c->slot_node[slot] = n->idx;
  refresh_soon(c);
  resend(c, op, n->cmd);
  return 1;
}

int lk__router_note_moved(lk__conn_t *conn, const redisReply *r) {
  lk_client_t *c = conn->client;
  const char *host;
  size_t host_len;
  int slot, port;
  lk__node_t *n;
  if (r == NULL || r->type != REDIS_REPLY_ERROR || !c->cluster_on || c->closing ||
      !starts(r, "MOVED ") || parse_redirect(r, 6, &slot, &host, &host_len, &port) != 0)
    return 0;
  if (host_len == 0 && !redirect_host(c, conn, &host, &host_len))
    return 0;
  n = node_get(c, host, host_len, port);
  if (n == NULL)
    return 0;
  c->stats.moved_redirects++;
  c->slot_node[slot] = n->idx;
  refresh_soon(c);
  return 1;
}

void lk__router_refresh(lk_client_t *c) { refresh_soon(c); }

/* ASKING, nobody waits for its +OK; it must immediately precede the
 * command it admits on that connection, which enqueueing both in a row
 * guarantees (commands leave a connection in order). */
int lk__router_asking(lk_client_t *c, lk__conn_t *conn) {
  const char *argv[1] = {"ASKING"};
  int err = 0;
  lk__op_t *op = lk__op_internal(c, 1, argv, NULL, NULL, NULL, &err);
  if (op == NULL)
    return err;
  lk__conn_enqueue(conn, op);
  return 0;
}

/* --- connection events --- */

void lk__router_on_conn_down(lk__conn_t *conn) {
  /* A master that went away may have failed over: ask who owns what now. */
  if (conn->client->cluster_on && conn->kind == LK__CONN_CMD)
    refresh_soon(conn->client);
}

void lk__router_on_conn_ready(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  if (c->cluster_on && c->topo_wanted && conn->kind == LK__CONN_CMD) {
    c->topo_wanted = 0;
    refresh_soon(c);
  }
}

int lk__router_redial(const lk__conn_t *conn) {
  const lk_client_t *c = conn->client;
  size_t i;
  /* Node 0 is the seed: the client's way in, always dialled. A node with
   * slots is dialled on too: its failed attempts keep asking for the
   * topology, which is how a promotion after its death is learnt. */
  /* A pub/sub connection is dialled while a channel lives on it (the
   * channels of a dead master move to its replica once the topology says
   * so, lk__pubsub_on_topology; then its node is left alone). */
  if (c->cluster_on && conn->kind == LK__CONN_PUBSUB)
    return lk__pubsub_has_channels(conn);
  if (!c->cluster_on || conn->kind != LK__CONN_CMD || conn->node == NULL ||
      conn->node->idx == 0 || c->slot_node == NULL || !lk__queue_empty(&conn->unsent))
    return 1;
  for (i = 0; i < LK__SLOTS; i++)
    if (c->slot_node[i] == conn->node->idx)
      return 1;
  return 0;
}

/* --- lifecycle --- */

int lk__router_alloc(lk_client_t *c) {
  c->node0.client = c;
  c->node0.cmd = &c->cmd;
  c->node0.ps = &c->ps;
  c->node0.idx = 0;
  c->nodes = c->node0_list;
  c->nodes_cap = 1;
  c->nodes[0] = &c->node0;
  c->n_nodes = 1;
  lk__queue_init(&c->retry_ops);
  if (c->o.cluster == LK_CLUSTER_ON)
    return cluster_begin(c);
  return 0;
}

void lk__router_start(lk_client_t *c) {
  c->cmd.node = &c->node0;
  c->ps.node = &c->node0;
  uv_timer_init(c->loop, &c->retry_timer);
  c->retry_timer.data = c;
  uv_timer_init(c->loop, &c->topo_timer);
  c->topo_timer.data = c;
  c->handles_open += 2;
  if (c->cluster_on)
    refresh_soon(c);
}

static void on_router_timer_closed(uv_handle_t *h) { lk__client_handle_closed(h->data); }

void lk__router_close(lk_client_t *c) {
  while (!lk__queue_empty(&c->retry_ops)) {
    lk__op_t *op = lk__container_of(lk__queue_head(&c->retry_ops), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__op_complete(op, LK_ECANCELED, NULL);
  }
  uv_timer_stop(&c->retry_timer);
  uv_timer_stop(&c->topo_timer);
  uv_close((uv_handle_t *)&c->retry_timer, on_router_timer_closed);
  uv_close((uv_handle_t *)&c->topo_timer, on_router_timer_closed);
}

void lk__router_free(lk_client_t *c) {
  size_t i;
  for (i = 1; i < c->n_nodes; i++) {
    lk__node_t *n = c->nodes[i];
    lk__conn_free_buffers(n->cmd);
    lk__conn_free_buffers(n->ps);
    lk__free(n->host);
    lk__free(n);
  }
  if (c->nodes != c->node0_list)
    lk__free(c->nodes);
  c->nodes = NULL;
  c->n_nodes = 0;
  lk__free(c->slot_node);
  c->slot_node = NULL;
  lk__topo_free(c->topo);
  c->topo = NULL;
}
