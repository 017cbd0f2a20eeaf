/* flash_sale worker: buyer after buyer, take the lot's lock, do a
 * deliberately non-atomic GET / SET on the lot's stock, release the lock.
 * The next buyer starts from the release callback, so a worker has one lock
 * request at a time and the 8 workers contend for each lot's lock across
 * processes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "worker.h"
#include "nodes.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <latchkey.h>

typedef struct {
  const worker_config *cfg;
  worker_report rep;
  uv_loop_t loop;
  fs_redis stock;               /* blocking: the protected resource */
  int stock_node[FS_MAX_LOTS];  /* where each lot's stock was last seen */
  lk_client_t *client;
  lk_lock_t *lock[FS_MAX_LOTS]; /* one per lot, all on one client */
  int open_locks;
  lk_lock_opts_t opts;
  int lot;         /* of the buyer being served */
  int64_t started; /* buyers whose turn has begun */
  int stopping;    /* an error happened: serve no further buyer */
  int finishing;   /* teardown has begun */
  int reported;    /* the report went out */
  int teardown_failed;
  uint32_t rng;
} worker;

static void lk_fail(worker *w, const char *what, int err) {
  fprintf(stderr, "flash_sale: worker %d: %s: %s (%s)\n", w->cfg->index,
          what, lk_err_name(err), lk_strerror(err));
  w->rep.errors++;
  w->stopping = 1;
}

static void redis_fail(worker *w, const char *what, const char *detail) {
  fprintf(stderr, "flash_sale: worker %d: %s: %s\n", w->cfg->index, what,
          detail);
  w->rep.errors++;
  w->stopping = 1;
}

static uint32_t next_random(worker *w) { /* xorshift32 */
  uint32_t x = w->rng;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return w->rng = x;
}

