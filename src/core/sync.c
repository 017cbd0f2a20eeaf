/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* Replica sync (sync.h, docs/replica-sync.md). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "core/hold.h"
#include "core/sync.h"

enum { SYNC_IDLE = 0, SYNC_WAITING, SYNC_DECIDED };

typedef struct lk__obj_sync_s {
  lk__queue_t node; /* in its batch's members while SYNC_WAITING */
  lk__obj_t *obj;
  struct lk__sync_batch_s *batch;
  int want;  /* replicas the pending acquire asks for; 0: none */
  int acked; /* the last acquire's count; -1: none */
  int phase;
  /* The grant lk__hold_grant noted (holding objects), or NULL. */
  lk__hold_t *hold;
  long long count;
  uint32_t before;
} lk__obj_sync_t;

/* One WAIT (or WAITAOF) in flight on a connection, and the grants it
 * covers. */
typedef struct lk__sync_batch_s {
  lk__conn_t *conn;
  lk__queue_t members;
  int n;             /* replicas it asks for */
  unsigned aof : 1;  /* WAITAOF */
  uint64_t first_ns; /* when the first WAIT for these grants left */
} lk__sync_batch_t;

/* How long a WAIT may block its connection: sync_timeout_ms, but never
 * half the reply timeout or more. Every command sent behind a WAIT waits
 * for it on the server, and must still be answered within its reply
 * timeout (else the connection is dropped as unresponsive). */
static int64_t budget_ms(const lk_client_t *c) {
  int64_t t = c->o.sync_timeout_ms, cap = c->o.reply_timeout_ms / 2;
  if (cap < 1)
    cap = 1;
  return t < cap ? t : cap;
}

/* What is left of the budget of the grants of b (0: spent). */
static int64_t remaining_ms(const lk__sync_batch_t *b) {
  int64_t spent = (int64_t)((lk__now_ns() - b->first_ns) / 1000000u);
  int64_t left = budget_ms(b->conn->client) - spent;
  return left > 0 ? left : 0;
}

/* --- the object's side --- */

int lk__obj_sync_want(lk__obj_t *o, int sync_replicas) {
  lk__obj_sync_t *s = o->sync;
  int n;
  if (!lk__valid_sync(sync_replicas))
    return LK_EINVAL;
  n = sync_replicas < 0 ? o->client->o.sync_replicas : sync_replicas;
  if (s == NULL) {
    if (n == 0)
      return 0; /* never synced: nothing to keep */
    s = lk__calloc(1, sizeof(*s));
    if (s == NULL)
      return LK_ENOMEM;
    lk__queue_init(&s->node);
    s->obj = o;
    o->sync = s;
  }
  s->want = n;
  s->acked = -1;
  s->phase = SYNC_IDLE;
  s->hold = NULL;
  return 0;
}

int lk__obj_sync_acked(const lk__obj_t *o) {
  return o != NULL && o->sync != NULL ? o->sync->acked : -1;
}

void lk__sync_note_grant(lk__obj_t *o, lk__hold_t *h, long long count, uint32_t before) {
  lk__obj_sync_t *s = o->sync;
  if (s == NULL || s->want == 0)
    return;
  s->hold = h;
  s->count = count;
  s->before = before;
}

/* The grant goes back: the object's verb, or the hold it noted. A hold lost
 * meanwhile was given back when on_lost was told. */
static void refuse(lk__obj_t *o) {
  lk__obj_sync_t *s = o->sync;
  if (!o->lost) {
    if (o->ops->refuse != NULL)
      o->ops->refuse(o);
    else if (s->hold != NULL && o->ops->give_back != NULL)
      lk__hold_take_back(o, s->hold, s->count, s->before);
    else
      lk__log(o->client, LK_LOG_WARN, "a grant refused by replica sync cannot be given back; "
                                      "it expires with its lease");
  }
  s->hold = NULL;
}

/* r says the node that granted stopped being a master (a failover demoted
 * it) before the WAIT could count: Redis and Valkey refuse WAIT and
 * WAITAOF on a replica, and answer one blocked at the demotion with
 * -UNBLOCKED. That is no refusal of replica sync (the next grant, on the
 * new master, is synced as usual) but a WAIT without an answer. */
static int demoted(const redisReply *r) {
  return r != NULL && r->type == REDIS_REPLY_ERROR && r->str != NULL &&
         (strncmp(r->str, "UNBLOCKED", 9) == 0 ||
          strstr(r->str, "cannot be used with replica") != NULL);
}

/* The outcome of the acquire whose grant waited: status and r are the
 * WAIT's (r: its error reply, or NULL), acked its count (-1: none).
 * Gives the grant back when the acquire fails. */
