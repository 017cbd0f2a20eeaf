/* Fault-injecting TCP proxy on its own libuv thread (see proxy.h).
 *
 * Each accepted connection (conn) has two legs, client and upstream, and two
 * pipes: up (client -> upstream) and down (upstream -> client). A pipe holds
 * the chunks read from its source that are not yet due (delay) in a FIFO, and
 * counts the bytes it holds plus those inside uv_write; above PIPE_HIGH it
 * stops reading its source until the count falls to PIPE_LOW, which bounds the
 * memory per connection. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "proxy.h"

#include "test.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <uv.h>

#define CHUNK_READ_SIZE 16384
#define PIPE_HIGH ((size_t)1 << 20)
#define PIPE_LOW (PIPE_HIGH / 4)
#define LISTEN_ATTEMPTS 8

enum { CLOSE_FIN, CLOSE_RESET };
enum { OP_RESET_ALL, OP_CLOSE_ALL, OP_REFUSE, OP_BLACKHOLE, OP_DELAY, OP_COUNT, OP_STOP };

struct conn_s;

typedef struct chunk_s {
  struct chunk_s *next;
  struct pipe_s *pipe;
  uint64_t due; /* loop time (ms) at which it may be written */
  size_t len;
  uv_write_t req;
  char data[];
} chunk_t;

typedef struct pipe_s {
  struct conn_s *conn;
  uv_tcp_t *src;
  uv_tcp_t *dst;
  chunk_t *head; /* not yet due, FIFO */
  chunk_t *tail;
  size_t bytes; /* queued + inside uv_write */
  uv_timer_t timer; /* fires when head is due */
  int reading;
  int src_eof;
} pipe_t;

typedef struct conn_s {
  struct rt_proxy_s *proxy;
  struct conn_s *prev, *next; /* in proxy->conns while open */
  uv_tcp_t client;
  uv_tcp_t upstream;
  uv_connect_t connect_req;
  pipe_t up;
  pipe_t down;
  int connecting;
  int connected;
  int closing;
  int open_handles; /* freed when the last close callback runs */
} conn_t;

typedef struct cmd_s {
  struct cmd_s *next;
  int op;
  int arg;
  int result;
  int done; /* under proxy->mu */
} cmd_t;

struct rt_proxy_s {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_tcp_t listener;
  uv_async_t wake;
  uv_mutex_t mu; /* guards cmds and cmd->done */
  uv_cond_t cond;
  cmd_t *cmd_head, *cmd_tail;
  struct sockaddr_in target;
  int port;
  /* Below: proxy thread only. */
  conn_t *conns;
  int n_conns;
  int refuse;
  int blackhole;
  int delay_ms;
};

/* The proxy thread cannot fail a test cleanly; running out of memory in a
 * test process is fatal anyway. */
static void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (p == NULL) {
    fprintf(stderr, "rt_proxy: out of memory\n");
    abort();
  }
  return p;
}

static void conn_teardown(conn_t *c, int how);
static void pipe_update_reading(pipe_t *p);

/* ---- pipes ------------------------------------------------------------------------------ */

static chunk_t *chunk_of(char *base) { return (chunk_t *)(void *)(base - offsetof(chunk_t, data)); }

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  (void)suggested;
  chunk_t *ch = malloc(sizeof *ch + CHUNK_READ_SIZE);
  buf->base = ch ? ch->data : NULL; /* NULL makes libuv report UV_ENOBUFS */
  buf->len = ch ? CHUNK_READ_SIZE : 0;
}

/* Drop chunks not yet handed to uv_write (those are cancelled by close). */
static void pipe_drop_queued(pipe_t *p) {
  chunk_t *ch = p->head;
  for (int i = 0; ch != NULL && i < 10000000; i++) {
    chunk_t *next = ch->next;
    p->bytes -= ch->len;
    free(ch);
    ch = next;
  }
  p->head = p->tail = NULL;
  if (!uv_is_closing((uv_handle_t *)&p->timer))
    uv_timer_stop(&p->timer);
}

