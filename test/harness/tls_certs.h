/* Certificates for TLS tests, made with the openssl command-line tool into a
 * private temporary directory (removed by rt_tls_certs_free, or by the next
 * test process's sweep when this one was killed: the directory is named and
 * owned like redis_server.h's). EC P-256 keys, so making the whole set takes
 * a few tens of milliseconds.
 *
 *   ca            the test CA (self-signed)
 *   other_ca      an unrelated CA: trusting it instead is "wrong CA"
 *   server_*      signed by ca, for IP 127.0.0.1 and DNS localhost, usable
 *                 as a server and as a client certificate (Redis presents
 *                 it on replication and cluster-bus links too)
 *   expired_cert  server_key's, signed by ca, valid 2020-01-01 to 2020-01-02
 *   wrong_host_cert  server_key's, signed by ca, for DNS wrong.example only
 *   client_*      signed by ca, for client authentication (mutual TLS)
 *
 * Same thread rules as redis_server.h. $LK_OPENSSL names the tool (default
 * openssl, found on PATH). */
#ifndef LK_TEST_HARNESS_TLS_CERTS_H
#define LK_TEST_HARNESS_TLS_CERTS_H

#ifdef __cplusplus
extern "C" {
#endif

#define RT_TLS_PATH_MAX 600

typedef struct rt_tls_certs_s {
  char dir[RT_TLS_PATH_MAX];
  char ca[RT_TLS_PATH_MAX], other_ca[RT_TLS_PATH_MAX];
  char server_cert[RT_TLS_PATH_MAX], server_key[RT_TLS_PATH_MAX];
  char expired_cert[RT_TLS_PATH_MAX];
  char wrong_host_cert[RT_TLS_PATH_MAX];
  char client_cert[RT_TLS_PATH_MAX], client_key[RT_TLS_PATH_MAX];
} rt_tls_certs_t;

/* Makes the whole set; NULL after printing why (the caller ASSERTs). */
rt_tls_certs_t *rt_tls_certs_make(void);
/* Removes the directory (unless LK_TEST_KEEP_DIRS) and frees. NULL: no-op. */
void rt_tls_certs_free(rt_tls_certs_t *t);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_TLS_CERTS_H */
