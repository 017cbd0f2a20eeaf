/* latchkey run: take NAME, run a command while holding it, release it when
 * the command exits (docs/cli.md, "run"). Everything happens on one libuv
 * loop: the acquire, the command's end (SIGCHLD), forwarded signals, the
 * watchdog's renewals and a lost lease. The command runs in a process group
 * of its own that dies with latchkey (child.c). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/child.h"
#include "cli/cli.h"

extern char **environ;

enum { K_LOCK, K_FAIR, K_READ, K_WRITE, K_SEM };

typedef struct run_s {
  uv_loop_t *loop;
  lk_client_t *c;
  int kind;
  const char *name;
  int64_t wait_ms, kill_after_ms, permits;
  /* --permits N without --semaphore: at most N runs at once. The semaphore
   * gets N permits when it does not exist yet, and each run takes one. */
  int64_t limit;
  int fenced, verbose;
  char **cmd;
  union {
    lk_lock_t *lock;
    lk_fair_t *fair;
    lk_rwlock_t *rw;
    lk_psem_t *ps;
  } o;
  lk_handle_t *h; /* o as its generic handle: lost callback, cancel, close */
  int have_obj;
  cli_child_t child;
  int proc_live;
  uv_signal_t sigs[3];
  uv_signal_t sigchld;
  uv_timer_t kill_timer;
  int kill_timer_on;
  int acquiring, lost, finishing;
  int proc_ran; /* the command was started: its end is what we report */
  int reraise_sigint; /* the command died of the terminal's Ctrl-C */
  int exit_code; /* -1: not decided yet */
} run_t;

static const int fwd_signals[3] = {SIGINT, SIGTERM, SIGHUP};

static void finish(run_t *r);

/* ---- one interface over the four primitives ---- */

static void acquired(run_t *r, int status);
static void released(run_t *r, int status);
static void lost(run_t *r, int status);

/* The end of the acquire or of the release: a run has one of them under
 * way at a time, the acquire while r->acquiring (until acquired), then the
 * release. */
static void verb_done(run_t *r, int status) {
  if (r->acquiring)
    acquired(r, status);
  else
    released(r, status);
}

static void lock_done(lk_lock_t *l, int st, void *a) { (void)l, verb_done(a, st); }
static void fair_done(lk_fair_t *f, int st, void *a) { (void)f, verb_done(a, st); }
static void rw_done(lk_rwlock_t *w, int st, void *a) { (void)w, verb_done(a, st); }
static void ps_done(lk_psem_t *p, int st, void *a) { (void)p, verb_done(a, st); }
static void on_lost(lk_handle_t *h, int st, void *a) { (void)h, lost(a, st); }

static int obj_new(run_t *r) {
  int rc;
  switch (r->kind) {
  case K_LOCK:
    rc = lk_lock_new(r->c, r->name, &r->o.lock);
    r->h = lk_lock_handle(r->o.lock);
    break;
  case K_FAIR:
    rc = lk_fair_new(r->c, r->name, &r->o.fair);
    r->h = lk_fair_handle(r->o.fair);
    break;
  case K_READ:
  case K_WRITE:
    rc = lk_rwlock_new(r->c, r->name, &r->o.rw);
    r->h = lk_rwlock_handle(r->o.rw);
    break;
  default:
    rc = lk_psem_new(r->c, r->name, &r->o.ps);
    r->h = lk_psem_handle(r->o.ps);
    break;
  }
  if (rc == 0)
    rc = lk_handle_set_lost_cb(r->h, on_lost, r);
  if (rc == 0)
    r->have_obj = 1;
  return rc;
}

static int obj_acquire(run_t *r) {
  switch (r->kind) {
  case K_LOCK: {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = r->wait_ms, o.lease_ms = LK_LEASE_DEFAULT, o.fenced = r->fenced;
    return lk_lock_acquire(r->o.lock, &o, lock_done, r);
  }
  case K_FAIR: {
    lk_fair_opts_t o;
    lk_fair_opts_init(&o);
    o.wait_ms = r->wait_ms, o.lease_ms = LK_LEASE_DEFAULT, o.fenced = r->fenced;
    return lk_fair_acquire(r->o.fair, &o, fair_done, r);
  }
  case K_READ:
  case K_WRITE: {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.wait_ms = r->wait_ms, o.lease_ms = LK_LEASE_DEFAULT, o.fenced = r->fenced;
    return lk_rwlock_acquire(r->o.rw, r->kind == K_READ ? LK_RW_READ : LK_RW_WRITE, &o, rw_done, r);
  }
  default: {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    o.wait_ms = r->wait_ms, o.lease_ms = LK_LEASE_DEFAULT, o.permits = r->permits;
    return lk_psem_acquire(r->o.ps, &o, ps_done, r);
  }
  }
}

