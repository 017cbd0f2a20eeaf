/* Every primitive on a 3-master + 3-replica cluster (issue 14): fair lock,
 * read/write lock, both semaphores, the countdown latch and fencing tokens,
 * each on names whose slots the three masters own, driven by two clients
 * seeded at different nodes (as two processes would be). Every key and
 * channel a primitive derives from a name must hash to the name's slot,
 * or the server refuses the script with CROSSSLOT; the tests check where
 * the keys land, on the slot's master and nowhere else.
 *
 * Holds use explicit leases: the watchdog on a cluster is
 * cluster_watchdog.c's subject. */
#include <stdio.h>
#include <stdlib.h>

#include "cluster_fixture.h"
#include "fair_fixture.h"
#include "latch_fixture.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

#define LEASE 30000
#define WAIT 20000

/* A second client, seeded at a node other than the fixture client's (a
 * replica when there is one: its writes come back MOVED). */
static lk_client_t *second_client(cfx_t *f, lk_client_opts_t *o) {
  int seed = rt_cluster_replica_of(f->cl, f->masters[2]);
  return cfx_client(f, seed >= 0 ? seed : f->masters[2], o);
}

/* GET key on node m as a number (0 when absent). */
static long long get_num(cfx_t *f, int m, const char *key) {
  char *v = rt_cmd_str(cfx_srv(f, m), "GET %s", key);
  long long n = v ? atoll(v) : 0;
  free(v);
  return n;
}

/* ---- fair lock ---------------------------------------------------------------------------- */

typedef struct fair_waiter_s {
  int index;
  int queued;
  fsx_t acq;
  int64_t token;
  int *order, *n_order;
  int released;
} fair_waiter_t;

static void fw_on_queued(lk_fair_t *fl, int status, void *arg) {
  fair_waiter_t *w = arg;
  (void)fl;
  ASSERT_OK(status);
  w->queued++;
}

static void fw_on_released(lk_fair_t *fl, int status, void *arg) {
  fair_waiter_t *w = arg;
  (void)fl;
  ASSERT_OK(status);
  w->released = 1;
}

/* Its turn: note the order and the token, hand the lock on at once. */
static void fw_on_acquired(lk_fair_t *fl, int status, void *arg) {
  fair_waiter_t *w = arg;
  fsx_cb(fl, status, &w->acq);
  if (status != 0)
    return; /* the test checks it */
  w->order[(*w->n_order)++] = w->index;
  w->token = lk_fair_token(fl);
  ASSERT_OK(lk_fair_release(fl, fw_on_released, w));
}

static void fair_start_fenced(lk_fair_t *fl, int64_t wait_ms, lk_fair_cb cb, void *arg) {
  lk_fair_opts_t o;
  lk_fair_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = LEASE;
  o.fenced = 1;
  ASSERT_OK(lk_fair_acquire(fl, &o, cb, arg));
}

/* On each master: a holder and four waiters of two clients queue on one
 * name; the queue and deadline keys sit on that master, in arrival order;
 * the release hands the lock down the queue in that order, each fencing
 * token larger than the one before, and nothing is left afterwards. */