/* An EOF from the source travels after the bytes read before it. */
static void pipe_check_eof(pipe_t *p) {
  if (p->src_eof && p->head == NULL && p->bytes == 0)
    conn_teardown(p->conn, CLOSE_FIN);
}

static void on_write(uv_write_t *req, int status) {
  chunk_t *ch = req->data;
  pipe_t *p = ch->pipe;
  conn_t *c = p->conn;
  p->bytes -= ch->len;
  free(ch);
  if (c->closing)
    return; /* cancelled by close, or a late completion */
  if (status < 0) {
    conn_teardown(c, CLOSE_RESET);
    return;
  }
  pipe_update_reading(p);
  pipe_check_eof(p);
}

static void on_pipe_timer(uv_timer_t *t);

/* Write every due chunk in order; arm the timer for the next one. */
static void pipe_pump(pipe_t *p) {
  conn_t *c = p->conn;
  uint64_t now = uv_now(&c->proxy->loop);
  for (int i = 0; p->head != NULL && p->head->due <= now && i < 100000; i++) {
    chunk_t *ch = p->head;
    p->head = ch->next;
    if (p->head == NULL)
      p->tail = NULL;
    uv_buf_t b = uv_buf_init(ch->data, (unsigned)ch->len);
    ch->req.data = ch;
    if (uv_write(&ch->req, (uv_stream_t *)p->dst, &b, 1, on_write) != 0) {
      p->bytes -= ch->len;
      free(ch);
      conn_teardown(c, CLOSE_RESET);
      return;
    }
  }
  if (p->head != NULL)
    uv_timer_start(&p->timer, on_pipe_timer, p->head->due - now, 0);
}

static void on_pipe_timer(uv_timer_t *t) {
  pipe_t *p = t->data;
  if (!p->conn->closing)
    pipe_pump(p);
}

static void pipe_push(pipe_t *p, chunk_t *ch) {
  rt_proxy_t *px = p->conn->proxy;
  uv_update_time(&px->loop);
  uint64_t due = uv_now(&px->loop) + (uint64_t)px->delay_ms;
  if (p->tail != NULL && p->tail->due > due)
    due = p->tail->due; /* a shorter delay must not let a chunk overtake */
  ch->due = due;
  ch->pipe = p;
  ch->next = NULL;
  if (p->tail != NULL)
    p->tail->next = ch;
  else
    p->head = ch;
  p->tail = ch;
  p->bytes += ch->len;
  pipe_update_reading(p);
  pipe_pump(p);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  conn_t *c = stream->data;
  pipe_t *p = (stream == (uv_stream_t *)&c->client) ? &c->up : &c->down;
  chunk_t *ch = buf->base != NULL ? chunk_of(buf->base) : NULL;
  if (nread <= 0 || c->closing || c->proxy->blackhole) {
    free(ch);
    if (nread == UV_EOF) {
      p->src_eof = 1;
      pipe_update_reading(p);
      pipe_check_eof(p);
    } else if (nread < 0) {
      conn_teardown(c, CLOSE_RESET); /* a reset (or error) is passed on */
    }
    return;
  }
  chunk_t *fit = realloc(ch, sizeof *ch + (size_t)nread); /* memory counts, not just bytes */
  if (fit != NULL)
    ch = fit;
  ch->len = (size_t)nread;
  pipe_push(p, ch);
}

/* Reading follows the state: never after EOF or teardown; upstream only once
 * connected; client bytes wait for the upstream connection unless dropped by
 * the blackhole; otherwise backpressure with hysteresis. */
static void pipe_update_reading(pipe_t *p) {
  conn_t *c = p->conn;
  int want = !c->closing && !p->src_eof && (p == &c->up || c->connected);
  if (want && !c->proxy->blackhole) {
    if (!c->connected)
      want = 0;
    else
      want = p->reading ? p->bytes <= PIPE_HIGH : p->bytes <= PIPE_LOW;
  }
  if (want && !p->reading) {
    if (uv_read_start((uv_stream_t *)p->src, on_alloc, on_read) != 0) {
      conn_teardown(c, CLOSE_RESET);
      return;
    }
    p->reading = 1;
  } else if (!want && p->reading) {
    uv_read_stop((uv_stream_t *)p->src);
    p->reading = 0;
  }
}