static void jitter(worker *w) {
  if (w->cfg->jitter_us == 0) return;
  long us = (long)(next_random(w) % (w->cfg->jitter_us + 1u));
  struct timespec ts = {0, us * 1000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* The critical section: read, think, write back. Correct only while nobody
 * else runs it at the same time, which is what the lock is for. */
static int sell_one(worker *w) {
  const char *key = w->cfg->lots[w->lot].stock;
  int *node = &w->stock_node[w->lot];
  redisReply *r = fs_command(&w->stock, node, "GET %s", key);
  if (r == NULL) {
    redis_fail(w, "GET", "no reply");
    return -1;
  }
  if (r->type != REDIS_REPLY_STRING) {
    redis_fail(w, "GET", r->type == REDIS_REPLY_ERROR ? r->str
                                                      : "stock key missing");
    freeReplyObject(r);
    return -1;
  }
  char *end;
  errno = 0;
  long long stock = strtoll(r->str, &end, 10);
  int bad = errno != 0 || end == r->str || *end != '\0';
  freeReplyObject(r);
  if (bad) {
    redis_fail(w, "GET", "stock is not an integer");
    return -1;
  }

  jitter(w); /* widens the window a second writer would need */

  if (stock <= 0) {
    w->rep.turned_away++;
    return 0;
  }
  r = fs_command(&w->stock, node, "SET %s %lld", key, stock - 1);
  if (r == NULL) {
    redis_fail(w, "SET", "no reply");
    return -1;
  }
  int ok = r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
  if (!ok)
    redis_fail(w, "SET",
               r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
  freeReplyObject(r);
  if (!ok) return -1;
  w->rep.sold++;
  w->rep.sold_in_lot[w->lot]++;
  return 0;
}

/* The counts are final once the last buyer is done, so the report goes out
 * before the teardown: a failure while closing shows up as the exit status,
 * not as a lost report. */
static void send_report(worker *w) {
  if (w->reported) return;
  w->reported = 1;
  const char *p = (const char *)&w->rep;
  size_t left = sizeof w->rep;
  while (left > 0) {
    ssize_t n = write(w->cfg->report_fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fprintf(stderr, "flash_sale: worker %d: writing the report: %s\n",
              w->cfg->index, strerror(errno));
      return;
    }
    p += n;
    left -= (size_t)n;
  }
}

static void teardown_fail(worker *w, const char *what, int err) {
  fprintf(stderr, "flash_sale: worker %d: %s: %s (%s)\n", w->cfg->index,
          what, lk_err_name(err), lk_strerror(err));
  w->teardown_failed = 1;
}

static void on_client_closed(lk_client_t *client) {
  worker *w = lk_client_get_data(client);
  w->client = NULL;
}

static void close_client(worker *w) {
  int rc = lk_client_close(w->client, on_client_closed);
  if (rc < 0) {
    teardown_fail(w, "lk_client_close", rc);
    uv_stop(&w->loop);
  }
}

static void on_lock_closed(lk_lock_t *lock) {
  worker *w = lk_lock_get_data(lock);
  if (--w->open_locks == 0) close_client(w);
}

static void finish(worker *w) {
  if (w->finishing) return;
  w->finishing = 1;
  lk_client_stats_t st;
  lk_client_get_stats(w->client, &st);
  w->rep.waited = (int64_t)st.acquire_waits;
  w->rep.redirects = (int64_t)(st.moved_redirects + st.ask_redirects);
  send_report(w);
  if (w->open_locks == 0) {
    close_client(w);
    return;
  }
  for (int i = 0; i < w->cfg->nlots; i++) {
    if (w->lock[i] == NULL) continue;
    int rc = lk_lock_close(w->lock[i], on_lock_closed);
    if (rc < 0) { /* not expected: only a wrong thread or a fork */
      teardown_fail(w, "lk_lock_close", rc);
      uv_stop(&w->loop);
      return;
    }
  }
}

static void on_acquired(lk_lock_t *lock, int status, void *arg);

static void next_buyer(worker *w) {
  if (w->stopping || w->started == w->cfg->buyers) {
    finish(w);
    return;
  }
  /* Worker i starts at lot i, so the lots' first buyers come at once. */
  w->lot = (int)((w->cfg->index - 1 + w->started) % w->cfg->nlots);
  w->started++;
  int rc = lk_lock_acquire(w->lock[w->lot], &w->opts, on_acquired, w);
  if (rc < 0) {
    lk_fail(w, "lk_lock_acquire", rc);
    finish(w);
  }
}

static void on_released(lk_lock_t *lock, int status, void *arg) {
  (void)lock;
  worker *w = arg;
  if (status < 0) lk_fail(w, "release", status);
  next_buyer(w);
}

static void on_acquired(lk_lock_t *lock, int status, void *arg) {
  worker *w = arg;
  if (status < 0) { /* LK_ETIMEDOUT: waited wait_ms without getting it */
    lk_fail(w, "acquire", status);
    finish(w);
    return;
  }
  w->rep.acquisitions++;
  sell_one(w); /* on error it sets stopping; the lock is released anyway */
  int rc = lk_lock_release(lock, on_released, w);
  if (rc < 0) {
    lk_fail(w, "lk_lock_release", rc);
    finish(w);
  }
}

/* Runs the buyers on the loop with the locks. The client finds out by
 * itself whether the address is a cluster node (LK_CLUSTER_AUTO). */
static int run_locked(worker *w) {
  const worker_config *cfg = w->cfg;
  int rc = uv_loop_init(&w->loop);
  if (rc != 0) {
    redis_fail(w, "uv_loop_init", uv_strerror(rc));
    return -1;
  }
  lk_client_opts_t copts = *cfg->addr; /* the address, credentials and db */
  copts.client_name = "flash_sale";
  rc = lk_client_new(&w->loop, &copts, &w->client);
  if (rc < 0) {
    lk_fail(w, "lk_client_new", rc);
    uv_loop_close(&w->loop);
    return -1;
  }
  lk_client_set_data(w->client, w);
  for (int i = 0; i < cfg->nlots && !w->stopping; i++) {
    rc = lk_lock_new(w->client, cfg->lots[i].lock, &w->lock[i]);
    if (rc < 0) {
      lk_fail(w, "lk_lock_new", rc);
      break;
    }
    lk_lock_set_data(w->lock[i], w);
    w->open_locks++;
  }
  lk_lock_opts_init(&w->opts);
  w->opts.wait_ms = cfg->wait_ms; /* lease: the client's default + watchdog */
  next_buyer(w); /* or, after an error, finish() */
  uv_run(&w->loop, UV_RUN_DEFAULT);
  rc = uv_loop_close(&w->loop);
  if (rc != 0) {
    fprintf(stderr, "flash_sale: worker %d: uv_loop_close: %s\n",
            cfg->index, uv_strerror(rc));
    w->teardown_failed = 1;
    return -1;
  }
  return 0;
}

/* --no-lock: the same critical section with nothing around it. */
static void run_unlocked(worker *w) {
  for (int64_t i = 0; i < w->cfg->buyers && !w->stopping; i++) {
    w->lot = (int)((w->cfg->index - 1 + w->started) % w->cfg->nlots);
    w->started++;
    sell_one(w);
  }
}

int worker_run(const worker_config *cfg) {
  worker w;
  memset(&w, 0, sizeof w);
  w.cfg = cfg;
  w.rep.index = cfg->index;
  w.rep.pid = (int32_t)getpid();
  w.rep.buyers = cfg->buyers;
  w.rng = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
  if (w.rng == 0) w.rng = 1;

  char why[256];
  if (fs_open(&w.stock, cfg->addr, why, sizeof why) < 0)
    redis_fail(&w, "connect", why);

  /* Wait for the parent's start signal so all workers begin together. */
  char c;
  ssize_t n;
  while ((n = read(cfg->go_fd, &c, 1)) < 0 && errno == EINTR) {
  }
  close(cfg->go_fd);

  if (!w.stopping) {
    if (cfg->use_lock)
      run_locked(&w);
    else
      run_unlocked(&w);
  }
  fs_close(&w.stock);
  send_report(&w); /* unless finish() sent it already */
  close(cfg->report_fd);
  return w.rep.errors == 0 && !w.teardown_failed && w.started == cfg->buyers
             ? 0 : 1;
}
