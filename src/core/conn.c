/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* One Redis connection on a libuv stream: connect (TCP or unix socket),
 * FIFO reply matching, reply timeout, reconnect with backoff. Its handshake
 * is core/handshake.c's, its scripts' loading core/conn_scripts.c's.
 * hiredis is used only for its reply reader; we own the socket because
 * hiredis 0.14's libuv adapter loses socket errors (docs/design.md,
 * "Layers"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/loglevel.h"
#include "core/conn_parts.h"
#include "core/tls.h"

static void conn_start_connect(lk__conn_t *conn);
static void conn_dial(lk__conn_t *conn, const char *host, int node_port, const char *unix_path);
static void conn_flush(lk__conn_t *conn);

const char *lk__conn_label(const lk__conn_t *conn) {
  return conn->kind == LK__CONN_CMD      ? "command"
         : conn->kind == LK__CONN_SENTINEL ? "sentinel"
                                           : "pub/sub";
}

/* " (node host:port)" for a cluster node's command or pub/sub connection,
 * else "": a cluster's lost and ready lines name the node they are about
 * (docs/client.md, "Logging"). */
static const char *conn_node_name(const lk__conn_t *conn, char *buf, size_t cap) {
  const lk_client_t *c = conn->client;
  const lk__node_t *n = conn->node;
  const char *host;
  int port;
  buf[0] = '\0';
  if (!c->cluster_on || n == NULL || conn->kind == LK__CONN_SENTINEL)
    return buf;
  host = n->host != NULL ? n->host : c->o.host;
  port = n->host != NULL ? n->port : c->o.port;
  if (n->host == NULL && c->o.unix_path != NULL)
    snprintf(buf, cap, " (node %s)", c->o.unix_path);
  else if (host != NULL)
    snprintf(buf, cap, strchr(host, ':') != NULL ? " (node [%s]:%d)" : " (node %s:%d)", host,
             port);
  return buf;
}

static void conn_arm_timer(lk__conn_t *conn, uv_timer_cb cb, int64_t ms) {
  if (ms < 0)
    ms = 0;
  /* Timers count from the loop's cached time, which is stale when the loop
   * has not run for a while (set-up before uv_run, a long callback): a
   * connect timeout would then fire at once. */
  uv_update_time(conn->client->loop);
  uv_timer_start(&conn->timer, cb, (uint64_t)ms, 0);
}

/* --- close bookkeeping --- */

static void on_io_closed(uv_handle_t *h) {
  lk__conn_t *conn = h->data;
  conn->io_closing = 0;
  /* A reconnect that came due while the old handle was closing. */
  if (conn->state == LK__CONN_CONNECTING)
    conn_start_connect(conn);
  /* Last: this may finish the client's close and free conn with it. */
  conn->client->owner->handle_closed(conn->client);
}

static void close_io(lk__conn_t *conn) {
  if (!conn->io_open)
    return;
  conn->io_open = 0;
  conn->io_closing = 1;
  uv_close(&conn->io.handle, on_io_closed);
}

/* --- dropping a connection --- */

static void on_backoff_done(uv_timer_t *t) {
  lk__conn_t *conn = t->data;
  if (conn->state != LK__CONN_BACKOFF)
    return;
  if (!conn->client->owner->conn_redial(conn)) {
    /* Idle until a command is queued for it (lk__conn_enqueue). */
    conn->state = LK__CONN_IDLE;
    return;
  }
  conn_start_connect(conn);
}

static int64_t next_backoff(lk__conn_t *conn) {
  const lk__opts_t *o = &conn->client->o;
  int64_t base = conn->backoff_ms;
  unsigned char r = 0;
  if (base <= 0)
    base = o->reconnect_min_ms;
  conn->backoff_ms = base * 2 > o->reconnect_max_ms ? o->reconnect_max_ms : base * 2;
  /* Jitter in [base/2, base] so a fleet that lost one server does not come
   * back in lockstep. */
  uv_random(NULL, NULL, &r, 1, 0, NULL);
  return base / 2 + (base / 2) * r / 255;
}

