/* latchkey inspect / list / release --force / ping (docs/cli.md).
 * Each opens one client on its own loop, does its calls, closes the client
 * and returns the exit status. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

typedef struct sess_s {
  uv_loop_t loop;
  lk_client_t *c;
  const char *cmd;
  int exit_code;
  int json, yes, force;
  int64_t count;
  char **names;
  int n_names, next;
  /* inspect: a copy of the inspection while its owners are looked up */
  struct snap_s *snap;
  /* list */
  char cursor[32];
  long steps;
  /* release */
  lk_inspect_kind_t kind;
  union {
    lk_lock_t *lock;
    lk_fair_t *fair;
    lk_rwlock_t *rw;
  } o;
} sess_t;

static void on_client_closed(lk_client_t *c) { (void)c; }

static void sess_close(sess_t *s) {
  if (s->c != NULL) {
    lk_client_close(s->c, on_client_closed);
    s->c = NULL;
  }
}

/* Parses the common options and the subcommand's flags; positional
 * arguments are gathered in s->names. */
static int sess_args(sess_t *s, const char *cmd, int argc, char **argv, cli_common_t *co) {
  int i, rc;
  memset(s, 0, sizeof(*s));
  s->cmd = cmd;
  s->count = 100;
  s->names = calloc((size_t)argc + 1, sizeof(char *));
  if (s->names == NULL)
    return CLI_EXIT_FAIL;
  for (i = 0; (rc = cli_next_arg(cmd, argc, argv, &i, co)) > 0;) {
    const char *a = argv[i];
    if (strcmp(a, "--json") == 0 && strcmp(cmd, "release") != 0)
      s->json = 1;
    else if (strcmp(a, "--yes") == 0 && strcmp(cmd, "release") == 0)
      s->yes = 1;
    else if (strcmp(a, "--force") == 0 && strcmp(cmd, "release") == 0)
      s->force = 1;
    else if (strcmp(a, "--count") == 0 && strcmp(cmd, "list") == 0) {
      if (i + 1 >= argc || cli_parse_count(argv[i + 1], 10000, &s->count) < 0)
        return cli_usage(cmd, "--count needs a number 1..10000");
      i++;
    } else if (strcmp(a, "--") == 0) {
      for (i++; i < argc; i++)
        s->names[s->n_names++] = argv[i];
    } else if (a[0] == '-' && a[1] != '\0') {
      return cli_usage(cmd, "unknown option: %s", a);
    } else {
      s->names[s->n_names++] = argv[i];
    }
  }
  return rc < 0 ? CLI_EXIT_USAGE : 0;
}

static int sess_open(sess_t *s, cli_common_t *co) {
  return cli_open_client(s->cmd, co, &s->loop, &s->c);
}

/* Ends a session that never ran its loop (bad arguments, no client). */
static int sess_end(sess_t *s, int code) {
  free(s->names);
  s->names = NULL;
  return code;
}

static int sess_run(sess_t *s) {
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  free(s->names);
  return s->exit_code;
}

static void fail(sess_t *s, const char *what, int status) {
  cli_report(s->cmd, what, status, s->c);
  if (s->exit_code == 0)
    s->exit_code = cli_exit_for(status, s->c);
}

/* A command could not be sent: reported under `what` (a usage error where
 * `bad_args` says the arguments were at fault), and the session ends. */
static void send_failed(sess_t *s, const char *what, int status, int bad_args) {
  fail(s, what, status);
  if (bad_args)
    s->exit_code = CLI_EXIT_USAGE;
  sess_close(s);
}

/* Runs subcommand cmd: its arguments parsed, then checked by `check` (0,
 * or the code of a usage error), a client opened, and `start` sends the
 * first command (send_failed where it cannot); the loop runs until the
 * client is closed. */