TEST(fair_lock_keeps_fifo_on_every_master) {
  enum { N = 4 };
  cfx_t f;
  char names[3][64];
  cfx_start(&f, 0, NULL);
  lk_client_t *c2 = second_client(&f, NULL);
  cfx_names(&f, "cl-fair-", names);
  for (int m = 0; m < 3; m++) {
    const char *name = names[m];
    int node = f.masters[m];
    rt_server_t *srv = cfx_srv(&f, node);
    int order[N], n_order = 0;
    fair_waiter_t ws[N];
    lk_fair_t *w[N];
    lk_fair_t *h = fx_fair(&f.fx, name);
    fsx_t hs;
    memset(&hs, 0, sizeof hs);
    fair_start_fenced(h, 0, fsx_cb, &hs);
    rt_run_until(&f.fx.loop, &hs.done, 15000);
    ASSERT_OK(hs.status);
    int64_t prev = lk_fair_token(h);
    ASSERT_GT(prev, 0);
    for (int i = 0; i < N; i++) {
      ASSERT_OK(lk_fair_new(i % 2 ? c2 : f.fx.c, name, &w[i]));
      memset(&ws[i], 0, sizeof ws[i]);
      ws[i].index = i;
      ws[i].order = order;
      ws[i].n_order = &n_order;
      ASSERT_OK(lk_fair_set_queue_cb(w[i], fw_on_queued, &ws[i]));
      fair_start_fenced(w[i], WAIT, fw_on_acquired, &ws[i]);
      rt_run_until(&f.fx.loop, &ws[i].queued, 5000);
      ASSERT_EQ(lk_fair_position(w[i]), i);
    }
    /* Redisson's layout, every key under the name's hash tag. */
    char *qk = fair_queue_key(name), *tk = fair_timeout_key(name);
    char token_key[256];
    snprintf(token_key, sizeof token_key, "redisson_lock_token:{%s}", name);
    cfx_assert_key_on(&f, name, name, node);
    cfx_assert_key_on(&f, qk, name, node);
    cfx_assert_key_on(&f, tk, name, node);
    cfx_assert_key_on(&f, token_key, name, node);
    for (int i = 0; i < N; i++) {
      char *ch = fair_channel_of(w[i]);
      cfx_assert_beside(&f, ch, name, node);
      free(ch);
    }
    free(qk);
    free(tk);
    ASSERT_EQ(fair_llen(srv, name), N);
    ASSERT_EQ(fair_zcard(srv, name), N);
    for (int i = 0; i < N; i++)
      ASSERT_EQ(fair_lpos(srv, name, lk_fair_owner(w[i])), i);

    ASSERT_OK(fsx_run(&f.fx, lk_fair_release, h, NULL));
    for (int i = 0; i < N; i++) {
      rt_run_until(&f.fx.loop, &ws[i].acq.done, 10000);
      ASSERT_OK(ws[i].acq.status);
      rt_run_until(&f.fx.loop, &ws[i].released, 10000);
    }
    ASSERT_EQ(n_order, N);
    for (int i = 0; i < N; i++) {
      ASSERT_EQ(order[i], i);
      ASSERT_GT(ws[order[i]].token, prev);
      prev = ws[order[i]].token;
    }
    ASSERT_EQ(get_num(&f, node, token_key), prev);
    ASSERT_EQ(fair_llen(srv, name), 0);
    ASSERT_EQ(fair_zcard(srv, name), 0);
    ASSERT_EQ(cfx_exists(&f, node, name), 0);
    for (int i = 0; i < N; i++)
      fx_close_fair(&f.fx, w[i]);
    fx_close_fair(&f.fx, h);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- read/write lock ---------------------------------------------------------------------- */

static void rw_start_fenced(lk_rwlock_t *rw, lk_rwlock_side_t side, int64_t wait_ms, sx_t *s) {
  lk_rwlock_opts_t o;
  memset(s, 0, sizeof *s);
  lk_rwlock_opts_init(&o);
  o.wait_ms = wait_ms;
  o.lease_ms = LEASE;
  o.fenced = side == LK_RW_WRITE;
  ASSERT_OK(lk_rwlock_acquire(rw, side, &o, rw_cb, s));
}

/* A try-once acquire of side (fenced when it writes), run to its end: its
 * status. */
static int rw_try(cfx_t *f, lk_rwlock_t *rw, lk_rwlock_side_t side) {
  sx_t s;
  rw_start_fenced(rw, side, 0, &s);
  rt_run_until(&f->fx.loop, &s.done, 15000);
  return s.status;
}

/* "{NAME}:UUID:TID:rwlock_timeout:i", the lease key of read hold i. */
static void rw_timeout_key(lk_rwlock_t *rw, int i, char *out, size_t cap) {
  snprintf(out, cap, "{%s}:%s:rwlock_timeout:%d", lk_rwlock_name(rw), lk_rwlock_owner(rw), i);
}

/* On each master: two readers of two clients hold together (one of them
 * twice), their per-hold lease keys beside the name; a writer is kept out
 * (at once, and while it waits) until the last reader leaves, then gets in
 * with a larger fencing token than the previous writer; a reader is kept
 * out while it writes. */
TEST(rwlock_readers_share_and_writers_are_excluded_on_every_master) {
  cfx_t f;
  char names[3][64];
  cfx_start(&f, 0, NULL);
  lk_client_t *c2 = second_client(&f, NULL);
  cfx_names(&f, "cl-rw-", names);
  for (int m = 0; m < 3; m++) {
    const char *name = names[m];
    int node = f.masters[m];
    char key[256];
    lk_rwlock_t *r1 = fx_rwlock(&f.fx, name), *r2 = NULL, *wr = NULL;
    ASSERT_OK(lk_rwlock_new(c2, name, &r2));
    ASSERT_OK(lk_rwlock_new(c2, name, &wr));
    sx_t sw;

    /* A first writer, for a token to compare with. */
    ASSERT_OK(rw_try(&f, wr, LK_RW_WRITE));
    int64_t t0 = lk_rwlock_token(wr);
    ASSERT_GT(t0, 0);
    ASSERT_OK(rw_release(&f.fx, wr, RW_W, NULL));

    ASSERT_OK(rw_try(&f, r1, LK_RW_READ));
    ASSERT_OK(rw_try(&f, r1, LK_RW_READ));
    ASSERT_OK(rw_try(&f, r2, LK_RW_READ));
    ASSERT_EQ(lk_rwlock_hold_count(r1, RW_R), 2);
    ASSERT_EQ(lk_rwlock_hold_count(r2, RW_R), 1);
    cfx_assert_key_on(&f, name, name, node);
    for (int i = 1; i <= 2; i++) {
      rw_timeout_key(r1, i, key, sizeof key);
      cfx_assert_key_on(&f, key, name, node);
    }
    rw_timeout_key(r2, 1, key, sizeof key);
    cfx_assert_key_on(&f, key, name, node);
    char ch[96];
    snprintf(ch, sizeof ch, "redisson_rwlock:{%s}", name);
    cfx_assert_beside(&f, ch, name, node);

    /* Readers in: a writer is refused at once, then waits. */
    ASSERT_EQ(rw_try(&f, wr, LK_RW_WRITE), LK_ETIMEDOUT);
    rw_start_fenced(wr, LK_RW_WRITE, WAIT, &sw);
    ASSERT_OK(rw_release(&f.fx, r1, RW_R, NULL));
    ASSERT_OK(rw_release(&f.fx, r2, RW_R, NULL));
    fx_spin(&f.fx, 50);
    ASSERT_EQ(sw.done, 0); /* r1 still reads */
    ASSERT_OK(rw_release(&f.fx, r1, RW_R, NULL));
    rt_run_until(&f.fx.loop, &sw.done, 10000);
    ASSERT_OK(sw.status);
    ASSERT_GT(lk_rwlock_token(wr), t0);
    snprintf(key, sizeof key, "redisson_lock_token:{%s}", name);
    cfx_assert_key_on(&f, key, name, node);
    ASSERT_EQ(get_num(&f, node, key), lk_rwlock_token(wr));
    /* Its read lease keys went with the reads. */
    snprintf(key, sizeof key, "{%s}:*rwlock_timeout*", name);
    ASSERT_EQ(cfx_keys(&f, node, key, NULL, 0), 0);

    /* The writer in: a reader is refused. */
    ASSERT_EQ(rw_try(&f, r1, LK_RW_READ), LK_ETIMEDOUT);
    ASSERT_OK(rw_release(&f.fx, wr, RW_W, NULL));
    ASSERT_EQ(cfx_exists(&f, node, name), 0);
    fx_close_rwlock(&f.fx, r1);
    fx_close_rwlock(&f.fx, r2);
    fx_close_rwlock(&f.fx, wr);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- semaphores --------------------------------------------------------------------------- */

/* On each master: a counting semaphore of 3 permits shared by two clients
 * (2 + 2 asked: the second waits for the first's release), its request
 * records beside the name; and a permit-expirable one of 2 (1 + 2 asked),
 * its lease zset beside the name. Permits are conserved throughout: what
 * is available plus what is held is always the total. */
TEST(semaphores_conserve_permits_on_every_master) {
  cfx_t f;
  char names[3][64], pnames[3][64];
  cfx_start(&f, 0, NULL);
  lk_client_t *c2 = second_client(&f, NULL);
  cfx_names(&f, "cl-sem-", names);
  cfx_names(&f, "cl-psem-", pnames);
  for (int m = 0; m < 3; m++) {
    const char *name = names[m];
    int node = f.masters[m];
    char key[256], first[256];
    int64_t res = 0;
    sx_t xa, xb;
    lk_semaphore_t *a = fx_sem(&f.fx, name), *b = NULL;
    ASSERT_OK(lk_semaphore_new(c2, name, &b));
    ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_try_set_permits, a, 3, &res));
    ASSERT_EQ(res, 1);
    ASSERT_EQ(sem_acquire_in(&f.fx.loop, a, 2, 0, &xa), 0);
    sem_start_acquire(b, 2, WAIT, &xb);
    fx_spin(&f.fx, 50);
    ASSERT_EQ(xb.done, 0);
    cfx_assert_key_on(&f, name, name, node);
    ASSERT_EQ(get_num(&f, node, name), 1);
    /* The request records (resends applied at most once) share the slot. */
    snprintf(key, sizeof key, "latchkey_semaphore_req:{%s}:*", name);
    ASSERT_GE(cfx_keys(&f, node, key, first, sizeof first), 1);
    cfx_assert_key_on(&f, first, name, node);
    snprintf(key, sizeof key, "redisson_sc:{%s}", name);
    cfx_assert_beside(&f, key, name, node);

    ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_release, a, 2, NULL));
    rt_run_until(&f.fx.loop, &xb.done, 10000);
    ASSERT_OK(xb.status);
    ASSERT_EQ(lk_semaphore_held(b), 2);
    ASSERT_EQ(get_num(&f, node, name), 1);
    ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_release, b, 2, NULL));
    ASSERT_OK(sem_run(&f.fx, lk_semaphore_available, a, &res));
    ASSERT_EQ(res, 3);
    fx_close_sem(&f.fx, a);
    fx_close_sem(&f.fx, b);

    /* Permit-expirable. */
    const char *pname = pnames[m];
    lk_psem_t *p = fx_psem(&f.fx, pname), *q = NULL;
    ASSERT_OK(lk_psem_new(c2, pname, &q));
    ASSERT_OK(psem_run_n(&f.fx, lk_psem_try_set_permits, p, 2, &res));
    ASSERT_EQ(res, 1);
    ASSERT_OK(psem_acquire(&f.fx, p, 1, 0, LEASE));
    ASSERT_EQ(lk_psem_permit_count(p), 1);
    psem_start_acquire(q, 2, WAIT, LEASE, &xb);
    fx_spin(&f.fx, 50);
    ASSERT_EQ(xb.done, 0);
    snprintf(key, sizeof key, "{%s}:timeout", pname);
    cfx_assert_key_on(&f, key, pname, node);
    cfx_assert_key_on(&f, pname, pname, node);
    ASSERT_EQ(rt_cmd_int(cfx_srv(&f, node), "ZCARD %s", key), 1);
    ASSERT_EQ(get_num(&f, node, pname), 1);
    snprintf(key, sizeof key, "redisson_sc:{%s}", pname);
    cfx_assert_beside(&f, key, pname, node);
    ASSERT_OK(psem_run_id(&f.fx, lk_psem_release, p, NULL, &res));
    ASSERT_EQ(res, 1);
    rt_run_until(&f.fx.loop, &xb.done, 10000);
    ASSERT_OK(xb.status);
    ASSERT_EQ(lk_psem_permit_count(q), 2);
    ASSERT_OK(psem_run(&f.fx, lk_psem_available, p, &res));
    ASSERT_EQ(res, 0);
    ASSERT_OK(psem_run(&f.fx, lk_psem_acquired, p, &res));
    ASSERT_EQ(res, 2);
    ASSERT_OK(psem_run_id(&f.fx, lk_psem_release, q, NULL, &res));
    ASSERT_EQ(res, 2);
    ASSERT_OK(psem_run(&f.fx, lk_psem_available, p, &res));
    ASSERT_EQ(res, 2);
    fx_close_psem(&f.fx, p);
    fx_close_psem(&f.fx, q);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- countdown latch ---------------------------------------------------------------------- */

