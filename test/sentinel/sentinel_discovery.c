/* Finding the master through Redis Sentinel (docs/sentinel.md): discovery,
 * sentinels that are down, lie or refuse AUTH, and the options. */
#include "sentinel_fixture.h"

/* The lock's key exists on srv. */
static long long key_on(rt_server_t *srv, const char *name) {
  return rt_cmd_int(srv, "EXISTS %s", name);
}

TEST(discovers_the_master_and_locks_there) {
  sn_t e;
  sn_start(&e, 3, NULL);
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_held(&e, c, "sn-disc");
  lk_client_stats_t st = sn_stats(c);
  ASSERT_GE(st.sentinel_queries, 1);
  ASSERT_EQ(st.sentinel_switches, 0);
  ASSERT_STREQ(lk_client_error_text(c), "");
  /* Subscribed to +switch-master on one sentinel. */
  SN_EVENTUALLY(&e, sn_subscribers(e.s[0]) + sn_subscribers(e.s[1]) + sn_subscribers(e.s[2]) == 1, 5000);
  sn_finish_given_back(&e, c, l);
}

/* A sentinel that is down is skipped (its reason kept) and the next one
 * answers; the subscription lives on a sentinel that is up. */
TEST(a_sentinel_that_is_down_is_skipped) {
  sn_t e;
  sn_start(&e, 3, NULL);
  rt_sentinel_kill(e.s[0], SIGKILL);
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_held(&e, c, "sn-down");
  ASSERT_GE(sn_stats(c).sentinel_queries, 2);
  /* Subscribed on a live sentinel: it counts one +switch-master subscriber. */
  SN_EVENTUALLY(&e, sn_subscribers(e.s[1]) + sn_subscribers(e.s[2]) == 1, 5000);
  sn_finish(&e, c, l);
}

/* No sentinel up: the connect attempt fails like a connection failure
 * (LK_ECONN for a single try), and the client error text says why. */
TEST(no_sentinel_up_is_a_connection_failure_with_the_reasons) {
  sn_t e;
  sx_t s;
  sn_start(&e, 3, NULL);
  for (size_t i = 0; i < 3; i++)
    rt_sentinel_kill(e.s[i], SIGKILL);
  e.o.connect_timeout_ms = 500;
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_lock(c, "sn-none");
  SN_EVENTUALLY(&e, strstr(lk_client_error_text(c), "no sentinel gave") != NULL, 5000);
  fprintf(stderr, "error text: %s\n", lk_client_error_text(c));
  ASSERT(strstr(lk_client_error_text(c), "mymaster") != NULL);
  /* Every sentinel is named with its reason. */
  for (size_t i = 0; i < 3; i++) {
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", rt_sentinel_port(e.s[i]));
    ASSERT(strstr(lk_client_error_text(c), addr) != NULL);
  }
  int64_t t0 = rt_now_ms();
  int rc = sx_acquire_in(&e.loop, l, 0, 10000, &s);
  ASSERT(rc == LK_ECONN);
  /* A budgeted one keeps trying through the backoff and ends on time. */
  rc = sx_acquire_in(&e.loop, l, 700, 10000, &s);
  ASSERT_EQ(rc, LK_ETIMEDOUT);
  ASSERT_LT(rt_now_ms() - t0, rt_scaled_ms(5000));
  ASSERT_EQ(lk_client_is_connected(c), 0);
  sn_finish(&e, c, l);
}

/* A sentinel that names the replica as the master: the client connects
 * there, ROLE says slave, and the next sentinel is asked. The liar monitors
 * "mymaster" at the replica's address (it is no member of the others'
 * group: they ignore its hellos, whose epoch is not newer). */
TEST(a_sentinel_naming_a_replica_is_skipped) {
  sn_t e;
  sx_t s;
  sn_start(&e, 3, NULL);
  rt_sentinel_t *liar = rt_sentinel_start(rt_server_port(e.r), NULL);
  ASSERT_NOT_NULL(liar);
  ASSERT_EQ(rt_sentinel_master_port(liar), rt_server_port(e.r));
  char list[256];
  snprintf(list, sizeof list, "127.0.0.1:%d,%s", rt_sentinel_port(liar), e.list);
  e.o.sentinels = list;
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_lock(c, "sn-liar");
  ASSERT_OK(sx_acquire_in(&e.loop, l, 10000, 10000, &s));
  ASSERT_EQ(key_on(e.m, "sn-liar"), 1);
  lk_client_stats_t st = sn_stats(c);
  ASSERT_GE(st.sentinel_queries, 2); /* the liar, then an honest one */
  ASSERT_EQ(st.sentinel_switches, 0);
  /* ROLE turned the replica down before any command went there (a write
   * would have met READONLY; the replica applies the master's writes as
   * effects, never as scripts). */
  char *evalsha = rt_server_info(e.r, "commandstats", "cmdstat_evalsha");
  ASSERT_NULL(evalsha);
  /* A reconnect asks the honest one first now: one query, no detour. */
  uint64_t q = st.sentinel_queries;
  rt_cmd_int(e.m, "CLIENT KILL TYPE normal");
  SN_EVENTUALLY(&e, sn_stats(c).reconnects >= 1 && lk_client_is_connected(c), 5000);
  ASSERT_OK(sx_acquire_in(&e.loop, l, 5000, 10000, &s)); /* re-entry on the master */
  ASSERT_EQ(lk_lock_hold_count(l), 2);
  ASSERT_GE(sn_stats(c).sentinel_queries, q + 1);
  sn_close_lock(&e, l);
  sn_close_client(&e, c);
  rt_sentinel_stop(liar);
  sn_stop(&e);
}

