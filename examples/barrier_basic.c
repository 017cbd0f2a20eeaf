/* barrier_basic: three workers start together and finish together, with a
 * double barrier.
 *   barrier_basic [URL]   a connection URL (redis://, rediss://,
 *              redis+sentinel://, unix://) or host:port; else
 *              $LATCHKEY_REDIS, else redis://127.0.0.1:6379
 * Each worker (a timer here; a process in real life) enters the barrier
 * "batch:nightly" for 3 members at its own time; all three are released
 * together once the last has entered. Each works for a while, leaves, and
 * its leave completes once all three have left. A worker that crashed
 * would be dropped after its lease (2 s here) and named in the others'
 * callbacks. One libuv loop runs everything; the program ends when the
 * loop has nothing left to do. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

#define WORKERS 3

static lk_client_t *client;
static lk_barrier_t *workers[WORKERS];
static uv_timer_t timers[WORKERS];
static int open_objects, failed, closing;
static int busy = WORKERS; /* workers that have not finished */

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last step: every barrier object is gone, so the client can close. */
static void on_barrier_closed(lk_barrier_t *barrier) {
  (void)barrier;
  if (--open_objects == 0) {
    int rc = lk_client_close(client, NULL);
    if (rc < 0) report("lk_client_close", rc);
  }
}

/* Closing a member that is still in the barrier takes it out, so the
 * others are not held up. */
static void close_all(void) {
  if (closing++) return;
  for (int i = 0; i < WORKERS; i++) {
    uv_close((uv_handle_t *)&timers[i], NULL);
    if (workers[i] != NULL) lk_barrier_close(workers[i], on_barrier_closed);
  }
}

static void done(int ok) {
  failed |= !ok;
  if (--busy == 0 || !ok) close_all();
}

static void print_dropped(lk_barrier_t *b) {
  /* Members whose lease ran out (crashed): borrowed, read them here. */
  for (size_t i = 0; i < lk_barrier_dropped_count(b); i++)
    printf("  dropped: %s\n", lk_barrier_dropped(b, i));
}

static void on_left(lk_barrier_t *b, int status, void *arg) {
  int w = (int)(intptr_t)arg;
  if (status < 0) { report("leave", status); done(0); return; }
  printf("worker %d: everyone has left\n", w);
  print_dropped(b);
  done(1);
}

static void on_work_done(uv_timer_t *t) {
  int w = (int)(t - timers);
  int rc = lk_barrier_leave(workers[w], NULL, on_left, (void *)(intptr_t)w);
  if (rc < 0) { report("lk_barrier_leave", rc); done(0); }
}

static void on_entered(lk_barrier_t *b, int status, void *arg) {
  int w = (int)(intptr_t)arg;
  /* LK_ETIMEDOUT: fewer than 3 entered within the budget (this member was
   * taken out again). */
  if (status < 0) { report("enter", status); done(0); return; }
  printf("worker %d: released in round %" PRId64 "\n", w, lk_barrier_round(b));
  print_dropped(b);
  uv_timer_start(&timers[w], on_work_done, (uint64_t)(50 * (w + 1)), 0); /* work */
}

static void on_start(uv_timer_t *t) {
  int w = (int)(t - timers);
  lk_barrier_opts_t o;
  lk_barrier_opts_init(&o);
  o.wait_ms = 10000; /* give up after 10 s */
  o.lease_ms = 2000; /* dropped 2 s after a crash */
  int rc = lk_barrier_enter(workers[w], &o, on_entered, (void *)(intptr_t)w);
  if (rc < 0) { report("lk_barrier_enter", rc); done(0); }
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
  for (int i = 0; i < WORKERS; i++) uv_timer_init(&loop, &timers[i]);

  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    failed = 1;
    for (int i = 0; i < WORKERS; i++) uv_close((uv_handle_t *)&timers[i], NULL);
  } else {
    /* One object per member, each with the same name and member count. */
    for (int i = 0; i < WORKERS; i++) {
      rc = lk_barrier_new(client, "batch:nightly", WORKERS, &workers[i]);
      if (rc < 0) { report("lk_barrier_new", rc); failed = 1; break; }
      open_objects++;
      /* The workers arrive at different times: 0, 100 and 200 ms. */
      uv_timer_start(&timers[i], on_start, (uint64_t)(100 * i), 0);
    }
    if (failed) {
      close_all();
      if (open_objects == 0) lk_client_close(client, NULL);
    }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return failed ? 1 : 0;
}
