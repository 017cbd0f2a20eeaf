/* multilock_basic: take two locks together (MultiLock), then, given three or
 * more independent Redis masters, one lock held by a majority of them
 * (RedLock).
 *   multilock_basic [URL ...]   (default redis://127.0.0.1:6379)
 * Each URL is a connection URL (redis://, rediss://, redis+sentinel://,
 * unix://) or host:port.
 * With one or two addresses only the MultiLock part runs; its two locks live
 * on the first and the last address. One libuv loop runs everything: each
 * step starts the next from its callback. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

#define MAX_MASTERS 7

static lk_client_t *clients[MAX_MASTERS];
static int n_clients, clients_open, exit_code = 1;
static lk_lock_t *accounts[2];
static lk_multilock_t *transfer;
static lk_redlock_t *report_lock;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

/* --- the end: close objects, then clients --- */

static void close_clients(void) {
  int i;
  for (i = 0; i < n_clients; i++)
    lk_client_close(clients[i], NULL);
}

static void on_lock_closed(lk_lock_t *lock) {
  (void)lock;
  if (--clients_open == 0) /* both account locks are closed */
    close_clients();
}

static void on_multilock_closed(lk_multilock_t *ml) {
  (void)ml;
  /* The MultiLock let go of its members: now they may close. */
  clients_open = 2;
  lk_lock_close(accounts[0], on_lock_closed);
  lk_lock_close(accounts[1], on_lock_closed);
}

static void on_redlock_closed(lk_redlock_t *rl) {
  (void)rl;
  lk_multilock_close(transfer, on_multilock_closed);
}

static void finish(void) {
  if (report_lock != NULL)
    lk_redlock_close(report_lock, on_redlock_closed);
  else
    lk_multilock_close(transfer, on_multilock_closed);
}

/* --- RedLock: a majority of independent masters --- */

static void on_report_released(lk_redlock_t *rl, int status, void *arg) {
  (void)rl, (void)arg;
  if (status < 0) report("redlock release", status);
  else exit_code = 0;
  finish();
}

static void on_report_acquired(lk_redlock_t *rl, int status, void *arg) {
  (void)arg;
  if (status < 0) { /* LK_ETIMEDOUT: held elsewhere; LK_ENOQUORUM: masters down */
    report("redlock acquire", status);
    finish();
    return;
  }
  /* Act only within the validity: it is what the quorum guarantees. */
  printf("report lock held by %zu of %zu masters for %lld ms more\n",
         lk_redlock_votes(rl), lk_redlock_size(rl), (long long)lk_redlock_validity_ms(rl));
  lk_redlock_release(rl, on_report_released, NULL);
}

static void start_redlock(void) {
  lk_redlock_opts_t opts;
  int rc = lk_redlock_new(clients, (size_t)n_clients, "nightly-report", NULL, &report_lock);
  if (rc < 0) { report("lk_redlock_new", rc); report_lock = NULL; finish(); return; }
  lk_redlock_opts_init(&opts);  /* one attempt, default lease renewed */
  opts.wait_ms = 2000;          /* retry for up to 2 s */
  rc = lk_redlock_acquire(report_lock, &opts, on_report_acquired, NULL);
  if (rc < 0) { report("lk_redlock_acquire", rc); finish(); }
}

/* --- MultiLock: both accounts, or neither --- */

static void on_transfer_released(lk_multilock_t *ml, int status, void *arg) {
  (void)ml, (void)arg;
  if (status < 0) report("multilock release", status);
  if (n_clients >= 3) start_redlock();
  else { exit_code = status < 0; finish(); }
}

static void on_transfer_acquired(lk_multilock_t *ml, int status, void *arg) {
  (void)arg;
  if (status < 0) { /* nothing is held whatever went wrong */
    report("multilock acquire", status);
    finish();
    return;
  }
  printf("holding %s and %s: moving the money\n",
         lk_lock_name(lk_multilock_member(ml, 0)), lk_lock_name(lk_multilock_member(ml, 1)));
  lk_multilock_release(ml, on_transfer_released, NULL);
}

static void usage(const char *argv0) {
  fprintf(stderr,
          "usage: %s [URL ...]   (at most %d; default redis://127.0.0.1:6379)\n"
          "  URL: redis://[[user]:password@]host[:port][/db], rediss://... (TLS),\n"
          "       redis+sentinel://host[:port][,host[:port]...]/master[/db],\n"
          "       unix:///path/to/redis.sock, or host[:port]\n",
          argv0, MAX_MASTERS);
}

int main(int argc, char **argv) {
  static lk_client_opts_t copts[MAX_MASTERS];
  uv_loop_t loop;
  lk_multilock_opts_t opts;
  int i, rc, n = argc > 1 ? argc - 1 : 1;
  if (n > MAX_MASTERS) {
    usage(argv[0]);
    return 2;
  }
  /* Every address is a connection URL or host:port (docs/client.md,
   * "Connection URL"), all checked before any client exists. */
  for (i = 0; i < n; i++) {
    const char *url = argc > 1 ? argv[i + 1] : "redis://127.0.0.1:6379";
    lk_client_opts_init(&copts[i]);
    if ((rc = lk_client_opts_set_url(&copts[i], url)) == LK_EINVAL) {
      fprintf(stderr, "%s: bad address '%s'\n", argv[0], url);
      usage(argv[0]);
      return 2;
    }
    if (rc < 0) {
      report("lk_client_opts_set_url", rc);
      return 1;
    }
  }
  if ((rc = uv_loop_init(&loop)) != 0) {
    fprintf(stderr, "uv_loop_init: %s\n", uv_strerror(rc));
    return 1;
  }
  for (i = 0; i < n; i++) {
    if ((rc = lk_client_new(&loop, &copts[i], &clients[i])) < 0) {
      report("lk_client_new", rc);
      return 1;
    }
    n_clients++;
  }
  /* Two accounts, possibly on two servers: a transfer needs both. */
  if ((rc = lk_lock_new(clients[0], "account:alice", &accounts[0])) < 0 ||
      (rc = lk_lock_new(clients[n - 1], "account:bob", &accounts[1])) < 0 ||
      (rc = lk_multilock_new(accounts, 2, &transfer)) < 0) {
    report("setup", rc);
    return 1;
  }
  lk_multilock_opts_init(&opts);
  opts.wait_ms = 5000; /* the whole group's budget */
  rc = lk_multilock_acquire(transfer, &opts, on_transfer_acquired, NULL);
  if (rc < 0) { report("lk_multilock_acquire", rc); finish(); }
  uv_run(&loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&loop);
  return rc == 0 ? exit_code : 1;
}
