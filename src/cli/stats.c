/* latchkey stats: a short measured run on NAME (docs/cli.md, "stats").
 *
 * Two phases of half the --duration each, on one client:
 *   alone      one worker takes NAME and gives it back, again and again:
 *              the acquire and release round trips as this host sees them
 *              (waits behind NAME's real holders included);
 *   contended  --contenders workers, each its own owner, do the same at
 *              once: holds per second, the acquire time with the waits, and
 *              the hand-off, from a holder's release leaving to the next
 *              worker's grant (the wake-up through pub/sub and the retry).
 * Then the client's counters. Every hold is given back at once and has a
 * fixed 10 s lease, so a killed run frees NAME by itself. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define STATS_LEASE_MS 10000
#define STATS_MAX_CONTENDERS 64
/* Samples kept per series; beyond that they are counted only. */
#define STATS_MAX_SAMPLES 500000

enum { PH_ALONE, PH_CONTENDED, PH_DONE };
enum { S_ACQ, S_REL, S_HANDOFF, S_SERIES };

typedef struct series_s {
  uint32_t *us; /* microseconds */
  size_t n, cap;
  uint64_t max_us;
} series_t;

struct stats_s;

typedef struct worker_s {
  struct stats_s *s;
  union {
    lk_lock_t *lock;
    lk_fair_t *fair;
  } o;
  lk_handle_t *h; /* o as its generic handle: data, close */
  int busy; /* an acquire or release is pending */
  uint64_t t_call;
} worker_t;

typedef struct stats_s {
  uv_loop_t loop;
  lk_client_t *c;
  const char *name;
  int fair, json, contenders;
  int64_t duration_ms;
  worker_t w[STATS_MAX_CONTENDERS];
  int n_workers, open, phase, phase_over, stopping, reported;
  uint64_t phase_t0[2], phase_ns[2];
  uint64_t holds[2], waited, timeouts, errors;
  int last_error;
  uint64_t last_release_ns;
  series_t ser[2][S_SERIES];
  uv_timer_t timer;
  uv_signal_t sigs[2];
  int handles;
  char server[96];
  int exit_code;
} stats_t;

static void worker_cycle(worker_t *w);
static void phase_check(stats_t *s);