static void fail_list(lk__queue_t *list, int status) {
  while (!lk__queue_empty(list)) {
    lk__op_t *op = lk__container_of(lk__queue_head(list), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__op_complete(op, status, NULL);
  }
}

void lk__conn_drop(lk__conn_t *conn, int why, const char *what) {
  lk_client_t *c = conn->client;
  lk__queue_t sent, unsent;
  int was_ready = conn->state == LK__CONN_READY;
  int unsent_status;
  char node[300];

  if (conn->state == LK__CONN_IDLE || conn->state == LK__CONN_BACKOFF ||
      conn->state == LK__CONN_CLOSED)
    return;
  c->owner->check_leases(c); /* lost leases are told before the failures below */
  /* The holds renewed through it are at risk until a renewal gets through
   * (told from the loop, docs/objects.md "Health"). */
  if (conn->kind == LK__CONN_CMD && was_ready && !c->closing)
    c->owner->conn_holds_at_risk(conn);
  /* A ready command connection lost is the SUSPENDED event's (WARN without
   * an event callback); a pub/sub one only makes waiters re-poll. A
   * sentinel's is told by core/sentinel.c when it matters. */
  lk__log(c, c->closing || conn->kind == LK__CONN_SENTINEL ? LK_LOG_DEBUG
             : was_ready && conn->kind == LK__CONN_CMD      ? lk__event_level(c)
                                                            : LK_LOG_INFO,
          "%s connection lost%s: %s (%s)", lk__conn_label(conn),
          conn_node_name(conn, node, sizeof node), what, lk_err_name(why));

  uv_timer_stop(&conn->timer);
  lk__defer_cancel(&conn->fail_defer);
  close_io(conn);
  lk__tls_conn_free(conn); /* the next attempt starts a session of its own */
  if (conn->reader != NULL) {
    redisReaderFree(conn->reader);
    conn->reader = NULL;
  }
  conn->out_len = 0;
  conn->state = c->closing ? LK__CONN_CLOSED : LK__CONN_BACKOFF;
  /* A sentinel is dialled again only when asked (core/sentinel.h). */
  if (conn->kind == LK__CONN_SENTINEL && conn->state == LK__CONN_BACKOFF)
    conn->state = LK__CONN_IDLE;

  /* Detach the lists first: callbacks may queue new work on this
   * connection, which must wait for the next attempt, not fail here. */
  lk__queue_init(&sent);
  lk__queue_init(&unsent);
  lk__queue_move(&conn->sent, &sent);
  lk__queue_move(&conn->unsent, &unsent);
  /* Sent: the server may or may not have run them. Unsent: it did not. A
   * handshake failure (bad password...) is what queued work should see. */
  unsent_status = (why == LK_EUNKNOWN) ? LK_ECONN : why;
  if (unsent_status != LK_ECONN && unsent_status != LK_EAUTH && unsent_status != LK_ETLS &&
      unsent_status != LK_ENOPERM && unsent_status != LK_ELOADING &&
      unsent_status != LK_ECLOSED && unsent_status != LK_ECANCELED)
    unsent_status = LK_ECONN;
  c->owner->conn_down(conn, why, what, was_ready);
  fail_list(&sent, c->closing ? LK_ECANCELED : LK_EUNKNOWN);
  fail_list(&unsent, c->closing ? LK_ECANCELED : unsent_status);

  if (conn->state == LK__CONN_BACKOFF) {
    c->stats.reconnects += conn->kind == LK__CONN_CMD;
    c->stats.pubsub_reconnects += conn->kind == LK__CONN_PUBSUB;
    conn_arm_timer(conn, on_backoff_done, next_backoff(conn));
  } else {
    c->owner->maybe_finish_close(c);
  }
}

static void on_fail_defer(lk__defer_t *d) {
  lk__conn_t *conn = lk__container_of(d, lk__conn_t, fail_defer);
  lk__conn_drop(conn, LK_EUNKNOWN, "write failed");
}

/* The handshake went through (core/conn_parts.h). */
void lk__conn_become_ready(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  lk__queue_t unsent;
  int first = !c->ever_connected;
  char node[300];

  uv_timer_stop(&conn->timer);
  conn->state = LK__CONN_READY;
  conn->backoff_ms = 0;
  conn->connected_once = 1;
  if (conn->kind == LK__CONN_CMD) {
    c->ever_connected = 1;
    c->error_text[0] = '\0';
  }
  if (conn->tls != NULL)
    lk__tls_on_ready(conn);
  lk__log(c, first || conn->kind == LK__CONN_SENTINEL ? LK_LOG_DEBUG : LK_LOG_INFO,
          "%s connection ready%s", lk__conn_label(conn), conn_node_name(conn, node, sizeof node));

  lk__queue_init(&unsent);
  lk__queue_move(&conn->unsent, &unsent);
  while (!lk__queue_empty(&unsent)) {
    lk__op_t *op = lk__container_of(lk__queue_head(&unsent), lk__op_t, node);
    lk__queue_remove(&op->node);
    lk__conn_send(conn, op);
  }
  c->owner->conn_ready(conn, first);
}

/* --- reading --- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  lk__conn_t *conn = h->data;
  (void)suggested;
  if (conn->read_buf == NULL)
    conn->read_buf = lk__malloc(LK__READ_BUF);
  /* Out of memory: an empty buffer, which libuv reports as UV_ENOBUFS, a
   * read error that drops the connection. */
  buf->base = conn->read_buf;
  buf->len = conn->read_buf != NULL ? LK__READ_BUF : 0;
}

