/* Layer 2 (discovery): may call layers 0-1 (docs/design.md, "Layers"). */
/* Redis Sentinel (sentinel.h): discovery rounds, the +switch-master
 * subscription, and the checks that notice a master that is one no more. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sentinel.h"

/* More sentinels than this in the option is a mistake, not a deployment. */
#define LK__SENTINEL_MAX 64
#define LK__WHY_MAX 96

typedef struct lk__sent_s {
  lk__node_t node; /* where the sentinel is (node.host owned) */
  lk__conn_t q;    /* its query connection, opened when first asked */
  char why[LK__WHY_MAX]; /* why the last query there failed */
  /* Named a server whose ROLE was not master: asked last until an answer
   * proves right again. */
  unsigned suspect : 1;
} lk__sent_t;

/* An address node 0 was sent to (dialled), is believed to be the master,
 * or was confirmed as one. */
typedef struct {
  char host[256];
  int port;
  size_t from; /* the sentinel that named it */
} lk__addr_t;

struct lk__sentinel_s {
  lk_client_t *client;
  lk__sent_t *s;
  size_t n;
  size_t first;  /* a round starts here: the last sentinel proven right */
  size_t *order; /* this round's order (n entries) */
  size_t pos;    /* index into order of the sentinel being asked */
  unsigned round_on : 1;
  unsigned verify_due : 1; /* a switch was learnt: verify holds on the next master */
  unsigned warned_role : 1;
  unsigned ping_inflight : 1, probe_inflight : 1;
  unsigned sub_subscribed : 1, ever_subscribed : 1;
  unsigned round_gen; /* gen when the round started */
  unsigned gen;       /* bumped by every switch learnt */
  unsigned fail_streak;
  lk__conn_t *waiting[2]; /* node 0's command / pub/sub connection, waiting */
  lk__addr_t dialed[2];
  lk__addr_t master;    /* believed (port 0: none yet) */
  lk__addr_t confirmed; /* last confirmed by the command connection's ROLE */
  /* The +switch-master subscription. */
  lk__conn_t sub;
  size_t sub_idx;
  unsigned sub_failures;
  uv_timer_t hk_timer;    /* every heartbeat_ms: PING the subscription, ROLE node 0 */
  uv_timer_t resub_timer; /* re-subscribe after a backoff */
  lk__defer_t fail_defer; /* a round that could not ask, ended from the loop */
};

typedef struct lk__sentinel_s lk__sentinel_t;

static lk__sentinel_t *S_of(const lk_client_t *c) { return c->sentinel; }

static int addr_eq(const lk__addr_t *a, const char *host, int port) {
  return a->port == port && strcmp(a->host, host) == 0;
}

static void addr_set(lk__addr_t *a, const char *host, int port, size_t from) {
  snprintf(a->host, sizeof(a->host), "%s", host);
  a->port = port;
  a->from = from;
}

static const char *sent_host(const lk__sent_t *s) { return s->node.host; }

/* --- the option --- */

/* "host:port" or "[v6]:port", spaces around it ignored. */
static int parse_one(const char *p, size_t len, char **host, int *port) {
  const char *end, *colon = NULL, *h = p;
  size_t hlen;
  char *stop;
  long v;
  while (len > 0 && *p == ' ')
    p++, len--;
  while (len > 0 && p[len - 1] == ' ')
    len--;
  end = p + len;
  h = p;
  for (const char *q = p; q < end; q++)
    if (*q == ':')
      colon = q;
  if (colon == NULL || colon == p || colon + 1 == end)
    return LK_EINVAL;
  hlen = (size_t)(colon - p);
  if (p[0] == '[') {
    if (hlen < 3 || colon[-1] != ']')
      return LK_EINVAL;
    h = p + 1;
    hlen -= 2;
  } else if (memchr(p, ':', hlen) != NULL) {
    return LK_EINVAL; /* a bare IPv6 address: write it as [addr]:port */
  }
  if (memchr(h, ' ', hlen) != NULL || memchr(h, '[', hlen) != NULL ||
      memchr(h, ']', hlen) != NULL)
    return LK_EINVAL;
  for (const char *q = colon + 1; q < end; q++)
    if (*q < '0' || *q > '9')
      return LK_EINVAL;
  v = strtol(colon + 1, &stop, 10);
  if (stop != end || v <= 0 || v > 65535 || end - (colon + 1) > 5)
    return LK_EINVAL;
  *host = lk__memdup0(h, hlen);
  if (*host == NULL)
    return LK_ENOMEM;
  *port = (int)v;
  return 0;
}

