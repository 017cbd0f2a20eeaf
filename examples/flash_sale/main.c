/* flash_sale: latchkey's main demo.
 *
 * A shop has N items in stock, split into lots, each kept in Redis as a
 * plain string. Many buyers arrive at once, served by worker processes. For
 * each buyer a worker takes the distributed lock of the buyer's lot
 * ("flash_sale:{lot0}:lock"), reads the lot's stock with GET, and writes
 * stock-1 back with SET: a read-modify-write that is only correct because
 * the lock keeps the workers out of each other's way. At the end the parent
 * checks that no item was sold twice and that every lot's stock in Redis
 * agrees with its sales. Run it with --no-lock to see the same code oversell.
 *
 *   flash_sale [--redis URL] [--workers 8] [--stock 1000]
 *              [--buyers 3000] [--locks N] [--wait-ms 10000]
 *              [--jitter-us 200] [--timeout 120] [--no-lock]
 *
 * Redis: --redis, else $LATCHKEY_REDIS, a connection URL (redis://, unix://;
 * docs/client.md, "Connection URL") or host:port; else 127.0.0.1:6379 if it
 * answers a PING within 200 ms, else a private redis-server on a free loopback port
 * ($LATCHKEY_SERVER names another binary, e.g. valkey-server), stopped when
 * the demo ends. Only the keys flash_sale:* are touched.
 *
 * On a Redis Cluster node (tools/run-demo.sh --cluster starts one) the lots
 * are chosen so that every master serves some, and the demo says how many
 * lock names each master served. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <hiredis/hiredis.h>
#include <latchkey.h>

#include "nodes.h"
#include "redis_spawn.h"
#include "worker.h"

#define MAX_WORKERS 256

typedef struct {
  const char *redis; /* a connection URL or host:port, or NULL */
  long workers;
  long stock;
  long buyers;
  long lots; /* 0: one, or 4 per master on a cluster */
  long wait_ms;
  long jitter_us;
  long timeout_s;
  int use_lock;
} options;

typedef struct {
  pid_t pid;      /* 0 once reaped */
  int fd;         /* report pipe, -1 once done */
  size_t got;     /* bytes of the report read so far */
  int reported;   /* a full report arrived */
  int status;     /* from waitpid */
  worker_report rep;
} child;

static volatile sig_atomic_t g_signal;
static redis_server g_server;
static child g_kids[MAX_WORKERS];
static int g_nkids;
static fs_redis g_db; /* the parent's view of the server(s) */
static fs_lot g_lots[FS_MAX_LOTS];
static int g_nlots;

static void on_signal(int sig) { g_signal = sig; }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f, const char *argv0) {
  fprintf(f,
          "usage: %s [options]\n"
          "  --redis URL        use this server: redis://[[user]:password@]host[:port][/db],\n"
          "                     unix:///path/to/redis.sock, or host[:port]\n"
          "                     (default: $LATCHKEY_REDIS, else 127.0.0.1:6379 if\n"
          "                     it answers, else a private redis-server on a free\n"
          "                     port, or $LATCHKEY_SERVER, e.g. valkey-server)\n"
          "  --workers N        worker processes (default 8)\n"
          "  --stock N          items for sale (default 1000)\n"
          "  --buyers N         buyers in total (default 3000)\n"
          "  --locks N          lots, each with its own stock and lock\n"
          "                     (default 1; on a cluster 4 per master)\n"
          "  --wait-ms N        lock wait per buyer (default 10000)\n"
          "  --jitter-us N      random sleep 0..N us between GET and SET "
          "(default 200)\n"
          "  --timeout S        kill the workers after S seconds (default "
          "120)\n"
          "  --no-lock          skip the lock, to watch the sale go wrong\n",
          argv0);
}

static int parse_num(const char *name, const char *s, long min, long max,
                     long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "flash_sale: --%s wants a number in %ld..%ld, not '%s'\n",
            name, min, max, s);
    return -1;
  }
  *out = v;
  return 0;
}

