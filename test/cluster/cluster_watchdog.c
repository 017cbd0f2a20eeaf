/* The watchdog on a 3-master cluster (issue 14): holds of every renewed
 * kind (lock, fair lock, read and write holds, expirable permits) on names
 * spread over the three masters are kept alive over several lease periods.
 * A renewal script may only name keys of one slot, so renewals must be
 * grouped by slot: a batch mixing slots is refused with CROSSSLOT, and its
 * holds would run out. */
#include <stdio.h>
#include <string.h>

#include "cluster_fixture.h"
#include "fair_fixture.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

/* What the client logs: renewal failures are warnings. */
typedef struct log_s {
  int warnings;
  int crossslot;
  char first[256];
} log_t;

static void on_log(lk_log_level_t level, const char *msg, void *arg) {
  log_t *lg = arg;
  if (level < LK_LOG_WARN)
    return;
  if (lg->warnings++ == 0)
    snprintf(lg->first, sizeof lg->first, "%s", msg);
  if (strstr(msg, "CROSSSLOT") != NULL || strstr(msg, "ECLUSTER") != NULL)
    lg->crossslot++;
}

static int lost; /* on_lost calls of every kind */

static void lock_lost(lk_lock_t *l, int status, void *arg) {
  (void)l, (void)status, (void)arg;
  lost++;
}
static void fair_lost(lk_fair_t *f, int status, void *arg) {
  (void)f, (void)status, (void)arg;
  lost++;
}
static void rw_lost(lk_rwlock_t *rw, int status, void *arg) {
  (void)rw, (void)status, (void)arg;
  lost++;
}
static void psem_lost(lk_psem_t *p, int status, void *arg) {
  (void)p, (void)status, (void)arg;
  lost++;
}

/* PTTL of key on node m: > 0 while a lease runs. */
static long long pttl(cfx_t *f, int m, const char *key) {
  return rt_cmd_int(cfx_srv(f, m), "PTTL %s", key);
}

/* Fifteen holds with the default lease (1.5 s, scaled) on the three
 * masters, renewed for four lease periods: none is lost, every key still
 * has its lease, no renewal is refused; then every release finds its
 * hold. */
