/* Sentinel tests' set-up: a master, its replica and N sentinels on loopback
 * (test/harness/redis_replica.h, redis_sentinel.h), a loop, and clients that
 * find the master through the sentinels only: their host and port point at
 * nothing (port 1), so a client that dialled them would never connect.
 * Header-only, like lk_fixture.h. */
#ifndef LK_TEST_SENTINEL_FIXTURE_H
#define LK_TEST_SENTINEL_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "redis_replica.h"
#include "redis_sentinel.h"

#define SN_MAX 4

typedef struct sn_s {
  uv_loop_t loop;
  rt_server_t *m, *r; /* the master and its replica at the start */
  rt_sentinel_t *s[SN_MAX];
  size_t n;
  char *list; /* "127.0.0.1:p,..." of s[0..n) */
  rt_proxy_t *p; /* sn_start_proxied: the master as everyone reaches it */
  lk_client_opts_t o; /* sn_opts, set by sn_start: a test changes what it needs */
} sn_t;

static inline void sn_log(lk_log_level_t level, const char *msg, void *arg) {
  if (level >= LK_LOG_INFO)
    fprintf(stderr, "[%lld ms] %s: %s\n", (long long)(rt_now_ms() % 100000),
            arg != NULL ? (const char *)arg : "client", msg);
}

/* Options for a client that knows only the sentinels. */
static inline void sn_opts(sn_t *e, lk_client_opts_t *o) {
  lk_client_opts_init(o);
  o->port = 1; /* never dialled: node 0 is where the sentinels say */
  o->sentinels = e->list;
  o->sentinel_master = "mymaster";
  o->log = sn_log;
}

/* Loop, master, replica, n sentinels (so: NULL for defaults) that know each
 * other and the replica, so a failover can start at once; e->o, options for
 * a client that knows only them. */
static inline void sn_start_with(sn_t *e, size_t n, const rt_sentinel_opts_t *so, int proxied) {
  size_t i;
  memset(e, 0, sizeof(*e));
  ASSERT(n <= SN_MAX);
  ASSERT_OK(uv_loop_init(&e->loop));
  e->m = rt_server_start(NULL);
  ASSERT_NOT_NULL(e->m);
  e->r = rt_replica_start(e->m, NULL);
  ASSERT_NOT_NULL(e->r);
  if (proxied) {
    e->p = rt_proxy_start(rt_server_port(e->m));
    ASSERT_NOT_NULL(e->p);
  }
  for (i = 0; i < n; i++) {
    e->s[i] = rt_sentinel_start(proxied ? rt_proxy_port(e->p) : rt_server_port(e->m), so);
    ASSERT_NOT_NULL(e->s[i]);
  }
  e->n = n;
  ASSERT_OK(rt_sentinels_wait_ready(e->s, n, 1, 20000));
  e->list = rt_sentinels_list(e->s, n);
  sn_opts(e, &e->o);
}

static inline void sn_start(sn_t *e, size_t n, const rt_sentinel_opts_t *so) {
  sn_start_with(e, n, so, 0);
}

/* The same, but the sentinels monitor the master through a fault proxy
 * (e->p), so clients reach it through the proxy too: its reply rules
 * reach the clients' commands. */
static inline void sn_start_proxied(sn_t *e, size_t n) { sn_start_with(e, n, NULL, 1); }

static inline lk_client_t *sn_client(sn_t *e, const lk_client_opts_t *o) {
  lk_client_t *c = NULL;
  ASSERT_OK(lk_client_new(&e->loop, o, &c));
  return c;
}

/* A lock named name on client c. */
static inline lk_lock_t *sn_lock(lk_client_t *c, const char *name) {
  lk_lock_t *l = NULL;
  ASSERT_OK(lk_lock_new(c, name, &l));
  return l;
}

/* A lock named name on c, taken (5 s to wait, a 10 s lease) where the
 * sentinels said: its key is on the master. */
