/* The public handle (include/latchkey/handle.h): every kind of object
 * through one lk_handle_t. Its generic verbs, its conversions, its close
 * callback, and what a kind without a verb answers; then typed acquires
 * seen (is_held, token) and waits canceled through the handle, against a
 * real server. */
#include <stdio.h>
#include <string.h>

#include "lk_fixture.h"

#define NKINDS LK_KIND_BARRIER

/* What each kind has (docs/objects.md, "Handles"). */
typedef struct kind_s {
  int kind;
  const char *prefix;
  int named;  /* a name (a MultiLock has none) */
  int holds;  /* is_held answers 0/1, else LK_EINVAL */
  int tokens; /* fencing tokens (the leader's term), else LK_EINVAL */
  int owner;  /* one owner "UUID:TID" */
  int lost;   /* a lost callback */
} kind_t;

static const kind_t kinds[NKINDS] = {
    {LK_KIND_LOCK, "lock", 1, 1, 1, 1, 1},
    {LK_KIND_FAIR, "fair", 1, 1, 1, 1, 1},
    {LK_KIND_RWLOCK, "rwlock", 1, 1, 1, 1, 1},
    {LK_KIND_SEMAPHORE, "semaphore", 1, 1, 0, 0, 0},
    {LK_KIND_PSEM, "psem", 1, 1, 0, 0, 1},
    {LK_KIND_LATCH, "latch", 1, 0, 0, 0, 0},
    {LK_KIND_MULTILOCK, "multilock", 0, 1, 0, 0, 1},
    {LK_KIND_REDLOCK, "redlock", 1, 1, 1, 0, 1},
    {LK_KIND_LEADER, "leader", 1, 1, 1, 0, 1},
    {LK_KIND_RATELIMITER, "ratelimiter", 1, 0, 0, 0, 0},
    {LK_KIND_BARRIER, "barrier", 1, 0, 0, 0, 0},
};

/* One typed operation's outcome. */
typedef struct op_s {
  int done, calls, status;
} op_t;

#define OP_DONE(X, T)                                                          \
  static void X##_done(T *o, int status, void *arg) {                          \
    op_t *d = arg;                                                             \
    (void)o;                                                                   \
    d->calls++;                                                                \
    d->done = 1;                                                               \
    d->status = status;                                                        \
  }
OP_DONE(lock, lk_lock_t)
OP_DONE(fair, lk_fair_t)
OP_DONE(rwlock, lk_rwlock_t)
OP_DONE(semaphore, lk_semaphore_t)
OP_DONE(psem, lk_psem_t)
OP_DONE(latch, lk_latch_t)
OP_DONE(multilock, lk_multilock_t)
OP_DONE(redlock, lk_redlock_t)
OP_DONE(leader, lk_leader_t)
OP_DONE(ratelimiter, lk_ratelimiter_t)
OP_DONE(barrier, lk_barrier_t)

/* Starts an operation (rc is its start code), then runs the loop until its
 * one callback. */
static int finish(fx_t *fx, int rc, op_t *d) {
  ASSERT_OK(rc);
  rt_run_until(&fx->loop, &d->done, 15000);
  ASSERT_EQ(d->calls, 1);
  return d->status;
}

/* The MultiLocks' member locks, closed after their groups. */
static lk_lock_t *members[16];
static size_t n_members;

/* A new object of kind k named name, as its handle (LK_HANDLE picks the
 * kind's conversion by type). */