static int parse_options(int argc, char **argv, options *o) {
  static const struct option longopts[] = {
      {"redis", required_argument, NULL, 'r'},
      {"workers", required_argument, NULL, 'w'},
      {"stock", required_argument, NULL, 's'},
      {"buyers", required_argument, NULL, 'b'},
      {"locks", required_argument, NULL, 'l'},
      {"wait-ms", required_argument, NULL, 'W'},
      {"jitter-us", required_argument, NULL, 'j'},
      {"timeout", required_argument, NULL, 't'},
      {"no-lock", no_argument, NULL, 'n'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  *o = (options){NULL, 8, 1000, 3000, 0, 10000, 200, 120, 1};
  int c;
  while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    int rc = 0;
    switch (c) {
    case 'r': o->redis = optarg; break;
    case 'w': rc = parse_num("workers", optarg, 1, MAX_WORKERS, &o->workers); break;
    case 's': rc = parse_num("stock", optarg, 0, 1000000000L, &o->stock); break;
    case 'b': rc = parse_num("buyers", optarg, 0, 1000000000L, &o->buyers); break;
    case 'l': rc = parse_num("locks", optarg, 1, FS_MAX_LOTS, &o->lots); break;
    case 'W': rc = parse_num("wait-ms", optarg, -1, 3600000L, &o->wait_ms); break;
    case 'j': rc = parse_num("jitter-us", optarg, 0, 100000L, &o->jitter_us); break;
    case 't': rc = parse_num("timeout", optarg, 1, 86400L, &o->timeout_s); break;
    case 'n': o->use_lock = 0; break;
    case 'h': usage(stdout, argv[0]); exit(0);
    default: usage(stderr, argv[0]); return -1;
    }
    if (rc < 0) return -1;
  }
  if (optind < argc) {
    fprintf(stderr, "flash_sale: unexpected argument '%s'\n", argv[optind]);
    usage(stderr, argv[0]);
    return -1;
  }
  return 0;
}

/* Checks the reply of a command that must not fail: NULL (and a message) on
 * an error reply; fs_command has reported a connection error already. */
static redisReply *must(redisReply *r, const char *what) {
  if (r != NULL && r->type == REDIS_REPLY_ERROR) {
    fprintf(stderr, "flash_sale: %s: %s\n", what, r->str);
    freeReplyObject(r);
    return NULL;
  }
  return r;
}

/* Every lot's keys, one key per command: on a cluster the lots' keys sit on
 * different masters. */
static int delete_keys(void) {
  for (int i = 0; i < g_nlots; i++) {
    const char *keys[2] = {g_lots[i].stock, g_lots[i].lock};
    for (int k = 0; k < 2; k++) {
      int at = 0;
      redisReply *r = must(fs_command(&g_db, &at, "DEL %s", keys[k]), "DEL");
      if (r == NULL) return -1;
      freeReplyObject(r);
    }
  }
  return 0;
}

/* Takes lots 0, 1, 2... in order, skipping one whose master already has its
 * share, so that every master of a cluster serves some lots (when there are
 * at least as many lots as masters). Past 2000 candidates (a master owning
 * very few slots) any lot is taken. On one server: lots 0..want-1. */
static int pick_lots(int want) {
  int share = (want + g_db.masters - 1) / g_db.masters;
  int count[FS_MAX_NODES] = {0};
  g_nlots = 0;
  for (int id = 0; g_nlots < want && id < 100000; id++) {
    fs_lot *lot = &g_lots[g_nlots];
    lot->id = id;
    snprintf(lot->lock, sizeof lot->lock, FS_LOCK_FMT, id);
    snprintf(lot->stock, sizeof lot->stock, FS_STOCK_FMT, id);
    int m = fs_master_of(&g_db, lot->stock);
    if (m < 0) return -1;
    if (count[m] >= share && id < 2000) continue;
    count[m]++;
    g_nlots++;
  }
  return g_nlots == want ? 0 : -1;
}

static long lot_stock(const options *o, int i) {
  return o->stock / g_nlots + (i < o->stock % g_nlots);
}

/* SIGKILLs the workers still running and reaps them. */
static void kill_workers(void) {
  for (int i = 0; i < g_nkids; i++)
    if (g_kids[i].pid > 0) kill(g_kids[i].pid, SIGKILL);
  for (int i = 0; i < g_nkids; i++) {
    if (g_kids[i].pid <= 0) continue;
    while (waitpid(g_kids[i].pid, &g_kids[i].status, 0) < 0 && errno == EINTR) {
    }
    g_kids[i].pid = 0;
  }
}

static void cleanup(void) {
  kill_workers();
  fs_close(&g_db);
  for (int i = 0; i < g_nkids; i++) {
    if (g_kids[i].fd >= 0) close(g_kids[i].fd);
    g_kids[i].fd = -1;
  }
  redis_stop(&g_server);
}

/* Forks the workers; they wait on the start pipe until the parent closes its
 * end. Returns the start pipe's write end, or -1. */
static int fork_workers(const options *o, const lk_client_opts_t *addr) {
  int go[2];
  if (pipe(go) != 0) {
    perror("flash_sale: pipe");
    return -1;
  }
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  pid_t parent = getpid();
  for (long i = 0; i < o->workers; i++) {
    int rp[2];
    if (pipe(rp) != 0) {
      perror("flash_sale: pipe");
      close(go[0]);
      return go[1];
    }
    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t pid = fork();
    if (pid == 0) {
      /* Worker: default signal handling, die with the parent, keep only
       * the start pipe's read end and this worker's report pipe. */
      signal(SIGINT, SIG_DFL);
      signal(SIGTERM, SIG_DFL);
      sigprocmask(SIG_SETMASK, &old, NULL);
#ifdef __linux__
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);
#else
      (void)parent;
#endif
      close(go[1]);
      close(rp[0]);
      for (int j = 0; j < g_nkids; j++) close(g_kids[j].fd);
      worker_config cfg;
      memset(&cfg, 0, sizeof cfg);
      cfg.index = (int)i + 1;
      cfg.addr = addr;
      cfg.lots = g_lots;
      cfg.nlots = g_nlots;
      cfg.buyers = o->buyers / o->workers + (i < o->buyers % o->workers);
      cfg.wait_ms = o->wait_ms;
      cfg.jitter_us = (unsigned)o->jitter_us;
      cfg.use_lock = o->use_lock;
      cfg.go_fd = go[0];
      cfg.report_fd = rp[1];
      _exit(worker_run(&cfg));
    }
    int saved = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(rp[1]);
    if (pid < 0) {
      fprintf(stderr, "flash_sale: fork: %s\n", strerror(saved));
      close(rp[0]);
      break;
    }
    child *k = &g_kids[g_nkids++];
    memset(k, 0, sizeof *k);
    k->pid = pid;
    k->fd = rp[0];
  }
  close(go[0]);
  return go[1];
}