static int sess_main(const char *cmd, int argc, char **argv, int (*check)(sess_t *),
                     void (*start)(sess_t *)) {
  sess_t s;
  cli_common_t co = {0};
  int rc;
  if ((rc = sess_args(&s, cmd, argc, argv, &co)) != 0 || (rc = check(&s)) != 0 ||
      (rc = sess_open(&s, &co)) != 0)
    return sess_end(&s, rc);
  start(&s);
  return sess_run(&s);
}

/* ---- inspect ---- */

static void inspect_next(sess_t *s);

/* Owner descriptions looked up per name, at most: one round trip each. */
#define OWNER_LOOKUPS 16

/* The inspection is borrowed inside its callback; the owners are looked
 * up after it, so what the rendering needs is copied first. */
typedef struct snap_s {
  lk_inspect_t in;
  lk_inspect_holder_t *holders;
  lk_inspect_waiter_t *waiters;
  lk_inspect_permit_t *permits;
  cli_owner_t *owners; /* n_holders + n_waiters */
  size_t look, n_look;
} snap_t;

static void snap_free(snap_t *p) {
  size_t i;
  if (p == NULL)
    return;
  free((char *)p->in.name);
  free((char *)p->in.redis_type);
  for (i = 0; p->holders != NULL && i < p->in.n_holders; i++)
    free((char *)p->holders[i].owner);
  for (i = 0; p->waiters != NULL && i < p->in.n_waiters; i++)
    free((char *)p->waiters[i].owner);
  for (i = 0; p->permits != NULL && i < p->in.n_permits; i++)
    free((char *)p->permits[i].id);
  free(p->holders);
  free(p->waiters);
  free(p->permits);
  free(p->owners);
  free(p);
}

static char *dup_text(const char *t, int *bad) {
  char *d = strdup(t != NULL ? t : "");
  if (d == NULL)
    *bad = 1;
  return d;
}

/* A deep copy, or NULL when memory ran out (then nothing is kept). */
static snap_t *snap_new(const lk_inspect_t *in) {
  snap_t *p = calloc(1, sizeof(*p));
  size_t i, n = in->n_holders + in->n_waiters;
  int bad = 0;
  if (p == NULL)
    return NULL;
  p->in = *in;
  p->in.n_holders = p->in.n_waiters = p->in.n_permits = 0;
  p->in.name = dup_text(in->name, &bad);
  p->in.redis_type = dup_text(in->redis_type, &bad);
  p->holders = calloc(in->n_holders + 1, sizeof(*p->holders));
  p->waiters = calloc(in->n_waiters + 1, sizeof(*p->waiters));
  p->permits = calloc(in->n_permits + 1, sizeof(*p->permits));
  p->owners = calloc(n + 1, sizeof(*p->owners));
  if (p->holders == NULL || p->waiters == NULL || p->permits == NULL || p->owners == NULL) {
    snap_free(p);
    return NULL;
  }
  /* n_* count the entries copied so far, so snap_free frees just those. */
  for (i = 0; i < in->n_holders; i++, p->in.n_holders++) {
    p->holders[i] = in->holders[i];
    p->holders[i].owner = dup_text(in->holders[i].owner, &bad);
  }
  for (i = 0; i < in->n_waiters; i++, p->in.n_waiters++) {
    p->waiters[i] = in->waiters[i];
    p->waiters[i].owner = dup_text(in->waiters[i].owner, &bad);
  }
  for (i = 0; i < in->n_permits; i++, p->in.n_permits++) {
    p->permits[i] = in->permits[i];
    p->permits[i].id = dup_text(in->permits[i].id, &bad);
  }
  p->in.holders = p->holders;
  p->in.waiters = p->waiters;
  p->in.permits = p->permits;
  p->n_look = n < OWNER_LOOKUPS ? n : OWNER_LOOKUPS;
  if (bad) {
    snap_free(p);
    return NULL;
  }
  return p;
}