static void free_module(lk__sentinel_t *S) {
  size_t i;
  if (S == NULL)
    return;
  for (i = 0; i < S->n; i++)
    lk__free(S->s[i].node.host);
  lk__free(S->s);
  lk__free(S->order);
  lk__free(S);
}

int lk__sentinel_alloc(lk_client_t *c) {
  const char *list = c->o.sentinels, *p;
  lk__sentinel_t *S;
  size_t n = 1, i;
  int rc = 0;
  if (list == NULL)
    return 0;
  if (c->o.sentinel_master == NULL || strlen(c->o.sentinel_master) > 200 ||
      strpbrk(c->o.sentinel_master, " \r\n") != NULL)
    return LK_EINVAL;
  for (p = list; *p != '\0'; p++)
    n += *p == ',';
  if (n > LK__SENTINEL_MAX)
    return LK_EINVAL;
  S = lk__calloc(1, sizeof(*S));
  if (S == NULL)
    return LK_ENOMEM;
  S->client = c;
  S->s = lk__calloc(n, sizeof(*S->s));
  S->order = lk__calloc(n, sizeof(*S->order));
  if (S->s == NULL || S->order == NULL) {
    free_module(S);
    return LK_ENOMEM;
  }
  for (p = list, i = 0; i < n; i++) {
    const char *comma = strchr(p, ',');
    size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    rc = parse_one(p, len, &S->s[i].node.host, &S->s[i].node.port);
    if (rc != 0)
      break;
    S->n++;
    p += len + (comma != NULL);
  }
  if (rc != 0) {
    free_module(S);
    return rc;
  }
  /* A monitored master is never a cluster node: MOVED is an error here. */
  c->o.cluster = LK_CLUSTER_OFF;
  c->sentinel = S;
  return 0;
}

/* --- discovery rounds --- */

static void ask(lk__sentinel_t *S);

static void round_begin(lk__sentinel_t *S) {
  size_t i, k = 0;
  /* From the last one proven right, around the list; the suspects last. */
  for (i = 0; i < S->n; i++) {
    size_t j = (S->first + i) % S->n;
    if (!S->s[j].suspect)
      S->order[k++] = j;
  }
  for (i = 0; i < S->n; i++) {
    size_t j = (S->first + i) % S->n;
    if (S->s[j].suspect)
      S->order[k++] = j;
  }
  for (i = 0; i < S->n; i++)
    S->s[i].why[0] = '\0';
  S->pos = 0;
  S->round_on = 1;
  S->round_gen = S->gen;
  ask(S);
}

static void note_switch(lk__sentinel_t *S, const char *host, int port, size_t from,
                        const char *source);

/* The waiting connections dial (host, port). */
static void deliver(lk__sentinel_t *S, const char *host, int port, size_t from) {
  int k;
  for (k = 0; k < 2; k++) {
    lk__conn_t *conn = S->waiting[k];
    S->waiting[k] = NULL;
    if (conn == NULL || conn->state != LK__CONN_CONNECTING || conn->io_open ||
        conn->io_closing || conn->gai_pending)
      continue;
    addr_set(&S->dialed[k], host, port, from);
    lk__conn_dial(conn, host, port);
  }
}

static void round_answer(lk__sentinel_t *S, size_t i, const char *host, int port) {
  S->round_on = 0;
  S->fail_streak = 0;
  if (S->gen != S->round_gen && S->master.port != 0) {
    /* A switch was announced while this round asked: its answer may be
     * older than the announcement. */
    deliver(S, S->master.host, S->master.port, S->master.from);
    return;
  }
  /* A check (after a re-subscription: a switch may have been missed) or a
   * connect that learnt a new address first. */
  if (S->master.port != 0 && !addr_eq(&S->master, host, port) &&
      S->waiting[0] == NULL && S->waiting[1] == NULL)
    note_switch(S, host, port, i, "a sentinel's answer");
  deliver(S, host, port, i);
}

