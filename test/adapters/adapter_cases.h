/* Cases shared by the host-loop adapters' tests (adapters_<host>.c define
 * HOST_USE_<host> and include this). The host-loop adapters (include/latchkey/adapters/, docs/embedding.md):
 * latchkey's uv loop driven from libevent, libev and GLib. Per adapter: two
 * clients contend on a lock and on a one-permit semaphore through the host
 * loop (overlap checker); a watchdog lease stays renewed while the host
 * spends half of each 10 ms tick on its own work; detach leaves nothing on
 * the host and the uv loop closes clean. */
#include <hiredis/hiredis.h>
#include <string.h>

#include "history.h"
#include "lk_fixture.h"
#include "host_loops.h"
#include "stall.h"

#ifndef LK_TEST_ADAPTERS_CASES_H
#define LK_TEST_ADAPTERS_CASES_H

#define ROUNDS 6

typedef struct worker_s {
  host_t *h;
  rt_history_t *hist;
  uint32_t id;
  lk_lock_t *lock;
  lk_semaphore_t *sem;
  uv_timer_t hold;
  uint64_t start_ns;
  int rounds;
  int releasing; /* the next answer is a release's */
  int failed;
  int *done;
} worker_t;

static void w_start(worker_t *w);
static void w_lock_answered(lk_lock_t *l, int status, void *arg);
static void w_sem_answered(lk_semaphore_t *s, int status, void *arg);

/* The interval recorded, grant callback to release call, lies inside the
 * real hold, so an overlap of two is an exclusion failure. */
static void w_hold_done(uv_timer_t *t) {
  worker_t *w = t->data;
  ASSERT_OK(rt_history_add(w->hist, w->id, w->start_ns, uv_hrtime()));
  w->rounds++;
  w->releasing = 1;
  if (w->lock != NULL)
    ASSERT_OK(lk_lock_release(w->lock, w_lock_answered, w));
  else
    ASSERT_OK(lk_semaphore_release(w->sem, 1, w_sem_answered, w));
}

/* Every answer a worker gets, from its lock or its semaphore: a grant starts
 * the 3 ms hold, a release the next round; a failure ends the worker. */
static void w_answered(worker_t *w, int status) {
  if (status != 0)
    w->failed = status;
  if (status == 0 && !w->releasing) {
    w->start_ns = uv_hrtime();
    ASSERT_OK(uv_timer_start(&w->hold, w_hold_done, 3, 0));
    return;
  }
  w->releasing = 0;
  w_start(w);
}

static void w_lock_answered(lk_lock_t *l, int status, void *arg) {
  (void)l;
  w_answered(arg, status);
}

static void w_sem_answered(lk_semaphore_t *s, int status, void *arg) {
  (void)s;
  w_answered(arg, status);
}

static void w_start(worker_t *w) {
  if (w->rounds >= ROUNDS || w->failed != 0) {
    (*w->done)++;
    return;
  }
  if (w->lock != NULL) {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = rt_scaled_ms(10000);
    o.lease_ms = 5000;
    ASSERT_OK(lk_lock_acquire(w->lock, &o, w_lock_answered, w));
  } else {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.wait_ms = rt_scaled_ms(10000);
    ASSERT_OK(lk_semaphore_acquire(w->sem, &o, w_sem_answered, w));
  }
}

static void on_client_closed(lk_client_t *c) {
  int *flag = lk_client_get_data(c);
  (*flag)++;
}

static void on_lock_closed(lk_lock_t *l) {
  int *flag = lk_lock_get_data(l);
  (*flag)++;
}

static void on_sem_closed(lk_semaphore_t *s) {
  int *flag = lk_semaphore_get_data(s);
  (*flag)++;
}

static void on_timer_closed(uv_handle_t *t) {
  int *flag = t->data;
  (*flag)++;
}

/* Closes clients through the host loop, detaches, checks the host is empty
 * and the uv loop closes (uv_loop_close == 0). */
static void finish(host_t *h, uv_loop_t *loop, lk_client_t **c, int n) {
  int closed = 0;
  for (int i = 0; i < n; i++) {
    lk_client_set_data(c[i], &closed);
    ASSERT_OK(lk_client_close(c[i], on_client_closed));
  }
  host_kick(h);
  int64_t end = rt_now_ms() + rt_scaled_ms(10000);
  while (closed < n && rt_now_ms() < end)
    host_iterate(h);
  ASSERT_EQ(closed, n);
  host_detach(h);
  ASSERT_EQ(host_close(h), 0);
  rt_loop_close_clean(loop);
}

