/* TLS that fails (docs/tls.md, "Failures"): a CA that did not sign the
 * server's certificate, an expired certificate, a name the certificate does
 * not carry (server_name, or the address dialled), mutual TLS without a
 * client certificate, and a plaintext port. Each ends queued work with
 * LK_ETLS (the plaintext port: LK_ECONN or LK_ETLS, see tls.md) and
 * OpenSSL's reason as lk_client_error_text, at once and without a hang; a
 * budgeted wait ends within one connection attempt instead of spinning;
 * and however often the client reconnects meanwhile, the failure is logged
 * once at LK_LOG_ERROR, the repeats at LK_LOG_DEBUG. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "tls_util.h"

/* Reconnects come quickly, so a log line per attempt would show. */
static void fast_reconnects(lk_client_opts_t *o) {
  o->reconnect_min_ms = 20;
  o->reconnect_max_ms = 50;
}

/* The failure every case checks: a single try ends with `want` and the
 * reason in the error text, a budgeted wait ends the same way long before
 * its budget, several more attempts fail meanwhile, and the error log line
 * was written once. */
static void expect_failure(fx_t *fx, tu_log_t *log, int want, const char *reason) {
  lk_lock_t *l = fx_lock(fx, "tls-fail");
  sx_t s;
  int64_t t0;
  const char *text;
  ASSERT_EQ(sx_acquire_in(&fx->loop, l, 0, 30000, &s), want);
  text = lk_client_error_text(fx->c);
  if (!tu_has(text, reason))
    FAIL("error text \"%s\" does not say \"%s\"", text, reason);
  ASSERT(tu_has(text, "TLS"));
  ASSERT_EQ(log->count[LK_LOG_ERROR], 1);
  ASSERT(tu_has(log->first_error, reason));

  /* A 20 s wait does not spin on a permanent failure: it ends with the
   * first attempt that fails (LK_ETLS, as queued work ends with LK_EAUTH
   * when the server refuses the password). */
  t0 = rt_now_ms();
  ASSERT_EQ(sx_acquire_in(&fx->loop, l, 20000, 30000, &s), want);
  ASSERT_LT(rt_now_ms() - t0, rt_scaled_ms(5000));

  /* Reconnect attempts go on (each fails the same way); still one line. */
  FX_EVENTUALLY(fx, tu_stats(fx->c).tls_failures >= 5, 10000);
  ASSERT_EQ(log->count[LK_LOG_ERROR], 1);
  ASSERT_GE(log->count[LK_LOG_DEBUG], 4);
  ASSERT_EQ(tu_stats(fx->c).tls_handshakes, 0);
  ASSERT(!lk_client_is_connected(fx->c));
  ASSERT_EQ(rt_cmd_int(fx->srv, "EXISTS tls-fail"), 0);
  fx_close_lock(fx, l);
}

/* What a failing case varies: the CA the client trusts (the server's own
 * unless other_ca) and the name it checks (the address dialled unless
 * server_name). */
typedef struct {
  int other_ca;
  const char *server_name;
} tweak_t;

/* Starts a client with quick reconnects over the server fx runs with t's
 * certificates, checks that it fails with `want` and `reason`, and stops. */
static void client_fails(fx_t *fx, rt_tls_certs_t *t, tweak_t tw, int want, const char *reason) {
  lk_client_opts_t o;
  tu_log_t log;
  tu_client_opts(fx, t, &o, &log);
  if (tw.other_ca)
    o.tls.ca_file = t->other_ca;
  if (tw.server_name != NULL)
    o.tls.server_name = tw.server_name;
  fast_reconnects(&o);
  fx_start_client(fx, &o);
  expect_failure(fx, &log, want, reason);
  tu_finish(fx, t);
}

/* The same over a server started here with certificates of kind `which`. */
static void server_kind_fails(int which, int auth_clients, tweak_t tw, const char *reason) {
  fx_t fx;
  rt_tls_certs_t *t = tu_start_server(&fx, which, auth_clients);
  client_fails(&fx, t, tw, LK_ETLS, reason);
}

/* Redis sends its CA along: "self-signed certificate in certificate chain". */
TEST(wrong_ca_is_etls) {
  server_kind_fails(TU_GOOD, 0, (tweak_t){.other_ca = 1}, "certificate verify failed");
}

