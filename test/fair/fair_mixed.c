/* A fair queue shared with Redisson lock() callers (the test-only emulator,
 * test/harness/redisson_emu.h): Redisson's acquisition moves every queued
 * deadline earlier by its wait (fairLockWaitTimeout, 300 000 ms, for lock()),
 * latchkey's waiters' included, and Redisson's scripts drop a head whose
 * deadline passed. A latchkey waiter must keep its place anyway, at any
 * waiter timeout, and Redisson's own waiters must still be judged as
 * Redisson judges them (docs/fair.md, "Queues shared with Redisson
 * clients").
 *
 * The rounds: an initial holder keeps the lock while the participants join
 * in a given order (each one in the queue before the next starts); then each
 * one, in turn, takes the lock, records its label in a side list, holds it a
 * little, releases it and joins again at the tail, for several rounds. The
 * side list must be the joining order repeated, exactly. (A holder lets go
 * only once everyone else who still has a turn is queued again, so the
 * expected order does not depend on how fast a process rejoins.) Redisson
 * participants are forked processes running the emulator's lock() loop
 * (attempt, subscribe, re-poll on a message or the returned ttl); latchkey
 * participants are objects on the test's loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fair_fixture.h"
#include "redisson_emu.h"
#include "workers.h"

#define EMU_UUID "11111111-2222-4333-8444-555555555555"
#define MAX_PARTS 8
#define LEASE_MS 30000

/* Side keys: the grant order, and how many participants are inside. */
#define ORDER_KEY "mixed:order"
#define INSIDE_KEY "mixed:inside"

typedef struct mixed_cfg_s {
  const char *name;
  char holder;       /* 'R' (emulated Redisson tryLock) or 'L' (latchkey) */
  const char *order; /* participants in joining order, 'R' or 'L' each */
  int64_t waiter_timeout_ms; /* latchkey's; 0 = the default */
  int64_t thread_wait_ms;    /* Redisson's fairLockWaitTimeout */
  int rounds;
  int64_t hold_ms;
} mixed_cfg_t;

/* One participant. */
typedef struct part_s {
  const mixed_cfg_t *cfg;
  rt_server_t *srv;
  int port;
  char kind;
  char label[16];
  long long tid; /* Redisson's thread id */
  long long nth;  /* the index of its current grant */
  /* latchkey */
  lk_fair_t *f;
  uv_timer_t hold;
  int64_t hold_end;
  int rounds_done;
  int finished;
  int status; /* first failure, else 0 */
  int inside_ok;
} part_t;

/* Records a grant: nobody else may be inside, and the label goes to the
 * order list. Returns 1 when alone inside; *nth is the grant's index. */
static int record_grant(redisContext *c, const char *label, long long *nth) {
  const char *incr[] = {"INCR", INSIDE_KEY};
  const char *push[] = {"RPUSH", ORDER_KEY, label};
  redisReply *r = rt_emu_command(c, 2, incr, "INCR inside");
  int alone = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
  freeReplyObject(r);
  r = rt_emu_command(c, 3, push, "RPUSH order");
  *nth = r->integer - 1;
  freeReplyObject(r);
  return alone;
}

/* Whether everyone else who has a turn after grant nth is queued: with n
 * participants and `rounds` rounds, that is min(n - 1, grants left). */
static int others_queued(redisContext *c, const mixed_cfg_t *cfg, long long nth) {
  long long n = (long long)strlen(cfg->order), left = cfg->rounds * n - nth - 1;
  char *q = rt_rfair_queue_key(cfg->name);
  const char *argv[] = {"LLEN", q};
  redisReply *r = rt_emu_command(c, 2, argv, "LLEN queue");
  int ok = r->integer >= (left < n - 1 ? left : n - 1);
  freeReplyObject(r);
  free(q);
  return ok;
}

static void record_leave(redisContext *c) {
  const char *decr[] = {"DECR", INSIDE_KEY};
  freeReplyObject(rt_emu_command(c, 2, decr, "DECR inside"));
}

/* ---- Redisson participants: forked, the emulator's lock() ---- */

static void redisson_part(int index, void *arg) {
  part_t *p = arg;
  (void)index;
  redisContext *c = rt_rlock_connect(p->port);
  redisContext *s = rt_rlock_connect(p->port);
  for (int r = 0; r < p->cfg->rounds; r++) {
    if (rt_rfair_lock(c, s, p->cfg->name, EMU_UUID, p->tid, LEASE_MS, p->cfg->thread_wait_ms,
                      rt_scaled_ms(60000)) != 0)
      exit(2);
    if (!record_grant(c, p->label, &p->nth))
      exit(3);
    rt_sleep_ms(p->cfg->hold_ms); /* the work done under the lock */
    {
      /* Bounded: past it, the order check tells what went wrong. */
      int64_t end = rt_now_ms() + rt_scaled_ms(5000);
      while (!others_queued(c, p->cfg, p->nth) && rt_now_ms() < end)
        rt_sleep_ms(1);
    }
    record_leave(c);
    if (rt_rfair_unlock(c, p->cfg->name, EMU_UUID, p->tid) != 1)
      exit(4);
  }
  redisFree(c);
  redisFree(s);
}