/* Where every case starts: a new server, and the host open on a new uv loop. */
static rt_server_t *server_and_host(uv_loop_t *loop, host_t *h) {
  rt_server_t *srv = rt_server_start(NULL);
  ASSERT_NOT_NULL(srv);
  ASSERT_OK(uv_loop_init(loop));
  ASSERT_OK(host_open(h, loop));
  return srv;
}

static lk_client_t *client_on(uv_loop_t *loop, rt_server_t *srv, int64_t lease_ms) {
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  lk_client_opts_init(&o);
  o.port = rt_server_port(srv);
  if (lease_ms > 0)
    o.default_lease_ms = lease_ms;
  ASSERT_OK(lk_client_new(loop, &o, &c));
  return c;
}

static void contend(void) {
  uv_loop_t loop;
  host_t h;
  rt_server_t *srv = server_and_host(&loop, &h);
  lk_client_t *c[2] = {client_on(&loop, srv, 0), client_on(&loop, srv, 0)};
  redisReply *r = rt_cmd(srv, "SET adapt:sem 1");
  ASSERT_NOT_NULL(r);
  freeReplyObject(r);
  for (int phase = 0; phase < 2; phase++) {
    rt_history_t hist;
    rt_history_report_t rep;
    worker_t w[2];
    int done = 0, closed = 0;
    rt_history_init(&hist);
    memset(w, 0, sizeof(w));
    for (uint32_t i = 0; i < 2; i++) {
      w[i].h = &h;
      w[i].hist = &hist;
      w[i].id = i + 1;
      w[i].done = &done;
      ASSERT_OK(uv_timer_init(&loop, &w[i].hold));
      w[i].hold.data = &w[i];
      if (phase == 0)
        ASSERT_OK(lk_lock_new(c[i], "adapt:lock", &w[i].lock));
      else
        ASSERT_OK(lk_semaphore_new(c[i], "adapt:sem", &w[i].sem));
      w_start(&w[i]);
    }
    host_kick(&h);
    int64_t end = rt_now_ms() + rt_scaled_ms(30000);
    while (done < 2 && rt_now_ms() < end)
      host_iterate(&h);
    ASSERT_EQ(done, 2);
    for (int i = 0; i < 2; i++) {
      ASSERT_EQ(w[i].failed, 0);
      ASSERT_EQ(w[i].rounds, ROUNDS);
    }
    rt_history_check(&hist, &rep);
    rt_history_print(stderr, &rep);
    ASSERT_EQ(rep.intervals, (size_t)(2 * ROUNDS));
    ASSERT_EQ(rep.overlaps, (size_t)0);
    ASSERT_EQ(rep.malformed, (size_t)0);
    rt_history_free(&hist);
    for (int i = 0; i < 2; i++) {
      w[i].hold.data = &closed;
      uv_close((uv_handle_t *)&w[i].hold, on_timer_closed);
      if (phase == 0) {
        lk_lock_set_data(w[i].lock, &closed);
        ASSERT_OK(lk_lock_close(w[i].lock, on_lock_closed));
      } else {
        lk_semaphore_set_data(w[i].sem, &closed);
        ASSERT_OK(lk_semaphore_close(w[i].sem, on_sem_closed));
      }
    }
    host_kick(&h);
    end = rt_now_ms() + rt_scaled_ms(10000);
    while (closed < 4 && rt_now_ms() < end)
      host_iterate(&h);
    ASSERT_EQ(closed, 4);
  }
  finish(&h, &loop, c, 2);
  rt_server_stop(srv);
}

/* ---- a watchdog lease renewed while the host is busy ---- */

#define LEASE_MS 900
#define BUSY_SPAN_MS 3000 /* some ten renewals at LEASE_MS / 3 */
#define SAMPLE_MS 50
#define MIN_SAMPLES 20

typedef struct renew_s {
  rt_server_t *srv;
  lk_lock_t *lock;
  int ticks;
  int64_t start_ms, last_sample_ms;
  int samples;
  int stopped;
  long long min_pttl, last_pttl;
  int rises; /* PTTL went up between two samples: a renewal the server saw */
  int lost;
} renew_t;