TEST(expired_certificate_is_etls) {
  server_kind_fails(TU_EXPIRED, 0, (tweak_t){0}, "certificate has expired");
}

/* server_name names a host the certificate is not for. */
TEST(hostname_mismatch_is_etls) {
  server_kind_fails(TU_GOOD, 0, (tweak_t){.server_name = "wrong.example"}, "hostname mismatch");
}

/* By default the address dialled is checked: a certificate for a DNS name
 * only does not cover 127.0.0.1. */
TEST(ip_address_mismatch_is_etls) {
  server_kind_fails(TU_WRONG_HOST, 0, (tweak_t){0}, "IP address mismatch");
}

/* --tls-auth-clients yes: the server refuses a client without a
 * certificate. Under TLS 1.3 it says so after the client's side of the
 * handshake is done, with an alert the next read meets. */
TEST(mutual_tls_without_a_client_certificate_is_etls) {
  server_kind_fails(TU_GOOD, 1, (tweak_t){0}, "certificate required");
}

/* The same under TLS 1.2, where the refusal ends the handshake itself. */
TEST(mutual_tls_without_a_client_certificate_over_tls_1_2_is_etls) {
  fx_t fx;
  rt_server_opts_t so;
  const char *args[] = {"--tls-protocols", "TLSv1.2", NULL};
  rt_tls_certs_t *t = rt_tls_certs_make();
  ASSERT_NOT_NULL(t);
  rt_server_opts_init(&so);
  so.tls_cert_file = t->server_cert;
  so.tls_key_file = t->server_key;
  so.tls_ca_file = t->ca;
  so.tls_auth_clients = 1;
  so.extra_args = args;
  fx_start_server(&fx, &so);
  client_fails(&fx, t, (tweak_t){0}, LK_ETLS, "alert");
}

/* A TLS client on the plaintext port. The server takes the ClientHello for
 * the start of an inline command: it answers an error when the hello's
 * random bytes hold a newline (OpenSSL then refuses the answer: LK_ETLS),
 * and otherwise waits for the rest of the line, so the handshake runs into
 * the connect timeout (LK_ECONN, as for any server that stops answering,
 * but reported as the TLS failure it most likely is). Either way: a clear
 * reason, one error line, no hang. */
TEST(plaintext_port_is_a_tls_failure) {
  fx_t fx;
  lk_client_opts_t o;
  tu_log_t log;
  rt_tls_certs_t *t = tu_start_server(&fx, TU_GOOD, 0);
  lk_lock_t *l;
  sx_t s;
  int64_t t0;
  int st;
  const char *text;
  tu_client_opts(&fx, t, &o, &log);
  o.port = rt_server_port(fx.srv);
  o.connect_timeout_ms = 300;
  fast_reconnects(&o);
  fx_start_client(&fx, &o);
  l = fx_lock(&fx, "tls-plain");
  t0 = rt_now_ms();
  st = sx_acquire_in(&fx.loop, l, 0, 30000, &s);
  ASSERT(st == LK_ECONN || st == LK_ETLS);
  ASSERT_LT(rt_now_ms() - t0, rt_scaled_ms(3000));
  text = lk_client_error_text(fx.c);
  ASSERT(tu_has(text, "TLS"));
  if (st == LK_ECONN && !tu_has(text, "no TLS answer"))
    FAIL("error text \"%s\" does not give the likely reason", text);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 1);
  /* A budgeted wait ends within its budget (LK_ETIMEDOUT when every try
   * timed out, LK_ETLS as soon as one was refused). */
  t0 = rt_now_ms();
  st = sx_acquire_in(&fx.loop, l, 1000, 30000, &s);
  ASSERT(st == LK_ETIMEDOUT || st == LK_ETLS || st == LK_ECONN);
  ASSERT_LT(rt_now_ms() - t0, rt_scaled_ms(1000 + 3000));
  FX_EVENTUALLY(&fx, tu_stats(fx.c).tls_failures >= 4, 10000);
  ASSERT_EQ(log.count[LK_LOG_ERROR], 1);
  ASSERT_EQ(tu_stats(fx.c).tls_handshakes, 0);
  fx_close_lock(&fx, l);
  tu_finish(&fx, t);
}
