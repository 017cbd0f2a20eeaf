/* ratelimiter_basic: at most 5 requests per second across every process,
 * shared with Redisson's RRateLimiter by name.
 *   ratelimiter_basic [URL]   a connection URL (redis://, rediss://,
 *              redis+sentinel://, unix://) or host:port; else
 *              $LATCHKEY_REDIS, else redis://127.0.0.1:6379
 * Sets the rate if nobody has (5 per 1000 ms, over all clients), then sends
 * 8 "requests", each after taking one permit with a 3 s budget: the first
 * 5 go at once (when the window is fresh), the rest wait for the window to
 * slide. One libuv loop runs everything: each step starts the next from
 * its callback. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

#define REQUESTS 8

static lk_client_t *client;
static lk_ratelimiter_t *limiter;
static int sent, exit_code = 1;
static uint64_t t0;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

static void on_closed(lk_ratelimiter_t *rl) {
  (void)rl;
  int rc = lk_client_close(client, NULL);
  if (rc < 0) report("lk_client_close", rc);
}

static void close_all(void) {
  /* Nothing is given back on close: granted permits are spent. */
  int rc = lk_ratelimiter_close(limiter, on_closed);
  if (rc < 0) report("lk_ratelimiter_close", rc);
}

static void next_request(void);

static void on_permit(lk_ratelimiter_t *rl, int status, void *arg) {
  (void)arg;
  if (status == LK_EINVAL) { /* more permits than the rate, or no rate set */
    fprintf(stderr, "refused: %s\n", lk_ratelimiter_error_text(rl));
    close_all();
    return;
  }
  if (status < 0) { report("acquire", status); close_all(); return; } /* e.g. LK_ETIMEDOUT */
  printf("request %d sent at +%llu ms (%lld permits left in the window)\n", ++sent,
         (unsigned long long)((uv_hrtime() - t0) / 1000000u), (long long)lk_ratelimiter_result(rl));
  next_request();
}

static void next_request(void) {
  if (sent == REQUESTS) {
    exit_code = 0;
    close_all();
    return;
  }
  lk_ratelimiter_opts_t opts;
  lk_ratelimiter_opts_init(&opts); /* 1 permit, try once */
  opts.wait_ms = 3000;             /* wait up to 3 s for the window to slide */
  int rc = lk_ratelimiter_acquire(limiter, &opts, on_permit, NULL);
  if (rc < 0) { report("lk_ratelimiter_acquire", rc); close_all(); }
}

static void on_rate_set(lk_ratelimiter_t *rl, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("set-up", status); close_all(); return; }
  printf("%s\n", lk_ratelimiter_result(rl) ? "rate set: 5 per second"
                                            : "the rate was set already");
  t0 = uv_hrtime();
  next_request();
}

int main(int argc, char **argv) {
  /* The server: a connection URL or host:port (docs/client.md, "Connection
   * URL") from argv, else $LATCHKEY_REDIS, else the default. */
  const char *url = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  if (argc == 1 && (url == NULL || *url == '\0')) url = "redis://127.0.0.1:6379";
  lk_client_opts_t copts;
  lk_client_opts_init(&copts);
  int rc = argc > 2 ? LK_EINVAL : lk_client_opts_set_url(&copts, url);
  if (rc == LK_EINVAL) { /* a malformed URL, or more than one argument */
    fprintf(stderr,
            "usage: %s [URL]\n"
            "  URL: redis://[[user]:password@]host[:port][/db], rediss://... (TLS),\n"
            "       redis+sentinel://host[:port][,host[:port]...]/master[/db],\n"
            "       unix:///path/to/redis.sock, or host[:port]\n"
            "  default: $LATCHKEY_REDIS, else redis://127.0.0.1:6379\n",
            argv[0]);
    return 2;
  }
  if (rc < 0) {
    report("lk_client_opts_set_url", rc);
    return 1;
  }

  uv_loop_t loop;
  rc = uv_loop_init(&loop);
  if (rc != 0) {
    fprintf(stderr, "uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
  } else if ((rc = lk_ratelimiter_new(client, "api:requests", &limiter)) < 0) {
    report("lk_ratelimiter_new", rc);
    lk_client_close(client, NULL);
  } else {
    lk_ratelimiter_config_t cfg;
    lk_ratelimiter_config_init(&cfg);
    cfg.type = LK_RATE_OVERALL; /* one budget for every client */
    cfg.rate = 5;
    cfg.interval_ms = 1000;
    rc = lk_ratelimiter_try_set_rate(limiter, &cfg, on_rate_set, NULL);
    if (rc < 0) { report("lk_ratelimiter_try_set_rate", rc); close_all(); }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