static void renew_tick(host_t *h) {
  renew_t *r = h->data;
  if (r->lock == NULL || r->stopped)
    return;
  r->ticks++;
  /* The PTTL is sampled by the clock, not every n-th tick: on a starved
   * machine a 10 ms tick can take 50 ms, and a span counted in ticks then
   * outgrows any bound (run 48 of docs/reliability.md's rehearsal). */
  int64_t now = rt_now_ms();
  if (now - r->last_sample_ms >= SAMPLE_MS) {
    r->last_sample_ms = now;
    r->samples++;
    long long p = rt_cmd_int(r->srv, "PTTL adapt:lease");
    if (p < r->min_pttl)
      r->min_pttl = p;
    if (p > r->last_pttl)
      r->rises++;
    r->last_pttl = p;
  }
  /* Busy for BUSY_SPAN_MS, with enough samples to see each renewal. */
  if (now - r->start_ms >= BUSY_SPAN_MS && r->samples >= MIN_SAMPLES)
    r->stopped = 1;
}

static void renew_lost(lk_lock_t *l, int status, void *arg) {
  renew_t *r = arg;
  (void)l;
  (void)status;
  r->lost++;
}

static void renew_busy(void) {
  uv_loop_t loop;
  host_t h;
  renew_t r;
  sx_t s;
  rt_server_t *srv = server_and_host(&loop, &h);
  lk_client_t *c = client_on(&loop, srv, LEASE_MS);
  memset(&r, 0, sizeof(r));
  r.srv = srv;
  r.min_pttl = LEASE_MS;
  r.last_pttl = LEASE_MS;
  /* Ticks of 10 ms with 5 ms of host work each, for BUSY_SPAN_MS. */
  h.data = &r;
  h.on_tick = renew_tick;
  h.busy_us = 5000;
  lk_lock_t *l = NULL;
  ASSERT_OK(lk_lock_new(c, "adapt:lease", &l));
  ASSERT_OK(lk_lock_set_lost_cb(l, renew_lost, &r));
  lk_lock_opts_t o;
  lk_lock_opts_init(&o);
  o.lease_ms = -1;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &s));
  host_kick(&h);
  ASSERT_OK(host_run_until(&h, &s.done, 10000));
  ASSERT_EQ(s.status, 0);
  int64_t mark = rt_stall_mark();
  r.start_ms = r.last_sample_ms = rt_now_ms();
  r.lock = l;
  ASSERT_OK(host_run_until(&h, &r.stopped, BUSY_SPAN_MS + 10000));
  fprintf(stderr, "adapters: ticks %d, samples %d, min PTTL %lld ms, PTTL rises %d, lost %d\n",
          r.ticks, r.samples, r.min_pttl, r.rises, r.lost);
  /* The hold survives unless the machine stopped this process or the
   * server for longer than the lease leaves after a renewal period (the
   * rule of docs/reliability.md, "Tests on a loaded machine"). The key
   * never expiring (-2) nor losing its TTL (-1) is part of the hold. */
  int held = EXPECT_HOLD(r.lost == 0 && lk_lock_is_held(l) == 1 && r.min_pttl > 0, mark,
                         LEASE_MS - LEASE_MS / 3);
  if (!held) {
    /* Excused, but never silent: the holder was told once and knows. */
    ASSERT_EQ(r.lost, 1);
    ASSERT_EQ(lk_lock_is_held(l), 0);
  } else {
    /* The server saw renewals: its PTTL went back up several times. */
    ASSERT_GE(r.rises, 4);
  }
  h.busy_us = 0;
  h.on_tick = NULL;
  memset(&s, 0, sizeof(s));
  int rc = lk_lock_release(l, sx_cb, &s);
  if (held || rc == 0) {
    ASSERT_OK(rc);
    host_kick(&h);
    ASSERT_OK(host_run_until(&h, &s.done, 10000));
    if (held)
      ASSERT_EQ(s.status, 0);
  } else {
    ASSERT_EQ(rc, LK_ELEASELOST); /* told by on_lost: refused at once */
  }
  int closed = 0;
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, on_lock_closed));
  host_kick(&h);
  ASSERT_OK(host_run_until(&h, &closed, 10000));
  finish(&h, &loop, &c, 1);
  rt_server_stop(srv);
}

/* After a detach the uv loop runs on its own: release the held lock, close
 * the lock and the client, and the loop closes with nothing left. */
static void release_and_close_without_host(uv_loop_t *loop, lk_client_t *c, lk_lock_t *l,
                                           rt_server_t *srv) {
  sx_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_OK(lk_lock_release(l, sx_cb, &s));
  rt_run_until(loop, &s.done, 10000);
  ASSERT_EQ(s.status, 0);
  int closed = 0;
  lk_lock_set_data(l, &closed);
  ASSERT_OK(lk_lock_close(l, on_lock_closed));
  rt_run_until(loop, &closed, 10000);
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, on_client_closed));
  rt_run_until(loop, &closed, 10000);
  rt_loop_close_clean(loop);
  rt_server_stop(srv);
}

