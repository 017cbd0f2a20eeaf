/* semaphore_basic: limit concurrent work with latchkey's semaphores.
 *   semaphore_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
 *              unix://) or host:port; else $LATCHKEY_REDIS, else
 *              redis://127.0.0.1:6379
 * First a counting semaphore (Redisson RSemaphore): set up 3 permits if
 * nobody has, take one, give it back. Then the permit-expirable one
 * (RPermitExpirableSemaphore): take a permit with an id, kept alive by the
 * watchdog while this process lives, and give it back by id. One libuv
 * loop runs everything: each step starts the next from its callback. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

static lk_client_t *client;
static lk_semaphore_t *sem;
static lk_psem_t *psem;
static int open_objects, exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last steps: both objects gone, then the client. */
static void object_closed(void) {
  if (--open_objects == 0) {
    int rc = lk_client_close(client, NULL);
    if (rc < 0) report("lk_client_close", rc);
  }
}
static void on_sem_closed(lk_semaphore_t *s) { (void)s; object_closed(); }
static void on_psem_closed(lk_psem_t *p) { (void)p; object_closed(); }

static void close_all(void) {
  /* Closing also gives back whatever an object still holds. */
  int rc = lk_semaphore_close(sem, on_sem_closed);
  if (rc < 0) report("lk_semaphore_close", rc);
  rc = lk_psem_close(psem, on_psem_closed);
  if (rc < 0) report("lk_psem_close", rc);
}

/* --- the permit-expirable semaphore --- */

static void on_permit_released(lk_psem_t *p, int status, void *arg) {
  (void)p, (void)arg;
  if (status < 0) report("permit release", status);
  else { printf("permit given back\n"); exit_code = 0; }
  close_all();
}

static void on_permit_acquired(lk_psem_t *p, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("permit acquire", status); close_all(); return; }
  /* The id is borrowed: copy it to hand it to another process. */
  char id[LK_PSEM_ID_LEN + 1];
  snprintf(id, sizeof id, "%s", lk_psem_permit_id(p, 0));
  printf("got permit %s; working\n", id);
  int rc = lk_psem_release(p, id, on_permit_released, NULL);
  if (rc < 0) { report("lk_psem_release", rc); close_all(); }
}

static void on_pool_ready(lk_psem_t *p, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("permit set-up", status); close_all(); return; }
  lk_psem_opts_t opts;
  lk_psem_opts_init(&opts); /* 1 permit, lease renewed by the watchdog */
  opts.wait_ms = 5000;
  int rc = lk_psem_acquire(p, &opts, on_permit_acquired, NULL);
  if (rc < 0) { report("lk_psem_acquire", rc); close_all(); }
}

/* --- the counting semaphore --- */

static void on_released(lk_semaphore_t *s, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("release", status); close_all(); return; }
  printf("released; %lld permits available\n", (long long)lk_semaphore_result(s));
  /* On to the permit-expirable semaphore: 2 permits if nobody set it up. */
  int rc = lk_psem_try_set_permits(psem, 2, on_pool_ready, NULL);
  if (rc < 0) { report("lk_psem_try_set_permits", rc); close_all(); }
}

static void on_acquired(lk_semaphore_t *s, int status, void *arg) {
  (void)arg;
  /* e.g. LK_ETIMEDOUT: all permits stayed taken for the 5 s */
  if (status < 0) { report("acquire", status); close_all(); return; }
  printf("acquired a permit (%lld left); working\n", (long long)lk_semaphore_result(s));
  int rc = lk_semaphore_release(s, 1, on_released, NULL);
  if (rc < 0) { report("lk_semaphore_release", rc); close_all(); }
}

static void on_set_up(lk_semaphore_t *s, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("set-up", status); close_all(); return; }
  printf("%s\n", lk_semaphore_result(s) ? "set up 3 permits" : "permits were set up already");
  lk_semaphore_opts_t opts;
  lk_semaphore_opts_init(&opts); /* 1 permit, try once */
  opts.wait_ms = 5000;           /* wait up to 5 s */
  int rc = lk_semaphore_acquire(s, &opts, on_acquired, NULL);
  if (rc < 0) { report("lk_semaphore_acquire", rc); close_all(); }
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
  } else if ((rc = lk_semaphore_new(client, "workers", &sem)) < 0) {
    report("lk_semaphore_new", rc);
    lk_client_close(client, NULL);
  } else if ((open_objects = 1, rc = lk_psem_new(client, "workers:leased", &psem)) < 0) {
    report("lk_psem_new", rc);
    lk_semaphore_close(sem, on_sem_closed); /* then the client closes */
  } else {
    open_objects = 2;
    rc = lk_semaphore_try_set_permits(sem, 3, on_set_up, NULL);
    if (rc < 0) { report("lk_semaphore_try_set_permits", rc); close_all(); }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