/* On each master: an await of one client is released by two count_downs
 * from another, woken by the opening message (re-polls are 30 s apart, so
 * the message is what wakes it in time); the latch's request records sit
 * beside the name. */
TEST(latch_await_is_released_by_another_clients_count_down) {
  cfx_t f;
  char names[3][64];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 30000;
  cfx_start(&f, 0, &o);
  lk_client_t *c2 = second_client(&f, NULL);
  cfx_names(&f, "cl-latch-", names);
  for (int m = 0; m < 3; m++) {
    const char *name = names[m];
    int node = f.masters[m];
    char key[256], first[256];
    int64_t res = 0;
    lx_t aw;
    lk_latch_t *waiter = lx_new(&f.fx, name, 0), *counter = NULL;
    ASSERT_OK(lk_latch_new(c2, name, NULL, &counter));
    ASSERT_OK(lx_set(&f.fx.loop, waiter, 2, &res));
    ASSERT_EQ(res, 1);
    cfx_assert_key_on(&f, name, name, node);
    lx_await_start(waiter, WAIT, &aw);
    snprintf(key, sizeof key, "redisson_countdownlatch__channel__{%s}", name);
    cfx_assert_beside(&f, key, name, node);
    cfx_wait_subscribers(&f, key, 1);
    ASSERT_OK(lx_run(&f.fx.loop, lk_latch_count_down, counter, &res));
    ASSERT_EQ(res, 1);
    fx_spin(&f.fx, 50);
    ASSERT_EQ(aw.done, 0);
    uint64_t t0 = uv_hrtime();
    ASSERT_OK(lx_run(&f.fx.loop, lk_latch_count_down, counter, &res));
    ASSERT_EQ(res, 0);
    rt_run_until(&f.fx.loop, &aw.done, 10000);
    ASSERT_OK(aw.status);
    ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_scaled_ms(2000));
    ASSERT_EQ(cfx_exists(&f, node, name), 0);
    snprintf(key, sizeof key, "latchkey_latch_req:{%s}:*", name);
    ASSERT_GE(cfx_keys(&f, node, key, first, sizeof first), 1);
    cfx_assert_key_on(&f, first, name, node);
    lx_close(&f.fx.loop, waiter);
    lx_close(&f.fx.loop, counter);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- fencing tokens ----------------------------------------------------------------------- */

/* On each master: three fenced acquisitions of a lock, alternating between
 * two clients, get strictly increasing tokens from a counter beside the
 * name on that master. (Fair and read/write tokens are checked with their
 * primitives above.) */
TEST(lock_fencing_tokens_increase_on_every_master) {
  cfx_t f;
  char names[3][64];
  cfx_start(&f, 0, NULL);
  lk_client_t *c2 = second_client(&f, NULL);
  cfx_names(&f, "cl-fence-", names);
  for (int m = 0; m < 3; m++) {
    const char *name = names[m];
    int node = f.masters[m];
    char key[256];
    lk_lock_t *a = fx_lock(&f.fx, name), *b = NULL;
    ASSERT_OK(lk_lock_new(c2, name, &b));
    int64_t prev = 0;
    for (int i = 0; i < 3; i++) {
      lk_lock_t *l = i % 2 ? b : a;
      sx_t s;
      cfx_acquire_start(l, 0, LEASE, 1, &s);
      rt_run_until(&f.fx.loop, &s.done, 15000);
      ASSERT_OK(s.status);
      ASSERT_GT(lk_lock_token(l), prev);
      prev = lk_lock_token(l);
      ASSERT_OK(sx_run(&f.fx, lk_lock_release, l, NULL));
    }
    snprintf(key, sizeof key, "redisson_lock_token:{%s}", name);
    cfx_assert_key_on(&f, key, name, node);
    ASSERT_EQ(get_num(&f, node, key), prev);
    fx_close_lock(&f.fx, a);
    fx_close_lock(&f.fx, b);
  }
  fx_close_direct_client(&f.fx, c2);
  cfx_finish(&f);
}

/* ---- names with a hash tag ---------------------------------------------------------------- */

/* Each of lock, fair lock, read/write lock and both semaphores on a name
 * "x{TAG}y" whose tag one master owns: every script runs (none is refused
 * with CROSSSLOT), every key lands on that master under the tag, waiters
 * are woken by the release on the name's channel. The countdown latch is
 * the exception: Redisson's channel for it wraps the whole name in braces
 * ("redisson_countdownlatch__channel__{x{TAG}y}", whose tag is "x{TAG"),
 * so its keys and channel would be in two slots: lk_latch_new refuses the
 * name (issue 25; docs/objects.md, "Names and cluster slots"). */
TEST(braced_names_keep_their_keys_in_the_tags_slot_except_the_latch) {
  cfx_t f;
  char tags[3][64], name[160], key[320];
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  o.max_repoll_ms = 30000; /* a waiter in time was woken by its channel */
  cfx_start(&f, 0, &o);
  cfx_names(&f, "cl-tag-", tags);

  /* Lock (fenced) and a waiter, on master 0. */
  int node = f.masters[0];
  snprintf(name, sizeof name, "lock{%s}x", tags[0]);
  lk_lock_t *l = fx_lock(&f.fx, name), *lw = fx_lock(&f.fx, name);
  sx_t s, sw;
  cfx_acquire_start(l, 0, LEASE, 1, &s);
  rt_run_until(&f.fx.loop, &s.done, 15000);
  ASSERT_OK(s.status);
  cfx_acquire_start(lw, WAIT, LEASE, 1, &sw);
  snprintf(key, sizeof key, "redisson_lock__channel:%s", name);
  cfx_assert_beside(&f, key, name, node);
  cfx_wait_subscribers(&f, key, 1);
  cfx_assert_key_on(&f, name, tags[0], node);
  snprintf(key, sizeof key, "redisson_lock_token:%s", name);
  cfx_assert_key_on(&f, key, tags[0], node);
  uint64_t t0 = uv_hrtime();
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, l, NULL));
  rt_run_until(&f.fx.loop, &sw.done, 10000);
  ASSERT_OK(sw.status);
  ASSERT_LT((int64_t)((uv_hrtime() - t0) / 1000000u), rt_scaled_ms(2000));
  ASSERT_GT(lk_lock_token(lw), lk_lock_token(l));
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, lw, NULL));
  fx_close_lock(&f.fx, l);
  fx_close_lock(&f.fx, lw);

  /* Fair lock and a queued waiter, on master 0. */
  snprintf(name, sizeof name, "fair{%s}x", tags[0]);
  lk_fair_t *fh = fx_fair(&f.fx, name), *fw = fx_fair(&f.fx, name);
  fsx_t fs;
  ASSERT_OK(fsx_acquire(&f.fx, fh, 0, LEASE));
  fsx_start(fw, WAIT, LEASE, 0, &fs);
  char *ch = fair_channel_of(fw);
  cfx_assert_beside(&f, ch, tags[0], node);
  cfx_wait_subscribers(&f, ch, 1);
  free(ch);
  char *qk = fair_queue_key(name), *tk = fair_timeout_key(name);
  cfx_assert_key_on(&f, qk, tags[0], node);
  cfx_assert_key_on(&f, tk, tags[0], node);
  free(qk);
  free(tk);
  ASSERT_OK(fsx_run(&f.fx, lk_fair_release, fh, NULL));
  rt_run_until(&f.fx.loop, &fs.done, 10000);
  ASSERT_OK(fs.status);
  ASSERT_OK(fsx_run(&f.fx, lk_fair_release, fw, NULL));
  fx_close_fair(&f.fx, fh);
  fx_close_fair(&f.fx, fw);

  /* Read/write lock: a read hold's lease key, then a writer let in by the
   * read release, on master 1. */
  node = f.masters[1];
  snprintf(name, sizeof name, "rw{%s}x", tags[1]);
  lk_rwlock_t *rd = fx_rwlock(&f.fx, name), *wr = fx_rwlock(&f.fx, name);
  ASSERT_OK(rw_acquire(&f.fx, rd, RW_R, 0, LEASE));
  snprintf(key, sizeof key, "%s:%s:rwlock_timeout:1", name, lk_rwlock_owner(rd));
  cfx_assert_key_on(&f, key, tags[1], node);
  rw_start(wr, RW_W, WAIT, LEASE, &sw);
  snprintf(key, sizeof key, "redisson_rwlock:%s", name);
  cfx_assert_beside(&f, key, tags[1], node);
  cfx_wait_subscribers(&f, key, 1);
  ASSERT_OK(rw_release(&f.fx, rd, RW_R, NULL));
  rt_run_until(&f.fx.loop, &sw.done, 10000);
  ASSERT_OK(sw.status);
  ASSERT_OK(rw_release(&f.fx, wr, RW_W, NULL));
  fx_close_rwlock(&f.fx, rd);
  fx_close_rwlock(&f.fx, wr);

  /* Counting semaphore and its request record, on master 1. */
  snprintf(name, sizeof name, "sem{%s}x", tags[1]);
  lk_semaphore_t *sem = fx_sem(&f.fx, name);
  int64_t res = 0;
  ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_try_set_permits, sem, 2, &res));
  ASSERT_OK(sem_acquire(&f.fx, sem, 2, 0));
  snprintf(key, sizeof key, "latchkey_semaphore_req:%s:*", name);
  char first[320];
  ASSERT_GE(cfx_keys(&f, node, key, first, sizeof first), 1);
  cfx_assert_key_on(&f, first, tags[1], node);
  ASSERT_OK(sem_run_n(&f.fx, lk_semaphore_release, sem, 2, NULL));
  ASSERT_OK(sem_run(&f.fx, lk_semaphore_available, sem, &res));
  ASSERT_EQ(res, 2);
  fx_close_sem(&f.fx, sem);

  /* Permit-expirable semaphore, on master 2. */
  node = f.masters[2];
  snprintf(name, sizeof name, "psem{%s}x", tags[2]);
  lk_psem_t *ps = fx_psem(&f.fx, name);
  ASSERT_OK(psem_run_n(&f.fx, lk_psem_try_set_permits, ps, 1, &res));
  ASSERT_OK(psem_acquire(&f.fx, ps, 1, 0, LEASE));
  snprintf(key, sizeof key, "%s:timeout", name);
  cfx_assert_key_on(&f, key, tags[2], node);
  ASSERT_OK(psem_run_id(&f.fx, lk_psem_release, ps, NULL, &res));
  ASSERT_EQ(res, 1);
  fx_close_psem(&f.fx, ps);

  /* The latch, on master 2: refused at lk_latch_new, with the reason. */
  snprintf(name, sizeof name, "latch{%s}x", tags[2]);
  snprintf(key, sizeof key, "redisson_countdownlatch__channel__{%s}", name);
  ASSERT_NE(cfx_slot(&f, key), cfx_slot(&f, name));
  lk_latch_t *lt = NULL;
  ASSERT_EQ(lk_latch_new(f.fx.c, name, NULL, &lt), LK_EINVAL);
  ASSERT_NOT_NULL(strstr(lk_client_error_text(f.fx.c), "latch name"));
  cfx_finish(&f);
}