/* A client on the loop (*c) and a lock named name, taken through the host:
 * cb(arg) reports to *s, which must say granted. */
static lk_lock_t *lock_taken_through_host(host_t *h, uv_loop_t *loop, rt_server_t *srv,
                                          lk_client_t **c, const char *name, lk_lock_cb cb,
                                          void *arg, sx_t *s) {
  *c = client_on(loop, srv, 0);
  lk_lock_t *l = NULL;
  ASSERT_OK(lk_lock_new(*c, name, &l));
  ASSERT_OK(lk_lock_acquire(l, NULL, cb, arg));
  host_kick(h);
  ASSERT_OK(host_run_until(h, &s->done, 10000));
  ASSERT_EQ(s->status, 0);
  return l;
}

/* ---- detach with latchkey idle, then close: nothing left behind ---- */

static void detach_clean(void) {
  uv_loop_t loop;
  host_t h;
  sx_t s = {0};
  lk_client_t *c;
  rt_server_t *srv = server_and_host(&loop, &h);
  lk_lock_t *l = lock_taken_through_host(&h, &loop, srv, &c, "adapt:detach", sx_cb, &s, &s);
  ASSERT_EQ(rt_cmd_int(srv, "EXISTS adapt:detach"), 1);
  /* Detach while the client is connected and the lock held: the host
   * keeps nothing of the adapter; the uv loop runs on its own from here. */
  host_detach(&h);
  ASSERT_EQ(host_close(&h), 0);
  release_and_close_without_host(&loop, c, l, srv);
}

/* ---- detach from inside a latchkey callback ---- */

typedef struct {
  host_t *h;
  sx_t s;
} detach_in_cb_t;

static void detach_from_cb(lk_lock_t *l, int status, void *arg) {
  detach_in_cb_t *d = arg;
  /* Runs inside the adapter's own uv_run: the adapter must not be freed
   * under it (ASan catches a use after free here). */
  host_detach(d->h);
  sx_cb(l, status, &d->s);
}

static void detach_in_callback(void) {
  uv_loop_t loop;
  host_t h;
  detach_in_cb_t d = {.h = &h}; /* detach_from_cb detaches the host, then reports to d.s */
  lk_client_t *c;
  rt_server_t *srv = server_and_host(&loop, &h);
  lk_lock_t *l =
      lock_taken_through_host(&h, &loop, srv, &c, "adapt:detach-cb", detach_from_cb, &d, &d.s);
  /* A few more host iterations: nothing of the adapter may fire now. */
  for (int i = 0; i < 3; i++)
    host_iterate(&h);
  ASSERT_EQ(host_close(&h), 0);
  release_and_close_without_host(&loop, c, l, srv);
}

/* NULL arguments: LK_EINVAL and *out cleared; detach(NULL) is a no-op. */
static void bad_arguments(void) {
  uv_loop_t loop;
  ASSERT_OK(uv_loop_init(&loop));
#if defined(HOST_USE_LIBEVENT)
  lk_adapter_libevent_t *a = (lk_adapter_libevent_t *)&loop;
  ASSERT_EQ(lk_adapter_libevent_attach(NULL, &loop, &a), LK_EINVAL);
  ASSERT_NULL(a);
  lk_adapter_libevent_detach(NULL);
#elif defined(HOST_USE_LIBEV)
  lk_adapter_libev_t *a = (lk_adapter_libev_t *)&loop;
  ASSERT_EQ(lk_adapter_libev_attach(NULL, &loop, &a), LK_EINVAL);
  ASSERT_NULL(a);
  lk_adapter_libev_detach(NULL);
#else
  lk_adapter_glib_t *a = (lk_adapter_glib_t *)&loop;
  ASSERT_EQ(lk_adapter_glib_attach(NULL, NULL, &a), LK_EINVAL);
  ASSERT_NULL(a);
  ASSERT_EQ(lk_adapter_glib_attach(NULL, &loop, NULL), LK_EINVAL);
  lk_adapter_glib_detach(NULL);
#endif
  ASSERT_EQ(uv_loop_close(&loop), 0);
}

#endif /* LK_TEST_ADAPTERS_CASES_H */