/* Collects the reports until every pipe is closed (0), or the deadline passes
 * or a signal arrives (-1). *last is when the last report came in. */
static int collect_reports(double deadline, double *last) {
  *last = now_s();
  for (;;) {
    struct pollfd pfd[MAX_WORKERS];
    int map[MAX_WORKERS], n = 0;
    for (int i = 0; i < g_nkids; i++)
      if (g_kids[i].fd >= 0) {
        pfd[n] = (struct pollfd){g_kids[i].fd, POLLIN, 0};
        map[n++] = i;
      }
    if (n == 0) return 0;
    if (g_signal) return -1;
    double left = deadline - now_s();
    if (left <= 0) {
      fprintf(stderr, "flash_sale: timed out waiting for %d worker(s); "
                      "killing them\n", n);
      return -1;
    }
    int r = poll(pfd, (nfds_t)n, (int)(left * 1000) + 1);
    if (r < 0 && errno != EINTR) {
      perror("flash_sale: poll");
      return -1;
    }
    for (int j = 0; j < n && r > 0; j++) {
      if (pfd[j].revents == 0) continue;
      child *k = &g_kids[map[j]];
      char *at = (char *)&k->rep + k->got;
      ssize_t got = read(k->fd, at, sizeof k->rep - k->got);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) k->got += (size_t)got;
      if (k->got == sizeof k->rep) {
        k->reported = 1;
        *last = now_s();
      }
      if (got <= 0 || k->reported) {
        close(k->fd);
        k->fd = -1;
      }
    }
  }
}

