/* Fencing tokens across a restart without persistence (issue 15, finding 4):
 * several clients (each its own token memory, as separate processes have)
 * take a fenced lock in turn, the server comes back empty, and the next
 * grant, to a client that has seen nothing yet, must carry a token above
 * every token handed out before. Then the earlier clients go on, with no
 * LK_ETOKEN, tokens still strictly increasing. Once immediately, once with
 * the server down for a while (an acquire waiting through it), for the
 * reentrant lock, the fair lock and both sides of the read/write lock, and
 * for RedLock's quorum token when every master restarted empty.
 *
 * Before the counter was seeded when absent, the new client got token 1. */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "lk_fixture.h"
#include "multi_fixture.h"
#include "redisson_emu.h"

enum { P_LOCK, P_FAIR, P_RWLOCK };

#define OLD_CLIENTS 3
#define ROUNDS 3
/* How long the delayed restart keeps the server down (scaled). */
#define DOWN_MS 800

typedef struct op_s {
  int done, calls, status;
} op_t;

static void op_done(op_t *s, int status) {
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
}
static void lock_cb(lk_lock_t *l, int status, void *arg) {
  (void)l;
  op_done(arg, status);
}
static void fair_cb(lk_fair_t *f, int status, void *arg) {
  (void)f;
  op_done(arg, status);
}
static void rw_cb(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw;
  op_done(arg, status);
}
static void lock_closed(lk_lock_t *l) { *(int *)lk_lock_get_data(l) = 1; }
static void fair_closed(lk_fair_t *f) { *(int *)lk_fair_get_data(f) = 1; }
static void rw_closed(lk_rwlock_t *rw) { *(int *)lk_rwlock_get_data(rw) = 1; }

/* One fenced object of kind p on its own client. */
typedef struct fobj_s {
  int p;
  lk_client_t *c;
  void *o;
} fobj_t;

static void fobj_new(fx_t *fx, fobj_t *f, int p, const char *name) {
  memset(f, 0, sizeof *f);
  f->p = p;
  f->c = fx_direct_client(fx);
  if (p == P_LOCK)
    ASSERT_OK(lk_lock_new(f->c, name, (lk_lock_t **)&f->o));
  else if (p == P_FAIR)
    ASSERT_OK(lk_fair_new(f->c, name, (lk_fair_t **)&f->o));
  else
    ASSERT_OK(lk_rwlock_new(f->c, name, (lk_rwlock_t **)&f->o));
}

/* Starts a fenced acquire (write: the write side of a read/write lock). */
static void fobj_start(fobj_t *f, int write, int64_t wait_ms, op_t *s) {
  memset(s, 0, sizeof *s);
  if (f->p == P_LOCK) {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = wait_ms;
    o.fenced = 1;
    ASSERT_OK(lk_lock_acquire(f->o, &o, lock_cb, s));
  } else if (f->p == P_FAIR) {
    lk_fair_opts_t o;
    lk_fair_opts_init(&o);
    o.wait_ms = wait_ms;
    o.fenced = 1;
    ASSERT_OK(lk_fair_acquire(f->o, &o, fair_cb, s));
  } else {
    lk_rwlock_opts_t o;
    lk_rwlock_opts_init(&o);
    o.wait_ms = wait_ms;
    o.fenced = 1;
    ASSERT_OK(lk_rwlock_acquire(f->o, write ? LK_RW_WRITE : LK_RW_READ, &o, rw_cb, s));
  }
}

static int64_t fobj_token(const fobj_t *f) {
  return f->p == P_LOCK   ? lk_lock_token(f->o)
         : f->p == P_FAIR ? lk_fair_token(f->o)
                          : lk_rwlock_token(f->o);
}

static void fobj_release(fx_t *fx, fobj_t *f, int write) {
  op_t s;
  memset(&s, 0, sizeof s);
  if (f->p == P_LOCK)
    ASSERT_OK(lk_lock_release(f->o, lock_cb, &s));
  else if (f->p == P_FAIR)
    ASSERT_OK(lk_fair_release(f->o, fair_cb, &s));
  else
    ASSERT_OK(lk_rwlock_release(f->o, write ? LK_RW_WRITE : LK_RW_READ, rw_cb, &s));
  rt_run_until(&fx->loop, &s.done, 15000);
  ASSERT_OK(s.status);
}

