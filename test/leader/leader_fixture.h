/* Leader election tests: run-to-callback helpers over lk_leader_t. */
#ifndef LK_TEST_LEADER_FIXTURE_H
#define LK_TEST_LEADER_FIXTURE_H

#include "lk_fixture.h"

/* One operation's outcome (exactly once). */
typedef struct ld_op_s {
  int done, calls, status;
  int64_t term;
  uint64_t t_ns;
} ld_op_t;

static inline void ld_op_cb(lk_leader_t *l, int status, void *arg) {
  ld_op_t *s = arg;
  s->calls++;
  ASSERT_EQ(s->calls, 1);
  s->done = 1;
  s->status = status;
  s->term = lk_leader_term(l);
  s->t_ns = uv_hrtime();
}

static inline lk_leader_t *ld_new(lk_client_t *c, const char *role) {
  lk_leader_t *l = NULL;
  ASSERT_OK(lk_leader_new(c, role, &l));
  return l;
}

static inline void ld_campaign(lk_leader_t *l, int64_t lease_ms, const char *value, ld_op_t *s) {
  lk_leader_opts_t o;
  memset(s, 0, sizeof(*s));
  lk_leader_opts_init(&o);
  o.lease_ms = lease_ms;
  o.value = value;
  ASSERT_OK(lk_leader_campaign(l, &o, ld_op_cb, s));
}

static inline void ld_closed_cb(lk_leader_t *l) {
  int *flag = lk_leader_get_data(l);
  (*flag)++;
}

static inline void ld_close(uv_loop_t *loop, lk_leader_t *l) {
  int closed = 0;
  lk_leader_set_data(l, &closed);
  ASSERT_OK(lk_leader_close(l, ld_closed_cb));
  rt_run_until(loop, &closed, 10000);
  ASSERT_EQ(closed, 1);
}

/* What an observer saw: one entry per change callback. */
/* A chaos run churns leaders for its whole (scaled) length: under ASan
 * (timing x3) five candidates made more than 256 changes in 42 s. */
#define LD_OBS_MAX 2048
typedef struct ld_obs_s {
  int n, ended, end_calls;
  int64_t term[LD_OBS_MAX];
  int present[LD_OBS_MAX];
  char value[LD_OBS_MAX][32];
  uint64_t t_ns[LD_OBS_MAX];
} ld_obs_t;

static inline void ld_obs_cb(lk_leader_t *l, int status, void *arg) {
  ld_obs_t *o = arg;
  const char *v;
  if (status == LK_ECANCELED) {
    o->ended = 1;
    o->end_calls++;
    return;
  }
  ASSERT_EQ(status, 0);
  ASSERT_EQ(o->ended, 0);
  ASSERT_LT(o->n, LD_OBS_MAX);
  v = lk_leader_observed_value(l);
  o->term[o->n] = lk_leader_observed_term(l);
  o->present[o->n] = v != NULL;
  snprintf(o->value[o->n], sizeof(o->value[0]), "%s", v != NULL ? v : "");
  o->t_ns[o->n] = uv_hrtime();
  o->n++;
}

#endif /* LK_TEST_LEADER_FIXTURE_H */