static void add(series_t *sr, uint64_t ns) {
  uint64_t us = ns / 1000;
  if (us > sr->max_us)
    sr->max_us = us;
  if (sr->n == sr->cap) {
    size_t cap = sr->cap ? sr->cap * 2 : 1024;
    uint32_t *p;
    if (sr->cap >= STATS_MAX_SAMPLES || (p = realloc(sr->us, cap * sizeof(*p))) == NULL)
      return;
    sr->us = p, sr->cap = cap;
  }
  sr->us[sr->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Nearest rank. */
static uint64_t pct(const series_t *sr, int p) {
  size_t k;
  if (sr->n == 0)
    return 0;
  k = (sr->n * (size_t)p + 99) / 100;
  return sr->us[k > 0 ? k - 1 : 0];
}

/* ---- the two primitives behind one face ---- */

static void on_acquired(worker_t *w, int status);
static void on_released(worker_t *w, int status);
static void lock_acq(lk_lock_t *l, int st, void *a) { (void)l, on_acquired(a, st); }
static void fair_acq(lk_fair_t *f, int st, void *a) { (void)f, on_acquired(a, st); }
static void lock_rel(lk_lock_t *l, int st, void *a) { (void)l, on_released(a, st); }
static void fair_rel(lk_fair_t *f, int st, void *a) { (void)f, on_released(a, st); }

static int obj_acquire(worker_t *w, int64_t wait_ms) {
  if (w->s->fair) {
    lk_fair_opts_t o;
    lk_fair_opts_init(&o);
    o.wait_ms = wait_ms, o.lease_ms = STATS_LEASE_MS;
    return lk_fair_acquire(w->o.fair, &o, fair_acq, w);
  } else {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = wait_ms, o.lease_ms = STATS_LEASE_MS;
    return lk_lock_acquire(w->o.lock, &o, lock_acq, w);
  }
}

static int obj_release(worker_t *w) {
  return w->s->fair ? lk_fair_release(w->o.fair, fair_rel, w)
                    : lk_lock_release(w->o.lock, lock_rel, w);
}

static void client_closed(lk_client_t *c) { (void)c; }
static void handle_closed(uv_handle_t *h) { (void)h; }

static void obj_closed(lk_handle_t *h) {
  stats_t *s = ((worker_t *)lk_handle_get_data(h))->s;
  if (--s->open == 0 && s->c != NULL) {
    lk_client_close(s->c, client_closed);
    s->c = NULL;
  }
}

/* ---- report ---- */

static void text_series(const char *label, const series_t *sr, const char *note) {
  if (sr->n == 0)
    return;
  printf("  %-9s p50 %" PRIu64 ".%03" PRIu64 "ms  p99 %" PRIu64 ".%03" PRIu64
         "ms  max %" PRIu64 ".%03" PRIu64 "ms%s%s\n",
         label, pct(sr, 50) / 1000, pct(sr, 50) % 1000, pct(sr, 99) / 1000, pct(sr, 99) % 1000,
         sr->max_us / 1000, sr->max_us % 1000, *note ? "  " : "", note);
}

static void json_series(cli_json_t *j, const char *key, const series_t *sr) {
  if (sr->n == 0) {
    cli_json_null(j, key);
    return;
  }
  cli_json_obj_begin(j, key);
  cli_json_int(j, "p50", (int64_t)pct(sr, 50));
  cli_json_int(j, "p99", (int64_t)pct(sr, 99));
  cli_json_int(j, "max", (int64_t)sr->max_us);
  cli_json_int(j, "samples", (int64_t)sr->n);
  cli_json_obj_end(j);
}

static double per_s(uint64_t n, uint64_t ns) { return ns ? (double)n * 1e9 / (double)ns : 0.0; }

static void report(stats_t *s) {
  lk_client_stats_t cs;
  int p, k;
  if (s->reported)
    return;
  s->reported = 1;
  for (p = 0; p < 2; p++)
    for (k = 0; k < S_SERIES; k++)
      if (s->ser[p][k].n > 1)
        qsort(s->ser[p][k].us, s->ser[p][k].n, sizeof(uint32_t), cmp_u32);
  lk_client_get_stats(s->c, &cs);
  if (s->json) {
    cli_json_t j;
    cli_json_init(&j, stdout);
    cli_json_obj_begin(&j, NULL);
    cli_json_str(&j, "name", s->name);
    cli_json_str(&j, "kind", s->fair ? "fair" : "lock");
    cli_json_str(&j, "server", s->server);
    cli_json_int(&j, "duration_ms", s->duration_ms);
    for (p = 0; p < 2; p++) {
      cli_json_obj_begin(&j, p == PH_ALONE ? "alone" : "contended");
      cli_json_int(&j, "workers", p == PH_ALONE ? 1 : s->contenders);
      cli_json_int(&j, "ms", (int64_t)(s->phase_ns[p] / 1000000));
      cli_json_int(&j, "holds", (int64_t)s->holds[p]);
      cli_json_int(&j, "holds_per_s", (int64_t)(per_s(s->holds[p], s->phase_ns[p]) + 0.5));
      json_series(&j, "acquire_us", &s->ser[p][S_ACQ]);
      json_series(&j, "release_us", &s->ser[p][S_REL]);
      if (p == PH_CONTENDED) {
        cli_json_int(&j, "waited", (int64_t)s->waited);
        json_series(&j, "handoff_us", &s->ser[p][S_HANDOFF]);
      }
      cli_json_obj_end(&j);
    }
    cli_json_int(&j, "timeouts", (int64_t)s->timeouts);
    cli_json_int(&j, "errors", (int64_t)s->errors);
    cli_json_obj_begin(&j, "client");
    cli_json_int(&j, "commands_sent", (int64_t)cs.commands_sent);
    cli_json_int(&j, "replies", (int64_t)cs.replies);
    cli_json_int(&j, "pubsub_messages", (int64_t)cs.pubsub_messages);
    cli_json_int(&j, "reconnects", (int64_t)cs.reconnects);
    cli_json_int(&j, "reply_timeouts", (int64_t)cs.reply_timeouts);
    cli_json_int(&j, "unknown_outcomes", (int64_t)cs.unknown_outcomes);
    cli_json_int(&j, "acquire_waits", (int64_t)cs.acquire_waits);
    cli_json_obj_end(&j);
    cli_json_obj_end(&j);
    fputc('\n', stdout);
  } else {
    printf("%-10s %s (%s), %s\n", "NAME", cli_safe(s->name), s->fair ? "fair lock" : "lock",
           cli_safe(s->server));
    printf("%-10s %" PRIu64 " holds in %.1fs (%.1f/s), one at a time\n", "ALONE", s->holds[0],
           (double)s->phase_ns[0] / 1e9, per_s(s->holds[0], s->phase_ns[0]));
    text_series("acquire", &s->ser[0][S_ACQ], "round trip (and any wait for NAME's holders)");
    text_series("release", &s->ser[0][S_REL], "round trip");
    printf("%-10s %d contenders: %" PRIu64 " holds in %.1fs (%.1f/s), %" PRIu64 " waited\n",
           "CONTENDED", s->contenders, s->holds[1], (double)s->phase_ns[1] / 1e9,
           per_s(s->holds[1], s->phase_ns[1]), s->waited);
    text_series("acquire", &s->ser[1][S_ACQ], "call to grant, waits included");
    text_series("hand-off", &s->ser[1][S_HANDOFF], "a release sent to the next grant");
    text_series("release", &s->ser[1][S_REL], "");
    printf("%-10s %" PRIu64 " timed out, %" PRIu64 " failed%s%s\n", "PROBLEMS", s->timeouts,
           s->errors, s->errors ? ", last: " : "", s->errors ? lk_err_name(s->last_error) : "");
    printf("%-10s %" PRIu64 " commands, %" PRIu64 " pub/sub messages, %" PRIu64
           " reconnects, %" PRIu64 " reply timeouts, %" PRIu64 " unknown outcomes\n",
           "CLIENT", cs.commands_sent, cs.pubsub_messages, cs.reconnects, cs.reply_timeouts,
           cs.unknown_outcomes);
  }
  fflush(stdout);
  if (s->holds[0] + s->holds[1] == 0 && s->exit_code == 0) {
    s->exit_code = s->timeouts > 0 ? CLI_EXIT_TIMEOUT
                   : s->errors > 0 ? cli_exit_for(s->last_error, s->c)
                                   : CLI_EXIT_FAIL;
    fprintf(stderr, "%s stats: %s was never acquired\n", cli_prog, cli_safe(s->name));
  }
}

/* Reports (once), closes the objects (a pending call ends LK_ECANCELED),
 * the handles, then the client. */
static void finish(stats_t *s) {
  int i;
  if (s->stopping)
    return;
  s->stopping = 1;
  s->phase = PH_DONE;
  if (s->c != NULL && s->exit_code == 0)
    report(s);
  uv_close((uv_handle_t *)&s->timer, handle_closed);
  for (i = 0; i < 2; i++)
    uv_close((uv_handle_t *)&s->sigs[i], handle_closed);
  if (s->open == 0 && s->c != NULL) {
    lk_client_close(s->c, client_closed);
    s->c = NULL;
    return;
  }
  for (i = 0; i < s->n_workers; i++)
    lk_handle_close(s->w[i].h, obj_closed);
}

/* ---- the run ---- */

static void worker_fail(worker_t *w, int status) {
  stats_t *s = w->s;
  if (status == LK_ETIMEDOUT) {
    s->timeouts++;
  } else {
    s->errors++;
    s->last_error = status;
  }
}

static void on_acquired(worker_t *w, int status) {
  stats_t *s = w->s;
  uint64_t now = uv_hrtime();
  int rc;
  w->busy = 0;
  if (s->stopping)
    return;
  if (status != 0) {
    worker_fail(w, status);
    phase_check(s); /* this worker sits the phase out */
    return;
  }
  s->holds[s->phase]++;
  add(&s->ser[s->phase][S_ACQ], now - w->t_call);
  /* Waited behind a release made meanwhile: that release to this grant is
   * the hand-off. */
  if (s->phase == PH_CONTENDED && s->last_release_ns > w->t_call) {
    s->waited++;
    add(&s->ser[s->phase][S_HANDOFF], now - s->last_release_ns);
  }
  w->t_call = now;
  s->last_release_ns = now;
  if ((rc = obj_release(w)) < 0) {
    worker_fail(w, rc);
    phase_check(s);
    return;
  }
  w->busy = 1;
}

static void on_released(worker_t *w, int status) {
  stats_t *s = w->s;
  w->busy = 0;
  if (s->stopping)
    return;
  if (status != 0) {
    worker_fail(w, status);
    phase_check(s);
    return;
  }
  add(&s->ser[s->phase][S_REL], uv_hrtime() - w->t_call);
  worker_cycle(w);
}

static void worker_cycle(worker_t *w) {
  stats_t *s = w->s;
  uint64_t now = uv_hrtime(), end = s->phase_t0[s->phase] + s->phase_ns[s->phase];
  int64_t wait_ms;
  int rc;
  if (s->phase_over) {
    phase_check(s);
    return;
  }
  /* Wait at most to the phase's end, and a second more. */
  wait_ms = (int64_t)((end > now ? end - now : 0) / 1000000) + 1000;
  w->t_call = now;
  if ((rc = obj_acquire(w, wait_ms)) < 0) {
    worker_fail(w, rc);
    phase_check(s);
    return;
  }
  w->busy = 1;
}

static void phase_start(stats_t *s, int phase) {
  int i, n = phase == PH_ALONE ? 1 : s->contenders;
  s->phase = phase;
  s->phase_over = 0;
  s->phase_t0[phase] = uv_hrtime();
  s->phase_ns[phase] = (uint64_t)(s->duration_ms / 2) * 1000000u;
  for (i = 0; i < n; i++)
    worker_cycle(&s->w[i]);
}

static void on_phase_timer(uv_timer_t *t) {
  stats_t *s = t->data;
  s->phase_over = 1;
  phase_check(s);
}

/* When the phase is over and every worker has finished its cycle: the
 * next phase, or the report. */
static void phase_check(stats_t *s) {
  int i;
  if (s->stopping || !s->phase_over)
    return;
  for (i = 0; i < s->n_workers; i++)
    if (s->w[i].busy)
      return;
  /* The phase lasted until its last cycle ended. */
  s->phase_ns[s->phase] = uv_hrtime() - s->phase_t0[s->phase];
  if (s->phase == PH_ALONE) {
    phase_start(s, PH_CONTENDED);
    uv_timer_start(&s->timer, on_phase_timer, (uint64_t)(s->duration_ms / 2), 0);
  } else {
    finish(s);
  }
}

static void on_signal(uv_signal_t *h, int signum) {
  stats_t *s = h->data;
  (void)signum;
  /* Report what was measured, the running phase up to now. */
  if (s->phase != PH_DONE)
    s->phase_ns[s->phase] = uv_hrtime() - s->phase_t0[s->phase];
  if (s->phase == PH_ALONE)
    s->phase_ns[PH_CONTENDED] = 0;
  finish(s);
}

static void on_ping(lk_client_t *c, int status, const lk_ping_t *p, void *arg) {
  stats_t *s = arg;
  (void)c;
  if (status == 0)
    snprintf(s->server, sizeof(s->server), "%s %s %s", p->server, p->version, p->mode);
}

static void on_kind(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  stats_t *s = arg;
  int i, rc = 0;
  if (s->stopping)
    return; /* interrupted before the run began */
  if (status < 0) {
    cli_report("stats", s->name, status, c);
    s->exit_code = cli_exit_for(status, c);
    finish(s);
    return;
  }
  if (in->kind == LK_INSPECT_FAIR) {
    s->fair = 1;
  } else if (in->kind != LK_INSPECT_LOCK && in->kind != LK_INSPECT_NONE &&
             in->kind != LK_INSPECT_TOKEN) {
    fprintf(stderr, "%s stats: %s is a %s: stats measures locks and fair locks\n", cli_prog,
            cli_safe(s->name), lk_inspect_kind_name(in->kind));
    s->exit_code = CLI_EXIT_FAIL;
    finish(s);
    return;
  }
  for (i = 0; i < s->contenders && rc == 0; i++) {
    worker_t *w = &s->w[i];
    w->s = s;
    if (s->fair) {
      rc = lk_fair_new(c, s->name, &w->o.fair);
      w->h = lk_fair_handle(w->o.fair);
    } else {
      rc = lk_lock_new(c, s->name, &w->o.lock);
      w->h = lk_lock_handle(w->o.lock);
    }
    if (rc == 0) {
      lk_handle_set_data(w->h, w);
      s->n_workers++, s->open++;
    }
  }
  if (rc < 0) {
    cli_report("stats", s->name, rc, c);
    s->exit_code = CLI_EXIT_FAIL;
    finish(s);
    return;
  }
  phase_start(s, PH_ALONE);
  uv_timer_start(&s->timer, on_phase_timer, (uint64_t)(s->duration_ms / 2), 0);
}

int cli_stats(int argc, char **argv) {
  stats_t *s;
  cli_common_t co = {0};
  static const int sigs[2] = {SIGINT, SIGTERM};
  int i, rc, p, k, code;
  int64_t n;
  if ((s = calloc(1, sizeof(*s))) == NULL)
    return CLI_EXIT_FAIL;
  s->duration_ms = 5000;
  s->contenders = 4;
  snprintf(s->server, sizeof(s->server), "server not asked");
  for (i = 0; (rc = cli_next_arg("stats", argc, argv, &i, &co)) > 0;) {
    const char *a = argv[i];
    if (strcmp(a, "--duration") == 0) {
      if (i + 1 >= argc || cli_parse_duration(argv[i + 1], 0, &s->duration_ms) < 0 ||
          s->duration_ms < 200 || s->duration_ms > 600000) {
        cli_usage("stats", "--duration needs a duration from 200ms to 10m");
        goto usage;
      }
      i++;
    } else if (strcmp(a, "--contenders") == 0) {
      if (i + 1 >= argc || cli_parse_count(argv[i + 1], STATS_MAX_CONTENDERS, &n) < 0 || n < 2) {
        cli_usage("stats", "--contenders needs a number from 2 to %d", STATS_MAX_CONTENDERS);
        goto usage;
      }
      s->contenders = (int)n;
      i++;
    } else if (strcmp(a, "--fair") == 0) {
      s->fair = 1;
    } else if (strcmp(a, "--json") == 0) {
      s->json = 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      cli_usage("stats", "unknown option: %s", a);
      goto usage;
    } else if (s->name != NULL) {
      cli_usage("stats", "exactly one NAME");
      goto usage;
    } else {
      s->name = a;
    }
  }
  if (rc < 0)
    goto usage;
  if (s->name == NULL) {
    cli_usage("stats", "exactly one NAME");
    goto usage;
  }
  if ((rc = cli_open_client("stats", &co, &s->loop, &s->c)) != 0) {
    free(s);
    return rc;
  }
  uv_timer_init(&s->loop, &s->timer);
  s->timer.data = s;
  for (i = 0; i < 2; i++) {
    uv_signal_init(&s->loop, &s->sigs[i]);
    s->sigs[i].data = s;
    uv_signal_start(&s->sigs[i], on_signal, sigs[i]);
  }
  /* What NAME is (a fair lock is measured as one), and the server. */
  if ((rc = lk_ping(s->c, on_ping, s)) < 0 || (rc = lk_inspect(s->c, s->name, on_kind, s)) < 0) {
    cli_report("stats", s->name, rc, s->c);
    s->exit_code = rc == LK_EINVAL || rc == LK_ENAMETOOLONG ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
    finish(s);
  }
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  for (p = 0; p < 2; p++)
    for (k = 0; k < S_SERIES; k++)
      free(s->ser[p][k].us);
  code = s->exit_code;
  free(s);
  return code;
usage:
  free(s);
  return CLI_EXIT_USAGE;
}
