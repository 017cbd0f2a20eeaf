/* lk_inspect, lk_list and lk_ping against a real server: each primitive in
 * a known state, made by the library and by the Redisson emulator
 * (docs/inspect.md). */
#include <stdio.h>
#include <string.h>

#include "lk_fixture.h"
#include "redisson_emu.h"

/* A copy of what one inspection said (the result is borrowed). */
typedef struct snap_s {
  int done, calls, status;
  lk_inspect_kind_t kind;
  char redis_type[16];
  int64_t ttl_ms, count, token;
  int has_count, mode;
  size_t n_holders, total_holders, n_waiters, total_waiters, n_permits, total_permits;
  struct {
    char owner[128];
    int64_t count, ttl_ms;
    int mode;
  } holders[4];
  struct {
    char owner[128];
    int64_t deadline_ms;
  } waiters[4];
  struct {
    char id[64];
    int64_t lease_ms;
    int no_lease;
  } permits[4];
} snap_t;

static void on_inspect(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  snap_t *s = arg;
  size_t i;
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->status = status;
  s->done = 1;
  if (status != 0) {
    ASSERT_NULL(in);
    return;
  }
  s->kind = in->kind;
  snprintf(s->redis_type, sizeof(s->redis_type), "%s", in->redis_type);
  s->ttl_ms = in->ttl_ms, s->count = in->count, s->token = in->token;
  s->has_count = in->has_count, s->mode = in->mode;
  s->n_holders = in->n_holders, s->total_holders = in->total_holders;
  s->n_waiters = in->n_waiters, s->total_waiters = in->total_waiters;
  s->n_permits = in->n_permits, s->total_permits = in->total_permits;
  for (i = 0; i < in->n_holders && i < 4; i++) {
    snprintf(s->holders[i].owner, 128, "%s", in->holders[i].owner);
    s->holders[i].count = in->holders[i].count;
    s->holders[i].ttl_ms = in->holders[i].ttl_ms;
    s->holders[i].mode = in->holders[i].mode;
  }
  for (i = 0; i < in->n_waiters && i < 4; i++) {
    snprintf(s->waiters[i].owner, 128, "%s", in->waiters[i].owner);
    s->waiters[i].deadline_ms = in->waiters[i].deadline_ms;
  }
  for (i = 0; i < in->n_permits && i < 4; i++) {
    snprintf(s->permits[i].id, 64, "%s", in->permits[i].id);
    s->permits[i].lease_ms = in->permits[i].lease_ms;
    s->permits[i].no_lease = in->permits[i].no_lease;
  }
}

static void inspect(fx_t *fx, const char *name, snap_t *s) {
  memset(s, 0, sizeof(*s));
  ASSERT_OK(lk_inspect(fx->c, name, on_inspect, s));
  rt_run_until(&fx->loop, &s->done, 10000);
  ASSERT_EQ(s->status, 0);
}

/* Completion flags for the primitives' callbacks. */
static void rw_cb(lk_rwlock_t *rw, int status, void *arg) {
  int *st = arg;
  (void)rw;
  *st = status == 0 ? 1 : status;
}
static void rw_closed(lk_rwlock_t *rw) { *(int *)lk_rwlock_get_data(rw) = 1; }
static void ps_cb(lk_psem_t *p, int status, void *arg) {
  int *st = arg;
  (void)p;
  *st = status == 0 ? 1 : status;
}
static void ps_closed(lk_psem_t *p) { *(int *)lk_psem_get_data(p) = 1; }

