/* A loopback TCP proxy for fault injection, running its own libuv loop on its
 * own thread so it keeps forwarding while the test's loop is blocked.
 *
 *   client --> 127.0.0.1:rt_proxy_port(p) --> 127.0.0.1:target_port
 *
 * Every control call may come from any thread and returns only after the
 * proxy thread has applied it, so a test can act right after the call (for
 * example: after rt_proxy_reset_all the RSTs have been sent).
 *
 * Normal forwarding: bytes are relayed in order with TCP_NODELAY on both
 * legs; an EOF from one side is passed on as a FIN on both sides once the
 * bytes queued before it are written; a reset or error on one side resets
 * both. If the target refuses, the client is reset. */
#ifndef LK_TEST_HARNESS_PROXY_H
#define LK_TEST_HARNESS_PROXY_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rt_proxy_s rt_proxy_t;

/* Listens on a free 127.0.0.1 port; NULL after printing on failure. */
rt_proxy_t *rt_proxy_start(int target_port);
int rt_proxy_port(const rt_proxy_t *p);
/* Resets every connection, closes everything, joins the thread, frees. NULL is
 * a no-op. */
void rt_proxy_stop(rt_proxy_t *p);

/* RST both legs of every current connection (SO_LINGER 0 close). */
void rt_proxy_reset_all(rt_proxy_t *p);
/* Close both legs of every current connection with FIN; bytes not yet
 * forwarded are dropped. */
void rt_proxy_close_all(rt_proxy_t *p);
/* While on, new connections are accepted and reset at once (a dead
 * endpoint); existing ones are untouched. */
void rt_proxy_refuse(rt_proxy_t *p, int on);
/* While on, bytes in both directions are read and dropped (also those queued
 * by rt_proxy_delay); connections stay open; new connections are accepted but
 * not connected upstream until the blackhole is turned off. */
void rt_proxy_blackhole(rt_proxy_t *p, int on);
/* Hold each chunk read from then on for ms milliseconds in each direction,
 * keeping order (a chunk never overtakes an earlier one). 0 turns it off. */
void rt_proxy_delay(rt_proxy_t *p, int ms);
/* Client connections currently open (accepted, not refused, not torn down). */
int rt_proxy_connections(rt_proxy_t *p);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_PROXY_H */