static void render(sess_t *s, const lk_inspect_t *in, const cli_owner_t *owners) {
  if (s->json) {
    cli_render_json_owners(stdout, in, owners);
  } else {
    if (s->next > 1)
      fputc('\n', stdout);
    cli_render_table_owners(stdout, in, owners);
  }
  fflush(stdout);
}

static void copy_text(char *dst, size_t cap, const char *src) {
  snprintf(dst, cap, "%s", src != NULL ? src : "");
}

static void describe_next(sess_t *s);

/* A lookup that failed shows nothing for that owner: the inspection
 * itself succeeded. */
static void on_owner(lk_client_t *c, int status, const lk_owner_desc_t *d, void *arg) {
  sess_t *s = arg;
  snap_t *p = s->snap;
  (void)c;
  if (status == 0 && d != NULL) {
    cli_owner_t *o = &p->owners[p->look];
    o->known = 1;
    copy_text(o->id, sizeof(o->id), d->id);
    copy_text(o->host, sizeof(o->host), d->host);
    copy_text(o->program, sizeof(o->program), d->program);
    copy_text(o->client_name, sizeof(o->client_name), d->client_name);
    copy_text(o->version, sizeof(o->version), d->version);
    copy_text(o->note, sizeof(o->note), d->note);
    o->pid = d->pid;
    o->started_ms = d->started_ms;
  }
  p->look++;
  describe_next(s);
}

static const char *snap_owner(const snap_t *p, size_t i) {
  return i < p->in.n_holders ? p->holders[i].owner : p->waiters[i - p->in.n_holders].owner;
}

/* One lookup at a time; when all are done, the name is shown and the next
 * one read. */
static void describe_next(sess_t *s) {
  snap_t *p = s->snap;
  while (p->look < p->n_look) {
    if (lk_client_describe_owner(s->c, snap_owner(p, p->look), on_owner, s) == 0)
      return;
    p->look++;
  }
  render(s, &p->in, p->owners);
  snap_free(p);
  s->snap = NULL;
  inspect_next(s);
}

static void on_inspected(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  sess_t *s = arg;
  (void)c;
  if (status < 0) {
    fail(s, s->names[s->next - 1], status);
    if (s->exit_code == CLI_EXIT_CONN) {
      sess_close(s);
      return;
    }
  } else if (in->n_holders + in->n_waiters > 0 && (s->snap = snap_new(in)) != NULL) {
    describe_next(s);
    return;
  } else {
    /* Nobody to look up, or no memory for the copy: shown as read. */
    render(s, in, NULL);
  }
  fflush(stdout);
  inspect_next(s);
}

static void inspect_next(sess_t *s) {
  int rc;
  while (s->next < s->n_names) {
    const char *name = s->names[s->next++];
    if ((rc = lk_inspect(s->c, name, on_inspected, s)) == 0)
      return;
    fail(s, name, rc);
    if (rc == LK_EINVAL || rc == LK_ENAMETOOLONG)
      s->exit_code = CLI_EXIT_USAGE;
  }
  sess_close(s);
}

static int inspect_check(sess_t *s) {
  return s->n_names == 0 ? cli_usage("inspect", "at least one NAME is required") : 0;
}

int cli_inspect(int argc, char **argv) {
  return sess_main("inspect", argc, argv, inspect_check, inspect_next);
}

/* ---- list ---- */

static void on_listed(lk_client_t *c, int status, const lk_list_entry_t *e, size_t n,
                      const char *next, void *arg) {
  sess_t *s = arg;
  size_t i;
  int rc;
  (void)c;
  if (status < 0) {
    fail(s, "list", status);
    sess_close(s);
    return;
  }
  for (i = 0; i < n; i++) {
    if (s->json) {
      cli_json_t j;
      cli_json_init(&j, stdout);
      cli_json_obj_begin(&j, NULL);
      cli_json_str(&j, "name", e[i].name);
      cli_json_str(&j, "kind", lk_inspect_kind_name(e[i].kind));
      cli_json_obj_end(&j);
      fputc('\n', stdout);
    } else {
      printf("%-7s %s\n", lk_inspect_kind_name(e[i].kind), cli_safe(e[i].name));
    }
  }
  fflush(stdout);
  snprintf(s->cursor, sizeof(s->cursor), "%s", next);
  /* A full SCAN ends at cursor 0; the step bound only guards against a
   * server that never says so. */
  if (strcmp(s->cursor, "0") == 0 || ++s->steps > 100000000L) {
    sess_close(s);
    return;
  }
  if ((rc = lk_list(s->c, s->names[0], s->cursor, (int)s->count, on_listed, s)) < 0)
    send_failed(s, "list", rc, 0);
}