/* ---- latchkey participants: objects on the test's loop ---- */

static redisContext *lk_side; /* the test thread's side connection */

static void lk_part_acquire(part_t *p);

static void lk_part_released(lk_fair_t *f, int status, void *arg) {
  part_t *p = arg;
  (void)f;
  if (status != 0 && p->status == 0)
    p->status = status;
  if (status != 0 || ++p->rounds_done == p->cfg->rounds) {
    p->finished = 1;
    return;
  }
  lk_part_acquire(p); /* again, at the tail */
}

static void lk_part_hold_done(uv_timer_t *t) {
  part_t *p = t->data;
  if (!others_queued(lk_side, p->cfg, p->nth) && rt_now_ms() < p->hold_end) {
    /* Look again soon (the loop must run for latchkey participants to
     * join again). Bounded: past it, the order check tells. */
    ASSERT_OK(uv_timer_start(&p->hold, lk_part_hold_done, 2, 0));
    return;
  }
  record_leave(lk_side);
  ASSERT_OK(lk_fair_release(p->f, lk_part_released, p));
}

static void lk_part_acquired(lk_fair_t *f, int status, void *arg) {
  part_t *p = arg;
  (void)f;
  if (status != 0) {
    if (p->status == 0)
      p->status = status;
    p->finished = 1;
    return;
  }
  if (!record_grant(lk_side, p->label, &p->nth))
    p->inside_ok = 0;
  p->hold_end = rt_now_ms() + rt_scaled_ms(5000);
  ASSERT_OK(uv_timer_start(&p->hold, lk_part_hold_done, (uint64_t)p->cfg->hold_ms, 0));
}

static void lk_part_acquire(part_t *p) {
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = rt_scaled_ms(60000);
  o.lease_ms = LEASE_MS;
  if (p->cfg->waiter_timeout_ms > 0)
    o.waiter_timeout_ms = p->cfg->waiter_timeout_ms;
  ASSERT_OK(lk_fair_acquire(p->f, &o, lk_part_acquired, p));
}

static char *emu_owner(long long tid) { return rt_emu_asprintf("%s:%lld", EMU_UUID, tid); }

/* The grants so far, "L1 R1 ..." into out. */
static void read_grants(redisContext *c, char *out, size_t cap) {
  const char *argv[] = {"LRANGE", ORDER_KEY, "0", "-1"};
  redisReply *r = rt_emu_command(c, 4, argv, "LRANGE order");
  out[0] = '\0';
  for (size_t i = 0; i < r->elements; i++)
    if (strlen(out) + strlen(r->element[i]->str) + 2 <= cap) {
      strcat(out, r->element[i]->str);
      strcat(out, " ");
    }
  freeReplyObject(r);
}

/* ---- the rounds ---- */

