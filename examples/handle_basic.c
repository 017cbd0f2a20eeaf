/* handle_basic: objects of three kinds kept and closed alike, as handles.
 *   handle_basic [URL]   a connection URL or host:port; else $LATCHKEY_REDIS,
 *                else redis://127.0.0.1:6379
 * A lock, a latch and a leader go into one array of lk_handle_t; once the
 * lock is taken, one loop prints what every object is and closes it, with
 * one close callback for all (docs/objects.md, "Handles"). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>

#include <latchkey.h>

#define N_OBJECTS 3

static lk_client_t *client;
static lk_handle_t *objects[N_OBJECTS];
static int n_objects, exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* One close callback for every kind: the handle it closed comes back. */
static void on_closed(lk_handle_t *h) {
  printf("closed the %s\n", lk_handle_kind_name(h));
  if (--n_objects == 0 && lk_client_close(client, NULL) < 0)
    fprintf(stderr, "the client did not close\n");
}

/* No switch on the kind: the generic verbs answer for each, and a verb a
 * kind lacks says so (LK_EINVAL) instead of failing. */
static void show_and_close_all(void) {
  int total = n_objects;
  for (int i = 0; i < total; i++) {
    lk_handle_t *h = objects[i];
    int held = lk_handle_is_held(h);
    printf("%s %s: %s, %s\n", lk_handle_kind_name(h), lk_handle_name(h),
           held == 1 ? "held" : held == 0 ? "not held" : "holds nothing",
           lk_handle_token(h) > 0 ? "fencing token taken" : "no token");
    int rc = lk_handle_close(h, on_closed);
    if (rc < 0) report("lk_handle_close", rc);
  }
}

static void on_acquired(lk_lock_t *lock, int status, void *arg) {
  (void)lock, (void)arg;
  if (status < 0) report("acquire", status);
  else exit_code = 0;
  show_and_close_all();
}

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : getenv("LATCHKEY_REDIS");
  if (url == NULL || *url == '\0') url = "redis://127.0.0.1:6379";
  lk_client_opts_t copts;
  lk_client_opts_init(&copts);
  int rc = lk_client_opts_set_url(&copts, url);
  if (rc < 0) { report("lk_client_opts_set_url", rc); return 2; }

  uv_loop_t loop;
  if ((rc = uv_loop_init(&loop)) != 0) { fprintf(stderr, "uv_loop_init failed\n"); return 1; }
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) { report("lk_client_new", rc); return 1; }

  lk_lock_t *lock = NULL;
  lk_latch_t *latch = NULL;
  lk_leader_t *leader = NULL;
  if ((rc = lk_lock_new(client, "orders:42", &lock)) == 0)
    objects[n_objects++] = LK_HANDLE(lock); /* C11; or lk_lock_handle(lock) */
  if (rc == 0 && (rc = lk_latch_new(client, "batch:7", NULL, &latch)) == 0)
    objects[n_objects++] = LK_HANDLE(latch);
  if (rc == 0 && (rc = lk_leader_new(client, "scheduler", &leader)) == 0)
    objects[n_objects++] = LK_HANDLE(leader);

  lk_lock_opts_t opts;
  lk_lock_opts_init(&opts);
  opts.wait_ms = 5000;
  opts.fenced = 1;
  if (rc == 0 && (rc = lk_lock_acquire(lock, &opts, on_acquired, NULL)) < 0)
    report("lk_lock_acquire", rc);
  if (rc < 0) {
    report("setting up", rc);
    if (n_objects > 0) show_and_close_all();
    else lk_client_close(client, NULL);
  }

  uv_run(&loop, UV_RUN_DEFAULT);
  if (uv_loop_close(&loop) != 0) fprintf(stderr, "uv_loop_close failed\n");
  return exit_code;
}