static void round_failed(lk__sentinel_t *S) {
  lk_client_t *c = S->client;
  char text[sizeof(c->error_text)];
  size_t len, i;
  int k;
  S->round_on = 0;
  len = (size_t)snprintf(text, sizeof(text), "no sentinel gave the address of master '%s':",
                         c->o.sentinel_master);
  for (i = 0; i < S->n && len < sizeof(text); i++) {
    const lk__sent_t *s = &S->s[S->order[i]];
    len += (size_t)snprintf(text + len, sizeof(text) - len, "%s %s:%d %s", i ? ";" : "",
                            sent_host(s), s->node.port, s->why[0] ? s->why : "not asked");
  }
  lk__client_set_error(c, "%s", text);
  /* Each reconnect asks again: say it once per outage. */
  lk__log(c, S->fail_streak++ == 0 ? LK_LOG_WARN : LK_LOG_DEBUG, "%s", text);
  for (k = 0; k < 2; k++) {
    lk__conn_t *conn = S->waiting[k];
    S->waiting[k] = NULL;
    if (conn != NULL && conn->state == LK__CONN_CONNECTING && !conn->io_open)
      lk__conn_drop(conn, LK_ECONN, "no sentinel gave the master's address");
  }
}

/* Host and port out of a GET-MASTER-ADDR-BY-NAME answer: 0, or -1. */
static int read_addr(const redisReply *r, char *host, size_t host_cap, int *port) {
  const redisReply *h, *p;
  char *stop;
  long v;
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2)
    return -1;
  h = r->element[0];
  p = r->element[1];
  if (h->type != REDIS_REPLY_STRING || p->type != REDIS_REPLY_STRING || h->len == 0 ||
      h->len >= host_cap || memchr(h->str, '\0', h->len) != NULL || p->len == 0 || p->len > 5)
    return -1;
  v = strtol(p->str, &stop, 10);
  if (stop != p->str + p->len || v <= 0 || v > 65535)
    return -1;
  memcpy(host, h->str, h->len);
  host[h->len] = '\0';
  *port = (int)v;
  return 0;
}

static void on_answer(void *data, int status, redisReply *r) {
  lk__sent_t *s = data;
  lk_client_t *c = s->q.client;
  lk__sentinel_t *S = S_of(c);
  size_t i = (size_t)(s - S->s);
  char host[256];
  int port;
  if (c->closing || !S->round_on)
    return;
  if (status == 0 && read_addr(r, host, sizeof(host), &port) == 0) {
    round_answer(S, i, host, port);
    return;
  }
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_NIL)
    snprintf(s->why, sizeof(s->why), "does not know it");
  else if (r != NULL && r->type == REDIS_REPLY_ERROR)
    snprintf(s->why, sizeof(s->why), "%.*s", (int)(r->len < 80 ? r->len : 80), r->str);
  else if (status == 0)
    snprintf(s->why, sizeof(s->why), "answered something else");
  else if (s->why[0] == '\0')
    snprintf(s->why, sizeof(s->why), "%s", lk_strerror(status));
  lk__log(c, LK_LOG_DEBUG, "sentinel %s:%d skipped: %s", sent_host(s), s->node.port, s->why);
  if (++S->pos < S->n)
    ask(S);
  else
    round_failed(S);
}

static void ask(lk__sentinel_t *S) {
  lk_client_t *c = S->client;
  lk__sent_t *s = &S->s[S->order[S->pos]];
  const char *argv[3] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", c->o.sentinel_master};
  int err = 0;
  lk__op_t *op = lk__op_internal(c, 3, argv, NULL, on_answer, s, &err);
  if (op == NULL) {
    /* Out of memory: this round ends, from the loop (this may run inside a
     * user's call, where no callback may run); the backoff retries. */
    snprintf(s->why, sizeof(s->why), "%s", lk_strerror(err));
    lk__defer(c, &S->fail_defer);
    return;
  }
  c->stats.sentinel_queries++;
  lk__conn_enqueue(&s->q, op);
}

static void on_fail_defer(lk__defer_t *d) {
  lk__sentinel_t *S = lk__container_of(d, lk__sentinel_t, fail_defer);
  if (S->round_on && !S->client->closing)
    round_failed(S);
}

void lk__sentinel_resolve(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  lk__sentinel_t *S = S_of(c);
  S->waiting[conn == &c->cmd ? 0 : 1] = conn;
  if (!S->round_on)
    round_begin(S);
}