/* ---- connections ---------------------------------------------------------------------- */

static void on_conn_handle_closed(uv_handle_t *h) {
  conn_t *c = (h->type == UV_TIMER) ? ((pipe_t *)h->data)->conn : h->data;
  if (--c->open_handles == 0)
    free(c);
}

/* Read and discard what already arrived: close() with unread data would send
 * RST instead of the FIN we want. The fd is non-blocking (libuv). */
static void drain_unread(uv_tcp_t *t) {
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)t, &fd) != 0)
    return;
  char buf[4096];
  for (int i = 0; i < 256; i++)
    if (recv(fd, buf, sizeof buf, MSG_DONTWAIT) <= 0)
      break;
}

static void leg_close(uv_tcp_t *t, int how) {
  if (how == CLOSE_RESET) {
    if (uv_tcp_close_reset(t, on_conn_handle_closed) == 0)
      return;
    /* Not connected yet (no fd): a plain close is all there is to do. */
  } else {
    drain_unread(t);
  }
  uv_close((uv_handle_t *)t, on_conn_handle_closed);
}

static void conn_teardown(conn_t *c, int how) {
  if (c->closing)
    return;
  c->closing = 1;
  rt_proxy_t *px = c->proxy;
  if (c->prev != NULL)
    c->prev->next = c->next;
  else
    px->conns = c->next;
  if (c->next != NULL)
    c->next->prev = c->prev;
  px->n_conns--;
  pipe_drop_queued(&c->up);
  pipe_drop_queued(&c->down);
  uv_close((uv_handle_t *)&c->up.timer, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->down.timer, on_conn_handle_closed);
  leg_close(&c->client, how);
  leg_close(&c->upstream, how);
}

static void on_upstream_connect(uv_connect_t *req, int status) {
  conn_t *c = req->data;
  c->connecting = 0;
  if (c->closing)
    return;
  if (status < 0) {
    conn_teardown(c, CLOSE_RESET); /* target down: the client sees a reset */
    return;
  }
  c->connected = 1;
  uv_tcp_nodelay(&c->upstream, 1);
  pipe_update_reading(&c->up);
  pipe_update_reading(&c->down);
}

static void conn_connect_upstream(conn_t *c) {
  if (c->connecting || c->connected || c->closing)
    return;
  c->connect_req.data = c;
  if (uv_tcp_connect(&c->connect_req, &c->upstream, (const struct sockaddr *)&c->proxy->target,
                     on_upstream_connect) != 0) {
    conn_teardown(c, CLOSE_RESET);
    return;
  }
  c->connecting = 1;
}

static void pipe_init(pipe_t *p, conn_t *c, uv_tcp_t *src, uv_tcp_t *dst) {
  p->conn = c;
  p->src = src;
  p->dst = dst;
  uv_timer_init(&c->proxy->loop, &p->timer);
  p->timer.data = p;
}

static void on_connection(uv_stream_t *server, int status) {
  rt_proxy_t *px = server->data;
  if (status < 0)
    return;
  conn_t *c = xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->proxy = px;
  uv_tcp_init(&px->loop, &c->client);
  c->client.data = c;
  c->open_handles = 1;
  if (uv_accept(server, (uv_stream_t *)&c->client) != 0) {
    c->closing = 1;
    uv_close((uv_handle_t *)&c->client, on_conn_handle_closed);
    return;
  }
  if (px->refuse) {
    c->closing = 1; /* never counted as open */
    leg_close(&c->client, CLOSE_RESET);
    return;
  }
  uv_tcp_init(&px->loop, &c->upstream);
  c->upstream.data = c;
  pipe_init(&c->up, c, &c->client, &c->upstream);
  pipe_init(&c->down, c, &c->upstream, &c->client);
  c->open_handles = 4;
  c->next = px->conns;
  if (px->conns != NULL)
    px->conns->prev = c;
  px->conns = c;
  px->n_conns++;
  uv_tcp_nodelay(&c->client, 1);
  if (!px->blackhole)
    conn_connect_upstream(c);
  pipe_update_reading(&c->up); /* in a blackhole: read and drop */
}

