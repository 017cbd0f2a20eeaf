/* Helpers shared by the fault tests (header-only, like lk_fixture.h). */
#ifndef LK_TEST_FAULT_UTIL_H
#define LK_TEST_FAULT_UTIL_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "proxy.h"
#include "server_faults.h"

/* Runs the loop for ms (unscaled) so background work can happen. */
static inline void fu_spin(uv_loop_t *loop, int64_t ms) {
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
}

static inline int64_t fu_ms_between(uint64_t from_ns, uint64_t to_ns) {
  return ((int64_t)to_ns - (int64_t)from_ns) / 1000000;
}

/* A second (third...) client on the fixture's loop. */
static inline lk_client_t *fu_client(uv_loop_t *loop, int port, const lk_client_opts_t *base) {
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  if (base != NULL) {
    o = *base;
  } else {
    lk_client_opts_init(&o);
  }
  o.port = port;
  ASSERT_OK(lk_client_new(loop, &o, &c));
  return c;
}

static inline void fu_client_closed_cb(lk_client_t *c) {
  int *flag = lk_client_get_data(c);
  *flag = 1;
}

static inline void fu_close_client(uv_loop_t *loop, lk_client_t *c) {
  int closed = 0;
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, fu_client_closed_cb));
  rt_run_until(loop, &closed, 10000);
}

/* Closes l (of any client on loop): its close callback within 5 s. */
static inline void fu_close_lock(uv_loop_t *loop, lk_lock_t *l) {
  int closed = 0;
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, fx_lock_closed_cb));
  rt_run_until(loop, &closed, 5000);
}

static inline lk_lock_t *fu_lock(lk_client_t *c, const char *name) {
  lk_lock_t *l = NULL;
  ASSERT_OK(lk_lock_new(c, name, &l));
  return l;
}

static inline void fu_start_acquire(lk_lock_t *l, int64_t wait_ms, int64_t lease_ms, int fenced,
                                    sx_t *s) {
  sx_start_fenced(l, wait_ms, lease_ms, fenced, s);
}

/* Lost-lease recorder. */
typedef struct fu_lost_s {
  int calls;
  int status;
  uint64_t t_ns;
} fu_lost_t;

static inline void fu_on_lost(lk_lock_t *l, int status, void *arg) {
  fu_lost_t *x = arg;
  (void)l;
  x->calls++;
  x->status = status;
  x->t_ns = uv_hrtime();
}

/* Client events, in order. */
typedef struct fu_events_s {
  int ev[32];
  uint64_t t_ns[32];
  int n;
} fu_events_t;

static inline void fu_on_event(lk_client_t *c, lk_event_t ev, void *arg) {
  fu_events_t *e = arg;
  (void)c;
  if (e->n < 32) {
    e->t_ns[e->n] = uv_hrtime();
    e->ev[e->n++] = (int)ev;
  }
}

static inline int fu_event_index(const fu_events_t *e, lk_event_t ev, int from) {
  for (int i = from; i < e->n; i++)
    if (e->ev[i] == (int)ev)
      return i;
  return -1;
}

/* Log recorder: counts messages at or above WARN containing a word. */
typedef struct fu_logs_s {
  const char *word;
  int matched;
  int warnings;
} fu_logs_t;

static inline void fu_on_log(lk_log_level_t level, const char *msg, void *arg) {
  fu_logs_t *l = arg;
  if (level < LK_LOG_WARN)
    return;
  l->warnings++;
  if (l->word != NULL && strstr(msg, l->word) != NULL)
    l->matched++;
}

/* Open file descriptors of this process. */
static inline int fu_open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  int n = 0;
  struct dirent *e;
  if (d == NULL)
    return -1;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1; /* the directory's own descriptor */
}

/* Polls the side channel until EXISTS key is 0, running the loop meanwhile.
 * Returns the time (ns) its absence was first seen (the reply's arrival), or
 * 0 on timeout. */
static inline uint64_t fu_wait_gone(uv_loop_t *loop, rt_server_t *srv, const char *key,
                                    int64_t timeout_ms) {
  int64_t end = rt_now_ms() + rt_scaled_ms(timeout_ms);
  while (rt_now_ms() < end) {
    if (rt_cmd_int(srv, "EXISTS %s", key) == 0)
      return uv_hrtime();
    uv_run(loop, UV_RUN_NOWAIT);
    rt_sleep_ms(1);
  }
  return 0;
}

#endif /* LK_TEST_FAULT_UTIL_H */
