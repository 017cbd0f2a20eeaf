/* rwlock_basic: a writer updates, then downgrades to a reader without
 * letting another writer in between, reads, and lets go.
 *   rwlock_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
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
static void on_closed(lk_rwlock_t *rw) {
  (void)rw;
  int rc = lk_client_close(client, NULL);
  if (rc < 0) report("lk_client_close", rc);
}

static void close_rwlock(lk_rwlock_t *rw) {
  int rc = lk_rwlock_close(rw, on_closed); /* gives back any hold left */
  if (rc < 0) report("lk_rwlock_close", rc);
}

static void on_read_released(lk_rwlock_t *rw, int status, void *arg) {
  (void)arg;
  if (status < 0) report("read release", status);
  else { printf("done reading %s\n", lk_rwlock_name(rw)); exit_code = 0; }
  close_rwlock(rw);
}

/* The downgrade: the write side goes, the read hold taken under it stays.
 * Other readers may now join; writers wait until the last reader leaves. */
static void on_write_released(lk_rwlock_t *rw, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("write release", status); close_rwlock(rw); return; }
  printf("downgraded: reading what was just written, others may read too\n");
  int rc = lk_rwlock_release(rw, LK_RW_READ, on_read_released, NULL);
  if (rc < 0) { report("lk_rwlock_release", rc); close_rwlock(rw); }
}

static void on_read_acquired(lk_rwlock_t *rw, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("read acquire", status); close_rwlock(rw); return; }
  int rc = lk_rwlock_release(rw, LK_RW_WRITE, on_write_released, NULL);
  if (rc < 0) { report("lk_rwlock_release", rc); close_rwlock(rw); }
}

static void on_write_acquired(lk_rwlock_t *rw, int status, void *arg) {
  (void)arg;
  /* e.g. LK_ETIMEDOUT: readers or a writer held it for all of the 5 s */
  if (status < 0) { report("write acquire", status); close_rwlock(rw); return; }
  printf("writing %s\n", lk_rwlock_name(rw));
  /* A writer may read too (a reader may not start writing: LK_EUPGRADE). */
  int rc = lk_rwlock_acquire(rw, LK_RW_READ, NULL, on_read_acquired, NULL);
  if (rc < 0) { report("lk_rwlock_acquire", rc); close_rwlock(rw); }
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

  lk_rwlock_t *rw;
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
  } else if ((rc = lk_rwlock_new(client, "catalog", &rw)) < 0) {
    report("lk_rwlock_new", rc);
    if ((rc = lk_client_close(client, NULL)) < 0) report("lk_client_close", rc);
  } else {
    lk_rwlock_opts_t opts;
    lk_rwlock_opts_init(&opts);
    opts.wait_ms = 5000; /* lease_ms stays LK_LEASE_DEFAULT: renewed while held */
    rc = lk_rwlock_acquire(rw, LK_RW_WRITE, &opts, on_write_acquired, NULL);
    if (rc < 0) { report("lk_rwlock_acquire", rc); close_rwlock(rw); }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