TEST(watchdog_keeps_holds_on_every_master_over_several_leases) {
  cfx_t f;
  log_t lg;
  char ln[3][64], fn[3][64], rn[3][64], wn[3][64], pn[3][64], key[256];
  lk_lock_t *l[3];
  lk_fair_t *fl[3];
  lk_rwlock_t *rd[3], *wr[3];
  lk_psem_t *ps[3];
  lk_client_opts_t o;
  const int64_t lease = rt_scaled_ms(1500);
  memset(&lg, 0, sizeof lg);
  lost = 0;
  lk_client_opts_init(&o);
  o.default_lease_ms = lease;
  o.log = on_log;
  o.log_arg = &lg;
  cfx_start(&f, 0, &o);
  cfx_names(&f, "cl-wd-lock-", ln);
  cfx_names(&f, "cl-wd-fair-", fn);
  cfx_names(&f, "cl-wd-read-", rn);
  cfx_names(&f, "cl-wd-write-", wn);
  cfx_names(&f, "cl-wd-psem-", pn);
  for (int m = 0; m < 3; m++) {
    l[m] = fx_lock(&f.fx, ln[m]);
    ASSERT_OK(lk_lock_set_lost_cb(l[m], lock_lost, NULL));
    ASSERT_OK(sx_acquire(&f.fx, l[m], 0, LK_LEASE_DEFAULT));
    fl[m] = fx_fair(&f.fx, fn[m]);
    ASSERT_OK(lk_fair_set_lost_cb(fl[m], fair_lost, NULL));
    ASSERT_OK(fsx_acquire(&f.fx, fl[m], 0, LK_LEASE_DEFAULT));
    rd[m] = fx_rwlock(&f.fx, rn[m]);
    ASSERT_OK(lk_rwlock_set_lost_cb(rd[m], rw_lost, NULL));
    ASSERT_OK(rw_acquire(&f.fx, rd[m], RW_R, 0, LK_LEASE_DEFAULT));
    wr[m] = fx_rwlock(&f.fx, wn[m]);
    ASSERT_OK(lk_rwlock_set_lost_cb(wr[m], rw_lost, NULL));
    ASSERT_OK(rw_acquire(&f.fx, wr[m], RW_W, 0, LK_LEASE_DEFAULT));
    ps[m] = fx_psem(&f.fx, pn[m]);
    ASSERT_OK(lk_psem_set_lost_cb(ps[m], psem_lost, NULL));
    ASSERT_OK(psem_run_n(&f.fx, lk_psem_try_set_permits, ps[m], 1, NULL));
    ASSERT_OK(psem_acquire(&f.fx, ps[m], 1, 0, LK_LEASE_DEFAULT));
  }
  lk_client_stats_t st0, st1;
  lk_client_get_stats(f.fx.c, &st0);
  uint64_t t0 = uv_hrtime();
  fx_spin(&f.fx, 4 * lease);
  lk_client_get_stats(f.fx.c, &st1);
  printf("watchdog: %llu leases renewed by %llu scripts in %.0f ms (lease %lld ms); "
         "%d warnings (%d CROSSSLOT), first: %s; %d holds lost\n",
         (unsigned long long)(st1.renewals - st0.renewals),
         (unsigned long long)(st1.renewal_commands - st0.renewal_commands),
         (double)(uv_hrtime() - t0) / 1e6, (long long)lease, lg.warnings, lg.crossslot,
         lg.first, lost);
  ASSERT_EQ(lg.crossslot, 0);
  ASSERT_EQ(lost, 0);
  /* Renewed every lease / 3: at least three times each in four leases. */
  ASSERT_GE(st1.renewals - st0.renewals, 15 * 3);
  ASSERT_EQ(st1.leases_lost, 0);
  for (int m = 0; m < 3; m++) {
    int node = f.masters[m];
    ASSERT(lk_lock_is_held(l[m]));
    ASSERT(lk_fair_is_held(fl[m]));
    ASSERT(lk_rwlock_is_held(rd[m], RW_R));
    ASSERT(lk_rwlock_is_held(wr[m], RW_W));
    ASSERT(lk_psem_is_held(ps[m]));
    ASSERT_GT(pttl(&f, node, ln[m]), 0);
    ASSERT_GT(pttl(&f, node, fn[m]), 0);
    ASSERT_GT(pttl(&f, node, rn[m]), 0);
    snprintf(key, sizeof key, "{%s}:%s:rwlock_timeout:1", rn[m], lk_rwlock_owner(rd[m]));
    ASSERT_GT(pttl(&f, node, key), 0);
    ASSERT_GT(pttl(&f, node, wn[m]), 0);
    snprintf(key, sizeof key, "{%s}:timeout", pn[m]);
    ASSERT_EQ(rt_cmd_int(cfx_srv(&f, node), "ZCOUNT %s (%lld +inf", key,
                         (long long)server_ms(cfx_srv(&f, node))),
              1);
  }
  for (int m = 0; m < 3; m++) {
    int64_t res = 0;
    ASSERT_OK(sx_run(&f.fx, lk_lock_release, l[m], &res));
    ASSERT_EQ(res, 1);
    ASSERT_OK(fsx_run(&f.fx, lk_fair_release, fl[m], NULL));
    ASSERT_OK(rw_release(&f.fx, rd[m], RW_R, NULL));
    ASSERT_OK(rw_release(&f.fx, wr[m], RW_W, NULL));
    ASSERT_OK(psem_run_id(&f.fx, lk_psem_release, ps[m], NULL, &res));
    ASSERT_EQ(res, 1);
    fx_close_lock(&f.fx, l[m]);
    fx_close_fair(&f.fx, fl[m]);
    fx_close_rwlock(&f.fx, rd[m]);
    fx_close_rwlock(&f.fx, wr[m]);
    fx_close_psem(&f.fx, ps[m]);
  }
  ASSERT_EQ(lost, 0);
  cfx_finish(&f);
}