/* --- a master that is one no more --- */

/* Node 0's connections that are, or are about to be, on another server
 * than host:port are dropped: they reconnect through a new round. */
static void drop_node0(lk__sentinel_t *S, const char *host, int port, const char *what) {
  lk_client_t *c = S->client;
  lk__conn_t *conns[2] = {&c->cmd, &c->ps};
  int k;
  for (k = 0; k < 2; k++) {
    lk__conn_t *conn = conns[k];
    int dialling = conn->state == LK__CONN_CONNECTING &&
                   (conn->io_open || conn->io_closing || conn->gai_pending);
    if (host != NULL && conn->state == LK__CONN_BACKOFF) {
      /* Its backoff was for a master that is gone: try the new one now. */
      lk__conn_retry_now(conn);
      continue;
    }
    if (!dialling && conn->state != LK__CONN_HANDSHAKE && conn->state != LK__CONN_READY)
      continue; /* idle, backing off, or asking the sentinels already */
    if (host != NULL && addr_eq(&S->dialed[k], host, port))
      continue;
    lk__conn_drop(conn, LK_EUNKNOWN, what);
  }
}

static void note_switch(lk__sentinel_t *S, const char *host, int port, size_t from,
                        const char *source) {
  lk_client_t *c = S->client;
  char old[280];
  if (S->master.port != 0 && addr_eq(&S->master, host, port))
    return;
  if (S->master.port != 0)
    snprintf(old, sizeof(old), "%s:%d", S->master.host, S->master.port);
  else
    snprintf(old, sizeof(old), "(none)");
  addr_set(&S->master, host, port, from);
  S->gen++;
  S->verify_due = 1;
  c->stats.sentinel_switches++;
  lk__log(c, LK_LOG_INFO, "sentinel: master '%s' moved from %s to %s:%d (%s); held leases "
                          "are verified there",
          c->o.sentinel_master, old, host, port, source);
  drop_node0(S, host, port, "the master moved (sentinel)");
}

/* The server node 0 was sent to is not (or no longer) the master: the
 * sentinel that named it is asked last next time. */
static void suspect(lk__sentinel_t *S, int k) {
  size_t from = S->dialed[k].from;
  if (from >= S->n)
    return;
  S->s[from].suspect = 1;
  if (S->first == from)
    S->first = (from + 1) % S->n;
}

int lk__sentinel_on_role(lk__conn_t *conn, int status, const redisReply *r) {
  lk_client_t *c = conn->client;
  lk__sentinel_t *S = S_of(c);
  int k = conn == &c->cmd ? 0 : 1;
  const lk__addr_t *d = &S->dialed[k];
  const redisReply *e = r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements > 0
                            ? r->element[0] : NULL;
  size_t i;
  if (status == LK_ENOPERM) {
    /* ROLE denied (an ACL user without it): the role cannot be checked;
     * READONLY and the sentinels' announcements still catch a switch. */
    if (!S->warned_role)
      lk__log(c, LK_LOG_WARN, "ROLE denied (%s): the master's role is not checked",
              lk_err_name(status));
    S->warned_role = 1;
  } else if (status != 0) {
    return 0; /* a failed AUTH or a lost connection: reported by its own step */
  } else if (e == NULL || e->type != REDIS_REPLY_STRING || e->len != 6 ||
             memcmp(e->str, "master", 6) != 0) {
    const lk__sent_t *s = d->from < S->n ? &S->s[d->from] : NULL;
    lk__client_set_error(c, "sentinel %s:%d named %s:%d as master '%s', but its ROLE is %.*s",
                         s ? sent_host(s) : "?", s ? s->node.port : 0, d->host, d->port,
                         c->o.sentinel_master,
                         e != NULL && e->type == REDIS_REPLY_STRING ? (int)e->len : 1,
                         e != NULL && e->type == REDIS_REPLY_STRING ? e->str : "?");
    lk__log(c, LK_LOG_WARN, "%s; asking the next sentinel", c->error_text);
    suspect(S, k);
    return LK_EREADONLY;
  }
  /* A master: the sentinel that named it was right. */
  for (i = 0; i < S->n; i++)
    S->s[i].suspect = 0;
  if (d->from < S->n)
    S->first = d->from;
  if (k != 0)
    return 0;
  if (S->master.port == 0 || !addr_eq(&S->master, d->host, d->port)) {
    if (S->confirmed.port != 0)
      note_switch(S, d->host, d->port, d->from, "found at reconnect");
    else
      addr_set(&S->master, d->host, d->port, d->from);
  }
  if (S->verify_due || (S->confirmed.port != 0 && !addr_eq(&S->confirmed, d->host, d->port))) {
    /* A promoted replica may lack writes it had not received: every held
     * lease is renewed now (queued behind this handshake), and one the new
     * master does not have is reported lost. To a RedLock this member may
     * have lost data, as after a restart. */
    c->restarted_ns = lk__now_ns();
    c->owner->master_changed(c);
  }
  S->verify_due = 0;
  addr_set(&S->confirmed, d->host, d->port, d->from);
  return 0;
}

