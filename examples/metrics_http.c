/* metrics_http: serve the program's latchkey metrics to Prometheus.
 *   metrics_http [URL [PORT]]   URL: a connection URL (redis://, rediss://,
 *              redis+sentinel://, unix://) or host:port; else $LATCHKEY_REDIS,
 *              else redis://127.0.0.1:6379. PORT: the loopback port to
 *              listen on, default 9464 (0: any free port)
 * It listens on 127.0.0.1:PORT, prints the address it serves, and answers
 * GET /metrics with lk_client_write_metrics's text (docs/metrics.md):
 * latchkey serves nothing itself, the program does, here from a libuv TCP
 * handle on the client's own loop. To have something to show, it takes and
 * gives back the lock metrics_http:demo once a second, and keeps an owner
 * description (docs/owners.md). SIGINT or SIGTERM ends it cleanly. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

/* One HTTP/1.0 exchange: read the request head, write one answer, close. */
typedef struct conn_s {
  uv_tcp_t tcp;
  uv_write_t write_req;
  char req[4096];
  size_t len;
  char *resp;
  int answered;
  struct conn_s *next; /* the open ones, closed on shutdown */
} conn_t;

static uv_loop_t loop;
static uv_tcp_t server;
static uv_timer_t tick;
static uv_signal_t sig_int, sig_term;
static lk_client_t *client;
static lk_lock_t *demo;
static conn_t *conns;
static int demo_busy, stopping, exit_code = 0;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* --- HTTP --- */

