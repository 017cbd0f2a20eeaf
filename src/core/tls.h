#ifndef LK_CORE_TLS_H
#define LK_CORE_TLS_H

/* TLS on the client's connections (docs/tls.md), with OpenSSL over the
 * connection's own libuv stream: the socket stays ours (core/conn.c) and
 * OpenSSL only ever sees two memory BIOs. Ciphertext read from the socket is
 * fed in; plaintext comes out of lk__tls_read; plaintext given to
 * lk__tls_write comes out as ciphertext for the socket (lk__tls_take).
 *
 * One context per client (lk__tls_client_new at lk_client_new, from the
 * options' tls_* fields), one session state per connection attempt
 * (lk__tls_conn_new when the attempt starts, freed when it ends). Nothing
 * here does I/O: freeing is safe in a forked child. */

#include <stddef.h>
#include <sys/types.h>

#include "core/internal.h"

/* What lk__tls_read returns besides a byte count. */
enum {
  LK__TLS_WANT = 0,  /* no whole record yet: feed more */
  LK__TLS_EOF = -1   /* the server closed the session (close_notify) */
};

/* Builds the client's context when tls_enable is set (nothing otherwise):
 * trusted CAs (ca_file / ca_dir, or the system store), verification, the
 * client certificate and key (checked to match), the oldest version.
 * Returns 0, LK_EINVAL (TLS asked for over a unix socket), LK_ETLS (a file
 * OpenSSL cannot load, or a key that does not match its certificate; the
 * reason is logged at LK_LOG_ERROR) or LK_ENOMEM. */
int lk__tls_client_new(lk_client_t *c);
void lk__tls_client_free(lk_client_t *c);

/* A new session for conn towards host:port (host: the name or address
 * connected to; SNI and the name checked come from it unless the options
 * name a server). conn->tls is set. 0, LK_ENOMEM or LK_ETLS. */
int lk__tls_conn_new(lk__conn_t *conn, const char *host, int port);
/* Frees conn->tls (NULL is fine) and sets it to NULL. No I/O. */
void lk__tls_conn_free(lk__conn_t *conn);

/* Whether the client's side of the handshake is done. */
int lk__tls_established(const lk__conn_t *conn);
/* Whether the server sent application data through the session yet. */
int lk__tls_confirmed(const lk__conn_t *conn);
/* "host:port" the session was opened towards (for messages). */
const char *lk__tls_peer(const lk__conn_t *conn);

/* Ciphertext read from the socket. 0 or LK_ENOMEM. */
int lk__tls_feed(lk__conn_t *conn, const char *p, size_t n);
/* Drives the handshake: 1 done, 0 more input needed (its output waits in
 * lk__tls_pending), LK_ETLS with the reason in why. */
int lk__tls_handshake(lk__conn_t *conn, char *why, size_t why_len);
/* Decrypts into buf: a byte count > 0, LK__TLS_WANT, LK__TLS_EOF, or
 * LK_ETLS with the reason in why. A read may also produce output (a key
 * update's answer): the caller flushes after reading. */
ssize_t lk__tls_read(lk__conn_t *conn, char *buf, size_t cap, char *why, size_t why_len);
/* Encrypts all of p. 0, or LK_ETLS with the reason in why. */
int lk__tls_write(lk__conn_t *conn, const char *p, size_t n, char *why, size_t why_len);
/* Ciphertext waiting for the socket, and taking up to n bytes of it. */
size_t lk__tls_pending(const lk__conn_t *conn);
size_t lk__tls_take(lk__conn_t *conn, char *dst, size_t n);

/* A failure worth reporting: counted, recorded as the client's error text,
 * and logged once: the first at LK_LOG_ERROR, the same reason again at
 * LK_LOG_DEBUG and a different one at LK_LOG_INFO, until a TLS connection
 * becomes ready (lk__tls_on_ready). The caller drops the connection. */
void lk__tls_report_failure(lk__conn_t *conn, const char *why);
/* A TLS connection finished its handshakes: failures are news again. */
void lk__tls_on_ready(lk__conn_t *conn);

#endif /* LK_CORE_TLS_H */
