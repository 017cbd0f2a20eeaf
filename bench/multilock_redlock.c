/* multilock_redlock: RedLock acquire latency over 5 masters (bench/README.md
 * contract: JSON lines with value, limit, ratio).
 *
 *   multilock_redlock --ports P1,P2,P3,P4,P5 [--host H] [--pairs N]
 *                     [--warmup W] [--rounds R]
 *   multilock_redlock --spawn [--no-pin] [...]   starts its own 5 masters
 *
 * A pair is one uncontended acquire (wait 0, lease 30000 ms) and the
 * release of that hold; only the acquire is timed: from the call to the
 * moment the quorum is known. Three implementations, interleaved within
 * every round (the order alternates), medians of the per-round figures:
 *
 *   impl "raw" (the limit): the same parallel fan-out with no library logic.
 *     Five blocking hiredis connections; EVALSHA lock/acquire (KEYS name;
 *     ARGV lease, owner, expected count 0, request tag: what each master's
 *     lock object sends, bench_script.h) is written to all five, then the replies are read as they
 *     come (poll); the time is taken when the third grant is parsed. The
 *     other two replies are read, then EVALSHA lock/release goes to all five
 *     and the five replies are read (not timed).
 *   impl "latchkey": lk_redlock_acquire over five clients (one per master);
 *     the release is started from the acquire's callback and the next
 *     acquire from the release's.
 *   impl "latchkey-single": lk_lock_acquire on master 1 alone, the same
 *     loop: what one master costs, for the ratio to a single master. With
 *     five masters on one CPU the fan-out itself costs a multiple of that;
 *     that part is not the library's (bench/README.md: the masters share
 *     one CPU).
 *
 * Run it pinned: masters on CPU 0, this program on CPU 1 (tools/bench.sh
 * does that for registered programs; --spawn does it here unless --no-pin).
 * One JSON line per figure on stdout, then a markdown summary; progress on
 * stderr. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <uv.h>

#include "core/scripts.h"
#include "latchkey.h"

#include "bench_script.h"

#define MASTERS 5
#define QUORUM 3
#define MAX_ROUNDS 20

typedef struct args_s {
  const char *host;
  int ports[MASTERS];
  int have_ports, spawn, pin;
  int pairs, warmup, rounds;
} args_t;

static pid_t spawned[MASTERS];

static void stop_spawned(void) {
  int i;
  for (i = 0; i < MASTERS; i++)
    if (spawned[i] > 0) {
      kill(spawned[i], SIGKILL);
      waitpid(spawned[i], NULL, 0);
      spawned[i] = 0;
    }
}

static void die(const char *fmt, const char *what) {
  fprintf(stderr, "multilock_redlock: ");
  fprintf(stderr, fmt, what);
  fputc('\n', stderr);
  stop_spawned();
  exit(1);
}

static int cmp_u64(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

static double pct_us(uint64_t *v, size_t n, double q) {
  size_t rank;
  if (n == 0)
    return 0;
  qsort(v, n, sizeof(*v), cmp_u64);
  rank = (size_t)(q * (double)n + 0.999999);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return (double)v[rank - 1] / 1000.0;
}

static double median(double *v, int n) {
  int i, j;
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- masters ---- */

static redisContext *connect_to(const char *host, int port) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout(host, port, tv);
  if (c == NULL || c->err) {
    if (c != NULL)
      redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  return c;
}