static int list_check(sess_t *s) {
  if (s->n_names > 1)
    return cli_usage("list", "one PATTERN at most");
  if (s->n_names == 0)
    s->names[0] = "*";
  return 0;
}

static void list_start(sess_t *s) {
  int rc = lk_list(s->c, s->names[0], "0", (int)s->count, on_listed, s);
  if (rc < 0)
    send_failed(s, "list", rc, rc == LK_EINVAL);
}

int cli_list(int argc, char **argv) {
  return sess_main("list", argc, argv, list_check, list_start);
}

/* ---- release --force ---- */

static void rel_done(sess_t *s, int status, int64_t result) {
  if (status < 0)
    fail(s, s->names[0], status);
  else
    printf("%s: %s\n", cli_safe(s->names[0]), result ? "force-released" : "was not held");
}
static void lock_closed(lk_lock_t *l) { sess_close(lk_lock_get_data(l)); }
static void fair_closed(lk_fair_t *f) { sess_close(lk_fair_get_data(f)); }
static void rw_closed(lk_rwlock_t *w) { sess_close(lk_rwlock_get_data(w)); }
static void lock_forced(lk_lock_t *l, int st, void *a) {
  rel_done(a, st, lk_lock_result(l));
  lk_lock_set_data(l, a);
  lk_lock_close(l, lock_closed);
}
static void fair_forced(lk_fair_t *f, int st, void *a) {
  rel_done(a, st, lk_fair_result(f));
  lk_fair_set_data(f, a);
  lk_fair_close(f, fair_closed);
}
static void rw_forced(lk_rwlock_t *w, int st, void *a) {
  rel_done(a, st, lk_rwlock_result(w));
  lk_rwlock_set_data(w, a);
  lk_rwlock_close(w, rw_closed);
}

/* Asks on the terminal; 1 yes. Blocks the loop, which has nothing else to
 * do meanwhile. */
static int confirm(const lk_inspect_t *in) {
  char line[16];
  cli_render_table(stderr, in);
  fprintf(stderr, "Force-release %s, whoever holds it? [y/N] ", cli_safe(in->name));
  fflush(stderr);
  if (fgets(line, sizeof(line), stdin) == NULL)
    return 0;
  return line[0] == 'y' || line[0] == 'Y';
}

