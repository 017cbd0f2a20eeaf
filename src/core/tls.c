/* Layer 1 (connections): may call layer 0 only (docs/design.md, "Layers"). */
/* TLS with OpenSSL over memory BIOs (core/tls.h, docs/tls.md). */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/tls.h"

/* The client's context, and what keeps its failure reports to one. */
struct lk__tls_ctx_s {
  SSL_CTX *ctx;
  int failing;        /* a failure was logged since the last ready connection */
  char last_why[160]; /* its reason, to tell a repeat from news */
};

struct lk__tls_s {
  SSL *ssl; /* owns both BIOs */
  BIO *rbio; /* ciphertext from the socket, read by OpenSSL */
  BIO *wbio; /* ciphertext written by OpenSSL, for the socket */
  unsigned established : 1; /* SSL_do_handshake returned 1 */
  unsigned confirmed : 1;   /* application data came through */
  char peer[280];           /* "host:port", for messages */
};

/* OpenSSL's reason for the last failure: the verification result when the
 * chain or the name was refused (its own words, e.g. "certificate has
 * expired"), else the first error queued. The thread's error queue is left
 * empty: it is shared with whatever else the application does with
 * OpenSSL. */
static void reason(SSL *ssl, int ssl_err, char *why, size_t len) {
  long vr = ssl != NULL ? SSL_get_verify_result(ssl) : X509_V_OK;
  unsigned long e = ERR_peek_error();
  if (vr != X509_V_OK && ERR_GET_REASON(e) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    snprintf(why, len, "certificate verify failed: %s", X509_verify_cert_error_string(vr));
  } else if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(why, len, "%s", buf);
  } else {
    snprintf(why, len, "TLS failure (SSL_get_error %d)", ssl_err);
  }
  ERR_clear_error();
}

/* An encrypted key would make OpenSSL prompt on the terminal: refuse it. */
static int no_passphrase(char *buf, int size, int rwflag, void *u) {
  (void)buf, (void)size, (void)rwflag, (void)u;
  return 0;
}

static int setup_failed(lk_client_t *c, SSL_CTX *ctx, const char *what, const char *path) {
  char why[256];
  reason(NULL, 0, why, sizeof(why));
  lk__log(c, LK_LOG_ERROR, "TLS set-up: %s%s%s: %s", what, path ? " " : "", path ? path : "",
          why);
  SSL_CTX_free(ctx);
  return LK_ETLS;
}

int lk__tls_client_new(lk_client_t *c) {
  const lk__opts_t *o = &c->o;
  SSL_CTX *ctx;
  if (!o->tls_enable)
    return 0;
  /* Redis speaks TLS on its TCP tls-port only. */
  if (o->unix_path != NULL) {
    lk__log(c, LK_LOG_ERROR, "TLS set-up: TLS is not spoken over a unix socket");
    return LK_EINVAL;
  }
  ERR_clear_error();
  ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == NULL) {
    ERR_clear_error();
    return LK_ENOMEM;
  }
  SSL_CTX_set_default_passwd_cb(ctx, no_passphrase);
  /* Redis never renegotiates; refusing it keeps every write one SSL_write. */
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  if (!SSL_CTX_set_min_proto_version(
          ctx, o->tls_min_version == LK_TLS_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION))
    return setup_failed(c, ctx, "minimum protocol version", NULL);
  if (o->tls_ca_file != NULL || o->tls_ca_dir != NULL) {
    if (!SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, o->tls_ca_dir))
      return setup_failed(c, ctx, "cannot load CA", o->tls_ca_file ? o->tls_ca_file : o->tls_ca_dir);
  } else if (o->tls_verify_peer && !SSL_CTX_set_default_verify_paths(ctx)) {
    return setup_failed(c, ctx, "cannot load the system's trusted CAs", NULL);
  }
  SSL_CTX_set_verify(ctx, o->tls_verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
  if (o->tls_cert_file != NULL) {
    if (!SSL_CTX_use_certificate_chain_file(ctx, o->tls_cert_file))
      return setup_failed(c, ctx, "cannot load client certificate", o->tls_cert_file);
    if (!SSL_CTX_use_PrivateKey_file(ctx, o->tls_key_file, SSL_FILETYPE_PEM))
      return setup_failed(c, ctx,
                          ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH
                              ? "client key does not match its certificate"
                              : "cannot load client key",
                          o->tls_key_file);
    if (!SSL_CTX_check_private_key(ctx))
      return setup_failed(c, ctx, "client key does not match its certificate", o->tls_key_file);
  }
  c->tls = lk__calloc(1, sizeof(*c->tls));
  if (c->tls == NULL) {
    SSL_CTX_free(ctx);
    return LK_ENOMEM;
  }
  c->tls->ctx = ctx;
  return 0;
}

void lk__tls_client_free(lk_client_t *c) {
  if (c->tls == NULL)
    return;
  SSL_CTX_free(c->tls->ctx);
  lk__free(c->tls);
  c->tls = NULL;
}