static void on_reply_timer(uv_timer_t *t);

static void arm_reply_timer(lk__conn_t *conn) {
  lk__op_t *head;
  uint64_t now, due;
  if (lk__queue_empty(&conn->sent)) {
    uv_timer_stop(&conn->timer);
    return;
  }
  head = lk__container_of(lk__queue_head(&conn->sent), lk__op_t, node);
  now = lk__now_ns();
  due = head->sent_ns + (uint64_t)conn->client->o.reply_timeout_ms * 1000000u;
  conn_arm_timer(conn, on_reply_timer,
                 due > now ? (int64_t)((due - now + 999999) / 1000000) : 0);
}

static void on_reply_timer(uv_timer_t *t) {
  lk__conn_t *conn = t->data;
  lk__op_t *head;
  if (conn->state != LK__CONN_READY || lk__queue_empty(&conn->sent))
    return;
  head = lk__container_of(lk__queue_head(&conn->sent), lk__op_t, node);
  if (lk__now_ns() - head->sent_ns >=
      (uint64_t)conn->client->o.reply_timeout_ms * 1000000u) {
    conn->client->stats.reply_timeouts++;
    /* The server may be paused or gone; the FIFO can no longer be trusted
     * to line up, so the connection is suspect and every command on it has
     * an unknown outcome. */
    lk__conn_drop(conn, LK_EUNKNOWN, "reply timeout");
    return;
  }
  arm_reply_timer(conn);
}

/* A reply that is not the oldest command's own: one the server never owed
 * (a proxy's or a broken server's), or one whose own reply went missing. From
 * here on every reply would answer the wrong command, so none is taken: the
 * connection is dropped and everything in flight on it has an unknown outcome
 * (LK_EUNKNOWN), settled as after a lost connection. */
static void drop_unattributable(lk__conn_t *conn, const lk__op_t *op, const redisReply *r) {
  lk_client_t *c = conn->client;
  c->stats.unattributable_replies++;
  if (op == NULL)
    lk__log(c, LK_LOG_WARN, "%s connection: a reply arrived with no command waiting",
            lk__conn_label(conn));
  else
    lk__log(c, LK_LOG_WARN,
            "%s connection: the reply to %s%s (type %d) is not its own; replies are "
            "out of step with commands",
            lk__conn_label(conn),
            op->loads != NULL    ? "SCRIPT LOAD "
            : op->script != NULL ? "script "
                                 : "a handshake command",
            op->loads != NULL    ? op->loads->name
            : op->script != NULL ? op->script->name
                                 : "",
            r->type);
  lk__conn_drop(conn, LK_EPROTOCOL, "reply not attributable to its command");
}

static void dispatch(lk__conn_t *conn, redisReply *r) {
  lk_client_t *c = conn->client;
  lk__op_t *op;
  redisReply *own;

  if (conn->kind != LK__CONN_CMD && conn->state == LK__CONN_READY &&
      c->owner->conn_push(conn, r))
    return;
  if (lk__queue_empty(&conn->sent)) {
    drop_unattributable(conn, NULL, r);
    return;
  }
  op = lk__container_of(lk__queue_head(&conn->sent), lk__op_t, node);
  /* Checked while op is still in flight, so the drop settles it too. */
  if (!lk__reply_unwrap(op, r, &own)) {
    drop_unattributable(conn, op, r);
    return;
  }
  lk__queue_remove(&op->node);
  c->stats.replies++;
  /* MOVED, ASK, TRYAGAIN, CLUSTERDOWN: the command did not run; the router
   * sends it where it belongs (core/router.h). */
  if (own->type == REDIS_REPLY_ERROR && !op->internal && c->owner->conn_redirected(conn, op, own))
    return;
  if (lk__conn_script_missing(conn, op, r)) {
    /* Sent again as EVAL. Admitted by ASKING the first time: the EVAL needs
     * its own, or the importing node answers MOVED and the call makes a
     * detour through the source. Without memory for it the detour is still
     * correct. */
    if (op->asked)
      (void)lk__conn_asking(conn);
    lk__conn_send(conn, op);
    return;
  }
  lk__op_complete(op, lk__status_of(own), own);
}

/* Nobody waits for ASKING's +OK; it must immediately precede the command
 * it admits on the connection, which enqueueing both in a row guarantees
 * (commands leave a connection in order). */