static inline lk_lock_t *sn_held(sn_t *e, lk_client_t *c, const char *name) {
  lk_lock_t *l = sn_lock(c, name);
  sx_t s;
  ASSERT_OK(sx_acquire_in(&e->loop, l, 5000, 10000, &s));
  ASSERT_EQ(rt_cmd_int(e->m, "EXISTS %s", name), 1);
  return l;
}

/* SENTINEL FAILOVER mymaster, asked of sentinel s: it accepts. */
static inline void sn_failover(rt_sentinel_t *s) {
  redisReply *r = rt_sentinel_cmd(s, "SENTINEL FAILOVER mymaster");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  freeReplyObject(r);
}

static inline void sn_close_client(sn_t *e, lk_client_t *c) {
  int closed = 0;
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, fx_flag_client_closed));
  rt_run_until(&e->loop, &closed, 10000);
}

static inline void sn_close_lock(sn_t *e, lk_lock_t *l) {
  int closed = 0;
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, fx_lock_closed_cb));
  rt_run_until(&e->loop, &closed, 10000);
}

static inline void sn_spin(sn_t *e, int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    uv_run(&e->loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

/* Spins the loop until cond holds; fails after ms (scaled). */
#define SN_EVENTUALLY(e, cond, ms)                                             \
  do {                                                                         \
    int64_t sn_end_ = rt_now_ms() + rt_scaled_ms(ms);                          \
    while (!(cond)) {                                                          \
      if (rt_now_ms() > sn_end_)                                               \
        FAIL("not within %lld ms: %s", (long long)rt_scaled_ms(ms), #cond);    \
      sn_spin((e), 2);                                                         \
    }                                                                          \
  } while (0)

static inline lk_client_stats_t sn_stats(const lk_client_t *c) {
  lk_client_stats_t st;
  lk_client_get_stats(c, &st);
  return st;
}

/* Our clients subscribed on sentinel s (CLIENT LIST: sentinels have no
 * PUBSUB command). */
static inline long long sn_subscribers(rt_sentinel_t *s) {
  redisReply *r = rt_sentinel_cmd(s, "CLIENT LIST");
  long long n = 0;
  if (r == NULL || r->type != REDIS_REPLY_STRING) {
    if (r != NULL)
      freeReplyObject(r);
    return -1;
  }
  for (const char *p = r->str; (p = strstr(p, "name=latchkey-sentinel ")) != NULL; p++) {
    const char *eol = strchr(p, '\n'), *sub = strstr(p, " sub=1 ");
    n += sub != NULL && (eol == NULL || sub < eol);
  }
  freeReplyObject(r);
  return n;
}

/* Everything stopped, the loop closed clean (clients closed first). */
static inline void sn_stop(sn_t *e) {
  size_t i;
  rt_loop_close_clean(&e->loop);
  for (i = 0; i < e->n; i++)
    rt_sentinel_stop(e->s[i]);
  rt_proxy_stop(e->p);
  rt_server_stop(e->r);
  rt_server_stop(e->m);
  free(e->list);
}

/* Closes lock l, its client c, then everything sn_start started. */
static inline void sn_finish(sn_t *e, lk_client_t *c, lk_lock_t *l) {
  sn_close_lock(e, l);
  sn_close_client(e, c);
  sn_stop(e);
}

/* sn_finish, checking that closing the lock gave its hold back: its key is
 * gone from the master. */
static inline void sn_finish_given_back(sn_t *e, lk_client_t *c, lk_lock_t *l) {
  char name[128];
  snprintf(name, sizeof(name), "%s", lk_lock_name(l)); /* borrowed until the close */
  sn_close_lock(e, l);
  ASSERT_EQ(rt_cmd_int(e->m, "EXISTS %s", name), 0);
  sn_close_client(e, c);
  sn_stop(e);
}

#endif /* LK_TEST_SENTINEL_FIXTURE_H */
