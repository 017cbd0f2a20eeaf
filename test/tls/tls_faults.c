/* A TLS connection cut by the proxy inside a record (proxy.h,
 * rt_proxy_cut_next_chunk): OpenSSL holds the partial record and asks for
 * more, the EOF that follows is an ordinary connection loss, and the
 * watchdog and outcome machinery behave exactly as over plaintext (compare
 * test/fault/lock_contract.c, T16): a lost renewal reply is resent over the
 * new connection and the hold survives; a lost acquire reply of a single
 * try is settled as unknown and given back. Not a TLS failure: nothing is
 * logged at LK_LOG_ERROR and tls_failures stays 0. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "tls_util.h"

/* A TLS server seen through a proxy in front of its TLS port. */
typedef struct {
  lk_client_opts_t o; /* the client's options, through the proxy */
  rt_tls_certs_t *certs;
  rt_proxy_t *p;
  tu_log_t log;
} cut_t;

/* Server with TLS, x->p in front of its TLS port, and client options x->o
 * through the proxy (the certificate names 127.0.0.1, which the proxy is). */
static void start_proxied(fx_t *fx, cut_t *x) {
  lk_client_opts_t *o = &x->o;
  x->certs = tu_start_server(fx, TU_GOOD, 0);
  x->p = rt_proxy_start(rt_server_tls_port(fx->srv));
  ASSERT_NOT_NULL(x->p);
  tu_client_opts(fx, x->certs, o, &x->log);
  o->port = rt_proxy_port(x->p);
  o->reconnect_min_ms = 20;
  o->reconnect_max_ms = 50;
}

/* Closes the fixture, then the proxy. */
static void stop_proxied(fx_t *fx, cut_t *x) {
  tu_finish(fx, x->certs);
  rt_proxy_stop(x->p);
}

/* A lock named name, its loss told to lost (sx_cb: once at most), held
 * with the watchdog's lease (renewed); then the next chunk from the server
 * on the one connection open (no pub/sub yet) will be cut mid-record. */
static lk_lock_t *held_then_cut(fx_t *fx, rt_proxy_t *p, const char *name, sx_t *lost) {
  lk_lock_t *l = fx_lock(fx, name);
  lk_lock_set_lost_cb(l, sx_cb, lost);
  ASSERT_OK(sx_acquire(fx, l, 0, LK_LEASE_DEFAULT));
  ASSERT_EQ(rt_proxy_connections(p), 1);
  rt_proxy_cut_next_chunk(p);
  return l;
}

/* The watchdog's renewal reply cut mid-record: resent by the next tick over
 * a new TLS connection; the hold is neither lost nor shortened. */
TEST(record_cut_in_a_renewal_reply_keeps_the_hold) {
  fx_t fx;
  cut_t x;
  sx_t lost = {0};
  lk_lock_t *a;
  lk_client_stats_t st;
  int64_t mark;
  int held;
  start_proxied(&fx, &x);
  x.o.default_lease_ms = 900; /* renewals every 300 ms */
  fx_start_client(&fx, &x.o);
  mark = rt_stall_mark(); /* the lease starts with the acquire below */
  /* Only the command connection is open (nobody waits: no pub/sub), so the
   * next chunk from the server is a renewal's reply. */
  a = held_then_cut(&fx, x.p, "tls-cut-renew", &lost);
  FX_EVENTUALLY(&fx, rt_proxy_chunks_cut(x.p) == 1, 3000);
  FX_EVENTUALLY(&fx, tu_stats(fx.c).tls_handshakes >= 2 && lk_client_is_connected(fx.c), 5000);
  fx_spin(&fx, 1000); /* more than a lease: renewals go on over the new session */
  /* The cut renewal costs one period of the lease, so a machine stall longer
   * than the third left (lease - two periods) may take the hold for no fault
   * of the library (docs/reliability.md): then the loss is told once. */
  held = EXPECT_HOLD(lost.calls == 0 && lk_lock_is_held(a), mark, 900 / 3);
  if (held)
    ASSERT_GT(rt_cmd_int(fx.srv, "PTTL tls-cut-renew"), 0);
  else
    FX_LOSS_TOLD_ONCE(&fx, lost.calls, lk_lock_is_held(a));
  st = tu_stats(fx.c);
  ASSERT_GE(st.reconnects, 1);
  ASSERT_EQ(st.tls_failures, 0);
  ASSERT_EQ(x.log.count[LK_LOG_ERROR], 0);
  ASSERT_STREQ(lk_client_error_text(fx.c), "");
  if (held) {
    ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
    ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-cut-renew"), 0);
  } else {
    FX_EVENTUALLY(&fx, rt_cmd_int(fx.srv, "EXISTS tls-cut-renew") == 0, 2000);
  }
  fx_close_lock(&fx, a);
  stop_proxied(&fx, &x);
}