int lk__conn_asking(lk__conn_t *conn) {
  const char *argv[1] = {"ASKING"};
  int err = 0;
  lk__op_t *op = lk__op_internal(conn->client, 1, argv, NULL, NULL, NULL, &err);
  if (op == NULL)
    return err;
  op->asking = 1; /* nothing may come between (lk__conn_send) */
  lk__conn_enqueue(conn, op);
  return 0;
}

void lk__client_cork(lk_client_t *c) { c->corked++; }

void lk__client_uncork(lk_client_t *c) {
  if (--c->corked > 0)
    return;
  size_t i;
  for (i = 0; i < c->n_nodes; i++) {
    conn_flush(c->nodes[i]->cmd);
    conn_flush(c->nodes[i]->ps);
  }
  c->owner->uncorked(c);
}

void lk__conn_flush(lk__conn_t *conn) { conn_flush(conn); }

/* Connected: some node's command connection is ready. */
int lk_client_is_connected(const lk_client_t *c) {
  size_t i;
  if (c == NULL)
    return 0;
  for (i = 0; i < c->n_nodes; i++)
    if (c->nodes[i]->cmd->state == LK__CONN_READY)
      return 1;
  return 0;
}

static void read_replies(lk__conn_t *conn, ssize_t nread, const uv_buf_t *buf);
static void tls_read(lk__conn_t *conn, ssize_t nread, const uv_buf_t *buf);

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  lk__conn_t *conn = s->data;
  lk_client_t *c = conn->client;
  /* The client outlives this call: handles close asynchronously. */
  lk__client_cork(c);
  if (conn->tls == NULL) {
    read_replies(conn, nread, buf);
    lk__client_uncork(c);
    return;
  }
  tls_read(conn, nread, buf);
  lk__client_uncork(c);
  /* A handshake flight or a key update's answer, on a connection the
   * uncork may not cover. */
  conn_flush(conn);
}

static void tls_failed(lk__conn_t *conn, const char *why) {
  lk__tls_report_failure(conn, why);
  lk__conn_drop(conn, LK_ETLS, "TLS failed");
}

/* TLS: the ciphertext read is handed to the session (a copy), which frees
 * read_buf to take the plaintext, one record at a time; each is read as
 * replies, exactly as a plaintext read. A record cut short waits for its
 * rest (LK__TLS_WANT); an EOF or a socket error is the plaintext path's. */
static void tls_read(lk__conn_t *conn, ssize_t nread, const uv_buf_t *buf) {
  lk__tls_t *t = conn->tls;
  char why[200];
  ssize_t n;
  int i, rc;

  if (nread <= 0) {
    read_replies(conn, nread, buf);
    return;
  }
  if (lk__tls_feed(conn, buf->base, (size_t)nread) != 0) {
    lk__conn_drop(conn, LK_ENOMEM, "TLS input");
    return;
  }
  if (!lk__tls_established(conn)) {
    rc = lk__tls_handshake(conn, why, sizeof(why));
    if (rc < 0)
      tls_failed(conn, why);
    if (rc <= 0)
      return; /* its next flight leaves when this read ends */
    /* The Redis handshake follows at once: under TLS 1.3 it travels with
     * the client's Finished. */
    lk__handshake_start(conn);
    if (conn->tls != t)
      return;
  }
  /* Bounded by the input: every pass takes a record's bytes from it. */
  for (i = 0; i < 1000000; i++) {
    uv_buf_t plain;
    n = lk__tls_read(conn, conn->read_buf, LK__READ_BUF, why, sizeof(why));
    if (n == LK__TLS_WANT)
      return;
    if (n == LK__TLS_EOF) {
      lk__conn_drop(conn, LK_EUNKNOWN, "closed by server (TLS close_notify)");
      return;
    }
    if (n < 0) {
      tls_failed(conn, why);
      return;
    }
    plain = uv_buf_init(conn->read_buf, (unsigned)n);
    read_replies(conn, n, &plain);
    if (conn->tls != t)
      return; /* dropped by a callback */
  }
}

/* The commands a read's callbacks issue are corked (on_read) so they leave
 * in one write. When those callbacks are slow (a binding that calls into a
 * script engine per reply: bindings/node) the corked commands wait for the
 * last reply of the read while the server, which has answered them all,
 * sits idle: client and server then take turns instead of working at once
 * (64 in flight from Node: 41 thousand pairs/s, one write per 53 replies).
 * So a read that has been handled for LK__CORK_MAX_NS lets out what it
 * corked so far, and corks again: the server starts on those while the rest
 * is handled. A read of a few replies with C callbacks ends well within it
 * and keeps its one write. Only on_read's own cork is lifted: a caller that
 * corked around this read (none today) keeps its batch. Splitting a batch
 * changes nothing but timing: the stream's order is the same. */