int lk__sentinel_readonly(lk__conn_t *conn, lk__op_t *op) {
  lk_client_t *c = conn->client;
  lk__sentinel_t *S = S_of(c);
  if (S == NULL || conn != &c->cmd || c->closing)
    return 0;
  /* READONLY: the script did not write (a replica refuses the first
   * write, and nothing before it wrote), so it is sent again on the
   * master the sentinels name next. */
  op->redirects++;
  lk__log(c, LK_LOG_WARN, "master '%s' at %s:%d answered READONLY: it was demoted; asking the "
                          "sentinels again",
          c->o.sentinel_master, S->dialed[0].host, S->dialed[0].port);
  suspect(S, 0);
  S->verify_due = 1;
  drop_node0(S, NULL, 0, "the server is a replica now (READONLY)");
  lk__conn_enqueue(conn, op);
  return 1;
}

/* --- housekeeping: the subscription's PING, node 0's ROLE --- */

static void on_probe(void *data, int status, redisReply *r) {
  lk__sentinel_t *S = data;
  lk_client_t *c = S->client;
  const redisReply *e;
  S->probe_inflight = 0;
  if (c->closing || status != 0 || r == NULL || r->type != REDIS_REPLY_ARRAY ||
      r->elements == 0 || c->cmd.state != LK__CONN_READY)
    return;
  e = r->element[0];
  if (e->type == REDIS_REPLY_STRING && e->len == 6 && memcmp(e->str, "master", 6) == 0)
    return;
  lk__log(c, LK_LOG_WARN, "master '%s' at %s:%d now answers ROLE %.*s: asking the sentinels "
                          "again",
          c->o.sentinel_master, S->dialed[0].host, S->dialed[0].port,
          e->type == REDIS_REPLY_STRING ? (int)e->len : 1,
          e->type == REDIS_REPLY_STRING ? e->str : "?");
  suspect(S, 0);
  S->verify_due = 1;
  drop_node0(S, NULL, 0, "the server is not the master any more (ROLE)");
}

static void on_ping(void *data, int status, redisReply *r) {
  lk__sentinel_t *S = data;
  (void)status;
  (void)r;
  S->ping_inflight = 0; /* a sentinel that stopped answering: the reply timeout drops it */
}

static void on_hk_timer(uv_timer_t *t) {
  lk__sentinel_t *S = t->data;
  lk_client_t *c = S->client;
  int err = 0;
  lk__op_t *op;
  if (c->closing)
    return;
  lk__client_cork(c);
  if (S->sub_subscribed && !S->ping_inflight && S->sub.state == LK__CONN_READY) {
    const char *argv[1] = {"PING"};
    op = lk__op_internal(c, 1, argv, NULL, on_ping, S, &err);
    if (op != NULL) {
      S->ping_inflight = 1;
      lk__conn_enqueue(&S->sub, op);
    }
  }
  if (!S->probe_inflight && !S->warned_role && c->cmd.state == LK__CONN_READY) {
    const char *argv[1] = {"ROLE"};
    op = lk__op_internal(c, 1, argv, NULL, on_probe, S, &err);
    if (op != NULL) {
      S->probe_inflight = 1;
      lk__conn_enqueue(&c->cmd, op);
    }
  }
  lk__client_uncork(c);
}

/* --- the +switch-master subscription --- */

static void subscribe(lk__sentinel_t *S);
static void on_resub_timer(uv_timer_t *t);