static int obj_release(run_t *r) {
  switch (r->kind) {
  case K_LOCK: return lk_lock_release(r->o.lock, lock_done, r);
  case K_FAIR: return lk_fair_release(r->o.fair, fair_done, r);
  case K_READ: return lk_rwlock_release(r->o.rw, LK_RW_READ, rw_done, r);
  case K_WRITE: return lk_rwlock_release(r->o.rw, LK_RW_WRITE, rw_done, r);
  default: return lk_psem_release(r->o.ps, NULL, ps_done, r);
  }
}

static int64_t obj_token(const run_t *r) {
  switch (r->kind) {
  case K_LOCK: return lk_lock_token(r->o.lock);
  case K_FAIR: return lk_fair_token(r->o.fair);
  case K_READ:
  case K_WRITE: return lk_rwlock_token(r->o.rw);
  default: return 0;
  }
}

/* LATCHKEY_OWNER: the owner id, or the permit ids (comma-separated). */
static char *obj_owner(const run_t *r) {
  const char *o;
  char *s;
  size_t i, n, len = 0;
  switch (r->kind) {
  case K_LOCK: o = lk_lock_owner(r->o.lock); break;
  case K_FAIR: o = lk_fair_owner(r->o.fair); break;
  case K_READ:
  case K_WRITE: o = lk_rwlock_owner(r->o.rw); break;
  default:
    n = lk_psem_permit_count(r->o.ps);
    s = malloc(n * (LK_PSEM_ID_LEN + 1) + 1);
    if (s == NULL)
      return NULL;
    s[0] = '\0';
    for (i = 0; i < n; i++) {
      if (i > 0)
        s[len++] = ',';
      memcpy(s + len, lk_psem_permit_id(r->o.ps, i), LK_PSEM_ID_LEN);
      len += LK_PSEM_ID_LEN;
      s[len] = '\0';
    }
    return s;
  }
  return strdup(o);
}

static void on_client_closed(lk_client_t *c) { (void)c; }

static void close_client(run_t *r) {
  if (r->c != NULL) {
    lk_client_close(r->c, on_client_closed);
    r->c = NULL;
  }
}

static void obj_closed(lk_handle_t *h) { close_client(lk_handle_get_data(h)); }

static void obj_close(run_t *r) {
  if (!r->have_obj) {
    close_client(r);
    return;
  }
  r->have_obj = 0;
  lk_handle_set_data(r->h, r);
  lk_handle_close(r->h, obj_closed);
}

/* ---- the run ---- */

static void handle_closed(uv_handle_t *h) { (void)h; }

/* Closes what keeps the loop alive: signals, the kill timer, the object and
 * then the client. The loop then ends and main exits with r->exit_code. */
static void finish(run_t *r) {
  int i;
  if (r->finishing)
    return;
  r->finishing = 1;
  for (i = 0; i < 3; i++)
    uv_close((uv_handle_t *)&r->sigs[i], handle_closed);
  uv_close((uv_handle_t *)&r->sigchld, handle_closed);
  if (r->kill_timer_on) {
    uv_timer_stop(&r->kill_timer);
  }
  uv_close((uv_handle_t *)&r->kill_timer, handle_closed);
  obj_close(r);
}

/* The command has ended but NAME may still be held: a caller must be able
 * to tell, so the command's status gives way to CLI_EXIT_UNRELEASED. */
static void release_failed(run_t *r, int status) {
  cli_report("run", "release", status, r->c);
  fprintf(stderr,
          "%s run: %s may still be held: it stays so until its lease runs out; the "
          "command's status was %d\n",
          cli_prog, cli_safe(r->name), r->exit_code);
  r->exit_code = CLI_EXIT_UNRELEASED;
}

static void released(run_t *r, int status) {
  /* Lost or not held: nothing of ours is left on the server. */
  if (status < 0 && status != LK_ELEASELOST && status != LK_ENOTHELD && r->proc_ran)
    release_failed(r, status);
  else if (status < 0 && status != LK_ELEASELOST && status != LK_ENOTHELD)
    cli_report("run", "release", status, r->c);
  finish(r);
}