#define LK__CORK_MAX_NS 50000u

static void flush_when_corked_long(lk_client_t *c, uint64_t *since_ns) {
  uint64_t now;
  if (c->corked != 1)
    return;
  now = lk__now_ns();
  if (now - *since_ns < LK__CORK_MAX_NS)
    return;
  *since_ns = now;
  lk__client_uncork(c);
  lk__client_cork(c);
}

static void read_replies(lk__conn_t *conn, ssize_t nread, const uv_buf_t *buf) {
  redisReader *reader = conn->reader;
  void *reply;
  uint64_t corked_since_ns;

  conn->client->owner->check_leases(conn->client); /* lost leases are told before anything else */
  if (nread < 0) {
    lk__conn_drop(conn, LK_EUNKNOWN,
                  nread == UV_EOF ? "closed by server" : uv_strerror((int)nread));
    return;
  }
  if (nread == 0 || reader == NULL)
    return;
  if (redisReaderFeed(reader, buf->base, (size_t)nread) != REDIS_OK) {
    lk__conn_drop(conn, LK_EPROTOCOL, "reader refused input");
    return;
  }
  corked_since_ns = lk__now_ns();
  for (;;) {
    if (redisReaderGetReply(reader, &reply) != REDIS_OK) {
      lk__conn_drop(conn, LK_EPROTOCOL, "malformed reply");
      return;
    }
    if (reply == NULL)
      break;
    dispatch(conn, reply);
    /* Handled: its memory is reused for the next one. Kept even when the
     * connection dropped meanwhile (the reader is gone, the arena is not). */
    lk__arena_reset(&conn->arena);
    /* A callback may have dropped this connection (the reader is gone). */
    if (conn->reader != reader)
      return;
    flush_when_corked_long(conn->client, &corked_since_ns);
  }
  if (conn->state == LK__CONN_READY)
    arm_reply_timer(conn);
  conn->client->owner->maybe_finish_close(conn->client);
}

/* --- writing --- */

static void on_write(uv_write_t *req, int status) {
  lk__conn_t *conn = req->data;
  conn->writing = 0;
  if (status == UV_ECANCELED)
    return; /* the handle is closing: the drop already accounted for it */
  if (status < 0) {
    lk__conn_drop(conn, LK_EUNKNOWN, uv_strerror(status));
    return;
  }
  if (conn->out_len > 0 || conn->tls != NULL)
    conn_flush(conn);
}

/* TLS: the plaintext gathered in out is encrypted into the session, and the
 * ciphertext taken into wbuf, which stays untouched until its write is done
 * while new commands gather in out, as on the plaintext path. Nothing is
 * encrypted before the handshake is done (its flights go out alone). */
static void conn_flush_tls(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  char why[200];
  uv_buf_t b;
  size_t n, done = 0;
  int rc;
  if (conn->writing || !conn->io_open || c->corked)
    return;
  if (conn->out_len > 0 && lk__tls_established(conn)) {
    if (lk__tls_write(conn, conn->out, conn->out_len, why, sizeof(why)) != 0) {
      lk__log(c, LK_LOG_WARN, "%s connection: TLS write failed: %s", lk__conn_label(conn), why);
      lk__defer(c, &conn->fail_defer);
      return;
    }
    conn->out_len = 0;
  }
  n = lk__tls_pending(conn);
  if (n == 0)
    return;
  if (lk__grow((void **)&conn->wbuf, &conn->wbuf_cap, n, 1, 4096) != 0) {
    lk__defer(c, &conn->fail_defer);
    return;
  }
  n = lk__tls_take(conn, conn->wbuf, n);
  b = uv_buf_init(conn->wbuf, (unsigned)n);
  rc = uv_try_write(&conn->io.stream, &b, 1);
  if (rc == (int)n)
    return;
  if (rc < 0 && rc != UV_EAGAIN) {
    lk__defer(c, &conn->fail_defer);
    return;
  }
  if (rc > 0)
    done = (size_t)rc;
  b = uv_buf_init(conn->wbuf + done, (unsigned)(n - done));
  conn->write_req.data = conn;
  rc = uv_write(&conn->write_req, &conn->io.stream, &b, 1, on_write);
  if (rc < 0) {
    lk__defer(c, &conn->fail_defer);
    return;
  }
  conn->writing = 1;
}

