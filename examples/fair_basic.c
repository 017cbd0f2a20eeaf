/* fair_basic: three waiters take a latchkey fair lock strictly in the order
 * they queued, then the program exits.
 *   fair_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
 *              unix://) or host:port; else $LATCHKEY_REDIS, else
 *              redis://127.0.0.1:6379
 * One libuv loop runs everything: a holder takes the lock, three waiters
 * queue behind it one after another (each starts when the previous one has
 * its place), the holder releases, and each waiter releases as soon as it
 * has the lock, which hands it to the next in line. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

#define WAITERS 3

static lk_client_t *client;
static lk_fair_t *holder, *waiter[WAITERS];
static int open_objects, served, exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last steps: every object closes; the last one closes the client. */
static void on_closed(lk_fair_t *fair) {
  (void)fair;
  if (--open_objects == 0) {
    int rc = lk_client_close(client, NULL);
    if (rc < 0) report("lk_client_close", rc);
  }
}

static void close_all(void) {
  int rc = lk_fair_close(holder, on_closed);
  if (rc < 0) report("lk_fair_close", rc);
  for (int i = 0; i < WAITERS; i++)
    if ((rc = lk_fair_close(waiter[i], on_closed)) < 0) report("lk_fair_close", rc);
}

static void on_waiter_released(lk_fair_t *fair, int status, void *arg) {
  (void)fair; (void)arg;
  if (status < 0) report("release", status);
  if (++served == WAITERS) { exit_code = 0; close_all(); }
}

static void on_waiter_acquired(lk_fair_t *fair, int status, void *arg) {
  int n = (int)(intptr_t)arg;
  if (status < 0) { report("acquire", status); close_all(); return; }
  printf("waiter %d has the lock\n", n); /* 0, 1, 2: the queue's order */
  int rc = lk_fair_release(fair, on_waiter_released, NULL);
  if (rc < 0) { report("lk_fair_release", rc); close_all(); }
}

static void on_holder_released(lk_fair_t *fair, int status, void *arg) {
  (void)fair; (void)arg;
  if (status < 0) report("holder release", status);
}

static void start_waiter(int n);

/* The server reports a waiter's place in the queue: once waiter n has its
 * place, the next one may queue behind it; after the last, the holder lets
 * go. */
static void on_queued(lk_fair_t *fair, int status, void *arg) {
  int n = (int)(intptr_t)arg;
  (void)status;
  printf("waiter %d queued at position %lld\n", n, (long long)lk_fair_position(fair));
  lk_fair_set_queue_cb(fair, NULL, NULL); /* the first report is enough here */
  if (n + 1 < WAITERS) {
    start_waiter(n + 1);
  } else {
    int rc = lk_fair_release(holder, on_holder_released, NULL);
    if (rc < 0) report("lk_fair_release", rc);
  }
}

static void start_waiter(int n) {
  lk_fair_opts_t opts;
  lk_fair_opts_init(&opts);
  opts.wait_ms = 10000; /* join the queue; give up after 10 s */
  lk_fair_set_queue_cb(waiter[n], on_queued, (void *)(intptr_t)n);
  int rc = lk_fair_acquire(waiter[n], &opts, on_waiter_acquired, (void *)(intptr_t)n);
  if (rc < 0) { report("lk_fair_acquire", rc); close_all(); }
}

static void on_holder_acquired(lk_fair_t *fair, int status, void *arg) {
  (void)fair; (void)arg;
  if (status < 0) { report("holder acquire", status); close_all(); return; }
  start_waiter(0);
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
  if (rc != 0) { fprintf(stderr, "uv_loop_init: %s\n", uv_strerror(rc)); return 1; }

  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    uv_loop_close(&loop);
    return 1;
  }
  /* Each object is one owner: one holder, three waiters, one name. */
  if ((rc = lk_fair_new(client, "payments:batch", &holder)) < 0) report("lk_fair_new", rc);
  else open_objects++;
  for (int i = 0; rc == 0 && i < WAITERS; i++)
    if ((rc = lk_fair_new(client, "payments:batch", &waiter[i])) < 0) report("lk_fair_new", rc);
    else open_objects++;
  if (rc < 0) {
    /* only what was made is closed */
    if (open_objects == 0) lk_client_close(client, NULL);
    else {
      lk_fair_close(holder, on_closed);
      for (int i = 0; i + 1 < open_objects; i++) lk_fair_close(waiter[i], on_closed);
    }
  } else {
    /* The holder takes it at once (try once, the default); the waiters then
     * queue behind it. */
    if ((rc = lk_fair_acquire(holder, NULL, on_holder_acquired, NULL)) < 0) {
      report("lk_fair_acquire", rc);
      close_all();
    }
  }

  uv_run(&loop, UV_RUN_DEFAULT);
  if ((rc = uv_loop_close(&loop)) != 0)
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
