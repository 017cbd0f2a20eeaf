/* lk_list: one SCAN step with the keys classified on the server
 * (scripts/inspect/list.lua, docs/inspect.md "Listing"). A one-shot op like
 * lk_inspect: the request record lives from the call to its callback.
 *
 * On a cluster the walk visits every master, one SCAN walk each, in the
 * order of the lowest slot each owns. The cursor names the master by that
 * slot: "S:N" is SCAN cursor N on the master owning slot S (the script names
 * no key, so the op is routed by setting its slot). When one master's walk
 * ends, the step returns "S2:0", S2 being the next master's lowest slot, or
 * "0" after the last. A fresh client does not know the mode or the slot map
 * yet: a first step from "0" that finds the client became a cluster starts
 * the cluster walk instead, and the walk waits (bounded) for the router's
 * first slot map. */
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/router.h"
#include "core/slot.h"
#include "core/topology.h"

/* The slot-map wait: at most this many PING round trips (and the reply
 * timeout in time) for the router's first topology read. */
#define LIST_MAP_PINGS 1000

typedef struct list_req_s {
  lk_client_t *c;
  lk_list_cb cb;
  void *arg;
  int count;
  int slot;        /* cluster: the slot whose master is scanned; -1: node 0 */
  int restartable; /* a standalone step from "0" on a client whose mode was unknown */
  int pings;
  uint64_t t0;
  char cursor[24]; /* the node's SCAN cursor */
  char next[48];
  char pattern[];
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

static void finish(list_req_t *q, int status, const lk_list_entry_t *e, size_t n) {
  if (status == 0)
    q->cb(q->c, 0, e, n, q->next, q->arg);
  else
    q->cb(q->c, status, NULL, 0, NULL, q->arg);
  lk__free(q);
}

/* The lowest slot above `after` that is the lowest slot of its master: the
 * next master of the walk. -1: none; LK_ENOMEM. */
static int next_master_slot(lk_client_t *c, int after) {
  uint8_t *seen;
  int s, found = -1;
  if (c->slot_node == NULL)
    return -1;
  if ((seen = lk__calloc(c->n_nodes ? c->n_nodes : 1, 1)) == NULL)
    return LK_ENOMEM;
  for (s = 0; s < LK__SLOTS; s++) {
    uint16_t idx = c->slot_node[s];
    if (idx == LK__TOPO_NONE || idx >= c->n_nodes || seen[idx])
      continue;
    seen[idx] = 1;
    if (s > after) {
      found = s;
      break;
    }
  }
  lk__free(seen);
  return found;
}

static void on_list(void *data, int status, redisReply *r);

/* Sends the step for q->cursor: to node 0, or to the master of q->slot. */
static int send_step(list_req_t *q) {
  const char *argv[3];
  char cnt[24];
  lk__op_t *op;
  int rc = 0;
  argv[0] = q->cursor, argv[1] = q->pattern;
  lk__i64_to_str(cnt, q->count);
  argv[2] = cnt;
  op = lk__script_prepare(q->c, lk__script_find("inspect/list"), 0, 3, argv, NULL, on_list, q,
                          &rc);
  if (op == NULL)
    return rc;
  op->slot = q->slot >= 0 ? q->slot : LK__NO_SLOT;
  if ((rc = lk__op_submit(q->c, op)) != 0)
    lk__op_free(op);
  return rc;
}

static int cluster_step(list_req_t *q);

static void on_ping(void *data, int status, redisReply *r) {
  list_req_t *q = data;
  int rc;
  (void)r;
  if (status != 0 && status != LK_EREDIS) {
    finish(q, status, NULL, 0);
    return;
  }
  if ((rc = cluster_step(q)) != 0)
    finish(q, rc, NULL, 0);
}

/* The cluster walk's step for q->slot / q->cursor (q->slot -1: from the
 * start), once the router has a slot map. 0: a callback will come. */
static int cluster_step(list_req_t *q) {
  lk_client_t *c = q->c;
  int rc;
  if (c->ever_connected && !lk__cluster(c))
    return LK_EINVAL; /* an "S:N" cursor, and the server is no cluster */
  if (c->topo == NULL) {
    const char *ping = "PING";
    uint64_t budget = (uint64_t)c->o.reply_timeout_ms * 1000000u;
    if (q->pings++ >= LIST_MAP_PINGS || lk__now_ns() - q->t0 > budget)
      return LK_ECLUSTER;
    /* The router reads the map at its first connection; a PING's round
     * trip on the seed's connection follows that query. */
    if (q->pings == 1)
      lk__router_refresh(c);
    return lk__cmd_argv(c, 1, &ping, NULL, on_ping, q, &rc) != NULL ? 0 : rc;
  }
  if (q->slot < 0) {
    q->slot = next_master_slot(c, -1);
    if (q->slot == LK_ENOMEM)
      return LK_ENOMEM;
    if (q->slot < 0)
      return LK_ECLUSTER; /* no master owns a slot */
    snprintf(q->cursor, sizeof(q->cursor), "0");
  }
  return send_step(q);
}

static void on_list(void *data, int status, redisReply *r) {
  list_req_t *q = data;
  lk_list_entry_t *entries = NULL;
  redisReply *names;
  size_t i, n = 0;
  int rc;
  if (r != NULL && q->restartable && lk__cluster(q->c)) {
    /* The first connection found a cluster: the reply (an error when the
     * seed is a replica, which refuses scripts) was the seed's only. The
     * whole walk starts instead. */
    q->restartable = 0;
    q->slot = -1;
    if ((rc = cluster_step(q)) != 0)
      finish(q, rc, NULL, 0);
    return;
  }
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_ERROR)
    status = lk__status_of(r);
  if (status == 0 && (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                      r->element[0]->type != REDIS_REPLY_STRING ||
                      r->element[0]->len >= sizeof(q->cursor) ||
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
  if (status == 0) {
    const char *node_next = r->element[0]->str;
    if (q->slot < 0) {
      snprintf(q->next, sizeof(q->next), "%s", node_next);
    } else if (strcmp(node_next, "0") != 0) {
      snprintf(q->next, sizeof(q->next), "%d:%s", q->slot, node_next);
    } else {
      /* This master is done: the next one from its start, or the end. */
      int s = next_master_slot(q->c, q->slot);
      if (s == LK_ENOMEM)
        status = LK_ENOMEM;
      else if (s < 0)
        snprintf(q->next, sizeof(q->next), "0");
      else
        snprintf(q->next, sizeof(q->next), "%d:0", s);
    }
  }
  finish(q, status, entries, n);
  lk__free(entries);
}

/* "N" (a SCAN cursor: up to 20 digits) or "S:N" (cluster: S a slot).
 * 0 with *slot (-1 for "N") and the node cursor copied; -1 otherwise. */
static int parse_cursor(const char *s, int *slot, char node[24]) {
  const char *colon = strchr(s, ':'), *num = colon != NULL ? colon + 1 : s;
  size_t n = 0;
  *slot = -1;
  if (colon != NULL) {
    char *end;
    long v;
    if (colon == s || colon - s > 5 || s[0] < '0' || s[0] > '9')
      return -1;
    v = strtol(s, &end, 10);
    if (end != colon || v < 0 || v >= LK__SLOTS)
      return -1;
    *slot = (int)v;
  }
  for (; num[n] != '\0'; n++)
    if (num[n] < '0' || num[n] > '9' || n >= 20)
      return -1;
  if (n == 0)
    return -1;
  memcpy(node, num, n + 1);
  return 0;
}

int lk_list(lk_client_t *c, const char *pattern, const char *cursor, int count, lk_list_cb cb,
            void *arg) {
  list_req_t *q;
  size_t plen;
  int rc, slot;
  char node[24];
  if ((rc = lk__check_client(c)) != 0)
    return rc;
  if (cb == NULL || cursor == NULL || parse_cursor(cursor, &slot, node) < 0 || count < 1 ||
      count > 10000)
    return LK_EINVAL;
  if (pattern == NULL)
    pattern = "*";
  plen = strlen(pattern);
  if (plen == 0 || plen > c->o.max_name_len)
    return LK_EINVAL;
  /* A plain cursor other than "0" on a known cluster names no master. */
  if (slot < 0 && lk__cluster(c) && strcmp(node, "0") != 0)
    return LK_EINVAL;
  if ((q = lk__calloc(1, sizeof(*q) + plen + 1)) == NULL)
    return LK_ENOMEM;
  q->c = c, q->cb = cb, q->arg = arg, q->count = count;
  q->t0 = lk__now_ns();
  memcpy(q->pattern, pattern, plen + 1);
  memcpy(q->cursor, node, sizeof(node));
  q->slot = slot;
  if (slot >= 0 || lk__cluster(c)) {
    rc = cluster_step(q); /* "0" on a cluster: from the first master */
  } else {
    /* Standalone, or not known yet: node 0. */
    q->restartable = strcmp(node, "0") == 0 && !c->ever_connected &&
                     c->o.cluster != LK_CLUSTER_OFF;
    rc = send_step(q);
  }
  if (rc != 0)
    lk__free(q);
  return rc;
}