/* Starts five redis-servers (pinned to CPU 0 unless !pin) on free ports. */
static void spawn_masters(args_t *a) {
  int i, tries;
  unsigned seed = (unsigned)getpid() ^ (unsigned)time(NULL);
  for (i = 0; i < MASTERS; i++) {
    for (tries = 0; tries < 20; tries++) {
      int port = 20000 + (int)(rand_r(&seed) % 10000), k;
      char portbuf[16];
      redisContext *c = NULL;
      pid_t pid;
      snprintf(portbuf, sizeof(portbuf), "%d", port);
      pid = fork();
      if (pid < 0)
        die("fork: %s", strerror(errno));
      if (pid == 0) {
        int devnull = open("/dev/null", 1);
        if (devnull >= 0)
          dup2(devnull, 1);
        if (a->pin)
          execlp("taskset", "taskset", "-c", "0", "redis-server", "--port", portbuf, "--bind",
                 "127.0.0.1", "--save", "", "--appendonly", "no", (char *)NULL);
        else
          execlp("redis-server", "redis-server", "--port", portbuf, "--bind", "127.0.0.1",
                 "--save", "", "--appendonly", "no", (char *)NULL);
        _exit(127);
      }
      spawned[i] = pid;
      for (k = 0; k < 200 && c == NULL; k++) {
        if (waitpid(pid, NULL, WNOHANG) == pid) {
          spawned[i] = 0;
          break; /* port taken, most likely: another one */
        }
        usleep(10000);
        c = connect_to("127.0.0.1", port);
      }
      if (c != NULL) {
        redisFree(c);
        a->ports[i] = port;
        break;
      }
      if (spawned[i] > 0) {
        kill(spawned[i], SIGKILL);
        waitpid(spawned[i], NULL, 0);
        spawned[i] = 0;
      }
    }
    if (a->ports[i] == 0)
      die("cannot start redis-server %s", "(is it installed?)");
  }
  a->have_ports = 1;
}

static const lk__script_t *load(redisContext *c, const char *name) {
  const lk__script_t *s = lk__script_find(name);
  redisReply *r;
  if (s == NULL)
    die("script %s is not embedded", name);
  r = redisCommand(c, "SCRIPT LOAD %b", s->text, s->len);
  if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40 ||
      memcmp(r->str, s->sha1, 40) != 0)
    die("SCRIPT LOAD %s failed", name);
  freeReplyObject(r);
  return s;
}

/* ---- impl raw: the parallel fan-out with no library logic ---- */

typedef struct raw_s {
  redisContext *c[MASTERS];
  char name[64], channel[96], owner[MASTERS][64];
  const char *acq[MASTERS][8], *rel[MASTERS][11]; /* each ends with BENCH_TAG */
  size_t acq_len[MASTERS][8], rel_len[MASTERS][11];
} raw_t;

static void raw_open(raw_t *r, const args_t *a) {
  const lk__script_t *acq, *rel;
  int i, k;
  memset(r, 0, sizeof(*r));
  snprintf(r->name, sizeof(r->name), "lkbench:rl:%ld:raw", (long)getpid());
  snprintf(r->channel, sizeof(r->channel), "redisson_lock__channel:{%s}", r->name);
  for (i = 0; i < MASTERS; i++) {
    r->c[i] = connect_to(a->host, a->ports[i]);
    if (r->c[i] == NULL)
      die("cannot connect to master %s", "for the raw loop");
    acq = load(r->c[i], "lock/acquire");
    rel = load(r->c[i], "lock/release");
    snprintf(r->owner[i], sizeof(r->owner[i]), "6b1c3e0a-0000-4000-8000-00000000000%d:1", i);
    r->acq[i][0] = "EVALSHA", r->acq[i][1] = acq->sha1, r->acq[i][2] = "1";
    r->acq[i][3] = r->name, r->acq[i][4] = "30000", r->acq[i][5] = r->owner[i];
    r->acq[i][6] = "0", r->acq[i][7] = BENCH_TAG;
    r->rel[i][0] = "EVALSHA", r->rel[i][1] = rel->sha1, r->rel[i][2] = "2";
    r->rel[i][3] = r->name, r->rel[i][4] = r->channel, r->rel[i][5] = "30000";
    r->rel[i][6] = r->owner[i], r->rel[i][7] = "PUBLISH", r->rel[i][8] = "-1";
    r->rel[i][9] = "1", r->rel[i][10] = BENCH_TAG;
    for (k = 0; k < 8; k++)
      r->acq_len[i][k] = strlen(r->acq[i][k]);
    for (k = 0; k < 11; k++)
      r->rel_len[i][k] = strlen(r->rel[i][k]);
  }
}

