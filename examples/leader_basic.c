/* leader_basic: campaign for a role, do the leader's work while elected,
 * resign; then close.
 *   leader_basic [URL]   a connection URL (redis://, rediss://,
 *              redis+sentinel://, unix://) or host:port; else
 *              $LATCHKEY_REDIS, else redis://127.0.0.1:6379
 * Run two at once: the second becomes leader when the first resigns (or
 * within the lease, 3 s here, when the first is killed). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* <uv.h> needs POSIX types under -std=c11 */
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <latchkey.h>

static lk_client_t *client;
static uv_timer_t work;
static int exit_code = 1;

static void report(const char *what, int err) {
  fprintf(stderr, "%s: %s (%s)\n", what, lk_err_name(err), lk_strerror(err));
}

static void on_leader_closed(lk_leader_t *leader) {
  (void)leader;
  uv_close((uv_handle_t *)&work, NULL);
  int rc = lk_client_close(client, NULL);
  if (rc < 0) report("lk_client_close", rc);
}

static void close_leader(lk_leader_t *leader) {
  int rc = lk_leader_close(leader, on_leader_closed);
  if (rc < 0) report("lk_leader_close", rc);
}

static void on_resigned(lk_leader_t *leader, int status, void *arg) {
  (void)arg;
  if (status < 0) report("resign", status);
  else { printf("resigned\n"); exit_code = 0; }
  close_leader(leader);
}

/* The leadership is gone (a pause, a lost connection): stop acting as the
 * leader at once; another candidate may be elected from now on. */
static void on_lost(lk_leader_t *leader, int status, void *arg) {
  (void)arg;
  report("leadership lost", status);
  uv_timer_stop(&work);
  close_leader(leader);
}

/* The leader's work, one step a second, three steps. Each step checks
 * lk_leader_is_leader() and passes the term to whatever it writes to. */
static void on_work(uv_timer_t *t) {
  static int steps;
  lk_leader_t *leader = t->data;
  if (!lk_leader_is_leader(leader)) return; /* on_lost is on its way */
  printf("step %d as leader, term %" PRId64 "\n", ++steps, lk_leader_term(leader));
  if (steps < 3) return;
  uv_timer_stop(t);
  int rc = lk_leader_resign(leader, on_resigned, NULL);
  if (rc < 0) { report("lk_leader_resign", rc); close_leader(leader); }
}

static void on_elected(lk_leader_t *leader, int status, void *arg) {
  (void)arg;
  if (status < 0) { report("campaign", status); close_leader(leader); return; }
  printf("elected for %s, term %" PRId64 "\n", lk_leader_role(leader),
         lk_leader_term(leader));
  uv_timer_start(&work, on_work, 1000, 1000);
}

/* Anyone can follow the leader: here the candidate itself. */
static void on_change(lk_leader_t *leader, int status, void *arg) {
  (void)arg;
  if (status == LK_ECANCELED) return; /* the last call: observing ended */
  const char *value = lk_leader_observed_value(leader);
  if (value != NULL)
    printf("leader: %s (term %" PRId64 ")\n", value, lk_leader_observed_term(leader));
  else
    printf("no leader\n");
}

int main(int argc, char **argv) {
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
  uv_timer_init(&loop, &work);

  lk_leader_t *leader;
  if ((rc = lk_client_new(&loop, &copts, &client)) < 0) {
    report("lk_client_new", rc);
    uv_close((uv_handle_t *)&work, NULL);
  } else if ((rc = lk_leader_new(client, "reports:nightly", &leader)) < 0) {
    report("lk_leader_new", rc);
    uv_close((uv_handle_t *)&work, NULL);
    if ((rc = lk_client_close(client, NULL)) < 0) report("lk_client_close", rc);
  } else {
    char value[64];
    snprintf(value, sizeof(value), "pid %ld", (long)uv_os_getpid());
    work.data = leader;
    lk_leader_set_lost_cb(leader, on_lost, NULL);
    lk_leader_opts_t opts;
    lk_leader_opts_init(&opts);
    opts.lease_ms = 3000; /* a dead leader is replaced within 3 s */
    opts.value = value;   /* what observers see while this one leads */
    if ((rc = lk_leader_observe(leader, on_change, NULL)) < 0) report("lk_leader_observe", rc);
    rc = lk_leader_campaign(leader, &opts, on_elected, NULL);
    if (rc < 0) { report("lk_leader_campaign", rc); close_leader(leader); }
  }

  uv_run(&loop, UV_RUN_DEFAULT); /* callbacks run from here */
  if ((rc = uv_loop_close(&loop)) != 0)
    fprintf(stderr, "uv_loop_close: %s\n", uv_strerror(rc));
  return exit_code;
}
