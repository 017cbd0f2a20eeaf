/* Commands issued from slow reply callbacks leave before the read ends
 * (core/conn.c, flush_when_corked_long). The replies one read brings are
 * handled with the client corked, so what their callbacks issue goes out
 * in one write; a binding whose callbacks call into a script engine
 * (bindings/node) takes long enough per reply that the server would sit
 * idle until the last of them. Seen from the server: a command issued by
 * the first callback of a read is there while a later callback of the same
 * read still runs. */
#include <string.h>

#include "lk_fixture.h"

#define N_LOCKS 8

typedef struct slow_s {
  fx_t *fx;
  lk_lock_t *probe;
  sx_t probe_x;
  int calls;
  int all_done; /* every acquire's callback ran */
  int failed;
  int probe_seen;  /* by the second callback, on the server */
  long long polls; /* the second callback's EXISTS calls */
} slow_t;

static void spin_us(uint64_t us) {
  uint64_t until = uv_hrtime() + us * 1000u;
  while (uv_hrtime() < until) {
  }
}

static void slow_cb(lk_lock_t *l, int status, void *arg) {
  slow_t *s = arg;
  (void)l;
  s->calls++;
  s->all_done = s->calls == N_LOCKS;
  if (status != 0)
    s->failed++;
  if (s->calls == 1) {
    lk_lock_opts_t o;
    lk_lock_opts_init(&o);
    o.wait_ms = 0;
    o.lease_ms = 30000;
    ASSERT_OK(lk_lock_acquire(s->probe, &o, sx_cb, &s->probe_x));
    spin_us(300); /* a slow callback: far past the cork's bound */
  } else if (s->calls == 2) {
    /* Still inside the read that brought both replies: the probe's
     * acquire is on the server, or it never leaves before this returns. */
    int64_t until = rt_now_ms() + rt_scaled_ms(3000);
    while (!s->probe_seen && rt_now_ms() < until) {
      s->polls++;
      s->probe_seen = rt_cmd_int(s->fx->srv, "EXISTS %s", "slow:probe") == 1;
      if (!s->probe_seen)
        rt_sleep_us(500);
    }
  }
}

TEST(a_slow_callback_lets_its_command_out_before_the_read_ends) {
  fx_t fx;
  lk_lock_t *locks[N_LOCKS];
  lk_lock_opts_t o;
  slow_t s;
  char name[32];
  int i;
  fx_start(&fx, NULL);
  memset(&s, 0, sizeof s);
  s.fx = &fx;
  s.probe = fx_lock(&fx, "slow:probe");
  for (i = 0; i < N_LOCKS; i++) {
    snprintf(name, sizeof name, "slow:%d", i);
    locks[i] = fx_lock(&fx, name);
  }
  /* Connected, the acquire script loaded: nothing else goes with them. */
  ASSERT_EQ(sx_acquire(&fx, locks[0], 0, 30000), 0);
  ASSERT_EQ(sx_run(&fx, lk_lock_release, locks[0], NULL), 0);
  /* The acquires wait in the paused server's socket, so their replies
   * come back together, in one read. */
  rt_server_pause(fx.srv);
  lk_lock_opts_init(&o);
  o.wait_ms = 0;
  o.lease_ms = 30000;
  for (i = 0; i < N_LOCKS; i++)
    ASSERT_OK(lk_lock_acquire(locks[i], &o, slow_cb, &s));
  rt_server_resume(fx.srv);
  rt_run_until(&fx.loop, &s.all_done, 15000);
  rt_run_until(&fx.loop, &s.probe_x.done, 15000);
  fprintf(stderr, "probe seen on the server during the read: %d (%lld polls)\n", s.probe_seen,
          s.polls);
  ASSERT(s.probe_seen);
  ASSERT_EQ(s.probe_x.status, 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS %s", "slow:probe"), 1); /* the key EXISTS looks for */
  ASSERT_EQ(s.failed, 0);
  fx_close_lock(&fx, s.probe);
  for (i = 0; i < N_LOCKS; i++)
    fx_close_lock(&fx, locks[i]);
  fx_finish(&fx);
}