static void run_mixed(const mixed_cfg_t *cfg) {
  fx_t fx;
  part_t parts[MAX_PARTS];
  rt_worker_t workers[MAX_PARTS];
  int n = (int)strlen(cfg->order), nworkers = 0, nr = 0, nl = 0;
  lk_fair_t *holder = NULL;
  redisContext *ctx;
  char expected[1024] = "", observed[1024] = "";
  ASSERT(n > 0 && n <= MAX_PARTS);
  fx_start(&fx, NULL);
  ctx = rt_rlock_connect(rt_server_port(fx.srv));
  lk_side = rt_rlock_connect(rt_server_port(fx.srv));

  if (cfg->holder == 'L') {
    holder = fx_fair(&fx, cfg->name);
    ASSERT_OK(fsx_acquire(&fx, holder, 0, 60000));
  } else {
    ASSERT_EQ(rt_rfair_try_nowait(ctx, cfg->name, EMU_UUID, 100, 60000, cfg->thread_wait_ms), 1);
  }

  memset(parts, 0, sizeof(parts));
  for (int i = 0; i < n; i++) {
    part_t *p = &parts[i];
    char *owner;
    p->cfg = cfg;
    p->srv = fx.srv;
    p->port = rt_server_port(fx.srv);
    p->kind = cfg->order[i];
    p->inside_ok = 1;
    if (p->kind == 'R') {
      p->tid = ++nr;
      snprintf(p->label, sizeof(p->label), "R%d", nr);
      ASSERT_EQ(rt_worker_start(&workers[nworkers++], i, redisson_part, p), 0);
      owner = emu_owner(p->tid);
    } else {
      ASSERT_EQ(p->kind, 'L');
      snprintf(p->label, sizeof(p->label), "L%d", ++nl);
      p->f = fx_fair(&fx, cfg->name);
      ASSERT_OK(uv_timer_init(&fx.loop, &p->hold));
      p->hold.data = p;
      lk_part_acquire(p);
      owner = rt_emu_asprintf("%s", lk_fair_owner(p->f));
    }
    /* In the queue, at its place, before the next one starts. */
    FX_EVENTUALLY(&fx, fair_lpos(fx.srv, cfg->name, owner) == i, 5000);
    free(owner);
  }
  for (int r = 0; r < cfg->rounds; r++)
    for (int i = 0; i < n; i++) {
      strcat(expected, parts[i].label);
      strcat(expected, " ");
    }

  /* Go. */
  if (holder != NULL)
    ASSERT_OK(fsx_run(&fx, lk_fair_release, holder, NULL));
  else
    ASSERT_EQ(rt_rfair_unlock(ctx, cfg->name, EMU_UUID, 100), 1);
  {
    int64_t end = rt_now_ms() + rt_scaled_ms(60000 + cfg->rounds * n * 2 * cfg->hold_ms);
    for (;;) {
      int lk_running = 0;
      for (int i = 0; i < n; i++)
        if (parts[i].kind == 'L' && !parts[i].finished)
          lk_running++;
      if (lk_running == 0 && rt_workers_wait(workers, nworkers, 0) == 0)
        break;
      if (rt_now_ms() > end) {
        read_grants(ctx, observed, sizeof(observed));
        FAIL("the rounds did not end in time; expected grants %s, got %s", expected, observed);
      }
      fx_spin(&fx, 5);
    }
  }

  read_grants(ctx, observed, sizeof(observed));
  fprintf(stderr, "  grants: %s\n", observed);
  if (strcmp(observed, expected) != 0)
    FAIL("FIFO broken: expected grants %s, got %s", expected, observed);
  for (int i = 0; i < nworkers; i++)
    ASSERT_EQ(rt_worker_exit_code(&workers[i]), 0);
  for (int i = 0; i < n; i++) {
    if (parts[i].kind != 'L')
      continue;
    ASSERT_OK(parts[i].status);
    ASSERT_EQ(parts[i].inside_ok, 1);
    ASSERT_EQ(parts[i].rounds_done, cfg->rounds);
  }
  /* Nothing left behind: no queue, no deadlines, no latchkey waiters. */
  ASSERT_EQ(fair_llen(fx.srv, cfg->name), 0);
  ASSERT_EQ(fair_zcard(fx.srv, cfg->name), 0);
  {
    char *v = fair_waiters_key(cfg->name);
    const char *argv[] = {"EXISTS", v};
    redisReply *r = rt_emu_command(ctx, 2, argv, "EXISTS waiters");
    ASSERT_EQ(r->integer, 0);
    freeReplyObject(r);
    free(v);
  }
  for (int i = 0; i < n; i++)
    if (parts[i].kind == 'L') {
      uv_close((uv_handle_t *)&parts[i].hold, NULL);
      fx_close_fair(&fx, parts[i].f);
    }
  if (holder != NULL)
    fx_close_fair(&fx, holder);
  redisFree(ctx);
  redisFree(lk_side);
  lk_side = NULL;
  fx_finish(&fx);
}

#define ROUNDS 4
#define HOLD_MS 60

/* Redisson first: a Redisson holder and two Redisson lock() waiters ahead of
 * two latchkey waiters; every Redisson grant moves the latchkey waiters'
 * deadlines 5 minutes earlier. */
TEST(redisson_first_then_latchkey_keeps_fifo_at_default_waiter_timeout) {
  mixed_cfg_t c = {"mx1", 'R', "RRLL", 0, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

TEST(redisson_first_then_latchkey_keeps_fifo_at_301000_waiter_timeout) {
  mixed_cfg_t c = {"mx2", 'R', "RRLL", 301000, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

/* latchkey first: a latchkey holder and two latchkey waiters ahead of two
 * Redisson lock() waiters. */
TEST(latchkey_first_then_redisson_keeps_fifo_at_default_waiter_timeout) {
  mixed_cfg_t c = {"mx3", 'L', "LLRR", 0, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

TEST(latchkey_first_then_redisson_keeps_fifo_at_301000_waiter_timeout) {
  mixed_cfg_t c = {"mx4", 'L', "LLRR", 301000, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

/* Interleaved, several per side: R1 L1 R2 L2 L3. L2 and L3 see two Redisson
 * grants (10 minutes of moved deadlines) between R1's grant and their
 * turn. */
TEST(interleaved_waiters_keep_fifo_at_default_waiter_timeout) {
  mixed_cfg_t c = {"mx5", 'L', "RLRLL", 0, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

TEST(interleaved_waiters_keep_fifo_at_301000_waiter_timeout) {
  mixed_cfg_t c = {"mx6", 'R', "RLRLL", 301000, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

/* A short latchkey waiter timeout (refreshes every 333 ms) and the other
 * interleaving, latchkey at both ends. */
TEST(interleaved_waiters_keep_fifo_at_a_short_waiter_timeout) {
  mixed_cfg_t c = {"mx7", 'R', "LRLRL", 1000, RT_RFAIR_DEFAULT_WAIT_MS, ROUNDS, HOLD_MS};
  run_mixed(&c);
}

/* Redisson configured with a shorter fairLockWaitTimeout (60 s): its grants
 * move the deadlines by less than latchkey allows for. */
TEST(interleaved_waiters_keep_fifo_with_a_configured_redisson_wait) {
  mixed_cfg_t c = {"mx8", 'L', "RLLRL", 0, 60000, ROUNDS, HOLD_MS};
  run_mixed(&c);
}