static void conn_flush(lk__conn_t *conn) {
  char *tmp;
  size_t cap;
  uv_buf_t b;
  int rc;
  size_t done = 0;
  if (conn->tls != NULL) {
    conn_flush_tls(conn);
    return;
  }
  if (conn->writing || conn->out_len == 0 || !conn->io_open || conn->client->corked)
    return;
  /* Most writes go through at once: try that first. A queued uv_write costs
   * an epoll_ctl pair per call in libuv 1.44, which is most of the syscalls
   * of a pipelined client. */
  b = uv_buf_init(conn->out, (unsigned)conn->out_len);
  rc = uv_try_write(&conn->io.stream, &b, 1);
  if (rc == (int)conn->out_len) {
    conn->out_len = 0;
    return;
  }
  if (rc < 0 && rc != UV_EAGAIN) {
    lk__defer(conn->client, &conn->fail_defer);
    return;
  }
  if (rc > 0)
    done = (size_t)rc;
  /* Swap the buffers: the one being written stays untouched until its
   * callback, new commands go to the other one. */
  tmp = conn->wbuf, cap = conn->wbuf_cap;
  conn->wbuf = conn->out, conn->wbuf_cap = conn->out_cap;
  b = uv_buf_init(conn->wbuf + done, (unsigned)(conn->out_len - done));
  conn->out = tmp, conn->out_cap = cap, conn->out_len = 0;
  conn->write_req.data = conn;
  rc = uv_write(&conn->write_req, &conn->io.stream, &b, 1, on_write);
  if (rc < 0) {
    /* Dropping here would run callbacks inside the caller's lk_ call. */
    lk__defer(conn->client, &conn->fail_defer);
    return;
  }
  conn->writing = 1;
}

void lk__conn_send(lk__conn_t *conn, lk__op_t *op) {
  lk_client_t *c = conn->client;
  /* A script's first call here: its SCRIPT LOAD goes just before it, in the
   * same write (core/conn_scripts.c). */
  lk__op_t *load = lk__conn_script_load_first(conn, op);
  if (load != NULL) {
    c->corked++;
    lk__conn_send(conn, load);
    c->corked--;
  }
  op->asked = conn->after_asking;
  conn->after_asking = op->asking;
  op->conn = conn;
  if (lk__grow((void **)&conn->out, &conn->out_cap, conn->out_len + op->cmd_len, 1, 4096) != 0) {
    /* Not sent: the caller sees "not connected", which it already handles. */
    lk__queue_insert_tail(&conn->sent, &op->node);
    lk__defer(c, &conn->fail_defer);
    return;
  }
  memcpy(conn->out + conn->out_len, op->cmd, op->cmd_len);
  conn->out_len += op->cmd_len;
  op->sent_ns = lk__now_ns();
  lk__queue_insert_tail(&conn->sent, &op->node);
  c->stats.commands_sent++;
  if (conn->state == LK__CONN_READY && !uv_is_active((uv_handle_t *)&conn->timer))
    arm_reply_timer(conn);
  conn_flush(conn);
}

/* A command queued while its connection waits out a reconnect back-off
 * (up to reconnect_max_ms) would wait for the next dial however long that
 * is. The reply timeout bounds every command, counted from its first send
 * (a TRYAGAIN or CLUSTERDOWN resend keeps the first's): the next dial comes
 * no later than that, and then either sends it or fails it with LK_ECONN,
 * so a call ends within its budget + the reply timeout (+ the dial) even
 * when a cluster node refuses connections for longer (docs/client.md,
 * "Connection behaviour"). */
static void dial_within_reply_timeout(lk__conn_t *conn, lk__op_t *op) {
  uint64_t now = lk__now_ns(), first = op->first_sent_ns != 0 ? op->first_sent_ns : now;
  uint64_t due = first + (uint64_t)conn->client->o.reply_timeout_ms * 1000000u;
  int64_t in_ms = due > now ? (int64_t)((due - now) / 1000000u) : 0;
  uv_update_time(conn->client->loop);
  if ((int64_t)uv_timer_get_due_in(&conn->timer) > in_ms)
    conn_arm_timer(conn, on_backoff_done, in_ms);
}

void lk__conn_enqueue(lk__conn_t *conn, lk__op_t *op) {
  op->conn = conn;
  if (conn->state == LK__CONN_CLOSED) {
    /* The client is closing and this connection is done: nothing would
     * ever send or fail the command (a redirected one due again, say). Only
     * the library's own work reaches here by then, never inside a user's
     * call. */
    lk__op_complete(op, LK_ECANCELED, NULL);
    return;
  }
  if (conn->state == LK__CONN_READY) {
    lk__conn_send(conn, op);
    return;
  }
  lk__queue_insert_tail(&conn->unsent, &op->node);
  if (conn->state == LK__CONN_IDLE)
    lk__conn_start(conn);
  else if (conn->state == LK__CONN_BACKOFF && conn->kind == LK__CONN_CMD)
    dial_within_reply_timeout(conn, op);
}

