/* lock_basic: take a latchkey lock, do the work, give it back.
 *   lock_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
 *              unix://) or host:port; else $LATCHKEY_REDIS, else
 *              redis://127.0.0.1:6379
 * One libuv loop runs everything: each step starts the next from its
 * callback, and the program ends when the loop has nothing left to do. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

static lk_client_t *client;
static int exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last step: the lock object is gone, so the client can close. */
static void on_lock_closed(lk_lock_t *lock) {
  (void)lock;
  int rc = lk_client_close(client, NULL);
  if (rc < 0) report("lk_client_close", rc);
}

static void close_lock(lk_lock_t *lock) {
  int rc = lk_lock_close(lock, on_lock_closed);
  if (rc < 0) report("lk_lock_close", rc);
}

static void on_released(lk_lock_t *lock, int status, void *arg) {
  (void)arg;
  if (status < 0) report("release", status);
  else { printf("released %s\n", lk_lock_name(lock)); exit_code = 0; }
  close_lock(lock);
}

static void on_acquired(lk_lock_t *lock, int status, void *arg) {
  (void)arg;
  /* e.g. LK_ETIMEDOUT: someone else held it for all of the 5 s */
  if (status < 0) { report("acquire", status); close_lock(lock); return; }
  /* The critical section: keep it shorter than the lease (30 s by default). */
  printf("acquired %s, doing the work\n", lk_lock_name(lock));
  int rc = lk_lock_release(lock, on_released, NULL);
  if (rc < 0) { report("lk_lock_release", rc); close_lock(lock); }
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

  lk_lock_t *lock; /* lk_client_new connects in the background, on the loop */
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
  } else if ((rc = lk_lock_new(client, "orders:42", &lock)) < 0) {
    report("lk_lock_new", rc);
    if ((rc = lk_client_close(client, NULL)) < 0) report("lk_client_close", rc);
  } else {
    lk_lock_opts_t opts;
    lk_lock_opts_init(&opts);
    opts.wait_ms = 5000; /* lease_ms stays LK_LEASE_DEFAULT: the client default */
    rc = lk_lock_acquire(lock, &opts, on_acquired, NULL);
    if (rc < 0) { report("lk_lock_acquire", rc); close_lock(lock); }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