/* Waits (bounded) for the workers to exit after reporting. */
static void reap_workers(double deadline) {
  for (;;) {
    int running = 0;
    for (int i = 0; i < g_nkids; i++) {
      if (g_kids[i].pid <= 0) continue;
      if (waitpid(g_kids[i].pid, &g_kids[i].status, WNOHANG) == g_kids[i].pid)
        g_kids[i].pid = 0;
      else
        running++;
    }
    if (running == 0 || g_signal || now_s() >= deadline) break;
    struct timespec ts = {0, 5 * 1000000L};
    nanosleep(&ts, NULL);
  }
  kill_workers(); /* whoever is left */
}

/* The sales of every lot, summed over the reports. */
static void add_up_lots(int64_t *sold_in_lot) {
  for (int i = 0; i < g_nkids; i++)
    if (g_kids[i].reported)
      for (int k = 0; k < g_nlots; k++)
        sold_in_lot[k] += g_kids[i].rep.sold_in_lot[k];
}

/* Reads every lot's final stock (-1 when missing) and the master that
 * answered for it. 0, or -1 when a server could not be asked. */
static int read_final(long long *final, int *master) {
  for (int k = 0; k < g_nlots; k++) {
    int at = 0;
    redisReply *r = must(fs_command(&g_db, &at, "GET %s", g_lots[k].stock),
                         "GET");
    if (r == NULL) return -1;
    final[k] = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : -1;
    master[k] = at;
    freeReplyObject(r);
  }
  return 0;
}

/* On a cluster: which master served how many lock names, and their sales. */
static void print_masters(const int *master, const int64_t *sold_in_lot,
                          const long long *final) {
  printf("\nmaster                 lock names    sold  stock left\n");
  for (int m = 0; m < g_db.n; m++) {
    int names = 0;
    int64_t sold = 0;
    long long left = 0;
    for (int k = 0; k < g_nlots; k++)
      if (master[k] == m) {
        names++;
        sold += sold_in_lot[k];
        left += final[k] > 0 ? final[k] : 0;
      }
    if (names == 0 && !g_db.node[m].master) continue;
    char addr[96];
    printf("%-22s %10d %7" PRId64 " %11lld\n", fs_addr(&g_db, m, addr,
           sizeof addr), names, sold, left);
  }
}