static void raw_send(raw_t *r, int release) {
  int i, done;
  for (i = 0; i < MASTERS; i++)
    if ((release ? redisAppendCommandArgv(r->c[i], 11, r->rel[i], r->rel_len[i])
                 : redisAppendCommandArgv(r->c[i], 8, r->acq[i], r->acq_len[i])) != REDIS_OK)
      die("append: %s", r->c[i]->errstr);
  for (i = 0; i < MASTERS; i++) {
    do {
      if (redisBufferWrite(r->c[i], &done) != REDIS_OK)
        die("write: %s", r->c[i]->errstr);
    } while (!done);
  }
}

/* Reads every master's reply as it comes; returns when the quorum-th grant
 * was parsed (in *t_quorum) and all five are in. */
static void raw_collect(raw_t *r, uint64_t *t_quorum) {
  int got[MASTERS] = {0}, n = 0, granted = 0, i;
  struct pollfd pfd[MASTERS];
  while (n < MASTERS) {
    int np = 0, progress = 0;
    for (i = 0; i < MASTERS; i++) {
      void *rep = NULL;
      if (got[i])
        continue;
      if (redisGetReplyFromReader(r->c[i], &rep) != REDIS_OK)
        die("reply: %s", r->c[i]->errstr);
      if (rep != NULL) {
        redisReply *x = bench_script_reply(rep);
        got[i] = 1;
        n++;
        progress = 1;
        if (x->type == REDIS_REPLY_ARRAY && x->elements == 1 &&
            x->element[0]->type == REDIS_REPLY_INTEGER && x->element[0]->integer == 1 &&
            ++granted == QUORUM)
          *t_quorum = uv_hrtime();
        freeReplyObject(rep);
        continue;
      }
      pfd[np].fd = r->c[i]->fd;
      pfd[np].events = POLLIN;
      pfd[np].revents = 0;
      np++;
    }
    if (n == MASTERS || progress)
      continue;
    if (poll(pfd, (nfds_t)np, 2000) <= 0)
      die("poll: %s", "no reply in 2 s");
    for (i = 0; i < MASTERS; i++) {
      int k;
      for (k = 0; k < np; k++)
        if (pfd[k].fd == r->c[i]->fd && (pfd[k].revents & (POLLIN | POLLHUP | POLLERR)))
          if (redisBufferRead(r->c[i]) != REDIS_OK)
            die("read: %s", r->c[i]->errstr);
    }
  }
  if (granted < QUORUM)
    die("raw acquire: %s", "no quorum (is the name held?)");
}

static void raw_run(raw_t *r, int pairs, uint64_t *acq_ns) {
  int p, i;
  for (p = 0; p < pairs; p++) {
    uint64_t t0 = uv_hrtime(), tq = 0;
    raw_send(r, 0);
    raw_collect(r, &tq);
    if (acq_ns != NULL)
      acq_ns[p] = tq - t0;
    raw_send(r, 1);
    for (i = 0; i < MASTERS; i++) {
      void *rep = NULL;
      if (redisGetReply(r->c[i], &rep) != REDIS_OK)
        die("release: %s", r->c[i]->errstr);
      freeReplyObject(rep);
    }
  }
}

/* ---- impl latchkey / latchkey-single ---- */

typedef struct lk_side_s {
  uv_loop_t loop;
  lk_client_t *c[MASTERS];
  lk_client_t *single_c;
  lk_redlock_t *rl;
  lk_lock_t *single;
  uint64_t *acq_ns; /* NULL during warm-up */
  int pairs, done;
  uint64_t t0;
  int failed;
} lk_side_t;

static void rl_next(lk_side_t *s);
static void single_next(lk_side_t *s);

static void on_rl_released(lk_redlock_t *rl, int status, void *arg) {
  lk_side_t *s = arg;
  (void)rl;
  if (status != 0)
    s->failed = status;
  if (++s->done < s->pairs && !s->failed)
    rl_next(s);
}

static void on_rl_acquired(lk_redlock_t *rl, int status, void *arg) {
  lk_side_t *s = arg;
  uint64_t now = uv_hrtime();
  if (status != 0) {
    size_t i;
    for (i = 0; i < lk_redlock_size(rl); i++)
      fprintf(stderr, "# master %zu: %s\n", i, lk_err_name(lk_redlock_node_status(rl, i)));
    s->failed = status;
    return;
  }
  if (s->acq_ns != NULL)
    s->acq_ns[s->done] = now - s->t0;
  if (lk_redlock_release(rl, on_rl_released, s) != 0)
    s->failed = LK_EINVAL;
}

