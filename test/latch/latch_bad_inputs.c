/* Bad inputs to the countdown latch (docs/reliability.md, item 20;
 * docs/objects.md): every rejected call returns its exact code at once, never
 * runs its callback, sends nothing and leaves the object usable. Counts at
 * the limits stay exact. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "latch_open.h"
#include "never_cb.h"

#define BAD_LATCH ((lk_latch_t *)(uintptr_t)0x5a5a5a5a)

/* How the cases end: latch l is closed, then no refused call's callback
 * may run. */
static void close_and_finish(fx_t *fx, lk_latch_t *l) {
  lx_close(&fx->loop, l);
  fx_spin(fx, 20); /* a wrongly queued callback would run now */
  rt_never_finish(fx);
}

static long long evalsha_calls(rt_server_t *srv) {
  char *v = rt_server_info(srv, "commandstats", "cmdstat_evalsha");
  long long n = 0;
  if (v != NULL) {
    const char *p = strstr(v, "calls=");
    if (p != NULL)
      n = atoll(p + 6);
    free(v);
  }
  return n;
}

TEST(new_rejects_bad_arguments) {
  fx_t fx;
  lk_latch_opts_t o;
  lk_latch_t *l = BAD_LATCH;
  char *huge;
  fx_start(&fx, NULL);
  ASSERT_EQ(lk_latch_new(NULL, "x", NULL, &l), LK_EINVAL);
  ASSERT_EQ(lk_latch_new(fx.c, NULL, NULL, &l), LK_EINVAL);
  ASSERT_EQ(lk_latch_new(fx.c, "", NULL, &l), LK_EINVAL);
  ASSERT_EQ(lk_latch_new(fx.c, "x", NULL, NULL), LK_EINVAL);
  huge = malloc(4098);
  ASSERT_NOT_NULL(huge);
  memset(huge, 'n', 4097);
  huge[4097] = '\0';
  ASSERT_EQ(lk_latch_new(fx.c, huge, NULL, &l), LK_ENAMETOOLONG);
  huge[4096] = '\0'; /* exactly the cap: fine */
  lk_latch_opts_init(&o);
  ASSERT_OK(lk_latch_new(fx.c, huge, &o, &l));
  lx_close(&fx.loop, l);
  free(huge);
  l = BAD_LATCH;
  o.marker_ttl_ms = 0;
  ASSERT_EQ(lk_latch_new(fx.c, "x", &o, &l), LK_EINVAL);
  o.marker_ttl_ms = -1;
  ASSERT_EQ(lk_latch_new(fx.c, "x", &o, &l), LK_EINVAL);
  o.marker_ttl_ms = LK_LATCH_MARKER_TTL_DEFAULT + 1;
  ASSERT_EQ(lk_latch_new(fx.c, "x", &o, &l), LK_EINVAL);
  o.marker_ttl_ms = INT64_MIN;
  ASSERT_EQ(lk_latch_new(fx.c, "x", &o, &l), LK_EINVAL);
  ASSERT(l == BAD_LATCH); /* *out is set only on success */
  lk_latch_opts_init(NULL); /* harmless */
  o.marker_ttl_ms = 1;
  ASSERT_OK(lk_latch_new(fx.c, "x", &o, &l));
  close_and_finish(&fx, l);
}

/* count <= 0 and counts beyond LK_LATCH_MAX_COUNT (where the scripts'
 * numbers would stop being exact, or int64 would overflow) are refused;
 * the largest accepted count round-trips exactly. */