static int decide(lk__obj_t *o, int status, const redisReply *r, int acked) {
  lk__obj_sync_t *s = o->sync;
  lk_client_t *c = o->client;
  int report = c->o.sync_policy == LK_SYNC_REPORT, result = 0;
  char text[160];
  s->acked = acked;
  if (o->lost)
    return LK_ELEASELOST; /* told through on_lost, given back then */
  if (status != 0 || acked < s->want) {
    c->stats.sync_shortfalls++;
    if (r != NULL && r->type == REDIS_REPLY_ERROR && !demoted(r)) {
      /* Refused (ACL, a managed service without WAIT): each acquire gets
       * the server's code, never a retry; said once per client. */
      if (!c->sync_told_refused) {
        c->sync_told_refused = 1;
        lk__log(c, LK_LOG_WARN, "the server refused replica sync's WAIT (%.*s): %s",
                (int)(r->len > 100 ? 100 : r->len), r->str,
                report ? "acquisitions succeed unsynced" : "acquisitions fail");
      }
      lk__obj_error(o, r);
      result = status;
    } else if (demoted(r)) {
      snprintf(text, sizeof(text), "WAIT refused by a node no longer a master (%.40s): "
               "replication of the grant unknown", r->str);
      lk__obj_set_errtext(o, text);
      result = LK_ENOREPLICAS;
    } else if (status != 0) {
      snprintf(text, sizeof(text), "WAIT got no answer (%s): replication of the grant unknown",
               lk_err_name(status));
      lk__obj_set_errtext(o, text);
      result = status == LK_ECANCELED ? LK_ECANCELED : LK_ENOREPLICAS;
    } else {
      snprintf(text, sizeof(text), "%d of %d replicas acknowledged the grant within %lld ms",
               acked, s->want, (long long)budget_ms(c));
      lk__obj_set_errtext(o, text);
      result = LK_ENOREPLICAS;
    }
    lk__log(c, LK_LOG_DEBUG, "replica sync shortfall (%s): %s", lk_err_name(result),
            report ? "kept" : "given back");
    if (!report) {
      refuse(o);
      return result;
    }
    lk__free(o->errtext); /* a success carries no error text */
    o->errtext = NULL;
  }
  if (s->hold != NULL && !lk__hold_is_held(c, s->hold)) {
    /* Success must mean is_held(): a lease shorter than the wait. */
    lk__log(c, LK_LOG_WARN, "a grant's lease ran out while its replicas were awaited; given back");
    refuse(o);
    return LK_ELEASELOST;
  }
  return 0;
}

/* --- WAIT on the grant's connection --- */

static void on_wait_reply(void *data, int status, redisReply *r);

static lk__sync_batch_t *batch_new(lk__conn_t *conn, int n, uint64_t first_ns) {
  lk_client_t *c = conn->client;
  lk__sync_batch_t *b = lk__calloc(1, sizeof(*b));
  if (b == NULL)
    return NULL;
  b->conn = conn;
  lk__queue_init(&b->members);
  b->n = n;
  b->aof = c->o.sync_aof && !c->sync_no_waitaof;
  b->first_ns = first_ns;
  return b;
}

static int batch_send(lk__sync_batch_t *b, int64_t timeout_ms) {
  lk_client_t *c = b->conn->client;
  char n[24], t[24];
  const char *argv[4];
  int argc = 0, err = 0;
  lk__op_t *op;
  /* Only on the connection as it is: queued for its next life, the WAIT
   * would count that one's writes, not the grant's. */
  if (b->conn->state != LK__CONN_READY)
    return LK_ECONN;
  lk__i64_to_str(n, b->n);
  lk__i64_to_str(t, timeout_ms > 0 ? timeout_ms : 1); /* 0 would block forever */
  if (b->aof) {
    argv[argc++] = "WAITAOF";
    argv[argc++] = "0"; /* the master's own fsync is not asked for */
  } else {
    argv[argc++] = "WAIT";
  }
  argv[argc++] = n;
  argv[argc++] = t;
  op = lk__op_internal(c, argc, argv, NULL, on_wait_reply, b, &err);
  if (op == NULL)
    return err;
  lk__conn_enqueue(b->conn, op);
  b->conn->sync = b;
  return 0;
}

int lk__sync_intercept(lk__obj_t *o, int *status) {
  lk__obj_sync_t *s = o->sync;
  lk_client_t *c = o->client;
  lk__conn_t *conn = c->completing_conn;
  lk__sync_batch_t *b;
  int rc = LK_ECONN;
  if (s->phase == SYNC_DECIDED) {
    s->phase = SYNC_IDLE; /* the step's own finish */
    return 0;
  }
  if (s->phase == SYNC_WAITING) {
    lk__sync_abandon(o); /* cut short (cut_short abandons first anyway) */
    return 0;
  }
  if (*status != 0 || s->want == 0 || o->kind == 0 || o->kind != o->ops->acquire_kind)
    return 0;
  c->stats.sync_waits++;
  s->acked = -1;
  /* A WAIT in flight on this connection covers this grant: its reply came
   * first, so its command ran first. */
  b = conn != NULL ? conn->sync : NULL;
  if (b == NULL && conn != NULL) {
    b = batch_new(conn, s->want, lk__now_ns());
    rc = b == NULL ? LK_ENOMEM : batch_send(b, budget_ms(c));
    if (rc != 0) {
      lk__free(b);
      b = NULL;
    }
  }
  if (b == NULL) {
    /* No WAIT can follow the grant on its connection: as unanswered. */
    *status = decide(o, rc, NULL, -1);
    return 0;
  }
  lk__queue_insert_tail(&b->members, &s->node);
  s->batch = b;
  s->phase = SYNC_WAITING;
  return 1;
}