static lk_handle_t *make(fx_t *fx, int k, const char *name) {
  char member[64];
  lk_lock_t *locks[2];
  int i;
  switch (k) {
  case LK_KIND_LOCK: {
    lk_lock_t *x;
    ASSERT_OK(lk_lock_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_FAIR: {
    lk_fair_t *x;
    ASSERT_OK(lk_fair_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_RWLOCK: {
    lk_rwlock_t *x;
    ASSERT_OK(lk_rwlock_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_SEMAPHORE: {
    lk_semaphore_t *x;
    ASSERT_OK(lk_semaphore_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_PSEM: {
    lk_psem_t *x;
    ASSERT_OK(lk_psem_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_LATCH: {
    lk_latch_t *x;
    ASSERT_OK(lk_latch_new(fx->c, name, NULL, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_MULTILOCK: {
    lk_multilock_t *x;
    for (i = 0; i < 2; i++) {
      snprintf(member, sizeof(member), "%s:%d", name, i);
      ASSERT_OK(lk_lock_new(fx->c, member, &locks[i]));
      ASSERT_LT(n_members, sizeof(members) / sizeof(members[0]));
      members[n_members++] = locks[i];
    }
    ASSERT_OK(lk_multilock_new(locks, 2, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_REDLOCK: {
    lk_redlock_t *x;
    ASSERT_OK(lk_redlock_new(&fx->c, 1, name, NULL, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_LEADER: {
    lk_leader_t *x;
    ASSERT_OK(lk_leader_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_RATELIMITER: {
    lk_ratelimiter_t *x;
    ASSERT_OK(lk_ratelimiter_new(fx->c, name, &x));
    return LK_HANDLE(x);
  }
  case LK_KIND_BARRIER: {
    lk_barrier_t *x;
    ASSERT_OK(lk_barrier_new(fx->c, name, 2, &x));
    return LK_HANDLE(x);
  }
  }
  FAIL("no kind %d", k);
}

/* lk_handle_as_X for kind k: the object, or NULL. */
static void *as_kind(lk_handle_t *h, int k) {
  switch (k) {
  case LK_KIND_LOCK: return lk_handle_as_lock(h);
  case LK_KIND_FAIR: return lk_handle_as_fair(h);
  case LK_KIND_RWLOCK: return lk_handle_as_rwlock(h);
  case LK_KIND_SEMAPHORE: return lk_handle_as_semaphore(h);
  case LK_KIND_PSEM: return lk_handle_as_psem(h);
  case LK_KIND_LATCH: return lk_handle_as_latch(h);
  case LK_KIND_MULTILOCK: return lk_handle_as_multilock(h);
  case LK_KIND_REDLOCK: return lk_handle_as_redlock(h);
  case LK_KIND_LEADER: return lk_handle_as_leader(h);
  case LK_KIND_RATELIMITER: return lk_handle_as_ratelimiter(h);
  case LK_KIND_BARRIER: return lk_handle_as_barrier(h);
  }
  return NULL;
}

/* The kind's own lk_X_get_data (the alias kept for one release). */
static void *typed_data(lk_handle_t *h) {
  switch (lk_handle_kind(h)) {
  case LK_KIND_LOCK: return lk_lock_get_data(lk_handle_as_lock(h));
  case LK_KIND_FAIR: return lk_fair_get_data(lk_handle_as_fair(h));
  case LK_KIND_RWLOCK: return lk_rwlock_get_data(lk_handle_as_rwlock(h));
  case LK_KIND_SEMAPHORE: return lk_semaphore_get_data(lk_handle_as_semaphore(h));
  case LK_KIND_PSEM: return lk_psem_get_data(lk_handle_as_psem(h));
  case LK_KIND_LATCH: return lk_latch_get_data(lk_handle_as_latch(h));
  case LK_KIND_MULTILOCK: return lk_multilock_get_data(lk_handle_as_multilock(h));
  case LK_KIND_REDLOCK: return lk_redlock_get_data(lk_handle_as_redlock(h));
  case LK_KIND_LEADER: return lk_leader_get_data(lk_handle_as_leader(h));
  case LK_KIND_RATELIMITER: return lk_ratelimiter_get_data(lk_handle_as_ratelimiter(h));
  case LK_KIND_BARRIER: return lk_barrier_get_data(lk_handle_as_barrier(h));
  }
  return NULL;
}

/* The generic close callback: which handle it got, how often. */
typedef struct closed_s {
  lk_handle_t *seen;
  int calls, done;
} closed_t;

static void on_closed(lk_handle_t *h) {
  closed_t *c = lk_handle_get_data(h);
  c->seen = h;
  c->calls++;
  c->done = 1;
}

/* Closes through the handle and checks the callback got this handle once. */
static void close_handle(fx_t *fx, lk_handle_t *h) {
  closed_t c = {NULL, 0, 0};
  ASSERT_OK(lk_handle_set_data(h, &c));
  ASSERT_OK(lk_handle_close(h, on_closed));
  ASSERT_EQ(lk_handle_close(h, on_closed), LK_ECLOSED);
  rt_run_until(&fx->loop, &c.done, 15000);
  ASSERT_EQ(c.calls, 1);
  ASSERT(c.seen == h);
}

static void close_members(fx_t *fx) {
  while (n_members > 0)
    close_handle(fx, lk_lock_handle(members[--n_members]));
}

static void on_lost(lk_handle_t *h, int status, void *arg) { (void)h, (void)status, (void)arg; }

TEST(every_kind_through_its_handle) {
  fx_t fx;
  int i, j, data = 0;
  int64_t v = -1;
  fx_start(&fx, NULL);
  for (i = 0; i < NKINDS; i++) {
    const kind_t *k = &kinds[i];
    lk_handle_t *h = make(&fx, k->kind, "hk");
    ASSERT_EQ(lk_handle_kind(h), k->kind);
    ASSERT_STREQ(lk_handle_kind_name(h), k->prefix);
    ASSERT_STREQ(lk_kind_name(k->kind), k->prefix);
    ASSERT_STREQ(lk_handle_name(h), k->named ? "hk" : NULL);
    ASSERT(lk_handle_client(h) == fx.c);
    ASSERT_OK(lk_handle_set_data(h, &data));
    ASSERT(lk_handle_get_data(h) == &data);
    ASSERT(typed_data(h) == &data); /* the kind's alias reads the same */
    ASSERT_STREQ(lk_handle_error_text(h), "");
    ASSERT_OK(lk_handle_result(h, &v));
    ASSERT_EQ(v, 0);
    ASSERT_EQ(lk_handle_result(h, NULL), LK_EINVAL);
    ASSERT_EQ(lk_handle_is_held(h), k->holds ? 0 : LK_EINVAL);
    ASSERT_EQ(lk_handle_token(h), k->tokens ? 0 : LK_EINVAL);
    if (k->owner)
      ASSERT(strchr(lk_handle_owner(h), ':') != NULL);
    else
      ASSERT_NULL(lk_handle_owner(h));
    ASSERT_EQ(lk_handle_cancel(h), LK_EINVAL); /* nothing pending */
    ASSERT_EQ(lk_handle_set_lost_cb(h, on_lost, NULL), k->lost ? 0 : LK_EINVAL);
    ASSERT_EQ(lk_handle_set_lost_cb(h, NULL, NULL), k->lost ? 0 : LK_EINVAL);
    for (j = 1; j <= NKINDS; j++)
      ASSERT(as_kind(h, j) == (j == k->kind ? (void *)h : NULL));
    close_handle(&fx, h);
  }
  close_members(&fx);
  fx_finish(&fx);
}

TEST(null_handle_is_einval) {
  int64_t v = 7;
  int j;
  ASSERT_EQ(lk_handle_kind(NULL), LK_EINVAL);
  ASSERT_NULL(lk_handle_kind_name(NULL));
  ASSERT_NULL(lk_kind_name(0));
  ASSERT_NULL(lk_kind_name(NKINDS + 1));
  ASSERT_EQ(lk_handle_close(NULL, on_closed), LK_EINVAL);
  ASSERT_EQ(lk_handle_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_handle_set_data(NULL, &v), LK_EINVAL);
  ASSERT_NULL(lk_handle_get_data(NULL));
  ASSERT_NULL(lk_handle_name(NULL));
  ASSERT_NULL(lk_handle_client(NULL));
  ASSERT_STREQ(lk_handle_error_text(NULL), "");
  ASSERT_EQ(lk_handle_result(NULL, &v), LK_EINVAL);
  ASSERT_EQ(v, 7);
  ASSERT_EQ(lk_handle_set_lost_cb(NULL, on_lost, NULL), LK_EINVAL);
  ASSERT_EQ(lk_handle_is_held(NULL), LK_EINVAL);
  ASSERT_EQ(lk_handle_token(NULL), LK_EINVAL);
  ASSERT_NULL(lk_handle_owner(NULL));
  for (j = 1; j <= NKINDS; j++)
    ASSERT_NULL(as_kind(NULL, j));
  ASSERT_NULL(lk_lock_handle(NULL));
}

/* A member of a MultiLock closes only after its group: through the handle
 * as through lk_lock_close. */
TEST(group_member_close_is_busy) {
  fx_t fx;
  lk_handle_t *g;
  fx_start(&fx, NULL);
  g = make(&fx, LK_KIND_MULTILOCK, "hm");
  ASSERT_EQ(lk_handle_close(lk_lock_handle(members[0]), on_closed), LK_EBUSY);
  ASSERT_EQ(lk_lock_close(members[1], NULL), LK_EBUSY);
  close_handle(&fx, g);
  close_members(&fx);
  fx_finish(&fx);
}

/* Takes what kind k's object h can hold, through the typed API (fenced
 * where the kind has tokens); sets up what a waiter of the kind needs to
 * find it taken. */
static void take(fx_t *fx, lk_handle_t *h) {
  op_t d = {0, 0, 0};
  switch (lk_handle_kind(h)) {
  case LK_KIND_LOCK: {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.fenced = 1;
    ASSERT_OK(finish(fx, lk_lock_acquire(lk_handle_as_lock(h), &o, lock_done, &d), &d));
    return;
  }
  case LK_KIND_FAIR: {
    lk_fair_opts_t o;
    lk_fair_opts_init(&o);
    o.fenced = 1;
    ASSERT_OK(finish(fx, lk_fair_acquire(lk_handle_as_fair(h), &o, fair_done, &d), &d));
    return;
  }
  case LK_KIND_RWLOCK: {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.fenced = 1;
    ASSERT_OK(finish(fx, lk_rwlock_acquire(lk_handle_as_rwlock(h), LK_RW_WRITE, &o, rwlock_done, &d),
                     &d));
    return;
  }
  case LK_KIND_SEMAPHORE: {
    lk_semaphore_t *s = lk_handle_as_semaphore(h);
    ASSERT_OK(finish(fx, lk_semaphore_try_set_permits(s, 1, semaphore_done, &d), &d));
    memset(&d, 0, sizeof(d));
    ASSERT_OK(finish(fx, lk_semaphore_try_acquire(s, 1, semaphore_done, &d), &d));
    return;
  }
  case LK_KIND_PSEM: {
    lk_psem_t *p = lk_handle_as_psem(h);
    ASSERT_OK(finish(fx, lk_psem_try_set_permits(p, 1, psem_done, &d), &d));
    memset(&d, 0, sizeof(d));
    ASSERT_OK(finish(fx, lk_psem_acquire(p, NULL, psem_done, &d), &d));
    return;
  }
  case LK_KIND_LATCH:
    ASSERT_OK(finish(fx, lk_latch_try_set_count(lk_handle_as_latch(h), 1, latch_done, &d), &d));
    return;
  case LK_KIND_MULTILOCK:
    ASSERT_OK(finish(fx, lk_multilock_acquire(lk_handle_as_multilock(h), NULL, multilock_done, &d),
                     &d));
    return;
  case LK_KIND_REDLOCK: {
    lk_redlock_opts_t o;
    lk_redlock_opts_init(&o);
    o.fenced = 1;
    ASSERT_OK(finish(fx, lk_redlock_acquire(lk_handle_as_redlock(h), &o, redlock_done, &d), &d));
    return;
  }
  case LK_KIND_LEADER: {
    lk_leader_opts_t o;
    lk_leader_opts_init(&o);
    o.wait_ms = 0;
    ASSERT_OK(finish(fx, lk_leader_campaign(lk_handle_as_leader(h), &o, leader_done, &d), &d));
    return;
  }
  case LK_KIND_RATELIMITER: {
    lk_ratelimiter_t *rl = lk_handle_as_ratelimiter(h);
    lk_ratelimiter_config_t cfg;
    lk_ratelimiter_config_init(&cfg);
    cfg.rate = 1;
    cfg.interval_ms = 600000;
    ASSERT_OK(finish(fx, lk_ratelimiter_try_set_rate(rl, &cfg, ratelimiter_done, &d), &d));
    memset(&d, 0, sizeof(d));
    ASSERT_OK(finish(fx, lk_ratelimiter_try_acquire(rl, 1, ratelimiter_done, &d), &d));
    return;
  }
  case LK_KIND_BARRIER:
    return; /* a lone member of two waits by itself */
  }
  FAIL("no kind %d", lk_handle_kind(h));
}

/* Starts the typed operation that waits for what take() took. */
static int start_wait(lk_handle_t *h, op_t *d) {
  switch (lk_handle_kind(h)) {
  case LK_KIND_LOCK: {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = 60000;
    return lk_lock_acquire(lk_handle_as_lock(h), &o, lock_done, d);
  }
  case LK_KIND_FAIR: {
    lk_fair_opts_t o;
    lk_fair_opts_init(&o);
    o.wait_ms = 60000;
    return lk_fair_acquire(lk_handle_as_fair(h), &o, fair_done, d);
  }
  case LK_KIND_RWLOCK: {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.wait_ms = 60000;
    return lk_rwlock_acquire(lk_handle_as_rwlock(h), LK_RW_WRITE, &o, rwlock_done, d);
  }
  case LK_KIND_SEMAPHORE: {
    lk_semaphore_opts_t o;
    lk_semaphore_opts_init(&o);
    o.wait_ms = 60000;
    return lk_semaphore_acquire(lk_handle_as_semaphore(h), &o, semaphore_done, d);
  }
  case LK_KIND_PSEM: {
    lk_psem_opts_t o;
    lk_psem_opts_init(&o);
    o.wait_ms = 60000;
    return lk_psem_acquire(lk_handle_as_psem(h), &o, psem_done, d);
  }
  case LK_KIND_LATCH:
    return lk_latch_await(lk_handle_as_latch(h), 60000, latch_done, d);
  case LK_KIND_MULTILOCK: {
    lk_multilock_opts_t o;
    lk_multilock_opts_init(&o);
    o.wait_ms = 60000;
    return lk_multilock_acquire(lk_handle_as_multilock(h), &o, multilock_done, d);
  }
  case LK_KIND_REDLOCK: {
    lk_redlock_opts_t o;
    lk_redlock_opts_init(&o);
    o.wait_ms = 60000;
    return lk_redlock_acquire(lk_handle_as_redlock(h), &o, redlock_done, d);
  }
  case LK_KIND_LEADER: {
    lk_leader_opts_t o;
    lk_leader_opts_init(&o);
    o.wait_ms = 60000;
    return lk_leader_campaign(lk_handle_as_leader(h), &o, leader_done, d);
  }
  case LK_KIND_RATELIMITER: {
    lk_ratelimiter_opts_t o;
    lk_ratelimiter_opts_init(&o);
    o.wait_ms = 60000;
    return lk_ratelimiter_acquire(lk_handle_as_ratelimiter(h), &o, ratelimiter_done, d);
  }
  case LK_KIND_BARRIER: {
    lk_barrier_opts_t o;
    lk_barrier_opts_init(&o);
    o.wait_ms = 60000;
    return lk_barrier_enter(lk_handle_as_barrier(h), &o, barrier_done, d);
  }
  }
  return LK_EINVAL;
}

/* The typed token of a kind that has them, to compare with the handle's. */
static int64_t typed_token(lk_handle_t *h) {
  switch (lk_handle_kind(h)) {
  case LK_KIND_LOCK: return lk_lock_token(lk_handle_as_lock(h));
  case LK_KIND_FAIR: return lk_fair_token(lk_handle_as_fair(h));
  case LK_KIND_RWLOCK: return lk_rwlock_token(lk_handle_as_rwlock(h));
  case LK_KIND_REDLOCK: return lk_redlock_token(lk_handle_as_redlock(h));
  case LK_KIND_LEADER: return lk_leader_term(lk_handle_as_leader(h));
  }
  return LK_EINVAL;
}

/* For every kind: a holder takes it through the typed API and the handle
 * sees it held (with its token); a second object's typed wait stays
 * pending while it is taken and ends with LK_ECANCELED when canceled
 * through its handle; both close through their handles. */
TEST(typed_acquire_seen_and_wait_canceled_through_handle) {
  fx_t fx;
  char name[32];
  int i;
  fx_start(&fx, NULL);
  for (i = 0; i < NKINDS; i++) {
    const kind_t *k = &kinds[i];
    lk_handle_t *holder, *waiter;
    op_t d = {0, 0, 0};
    snprintf(name, sizeof(name), "hw-%s", k->prefix);
    holder = make(&fx, k->kind, name);
    waiter = make(&fx, k->kind, name);
    take(&fx, holder);
    ASSERT_EQ(lk_handle_is_held(holder), k->holds ? 1 : LK_EINVAL);
    if (k->tokens) {
      ASSERT_GT(lk_handle_token(holder), 0);
      ASSERT_EQ(lk_handle_token(holder), typed_token(holder));
    }
    ASSERT_OK(start_wait(waiter, &d));
    fx_spin(&fx, 200);
    ASSERT_EQ(d.calls, 0); /* taken: the wait goes on */
    ASSERT_EQ(lk_handle_is_held(waiter), k->holds ? 0 : LK_EINVAL);
    ASSERT_OK(lk_handle_cancel(waiter));
    ASSERT_EQ(lk_handle_cancel(waiter), LK_EINVAL); /* its callback is on its way */
    ASSERT_EQ(finish(&fx, 0, &d), LK_ECANCELED);
    close_handle(&fx, waiter);
    close_handle(&fx, holder);
  }
  close_members(&fx);
  fx_finish(&fx);
}

/* on_lost given through the handle is called with that handle, and a
 * typed setter afterwards takes over (the last one set is called). */
typedef struct lost_s {
  lk_handle_t *seen;
  int calls, status, typed;
} lost_t;

static void on_lost_counted(lk_handle_t *h, int status, void *arg) {
  lost_t *x = arg;
  x->seen = h;
  x->calls++;
  x->status = status;
}

static void on_lost_typed(lk_lock_t *l, int status, void *arg) {
  lost_t *x = arg;
  (void)l, (void)status;
  x->typed++;
}

/* Takes a watchdog-renewed hold on h's lock and deletes its key on the
 * server, so a renewal finds it gone; returns once on_lost told it. */
static void lose_hold(fx_t *fx, lk_handle_t *h, const lost_t *x) {
  ASSERT_OK(sx_acquire(fx, lk_handle_as_lock(h), 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(lk_handle_is_held(h), 1);
  ASSERT_EQ(rt_cmd_int(fx->srv, "DEL %s", lk_handle_name(h)), 1);
  FX_EVENTUALLY(fx, x->calls + x->typed > 0, 10000);
  ASSERT_EQ(lk_handle_is_held(h), 0);
}

TEST(lost_callback_through_handle) {
  fx_t fx;
  lk_client_opts_t o;
  lk_handle_t *h;
  lost_t x;
  memset(&x, 0, sizeof(x));
  lk_client_opts_init(&o);
  o.default_lease_ms = 900; /* renewed every 300 ms */
  fx_start_with(&fx, NULL, &o);
  h = lk_lock_handle(fx_lock(&fx, "hl"));
  ASSERT_OK(lk_handle_set_lost_cb(h, on_lost_counted, &x));
  lose_hold(&fx, h, &x);
  ASSERT_EQ(x.calls, 1);
  ASSERT(x.seen == h);
  ASSERT_EQ(x.status, LK_ELEASELOST);
  ASSERT_EQ(x.typed, 0);
  /* The typed setter replaces it: the next loss goes to the typed one. */
  memset(&x, 0, sizeof(x));
  ASSERT_OK(lk_lock_set_lost_cb(lk_handle_as_lock(h), on_lost_typed, &x));
  lose_hold(&fx, h, &x);
  ASSERT_EQ(x.typed, 1);
  ASSERT_EQ(x.calls, 0);
  close_handle(&fx, h);
  fx_finish(&fx);
}
