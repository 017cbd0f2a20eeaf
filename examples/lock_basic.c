/* lock_basic: take a latchkey lock, do the work, give it back.
 *   lock_basic [host:port]   (else $LATCHKEY_REDIS, else 127.0.0.1:6379)
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
  /* "host:port" from argv, the environment or the default. */
  const char *spec = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  char host[256] = "127.0.0.1";
  int port = 6379;
  if (spec && *spec) {
    const char *colon = strrchr(spec, ':');
    size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
    if (colon) port = atoi(colon + 1);
    if (len == 0 || len >= sizeof host || port <= 0 || port > 65535) {
      fprintf(stderr, "usage: %s [host:port]\n", argv[0]);
      return 2;
    }
    snprintf(host, sizeof host, "%.*s", (int)len, spec);
  }

  uv_loop_t loop;
  int rc = uv_loop_init(&loop);
  if (rc != 0) {
    fprintf(stderr, "uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }

  lk_client_opts_t copts;
  lk_client_opts_init(&copts);
  copts.host = host; /* copied by lk_client_new */
  copts.port = port;
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
