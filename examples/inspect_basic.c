/* inspect_basic: who holds a lock, read by name without an object
 * (docs/inspect.md). Takes orders:42 with a lock, inspects it, lists the
 * orders:* names, then watches the name: the lock's release is announced,
 * and the name is read again.
 *   inspect_basic [URL]   a connection URL (redis://, rediss://, redis+sentinel://,
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
static lk_lock_t *lock;
static lk_inspect_watch_t *watch;
static uv_timer_t fallback; /* notifications are best effort: a timer too */
static int released, finished, exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* Last steps: the watch, the timer and the lock go, then the client. */
static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  int rc = lk_client_close(client, NULL);
  if (rc < 0) report("lk_client_close", rc);
}

static void finish(void) {
  if (finished++) return;
  lk_inspect_watch_stop(watch); /* no callback after it */
  watch = NULL;
  uv_close((uv_handle_t *)&fallback, NULL);
  int rc = lk_lock_close(lock, on_lock_closed); /* gives back a hold it has */
  if (rc < 0) report("lk_lock_close", rc);
}

/* The name read again after the release: nothing holds it now. */
static void on_info_after(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  (void)c, (void)arg;
  if (status < 0) { report("inspect", status); finish(); return; }
  printf("after the release: %s is %s\n", in->name, lk_inspect_kind_name(in->kind));
  if (in->kind == LK_INSPECT_NONE) exit_code = 0;
  finish();
}

static void read_again(void) {
  int rc = lk_inspect(client, "orders:42", on_info_after, NULL);
  if (rc < 0) { report("lk_inspect", rc); finish(); }
}

static void on_lock_released(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)arg;
  if (status < 0) { report("release", status); finish(); }
}

/* A message on one of the name's channels means "it changed: read again";
 * channel NULL means a subscription is in place. */
static void on_change(lk_inspect_watch_t *w, int status, const char *channel, void *arg) {
  (void)w, (void)arg;
  if (finished) return;
  if (status < 0) { report("watch", status); return; } /* the timer still reads */
  if (channel != NULL) {
    printf("%s announced a change\n", channel);
    read_again();
  } else if (!released++) {
    int rc = lk_lock_release(lock, on_lock_released, NULL); /* now it is watched */
    if (rc < 0) { report("lk_lock_release", rc); finish(); }
  }
}

static void on_fallback(uv_timer_t *t) {
  (void)t;
  if (!finished) read_again();
}

static void on_page(lk_client_t *c, int status, const lk_list_entry_t *e, size_t n,
                    const char *next_cursor, void *arg) {
  (void)c, (void)arg;
  if (status < 0) { report("list", status); finish(); return; }
  for (size_t i = 0; i < n; i++)
    printf("listed %s (%s)\n", e[i].name, lk_inspect_kind_name(e[i].kind));
  if (strcmp(next_cursor, "0") != 0) { /* not done: the next page */
    int rc = lk_list(client, "orders:*", next_cursor, 100, on_page, NULL);
    if (rc < 0) { report("lk_list", rc); finish(); }
    return;
  }
  int rc = lk_inspect_watch(client, "orders:42", on_change, NULL, &watch);
  if (rc < 0) { report("lk_inspect_watch", rc); finish(); return; }
  uv_timer_start(&fallback, on_fallback, 5000, 5000);
}

static void on_info(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  (void)c, (void)arg;
  if (status < 0) { report("inspect", status); finish(); return; }
  printf("%s is a %s, ttl %lld ms\n", in->name, lk_inspect_kind_name(in->kind),
         (long long)in->ttl_ms);
  for (size_t i = 0; i < in->n_holders; i++)
    printf("  held by %s x%lld\n", in->holders[i].owner, (long long)in->holders[i].count);
  int rc = lk_list(client, "orders:*", "0", 100, on_page, NULL); /* "0": the first page */
  if (rc < 0) { report("lk_list", rc); finish(); }
}

static void on_acquired(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)arg;
  if (status < 0) { report("acquire", status); finish(); return; }
  int rc = lk_inspect(client, "orders:42", on_info, NULL);
  if (rc < 0) { report("lk_inspect", rc); finish(); }
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
  uv_timer_init(&loop, &fallback);

  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    uv_close((uv_handle_t *)&fallback, NULL);
  } else if ((rc = lk_lock_new(client, "orders:42", &lock)) < 0) {
    report("lk_lock_new", rc);
    uv_close((uv_handle_t *)&fallback, NULL);
    if ((rc = lk_client_close(client, NULL)) < 0) report("lk_client_close", rc);
  } else if ((rc = lk_lock_acquire(lock, NULL, on_acquired, NULL)) < 0) { /* try once */
    report("lk_lock_acquire", rc);
    finish();
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0) /* 0: latchkey closed every handle */
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