static void on_subscribed(void *data, int status, redisReply *r) {
  lk__sentinel_t *S = data;
  lk_client_t *c = S->client;
  if (c->closing)
    return;
  if (status == 0 && r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
      r->element[0]->type == REDIS_REPLY_STRING && r->element[0]->len == 9 &&
      memcmp(r->element[0]->str, "subscribe", 9) == 0) {
    S->sub_subscribed = 1;
    S->sub_failures = 0;
    lk__log(c, LK_LOG_DEBUG, "sentinel %s:%d: subscribed to +switch-master",
            sent_host(&S->s[S->sub_idx]), S->s[S->sub_idx].node.port);
    /* An announcement made while nobody listened is caught by asking. */
    if (S->master.port != 0 && !S->round_on)
      round_begin(S);
    return;
  }
  if (S->sub.state == LK__CONN_READY)
    lk__conn_drop(&S->sub, status != 0 ? status : LK_EPROTOCOL, "SUBSCRIBE refused");
  /* Otherwise the connection dropped: lk__sentinel_on_down moved on. */
}

static void subscribe(lk__sentinel_t *S) {
  lk_client_t *c = S->client;
  const char *argv[2] = {"SUBSCRIBE", "+switch-master"};
  int err = 0;
  lk__op_t *op;
  if (c->closing || S->sub.state != LK__CONN_IDLE)
    return;
  op = lk__op_internal(c, 2, argv, NULL, on_subscribed, S, &err);
  if (op == NULL) {
    /* Out of memory: the same sentinel, a while later. */
    uv_update_time(c->loop);
    uv_timer_start(&S->resub_timer, on_resub_timer, (uint64_t)c->o.reconnect_max_ms, 0);
    return;
  }
  S->sub.node = &S->s[S->sub_idx].node;
  lk__conn_enqueue(&S->sub, op);
}

static void on_resub_timer(uv_timer_t *t) { subscribe(t->data); }

static void resubscribe_later(lk__sentinel_t *S) {
  lk_client_t *c = S->client;
  int64_t ms = c->o.reconnect_min_ms;
  unsigned i;
  /* The next sentinel at once; after a whole lap of failures, back off. */
  S->sub_idx = (S->sub_idx + 1) % S->n;
  S->sub_failures++;
  if (S->sub_failures < S->n)
    ms = 0;
  for (i = 0; i < S->sub_failures / S->n && ms < c->o.reconnect_max_ms; i++)
    ms *= 2;
  if (ms > c->o.reconnect_max_ms)
    ms = c->o.reconnect_max_ms;
  uv_update_time(c->loop);
  uv_timer_start(&S->resub_timer, on_resub_timer, (uint64_t)ms, 0);
}

void lk__sentinel_on_down(lk__conn_t *conn, int why, const char *what) {
  lk_client_t *c = conn->client;
  lk__sentinel_t *S = S_of(c);
  if (conn == &S->sub) {
    int was = S->sub_subscribed;
    S->sub_subscribed = 0;
    if (c->closing)
      return;
    lk__log(c, was ? LK_LOG_INFO : LK_LOG_DEBUG, "sentinel %s:%d: subscription lost (%s)",
            sent_host(&S->s[S->sub_idx]), S->s[S->sub_idx].node.port, what);
    resubscribe_later(S);
    return;
  }
  {
    /* Kept for the round's error text (on_answer runs next). */
    lk__sent_t *s = lk__container_of(conn, lk__sent_t, q);
    if (why == LK_EAUTH)
      snprintf(s->why, sizeof(s->why), "%s",
               c->o.sentinel_password != NULL ? "AUTH refused"
                                              : "authentication required (sentinel_password)");
    else
      snprintf(s->why, sizeof(s->why), "%s", what);
  }
}