static void on_conn_closed(uv_handle_t *h) {
  conn_t *c = h->data, **p;
  for (p = &conns; *p != NULL; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  free(c->resp);
  free(c);
}

static void conn_close(conn_t *c) {
  if (!uv_is_closing((uv_handle_t *)&c->tcp))
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_written(uv_write_t *req, int status) {
  (void)status; /* HTTP/1.0: the connection ends with the answer either way */
  conn_close(req->data);
}

/* The answer: the metrics for GET /metrics, 404 for another path, 405 for
 * another method. Content-Type is the one the text format 0.0.4 names. */
static void answer(conn_t *c) {
  static const char head[] = "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                             "Connection: close\r\n\r\n";
  const char *status = "200 OK", *type = "text/plain; version=0.0.4; charset=utf-8";
  const char *body = NULL;
  int body_len, head_len;
  uv_buf_t buf;
  c->answered = 1;
  uv_read_stop((uv_stream_t *)&c->tcp);
  if (strncmp(c->req, "GET ", 4) != 0) {
    status = "405 Method Not Allowed", type = "text/plain", body = "GET only\n";
  } else if (strncmp(c->req + 4, "/metrics ", 9) != 0 &&
             strncmp(c->req + 4, "/metrics?", 9) != 0) {
    status = "404 Not Found", type = "text/plain", body = "try /metrics\n";
  }
  /* The size first (snprintf's way), then the text right after the head. */
  body_len = body != NULL ? (int)strlen(body) : lk_client_write_metrics(client, NULL, 0, NULL);
  if (body_len < 0) {
    report("lk_client_write_metrics", body_len);
    status = "500 Internal Server Error", type = "text/plain", body = "";
    body_len = 0;
  }
  head_len = snprintf(NULL, 0, head, status, type, body_len);
  c->resp = malloc((size_t)head_len + (size_t)body_len + 1);
  if (c->resp == NULL) {
    conn_close(c);
    return;
  }
  snprintf(c->resp, (size_t)head_len + 1, head, status, type, body_len);
  if (body != NULL)
    memcpy(c->resp + head_len, body, (size_t)body_len);
  else if (lk_client_write_metrics(client, c->resp + head_len, (size_t)body_len + 1, NULL) !=
           body_len) {
    conn_close(c); /* cannot happen: nothing ran in between */
    return;
  }
  buf = uv_buf_init(c->resp, (unsigned)(head_len + body_len));
  c->write_req.data = c;
  if (uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0)
    conn_close(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn_t *c = h->data;
  (void)suggested;
  *buf = uv_buf_init(c->req + c->len, (unsigned)(sizeof(c->req) - 1 - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  conn_t *c = s->data;
  (void)buf;
  if (n < 0) {
    conn_close(c); /* gone, or a head larger than we read (UV_ENOBUFS) */
    return;
  }
  c->len += (size_t)n;
  c->req[c->len] = '\0';
  if (!c->answered && (strstr(c->req, "\r\n\r\n") != NULL || strstr(c->req, "\n\n") != NULL))
    answer(c);
  else if (c->len == sizeof(c->req) - 1)
    conn_close(c);
}

static void on_connection(uv_stream_t *srv, int status) {
  conn_t *c;
  if (status < 0 || stopping)
    return;
  c = calloc(1, sizeof(*c));
  if (c == NULL)
    return;
  uv_tcp_init(&loop, &c->tcp);
  c->tcp.data = c;
  c->next = conns;
  conns = c;
  if (uv_accept(srv, (uv_stream_t *)&c->tcp) != 0 ||
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0)
    conn_close(c);
}

/* --- the demo work: one short critical section a second --- */

static void on_released(lk_lock_t *lock, int status, void *arg) {
  (void)lock, (void)arg;
  if (status < 0 && status != LK_ECANCELED)
    report("release", status);
  demo_busy = 0;
}

static void on_acquired(lk_lock_t *lock, int status, void *arg) {
  int rc;
  (void)arg;
  demo_busy = 0;
  if (status < 0) {
    if (status != LK_ECANCELED && status != LK_ETIMEDOUT)
      report("acquire", status);
    return;
  }
  if ((rc = lk_lock_release(lock, on_released, NULL)) < 0)
    report("lk_lock_release", rc);
  else
    demo_busy = 1;
}

static void on_tick(uv_timer_t *t) {
  lk_lock_opts_t opts;
  int rc;
  (void)t;
  if (demo_busy)
    return;
  lk_lock_opts_init(&opts);
  opts.wait_ms = 500;
  if ((rc = lk_lock_acquire(demo, &opts, on_acquired, NULL)) < 0)
    report("lk_lock_acquire", rc);
  else
    demo_busy = 1;
}

/* --- shutdown: our handles, then the lock, then the client --- */

static void on_demo_closed(lk_lock_t *lock) {
  int rc;
  (void)lock;
  if ((rc = lk_client_close(client, NULL)) < 0)
    report("lk_client_close", rc);
}

static void stop(void) {
  conn_t *c;
  int rc;
  if (stopping)
    return;
  stopping = 1;
  uv_close((uv_handle_t *)&server, NULL);
  uv_close((uv_handle_t *)&tick, NULL);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
  for (c = conns; c != NULL; c = c->next)
    conn_close(c);
  /* A pending acquire or release ends LK_ECANCELED, then the close. */
  if ((rc = lk_lock_close(demo, on_demo_closed)) < 0) {
    report("lk_lock_close", rc);
    on_demo_closed(demo);
  }
}

static void on_signal(uv_signal_t *s, int signum) {
  (void)s, (void)signum;
  stop();
}

int main(int argc, char **argv) {
  /* The server: a connection URL or host:port (docs/client.md, "Connection
   * URL") from argv, else $LATCHKEY_REDIS, else the default. */
  const char *url = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  if (argc == 1 && (url == NULL || *url == '\0')) url = "redis://127.0.0.1:6379";
  long port = 9464;
  char *end = NULL;
  if (argc > 2) port = strtol(argv[2], &end, 10);
  lk_client_opts_t copts;
  lk_client_opts_init(&copts);
  int rc = argc > 3 || (argc > 2 && (*end != '\0' || port < 0 || port > 65535))
               ? LK_EINVAL
               : lk_client_opts_set_url(&copts, url);
  if (rc == LK_EINVAL) { /* a malformed URL or port, or too many arguments */
    fprintf(stderr,
            "usage: %s [URL [PORT]]\n"
            "  URL: redis://[[user]:password@]host[:port][/db], rediss://... (TLS),\n"
            "       redis+sentinel://host[:port][,host[:port]...]/master[/db],\n"
            "       unix:///path/to/redis.sock, or host[:port]\n"
            "  default: $LATCHKEY_REDIS, else redis://127.0.0.1:6379\n"
            "  PORT: where to serve GET /metrics on 127.0.0.1, default 9464 (0: any)\n",
            argv[0]);
    return 2;
  }
  if (rc < 0) {
    report("lk_client_opts_set_url", rc);
    return 1;
  }
  copts.client_name = "metrics_http";
  copts.describe_owner = 1; /* inspection can name this process (docs/owners.md) */

  if ((rc = uv_loop_init(&loop)) != 0) {
    fprintf(stderr, "uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    return 1;
  }
  if ((rc = lk_lock_new(client, "metrics_http:demo", &demo)) < 0) {
    report("lk_lock_new", rc);
    lk_client_close(client, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    return 1;
  }

  /* Loopback only: metrics are for the scraper next to the program. */
  struct sockaddr_in addr;
  struct sockaddr_storage bound;
  int bound_len = sizeof(bound);
  uv_ip4_addr("127.0.0.1", (int)port, &addr);
  uv_tcp_init(&loop, &server);
  uv_timer_init(&loop, &tick);
  uv_signal_init(&loop, &sig_int);
  uv_signal_init(&loop, &sig_term);
  if ((rc = uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0)) != 0 ||
      (rc = uv_listen((uv_stream_t *)&server, 64, on_connection)) != 0 ||
      (rc = uv_tcp_getsockname(&server, (struct sockaddr *)&bound, &bound_len)) != 0) {
    fprintf(stderr, "listen on 127.0.0.1:%ld: %s\n", port, uv_strerror(rc));
    exit_code = 1;
    stop();
  } else {
    printf("serving http://127.0.0.1:%d/metrics\n",
           ntohs(((struct sockaddr_in *)&bound)->sin_port));
    fflush(stdout);
    uv_timer_start(&tick, on_tick, 0, 1000);
    uv_signal_start(&sig_int, on_signal, SIGINT);
    uv_signal_start(&sig_term, on_signal, SIGTERM);
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here until stop() */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: every handle was closed */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
