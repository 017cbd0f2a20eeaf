/* TLS that works (docs/tls.md): a lock and a pub/sub wake-up over TLS,
 * the server name (SNI and the check) from the options, mutual TLS, the
 * oldest version, reconnecting after a restart, set-up errors at
 * lk_client_new, and a forked child that frees a TLS client without a
 * byte on the wire. Certificates are made by the test (tls_certs.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "forked_child.h"
#include "tls_util.h"

/* Acquire, release, and a waiter woken by the release's message: both the
 * command and the pub/sub connection speak TLS. */
TEST(ca_file_lock_and_pubsub_wake_over_tls) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, TU_GOOD, 0);
  lk_lock_t *a, *b;
  sx_t s;
  lk_client_stats_t st;
  tu_client_opts(&fx, t, &o, &log);
  o.max_repoll_ms = 20000; /* the wake-up must come from the message */
  fx_start_client(&fx, &o);
  a = fx_lock(&fx, "tls-wake");
  b = fx_lock(&fx, "tls-wake");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-wake"), 1);
  tu_wait_behind(b, &s);
  FX_EVENTUALLY(&fx, rt_server_numsub(fx.srv, "redisson_lock__channel:{tls-wake}") != 0, 5000);
  fx_spin(&fx, 50); /* the post-subscribe retry lands */
  ASSERT_EQ(s.done, 0);
  tu_release_wakes(&fx, a, &s);
  st = tu_stats(fx.c);
  ASSERT_GE(st.pubsub_messages, 1);
  ASSERT_EQ(st.tls_handshakes, 2); /* commands and pub/sub */
  ASSERT_EQ(st.tls_failures, 0);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 0);
  ASSERT_STREQ(lk_client_error_text(fx.c), "");
  ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
  fx_close_lock(&fx, a);
  fx_close_lock(&fx, b);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-wake"), 0);
  tu_finish(&fx, t);
}

/* The set-ups that work (issue 29: each was a copy of the same test): the
 * server presents `cert` (client certificates required when auth_clients),
 * the case adjusts the client's options, and one lock is acquired and
 * released over the connection. Every case checks the same: one handshake,
 * no TLS failure, no error logged. */
typedef struct tls_ok_case_s {
  const char *key;
  int cert; /* TU_GOOD, TU_WRONG_HOST */
  int auth_clients;
  const char *server_name;     /* NULL: the address dialled is checked */
  int client_cert;             /* present the CA-signed client certificate */
  int untrusted_without_check; /* trust another CA, verify_peer 0 */
  lk_tls_version_t min_version;
} tls_ok_case_t;

static void lock_round_trip_over_tls(const tls_ok_case_t *k) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, k->cert, k->auth_clients);
  lk_lock_t *a;
  tu_client_opts(&fx, t, &o, &log);
  if (k->server_name != NULL)
    o.tls.server_name = k->server_name;
  if (k->client_cert) {
    o.tls.cert_file = t->client_cert;
    o.tls.key_file = t->client_key;
  }
  if (k->untrusted_without_check) {
    o.tls.ca_file = t->other_ca;
    o.tls.verify_peer = 0;
  }
  if (k->min_version != 0)
    o.tls.min_version = k->min_version;
  fx_start_client(&fx, &o);
  a = fx_lock(&fx, k->key);
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  ASSERT_EQ(tu_stats(fx.c).tls_handshakes, 1);
  ASSERT_EQ(tu_stats(fx.c).tls_failures, 0);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 0);
  fx_close_lock(&fx, a);
  tu_finish(&fx, t);
}

/* server_name replaces the host for SNI and the check: a DNS name the
 * certificate has, while the client dials 127.0.0.1. */
TEST(server_name_is_checked_as_a_dns_name) {
  lock_round_trip_over_tls(&(tls_ok_case_t){.key = "tls-sni", .server_name = "localhost"});
}

/* A certificate for another name works once server_name says that name:
 * the name checked is the option's, not the address dialled. */
TEST(server_name_overrides_the_address_dialled) {
  lock_round_trip_over_tls(&(tls_ok_case_t){
      .key = "tls-override", .cert = TU_WRONG_HOST, .server_name = "wrong.example"});
}

/* --tls-auth-clients yes and a client certificate signed by the CA. */
TEST(mutual_tls_with_a_client_certificate) {
  lock_round_trip_over_tls(
      &(tls_ok_case_t){.key = "tls-mutual", .auth_clients = 1, .client_cert = 1});
}

/* verify_peer 0 (tests only) accepts a chain nobody trusts. */
TEST(verify_peer_off_accepts_an_untrusted_certificate) {
  lock_round_trip_over_tls(&(tls_ok_case_t){.key = "tls-noverify", .untrusted_without_check = 1});
}

/* min_version LK_TLS_1_3 against a server that offers 1.2 and 1.3. */
TEST(tls_1_3_as_the_oldest_version) {
  lock_round_trip_over_tls(&(tls_ok_case_t){.key = "tls-13", .min_version = LK_TLS_1_3});
}