static void rl_next(lk_side_t *s) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.lease_ms = 30000;
  s->t0 = uv_hrtime();
  if (lk_redlock_acquire(s->rl, &o, on_rl_acquired, s) != 0)
    s->failed = LK_EINVAL;
}

static void on_single_released(lk_lock_t *l, int status, void *arg) {
  lk_side_t *s = arg;
  (void)l;
  if (status != 0)
    s->failed = status;
  if (++s->done < s->pairs && !s->failed)
    single_next(s);
}

static void on_single_acquired(lk_lock_t *l, int status, void *arg) {
  lk_side_t *s = arg;
  uint64_t now = uv_hrtime();
  if (status != 0) {
    s->failed = status;
    return;
  }
  if (s->acq_ns != NULL)
    s->acq_ns[s->done] = now - s->t0;
  if (lk_lock_release(l, on_single_released, s) != 0)
    s->failed = LK_EINVAL;
}

static void single_next(lk_side_t *s) {
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.lease_ms = 30000;
  s->t0 = uv_hrtime();
  if (lk_lock_acquire(s->single, &o, on_single_acquired, s) != 0)
    s->failed = LK_EINVAL;
}

static void lk_run(lk_side_t *s, int redlock, int pairs, uint64_t *acq_ns) {
  s->acq_ns = acq_ns;
  s->pairs = pairs;
  s->done = 0;
  s->failed = 0;
  if (redlock)
    rl_next(s);
  else
    single_next(s);
  while (s->done < pairs && !s->failed)
    uv_run(&s->loop, UV_RUN_ONCE);
  if (s->failed)
    die("latchkey pair failed: %s", lk_err_name(s->failed));
}

static void lk_open(lk_side_t *s, const args_t *a) {
  char name[64];
  int i, rc;
  memset(s, 0, sizeof(*s));
  if (uv_loop_init(&s->loop) != 0)
    die("%s", "uv_loop_init");
  for (i = 0; i < MASTERS + 1; i++) {
    lk_client_opts_t o;
    lk_client_opts_init(&o);
    o.host = a->host;
    o.port = a->ports[i < MASTERS ? i : 0];
    rc = lk_client_new(&s->loop, &o, i < MASTERS ? &s->c[i] : &s->single_c);
    if (rc != 0)
      die("lk_client_new: %s", lk_err_name(rc));
  }
  snprintf(name, sizeof(name), "lkbench:rl:%ld:latchkey", (long)getpid());
  rc = lk_redlock_new(s->c, MASTERS, name, NULL, &s->rl);
  if (rc != 0)
    die("lk_redlock_new: %s", lk_err_name(rc));
  snprintf(name, sizeof(name), "lkbench:rl:%ld:single", (long)getpid());
  rc = lk_lock_new(s->single_c, name, &s->single);
  if (rc != 0)
    die("lk_lock_new: %s", lk_err_name(rc));
}

static uint64_t lk_commands(const lk_side_t *s, int redlock) {
  lk_client_stats_t st;
  uint64_t n = 0;
  int i;
  if (!redlock) {
    lk_client_get_stats(s->single_c, &st);
    return st.commands_sent;
  }
  for (i = 0; i < MASTERS; i++) {
    lk_client_get_stats(s->c[i], &st);
    n += st.commands_sent;
  }
  return n;
}

static int closing_left;

static void on_rl_closed(lk_redlock_t *rl) {
  (void)rl;
  closing_left--;
}
static void on_lock_closed(lk_lock_t *l) {
  (void)l;
  closing_left--;
}
static void on_client_closed(lk_client_t *c) {
  (void)c;
  closing_left--;
}

/* Runs the loop until every close callback came (bounded: 10 s). */
static void run_until_closed(lk_side_t *s) {
  uint64_t end = uv_hrtime() + 10000000000ull;
  while (closing_left > 0 && uv_hrtime() < end)
    uv_run(&s->loop, UV_RUN_ONCE);
}