/* --- connecting --- */

static void on_connect_timeout(uv_timer_t *t) {
  lk__conn_t *conn = t->data;
  /* Connected (the reader exists) but the TLS handshake not done: most
   * often a plaintext port, which waits for the end of a command line that
   * never comes. A paused server looks the same, so it stays LK_ECONN (a
   * wait tries again), but it is reported as the TLS failure it likely is. */
  if (conn->state == LK__CONN_CONNECTING && conn->tls != NULL && conn->reader != NULL &&
      !lk__tls_established(conn)) {
    char why[160];
    snprintf(why, sizeof(why),
             "handshake not done within connect_timeout_ms (%lld ms): no TLS answer "
             "(a plaintext port?)",
             (long long)conn->client->o.connect_timeout_ms);
    lk__tls_report_failure(conn, why);
  }
  if (conn->state == LK__CONN_CONNECTING || conn->state == LK__CONN_HANDSHAKE)
    lk__conn_drop(conn, LK_ECONN, "connect timeout");
}

static void on_connected(uv_connect_t *req, int status) {
  lk__conn_t *conn = req->data;
  int rc;
  if (conn->state != LK__CONN_CONNECTING || status == UV_ECANCELED)
    return;
  if (status < 0) {
    lk__conn_drop(conn, LK_ECONN, uv_strerror(status));
    return;
  }
  lk__arena_reset(&conn->arena); /* a reply cut short by the last drop */
  conn->reader = lk__arena_reader_new(&conn->arena);
  if (conn->reader == NULL) {
    lk__conn_drop(conn, LK_ENOMEM, "reader allocation");
    return;
  }
  if (conn->io.handle.type == UV_TCP)
    uv_tcp_nodelay(&conn->io.tcp, 1); /* small commands must not wait */
  rc = uv_read_start(&conn->io.stream, on_alloc, on_read);
  if (rc < 0) {
    lk__conn_drop(conn, LK_ECONN, uv_strerror(rc));
    return;
  }
  if (conn->tls != NULL) {
    /* TLS first (its ClientHello now); the Redis handshake follows in
     * tls_read once it is done, within the same connect timeout. */
    char why[200];
    if (lk__tls_handshake(conn, why, sizeof(why)) < 0) {
      tls_failed(conn, why);
      return;
    }
    conn_flush(conn);
    return;
  }
  lk__handshake_start(conn);
}

static int connect_addr(lk__conn_t *conn, const struct sockaddr *sa) {
  lk_client_t *c = conn->client;
  int rc = uv_tcp_init(c->loop, &conn->io.tcp);
  if (rc < 0)
    return rc;
  conn->io.handle.data = conn;
  conn->io_open = 1;
  c->handles_open++;
  conn->connect_req.data = conn;
  return uv_tcp_connect(&conn->connect_req, &conn->io.tcp, sa, on_connected);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *ai) {
  lk__conn_t *conn = req->data;
  lk_client_t *c = conn->client;
  int rc;
  conn->gai_pending = 0;
  if (conn->state != LK__CONN_CONNECTING || c->closing) {
    uv_freeaddrinfo(ai);
    c->owner->maybe_finish_close(c);
    return;
  }
  if (status < 0 || ai == NULL) {
    uv_freeaddrinfo(ai);
    lk__conn_drop(conn, LK_ECONN, "host name did not resolve");
    return;
  }
  rc = connect_addr(conn, ai->ai_addr);
  uv_freeaddrinfo(ai);
  if (rc < 0)
    lk__conn_drop(conn, LK_ECONN, uv_strerror(rc));
}

static void conn_start_connect(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  const lk__opts_t *o = &c->o;
  /* Node 0 is where the options point; a cluster's other nodes are where
   * the topology or a redirection said. */
  const lk__node_t *n = conn->node;
  const char *host = n != NULL && n->host != NULL ? n->host : o->host;
  int node_port = n != NULL && n->host != NULL ? n->port : o->port;
  const char *unix_path = n != NULL && n->host != NULL ? NULL : o->unix_path;

  conn->state = LK__CONN_CONNECTING;
  if (conn->io_closing)
    return; /* on_io_closed comes back here */
  /* With sentinels, node 0 is wherever they say the master is now: they
   * are asked before every connect, then lk__conn_dial (core/sentinel.h). */
  if (c->sentinel != NULL && n == &c->node0) {
    c->owner->conn_resolve(conn);
    return;
  }
  conn_dial(conn, host, node_port, unix_path);
}

void lk__conn_dial(lk__conn_t *conn, const char *host, int port) {
  conn_dial(conn, host, port, NULL);
}