int main(int argc, char **argv) {
  options o;
  if (parse_options(argc, argv, &o) < 0) return 2;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; /* no SA_RESTART: waits wake up and clean up */
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN); /* a dropped connection is an error, not a death */

  int exit_code = 1, keys_touched = 0;
  char why[256], where_buf[300];
  const char *where;
  /* Where Redis is: the client options a connection URL fills in, used by
   * every worker's lock client and by the demo's own stock connections. */
  lk_client_opts_t addr;
  char *addr_storage = NULL;
  lk_client_opts_init(&addr);

  /* 1. Find Redis. */
  const char *spec = o.redis ? o.redis : getenv("LATCHKEY_REDIS");
  if (spec != NULL && *spec != '\0') {
    int rc = lk_client_opts_apply_url(&addr, spec, &addr_storage);
    if (rc == LK_EINVAL) {
      fprintf(stderr, "flash_sale: bad Redis address '%s'\n", spec);
      usage(stderr, argv[0]);
      return 2;
    }
    if (rc < 0) {
      fprintf(stderr, "flash_sale: %s\n", lk_strerror(rc));
      return 1;
    }
    if (addr.tls.enable || addr.sentinels != NULL) {
      fprintf(stderr, "flash_sale: '%s': the demo checks the stock over its own "
              "hiredis connections, which speak neither TLS nor Sentinel; give "
              "it redis://, unix:// or host:port\n", spec);
      lk_client_opts_free_url(addr_storage);
      return 2;
    }
    where = o.redis ? "given by --redis" : "given by LATCHKEY_REDIS";
  } else {
    if (redis_ping(addr.host, addr.port, 200, why, sizeof why) == 0) {
      where = "found running";
    } else {
      printf("flash_sale: nothing answers on 127.0.0.1:6379 (%s); "
             "starting a private %s\n", why, redis_server_binary());
      fflush(stdout);
      if (redis_spawn(&g_server, &g_signal, why, sizeof why) < 0) {
        fprintf(stderr, "flash_sale: %s\n", why);
        goto out;
      }
      addr.port = g_server.port;
      where = "private server";
    }
  }
  fs_where(&addr, where_buf, sizeof where_buf);
  if (g_server.pid > 0)
    printf("redis: %s (%s, pid %ld, dir %s; stopped at exit)\n", where_buf,
           where, (long)g_server.pid, g_server.dir);
  else
    printf("redis: %s (%s)\n", where_buf, where);

  /* 2. Split the stock into lots. */
  if (fs_open(&g_db, &addr, why, sizeof why) < 0) {
    fprintf(stderr, "flash_sale: %s\n", why);
    goto out;
  }
  if (g_db.cluster && addr.db != 0)
    printf("       (a cluster has only db 0: db %d is not used, by the "
           "locks either)\n", addr.db);
  if (o.lots == 0)
    o.lots = g_db.cluster ? (g_db.masters * 4 < FS_MAX_LOTS ? g_db.masters * 4
                                                           : FS_MAX_LOTS)
                          : 1;
  if (g_db.cluster)
    printf("       a cluster node: %d masters; the lock client "
           "routes by slot on its own\n", g_db.masters);
  if (pick_lots((int)o.lots) < 0) goto out;
  char lots[96] = "";
  if (g_nlots > 1)
    snprintf(lots, sizeof lots, " in %d lots (%s...)", g_nlots,
             g_lots[0].stock);
  printf("sale:  %ld items%s, %ld buyers, %ld worker processes\n", o.stock,
         lots, o.buyers, o.workers);
  if (!o.use_lock)
    printf("       NO LOCK (--no-lock)\n");
  else
    printf("       each buyer under %s lock \"%s\"%s, waiting up to %ld ms;"
           "\n       lease: default with watchdog; latchkey %s\n",
           g_nlots > 1 ? "the lot's" : "the", g_lots[0].lock,
           g_nlots > 1 ? "..." : "", o.wait_ms, lk_version_string());
  if (g_db.cluster && g_nlots < g_db.masters)
    printf("       (fewer lots than masters: some master serves none)\n");
  fflush(stdout);

  /* 3. Fresh keys. */
  keys_touched = 1;
  if (delete_keys() < 0) goto out;
  for (int k = 0; k < g_nlots; k++) {
    int at = 0;
    redisReply *r = must(fs_command(&g_db, &at, "SET %s %ld", g_lots[k].stock,
                                    lot_stock(&o, k)), "SET");
    if (r == NULL) goto out;
    freeReplyObject(r);
  }
  fs_close(&g_db); /* connections are not shared with the children */

  /* 4. Run the sale. */
  if (g_signal) goto out;
  int go = fork_workers(&o, &addr);
  if (go < 0) goto out;
  double t0 = now_s(), t1;
  close(go); /* EOF on the start pipe: every worker starts now */
  if (collect_reports(t0 + (double)o.timeout_s, &t1) == 0)
    reap_workers(now_s() + 5.0); /* they exit right after reporting */
  else
    kill_workers();
  if (g_signal) {
    fprintf(stderr, "flash_sale: interrupted\n");
    goto out;
  }

  /* 5. Add it up. */
  int64_t sold = 0, away = 0, acq = 0, waited = 0, errors = 0, missing = 0;
  int64_t bad_exit = 0, redirects = 0;
  printf("\nworker     pid  buyers    sold  turned away  acquisitions  waited"
         "  errors\n");
  for (int i = 0; i < g_nkids; i++) {
    const child *k = &g_kids[i];
    char how[64];
    if (WIFSIGNALED(k->status))
      snprintf(how, sizeof how, "killed by signal %d", WTERMSIG(k->status));
    else
      snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(k->status));
    if (!k->reported) {
      missing++;
      printf("%6d  (no report: %s)\n", i + 1, how);
      continue;
    }
    const worker_report *p = &k->rep;
    printf("%6d %7d %7" PRId64 " %7" PRId64 " %12" PRId64 " %13" PRId64
           " %7" PRId64 " %7" PRId64 "\n",
           (int)p->index, (int)p->pid, p->buyers, p->sold, p->turned_away,
           p->acquisitions, p->waited, p->errors);
    /* A worker that sold without errors exits 0; anything else means it
     * failed while closing, after its report. */
    if (p->errors == 0 && k->status != 0) {
      bad_exit++;
      printf("%6d  (then failed at exit: %s)\n", i + 1, how);
    }
    sold += p->sold;
    away += p->turned_away;
    acq += p->acquisitions;
    waited += p->waited;
    errors += p->errors;
    redirects += p->redirects;
  }
  missing += o.workers - g_nkids; /* never forked */

  int64_t sold_in_lot[FS_MAX_LOTS] = {0};
  long long final[FS_MAX_LOTS];
  int master[FS_MAX_LOTS];
  add_up_lots(sold_in_lot);
  if (read_final(final, master) < 0) goto out;
  if (g_db.cluster) print_masters(master, sold_in_lot, final);

  /* Each lot on its own: nothing sold beyond its stock, and its stock in
   * Redis is what it started with minus its sales. */
  int64_t oversold = 0;
  long long left = 0, lost = 0;
  int have_final = 1;
  for (int k = 0; k < g_nlots; k++) {
    long long start = lot_stock(&o, k), expected = start - sold_in_lot[k];
    if (sold_in_lot[k] > start) oversold += sold_in_lot[k] - start;
    if (final[k] < 0) {
      have_final = 0;
      continue;
    }
    left += final[k];
    lost += final[k] > expected ? final[k] - expected : expected - final[k];
  }
  double secs = t1 - t0;
  int counts_ok = missing == 0 && errors == 0 && sold + away == o.buyers &&
                  (!o.use_lock || acq == o.buyers);

  printf("\nitems sold:          %" PRId64 " of %ld\n", sold, o.stock);
  printf("buyers turned away:  %" PRId64 "\n", away);
  if (have_final)
    printf("final stock:         %lld in %d lot(s) (expected %ld - %" PRId64
           " = %lld: %s)\n", left, g_nlots, o.stock, sold,
           (long long)(o.stock - sold),
           lost == 0 && left == o.stock - sold ? "consistent, lot by lot"
                                               : "MISMATCH");
  else
    printf("final stock:         missing from Redis\n");
  printf("oversold:            %" PRId64 "\n", oversold);
  printf("lost updates:        %lld\n", lost);
  if (o.use_lock)
    printf("acquisitions:        %" PRId64 " in %.3f s = %.0f per second "
           "(%" PRId64 " had to wait)\n", acq, secs,
           secs > 0 ? (double)acq / secs : 0.0, waited);
  else
    printf("acquisitions:        none (--no-lock); %" PRId64 " buyers in "
           "%.3f s\n", sold + away, secs);
  if (g_db.cluster && o.use_lock)
    printf("redirections:        %" PRId64 " MOVED/ASK followed by the lock "
           "clients (before each learned the slot map)\n", redirects);
  printf("errors:              %" PRId64 "%s\n", errors,
         missing ? " (and some workers did not report)" : "");

  if (oversold == 0 && have_final && lost == 0 && counts_ok &&
      bad_exit == 0) {
    printf("result: OK, nothing oversold and every buyer served once\n");
    exit_code = 0;
  } else if (missing > 0 || errors > 0) {
    printf("result: FAILED (%" PRId64 " worker(s) without a report, %" PRId64
           " error(s): the sale did not run to the end)\n", missing, errors);
  } else if (oversold > 0 || !have_final || lost != 0) {
    printf("result: FAILED (%s%s)\n",
           oversold ? "items oversold, " : "",
           o.use_lock ? "the stock does not match the sales under the lock"
                      : "the stock does not match the sales: this is what "
                        "the lock prevents");
  } else if (!counts_ok) {
    printf("result: FAILED (%" PRId64 " of %ld buyers accounted for)\n",
           sold + away, o.buyers);
  } else {
    printf("result: FAILED (the sale was right, but %" PRId64 " worker(s) "
           "failed while shutting down)\n", bad_exit);
  }

out:
  /* Leave nothing behind: the demo's keys, the workers, the private server. */
  if (keys_touched) delete_keys();
  cleanup();
  lk_client_opts_free_url(addr_storage);
  fflush(stdout);
  if (g_signal) {
    signal(g_signal, SIG_DFL);
    raise(g_signal);
  }
  return exit_code;
}