TEST(bad_inputs_fail_at_once) {
  fx_t fx;
  snap_t s;
  char big[200];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_name_len = 100;
  fx_start_with(&fx, NULL, &o);
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  ASSERT_EQ(lk_inspect(NULL, "a", on_inspect, &s), LK_EINVAL);
  ASSERT_EQ(lk_inspect(fx.c, NULL, on_inspect, &s), LK_EINVAL);
  ASSERT_EQ(lk_inspect(fx.c, "", on_inspect, &s), LK_EINVAL);
  ASSERT_EQ(lk_inspect(fx.c, "a", NULL, &s), LK_EINVAL);
  ASSERT_EQ(lk_inspect(fx.c, big, on_inspect, &s), LK_ENAMETOOLONG);
  ASSERT_EQ(lk_list(fx.c, "*", "0", 0, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_list(fx.c, "*", "x1", 10, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_ping(fx.c, NULL, NULL), LK_EINVAL);
  ASSERT_STREQ(lk_inspect_kind_name(LK_INSPECT_PSEM), "psem");
  ASSERT_STREQ(lk_inspect_kind_name((lk_inspect_kind_t)99), "?");
  fx_finish(&fx);
}

TEST(absent_name_is_none) {
  fx_t fx;
  snap_t s;
  fx_start(&fx, NULL);
  inspect(&fx, "nothing:here", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_NONE);
  ASSERT_STREQ(s.redis_type, "none");
  ASSERT_EQ(s.ttl_ms, -2);
  ASSERT_EQ(s.n_holders, 0);
  fx_finish(&fx);
}

TEST(lock_holder_count_ttl_and_token) {
  fx_t fx;
  snap_t s;
  char owner[128];
  lk_lock_t *l;
  lk_lock_opts_t o;
  sx_t r;
  fx_start(&fx, NULL);
  l = fx_lock(&fx, "insp:lock");
  lk_lock_opts_init(&o);
  o.fenced = 1;
  memset(&r, 0, sizeof(r));
  ASSERT_OK(lk_lock_acquire(l, &o, sx_cb, &r));
  rt_run_until(&fx.loop, &r.done, 10000);
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(sx_acquire(&fx, l, 0, -1), 0); /* re-entry: count 2 */
  snprintf(owner, sizeof(owner), "%s", lk_lock_owner(l));
  inspect(&fx, "insp:lock", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_LOCK);
  ASSERT_STREQ(s.redis_type, "hash");
  ASSERT_EQ(s.n_holders, 1);
  ASSERT_EQ(s.total_holders, 1);
  ASSERT_STREQ(s.holders[0].owner, owner);
  ASSERT_EQ(s.holders[0].count, 2);
  ASSERT_EQ(s.holders[0].mode, 0);
  ASSERT_GT(s.ttl_ms, 0);
  ASSERT_LE(s.ttl_ms, 30000);
  ASSERT_EQ(s.holders[0].ttl_ms <= s.ttl_ms + 5, 1);
  ASSERT_EQ(s.token, lk_lock_token(l));
  ASSERT_GT(s.token, 0);
  fx_close_lock(&fx, l); /* releases: only the token counter stays */
  inspect(&fx, "insp:lock", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_TOKEN);
  ASSERT_GT(s.token, 0);
  fx_finish(&fx);
}

TEST(redisson_lock_and_fair_queue) {
  fx_t fx;
  snap_t s;
  redisContext *ctx;
  long long ttl = 0;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rlock_try(ctx, "insp:rlock", "11111111-2222-4333-8444-555555555555", 7, 20000),
            RT_RLOCK_ACQUIRED);
  inspect(&fx, "insp:rlock", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_LOCK);
  ASSERT_STREQ(s.holders[0].owner, "11111111-2222-4333-8444-555555555555:7");
  ASSERT_EQ(s.holders[0].count, 1);
  ASSERT_GT(s.ttl_ms, 0);
  ASSERT_LE(s.ttl_ms, 20000);
  ASSERT_EQ(s.token, 0);

  /* A Redisson fair lock: one holder, two queued waiters in order. */
  ASSERT_EQ(rt_rfair_attempt(ctx, "insp:fair", "aaaaaaaa-2222-4333-8444-555555555555", 1, 20000,
                             60000, &ttl),
            1);
  ASSERT_EQ(rt_rfair_attempt(ctx, "insp:fair", "bbbbbbbb-2222-4333-8444-555555555555", 2, 20000,
                             60000, &ttl),
            0);
  ASSERT_EQ(rt_rfair_attempt(ctx, "insp:fair", "cccccccc-2222-4333-8444-555555555555", 3, 20000,
                             60000, &ttl),
            0);
  inspect(&fx, "insp:fair", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_FAIR);
  ASSERT_STREQ(s.holders[0].owner, "aaaaaaaa-2222-4333-8444-555555555555:1");
  ASSERT_EQ(s.n_waiters, 2);
  ASSERT_EQ(s.total_waiters, 2);
  ASSERT_STREQ(s.waiters[0].owner, "bbbbbbbb-2222-4333-8444-555555555555:2");
  ASSERT_STREQ(s.waiters[1].owner, "cccccccc-2222-4333-8444-555555555555:3");
  ASSERT_GT(s.waiters[0].deadline_ms, 0);
  ASSERT_NE(s.waiters[1].deadline_ms, LK_INSPECT_NO_DEADLINE);
  ASSERT_GT(s.waiters[1].deadline_ms, s.waiters[0].deadline_ms);
  redisFree(ctx);
  fx_finish(&fx);
}

TEST(rwlock_readers_then_writer) {
  fx_t fx;
  snap_t s;
  lk_rwlock_t *a, *b;
  int st = 0, closed = 0;
  size_t i;
  fx_start(&fx, NULL);
  ASSERT_OK(lk_rwlock_new(fx.c, "insp:rw", &a));
  ASSERT_OK(lk_rwlock_new(fx.c, "insp:rw", &b));
  ASSERT_OK(lk_rwlock_acquire(a, LK_RW_READ, NULL, rw_cb, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  st = 0;
  ASSERT_OK(lk_rwlock_acquire(b, LK_RW_READ, NULL, rw_cb, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  inspect(&fx, "insp:rw", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_RWLOCK);
  ASSERT_EQ(s.mode, LK_RW_READ);
  ASSERT_EQ(s.n_holders, 2);
  ASSERT_EQ(s.total_holders, 2);
  for (i = 0; i < 2; i++) {
    ASSERT_EQ(s.holders[i].mode, LK_RW_READ);
    ASSERT_EQ(s.holders[i].count, 1);
    ASSERT_GT(s.holders[i].ttl_ms, 0);
    ASSERT_EQ(!strcmp(s.holders[i].owner, lk_rwlock_owner(a)) ||
                  !strcmp(s.holders[i].owner, lk_rwlock_owner(b)),
              1);
  }
  lk_rwlock_set_data(b, &closed);
  ASSERT_OK(lk_rwlock_close(b, rw_closed));
  rt_run_until(&fx.loop, &closed, 10000);
  closed = 0;
  lk_rwlock_set_data(a, &closed);
  ASSERT_OK(lk_rwlock_close(a, rw_closed));
  rt_run_until(&fx.loop, &closed, 10000);

  ASSERT_OK(lk_rwlock_new(fx.c, "insp:rw", &a));
  st = 0;
  ASSERT_OK(lk_rwlock_acquire(a, LK_RW_WRITE, NULL, rw_cb, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  inspect(&fx, "insp:rw", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_RWLOCK);
  ASSERT_EQ(s.mode, LK_RW_WRITE);
  ASSERT_EQ(s.n_holders, 1);
  ASSERT_EQ(s.holders[0].mode, LK_RW_WRITE);
  ASSERT_STREQ(s.holders[0].owner, lk_rwlock_owner(a));
  closed = 0;
  lk_rwlock_set_data(a, &closed);
  ASSERT_OK(lk_rwlock_close(a, rw_closed));
  rt_run_until(&fx.loop, &closed, 10000);
  fx_finish(&fx);
}

TEST(semaphore_latch_and_expirable_permits) {
  fx_t fx;
  snap_t s;
  redisContext *ctx;
  lk_psem_t *p;
  lk_psem_opts_t po;
  char rid[33];
  int st = 0, closed = 0;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  /* Redisson's RSemaphore: 5 permits, 2 taken. */
  ASSERT_EQ(rt_rsem_try_set_permits(ctx, "insp:sem", 5), 1);
  ASSERT_EQ(rt_rsem_try_acquire(ctx, "insp:sem", 2), 1);
  inspect(&fx, "insp:sem", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_COUNT);
  ASSERT_EQ(s.has_count, 1);
  ASSERT_EQ(s.count, 3);
  /* A latch armed at 4 reads the same way (the layout is the same). */
  freeReplyObject(rt_cmd(fx.srv, "SET insp:latch 4"));
  inspect(&fx, "insp:latch", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_COUNT);
  ASSERT_EQ(s.count, 4);

  /* latchkey's expirable semaphore: 3 permits, one with a 10 s lease. */
  ASSERT_OK(lk_psem_new(fx.c, "insp:psem", &p));
  ASSERT_OK(lk_psem_try_set_permits(p, 3, ps_cb, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  lk_psem_opts_init(&po);
  po.lease_ms = 10000;
  st = 0;
  ASSERT_OK(lk_psem_acquire(p, &po, ps_cb, &st));
  rt_run_until(&fx.loop, &st, 10000);
  ASSERT_EQ(st, 1);
  /* and one Redisson permit without lease. */
  ASSERT_EQ(rt_rpsem_try_acquire(ctx, "insp:psem", 0, rid), 1);
  inspect(&fx, "insp:psem", &s);
  ASSERT_EQ(s.kind, LK_INSPECT_PSEM);
  ASSERT_EQ(s.count, 1);
  ASSERT_EQ(s.n_permits, 2);
  ASSERT_EQ(s.total_permits, 2);
  /* Sorted by expiry: the leased one first. */
  ASSERT_STREQ(s.permits[0].id, lk_psem_permit_id(p, 0));
  ASSERT_GT(s.permits[0].lease_ms, 0);
  ASSERT_LE(s.permits[0].lease_ms, 10000);
  ASSERT_EQ(s.permits[0].no_lease, 0);
  ASSERT_STREQ(s.permits[1].id, rid);
  ASSERT_EQ(s.permits[1].no_lease, 1);
  lk_psem_set_data(p, &closed);
  ASSERT_OK(lk_psem_close(p, ps_closed));
  rt_run_until(&fx.loop, &closed, 10000);
  redisFree(ctx);
  fx_finish(&fx);
}

/* lk_list: collect every entry of a full scan. */
typedef struct listing_s {
  int done, status;
  char cursor[32];
  char names[16][64];
  lk_inspect_kind_t kinds[16];
  size_t n;
} listing_t;

static void on_list(lk_client_t *c, int status, const lk_list_entry_t *e, size_t n,
                    const char *next, void *arg) {
  listing_t *l = arg;
  size_t i;
  l->status = status;
  l->done = 1;
  if (status != 0)
    return;
  for (i = 0; i < n && l->n < 16; i++, l->n++) {
    snprintf(l->names[l->n], 64, "%s", e[i].name);
    l->kinds[l->n] = e[i].kind;
  }
  snprintf(l->cursor, sizeof(l->cursor), "%s", next);
}

static lk_inspect_kind_t listed(const listing_t *l, const char *name) {
  size_t i;
  for (i = 0; i < l->n; i++)
    if (strcmp(l->names[i], name) == 0)
      return l->kinds[i];
  return LK_INSPECT_NONE;
}

TEST(list_finds_lock_like_names_only) {
  fx_t fx;
  listing_t l;
  int steps;
  redisContext *ctx;
  long long ttl;
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  ASSERT_EQ(rt_rlock_try(ctx, "ls:lock", "11111111-2222-4333-8444-555555555555", 1, 20000),
            RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rfair_attempt(ctx, "ls:fair", "11111111-2222-4333-8444-555555555555", 2, 20000,
                             60000, &ttl),
            1);
  ASSERT_EQ(rt_rfair_attempt(ctx, "ls:fair", "11111111-2222-4333-8444-555555555555", 3, 20000,
                             60000, &ttl),
            0);
  ASSERT_EQ(rt_rsem_try_set_permits(ctx, "ls:sem", 2), 1);
  freeReplyObject(rt_cmd(fx.srv, "HSET ls:map a notacount"));
  freeReplyObject(rt_cmd(fx.srv, "SET ls:text hello"));
  freeReplyObject(rt_cmd(fx.srv, "SET other:lockish 3"));
  memset(&l, 0, sizeof(l));
  strcpy(l.cursor, "0");
  for (steps = 0; steps < 1000; steps++) {
    l.done = 0;
    ASSERT_OK(lk_list(fx.c, "ls:*", l.cursor, 2, on_list, &l));
    rt_run_until(&fx.loop, &l.done, 10000);
    ASSERT_EQ(l.status, 0);
    if (strcmp(l.cursor, "0") == 0)
      break;
  }
  ASSERT_STREQ(l.cursor, "0");
  ASSERT_EQ(listed(&l, "ls:lock"), LK_INSPECT_LOCK);
  ASSERT_EQ(listed(&l, "ls:fair"), LK_INSPECT_FAIR);
  ASSERT_EQ(listed(&l, "ls:sem"), LK_INSPECT_COUNT);
  ASSERT_EQ(listed(&l, "ls:map"), LK_INSPECT_NONE);
  ASSERT_EQ(listed(&l, "ls:text"), LK_INSPECT_NONE);
  ASSERT_EQ(listed(&l, "other:lockish"), LK_INSPECT_NONE);
  ASSERT_EQ(l.n, 3);
  redisFree(ctx);
  fx_finish(&fx);
}

static void on_ping(lk_client_t *c, int status, const lk_ping_t *p, void *arg) {
  int *st = arg;
  ASSERT_EQ(status, 0);
  ASSERT_NOT_NULL(p->version);
  ASSERT_GT((int)strlen(p->version), 0);
  ASSERT_STREQ(p->mode, "standalone");
  ASSERT_GE(p->rtt_us, 0);
  *st = 1;
}

TEST(ping_reports_version_and_mode) {
  fx_t fx;
  int st = 0;
  fx_start(&fx, NULL);
  ASSERT_OK(lk_ping(fx.c, on_ping, &st));
  rt_run_until(&fx.loop, &st, 10000);
  fx_finish(&fx);
}

/* ---- lk_inspect_watch ---- */

typedef struct wrec_s {
  int confirmations, errors, messages, stop_in_cb;
  char last[160];
  lk_inspect_watch_t *self;
} wrec_t;

static void on_watch(lk_inspect_watch_t *w, int status, const char *channel, void *arg) {
  wrec_t *r = arg;
  if (status < 0) {
    r->errors++;
    return;
  }
  if (channel == NULL) {
    r->confirmations++;
  } else {
    r->messages++;
    snprintf(r->last, sizeof(r->last), "%s", channel);
  }
  if (r->stop_in_cb) {
    ASSERT(w == r->self);
    lk_inspect_watch_stop(w);
    r->self = NULL;
  }
}

typedef struct follow_s {
  lk_inspect_watch_t *w;
  int done;
} follow_t;

static void on_inspect_follow(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  follow_t *f = arg;
  (void)c;
  ASSERT_OK(status);
  ASSERT_OK(lk_inspect_watch_follow(f->w, in));
  f->done = 1;
}

TEST(watch_tells_each_kinds_changes) {
  fx_t fx;
  redisContext *ctx;
  lk_inspect_watch_t *w = NULL;
  wrec_t r;
  follow_t f;
  long long ttl = 0;
  int before;
  fx_start(&fx, NULL);
  memset(&r, 0, sizeof(r));
  ASSERT_EQ(lk_inspect_watch(NULL, "iw", on_watch, &r, &w), LK_EINVAL);
  ASSERT_EQ(lk_inspect_watch(fx.c, "iw", NULL, &r, &w), LK_EINVAL);
  ASSERT_EQ(lk_inspect_watch(fx.c, "iw", on_watch, &r, NULL), LK_EINVAL);
  ASSERT_EQ(lk_inspect_watch(fx.c, "", on_watch, &r, &w), LK_EINVAL);
  ASSERT_NULL(w);
  ASSERT_EQ(lk_inspect_watch_follow(NULL, NULL), LK_EINVAL);
  lk_inspect_watch_stop(NULL);

  ASSERT_OK(lk_inspect_watch(fx.c, "iw", on_watch, &r, &w));
  ASSERT_NOT_NULL(w);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{iw}", 1);
  fx_wait_subscribers(&fx, "redisson_rwlock:{iw}", 1);
  fx_wait_subscribers(&fx, "redisson_sc:{iw}", 1);
  fx_wait_subscribers(&fx, "redisson_countdownlatch__channel__{iw}", 1);
  FX_EVENTUALLY(&fx, r.confirmations >= 4, 5000);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));

  /* A lock released by Redisson. */
  ASSERT_EQ(rt_rlock_try(ctx, "iw", "11111111-2222-4333-8444-555555555555", 1, 20000),
            RT_RLOCK_ACQUIRED);
  ASSERT_EQ(rt_rlock_unlock(ctx, "iw", "11111111-2222-4333-8444-555555555555", 1), 1);
  FX_EVENTUALLY(&fx, r.messages == 1, 5000);
  ASSERT_STREQ(r.last, "redisson_lock__channel:{iw}");

  /* Permits given back to a semaphore. */
  ASSERT_EQ(rt_rsem_release(ctx, "iw", 1), 1);
  FX_EVENTUALLY(&fx, r.messages == 2, 5000);
  ASSERT_STREQ(r.last, "redisson_sc:{iw}");
  freeReplyObject(rt_cmd(fx.srv, "DEL iw"));

  /* A fair lock: its release is told to the next waiter only. */
  ASSERT_EQ(rt_rfair_attempt(ctx, "iw", "aaaaaaaa-2222-4333-8444-555555555555", 1, 20000, 60000,
                             &ttl),
            1);
  ASSERT_EQ(rt_rfair_attempt(ctx, "iw", "bbbbbbbb-2222-4333-8444-555555555555", 2, 20000, 60000,
                             &ttl),
            0);
  memset(&f, 0, sizeof(f));
  f.w = w;
  ASSERT_OK(lk_inspect(fx.c, "iw", on_inspect_follow, &f));
  rt_run_until(&fx.loop, &f.done, 10000);
  fx_wait_subscribers(&fx, "redisson_lock__channel:{iw}:bbbbbbbb-2222-4333-8444-555555555555:2", 1);
  before = r.messages;
  ASSERT_EQ(rt_rfair_unlock(ctx, "iw", "aaaaaaaa-2222-4333-8444-555555555555", 1), 1);
  FX_EVENTUALLY(&fx, r.messages == before + 1, 5000);
  ASSERT_STREQ(r.last, "redisson_lock__channel:{iw}:bbbbbbbb-2222-4333-8444-555555555555:2");

  /* Stopped: every channel is left, nothing more is told. */
  lk_inspect_watch_stop(w);
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{iw}") == 0, 5000);
  FX_EVENTUALLY(&fx,
                rt_server_numsub(fx.srv, "redisson_lock__channel:{iw}:bbbbbbbb-2222-4333-"
                                         "8444-555555555555:2") == 0,
                5000);
  before = r.messages;
  freeReplyObject(rt_cmd(fx.srv, "PUBLISH redisson_sc:{iw} 1"));
  fx_spin(&fx, 50);
  ASSERT_EQ(r.messages, before);
  redisFree(ctx);
  fx_finish(&fx);
}

TEST(watch_stopped_in_its_callback_and_after_client_close) {
  fx_t fx;
  lk_client_t *c;
  lk_inspect_watch_t *w = NULL, *w2 = NULL;
  wrec_t r, r2;
  int closed = 0;
  fx_start(&fx, NULL);
  memset(&r, 0, sizeof(r));
  r.stop_in_cb = 1;
  ASSERT_OK(lk_inspect_watch(fx.c, "iw2", on_watch, &r, &w));
  r.self = w;
  FX_EVENTUALLY(&fx, r.confirmations == 1, 5000);
  ASSERT_NULL(r.self);
  fx_spin(&fx, 50); /* the other channels' confirmations: not told */
  ASSERT_EQ(r.confirmations, 1);

  /* A watch outliving its client: no callback after the close; stop frees. */
  c = fx_direct_client(&fx);
  memset(&r2, 0, sizeof(r2));
  ASSERT_OK(lk_inspect_watch(c, "iw3", on_watch, &r2, &w2));
  lk_client_set_data(c, &closed);
  ASSERT_OK(lk_client_close(c, fx_flag_client_closed));
  rt_run_until(&fx.loop, &closed, 10000);
  ASSERT_EQ(lk_inspect_watch_follow(w2, NULL), LK_EINVAL);
  lk_inspect_watch_stop(w2);
  fx_finish(&fx);
}