void lk__sync_abandon(lk__obj_t *o) {
  lk__obj_sync_t *s = o->sync;
  if (s->phase != SYNC_WAITING)
    return;
  /* Its WAIT's answer comes to nobody; the grant goes back now. */
  if (lk__queue_linked(&s->node))
    lk__queue_remove(&s->node);
  s->batch = NULL;
  s->phase = SYNC_IDLE;
  refuse(o);
}

static int is_unknown_command(const redisReply *r) {
  return r != NULL && r->type == REDIS_REPLY_ERROR && r->len >= 19 &&
         memcmp(r->str, "ERR unknown command", 19) == 0;
}

/* WAIT answers the count; WAITAOF {local fsyncs, replicas}. -1: neither. */
static int read_acked(const lk__sync_batch_t *b, const redisReply *r) {
  long long v;
  if (b->aof) {
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !lk__reply_is_int(r->element[1], &v))
      return -1;
  } else if (!lk__reply_is_int(r, &v)) {
    return -1;
  }
  return v < 0 ? -1 : v > INT_MAX ? INT_MAX : (int)v;
}

/* Grants that asked for more replicas than the WAIT they joined, which
 * returned once its own number had acknowledged: one more WAIT for them,
 * with what is left of their budget. Each grant waits at most twice: the
 * second WAIT asks for the most any of them wants. */
static void wait_again(lk__sync_batch_t *b, lk__queue_t *done, int acked) {
  lk__queue_t *q, *next;
  lk__sync_batch_t *nb = NULL;
  int64_t left = remaining_ms(b);
  if (acked < b->n || left <= 0)
    return; /* the WAIT ran its course: its count is the answer */
  for (q = done->next; q != done; q = next) {
    lk__obj_sync_t *s = lk__container_of(q, lk__obj_sync_t, node);
    next = q->next;
    if (s->want <= acked)
      continue;
    if (nb == NULL && (nb = batch_new(b->conn, s->want, b->first_ns)) == NULL)
      return;
    if (s->want > nb->n)
      nb->n = s->want;
    lk__queue_remove(q);
    lk__queue_insert_tail(&nb->members, q);
    s->batch = nb;
  }
  if (nb != NULL && batch_send(nb, left) != 0) {
    lk__queue_move(&nb->members, done); /* short, then */
    lk__free(nb);
  }
}

static void on_wait_reply(void *data, int status, redisReply *r) {
  lk__sync_batch_t *b = data;
  lk_client_t *c = b->conn->client;
  lk__queue_t done;
  int acked = -1;
  if (b->conn->sync == b)
    b->conn->sync = NULL;
  if (b->aof && is_unknown_command(r)) {
    /* A server before 7.2: WAIT instead, now and from now on, on the same
     * connection (the grants' writes are still its own). */
    c->sync_no_waitaof = 1;
    if (!c->sync_told_aof) {
      c->sync_told_aof = 1;
      lk__log(c, LK_LOG_WARN, "the server has no WAITAOF (it came with 7.2): replica sync "
                              "uses WAIT, which does not wait for the replicas' fsync");
    }
    b->aof = 0;
    if (lk__queue_empty(&b->members) || batch_send(b, remaining_ms(b)) == 0) {
      if (lk__queue_empty(&b->members))
        lk__free(b);
      return;
    }
    status = LK_ECONN;
    r = NULL;
  }
  if (status == 0 && (acked = read_acked(b, r)) < 0) {
    lk__log(c, LK_LOG_WARN, "%s answered with a reply of a shape it never sends",
            b->aof ? "WAITAOF" : "WAIT");
    status = LK_EPROTOCOL;
    r = NULL;
  }
  lk__queue_init(&done);
  lk__queue_move(&b->members, &done);
  if (status == 0)
    wait_again(b, &done, acked);
  lk__free(b);
  /* A callback may close or cancel another member: it leaves this list
   * then (lk__sync_abandon), so each is finished once. */
  while (!lk__queue_empty(&done)) {
    lk__queue_t *q = lk__queue_head(&done);
    lk__obj_sync_t *s = lk__container_of(q, lk__obj_sync_t, node);
    int result;
    lk__queue_remove(q);
    s->batch = NULL;
    if (s->phase != SYNC_WAITING)
      continue;
    result = decide(s->obj, status, r, acked);
    s->phase = SYNC_DECIDED;
    lk__obj_finish(s->obj, result);
  }
}

void lk__sync_free(lk__obj_t *o) {
  lk__obj_sync_t *s = o->sync;
  if (s == NULL)
    return;
  if (lk__queue_linked(&s->node))
    lk__queue_remove(&s->node);
  lk__free(s);
  o->sync = NULL;
}