static void fobj_close(fx_t *fx, fobj_t *f) {
  int closed = 0;
  if (f->p == P_LOCK) {
    lk_lock_set_data(f->o, &closed);
    ASSERT_OK(lk_lock_close(f->o, lock_closed));
  } else if (f->p == P_FAIR) {
    lk_fair_set_data(f->o, &closed);
    ASSERT_OK(lk_fair_close(f->o, fair_closed));
  } else {
    lk_rwlock_set_data(f->o, &closed);
    ASSERT_OK(lk_rwlock_close(f->o, rw_closed));
  }
  rt_run_until(&fx->loop, &closed, 10000);
  fx_close_direct_client(fx, f->c);
}

typedef struct scene_s {
  fx_t fx;
  int p;
  const char *name;
  fobj_t old[OLD_CLIENTS];
  int64_t highest; /* the highest token handed out so far */
  int grants;
} scene_t;

/* The read/write lock alternates sides; the others have one. */
static int side_of(const scene_t *sc, int k) { return sc->p == P_RWLOCK && k % 2 == 1; }

/* Checks a grant's token against every earlier one, then releases. */
static void granted(scene_t *sc, fobj_t *f, int write, const op_t *s, const char *who) {
  ASSERT_EQ(s->status, 0);
  int64_t t = fobj_token(f);
  if (t <= sc->highest)
    FAIL("%s: token %" PRId64 " after %" PRId64 " had been handed out (%d grants before)", who,
         t, sc->highest, sc->grants);
  sc->highest = t;
  sc->grants++;
  fobj_release(&sc->fx, f, write);
}

static void take(scene_t *sc, fobj_t *f, int write, const char *who) {
  op_t s;
  fobj_start(f, write, 0, &s);
  rt_run_until(&sc->fx.loop, &s.done, 15000);
  granted(sc, f, write, &s, who);
}

static long long counter(scene_t *sc) {
  char *v = rt_cmd_str(sc->fx.srv, "GET redisson_lock_token:{%s}", sc->name);
  long long n = v != NULL ? strtoll(v, NULL, 10) : 0;
  free(v);
  return n;
}

static void scene_begin(scene_t *sc, int p, const char *name) {
  memset(sc, 0, sizeof *sc);
  sc->p = p;
  sc->name = name;
  fx_start_server(&sc->fx, NULL); /* no persistence: a restart comes back empty */
  for (int i = 0; i < OLD_CLIENTS; i++)
    fobj_new(&sc->fx, &sc->old[i], p, name);
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < OLD_CLIENTS; i++)
      take(sc, &sc->old[i], side_of(sc, r * OLD_CLIENTS + i), "before the restart");
  ASSERT_EQ(counter(sc), sc->highest);
}

/* After the restart: every earlier client takes it again, no LK_ETOKEN, the
 * tokens still above everything before; the counter holds the last one. */
static void scene_end(scene_t *sc, fobj_t *fresh) {
  for (int i = 0; i < OLD_CLIENTS; i++)
    take(sc, &sc->old[i], side_of(sc, i + 1), "an earlier client after the restart");
  take(sc, fresh, side_of(sc, 0), "the new client again");
  ASSERT_EQ(counter(sc), sc->highest);
  printf("%d grants, highest token %" PRId64 "\n", sc->grants, sc->highest);
  fobj_close(&sc->fx, fresh);
  for (int i = 0; i < OLD_CLIENTS; i++)
    fobj_close(&sc->fx, &sc->old[i]);
  fx_finish(&sc->fx);
}

static void immediate_restart(int p, const char *name) {
  scene_t sc;
  fobj_t fresh;
  scene_begin(&sc, p, name);
  int64_t before = sc.highest;
  ASSERT_OK(rt_server_restart(sc.fx.srv));
  ASSERT_EQ(counter(&sc), 0); /* the restart lost the counter */
  fobj_new(&sc.fx, &fresh, p, name);
  take(&sc, &fresh, side_of(&sc, 1), "a new client after an empty restart");
  printf("tokens: %" PRId64 " before the restart, %" PRId64 " after\n", before, sc.highest);
  scene_end(&sc, &fresh);
}

/* The server stays down DOWN_MS while a new client's acquire waits; it is
 * granted once the server is back (empty), with a token above all before. */
static void delayed_restart(int p, const char *name) {
  scene_t sc;
  fobj_t fresh;
  op_t s;
  scene_begin(&sc, p, name);
  int64_t before = sc.highest;
  rt_server_kill(sc.fx.srv, SIGKILL);
  fobj_new(&sc.fx, &fresh, p, name);
  int64_t down = rt_scaled_ms(DOWN_MS);
  fobj_start(&fresh, side_of(&sc, 1), down + rt_scaled_ms(10000), &s);
  fx_spin(&sc.fx, down); /* the fault itself: the server is down this long */
  ASSERT_EQ(s.done, 0);  /* the wait budget outlasts the outage */
  ASSERT_OK(rt_server_restart(sc.fx.srv));
  rt_run_until(&sc.fx.loop, &s.done, 15000 + down);
  granted(&sc, &fresh, side_of(&sc, 1), &s, "a new client waiting through a delayed restart");
  printf("tokens: %" PRId64 " before the restart, %" PRId64 " after\n", before, sc.highest);
  scene_end(&sc, &fresh);
}