static void conn_dial(lk__conn_t *conn, const char *host, int node_port, const char *unix_path) {
  lk_client_t *c = conn->client;
  const lk__opts_t *o = &c->o;
  struct sockaddr_storage ss;
  int rc = 0;

  conn_arm_timer(conn, on_connect_timeout, o->connect_timeout_ms);
  /* A session per attempt, named after the host dialled (core/tls.h). */
  if (c->tls != NULL && unix_path == NULL) {
    rc = lk__tls_conn_new(conn, host, node_port);
    if (rc != 0) {
      if (rc == LK_ETLS)
        lk__tls_report_failure(conn, "the server name cannot be used for SNI or the check");
      lk__defer(c, &conn->fail_defer);
      return;
    }
  }
  if (unix_path != NULL) {
    rc = uv_pipe_init(c->loop, &conn->io.pipe, 0);
    if (rc == 0) {
      conn->io.handle.data = conn;
      conn->io_open = 1;
      c->handles_open++;
      conn->connect_req.data = conn;
      uv_pipe_connect(&conn->connect_req, &conn->io.pipe, unix_path, on_connected);
    }
  } else if (uv_ip4_addr(host, node_port, (struct sockaddr_in *)&ss) == 0 ||
             uv_ip6_addr(host, node_port, (struct sockaddr_in6 *)&ss) == 0) {
    rc = connect_addr(conn, (const struct sockaddr *)&ss);
  } else {
    /* Names resolve on libuv's thread pool, never blocking the loop. */
    struct addrinfo hints;
    char port[16];
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof(port), "%d", node_port);
    conn->gai_req.data = conn;
    rc = uv_getaddrinfo(c->loop, &conn->gai_req, on_resolved, host, port, &hints);
    if (rc == 0)
      conn->gai_pending = 1;
  }
  if (rc < 0) {
    /* A synchronous failure inside an lk_ call must not run callbacks. */
    lk__log(c, LK_LOG_WARN, "%s connect failed to start: %s", lk__conn_label(conn),
            uv_strerror(rc));
    lk__defer(c, &conn->fail_defer);
  }
}

void lk__conn_start(lk__conn_t *conn) {
  if (conn->state == LK__CONN_IDLE)
    conn_start_connect(conn);
}

void lk__conn_retry_now(lk__conn_t *conn) {
  if (conn->state != LK__CONN_BACKOFF)
    return;
  uv_timer_stop(&conn->timer);
  conn_start_connect(conn);
}

static void on_timer_closed(uv_handle_t *h) {
  lk__conn_t *conn = h->data;
  conn->timer_closing = 0;
  conn->client->owner->handle_closed(conn->client);
}

void lk__conn_init(lk_client_t *c, lk__conn_t *conn, int kind) {
  memset(conn, 0, sizeof(*conn));
  conn->client = c;
  conn->kind = kind;
  conn->state = LK__CONN_IDLE;
  lk__queue_init(&conn->unsent);
  lk__queue_init(&conn->sent);
  lk__defer_init(&conn->fail_defer, on_fail_defer);
  uv_timer_init(c->loop, &conn->timer);
  conn->timer.data = conn;
  c->handles_open++;
}

int lk__conn_is_busy(const lk__conn_t *conn) {
  return !lk__queue_empty(&conn->sent) || !lk__queue_empty(&conn->unsent);
}

/* Final close: everything still queued is canceled, handles close. */
void lk__conn_close(lk__conn_t *conn) {
  lk_client_t *c = conn->client;
  if (conn->state != LK__CONN_IDLE && conn->state != LK__CONN_BACKOFF &&
      conn->state != LK__CONN_CLOSED)
    lk__conn_drop(conn, LK_ECANCELED, "client closing");
  conn->state = LK__CONN_CLOSED;
  fail_list(&conn->unsent, LK_ECANCELED);
  lk__defer_cancel(&conn->fail_defer);
  if (conn->gai_pending)
    uv_cancel((uv_req_t *)&conn->gai_req);
  close_io(conn);
  if (!conn->timer_closing && !uv_is_closing((uv_handle_t *)&conn->timer)) {
    conn->timer_closing = 1;
    uv_close((uv_handle_t *)&conn->timer, on_timer_closed);
  }
  if (conn->reader != NULL) {
    redisReaderFree(conn->reader);
    conn->reader = NULL;
  }
  (void)c;
}

void lk__conn_free_buffers(lk__conn_t *conn) {
  lk__tls_conn_free(conn); /* memory only: also a forked child's path */
  lk__free(conn->out);
  lk__free(conn->wbuf);
  lk__free(conn->read_buf);
  conn->out = conn->wbuf = conn->read_buf = NULL;
  lk__arena_free(&conn->arena);
}