static void on_kill_timer(uv_timer_t *t) {
  run_t *r = t->data;
  if (r->proc_live) {
    fprintf(stderr, "%s run: the command did not stop after SIGTERM: SIGKILL\n", cli_prog);
    cli_child_signal(&r->child, SIGKILL);
  }
}

static void child_exited(run_t *r, int exit_status, int term_signal) {
  int rc;
  r->proc_live = 0;
  if (r->kill_timer_on)
    uv_timer_stop(&r->kill_timer);
  if (r->lost) {
    /* Whatever of its group outlived the command had from SIGTERM until
     * now to stop; none of it may go on without the lock. */
    cli_child_signal(&r->child, SIGKILL);
    cli_child_done(&r->child);
    r->exit_code = CLI_EXIT_LOST;
    finish(r); /* nothing to release: the hold is gone */
    return;
  }
  /* A Ctrl-C that only the command's group saw: latchkey dies of it too
   * in the end, so a calling script stops as it would without latchkey. */
  if (r->child.tty && term_signal == SIGINT)
    r->reraise_sigint = 1;
  cli_child_done(&r->child);
  r->exit_code = term_signal != 0 ? 128 + term_signal : exit_status;
  if ((rc = obj_release(r)) < 0) {
    release_failed(r, rc);
    finish(r);
  }
}