TEST(lock_tokens_increase_across_an_empty_restart) { immediate_restart(P_LOCK, "tr-lock"); }
TEST(lock_tokens_increase_across_a_delayed_empty_restart) { delayed_restart(P_LOCK, "tr-lock-d"); }
TEST(fair_tokens_increase_across_an_empty_restart) { immediate_restart(P_FAIR, "tr-fair"); }
TEST(fair_tokens_increase_across_a_delayed_empty_restart) { delayed_restart(P_FAIR, "tr-fair-d"); }
TEST(rwlock_tokens_increase_across_an_empty_restart) { immediate_restart(P_RWLOCK, "tr-rw"); }
TEST(rwlock_tokens_increase_across_a_delayed_empty_restart) {
  delayed_restart(P_RWLOCK, "tr-rw-d");
}

/* Redisson RFencedLock INCRs the same counter and nothing else: it continues
 * from a counter latchkey seeded, before and after an empty restart, and
 * latchkey continues from Redisson's tokens. */
TEST(lock_redisson_fenced_lock_continues_the_seeded_counter) {
  scene_t sc;
  fobj_t fresh;
  long long t = 0;
  scene_begin(&sc, P_LOCK, "tr-rsn");
  redisContext *rc = rt_rlock_connect(rt_server_port(sc.fx.srv));
  ASSERT_EQ(rt_rlock_try_fenced(rc, "tr-rsn", "emu", 1, 30000, &t), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(t, sc.highest + 1);
  sc.highest = t;
  ASSERT_EQ(rt_rlock_unlock(rc, "tr-rsn", "emu", 1), 1);
  take(&sc, &sc.old[0], 0, "latchkey after Redisson");
  redisFree(rc);
  ASSERT_OK(rt_server_restart(sc.fx.srv));
  fobj_new(&sc.fx, &fresh, P_LOCK, "tr-rsn");
  take(&sc, &fresh, 0, "a new client after an empty restart");
  rc = rt_rlock_connect(rt_server_port(sc.fx.srv));
  ASSERT_EQ(rt_rlock_try_fenced(rc, "tr-rsn", "emu", 1, 30000, &t), RT_RLOCK_ACQUIRED);
  ASSERT_EQ(t, sc.highest + 1);
  sc.highest = t;
  ASSERT_EQ(rt_rlock_unlock(rc, "tr-rsn", "emu", 1), 1);
  redisFree(rc);
  scene_end(&sc, &fresh);
}

/* RedLock: every master restarts empty; a process that has not seen the
 * restarts (so no master abstains) takes a quorum token above every quorum
 * token before: the masters' counters restart from their clocks. */
TEST(redlock_tokens_increase_when_every_master_restarted_empty) {
  enum { MASTERS = 3, RL_ROUNDS = 5 };
  mfx_t m;
  lk_client_t *fresh[MASTERS];
  lk_redlock_t *rl;
  lk_redlock_opts_t o;
  mx_t s;
  int64_t highest = 0;
  mfx_start(&m, MASTERS, NULL); /* no persistence */
  rl = mx_rl_new(&m, m.c, "tr-rl", NULL);
  lk_redlock_opts_init(&o);
  o.fenced = 1;
  o.lease_ms = 10000;
  o.node_timeout_ms = rt_scaled_ms(300);
  for (int r = 0; r < RL_ROUNDS; r++) {
    ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
    ASSERT_GT(s.token, highest);
    highest = s.token;
    ASSERT_OK(mx_rl_release(&m, rl));
  }
  mx_rl_close(&m, rl);
  for (int i = 0; i < MASTERS; i++)
    ASSERT_OK(rt_server_restart(m.srv[i]));
  mfx_clients(&m, fresh, 0);
  rl = mx_rl_new(&m, fresh, "tr-rl", NULL);
  ASSERT_OK(mx_rl_acquire_opts(&m, rl, &o, &s));
  if (s.token <= highest)
    FAIL("quorum token %" PRId64 " after %" PRId64 " had been handed out", s.token, highest);
  printf("quorum tokens: %" PRId64 " before the restarts, %" PRId64 " after\n", highest, s.token);
  ASSERT_OK(mx_rl_release(&m, rl));
  mx_rl_close(&m, rl);
  mfx_close_set(&m, fresh);
  mfx_finish(&m);
}
