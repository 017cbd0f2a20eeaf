/* examples/metrics_http against a harness server: it serves GET /metrics
 * (a valid exposition whose counters move), answers 404 and 405 otherwise,
 * keeps its owner description, ends cleanly on SIGTERM (description
 * deleted, demo lock given back), and refuses bad arguments with its usage
 * line and status 2. The built example's path comes from CMake
 * (LK_METRICS_HTTP). Fetched with a raw socket, as a scraper would. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lk_fixture.h"
#include "metrics_check.h"

typedef struct {
  pid_t pid;
  int out_fd, err_fd;
} prog_t;

static void spawn(prog_t *p, const char *const *args) {
  int out[2], err[2];
  ASSERT_OK(pipe(out));
  ASSERT_OK(pipe(err));
  p->pid = fork();
  ASSERT(p->pid >= 0);
  if (p->pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]), close(out[1]), close(err[0]), close(err[1]);
    execv(LK_METRICS_HTTP, (char *const *)args);
    _exit(127);
  }
  rt_child_track(p->pid);
  close(out[1]);
  close(err[1]);
  p->out_fd = out[0];
  p->err_fd = err[0];
}

/* Reads fd until EOF or a newline is seen, within ms (scaled). */
static size_t read_some(int fd, char *buf, size_t cap, int64_t ms, int until_eof) {
  size_t n = 0;
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  while (n + 1 < cap) {
    struct pollfd pf = {fd, POLLIN, 0};
    int64_t left = end - rt_now_ms();
    ssize_t k;
    if (left <= 0)
      FAIL("no %s within %lld ms; got: %.*s", until_eof ? "EOF" : "line",
           (long long)rt_scaled_ms(ms), (int)n, buf);
    if (poll(&pf, 1, (int)left) <= 0)
      continue;
    k = read(fd, buf + n, cap - 1 - n);
    if (k < 0 && errno == EINTR)
      continue;
    ASSERT(k >= 0);
    if (k == 0)
      break;
    n += (size_t)k;
    buf[n] = '\0';
    if (!until_eof && memchr(buf, '\n', n) != NULL)
      break;
  }
  buf[n] = '\0';
  return n;
}

static int wait_exit(prog_t *p, int64_t ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(ms);
  int st;
  for (;;) {
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid)
      break;
    if (rt_now_ms() > end)
      FAIL("the example did not exit within %lld ms", (long long)rt_scaled_ms(ms));
    rt_sleep_ms(5);
  }
  rt_child_untrack(p->pid);
  close(p->out_fd);
  close(p->err_fd);
  ASSERT(WIFEXITED(st));
  return WEXITSTATUS(st);
}

/* One HTTP/1.0 exchange on 127.0.0.1:port; the whole answer, malloc'd. */
static char *http(int port, const char *request) {
  struct sockaddr_in a;
  size_t cap = 1 << 20;
  char *buf = malloc(cap);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_NOT_NULL(buf);
  ASSERT(fd >= 0);
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_OK(connect(fd, (struct sockaddr *)&a, sizeof(a)));
  ASSERT_EQ(write(fd, request, strlen(request)), (ssize_t)strlen(request));
  read_some(fd, buf, cap, 10000, 1);
  close(fd);
  return buf;
}

/* The body of a 200 answer, checked against its head. */
static const char *body_of(const char *resp) {
  const char *body = strstr(resp, "\r\n\r\n"), *cl;
  ASSERT_NOT_NULL(body);
  body += 4;
  ASSERT(strncmp(resp, "HTTP/1.0 200 OK\r\n", 17) == 0);
  ASSERT_NOT_NULL(strstr(resp, "\r\nContent-Type: text/plain; version=0.0.4"));
  cl = strstr(resp, "\r\nContent-Length: ");
  ASSERT_NOT_NULL(cl);
  ASSERT_EQ(atol(cl + 18), (long)strlen(body));
  return body;
}

static long long demo_acquires(int port) {
  char *resp = http(port, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
  long long v;
  mc_check(body_of(resp));
  v = (long long)mc_value(body_of(resp), "latchkey_acquires_total{client=\"metrics_http\"}");
  free(resp);
  return v;
}

static long long description_keys(rt_server_t *srv) {
  redisReply *r = rt_cmd(srv, "KEYS latchkey_client:*");
  long long n;
  ASSERT_NOT_NULL(r);
  n = (long long)r->elements;
  freeReplyObject(r);
  return n;
}

TEST(example_serves_metrics) {
  rt_server_t *srv = rt_server_start(NULL);
  char url[64], line[256], *resp;
  const char *args[] = {"metrics_http", url, "0", NULL};
  prog_t p;
  int port = 0;
  int64_t end;
  ASSERT_NOT_NULL(srv);
  snprintf(url, sizeof(url), "127.0.0.1:%d", rt_server_port(srv));
  spawn(&p, args);
  read_some(p.out_fd, line, sizeof(line), 10000, 0);
  ASSERT_EQ(sscanf(line, "serving http://127.0.0.1:%d/metrics", &port), 1);
  ASSERT_GT(port, 0);

  /* The demo takes its lock once a second: the counter moves. */
  end = rt_now_ms() + rt_scaled_ms(10000);
  while (demo_acquires(port) < 2) {
    if (rt_now_ms() > end)
      FAIL("the example's acquires did not reach 2");
    rt_sleep_ms(100);
  }
  ASSERT_EQ(description_keys(srv), 1);

  resp = http(port, "GET /metrics?x=1 HTTP/1.0\r\n\r\n");
  ASSERT_GT(mc_check(body_of(resp)), 40);
  free(resp);
  resp = http(port, "GET /other HTTP/1.0\r\n\r\n");
  ASSERT(strncmp(resp, "HTTP/1.0 404 ", 13) == 0);
  free(resp);
  resp = http(port, "POST /metrics HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
  ASSERT(strncmp(resp, "HTTP/1.0 405 ", 13) == 0);
  free(resp);

  /* SIGTERM: a clean end, nothing left on the server. */
  ASSERT_OK(kill(p.pid, SIGTERM));
  ASSERT_EQ(wait_exit(&p, 10000), 0);
  ASSERT_EQ(description_keys(srv), 0);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS metrics_http:demo"), 0);
  rt_server_stop(srv);
}

TEST(example_bad_arguments_give_usage) {
  static const char *const bad[][5] = {
      {"metrics_http", "127.0.0.1:1", "x", NULL},
      {"metrics_http", "127.0.0.1:1", "70000", NULL},
      {"metrics_http", "127.0.0.1:1", "-1", NULL},
      {"metrics_http", "127.0.0.1:1", "0", "extra", NULL},
      {"metrics_http", "redis://[bad", NULL},
  };
  char err[4096];
  size_t i;
  prog_t p;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    spawn(&p, bad[i]);
    read_some(p.err_fd, err, sizeof(err), 10000, 1);
    if (wait_exit(&p, 10000) != 2 || strstr(err, "usage: ") == NULL)
      FAIL("case %zu: no usage line and status 2 (stderr: %s)", i, err);
  }
}