TEST(counts_out_of_range_and_at_the_limit) {
  fx_t fx;
  lk_latch_t *l = fx_start_latch(&fx, "cnt", 0);
  int64_t res;
  long long calls;
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, l, NULL)); /* scripts loaded */
  calls = evalsha_calls(fx.srv);
  ASSERT_EQ(lk_latch_try_set_count(l, 0, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(l, -1, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(l, INT64_MIN, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(l, LK_LATCH_MAX_COUNT + 1, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(l, INT64_MAX, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(l, 5, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(evalsha_calls(fx.srv), calls); /* nothing was sent */
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS cnt"), 0);
  ASSERT_OK(lx_set(&fx.loop, l, LK_LATCH_MAX_COUNT, &res));
  ASSERT_EQ(res, 1);
  {
    char *v = rt_cmd_str(fx.srv, "GET cnt");
    ASSERT_STREQ(v, "9007199254740991");
    free(v);
  }
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, &res));
  ASSERT_EQ(res, LK_LATCH_MAX_COUNT - 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, l, &res));
  ASSERT_EQ(res, LK_LATCH_MAX_COUNT - 1);
  close_and_finish(&fx, l);
}

/* Waits outside 0..LK_MAX_TIME_MS other than -1, NULL callbacks, NULL
 * objects, a second operation while one is pending, cancel with nothing
 * to cancel. */
TEST(bad_waits_callbacks_and_states) {
  fx_t fx;
  lk_latch_t *l = fx_start_latch(&fx, "bw", 0);
  lx_t s;
  ASSERT_EQ(lk_latch_await(l, -2, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_await(l, INT64_MIN, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_await(l, LK_MAX_TIME_MS + 1, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_await(l, 0, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_count_down(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_get_count(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_delete(l, NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_cancel(l), LK_EINVAL);

  ASSERT_EQ(lk_latch_await(NULL, 0, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_count_down(NULL, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_get_count(NULL, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_try_set_count(NULL, 1, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_delete(NULL, rt_never_latch_cb, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_cancel(NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_close(NULL, NULL), LK_EINVAL);
  ASSERT_EQ(lk_latch_result(NULL), 0);
  ASSERT_STREQ(lk_latch_error_text(NULL), "");
  ASSERT_NULL(lk_latch_name(NULL));
  ASSERT_NULL(lk_latch_client(NULL));
  ASSERT_NULL(lk_latch_get_data(NULL));
  ASSERT_EQ(lk_latch_is_strict(NULL), 0);
  lk_latch_set_data(NULL, &s);

  /* The longest bounded wait is accepted; one operation at a time. */
  ASSERT_OK(lx_set(&fx.loop, l, 1, NULL));
  lx_await_start(l, LK_MAX_TIME_MS, &s);
  ASSERT_EQ(lk_latch_await(l, 0, rt_never_latch_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_latch_count_down(l, rt_never_latch_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_latch_try_set_count(l, 1, rt_never_latch_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_latch_get_count(l, rt_never_latch_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_latch_delete(l, rt_never_latch_cb, NULL), LK_EBUSY);
  ASSERT_EQ(lk_client_close(fx.c, NULL), LK_EBUSY); /* an object is open */
  ASSERT_OK(lk_latch_cancel(l));
  rt_run_until(&fx.loop, &s.done, 2000);
  ASSERT_EQ(s.status, LK_ECANCELED);
  /* Still usable, and nothing was counted. */
  ASSERT_EQ(lx_get(fx.srv, "bw", -1), 1);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, l, NULL));
  ASSERT_OK(lx_await(&fx.loop, l, 0));
  close_and_finish(&fx, l);
}

typedef struct {
  lk_latch_t *l;
  lk_client_t *c;
  int rc[4];
  lk_latch_t *out;
} thread_call_t;

static void thread_call(void *arg) {
  thread_call_t *t = arg;
  t->rc[0] = lk_latch_count_down(t->l, rt_never_latch_cb, NULL);
  t->rc[1] = lk_latch_await(t->l, 0, rt_never_latch_cb, NULL);
  t->out = BAD_LATCH;
  t->rc[2] = lk_latch_new(t->c, "from-thread", NULL, &t->out);
  t->rc[3] = lk_latch_close(t->l, NULL);
}

TEST(wrong_thread_is_refused) {
  fx_t fx;
  thread_call_t t;
  uv_thread_t th;
  fx_start(&fx, NULL);
  memset(&t, 0, sizeof t);
  t.c = fx.c;
  t.l = lx_new_counting(&fx, "wt", 0, 2);
  ASSERT_OK(uv_thread_create(&th, thread_call, &t));
  ASSERT_OK(uv_thread_join(&th));
  ASSERT_EQ(t.rc[0], LK_EWRONGTHREAD);
  ASSERT_EQ(t.rc[1], LK_EWRONGTHREAD);
  ASSERT_EQ(t.rc[2], LK_EWRONGTHREAD);
  ASSERT(t.out == BAD_LATCH);
  ASSERT_EQ(t.rc[3], LK_EWRONGTHREAD);
  ASSERT_EQ(lx_get(fx.srv, "wt", -1), 2); /* nothing counted */
  ASSERT_OK(lx_run(&fx.loop, lk_latch_count_down, t.l, NULL));
  ASSERT_EQ(lx_get(fx.srv, "wt", -1), 1);
  close_and_finish(&fx, t.l);
}

/* In a forked child every call answers LK_EFORKED and nothing reaches the
 * server; close there only frees memory. */
TEST(forked_child_gets_eforked) {
  fx_t fx;
  lk_latch_t *l;
  pid_t pid;
  fx_start(&fx, NULL);
  l = lx_new_counting(&fx, "fk", 0, 3);
  pid = rt_fork_flushed();
  if (pid == 0) {
    int bad = 0;
    lk_latch_t *nl = BAD_LATCH;
    if (lk_latch_count_down(l, rt_never_latch_cb, NULL) != LK_EFORKED)
      bad |= 1;
    if (lk_latch_await(l, -1, rt_never_latch_cb, NULL) != LK_EFORKED)
      bad |= 2;
    if (lk_latch_try_set_count(l, 1, rt_never_latch_cb, NULL) != LK_EFORKED)
      bad |= 4;
    if (lk_latch_delete(l, rt_never_latch_cb, NULL) != LK_EFORKED)
      bad |= 8;
    if (lk_latch_new(fx.c, "child", NULL, &nl) != LK_EFORKED || nl != BAD_LATCH)
      bad |= 16;
    if (lk_latch_close(l, NULL) != LK_EFORKED)
      bad |= 32;
    if (lk_client_close(fx.c, NULL) != LK_EFORKED)
      bad |= 64;
    _exit(bad);
  }
  rt_wait_child_exit_0(pid);
  ASSERT_OK(lx_run(&fx.loop, lk_latch_get_count, l, NULL)); /* behind anything the child sent */
  ASSERT_EQ(lx_get(fx.srv, "fk", -1), 3);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS fk"), 1);
  close_and_finish(&fx, l);
}