static void lk_close(lk_side_t *s) {
  int i;
  closing_left = 2;
  lk_redlock_close(s->rl, on_rl_closed);
  lk_lock_close(s->single, on_lock_closed);
  run_until_closed(s);
  closing_left = MASTERS + 1;
  for (i = 0; i < MASTERS; i++)
    lk_client_close(s->c[i], on_client_closed);
  lk_client_close(s->single_c, on_client_closed);
  run_until_closed(s);
  uv_loop_close(&s->loop);
}

/* ---- main ---- */

static int parse_int(const char *s, int lo, int hi, int *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    return -1;
  *out = (int)v;
  return 0;
}

static void usage(void) {
  fprintf(stderr, "usage: multilock_redlock (--ports P1,..,P5 | --spawn [--no-pin]) "
                  "[--host H] [--port P] [--pairs N] [--warmup W] [--rounds R]\n");
  exit(2);
}

static void parse_args(int argc, char **argv, args_t *a) {
  int i, dummy;
  memset(a, 0, sizeof(*a));
  a->host = "127.0.0.1";
  a->pairs = 3000;
  a->warmup = 300;
  a->rounds = 3;
  a->pin = 1;
  for (i = 1; i < argc; i++) {
    const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(s, "--ports") == 0 && v != NULL) {
      char *copy = strdup(v), *tok, *save = NULL;
      int k = 0;
      for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save))
        if (k >= MASTERS || parse_int(tok, 1, 65535, &a->ports[k++]) != 0)
          usage();
      free(copy);
      if (k != MASTERS)
        usage();
      a->have_ports = 1;
      i++;
    } else if (strcmp(s, "--host") == 0 && v != NULL) {
      a->host = v, i++;
    } else if (strcmp(s, "--port") == 0 && v != NULL) {
      if (parse_int(v, 1, 65535, &dummy) != 0)
        usage();
      i++; /* the suite runner passes it; the masters come from --ports */
    } else if (strcmp(s, "--pairs") == 0 && v != NULL) {
      if (parse_int(v, 1, 10000000, &a->pairs) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--warmup") == 0 && v != NULL) {
      if (parse_int(v, 0, 10000000, &a->warmup) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--rounds") == 0 && v != NULL) {
      if (parse_int(v, 1, MAX_ROUNDS, &a->rounds) != 0)
        usage();
      i++;
    } else if (strcmp(s, "--spawn") == 0) {
      a->spawn = 1;
    } else if (strcmp(s, "--no-pin") == 0) {
      a->pin = 0;
    } else {
      usage();
    }
  }
  if (!a->have_ports && !a->spawn)
    usage();
}

static void json(const char *impl, const char *metric, double v, const char *unit,
                 double limit, const char *limit_impl, const args_t *a) {
  printf("{\"bench\":\"redlock_acquire\",\"impl\":\"%s\",\"metric\":\"%s\",\"value\":%.3f,"
         "\"unit\":\"%s\"",
         impl, metric, v, unit);
  if (limit > 0)
    printf(",\"limit\":%.3f,\"limit_impl\":\"%s\",\"ratio\":%.3f", limit, limit_impl, v / limit);
  printf(",\"masters\":%d,\"quorum\":%d,\"pairs\":%d,\"rounds\":%d}\n", MASTERS, QUORUM,
         a->pairs, a->rounds);
}