/* Each attempt has its own session: after a restart the client shakes hands
 * again and the hold, kept by the watchdog's renewals, goes on. */
TEST(reconnects_over_tls_after_a_server_restart) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, TU_GOOD, 0);
  lk_lock_t *a;
  tu_client_opts(&fx, t, &o, &log);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  fx_start_client(&fx, &o);
  a = fx_lock(&fx, "tls-restart");
  ASSERT_OK(sx_acquire(&fx, a, 0, 30000));
  ASSERT_EQ(tu_stats(fx.c).tls_handshakes, 1);
  ASSERT_EQ(rt_server_restart(fx.srv), 0);
  FX_EVENTUALLY(&fx, tu_stats(fx.c).tls_handshakes >= 2 && lk_client_is_connected(fx.c), 10000);
  /* The restarted server (no AOF) lost the key: the lock is free again. */
  {
    lk_lock_t *b = fx_lock(&fx, "tls-restart-2");
    ASSERT_OK(sx_acquire(&fx, b, 0, 30000));
    ASSERT_OK(sx_run(&fx, lk_lock_release, b, NULL));
    fx_close_lock(&fx, b);
  }
  ASSERT_EQ(tu_stats(fx.c).tls_failures, 0);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 0);
  fx_close_lock(&fx, a);
  tu_finish(&fx, t);
}

/* One set-up lk_client_new refuses: NULL keeps tu_client_opts's choice.
 * Nothing is made, and the reason logged names needle (when given). */
static void expect_client_new_refused(fx_t *fx, rt_tls_certs_t *t, const char *ca_file,
                                      const char *cert_file, const char *key_file, int want,
                                      const char *needle) {
  lk_client_opts_t o;
  tu_log_t log;
  lk_client_t *c = NULL;
  tu_client_opts(fx, t, &o, &log);
  if (ca_file != NULL)
    o.tls.ca_file = ca_file;
  o.tls.cert_file = cert_file;
  o.tls.key_file = key_file;
  ASSERT_EQ(lk_client_new(&fx->loop, &o, &c), want);
  ASSERT_NULL(c);
  if (needle != NULL) {
    ASSERT_EQ(log.count[LK_LOG_ERROR], 1);
    ASSERT(tu_has(log.first_error, needle));
  }
}

/* Files OpenSSL cannot use fail lk_client_new at once with LK_ETLS (the
 * reason logged at LK_LOG_ERROR), TLS over a unix socket with LK_EINVAL;
 * nothing is left allocated (ASan and valgrind check). */
TEST(bad_tls_files_fail_client_new) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, TU_GOOD, 0);
  lk_client_t *c = NULL;

  expect_client_new_refused(&fx, t, "/nonexistent/latchkey-ca.pem", NULL, NULL, LK_ETLS,
                            "/nonexistent/latchkey-ca.pem");
  /* PEM, but no certificate in it */
  expect_client_new_refused(&fx, t, t->server_key, NULL, NULL, LK_ETLS, NULL);
  /* another certificate's key */
  expect_client_new_refused(&fx, t, NULL, t->client_cert, t->server_key, LK_ETLS,
                            "does not match");
  expect_client_new_refused(&fx, t, NULL, t->client_cert, "/nonexistent/latchkey-key.pem",
                            LK_ETLS, NULL);
  /* a certificate without its key */
  expect_client_new_refused(&fx, t, NULL, t->client_cert, NULL, LK_EINVAL, NULL);

  tu_client_opts(&fx, t, &o, &log);
  o.unix_path = rt_server_unix_path(fx.srv);
  ASSERT_EQ(lk_client_new(&fx.loop, &o, &c), LK_EINVAL);
  ASSERT_NULL(c);
  tu_finish(&fx, t);
}

/* A forked child frees its copy of a connected TLS client (memory only):
 * not a byte reaches the parent's session, which would otherwise break (a
 * record out of sequence), so the parent's next command still works. */
TEST(forked_child_frees_a_tls_client_without_io) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, TU_GOOD, 0);
  lk_lock_t *a;
  pid_t pid;
  tu_client_opts(&fx, t, &o, &log);
  fx_start_client(&fx, &o);
  a = fx_lock(&fx, "tls-fork");
  ASSERT_OK(sx_acquire(&fx, a, 0, 60000));
  pid = rt_fork_flushed();
  if (pid == 0) {
    int bad = 0;
    if (lk_lock_close(a, NULL) != LK_EFORKED)
      bad |= 1;
    if (lk_client_close(fx.c, NULL) != LK_EFORKED)
      bad |= 2;
    _exit(bad);
  }
  rt_wait_child_exit_0(pid);
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-fork"), 1);
  ASSERT_OK(sx_run(&fx, lk_lock_release, a, NULL));
  ASSERT_EQ(rt_cmd_int(fx.srv, "EXISTS tls-fork"), 0);
  ASSERT_EQ(tu_stats(fx.c).tls_handshakes, 1);
  ASSERT_EQ(tu_stats(fx.c).reconnects, 0);
  fx_close_lock(&fx, a);
  tu_finish(&fx, t);
}