int lk__sentinel_on_push(lk__conn_t *conn, const redisReply *r) {
  lk_client_t *c = conn->client;
  lk__sentinel_t *S = S_of(c);
  const redisReply *kind, *payload;
  char name[256], oh[256], nh[256];
  int op, np;
  if (conn != &S->sub || r->type != REDIS_REPLY_ARRAY || r->elements != 3)
    return 0;
  kind = r->element[0];
  if (kind->type != REDIS_REPLY_STRING || kind->len != 7 || memcmp(kind->str, "message", 7) != 0)
    return 0;
  payload = r->element[2];
  /* "<name> <old-ip> <old-port> <new-ip> <new-port>" */
  if (payload->type == REDIS_REPLY_STRING && payload->len < 700 &&
      sscanf(payload->str, "%255s %255s %d %255s %d", name, oh, &op, nh, &np) == 5 &&
      strcmp(name, c->o.sentinel_master) == 0 && np > 0 && np <= 65535) {
    size_t from = S->sub_idx;
    note_switch(S, nh, np, from, "+switch-master");
  }
  return 1;
}

void lk__sentinel_uncork(lk_client_t *c) {
  lk__sentinel_t *S = S_of(c);
  size_t i;
  for (i = 0; i < S->n; i++)
    lk__conn_flush(&S->s[i].q);
  lk__conn_flush(&S->sub);
}

/* --- lifecycle --- */

void lk__sentinel_start(lk_client_t *c) {
  lk__sentinel_t *S = S_of(c);
  size_t i;
  int64_t hk;
  if (S == NULL)
    return;
  for (i = 0; i < S->n; i++) {
    lk__sent_t *s = &S->s[i];
    s->node.client = c;
    s->node.cmd = &s->q;
    s->node.ps = &S->sub;
    s->node.idx = 0;
    lk__conn_init(c, &s->q, LK__CONN_SENTINEL);
    s->q.node = &s->node;
  }
  lk__conn_init(c, &S->sub, LK__CONN_SENTINEL);
  S->sub.node = &S->s[0].node;
  S->dialed[0].from = S->dialed[1].from = S->n;
  lk__defer_init(&S->fail_defer, on_fail_defer);
  uv_timer_init(c->loop, &S->hk_timer);
  S->hk_timer.data = S;
  uv_timer_init(c->loop, &S->resub_timer);
  S->resub_timer.data = S;
  c->handles_open += 2;
  hk = c->o.heartbeat_ms;
  uv_timer_start(&S->hk_timer, on_hk_timer, (uint64_t)hk, (uint64_t)hk);
  subscribe(S);
}

static void on_timer_closed(uv_handle_t *h) {
  lk__sentinel_t *S = h->data;
  S->client->owner->handle_closed(S->client);
}

void lk__sentinel_close(lk_client_t *c) {
  lk__sentinel_t *S = S_of(c);
  size_t i;
  if (S == NULL)
    return;
  S->round_on = 0;
  S->waiting[0] = S->waiting[1] = NULL;
  lk__defer_cancel(&S->fail_defer);
  for (i = 0; i < S->n; i++)
    lk__conn_close(&S->s[i].q);
  lk__conn_close(&S->sub);
  uv_timer_stop(&S->hk_timer);
  uv_timer_stop(&S->resub_timer);
  uv_close((uv_handle_t *)&S->hk_timer, on_timer_closed);
  uv_close((uv_handle_t *)&S->resub_timer, on_timer_closed);
}

int lk__sentinel_busy(const lk_client_t *c) {
  const lk__sentinel_t *S = S_of(c);
  size_t i;
  if (S == NULL)
    return 0;
  for (i = 0; i < S->n; i++)
    if (S->s[i].q.gai_pending)
      return 1;
  return S->sub.gai_pending;
}

static void free_ops(lk__queue_t *list) {
  while (!lk__queue_empty(list)) {
    lk__op_t *op = lk__container_of(lk__queue_head(list), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__op_free(op);
  }
}

static void free_conn(lk__conn_t *conn, int forked) {
  if (forked) {
    /* The parent's copies: memory only, no uv or socket call. */
    free_ops(&conn->sent);
    free_ops(&conn->unsent);
    if (conn->reader != NULL)
      redisReaderFree(conn->reader);
    conn->reader = NULL;
  }
  lk__conn_free_buffers(conn);
}

void lk__sentinel_free(lk_client_t *c, int forked) {
  lk__sentinel_t *S = S_of(c);
  size_t i;
  if (S == NULL)
    return;
  if (S->hk_timer.data == S) { /* started: the connections exist */
    for (i = 0; i < S->n; i++)
      free_conn(&S->s[i].q, forked);
    free_conn(&S->sub, forked);
  }
  free_module(S);
  c->sentinel = NULL;
}