/* ---- commands from other threads ------------------------------------------------------ */

static void teardown_all(rt_proxy_t *px, int how) {
  for (int i = 0; px->conns != NULL && i < 1000000; i++)
    conn_teardown(px->conns, how); /* unlinks it */
}

static void apply(rt_proxy_t *px, cmd_t *cmd) {
  switch (cmd->op) {
  case OP_RESET_ALL:
    teardown_all(px, CLOSE_RESET);
    break;
  case OP_CLOSE_ALL:
    teardown_all(px, CLOSE_FIN);
    break;
  case OP_REFUSE:
    px->refuse = cmd->arg;
    break;
  case OP_BLACKHOLE:
    px->blackhole = cmd->arg;
    for (conn_t *c = px->conns; c != NULL; c = c->next) {
      if (px->blackhole) {
        pipe_drop_queued(&c->up); /* bytes "in the network" are lost too */
        pipe_drop_queued(&c->down);
      } else {
        conn_connect_upstream(c); /* accepted during the blackhole */
      }
    }
    /* Separate pass: updating may tear a connection down (unlinking it). */
    for (conn_t *c = px->conns, *next; c != NULL; c = next) {
      next = c->next;
      pipe_update_reading(&c->up);
      if (!c->closing)
        pipe_update_reading(&c->down);
    }
    break;
  case OP_DELAY:
    px->delay_ms = cmd->arg < 0 ? 0 : cmd->arg;
    break;
  case OP_COUNT:
    cmd->result = px->n_conns;
    break;
  case OP_STOP:
    teardown_all(px, CLOSE_RESET);
    uv_close((uv_handle_t *)&px->listener, NULL);
    uv_close((uv_handle_t *)&px->wake, NULL);
    break;
  }
}

static void on_wake(uv_async_t *a) {
  rt_proxy_t *px = a->data;
  uv_mutex_lock(&px->mu);
  cmd_t *list = px->cmd_head;
  px->cmd_head = px->cmd_tail = NULL;
  uv_mutex_unlock(&px->mu);
  for (int i = 0; list != NULL && i < 100000; i++) {
    cmd_t *next = list->next; /* the caller may free the command once done */
    apply(px, list);
    uv_mutex_lock(&px->mu);
    list->done = 1;
    uv_cond_broadcast(&px->cond);
    uv_mutex_unlock(&px->mu);
    list = next;
  }
}

static int call(rt_proxy_t *px, int op, int arg) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  cmd.arg = arg;
  uv_mutex_lock(&px->mu);
  if (px->cmd_tail != NULL)
    px->cmd_tail->next = &cmd;
  else
    px->cmd_head = &cmd;
  px->cmd_tail = &cmd;
  uv_mutex_unlock(&px->mu);
  uv_async_send(&px->wake);
  int64_t deadline = rt_now_ms() + rt_scaled_ms(10000);
  uv_mutex_lock(&px->mu);
  for (int i = 0; !cmd.done && i < 100000; i++) {
    int64_t left = deadline - rt_now_ms();
    if (left <= 0)
      break;
    uv_cond_timedwait(&px->cond, &px->mu, (uint64_t)left * 1000000u);
  }
  int done = cmd.done;
  uv_mutex_unlock(&px->mu);
  if (!done)
    FAIL("rt_proxy: proxy thread did not apply command %d", op); /* cmd stays queued: exit */
  return cmd.result;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