static int is_ip_address(const char *s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

int lk__tls_conn_new(lk__conn_t *conn, const char *host, int port) {
  lk_client_t *c = conn->client;
  const char *name = c->o.tls_server_name != NULL ? c->o.tls_server_name : host;
  lk__tls_t *t;
  int ip = is_ip_address(name);

  lk__tls_conn_free(conn);
  t = lk__calloc(1, sizeof(*t));
  if (t == NULL)
    return LK_ENOMEM;
  snprintf(t->peer, sizeof(t->peer), "%s:%d", host, port);
  ERR_clear_error();
  t->ssl = SSL_new(c->tls->ctx);
  t->rbio = BIO_new(BIO_s_mem());
  t->wbio = BIO_new(BIO_s_mem());
  if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
    BIO_free(t->rbio);
    BIO_free(t->wbio);
    SSL_free(t->ssl);
    lk__free(t);
    ERR_clear_error();
    return LK_ENOMEM;
  }
  SSL_set_bio(t->ssl, t->rbio, t->wbio); /* the SSL owns both from here */
  SSL_set_connect_state(t->ssl);
  /* SNI carries host names only (RFC 6066); an address is checked as one. */
  if ((!ip && !SSL_set_tlsext_host_name(t->ssl, name)) ||
      (c->o.tls_verify_peer &&
       (ip ? !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name)
           : !SSL_set1_host(t->ssl, name)))) {
    SSL_free(t->ssl);
    lk__free(t);
    ERR_clear_error();
    return LK_ETLS;
  }
  if (!ip && c->o.tls_verify_peer)
    SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  conn->tls = t;
  return 0;
}

void lk__tls_conn_free(lk__conn_t *conn) {
  if (conn->tls == NULL)
    return;
  SSL_free(conn->tls->ssl); /* and its BIOs; sends nothing */
  lk__free(conn->tls);
  conn->tls = NULL;
}

int lk__tls_established(const lk__conn_t *conn) { return conn->tls->established; }
int lk__tls_confirmed(const lk__conn_t *conn) { return conn->tls->confirmed; }
const char *lk__tls_peer(const lk__conn_t *conn) { return conn->tls->peer; }

int lk__tls_feed(lk__conn_t *conn, const char *p, size_t n) {
  int w;
  if (n > (size_t)INT32_MAX)
    return LK_ENOMEM;
  w = BIO_write(conn->tls->rbio, p, (int)n);
  if (w != (int)n) {
    ERR_clear_error();
    return LK_ENOMEM;
  }
  return 0;
}

int lk__tls_handshake(lk__conn_t *conn, char *why, size_t why_len) {
  lk__tls_t *t = conn->tls;
  int rc, err;
  ERR_clear_error(); /* SSL_get_error reads the queue */
  rc = SSL_do_handshake(t->ssl);
  if (rc == 1) {
    t->established = 1;
    return 1;
  }
  err = SSL_get_error(t->ssl, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
    return 0;
  reason(t->ssl, err, why, why_len);
  return LK_ETLS;
}

ssize_t lk__tls_read(lk__conn_t *conn, char *buf, size_t cap, char *why, size_t why_len) {
  lk__tls_t *t = conn->tls;
  int rc, err;
  ERR_clear_error();
  rc = SSL_read(t->ssl, buf, cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap);
  if (rc > 0) {
    /* Under TLS 1.3 the server judges a client certificate after the
     * client's side of the handshake is done: the handshake counts as
     * completed once the server's first bytes come through it. */
    if (!t->confirmed) {
      t->confirmed = 1;
      conn->client->stats.tls_handshakes++;
    }
    return rc;
  }
  err = SSL_get_error(t->ssl, rc);
  if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE)
    return LK__TLS_WANT;
  if (err == SSL_ERROR_ZERO_RETURN) {
    ERR_clear_error();
    return LK__TLS_EOF;
  }
  reason(t->ssl, err, why, why_len);
  return LK_ETLS;
}

int lk__tls_write(lk__conn_t *conn, const char *p, size_t n, char *why, size_t why_len) {
  lk__tls_t *t = conn->tls;
  /* A memory BIO takes everything, so one call encrypts all of it (no
   * partial writes: SSL_MODE_ENABLE_PARTIAL_WRITE is off). */
  while (n > 0) {
    int chunk = n > (size_t)INT32_MAX ? INT32_MAX : (int)n;
    int rc;
    ERR_clear_error();
    rc = SSL_write(t->ssl, p, chunk);
    if (rc <= 0) {
      reason(t->ssl, SSL_get_error(t->ssl, rc), why, why_len);
      return LK_ETLS;
    }
    p += rc;
    n -= (size_t)rc;
  }
  return 0;
}

size_t lk__tls_pending(const lk__conn_t *conn) { return BIO_ctrl_pending(conn->tls->wbio); }

size_t lk__tls_take(lk__conn_t *conn, char *dst, size_t n) {
  int r = BIO_read(conn->tls->wbio, dst, n > (size_t)INT32_MAX ? INT32_MAX : (int)n);
  return r > 0 ? (size_t)r : 0;
}

void lk__tls_report_failure(lk__conn_t *conn, const char *why) {
  lk_client_t *c = conn->client;
  struct lk__tls_ctx_s *x = c->tls;
  const char *peer = conn->tls != NULL ? conn->tls->peer : "server";
  lk_log_level_t level = !x->failing                        ? LK_LOG_ERROR
                         : strcmp(x->last_why, why) != 0 ? LK_LOG_INFO
                                                         : LK_LOG_DEBUG;
  c->stats.tls_failures++;
  lk__client_set_error(c, "TLS with %s: %s", peer, why);
  lk__log(c, level, "TLS with %s failed: %s%s", peer, why,
          level == LK_LOG_ERROR ? " (repeats are logged at debug level until a connection succeeds)"
                                : "");
  x->failing = 1;
  snprintf(x->last_why, sizeof(x->last_why), "%s", why);
}

void lk__tls_on_ready(lk__conn_t *conn) {
  struct lk__tls_ctx_s *x = conn->client->tls;
  if (x != NULL)
    x->failing = 0;
}