/* An acquire's reply cut mid-record: the server granted, the client cannot
 * know; a single try ends LK_EUNKNOWN and gives the grant back once the new
 * connection is up, while another hold on the same client is untouched. */
TEST(record_cut_in_an_acquire_reply_is_unknown_and_given_back) {
  fx_t fx;
  cut_t x;
  sx_t lost = {0};
  lk_lock_t *held, *b;
  sx_t s;
  start_proxied(&fx, &x);
  fx_start_client(&fx, &x.o);
  b = fx_lock(&fx, "tls-cut-acq");
  held = held_then_cut(&fx, x.p, "tls-cut-held", &lost); /* watchdog: renewals every 10 s */
  ASSERT_EQ(sx_acquire_in(&fx.loop, b, 0, 30000, &s), LK_EUNKNOWN);
  ASSERT_EQ(rt_proxy_chunks_cut(x.p), 1);
  /* The give-back goes out on the next connection (the grant was real). */
  ASSERT(fx_wait_key_gone(&fx, "tls-cut-acq", 5000));
  ASSERT(!lk_lock_is_held(b));
  ASSERT(lk_lock_is_held(held));
  ASSERT_EQ(lost.calls, 0);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-cut-held"), 1);
  ASSERT_GE(tu_stats(fx.c).tls_handshakes, 2);
  ASSERT_EQ(tu_stats(fx.c).tls_failures, 0);
  ASSERT_EQ(x.log.count[LK_LOG_ERROR], 0);
  /* And the lock works over the new session. */
  ASSERT_OK(sx_acquire(&fx, b, 0, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  ASSERT_OK(sx_run(&fx, lk_lock_release, held, NULL));
  fx_close_lock(&fx, b);
  fx_close_lock(&fx, held);
  stop_proxied(&fx, &x);
}

/* A 40 KB message on the pub/sub connection: it arrives as several TLS
 * records (16 KB each at most), each larger than the client's read buffer
 * less a record's overhead, so records span reads and reads end inside
 * records (LK__TLS_WANT), here through a proxy that also holds every chunk
 * for a moment. The stream stays in step: the waiter is still woken by the
 * release that follows. */
TEST(messages_larger_than_a_record_span_reads) {
  fx_t fx;
  cut_t x;
  lk_lock_t *a, *b;
  sx_t s;
  char *big;
  size_t i, n = 40000;
  uint64_t msgs;
  redisReply *rep;
  start_proxied(&fx, &x);
  x.o.max_repoll_ms = 20000; /* the wake-up must come from the message */
  fx_start_client(&fx, &x.o);
  rt_proxy_delay(x.p, 2);
  a = fx_lock(&fx, "tls-big");
  b = fx_lock(&fx, "tls-big");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  tu_wait_behind(b, &s);
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{tls-big}") != 0, 5000);
  fx_spin(&fx, 50);
  msgs = tu_stats(fx.c).pubsub_messages;
  big = malloc(n);
  ASSERT_NOT_NULL(big);
  for (i = 0; i < n; i++)
    big[i] = (char)('a' + i % 26);
  {
    const char *argv[3] = {"PUBLISH", "redisson_lock__channel:{tls-big}", big};
    size_t lens[3] = {7, strlen(argv[1]), n};
    rep = rt_cmd_argv(fx.srv, 3, argv, lens);
  }
  free(big);
  ASSERT_NOT_NULL(rep);
  ASSERT_EQ(rep->integer, 1);
  freeReplyObject(rep);
  FX_EVENTUALLY(&fx, tu_stats(fx.c).pubsub_messages > msgs, 5000);
  ASSERT_EQ(s.done, 0); /* not a release: b goes on waiting */
  tu_release_wakes(&fx, a, &s);
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  ASSERT_EQ(tu_stats(fx.c).tls_handshakes, 2);
  ASSERT_EQ(tu_stats(fx.c).reconnects, 0);
  ASSERT_EQ(tu_stats(fx.c).pubsub_reconnects, 0);
  fx_close_lock(&fx, a);
  fx_close_lock(&fx, b);
  stop_proxied(&fx, &x);
}
