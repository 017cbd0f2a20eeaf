/* latchkey watch: a live view of NAME (docs/cli.md, "watch"). The view is
 * read again when NAME's own pub/sub channels say something changed
 * (lk_inspect_watch: a release, a fair lock's next waiter woken, permits
 * given back, a latch opened) and at least every --interval (acquires and
 * expiries publish nothing). One read is in flight at a time; a change
 * announced during a read asks for one more read after it. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct watch_s {
  uv_loop_t loop;
  lk_client_t *c;
  lk_inspect_watch_t *w;
  const char *name;
  int64_t interval_ms;
  uv_timer_t timer;
  uv_signal_t sigs[2];
  int inflight, again, stopping, tty;
  int ps_status;      /* last pub/sub news: 1 none yet, 0 subscribed, <0 the error */
  const char *reason; /* what asked for the read in flight */
  const char *next_reason;
  uint64_t frames;
  int exit_code;
} watch_t;

static void on_client_closed(lk_client_t *c) { (void)c; }
static void on_handle_closed(uv_handle_t *h) { (void)h; }

static void close_client(watch_t *s) {
  if (s->c != NULL) {
    lk_client_close(s->c, on_client_closed);
    s->c = NULL;
  }
}

static void watch_stop(watch_t *s) {
  int i;
  if (s->stopping)
    return;
  s->stopping = 1;
  lk_inspect_watch_stop(s->w);
  s->w = NULL;
  uv_close((uv_handle_t *)&s->timer, on_handle_closed);
  for (i = 0; i < 2; i++)
    uv_close((uv_handle_t *)&s->sigs[i], on_handle_closed);
  if (!s->inflight)
    close_client(s);
}

static void footer(watch_t *s) {
  char ps[128];
  if (s->ps_status == 0)
    snprintf(ps, sizeof(ps), "and on changes (pub/sub)");
  else if (s->ps_status == 1)
    snprintf(ps, sizeof(ps), "(pub/sub: subscribing)");
  else
    snprintf(ps, sizeof(ps), "only (pub/sub: %s)", lk_err_name(s->ps_status));
  printf("\n(redrawn every %" PRId64 "ms %s; this frame: %s; Ctrl-C to stop)\n",
         s->interval_ms, ps, s->reason);
}

static void read_now(watch_t *s, const char *reason);

static void on_inspected(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  watch_t *s = arg;
  (void)c;
  s->inflight = 0;
  if (s->stopping) {
    close_client(s);
    return;
  }
  /* A terminal gets the frame redrawn in place (cursor home, clear);
   * anything else gets one frame after another. */
  if (s->tty)
    fputs("\033[H\033[2J", stdout);
  else if (s->frames > 0)
    fputs("\n", stdout);
  s->frames++;
  if (status < 0) {
    printf("%s: %s (%s)%s%s\n", cli_safe(s->name), lk_err_name(status), lk_strerror(status),
           *lk_client_error_text(s->c) ? ": " : "", cli_safe(lk_client_error_text(s->c)));
  } else {
    cli_render_table(stdout, in);
    /* A fair lock's release is told only to its next waiter. */
    if (s->w != NULL)
      (void)lk_inspect_watch_follow(s->w, in);
  }
  if (s->tty)
    footer(s);
  fflush(stdout);
  if (s->again) {
    s->again = 0;
    read_now(s, s->next_reason);
  }
}

static void read_now(watch_t *s, const char *reason) {
  int rc;
  if (s->stopping)
    return;
  if (s->inflight) {
    /* The read in flight may have left before the change: one more. */
    if (!s->again || s->next_reason == NULL || strcmp(s->next_reason, "change announced") != 0)
      s->next_reason = reason; /* a change outranks a confirmation */
    s->again = 1;
    return;
  }
  if ((rc = lk_inspect(s->c, s->name, on_inspected, s)) < 0) {
    cli_report("watch", s->name, rc, s->c);
    s->exit_code = rc == LK_EINVAL || rc == LK_ENAMETOOLONG ? CLI_EXIT_USAGE
                                                             : cli_exit_for(rc, s->c);
    watch_stop(s);
    return;
  }
  s->inflight = 1;
  s->reason = reason;
  /* The timer counts from the last read: a quiet name is read every
   * interval, a busy one as its messages come. */
  uv_timer_again(&s->timer);
}

static void on_tick(uv_timer_t *t) { read_now(t->data, "timer"); }

static void on_change(lk_inspect_watch_t *w, int status, const char *channel, void *arg) {
  watch_t *s = arg;
  (void)w;
  s->ps_status = status;
  if (status == 0)
    read_now(s, channel != NULL ? "change announced" : "subscribed");
}

static void on_signal(uv_signal_t *h, int signum) {
  (void)signum;
  watch_stop(h->data);
}

int cli_watch(int argc, char **argv) {
  watch_t s;
  cli_common_t co = {0};
  static const int sigs[2] = {SIGINT, SIGTERM};
  int i, rc;
  memset(&s, 0, sizeof(s));
  s.interval_ms = 500;
  s.ps_status = 1;
  for (i = 0; (rc = cli_next_arg("watch", argc, argv, &i, &co)) > 0;) {
    const char *a = argv[i];
    if (strcmp(a, "--interval") == 0) {
      if (i + 1 >= argc || cli_parse_duration(argv[i + 1], 0, &s.interval_ms) < 0 ||
          s.interval_ms < 50)
        return cli_usage("watch", "--interval needs a duration of at least 50ms");
      i++;
    } else if (a[0] == '-' && a[1] != '\0' && strcmp(a, "--") != 0) {
      return cli_usage("watch", "unknown option: %s", a);
    } else {
      if (strcmp(a, "--") == 0 && ++i >= argc)
        break;
      if (s.name != NULL)
        return cli_usage("watch", "exactly one NAME");
      s.name = argv[i];
    }
  }
  if (rc < 0)
    return CLI_EXIT_USAGE;
  if (s.name == NULL)
    return cli_usage("watch", "exactly one NAME");
  if ((rc = cli_open_client("watch", &co, &s.loop, &s.c)) != 0)
    return rc;
  if ((rc = lk_inspect_watch(s.c, s.name, on_change, &s, &s.w)) < 0) {
    cli_report("watch", s.name, rc, s.c);
    close_client(&s);
    uv_run(&s.loop, UV_RUN_DEFAULT);
    uv_loop_close(&s.loop);
    return rc == LK_EINVAL || rc == LK_ENAMETOOLONG ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
  }
  s.tty = isatty(STDOUT_FILENO);
  uv_timer_init(&s.loop, &s.timer);
  s.timer.data = &s;
  for (i = 0; i < 2; i++) {
    uv_signal_init(&s.loop, &s.sigs[i]);
    s.sigs[i].data = &s;
    uv_signal_start(&s.sigs[i], on_signal, sigs[i]);
  }
  /* The first frame at once, then every interval (uv_timer_again restarts
   * the repeat from each read). */
  uv_timer_start(&s.timer, on_tick, 0, (uint64_t)s.interval_ms);
  uv_run(&s.loop, UV_RUN_DEFAULT);
  uv_loop_close(&s.loop);
  return s.exit_code;
}