static void proxy_thread(void *arg) {
  rt_proxy_t *px = arg;
  /* SIGPIPE from a write to a reset peer must become EPIPE here, not kill the
   * test; process signals belong to the main thread's handlers. */
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  sigaddset(&set, SIGALRM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  uv_run(&px->loop, UV_RUN_DEFAULT); /* returns once OP_STOP closed everything */
}

static void on_listener_closed(uv_handle_t *h) { *(int *)h->data = 1; }

/* Bind the listener on a port from rt_pick_port, retrying when it was taken
 * meanwhile (EADDRINUSE comes from bind or, deferred by libuv, listen). */
static int listen_somewhere(rt_proxy_t *px) {
  for (int attempt = 0; attempt < LISTEN_ATTEMPTS; attempt++) {
    int port = rt_pick_port();
    struct sockaddr_in addr;
    uv_ip4_addr("127.0.0.1", port, &addr);
    uv_tcp_init(&px->loop, &px->listener);
    px->listener.data = px;
    int r = port == 0 ? UV_EADDRINUSE : uv_tcp_bind(&px->listener, (struct sockaddr *)&addr, 0);
    if (r == 0)
      r = uv_listen((uv_stream_t *)&px->listener, 128, on_connection);
    if (r == 0) {
      px->port = port;
      return 0;
    }
    /* Close and finish the close before re-initialising the handle; the
     * proxy thread does not exist yet, so running the loop here is fine. */
    int closed = 0;
    px->listener.data = &closed;
    uv_close((uv_handle_t *)&px->listener, on_listener_closed);
    for (int i = 0; !closed && i < 1000; i++)
      uv_run(&px->loop, UV_RUN_NOWAIT);
    fprintf(stderr, "rt_proxy: port %d: %s; retrying\n", port, uv_strerror(r));
  }
  return -1;
}

rt_proxy_t *rt_proxy_start(int target_port) {
  rt_proxy_t *px = xmalloc(sizeof *px);
  memset(px, 0, sizeof *px);
  if (uv_loop_init(&px->loop) != 0) {
    free(px);
    fprintf(stderr, "rt_proxy_start: uv_loop_init failed\n");
    return NULL;
  }
  uv_mutex_init(&px->mu);
  uv_cond_init(&px->cond);
  uv_ip4_addr("127.0.0.1", target_port, &px->target);
  uv_async_init(&px->loop, &px->wake, on_wake);
  px->wake.data = px;
  if (listen_somewhere(px) != 0 || uv_thread_create(&px->thread, proxy_thread, px) != 0) {
    fprintf(stderr, "rt_proxy_start: no listening port\n");
    uv_close((uv_handle_t *)&px->wake, NULL);
    if (px->port != 0)
      uv_close((uv_handle_t *)&px->listener, NULL);
    uv_run(&px->loop, UV_RUN_DEFAULT); /* only closing handles left: returns */
    uv_loop_close(&px->loop);
    uv_cond_destroy(&px->cond);
    uv_mutex_destroy(&px->mu);
    free(px);
    return NULL;
  }
  return px;
}

int rt_proxy_port(const rt_proxy_t *p) { return p->port; }

void rt_proxy_stop(rt_proxy_t *p) {
  if (p == NULL)
    return;
  call(p, OP_STOP, 0);
  uv_thread_join(&p->thread);
  int r = uv_loop_close(&p->loop);
  if (r != 0)
    FAIL("rt_proxy_stop: uv_loop_close: %s", uv_strerror(r));
  uv_cond_destroy(&p->cond);
  uv_mutex_destroy(&p->mu);
  free(p);
}

void rt_proxy_reset_all(rt_proxy_t *p) { call(p, OP_RESET_ALL, 0); }
void rt_proxy_close_all(rt_proxy_t *p) { call(p, OP_CLOSE_ALL, 0); }
void rt_proxy_refuse(rt_proxy_t *p, int on) { call(p, OP_REFUSE, on != 0); }
void rt_proxy_blackhole(rt_proxy_t *p, int on) { call(p, OP_BLACKHOLE, on != 0); }
void rt_proxy_delay(rt_proxy_t *p, int ms) { call(p, OP_DELAY, ms); }
int rt_proxy_connections(rt_proxy_t *p) { return call(p, OP_COUNT, 0); }
