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

#include "resp_scan.h"
#include "test.h"

#include <errno.h>
#include <pthread.h>
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
enum {
  OP_RESET_ALL,
  OP_CLOSE_ALL,
  OP_REFUSE,
  OP_BLACKHOLE,
  OP_DELAY,
  OP_COUNT,
  OP_STOP,
  OP_PAUSE,
  OP_RULE,
  OP_RULE_STATE,
  OP_RULE_APPLIED,
  OP_RELEASE,
  OP_REQUESTS,
  OP_CUT_CHUNK,
  OP_PARK
};

/* A growable byte buffer (proxy thread only). */
typedef struct bytes_s {
  char *p;
  size_t len, cap;
} bytes_t;

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
  int dir; /* RT_PROXY_UP or RT_PROXY_DOWN */
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
  /* RESP tracking (see proxy.h "reply rules"): requests seen upstream and
   * reply frames seen downstream, which line up one to one (pub/sub
   * commands count one frame per channel; pushes are not replies). */
  rt_resp_scan_t up_scan, down_scan;
  int scan_off;        /* the streams stopped being RESP, or bytes were lost */
  int subscribed;      /* a SUBSCRIBE-family command was seen: pushes happen */
  long long req_frames;   /* reply frames owed for the requests seen */
  long long reply_frames; /* reply frames seen */
  long long action_frame; /* the frame the armed action applies to, or -1 */
  int action;
  int stalled;         /* every later reply frame is dropped */
  int holding;         /* every later reply frame waits in held */
  int cutting;         /* closing after the frames before the dropped one */
  bytes_t frame;       /* the partial reply frame being scanned */
  bytes_t held;
} conn_t;

/* Requests seen, by their first two words. */
typedef struct reqstat_s {
  char w[2][RT_RESP_CAP + 1];
  size_t wlen[2];
  long long count;
} reqstat_t;

typedef struct cmd_s {
  struct cmd_s *next;
  int op;
  int arg;
  int arg2;
  const void *ptr; /* borrowed for the call */
  size_t len;
  const void *ptr2;
  size_t len2;
  long long result;
  int done; /* under proxy->mu */
} cmd_t;

/* The armed reply rule (one at a time). */
typedef struct rule_s {
  int state; /* 0 none, RT_PROXY_RULE_ARMED, _MATCHED, _APPLIED */
  char w[2][RT_RESP_CAP + 1];
  size_t wlen[2];
  int nwords;
  long long k, seen;
  int action;
  char *replacement;
  size_t replacement_len;
  int every;         /* rt_proxy_on_every_reply: stays armed */
  long long applied; /* replies acted on */
} rule_t;

