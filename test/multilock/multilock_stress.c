/* MultiLock under contention: groups asking for the same locks in opposite
 * orders, each with its own clients, all on one loop. Each hold lasts a
 * random 0-2 ms (a timer, so the others keep running meanwhile), and so
 * does the think time between holds; every hold
 * is recorded per member and the histories are checked for overlaps between
 * groups. docs/reliability.md, T29. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "multi_fixture.h"

#define MAX_GROUPS 4
#define MAX_NAMES 3

typedef struct group_s {
  int index;
  mfx_t *m;
  lk_client_t *set[MFX_MAX];
  lk_lock_t *l[MAX_NAMES];
  int member_name[MAX_NAMES]; /* which name each member is */
  int n;
  lk_multilock_t *ml;
  uv_timer_t hold;
  uint64_t t_acq;
  int iters, done, timeouts;
  int finished;
  uint64_t rng;
} group_t;

static const char *const names[MAX_NAMES] = {"st-a", "st-b", "st-c"};
static rt_history_t hist[MAX_NAMES];

static uint64_t group_rand(group_t *g) {
  g->rng ^= g->rng << 13;
  g->rng ^= g->rng >> 7;
  g->rng ^= g->rng << 17;
  return g->rng;
}

static void start_acquire(group_t *g);

static void on_think_over(uv_timer_t *t) { start_acquire(t->data); }

static void on_released(lk_multilock_t *ml, int status, void *arg) {
  group_t *g = arg;
  (void)ml;
  ASSERT_OK(status);
  if (++g->done == g->iters) {
    g->finished = 1;
    return;
  }
  /* A random think time outside, so the locks change hands often (without
   * it the releasing group's next acquire usually wins again). */
  uv_timer_start(&g->hold, on_think_over, group_rand(g) % 3, 0);
}

static void on_hold_over(uv_timer_t *t) {
  group_t *g = t->data;
  uint64_t now = uv_hrtime();
  int i;
  ASSERT_EQ(lk_multilock_is_held(g->ml), 1);
  for (i = 0; i < g->n; i++)
    ASSERT_OK(rt_history_add(&hist[g->member_name[i]], (uint32_t)g->index, g->t_acq, now));
  ASSERT_OK(lk_multilock_release(g->ml, on_released, g));
}

static void on_acquired(lk_multilock_t *ml, int status, void *arg) {
  group_t *g = arg;
  (void)ml;
  if (status == LK_ETIMEDOUT) {
    g->timeouts++;
    start_acquire(g);
    return;
  }
  ASSERT_OK(status);
  g->t_acq = uv_hrtime();
  uv_timer_start(&g->hold, on_hold_over, group_rand(g) % 3, 0);
}

static void start_acquire(group_t *g) {
  lk_multilock_opts_t o;
  lk_multilock_opts_init(&o);
  o.wait_ms = 5000;
  ASSERT_OK(lk_multilock_acquire(g->ml, &o, on_acquired, g));
}

/* Group g takes the names in `order` (indexes into names), name i living on
 * server i % n_servers. */
static void group_open(mfx_t *m, group_t *g, int index, const int *order, int n, int iters) {
  int i;
  memset(g, 0, sizeof(*g));
  g->index = index;
  g->m = m;
  g->n = n;
  g->iters = iters;
  g->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)(index + 1) * 0x2545f4914f6cdd1dULL;
  mfx_clients(m, g->set, 0);
  for (i = 0; i < n; i++) {
    g->member_name[i] = order[i];
    ASSERT_OK(lk_lock_new(g->set[order[i] % m->n], names[order[i]], &g->l[i]));
  }
  ASSERT_OK(lk_multilock_new(g->l, (size_t)n, &g->ml));
  uv_timer_init(&m->loop, &g->hold);
  g->hold.data = g;
}

static void group_close(mfx_t *m, group_t *g) {
  int i;
  mx_ml_close(m, g->ml);
  for (i = 0; i < g->n; i++)
    mx_lock_close(m, g->l[i]);
  uv_close((uv_handle_t *)&g->hold, NULL);
  mfx_close_set(m, g->set);
}

static void run_groups(int n_groups, const int orders[][MAX_NAMES], const int *sizes, int iters) {
  mfx_t m;
  group_t g[MAX_GROUPS];
  int i, all;
  uint64_t t0;
  int64_t budget = rt_scaled_ms(20000);
  mfx_start(&m, 2, NULL);
  for (i = 0; i < MAX_NAMES; i++)
    rt_history_init(&hist[i]);
  for (i = 0; i < n_groups; i++)
    group_open(&m, &g[i], i, orders[i], sizes[i], iters);
  t0 = uv_hrtime();
  for (i = 0; i < n_groups; i++)
    start_acquire(&g[i]);
  do {
    all = 1;
    for (i = 0; i < n_groups; i++)
      all &= g[i].finished;
    if (!all) {
      uv_run(&m.loop, UV_RUN_ONCE);
      if ((int64_t)((uv_hrtime() - t0) / 1000000u) > budget) {
        for (i = 0; i < n_groups; i++)
          fprintf(stderr, "group %d: %d of %d done\n", i, g[i].done, iters);
        FAIL("groups still running after %" PRId64 " ms: deadlock or livelock", budget);
      }
    }
  } while (!all);
  printf("%d groups x %d holds in %.0f ms\n", n_groups, iters,
         (double)(uv_hrtime() - t0) / 1e6);
  for (i = 0; i < n_groups; i++)
    printf("group %d: %d timeouts\n", i, g[i].timeouts);
  for (i = 0; i < MAX_NAMES; i++) {
    rt_history_report_t rep;
    rt_history_check(&hist[i], &rep);
    printf("%s: ", names[i]);
    rt_history_print(stdout, &rep);
    ASSERT_EQ(rep.overlaps, 0);
    ASSERT_EQ(rep.malformed, 0);
    rt_history_free(&hist[i]);
  }
  for (i = 0; i < n_groups; i++)
    group_close(&m, &g[i]);
  for (i = 0; i < MAX_NAMES; i++)
    ASSERT_EQ(rt_cmd_int(m.srv[i % 2], "EXISTS %s", names[i]), 0);
  mfx_finish(&m);
}

TEST(ml_opposite_orders_never_deadlock) {
  static const int orders[2][MAX_NAMES] = {{0, 1, 0}, {1, 0, 0}};
  static const int sizes[2] = {2, 2};
  run_groups(2, orders, sizes, 200);
}

TEST(ml_four_groups_overlapping_sets) {
  static const int orders[4][MAX_NAMES] = {{0, 1, 0}, {1, 0, 0}, {0, 1, 2}, {2, 1, 0}};
  static const int sizes[4] = {2, 2, 3, 3};
  run_groups(4, orders, sizes, 100);
}