/* Sentinels with a password: the right one works; a wrong one is a clear
 * error (AUTH refused, for every sentinel) and no hang. */
TEST(sentinel_auth_right_and_wrong) {
  sn_t e;
  sx_t s;
  rt_sentinel_opts_t so;
  rt_sentinel_opts_init(&so);
  so.requirepass = "sentinel-pw";
  sn_start(&e, 3, &so);

  e.o.sentinel_password = "sentinel-pw";
  lk_client_t *c = sn_client(&e, &e.o);
  lk_lock_t *l = sn_held(&e, c, "sn-auth");
  sn_close_lock(&e, l);
  sn_close_client(&e, c);

  sn_opts(&e, &e.o);
  e.o.sentinel_password = "wrong";
  c = sn_client(&e, &e.o);
  ASSERT_OK(lk_lock_new(c, "sn-auth", &l));
  SN_EVENTUALLY(&e, strstr(lk_client_error_text(c), "no sentinel gave") != NULL, 5000);
  fprintf(stderr, "error text: %s\n", lk_client_error_text(c));
  ASSERT(strstr(lk_client_error_text(c), "AUTH refused") != NULL);
  int rc = sx_acquire_in(&e.loop, l, 0, 10000, &s);
  ASSERT_EQ(rc, LK_ECONN);
  sn_close_lock(&e, l);
  sn_close_client(&e, c);

  /* No password at all towards sentinels that want one: NOAUTH. */
  sn_opts(&e, &e.o);
  c = sn_client(&e, &e.o);
  SN_EVENTUALLY(&e, strstr(lk_client_error_text(c), "no sentinel gave") != NULL, 5000);
  ASSERT(strstr(lk_client_error_text(c), "authentication required") != NULL);
  sn_close_client(&e, c);
  sn_stop(&e);
}

/* A sentinel that does not know the master's name answers nil: skipped. */
TEST(an_unknown_master_name_is_a_clear_error) {
  sn_t e;
  sn_start(&e, 3, NULL);
  e.o.sentinel_master = "nosuchmaster";
  lk_client_t *c = sn_client(&e, &e.o);
  SN_EVENTUALLY(&e, strstr(lk_client_error_text(c), "no sentinel gave") != NULL, 5000);
  fprintf(stderr, "error text: %s\n", lk_client_error_text(c));
  ASSERT(strstr(lk_client_error_text(c), "nosuchmaster") != NULL);
  ASSERT(strstr(lk_client_error_text(c), "does not know it") != NULL);
  sn_close_client(&e, c);
  sn_stop(&e);
}

static int try_new(const char *sentinels, const char *master) {
  uv_loop_t loop;
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  ASSERT_OK(uv_loop_init(&loop));
  lk_client_opts_init(&o);
  o.sentinels = sentinels;
  o.sentinel_master = master;
  int rc = lk_client_new(&loop, &o, &c);
  if (rc == 0) {
    int closed = 0;
    lk_client_set_data(c, &closed);
    ASSERT_OK(lk_client_close(c, fx_flag_client_closed));
    rt_run_until(&loop, &closed, 10000);
  } else {
    ASSERT_NULL(c);
  }
  rt_loop_close_clean(&loop);
  return rc;
}

TEST(bad_sentinel_options_are_einval) {
  ASSERT_EQ(try_new("127.0.0.1:26379", NULL), LK_EINVAL);
  ASSERT_EQ(try_new(NULL, "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:26379", ""), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new(":26379", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:0", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:65536", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:26379x", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:26379,", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new(",127.0.0.1:26379", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:26379,,127.0.0.1:26380", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("::1:26379", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("[::1:26379", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("a b:26379", "mymaster"), LK_EINVAL);
  ASSERT_EQ(try_new("127.0.0.1:26379", "my master"), LK_EINVAL);
  /* Well formed: accepted (nothing listens there; the client just retries). */
  ASSERT_OK(try_new("127.0.0.1:1", "mymaster"));
  ASSERT_OK(try_new(" 127.0.0.1:1 , [::1]:2,localhost:3", "mymaster"));

  uv_loop_t loop;
  lk_client_opts_t o;
  lk_client_t *c = NULL;
  ASSERT_OK(uv_loop_init(&loop));
  lk_client_opts_init(&o);
  o.sentinels = "127.0.0.1:1";
  o.sentinel_master = "mymaster";
  o.cluster = LK_CLUSTER_ON;
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  o.cluster = LK_CLUSTER_AUTO;
  o.sentinel_username = "user";
  ASSERT_EQ(lk_client_new(&loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  rt_loop_close_clean(&loop);
}
