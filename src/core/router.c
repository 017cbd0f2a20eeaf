/* Layer 2 (discovery): may call layers 0-1 (docs/design.md, "Layers"). */
/* The router (router.h): nodes, slot routing, redirections, topology. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/router.h"
#include "core/sentinel.h"
#include "core/slot.h"
#include "core/topology.h"

/* A command redirected more often than this ends with its last error. */
#define LK__MAX_REDIRECTS 16
/* Topology refreshes start at most this often (a burst of MOVED replies
 * during a migration costs one). */
#define LK__REFRESH_MIN_NS (100u * 1000000u)
/* While a master that owns slots is unreachable, the map is read again
 * after 100 ms, then each period half as long again while nothing changes,
 * up to 500 ms; back to 100 ms while the map says that master has failed (the
 * cluster agreed it is down: its replica's election is at most a second or
 * two away). See watch_period. */
#define LK__WATCH_MIN_MS 100u
#define LK__WATCH_MAX_MS 500u

/* --- nodes --- */

static const char *node_host(const lk_client_t *c, const lk__node_t *n) {
  return n->host != NULL ? n->host : c->o.host;
}
static int node_port(const lk_client_t *c, const lk__node_t *n) {
  return n->host != NULL ? n->port : c->o.port;
}

/* Nodes are looked up by host:port in c->node_index: a slot map of N
 * masters is matched against the node list in O(N), not O(N^2). */
static int index_node(lk_client_t *c, const lk__node_t *n) {
  const char *h = node_host(c, n);
  return lk__addr_index_add(&c->node_index, lk__addr_hash(h, strlen(h), node_port(c, n)), n->idx);
}

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
  n->port = port;
  n->idx = (uint16_t)c->n_nodes;
  if (n->host == NULL || index_node(c, n) != 0) {
    lk__free(n->host);
    lk__free(n);
    return NULL;
  }
  pair = (lk__conn_t *)(n + 1);
  n->client = c;
  n->cmd = &pair[0];
  n->ps = &pair[1];
  lk__conn_init(c, n->cmd, LK__CONN_CMD);
  lk__conn_init(c, n->ps, LK__CONN_PUBSUB);
  n->cmd->node = n;
  n->ps->node = n;
  c->nodes[c->n_nodes++] = n;
  return n;
}

/* The node at index i of the client k->owner is k's host:port. */
static int node_is(const void *ctx, uint32_t i) {
  const lk__topo_key_t *k = ctx;
  const lk_client_t *c = k->owner;
  return lk__topo_key_is(k, node_host(c, c->nodes[i]), node_port(c, c->nodes[i]));
}

static lk__node_t *node_find(lk_client_t *c, const char *host, size_t host_len, int port) {
  lk__topo_key_t k = {c, host, host_len, port};
  long i = lk__topo_key_find(&c->node_index, &k, node_is);
  return i < 0 ? NULL : c->nodes[i];
}

/* The node at host:port, added when new; NULL when it cannot be: no memory,
 * or cluster_max_nodes reached (said once: a hostile or broken server could
 * otherwise make the client open a node, and its connections, per reply). */