int main(int argc, char **argv) {
  args_t a;
  raw_t raw;
  lk_side_t lk;
  uint64_t *samples;
  double raw50[MAX_ROUNDS], raw99[MAX_ROUNDS], rl50[MAX_ROUNDS], rl99[MAX_ROUNDS];
  double one50[MAX_ROUNDS], one99[MAX_ROUNDS], cmds = 0;
  double m_raw50, m_raw99, m_rl50, m_rl99, m_one50, m_one99;
  int r;

  parse_args(argc, argv, &a);
  atexit(stop_spawned);
  if (a.spawn) {
    spawn_masters(&a);
    if (a.pin) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(1, &set);
      if (sched_setaffinity(0, sizeof(set), &set) != 0)
        fprintf(stderr, "# could not pin to CPU 1: running unpinned\n");
    }
  }
  fprintf(stderr, "# masters 127.0.0.1:%d,%d,%d,%d,%d; %s\n", a.ports[0], a.ports[1],
          a.ports[2], a.ports[3], a.ports[4],
          a.spawn ? (a.pin ? "spawned, pinned to CPU 0, client on CPU 1"
                           : "spawned, unpinned")
                  : "placement as given by the caller");
  samples = malloc(sizeof(*samples) * (size_t)a.pairs);
  if (samples == NULL)
    die("%s", "out of memory");
  raw_open(&raw, &a);
  lk_open(&lk, &a);
  /* Warm-up: connections, script caches, allocator pools. */
  raw_run(&raw, a.warmup, NULL);
  lk_run(&lk, 1, a.warmup, NULL);
  lk_run(&lk, 0, a.warmup, NULL);

  for (r = 0; r < a.rounds; r++) {
    int k;
    for (k = 0; k < 3; k++) {
      int which = (r % 2) ? 2 - k : k; /* alternate the order */
      if (which == 0) {
        raw_run(&raw, a.pairs, samples);
        raw50[r] = pct_us(samples, (size_t)a.pairs, 0.50);
        raw99[r] = pct_us(samples, (size_t)a.pairs, 0.99);
      } else if (which == 1) {
        uint64_t c0 = lk_commands(&lk, 1);
        lk_run(&lk, 1, a.pairs, samples);
        cmds += (double)(lk_commands(&lk, 1) - c0) / a.pairs;
        rl50[r] = pct_us(samples, (size_t)a.pairs, 0.50);
        rl99[r] = pct_us(samples, (size_t)a.pairs, 0.99);
      } else {
        lk_run(&lk, 0, a.pairs, samples);
        one50[r] = pct_us(samples, (size_t)a.pairs, 0.50);
        one99[r] = pct_us(samples, (size_t)a.pairs, 0.99);
      }
    }
    fprintf(stderr,
            "# round %d: p50 raw %.1f latchkey %.1f single %.1f us; "
            "p99 raw %.1f latchkey %.1f single %.1f us\n",
            r + 1, raw50[r], rl50[r], one50[r], raw99[r], rl99[r], one99[r]);
  }
  m_raw50 = median(raw50, a.rounds), m_raw99 = median(raw99, a.rounds);
  m_rl50 = median(rl50, a.rounds), m_rl99 = median(rl99, a.rounds);
  m_one50 = median(one50, a.rounds), m_one99 = median(one99, a.rounds);
  setvbuf(stdout, NULL, _IOLBF, 0);
  json("raw", "acq_p50_us", m_raw50, "us", 0, NULL, &a);
  json("raw", "acq_p99_us", m_raw99, "us", 0, NULL, &a);
  json("latchkey", "acq_p50_us", m_rl50, "us", m_raw50, "raw", &a);
  json("latchkey", "acq_p99_us", m_rl99, "us", m_raw99, "raw", &a);
  json("latchkey-single", "acq_p50_us", m_one50, "us", 0, NULL, &a);
  json("latchkey-single", "acq_p99_us", m_one99, "us", 0, NULL, &a);
  json("latchkey", "p50_vs_single_master", m_rl50 / m_one50, "x", 0, NULL, &a);
  json("latchkey", "commands_per_pair", cmds / a.rounds, "commands", 2.0 * MASTERS, "ideal", &a);
  printf("\n| RedLock, 5 masters, acquire | p50 us | p99 us |\n|---|---|---|\n");
  printf("| raw fan-out to the quorum reply (limit) | %.1f | %.1f |\n", m_raw50, m_raw99);
  printf("| latchkey RedLock | %.1f (%.2fx) | %.1f (%.2fx) |\n", m_rl50, m_rl50 / m_raw50, m_rl99,
         m_rl99 / m_raw99);
  printf("| latchkey lock, one master | %.1f | %.1f |\n", m_one50, m_one99);
  printf("\nRedLock p50 = %.2fx the raw fan-out (goal <= 1.1x), %.2fx one master; "
         "%.2f commands per pair (ideal %d).\n",
         m_rl50 / m_raw50, m_rl50 / m_one50, cmds / a.rounds, 2 * MASTERS);
  free(samples);
  lk_close(&lk);
  for (r = 0; r < MASTERS; r++)
    redisFree(raw.c[r]);
  stop_spawned();
  return 0;
}
