/* latch_basic: wait until three jobs have finished, with a countdown latch.
 *   latch_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
 *              unix://) or host:port; else $LATCHKEY_REDIS, else
 *              redis://127.0.0.1:6379
 * The latch is armed with 3; an awaiter waits (up to 5 s) while three
 * "jobs" (timers here; other processes in real life) count down. The last
 * count_down opens the latch and wakes the awaiter. One libuv loop runs
 * everything; the program ends when the loop has nothing left to do. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

#define JOBS 3

static lk_client_t *client;
static lk_latch_t *waiter, *jobs[JOBS];
static uv_timer_t job_timers[JOBS];
static int open_objects, exit_code = 1, closing;
static int busy = 1 + JOBS; /* the await and each job's count_down */

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last step: every latch object is gone, so the client can close. */
static void on_latch_closed(lk_latch_t *latch) {
  (void)latch;
  if (--open_objects == 0) {
    int rc = lk_client_close(client, NULL);
    if (rc < 0) report("lk_client_close", rc);
  }
}

static void close_all(void) {
  if (closing++) return;
  for (int i = 0; i < JOBS; i++) {
    uv_close((uv_handle_t *)&job_timers[i], NULL);
    if (jobs[i] != NULL) lk_latch_close(jobs[i], on_latch_closed);
  }
  if (waiter != NULL) lk_latch_close(waiter, on_latch_closed);
}

/* Everyone has finished (the await and every count_down): close. */
static void one_less(void) {
  if (--busy == 0) close_all();
}

static void on_counted(lk_latch_t *latch, int status, void *arg) {
  int job = (int)(intptr_t)arg;
  if (status < 0) report("count_down", status);
  /* lk_latch_result: the count left; 0 = this call opened the latch. */
  else printf("job %d done, %" PRId64 " to go\n", job, lk_latch_result(latch));
  one_less();
}

static void on_job_timer(uv_timer_t *t) {
  int job = (int)(t - job_timers);
  int rc = lk_latch_count_down(jobs[job], on_counted, (void *)(intptr_t)job);
  if (rc < 0) { report("lk_latch_count_down", rc); one_less(); }
}

static void on_opened(lk_latch_t *latch, int status, void *arg) {
  (void)latch;
  (void)arg;
  /* LK_ETIMEDOUT: not every job finished within 5 s; LK_EDELETED: someone
   * deleted the latch; LK_ELATCHLOST (strict mode): its key vanished. */
  if (status < 0) report("await", status);
  else { printf("all %d jobs done\n", JOBS); exit_code = 0; }
  one_less();
}

static void on_armed(lk_latch_t *latch, int status, void *arg) {
  (void)latch;
  (void)arg;
  if (status < 0) { report("try_set_count", status); close_all(); return; }
  /* 1 = armed now, 0 = it was armed already (another run is counting). */
  int rc = lk_latch_await(waiter, 5000, on_opened, NULL);
  if (rc < 0) { report("lk_latch_await", rc); close_all(); return; }
  for (int i = 0; i < JOBS; i++)
    uv_timer_start(&job_timers[i], on_job_timer, (uint64_t)(100 * (i + 1)), 0);
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
  for (int i = 0; i < JOBS; i++) uv_timer_init(&loop, &job_timers[i]);

  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    for (int i = 0; i < JOBS; i++) uv_close((uv_handle_t *)&job_timers[i], NULL);
  } else {
    /* One object per concurrent user: the awaiter and each job. NULL
     * options: interop mode, Redisson's reading (absent key = open). */
    int ok = lk_latch_new(client, "batch:nightly", NULL, &waiter) == 0;
    open_objects += ok;
    for (int i = 0; i < JOBS; i++) {
      int made = lk_latch_new(client, "batch:nightly", NULL, &jobs[i]) == 0;
      open_objects += made;
      ok = ok && made;
    }
    if (!ok) {
      fprintf(stderr, "lk_latch_new failed\n");
      close_all();
      if (open_objects == 0) lk_client_close(client, NULL);
    } else if ((rc = lk_latch_try_set_count(waiter, JOBS, on_armed, NULL)) < 0) {
      report("lk_latch_try_set_count", rc);
      close_all();
    }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
