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

#include <stddef.h>

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

/* Forking while a proxy thread is inside malloc leaves the child a locked
 * allocator (glibc guards its own locks at fork; GCC 12's AddressSanitizer
 * does not, and its child then hangs in its first malloc). rt_worker_start
 * parks every running proxy's thread between two callbacks around fork(),
 * and lets the child drop the registry. */
void rt_proxies_park_all(void);
void rt_proxies_unpark_all(void);
void rt_proxies_forked_child(void);

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
 * not connected upstream until the blackhole is turned off.
 * No TCP stream loses bytes and goes on: a connection that lost bytes here
 * and carries traffic again hands the client replies to other commands.
 * Let the client's reply timeout drop it first, or rt_proxy_reset_all
 * before turning the blackhole off; rt_proxy_pause models a partition that
 * heals (bytes delivered late). */
void rt_proxy_blackhole(rt_proxy_t *p, int on);
/* Hold each chunk read from then on for ms milliseconds in each direction,
 * keeping order (a chunk never overtakes an earlier one). 0 turns it off. */
void rt_proxy_delay(rt_proxy_t *p, int ms);
/* Client connections currently open (accepted, not refused, not torn down). */
int rt_proxy_connections(rt_proxy_t *p);
/* The next chunk read from the server, on any connection, is delivered
 * without its last byte, then that connection closes (FIN on both legs):
 * the stream ends inside its last unit. The bytes are not read as RESP, so
 * this cuts encrypted streams too (a TLS record cut mid-way).
 * rt_proxy_chunks_cut counts the cuts done. */
void rt_proxy_cut_next_chunk(rt_proxy_t *p);
int rt_proxy_chunks_cut(rt_proxy_t *p);

/* ---- pausing ----------------------------------------------------------------
 * While on, bytes in that direction (RT_PROXY_UP: client to server,
 * RT_PROXY_DOWN: server to client, RT_PROXY_BOTH) are read and held, never
 * dropped; turning it off delivers them in order. Reading stops at the
 * per-connection high-water mark, as with a slow peer. */
enum { RT_PROXY_UP = 0, RT_PROXY_DOWN = 1, RT_PROXY_BOTH = 2 };
void rt_proxy_pause(rt_proxy_t *p, int dir, int on);

/* ---- reply rules ------------------------------------------------------------
 * The proxy scans both streams as RESP (resp_scan.h): requests client to
 * server, reply frames back, which line up one to one on a connection (a
 * SUBSCRIBE-family command owes one frame per channel; pub/sub pushes are
 * not replies). One rule at a time acts on the reply to the k-th request,
 * counted over every connection from the moment the rule is armed, whose
 * first words match `match` case-insensitively ("EVALSHA <sha>", "PUBLISH",
 * "" or NULL for any request). Replies are forwarded frame by frame, so a
 * rule acts on whole replies. Scanning stops on a connection whose bytes
 * stop being RESP or were lost in a blackhole (it then forwards blindly). */
typedef enum {
  /* Drop that reply and go on: the client's FIFO matching is then off by
   * one (a real network cannot do this; for robustness checks only). */
  RT_PROXY_DROP = 1,
  /* Drop it and everything after it, deliver what came before, then close
   * the connection (FIN): the server ran the command, the reply was lost
   * with the connection. */
  RT_PROXY_DROP_CUT,
  /* Drop it and every later reply; the connection stays open: the client
   * must give up on its own (reply timeout). */
  RT_PROXY_DROP_STALL,
  /* Hold it and every later reply until rt_proxy_release. */
  RT_PROXY_HOLD,
  /* Send bytes (copied) instead of it: hostile or unexpected replies. */
  RT_PROXY_REPLACE,
  /* Send bytes (copied), then the real reply: an unsolicited reply arriving
   * just before it, which shifts every later reply on that connection by one
   * unless the client notices. */
  RT_PROXY_INSERT,
  /* Deliver the first half of it (at least one byte), then close the
   * connection (FIN) as RT_PROXY_DROP_CUT does: a reply cut off mid-frame. */
  RT_PROXY_TRUNCATE
} rt_proxy_action_t;

enum {
  RT_PROXY_RULE_NONE = 0,
  RT_PROXY_RULE_ARMED,   /* waiting for the k-th matching request */
  RT_PROXY_RULE_MATCHED, /* request seen, its reply not yet */
  RT_PROXY_RULE_APPLIED
};

/* Arms a rule, replacing any earlier one; k <= 0 disarms. */
void rt_proxy_on_reply(rt_proxy_t *p, const char *match, int k, rt_proxy_action_t action,
                       const void *bytes, size_t len);
int rt_proxy_rule_state(rt_proxy_t *p);
/* As rt_proxy_on_reply, but acting on every matching reply from now on (the
 * rule stays ARMED) until another rule replaces it: a server that always
 * answers that way. A connection holds one pending action: with several
 * matching requests in flight on it, only the last one's reply is acted on. */
void rt_proxy_on_every_reply(rt_proxy_t *p, const char *match, rt_proxy_action_t action,
                             const void *bytes, size_t len);
/* Replies the current rule acted on. */
long long rt_proxy_rule_applied(rt_proxy_t *p);
/* Delivers the replies held by RT_PROXY_HOLD, in order, and stops holding. */
void rt_proxy_release(rt_proxy_t *p);
/* Requests seen since the proxy started whose first words match (same rule
 * as above), over all connections. */
long long rt_proxy_requests(rt_proxy_t *p, const char *match);

#ifdef __cplusplus
}
#endif
#endif /* LK_TEST_HARNESS_PROXY_H */