static void on_release_inspected(lk_client_t *c, int status, const lk_inspect_t *in,
                                 void *arg) {
  sess_t *s = arg;
  int rc = 0;
  if (status < 0) {
    fail(s, s->names[0], status);
    sess_close(s);
    return;
  }
  if (in->kind != LK_INSPECT_LOCK && in->kind != LK_INSPECT_FAIR &&
      in->kind != LK_INSPECT_RWLOCK && in->kind != LK_INSPECT_NONE &&
      in->kind != LK_INSPECT_TOKEN) {
    fprintf(stderr, "%s release: %s is a %s, not a lock: left alone\n", cli_prog, cli_safe(in->name),
            lk_inspect_kind_name(in->kind));
    s->exit_code = CLI_EXIT_FAIL;
    sess_close(s);
    return;
  }
  if (in->kind == LK_INSPECT_NONE || in->kind == LK_INSPECT_TOKEN) {
    printf("%s: was not held\n", cli_safe(in->name));
    sess_close(s);
    return;
  }
  if (!s->yes && !confirm(in)) {
    fprintf(stderr, "%s release: not confirmed: nothing done\n", cli_prog);
    s->exit_code = CLI_EXIT_FAIL;
    sess_close(s);
    return;
  }
  /* The primitive's own force release: a fair lock wakes its next waiter,
   * a read/write lock also removes its readers' hold keys. */
  if (in->kind == LK_INSPECT_FAIR) {
    if ((rc = lk_fair_new(c, in->name, &s->o.fair)) == 0) {
      lk_fair_set_data(s->o.fair, s);
      if ((rc = lk_fair_force_release(s->o.fair, fair_forced, s)) < 0)
        lk_fair_close(s->o.fair, fair_closed);
    }
  } else if (in->kind == LK_INSPECT_RWLOCK) {
    if ((rc = lk_rwlock_new(c, in->name, &s->o.rw)) == 0) {
      lk_rwlock_set_data(s->o.rw, s);
      if ((rc = lk_rwlock_force_release(s->o.rw, rw_forced, s)) < 0)
        lk_rwlock_close(s->o.rw, rw_closed);
    }
  } else {
    if ((rc = lk_lock_new(c, in->name, &s->o.lock)) == 0) {
      lk_lock_set_data(s->o.lock, s);
      if ((rc = lk_lock_force_release(s->o.lock, lock_forced, s)) < 0)
        lk_lock_close(s->o.lock, lock_closed);
    }
  }
  if (rc < 0) {
    /* The object's close callback closes the client; without an object,
     * close it here. */
    int made = s->o.lock != NULL || s->o.fair != NULL || s->o.rw != NULL;
    fail(s, in->name, rc);
    if (!made)
      sess_close(s);
  }
}

static int release_check(sess_t *s) {
  if (!s->force)
    return cli_usage("release", "--force is required (it deletes whoever holds NAME)");
  if (s->n_names != 1)
    return cli_usage("release", "exactly one NAME");
  if (!s->yes && !isatty(STDIN_FILENO))
    return cli_usage("release", "stdin is not a terminal: pass --yes to release without asking");
  return 0;
}

static void release_start(sess_t *s) {
  int rc = lk_inspect(s->c, s->names[0], on_release_inspected, s);
  if (rc < 0)
    send_failed(s, s->names[0], rc, rc == LK_EINVAL || rc == LK_ENAMETOOLONG);
}

int cli_release(int argc, char **argv) {
  return sess_main("release", argc, argv, release_check, release_start);
}

/* ---- ping ---- */

static void on_ping(lk_client_t *c, int status, const lk_ping_t *p, void *arg) {
  sess_t *s = arg;
  (void)c;
  if (status < 0) {
    fail(s, "ping", status);
  } else if (s->json) {
    cli_json_t j;
    cli_json_init(&j, stdout);
    cli_json_obj_begin(&j, NULL);
    cli_json_str(&j, "server", p->server);
    cli_json_str(&j, "version", p->version);
    cli_json_str(&j, "mode", p->mode);
    cli_json_int(&j, "rtt_us", p->rtt_us);
    cli_json_obj_end(&j);
    fputc('\n', stdout);
  } else {
    printf("%s %s (%s), round trip %" PRId64 ".%03" PRId64 " ms\n", cli_safe(p->server),
           cli_safe(p->version), cli_safe(p->mode), p->rtt_us / 1000, p->rtt_us % 1000);
  }
  sess_close(s);
}

static int ping_check(sess_t *s) {
  if (s->n_names != 0)
    return cli_usage("ping", "no arguments besides the options (got %s)", s->names[0]);
  return 0;
}

static void ping_start(sess_t *s) {
  int rc = lk_ping(s->c, on_ping, s);
  if (rc < 0)
    send_failed(s, "ping", rc, 0);
}

int cli_ping(int argc, char **argv) {
  return sess_main("ping", argc, argv, ping_check, ping_start);
}