/* SIGCHLD: the command ended or was stopped; a guard that died is reaped. */
static void on_sigchld(uv_signal_t *h, int signum) {
  run_t *r = h->data;
  int st;
  pid_t got;
  (void)signum;
  if (r->child.guard > 0 && waitpid(r->child.guard, &st, WNOHANG) == r->child.guard)
    r->child.guard = 0;
  if (!r->proc_live)
    return;
  /* Stops matter only with the terminal: Ctrl-Z (cli_child_stopped). */
  while ((got = waitpid(r->child.pid, &st, WNOHANG | (r->child.tty ? WUNTRACED : 0))) < 0 &&
         errno == EINTR) {
  }
  if (got != r->child.pid)
    return;
  if (WIFSTOPPED(st)) {
    cli_child_stopped(&r->child); /* returns once we are continued */
    return;
  }
  child_exited(r, WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void lost(run_t *r, int status) {
  if (r->lost || r->finishing)
    return;
  r->lost = 1;
  fprintf(stderr, "%s run: lease on %s lost (%s): terminating the command\n", cli_prog,
          cli_safe(r->name), lk_err_name(status));
  if (r->proc_live) {
    cli_child_signal(&r->child, SIGTERM);
    r->kill_timer_on = 1;
    uv_timer_start(&r->kill_timer, on_kill_timer, (uint64_t)r->kill_after_ms, 0);
  }
}

/* The child's environment: ours, with the three LATCHKEY_ variables set
 * (replacing any we inherited). */
static char **child_env(run_t *r, char *vars[3]) {
  size_t n = 0, k = 0, i;
  char **env;
  while (environ[n] != NULL)
    n++;
  env = calloc(n + 4, sizeof(*env));
  if (env == NULL)
    return NULL;
  for (i = 0; i < n; i++)
    if (strncmp(environ[i], "LATCHKEY_NAME=", 14) != 0 &&
        strncmp(environ[i], "LATCHKEY_OWNER=", 15) != 0 &&
        strncmp(environ[i], "LATCHKEY_TOKEN=", 15) != 0)
      env[k++] = environ[i];
  for (i = 0; i < 3; i++)
    env[k++] = vars[i];
  env[k] = NULL;
  (void)r;
  return env;
}

static void spawn_child(run_t *r) {
  char *owner = obj_owner(r), *vars[3] = {NULL, NULL, NULL};
  char **env = NULL;
  size_t len;
  int rc, i;
  int64_t token = obj_token(r);
  len = strlen(r->name) + 16;
  vars[0] = malloc(len);
  vars[1] = malloc((owner != NULL ? strlen(owner) : 0) + 16);
  vars[2] = malloc(48);
  if (owner != NULL && vars[0] != NULL && vars[1] != NULL && vars[2] != NULL) {
    snprintf(vars[0], len, "LATCHKEY_NAME=%s", r->name);
    sprintf(vars[1], "LATCHKEY_OWNER=%s", owner);
    if (token > 0)
      snprintf(vars[2], 48, "LATCHKEY_TOKEN=%" PRId64, token);
    else
      snprintf(vars[2], 48, "LATCHKEY_TOKEN=");
    env = child_env(r, vars);
  }
  if (env == NULL) {
    fprintf(stderr, "%s run: out of memory\n", cli_prog);
    r->exit_code = CLI_EXIT_FAIL;
    rc = -1;
  } else {
    int e = 0;
    rc = cli_child_spawn(&r->child, r->cmd, env, &e);
    if (rc == 0) {
      r->proc_live = 1;
      r->proc_ran = 1;
      if (r->verbose)
        fprintf(stderr, "%s run: holding %s as %s (token %" PRId64 "), pid %d\n", cli_prog,
                cli_safe(r->name), cli_safe(owner), token, (int)r->child.pid);
    } else {
      fprintf(stderr, "%s run: %s: %s\n", cli_prog, cli_safe(r->cmd[0]), strerror(e));
      r->exit_code = e == ENOENT ? CLI_EXIT_NOTFOUND : CLI_EXIT_NOEXEC;
    }
  }
  free(env);
  for (i = 0; i < 3; i++)
    free(vars[i]);
  free(owner);
  if (rc != 0 && (rc = obj_release(r)) < 0)
    finish(r);
}

static void acquired(run_t *r, int status) {
  r->acquiring = 0;
  if (status < 0) {
    if (r->exit_code < 0) {
      r->exit_code = cli_exit_for(status, r->c);
      if (r->exit_code == CLI_EXIT_TIMEOUT)
        fprintf(stderr, "%s run: %s: not acquired in time (held by another)\n", cli_prog,
                cli_safe(r->name));
      else
        cli_report("run", r->name, status, r->c);
    }
    finish(r);
    return;
  }
  if (r->exit_code >= 0) { /* a signal came while we waited */
    if (obj_release(r) < 0)
      finish(r);
    return;
  }
  spawn_child(r);
}

/* --permits N alone: the semaphore's permits are set (when it does not
 * exist yet) before the acquire. A signal that came meanwhile ends the run
 * here: nothing is held yet. */
static void limit_set(lk_psem_t *p, int status, void *arg) {
  run_t *r = arg;
  int rc;
  (void)p;
  if (status >= 0 && r->exit_code < 0 && (rc = obj_acquire(r)) < 0)
    status = rc;
  if (status < 0 || r->exit_code >= 0)
    acquired(r, status < 0 ? status : LK_ECANCELED);
}

static int start_acquire(run_t *r) {
  if (r->limit > 0)
    return lk_psem_try_set_permits(r->o.ps, r->limit, limit_set, r);
  return obj_acquire(r);
}

static void on_signal(uv_signal_t *h, int signum) {
  run_t *r = h->data;
  if (r->proc_live) {
    /* to the command's whole group; the command decides, and we exit with
     * its status */
    cli_child_signal(&r->child, signum);
    return;
  }
  if (r->exit_code < 0)
    r->exit_code = 128 + signum;
  if (r->acquiring)
    lk_handle_cancel(r->h); /* the acquire's callback finishes */
}

static int run_usage(const char *fmt, const char *arg) { return cli_usage("run", fmt, arg); }

int cli_run(int argc, char **argv) {
  run_t r;
  cli_common_t co = {0};
  lk_client_opts_t o;
  char *storage = NULL, note[257];
  int i, rc, side = 0, permits_given = 0;
  int64_t lease_ms = -1;
  memset(&r, 0, sizeof(r));
  r.kind = K_LOCK;
  r.wait_ms = -1;
  r.kill_after_ms = 10000;
  r.permits = 1;
  r.fenced = 1;
  r.exit_code = -1;
  for (i = 0; (rc = cli_next_arg("run", argc, argv, &i, &co)) > 0;) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (strcmp(a, "--wait") == 0 || strcmp(a, "--lease") == 0 || strcmp(a, "--kill-after") == 0 ||
        strcmp(a, "--permits") == 0) {
      int64_t v;
      if (i + 1 >= argc)
        return run_usage("%s needs a value", a);
      if (strcmp(a, "--permits") == 0) {
        if (cli_parse_count(argv[i + 1], 1000, &v) < 0)
          return run_usage("--permits needs a count 1..1000, not %s", argv[i + 1]);
        r.permits = v;
        permits_given = 1;
      } else if (cli_parse_duration(argv[i + 1], strcmp(a, "--wait") == 0, &v) < 0) {
        return cli_usage("run", "%s: not a duration: %s (500ms, 10s, 2m%s)", a, argv[i + 1],
                         strcmp(a, "--wait") == 0 ? ", forever" : "");
      } else if (strcmp(a, "--wait") == 0) {
        r.wait_ms = v;
      } else if (strcmp(a, "--lease") == 0) {
        if (v < 1000)
          return run_usage("--lease must be at least 1s, not %s", argv[i + 1]);
        lease_ms = v;
      } else {
        r.kill_after_ms = v;
      }
      i++;
      continue;
    }
    if (strcmp(a, "--fair") == 0 || strcmp(a, "--read") == 0 || strcmp(a, "--write") == 0 ||
        strcmp(a, "--semaphore") == 0) {
      if (side++)
        return run_usage("only one of --fair, --read, --write, --semaphore: %s", a);
      r.kind = a[2] == 'f' ? K_FAIR : a[2] == 'r' ? K_READ : a[2] == 'w' ? K_WRITE : K_SEM;
      continue;
    }
    if (strcmp(a, "--no-token") == 0) {
      r.fenced = 0;
      continue;
    }
    if (a[0] == '-')
      return run_usage("unknown option: %s", a);
    if (r.name != NULL)
      return run_usage("one NAME only, then -- and the command (got %s)", a);
    r.name = a;
  }
  if (rc < 0)
    return CLI_EXIT_USAGE;
  if (r.name == NULL)
    return cli_usage("run", "NAME is required");
  if (i > argc || i == argc || strcmp(argv[i - 1], "--") != 0)
    return cli_usage("run", "the command follows --");
  if (permits_given && r.kind != K_SEM && r.kind != K_LOCK)
    return cli_usage("run", "--permits goes alone or with --semaphore");
  if (permits_given && r.kind == K_LOCK) {
    /* One of N permits: "at most N at once" (docs/cli.md). */
    r.kind = K_SEM;
    r.limit = r.permits;
    r.permits = 1;
  }
  r.cmd = argv + i;
  r.verbose = co.verbose;

  if ((rc = cli_client_opts("run", &co, &o, &storage)) != 0)
    return rc;
  if (lease_ms > 0)
    o.default_lease_ms = lease_ms;
  /* Who holds the name (docs/owners.md): `latchkey inspect` shows this
   * host, pid and command instead of a bare owner id. The note is the
   * command, cut to the 256 bytes a note may have. */
  snprintf(note, sizeof(note), "%s", r.cmd[0]);
  o.describe_owner = 1;
  o.owner_note = note;
  r.loop = uv_default_loop();
  rc = lk_client_new(r.loop, &o, &r.c);
  lk_client_opts_free_url(storage);
  if (rc < 0) {
    cli_report("run", "client", rc, NULL);
    return rc == LK_EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
  }
  if ((rc = obj_new(&r)) < 0) {
    cli_report("run", r.name, rc, r.c);
    close_client(&r);
    uv_run(r.loop, UV_RUN_DEFAULT);
    return rc == LK_EINVAL || rc == LK_ENAMETOOLONG ? CLI_EXIT_USAGE : CLI_EXIT_FAIL;
  }
  for (i = 0; i < 3; i++) {
    uv_signal_init(r.loop, &r.sigs[i]);
    r.sigs[i].data = &r;
    uv_signal_start(&r.sigs[i], on_signal, fwd_signals[i]);
  }
  /* Before any fork: the command's end can come at once. */
  uv_signal_init(r.loop, &r.sigchld);
  r.sigchld.data = &r;
  uv_signal_start(&r.sigchld, on_sigchld, SIGCHLD);
  uv_timer_init(r.loop, &r.kill_timer);
  r.kill_timer.data = &r;
  r.acquiring = 1;
  if ((rc = start_acquire(&r)) < 0) {
    r.acquiring = 0;
    cli_report("run", r.name, rc, r.c);
    r.exit_code = CLI_EXIT_FAIL;
    finish(&r);
  }
  uv_run(r.loop, UV_RUN_DEFAULT);
  uv_loop_close(r.loop);
  if (r.reraise_sigint && r.exit_code == 128 + SIGINT) {
    signal(SIGINT, SIG_DFL); /* the loop's handlers are gone */
    raise(SIGINT);
  }
  return r.exit_code < 0 ? CLI_EXIT_FAIL : r.exit_code;
}
