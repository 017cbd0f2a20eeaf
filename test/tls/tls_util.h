/* Shared by the TLS tests (docs/tls.md): certificates made by the test
 * (tls_certs.h), a redis-server with a TLS port beside its plaintext one
 * (the side channel stays plaintext), client options pointing at the TLS
 * port, and a log callback that counts lines by level, so a test can check
 * that a failure is reported once and not once per reconnect. */
#ifndef LK_TEST_TLS_UTIL_H
#define LK_TEST_TLS_UTIL_H

#include <stdio.h>
#include <string.h>

#include "lk_fixture.h"
#include "tls_certs.h"

typedef struct tu_log_s {
  int count[4]; /* by lk_log_level_t */
  char first_error[512];
  char last[512];
} tu_log_t;

static inline void tu_on_log(lk_log_level_t level, const char *msg, void *arg) {
  tu_log_t *l = arg;
  if ((int)level >= 0 && (int)level < 4)
    l->count[level]++;
  if (level == LK_LOG_ERROR && l->count[LK_LOG_ERROR] == 1)
    snprintf(l->first_error, sizeof l->first_error, "%s", msg);
  snprintf(l->last, sizeof l->last, "%s", msg);
  if (getenv("LK_TEST_VERBOSE") != NULL)
    fprintf(stderr, "log %d: %s\n", (int)level, msg);
}

/* Which certificate the server presents (all with the set's server key). */
enum { TU_GOOD = 0, TU_EXPIRED, TU_WRONG_HOST };

/* Loop + certificates + a server presenting certificate `which`, client
 * certificates required when auth_clients. No client yet. */
static inline rt_tls_certs_t *tu_start_server(fx_t *fx, int which, int auth_clients) {
  rt_server_opts_t so;
  rt_tls_certs_t *t = rt_tls_certs_make();
  ASSERT_NOT_NULL(t);
  rt_server_opts_init(&so);
  so.tls_cert_file = which == TU_EXPIRED      ? t->expired_cert
                     : which == TU_WRONG_HOST ? t->wrong_host_cert
                                              : t->server_cert;
  so.tls_key_file = t->server_key;
  so.tls_ca_file = t->ca;
  so.tls_auth_clients = auth_clients;
  fx_start_server(fx, &so);
  ASSERT_GT(rt_server_tls_port(fx->srv), 0);
  return t;
}

/* Client options for the server's TLS port, trusting the test CA, with
 * timeouts scaled by LK_TEST_TIMING, logging into log (zeroed here). */
static inline void tu_client_opts(fx_t *fx, const rt_tls_certs_t *t, lk_client_opts_t *o,
                                  tu_log_t *log) {
  lk_client_opts_init(o);
  o->port = rt_server_tls_port(fx->srv);
  o->tls.enable = 1;
  o->tls.ca_file = t->ca;
  /* Liveness bounds: a handshake under valgrind on a loaded machine is slow. */
  o->connect_timeout_ms = rt_scaled_ms(2000);
  o->reply_timeout_ms = rt_scaled_ms(3000);
  memset(log, 0, sizeof *log);
  o->log = tu_on_log;
  o->log_arg = log;
}

static inline lk_client_stats_t tu_stats(lk_client_t *c) {
  lk_client_stats_t st;
  lk_client_get_stats(c, &st);
  return st;
}

/* Whether text contains needle (a test of an error text's content). */
static inline int tu_has(const char *text, const char *needle) {
  return text != NULL && strstr(text, needle) != NULL;
}

/* b starts waiting (20 s, the default lease) for the lock another holds:
 * its outcome into s; the caller runs the loop. */
static inline void tu_wait_behind(lk_lock_t *b, sx_t *s) {
  lk_lock_opts_t lo;
  lk_lock_opts_init(&lo);
  lo.wait_ms = 20000;
  memset(s, 0, sizeof *s);
  ASSERT_OK(lk_lock_acquire(b, &lo, sx_cb, s));
}

/* a's release lets the waiter (its acquire in s) in; the release is
 * answered too. */
static inline void tu_release_wakes(fx_t *fx, lk_lock_t *a, sx_t *s) {
  sx_t r;
  memset(&r, 0, sizeof r);
  ASSERT_OK(lk_lock_release(a, sx_cb, &r));
  rt_run_until(&fx->loop, &s->done, 5000);
  ASSERT_OK(s->status);
  rt_run_until(&fx->loop, &r.done, 5000);
  ASSERT_OK(r.status);
}

static inline void tu_finish(fx_t *fx, rt_tls_certs_t *t) {
  fx_finish(fx);
  rt_tls_certs_free(t);
}

#endif /* LK_TEST_TLS_UTIL_H */