static lk__node_t *node_get(lk_client_t *c, const char *host, size_t host_len, int port) {
  lk__node_t *n = node_find(c, host, host_len, port);
  char *h;
  if (n != NULL)
    return n;
  if (c->n_nodes >= c->o.cluster_max_nodes || c->n_nodes >= LK__TOPO_MAX_NODES) {
    if (!c->node_cap_logged)
      lk__log(c, LK_LOG_ERROR,
              "cluster node %.*s:%d not added: the client knows cluster_max_nodes (%zu) "
              "nodes already; slots it serves stay unrouted (LK_ECLUSTER)",
              (int)(host_len < 64 ? host_len : 64), host, port, c->o.cluster_max_nodes);
    c->node_cap_logged = 1;
    return NULL;
  }
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

/* The node of slot s's owner (NULL: none known). */
static lk__node_t *owner_of(const lk_client_t *c, size_t s) {
  uint16_t i = c->slot_node[s];
  return i == LK__TOPO_NONE || i >= c->n_nodes ? NULL : c->nodes[i];
}

/* Nobody is ready to be asked: besides the seed, dial one master that owns
 * slots and is not known to be down, so the map can be read from another
 * node while the seed is the one that died. When every such master is
 * down, waiting out its reconnect backoff (up to reconnect_max_ms), one of
 * them is dialled now, in turn, one dial at a time: a master whose dial
 * failed once (a stalled machine, a timeout) must not hold the map back for
 * seconds while holds wait on it. The watch period (watch_period) spaces
 * these dials. */
static void dial_another(lk_client_t *c) {
  const lk__node_t *last = NULL;
  lk__node_t *waiting[8];
  size_t n_waiting = 0;
  for (size_t s = 0; c->slot_node != NULL && s < LK__SLOTS; s++) {
    lk__node_t *n = owner_of(c, s);
    if (n == NULL || n == last)
      continue;
    last = n;
    if (n->cmd->state == LK__CONN_CONNECTING || n->cmd->state == LK__CONN_HANDSHAKE)
      return; /* a dial is under way: the first node ready asks */
    if (!n->down && n->cmd->state == LK__CONN_IDLE) {
      lk__conn_start(n->cmd);
      return;
    }
    if (n->cmd->state == LK__CONN_BACKOFF && n_waiting < sizeof waiting / sizeof waiting[0])
      waiting[n_waiting++] = n;
  }
  if (n_waiting > 0)
    lk__conn_retry_now(waiting[c->topo_dial_turn++ % n_waiting]->cmd);
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
    dial_another(c);
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

/* 1 when a node that owns slots is down (its command connection dropped
 * and is being dialled again, so far in vain); *failed is set when the
 * last map also says one of them has failed. A node left idle (not
 * dialled until a command needs it) is not watched: nobody is trying it. */
static int owner_down(const lk_client_t *c, int *failed) {
  const lk__node_t *last = NULL;
  int down = 0;
  *failed = 0;
  for (size_t s = 0; s < LK__SLOTS; s++) {
    const lk__node_t *n = owner_of(c, s);
    if (n == NULL || n == last)
      continue;
    last = n;
    if (!n->down || n->cmd->state == LK__CONN_IDLE)
      continue;
    down = 1;
    int i = lk__topo_find(c->topo, node_host(c, n), node_port(c, n));
    if (i >= 0 && c->topo->nodes[i].health == LK__TOPO_FAILED) {
      *failed = 1;
      return 1;
    }
  }
  return down;
}

/* When to read the map next. Normally every cluster_refresh_ms: a
 * failover is noticed even when no command meets a MOVED. While a master
 * that owns slots is down, far sooner (LK__WATCH_*): the holds on it are
 * gone if its replica took over without them, and its own reconnect
 * backoff (up to reconnect_max_ms) or the periodic read would tell that
 * seconds after the promotion. Stops once the node is back or the map
 * gives its slots to another. */
static uint64_t watch_period(lk_client_t *c) {
  uint64_t period = (uint64_t)c->o.cluster_refresh_ms, ms;
  int failed;
  if (!owner_down(c, &failed)) {
    c->topo_watch_ms = 0;
    return period;
  }
  if (failed || c->topo_watch_ms == 0)
    c->topo_watch_ms = LK__WATCH_MIN_MS;
  ms = c->topo_watch_ms;
  c->topo_watch_ms = ms * 3 / 2 < LK__WATCH_MAX_MS ? ms * 3 / 2 : LK__WATCH_MAX_MS;
  return ms < period ? ms : period;
}

static void on_refresh_timer(uv_timer_t *t) {
  lk_client_t *c = t->data;
  if (c->closing || !c->cluster_on)
    return;
  if (!c->topo_inflight)
    send_topology_query(c, "SHARDS");
  uv_timer_start(&c->topo_timer, on_refresh_timer, watch_period(c), 0);
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
 * for the holds in them (verified now); new masters with slots get node
 * records (connected when first used). */
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
    /* A master without slots serves nothing: no record (a MOVED to it
     * makes one when it takes a slot). */
    if (tn->role != LK__TOPO_MASTER || port == 0 || tn->n_slots == 0)
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
    c->owner->slots_moved(c, changed);
    lk__emit(c, LK_EVENT_TOPOLOGY_CHANGED);
  }
  /* Subscriptions follow their slots (and retry after a redirection). */
  c->owner->topology_read(c);
}

static void on_topology(void *data, int status, redisReply *r) {
  lk_client_t *c = data;
  lk__topo_t *t = NULL;
  int rc, was_slots = 0, over_cap = 0;
  c->topo_inflight = 0;
  if (c->closing)
    return;
  if (status == 0 || status == LK_EREDIS) {
    /* Which query this answers: SHARDS first, SLOTS as the fallback. */
    was_slots = c->topo_asked_slots;
    rc = lk__topo_parse(r, was_slots, NULL, c->o.cluster_max_nodes, &t, &over_cap);
    if (over_cap) {
      lk__log(c, LK_LOG_ERROR,
              "cluster topology reply refused: it lists more than cluster_max_nodes (%zu) "
              "nodes",
              c->o.cluster_max_nodes);
    } else if (rc == 0) {
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

/* A MOVED names the slot's owner from now on. When that is news (the map
 * named another node), the holds in the slot are verified, as a map saying
 * so would have them: after a failover to a replica without a hold, the
 * next map read may come from a node that has not heard of the promotion
 * yet (seconds on a loaded machine), and the holder must not wait for the
 * periodic read to be told. The slots are gathered and verified together
 * from the loop (on_moved_defer): a failover answers MOVED for each of the
 * old master's slots, and one walk of the holds serves them all. */
_Static_assert(sizeof(((lk_client_t *)0)->moved_slots) == LK__SLOTS / 8, "a bit per slot");

static void slot_moved_to(lk_client_t *c, int slot, const lk__node_t *n) {
  c->stats.moved_redirects++;
  if (c->slot_node[slot] != n->idx) {
    c->slot_node[slot] = n->idx;
    c->moved_slots[slot >> 3] |= (uint8_t)(1u << (slot & 7));
    lk__defer(c, &c->moved_defer);
  }
  refresh_soon(c);
}

/* Verifies the idle holds in the slots gathered since the last pass. While
 * a stale map sends a slot back to its old owner, the next MOVED for it
 * verifies again: at most once per map read (100 ms apart), until a map
 * agrees. A RedLock's quarantine of this cluster waits for that map (a
 * MOVED alone does not tell a failover from a migration or from a route
 * this client had not learned yet: docs/multilock.md). */
static void on_moved_defer(lk__defer_t *d) {
  lk_client_t *c = lk__container_of(d, lk_client_t, moved_defer);
  uint8_t changed[sizeof(c->moved_slots)];
  if (c->closing)
    return;
  memcpy(changed, c->moved_slots, sizeof(changed));
  memset(c->moved_slots, 0, sizeof(c->moved_slots));
  c->owner->slots_redirected(c, changed);
}

/* Digits only, 1..5 of them, value in [lo, hi]: 0, or -1. */
static int read_number(const char *p, const char *end, long lo, long hi, long *v) {
  long x = 0;
  if (p == end || end - p > 5)
    return -1;
  for (; p < end; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    x = x * 10 + (*p - '0');
  }
  if (x < lo || x > hi)
    return -1;
  *v = x;
  return 0;
}

/* "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381". The host may be
 * empty (a node that announces no endpoint): then it is the host the reply
 * came from. 0, or -1 when the text is not exactly of that form: a slot out
 * of range, a port that is not 1..65535, or a host with a byte no host
 * has (lk__topo_host_ok: a NUL inside made each such reply open one more
 * node, since the stored, truncated name never matched it again). */
static int parse_redirect(const redisReply *r, size_t skip, int *slot, const char **host,
                          size_t *host_len, int *port) {
  const char *p = r->str + skip, *end = r->str + r->len, *space, *colon = NULL;
  long v;
  space = memchr(p, ' ', (size_t)(end - p));
  if (space == NULL || read_number(p, space, 0, LK__SLOTS - 1, &v) != 0)
    return -1;
  *slot = (int)v;
  p = space + 1;
  for (const char *q = p; q < end; q++)
    if (*q == ':')
      colon = q; /* the last one: IPv6 addresses have several */
  if (colon == NULL || read_number(colon + 1, end, 1, 65535, &v) != 0)
    return -1;
  if (colon > p && !lk__topo_host_ok(p, (size_t)(colon - p)))
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
  c->owner->maybe_finish_close(c);
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
  if (parse_redirect(r, ask ? 4 : 6, &slot, &host, &host_len, &port) != 0) {
    /* Not a redirection any server sends: a garbled reply, which cannot be
     * trusted to say the command did not run. It ends as any garbled reply
     * to a command does (docs/errors.md): outcome unknown, settled by the
     * object (resent or given back); without the reply, so nothing takes it
     * for a MOVED to retry. */
    lk__log(c, LK_LOG_WARN, "malformed %s reply refused (%zu bytes): outcome unknown",
            ask ? "ASK" : "MOVED", r->len);
    lk__op_complete(op, LK_EUNKNOWN, NULL);
    return 1;
  }
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
    if (lk__conn_asking(n->cmd) != 0)
      return 0;
    resend(c, op, n->cmd);
    return 1;
  }
  slot_moved_to(c, slot, n);
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
  if (c->slot_node[slot] != n->idx) {
    /* Met on a pub/sub connection: a renewal in flight on the command
     * connection may already have been answered by the old master, so,
     * unlike slot_moved_to, it is followed by another (as after a map). */
    uint8_t changed[LK__SLOTS / 8];
    memset(changed, 0, sizeof(changed));
    changed[slot >> 3] = (uint8_t)(1u << (slot & 7));
    c->slot_node[slot] = n->idx;
    c->owner->slots_moved(c, changed);
  }
  refresh_soon(c);
  return 1;
}

int lk__router_reroute_unsent(lk_client_t *c, lk__op_t *op) {
  lk__conn_t *from = op->conn, *to;
  lk__queue_t *q;
  int prev_asking = 0;
  if (!c->cluster_on || c->closing || from == NULL || from->kind != LK__CONN_CMD ||
      from->state == LK__CONN_READY || from->state == LK__CONN_CLOSED || op->slot < 0 ||
      slot_owner(c, op->slot) == NULL)
    return 0; /* (a slot no map names goes to the seed: no owner to go to) */
  to = lk__router_cmd_conn(c, op->slot);
  /* Only from the queue of commands that never left: one sent, or paused
   * for a TRYAGAIN, is in no such queue. The one after an ASKING stays with
   * it (the pair goes to the node the ASK named). */
  for (q = from->unsent.next; q != &from->unsent; q = q->next) {
    lk__op_t *o = lk__container_of(q, lk__op_t, node);
    if (o == op)
      break;
    prev_asking = o->asking;
  }
  if (q == &from->unsent || prev_asking || to == NULL)
    return 0;
  if (to == from)
    return 1;
  /* Not back to a node whose connection dropped and has not come back (a
   * stale map that still names a dead master): it waits where it is. */
  if (to->node == NULL || to->node->down)
    return 0;
  lk__queue_remove(&op->node);
  lk__conn_enqueue(to, op);
  return 1;
}

void lk__router_refresh(lk_client_t *c) { refresh_soon(c); }

/* --- connection events --- */

void lk__router_on_conn_down(lk__conn_t *conn) {
  /* A master that went away may have failed over: ask who owns what now,
   * and again soon while it stays away (watch_period). */
  if (conn->client->cluster_on && conn->kind == LK__CONN_CMD) {
    if (conn->node != NULL && !conn->node->down) {
      conn->node->down = 1;
      conn->client->topo_watch_ms = 0; /* a new outage: start short */
    }
    refresh_soon(conn->client);
  }
}

void lk__router_on_conn_ready(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  if (conn->kind == LK__CONN_CMD && conn->node != NULL)
    conn->node->down = 0;
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
   * so, the topology_read event; then its node is left alone). */
  if (c->cluster_on && conn->kind == LK__CONN_PUBSUB)
    return c->owner->has_channels(conn);
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
  if (index_node(c, &c->node0) != 0)
    return LK_ENOMEM;
  if (c->o.cluster == LK_CLUSTER_ON && cluster_begin(c) != 0) {
    lk__addr_index_free(&c->node_index); /* the caller frees no router on error */
    return LK_ENOMEM;
  }
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
  lk__defer_init(&c->moved_defer, on_moved_defer);
  if (c->cluster_on)
    refresh_soon(c);
}

static void on_router_timer_closed(uv_handle_t *h) {
  lk_client_t *c = h->data;
  c->owner->handle_closed(c);
}

void lk__router_close(lk_client_t *c) {
  while (!lk__queue_empty(&c->retry_ops)) {
    lk__op_t *op = lk__container_of(lk__queue_head(&c->retry_ops), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__op_complete(op, LK_ECANCELED, NULL);
  }
  uv_timer_stop(&c->retry_timer);
  uv_timer_stop(&c->topo_timer);
  lk__defer_cancel(&c->moved_defer);
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
  lk__addr_index_free(&c->node_index);
  lk__free(c->slot_node);
  c->slot_node = NULL;
  lk__topo_free(c->topo);
  c->topo = NULL;
}