struct rt_proxy_s {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_tcp_t listener;
  uv_async_t wake;
  uv_mutex_t mu; /* guards cmds, cmd->done and parked */
  uv_cond_t cond;
  cmd_t *cmd_head, *cmd_tail;
  int parked; /* the thread waits in on_wake until another thread clears it */
  struct rt_proxy_s *next_live; /* the registry of running proxies */
  struct sockaddr_in target;
  int port;
  /* Below: proxy thread only. */
  conn_t *conns;
  int n_conns;
  int refuse;
  int blackhole;
  int delay_ms;
  int paused[2];
  int cut_armed;       /* rt_proxy_cut_next_chunk: the next server chunk is cut */
  long long cuts_done;
  rule_t rule;
  reqstat_t *stats;
  size_t n_stats, cap_stats;
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
  if (c->proxy->paused[p->dir])
    return; /* bytes wait; reading stops at the high-water mark */
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


/* ---- RESP tracking and reply rules ------------------------------------------------------ */

static void bytes_add(bytes_t *b, const char *p, size_t n) {
  if (n == 0)
    return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
      cap *= 2;
    char *q = realloc(b->p, cap);
    if (q == NULL) {
      fprintf(stderr, "rt_proxy: out of memory\n");
      abort();
    }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

static void bytes_free(bytes_t *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}

static chunk_t *chunk_copy(const char *p, size_t n) {
  chunk_t *ch = xmalloc(sizeof *ch + n);
  memcpy(ch->data, p, n);
  ch->len = n;
  return ch;
}

static int word_eq(const char *a, size_t alen, const char *b, size_t blen) {
  if (alen != blen)
    return 0;
  for (size_t i = 0; i < alen; i++) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z')
      x = (char)(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z')
      y = (char)(y - 'A' + 'a');
    if (x != y)
      return 0;
  }
  return 1;
}

/* Splits "VERB [ARG]" into at most two words. Returns the count. */
static int split_match(const char *m, char w[2][RT_RESP_CAP + 1], size_t wlen[2]) {
  int n = 0;
  wlen[0] = wlen[1] = 0;
  w[0][0] = w[1][0] = '\0';
  for (const char *q = m; q != NULL && *q != '\0' && n < 2;) {
    while (*q == ' ')
      q++;
    if (*q == '\0')
      break;
    size_t len = 0;
    while (q[len] != '\0' && q[len] != ' ')
      len++;
    if (len > RT_RESP_CAP)
      len = RT_RESP_CAP;
    memcpy(w[n], q, len);
    w[n][len] = '\0';
    wlen[n] = len;
    n++;
    q += len;
    while (*q != '\0' && *q != ' ')
      q++;
  }
  return n;
}

static int words_match(const char w[2][RT_RESP_CAP + 1], const size_t wlen[2], int nwords,
                       const rt_resp_scan_t *s) {
  for (int i = 0; i < nwords; i++)
    if (!rt_resp_cap_is(s, i, w[i], wlen[i]))
      return 0;
  return 1;
}

static int is_sub_verb(const rt_resp_scan_t *s) {
  static const char *const verbs[] = {"subscribe",    "unsubscribe",  "psubscribe",
                                      "punsubscribe", "ssubscribe",   "sunsubscribe"};
  for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
    if (rt_resp_cap_is(s, 0, verbs[i], strlen(verbs[i])))
      return 1;
  return 0;
}

static void stats_count(rt_proxy_t *px, const rt_resp_scan_t *s) {
  for (size_t i = 0; i < px->n_stats; i++) {
    reqstat_t *st = &px->stats[i];
    if (word_eq(st->w[0], st->wlen[0], s->cap[0], s->ncap > 0 ? s->cap_len[0] : 0) &&
        word_eq(st->w[1], st->wlen[1], s->cap[1], s->ncap > 1 ? s->cap_len[1] : 0)) {
      st->count++;
      return;
    }
  }
  if (px->n_stats == px->cap_stats) {
    size_t cap = px->cap_stats ? px->cap_stats * 2 : 32;
    reqstat_t *v = realloc(px->stats, cap * sizeof *v);
    if (v == NULL)
      return; /* counts are best effort; rules do not depend on them */
    px->stats = v;
    px->cap_stats = cap;
  }
  reqstat_t *st = &px->stats[px->n_stats++];
  memset(st, 0, sizeof *st);
  for (int i = 0; i < 2 && i < s->ncap; i++) {
    memcpy(st->w[i], s->cap[i], s->cap_len[i] + 1);
    st->wlen[i] = s->cap_len[i];
  }
  st->count = 1;
}

static void request_done(conn_t *c) {
  rt_proxy_t *px = c->proxy;
  const rt_resp_scan_t *s = &c->up_scan;
  long long frames = 1;
  if (is_sub_verb(s)) {
    c->subscribed = 1;
    frames = s->top_count - 1 > 1 ? s->top_count - 1 : 1;
  }
  stats_count(px, s);
  rule_t *r = &px->rule;
  if (r->state == RT_PROXY_RULE_ARMED && words_match(r->w, r->wlen, r->nwords, s) &&
      (++r->seen == r->k || r->every)) {
    if (!r->every)
      r->state = RT_PROXY_RULE_MATCHED;
    c->action_frame = c->req_frames;
    c->action = r->action;
  }
  c->req_frames += frames;
}

static void observe_requests(conn_t *c, const char *d, size_t n) {
  for (size_t i = 0; i < n && !c->scan_off;) {
    int done = 0;
    long r = rt_resp_scan(&c->up_scan, d + i, n - i, &done);
    if (r < 0) {
      c->scan_off = 1; /* replies can no longer be matched to requests */
      break;
    }
    i += (size_t)r;
    if (done)
      request_done(c);
  }
}

/* Where a reply frame's bytes go, given the connection's mode. */
static void route(conn_t *c, bytes_t *out, const char *p, size_t n) {
  if (c->stalled || c->cutting)
    return;
  if (c->holding) {
    bytes_add(&c->held, p, n);
    return;
  }
  bytes_add(out, p, n);
}

static void apply_action(conn_t *c, bytes_t *out) {
  rule_t *r = &c->proxy->rule;
  c->action_frame = -1;
  r->applied++;
  if (!r->every)
    r->state = RT_PROXY_RULE_APPLIED;
  switch (c->action) {
  case RT_PROXY_DROP:
    return;
  case RT_PROXY_DROP_CUT:
    c->cutting = 1;
    return;
  case RT_PROXY_DROP_STALL:
    c->stalled = 1;
    return;
  case RT_PROXY_HOLD:
    c->holding = 1;
    route(c, out, c->frame.p, c->frame.len);
    return;
  case RT_PROXY_REPLACE:
    route(c, out, r->replacement, r->replacement_len);
    return;
  case RT_PROXY_INSERT:
    route(c, out, r->replacement, r->replacement_len);
    route(c, out, c->frame.p, c->frame.len);
    return;
  case RT_PROXY_TRUNCATE:
    /* Routed before cutting is set: route drops everything after. */
    route(c, out, c->frame.p, c->frame.len > 1 ? c->frame.len / 2 : c->frame.len);
    c->cutting = 1;
    return;
  }
}

static void reply_done(conn_t *c, bytes_t *out) {
  const rt_resp_scan_t *s = &c->down_scan;
  int push = c->subscribed && s->top_count >= 3 &&
             (rt_resp_cap_is(s, 0, "message", 7) || rt_resp_cap_is(s, 0, "pmessage", 8) ||
              rt_resp_cap_is(s, 0, "smessage", 8));
  if (!push && c->reply_frames++ == c->action_frame) {
    apply_action(c, out);
    return;
  }
  route(c, out, c->frame.p, c->frame.len);
}

/* Takes a chunk read from upstream and returns what goes to the client now
 * (NULL: nothing). A frame is forwarded once complete, so a rule can act on
 * whole replies; the bytes of an incomplete one wait in c->frame. */
static chunk_t *filter_replies(conn_t *c, chunk_t *ch) {
  bytes_t out = {0};
  const char *d = ch->data;
  size_t n = ch->len;
  if (c->scan_off && c->frame.len == 0 && !c->holding && !c->stalled && !c->cutting)
    return ch; /* plain forwarding */
  for (size_t i = 0; i < n;) {
    if (c->scan_off) {
      bytes_add(&c->frame, d + i, n - i);
      route(c, &out, c->frame.p, c->frame.len);
      c->frame.len = 0;
      break;
    }
    int done = 0;
    long r = rt_resp_scan(&c->down_scan, d + i, n - i, &done);
    if (r < 0) {
      c->scan_off = 1;
      continue;
    }
    bytes_add(&c->frame, d + i, (size_t)r);
    i += (size_t)r;
    if (done) {
      reply_done(c, &out);
      c->frame.len = 0;
    }
  }
  free(ch);
  chunk_t *res = out.len > 0 ? chunk_copy(out.p, out.len) : NULL;
  bytes_free(&out);
  return res;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  conn_t *c = stream->data;
  pipe_t *p = (stream == (uv_stream_t *)&c->client) ? &c->up : &c->down;
  chunk_t *ch = buf->base != NULL ? chunk_of(buf->base) : NULL;
  if (nread <= 0 || c->closing || c->proxy->blackhole) {
    free(ch);
    if (nread > 0)
      c->scan_off = 1; /* bytes lost: requests and replies no longer line up */
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
  if (p == &c->up) {
    observe_requests(c, ch->data, ch->len);
    pipe_push(p, ch);
    return;
  }
  if (c->proxy->cut_armed) {
    /* All but its last byte, then FIN once those are written: the stream
     * ends inside its last unit, whatever the bytes are (TLS records). */
    c->proxy->cut_armed = 0;
    c->proxy->cuts_done++;
    c->scan_off = 1;
    if (ch->len > 1) {
      ch->len--;
      pipe_push(p, ch);
    } else {
      free(ch);
    }
    p->src_eof = 1;
    pipe_update_reading(p);
    pipe_check_eof(p);
    return;
  }
  ch = filter_replies(c, ch);
  if (ch != NULL)
    pipe_push(p, ch);
  if (c->cutting && !p->src_eof && !c->closing) {
    /* As if the server had closed right after the frames before the
     * dropped one: they are delivered, then FIN (pipe_check_eof). */
    p->src_eof = 1;
    pipe_update_reading(p);
    pipe_check_eof(p);
  }
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
  if (--c->open_handles == 0) {
    bytes_free(&c->frame);
    bytes_free(&c->held);
    free(c);
  }
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

static void pipe_init(pipe_t *p, conn_t *c, uv_tcp_t *src, uv_tcp_t *dst, int dir) {
  p->conn = c;
  p->dir = dir;
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
  pipe_init(&c->up, c, &c->client, &c->upstream, RT_PROXY_UP);
  pipe_init(&c->down, c, &c->upstream, &c->client, RT_PROXY_DOWN);
  rt_resp_scan_init(&c->up_scan, 1);
  rt_resp_scan_init(&c->down_scan, 0);
  c->action_frame = -1;
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
        if (c->up.head != NULL || c->down.head != NULL)
          c->scan_off = 1;
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
  case OP_PAUSE:
    for (int dir = 0; dir < 2; dir++) {
      if (cmd->arg != RT_PROXY_BOTH && cmd->arg != dir)
        continue;
      px->paused[dir] = cmd->arg2;
      if (cmd->arg2)
        continue;
      for (conn_t *c = px->conns, *next; c != NULL; c = next) {
        next = c->next;
        pipe_pump(dir == RT_PROXY_UP ? &c->up : &c->down);
      }
    }
    break;
  case OP_RULE: {
    rule_t *r = &px->rule;
    free(r->replacement);
    memset(r, 0, sizeof *r);
    for (conn_t *c = px->conns; c != NULL; c = c->next)
      c->action_frame = -1; /* a matched rule not yet applied is replaced */
    if (cmd->arg <= 0)
      break; /* k <= 0 disarms */
    r->nwords = split_match(cmd->ptr, r->w, r->wlen);
    r->k = cmd->arg;
    r->every = cmd->len != 0;
    r->action = cmd->arg2;
    if (cmd->len2 > 0) {
      r->replacement = xmalloc(cmd->len2);
      memcpy(r->replacement, cmd->ptr2, cmd->len2);
      r->replacement_len = cmd->len2;
    }
    r->state = RT_PROXY_RULE_ARMED;
    break;
  }
  case OP_RULE_STATE:
    cmd->result = px->rule.state;
    break;
  case OP_RULE_APPLIED:
    cmd->result = px->rule.applied;
    break;
  case OP_RELEASE:
    for (conn_t *c = px->conns, *next; c != NULL; c = next) {
      next = c->next;
      if (!c->holding)
        continue;
      c->holding = 0;
      if (c->held.len > 0) {
        chunk_t *ch = chunk_copy(c->held.p, c->held.len);
        c->held.len = 0;
        pipe_push(&c->down, ch);
      }
    }
    break;
  case OP_REQUESTS: {
    char w[2][RT_RESP_CAP + 1];
    size_t wlen[2];
    int nw = split_match(cmd->ptr, w, wlen);
    cmd->result = 0;
    for (size_t i = 0; i < px->n_stats; i++) {
      const reqstat_t *st = &px->stats[i];
      int ok = 1;
      for (int k = 0; k < nw && ok; k++)
        ok = word_eq(st->w[k], st->wlen[k], w[k], wlen[k]);
      if (ok)
        cmd->result += st->count;
    }
    break;
  }
  case OP_CUT_CHUNK:
    if (cmd->arg)
      px->cut_armed = 1;
    cmd->result = px->cuts_done;
    break;
  case OP_STOP:
    teardown_all(px, CLOSE_RESET);
    uv_close((uv_handle_t *)&px->listener, NULL);
    uv_close((uv_handle_t *)&px->wake, NULL);
    break;
  }
}

static int call(rt_proxy_t *px, int op, int arg);

static void on_wake(uv_async_t *a) {
  rt_proxy_t *px = a->data;
  uv_mutex_lock(&px->mu);
  cmd_t *list = px->cmd_head;
  px->cmd_head = px->cmd_tail = NULL;
  uv_mutex_unlock(&px->mu);
  for (int i = 0; list != NULL && i < 100000; i++) {
    cmd_t *next = list->next; /* the caller may free the command once done */
    int park = list->op == OP_PARK;
    if (!park)
      apply(px, list);
    uv_mutex_lock(&px->mu);
    list->done = 1;
    if (park)
      px->parked = 1;
    uv_cond_broadcast(&px->cond);
    /* Parked: between two callbacks, holding no lock of the allocator's,
     * until rt_proxies_unpark_all. */
    for (int k = 0; px->parked && k < 1000000; k++)
      uv_cond_wait(&px->cond, &px->mu);
    uv_mutex_unlock(&px->mu);
    list = next;
  }
}

/* ---- forking beside proxy threads --------------------------------------------------------- */

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static rt_proxy_t *live_head;

void rt_proxies_park_all(void) {
  pthread_mutex_lock(&live_mu); /* held until rt_proxies_unpark_all */
  for (rt_proxy_t *p = live_head; p != NULL; p = p->next_live)
    call(p, OP_PARK, 0);
}

void rt_proxies_unpark_all(void) {
  for (rt_proxy_t *p = live_head; p != NULL; p = p->next_live) {
    uv_mutex_lock(&p->mu);
    p->parked = 0;
    uv_cond_broadcast(&p->cond);
    uv_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&live_mu);
}

void rt_proxies_forked_child(void) {
  /* The proxies' threads do not exist here; only the registry lock, taken
   * by this thread before fork, needs letting go. */
  live_head = NULL;
  pthread_mutex_unlock(&live_mu);
}

static void live_add(rt_proxy_t *p) {
  pthread_mutex_lock(&live_mu);
  p->next_live = live_head;
  live_head = p;
  pthread_mutex_unlock(&live_mu);
}

static void live_remove(rt_proxy_t *p) {
  pthread_mutex_lock(&live_mu);
  for (rt_proxy_t **pp = &live_head; *pp != NULL; pp = &(*pp)->next_live) {
    if (*pp == p) {
      *pp = p->next_live;
      break;
    }
  }
  pthread_mutex_unlock(&live_mu);
}

static long long call_cmd(rt_proxy_t *px, cmd_t *in) {
  cmd_t cmd = *in;
  cmd.next = NULL;
  cmd.done = 0;
  int op = cmd.op;
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

static int call(rt_proxy_t *px, int op, int arg) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = op;
  cmd.arg = arg;
  return (int)call_cmd(px, &cmd);
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
  live_add(px);
  return px;
}

int rt_proxy_port(const rt_proxy_t *p) { return p->port; }

void rt_proxy_stop(rt_proxy_t *p) {
  if (p == NULL)
    return;
  live_remove(p);
  call(p, OP_STOP, 0);
  uv_thread_join(&p->thread);
  int r = uv_loop_close(&p->loop);
  if (r != 0)
    FAIL("rt_proxy_stop: uv_loop_close: %s", uv_strerror(r));
  uv_cond_destroy(&p->cond);
  uv_mutex_destroy(&p->mu);
  free(p->rule.replacement);
  free(p->stats);
  free(p);
}

void rt_proxy_reset_all(rt_proxy_t *p) { call(p, OP_RESET_ALL, 0); }
void rt_proxy_close_all(rt_proxy_t *p) { call(p, OP_CLOSE_ALL, 0); }
void rt_proxy_refuse(rt_proxy_t *p, int on) { call(p, OP_REFUSE, on != 0); }
void rt_proxy_blackhole(rt_proxy_t *p, int on) { call(p, OP_BLACKHOLE, on != 0); }
void rt_proxy_delay(rt_proxy_t *p, int ms) { call(p, OP_DELAY, ms); }
int rt_proxy_connections(rt_proxy_t *p) { return call(p, OP_COUNT, 0); }
void rt_proxy_cut_next_chunk(rt_proxy_t *p) { call(p, OP_CUT_CHUNK, 1); }
int rt_proxy_chunks_cut(rt_proxy_t *p) { return call(p, OP_CUT_CHUNK, 0); }

void rt_proxy_pause(rt_proxy_t *p, int dir, int on) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = OP_PAUSE;
  cmd.arg = dir;
  cmd.arg2 = on != 0;
  call_cmd(p, &cmd);
}

void rt_proxy_on_reply(rt_proxy_t *p, const char *match, int k, rt_proxy_action_t action,
                       const void *bytes, size_t len) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = OP_RULE;
  cmd.ptr = match != NULL ? match : "";
  cmd.arg = k;
  cmd.arg2 = (int)action;
  cmd.ptr2 = bytes;
  cmd.len2 = action == RT_PROXY_REPLACE || action == RT_PROXY_INSERT ? len : 0;
  call_cmd(p, &cmd);
}

void rt_proxy_on_every_reply(rt_proxy_t *p, const char *match, rt_proxy_action_t action,
                             const void *bytes, size_t len) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = OP_RULE;
  cmd.ptr = match != NULL ? match : "";
  cmd.arg = 1;
  cmd.arg2 = (int)action;
  cmd.len = 1; /* every */
  cmd.ptr2 = bytes;
  cmd.len2 = action == RT_PROXY_REPLACE || action == RT_PROXY_INSERT ? len : 0;
  call_cmd(p, &cmd);
}

int rt_proxy_rule_state(rt_proxy_t *p) { return call(p, OP_RULE_STATE, 0); }
long long rt_proxy_rule_applied(rt_proxy_t *p) { return call(p, OP_RULE_APPLIED, 0); }

void rt_proxy_release(rt_proxy_t *p) { call(p, OP_RELEASE, 0); }

long long rt_proxy_requests(rt_proxy_t *p, const char *match) {
  cmd_t cmd;
  memset(&cmd, 0, sizeof cmd);
  cmd.op = OP_REQUESTS;
  cmd.ptr = match != NULL ? match : "";
  return call_cmd(p, &cmd);
}
