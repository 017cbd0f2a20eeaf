/* Replies are attributable (docs/design.md): a reply the server did not owe,
 * put in front of a real one by the proxy (RT_PROXY_INSERT), must never be
 * taken as a command's answer. Every script reply carries its request's tag,
 * so the extra reply is seen at once: the connection is dropped, everything
 * in flight on it ends as unknown (LK_EUNKNOWN) and is settled like a lost
 * reply. Without the tag, the extra reply answered the command and every
 * later reply answered the one after its own.
 *
 * Each case checks what a user relies on: an acquire reports success only
 * from its own grant (its fencing token is the server's), the object's view
 * and the server's agree once the outcome is settled, and nothing is left on
 * the server after close. Label fault, plus core (the check is the core's). */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "fault_util.h"

typedef struct ra_s {
  fx_t fx;
  rt_proxy_t *p;
  lk_lock_t *l;
  char acq[64], fenced[64], rel[64]; /* proxy matches: EVALSHA <sha> */
} ra_t;

static void match_of(char *out, size_t n, const char *script) {
  snprintf(out, n, "EVALSHA %s", lk__script_find(script)->sha1);
}

/* Server, proxy and client; nothing has run on the loop yet, so the client
 * has not connected: a rule armed now sees the first connection's commands. */
static void ra_start(ra_t *x, const char *name) {
  lk_client_opts_t o;
  memset(x, 0, sizeof *x);
  lk_client_opts_init(&o);
  o.reply_timeout_ms = rt_scaled_ms(3000);
  o.reconnect_min_ms = 20;
  o.reconnect_max_ms = 50;
  x->p = fx_start_proxied(&x->fx, &o);
  x->l = fx_lock(&x->fx, name);
  match_of(x->acq, sizeof x->acq, "lock/acquire");
  match_of(x->fenced, sizeof x->fenced, "lock/acquire_fenced");
  match_of(x->rel, sizeof x->rel, "lock/release");
}

/* Closes the lock, checks that the server kept nothing of it (key name),
 * then stops everything. */
static void ra_finish(ra_t *x, const char *name) {
  fx_close_lock(&x->fx, x->l);
  ASSERT(fx_wait_key_gone(&x->fx, name, 3000));
  ASSERT_EQ(rt_server_count_keys(x->fx.srv, name), 0);
  fx_finish(&x->fx);
  rt_proxy_stop(x->p);
}

/* Arms the proxy: the reply to the next command matching match gets action
 * with the bytes of the C string bytes (RT_PROXY_INSERT: sent before it). */
static void ra_rule(ra_t *x, const char *match, rt_proxy_action_t action, const char *bytes) {
  rt_proxy_on_reply(x->p, match, 1, action, bytes, strlen(bytes));
}

/* An acquire of the case's lock (budget wait_ms, 30 s lease, fenced or not)
 * run to its callback, past the rule the case armed, which must have been
 * applied: its outcome. */
static sx_t ra_acquire_past_the_rule(ra_t *x, int64_t wait_ms, int fenced) {
  sx_t s;
  fu_start_acquire(x->l, wait_ms, 30000, fenced, &s);
  rt_run_until(&x->fx.loop, &s.done, rt_scaled_ms(10000));
  ASSERT_EQ(rt_proxy_rule_state(x->p), RT_PROXY_RULE_APPLIED);
  return s;
}

static long long hold_on_server(ra_t *x, const char *name) {
  char *v = rt_cmd_str(x->fx.srv, "HGET %s %s", name, lk_lock_owner(x->l));
  long long n = v != NULL ? atoll(v) : 0;
  free(v);
  return n;
}

static lk_client_stats_t stats(ra_t *x) {
  lk_client_stats_t st;
  lk_client_get_stats(x->fx.c, &st);
  return st;
}

/* (a) An extra reply at connect, shaped like a fenced grant with a token the
 * server never handed out, arrives just before the first script's reply.
 * Taken as the acquire's answer it reported success with that token while
 * the real grant's reply answered the next command. Now: the acquire ends
 * with its own grant, counted once, with the server's token, and the release
 * leaves nothing. */
TEST(extra_reply_at_connect_is_not_taken_as_a_fenced_grant) {
  ra_t x;
  ra_start(&x, "ra-fenced");
  ra_rule(&x, x.fenced, RT_PROXY_INSERT, "*3\r\n:1\r\n:777\r\n:0\r\n");
  sx_t s = ra_acquire_past_the_rule(&x, rt_scaled_ms(5000), 1);
  ASSERT_OK(s.status);
  ASSERT_EQ(s.calls, 1);
  ASSERT_NE(lk_lock_token(x.l), 777);
  ASSERT_EQ(lk_lock_token(x.l), fx_token_counter(&x.fx, "ra-fenced"));
  ASSERT_EQ(lk_lock_hold_count(x.l), 1);
  ASSERT_EQ(hold_on_server(&x, "ra-fenced"), 1); /* granted once */
  lk_client_stats_t st = stats(&x);
  ASSERT_EQ(st.acquires, 1);
  ASSERT_EQ(st.unattributable_replies, 1);
  ASSERT_GE(st.reconnects, 1);
  ASSERT_OK(sx_run(&x.fx, lk_lock_release, x.l, NULL));
  ASSERT_EQ(lk_lock_hold_count(x.l), 0);
  ASSERT_EQ(rt_cmd_int(x.fx.srv, "EXISTS ra-fenced"), 0);
  ra_finish(&x, "ra-fenced");
}

/* (a, handshake) An extra reply before the handshake's own replies shifts
 * them: the SCRIPT LOAD replies are checked against the scripts' SHA1, so the
 * shift is caught before any user command is sent, and the acquire runs on
 * the next connection. */
TEST(extra_reply_in_the_handshake_is_caught_before_any_command) {
  ra_t x;
  ra_start(&x, "ra-handshake");
  ra_rule(&x, "CLIENT SETNAME", RT_PROXY_INSERT, "+OK\r\n");
  sx_t s = ra_acquire_past_the_rule(&x, rt_scaled_ms(5000), 1);
  ASSERT_OK(s.status);
  ASSERT_EQ(lk_lock_token(x.l), fx_token_counter(&x.fx, "ra-handshake"));
  ASSERT_EQ(hold_on_server(&x, "ra-handshake"), 1);
  lk_client_stats_t st = stats(&x);
  ASSERT_EQ(st.unattributable_replies, 1);
  ASSERT_EQ(st.unknown_outcomes, 0); /* nobody's command was in flight */
  ASSERT_EQ(rt_proxy_requests(x.p, x.fenced), 1); /* sent once, after the shift */
  ASSERT_OK(sx_run(&x.fx, lk_lock_release, x.l, NULL));
  ASSERT_EQ(rt_cmd_int(x.fx.srv, "EXISTS ra-handshake"), 0);
  ra_finish(&x, "ra-handshake");
}

/* (b) An extra reply just before an acquire's, shaped like "held by somebody
 * else for 30 s" (the holder's PTTL). Taken as the answer, a try-once
 * acquire reported the lock busy while the server had granted it: the hold
 * stayed for its whole lease with nobody believing they held it. Now the
 * acquire's outcome is unknown and settled: whatever it reports, the object
 * and the server agree, and nothing is left after close. */
TEST(extra_reply_before_a_grant_leaves_no_hold_behind) {
  ra_t x;
  ra_start(&x, "ra-busy");
  ASSERT_OK(sx_run(&x.fx, lk_lock_is_locked, x.l, NULL)); /* connected */
  ra_rule(&x, x.acq, RT_PROXY_INSERT, ":30000\r\n");
  sx_t s = ra_acquire_past_the_rule(&x, 0, 0);
  ASSERT_EQ(s.calls, 1);
  /* Never "busy" (LK_ETIMEDOUT for a try once) from a reply not its own. */
  ASSERT(s.status == 0 || s.status == LK_EUNKNOWN);
  if (s.status == 0) {
    ASSERT_EQ(lk_lock_hold_count(x.l), 1);
    ASSERT_EQ(hold_on_server(&x, "ra-busy"), 1);
    ASSERT_OK(sx_run(&x.fx, lk_lock_release, x.l, NULL));
  } else {
    ASSERT_EQ(lk_lock_hold_count(x.l), 0); /* try once: no budget to resend */
  }
  /* The server agrees with the object: a grant it may not report is given
   * back, not left for its lease. */
  ASSERT(fx_wait_key_gone(&x.fx, "ra-busy", 3000));
  ASSERT_EQ(stats(&x).unattributable_replies, 1);
  ra_finish(&x, "ra-busy");
}

/* (b, after a normal reply) An extra reply after a grant's reply, in front of
 * a release's, while another lock's try-once acquire is in flight behind it
 * on the same connection. Taken as the release's answer, the release's own
 * reply then answered the acquire, which read "released" (an integer: to its
 * parser the holder's PTTL) as busy and reported LK_ETIMEDOUT while the
 * server had granted it: that lock stayed locked for its lease. Now both
 * outcomes are unknown and settled, and each object agrees with the server. */
TEST(extra_reply_after_a_grant_shifts_no_later_reply) {
  ra_t x;
  ra_start(&x, "ra-shift");
  lk_lock_t *b = fx_lock(&x.fx, "ra-shift-b");
  ASSERT_OK(sx_acquire(&x.fx, x.l, 0, 30000));
  ra_rule(&x, x.rel, RT_PROXY_INSERT, ":1\r\n"); /* what the release itself answers */
  sx_t rel, acq;
  memset(&rel, 0, sizeof rel);
  ASSERT_OK(lk_lock_release(x.l, sx_cb, &rel));
  fu_start_acquire(b, 0, 30000, 0, &acq); /* sent in the same write */
  rt_run_until(&x.fx.loop, &rel.done, rt_scaled_ms(10000));
  rt_run_until(&x.fx.loop, &acq.done, rt_scaled_ms(10000));
  ASSERT_EQ(rt_proxy_rule_state(x.p), RT_PROXY_RULE_APPLIED);
  ASSERT(rel.status == 0 || rel.status == LK_EUNKNOWN);
  ASSERT_EQ(lk_lock_hold_count(x.l), 0);
  ASSERT(fx_wait_key_gone(&x.fx, "ra-shift", 3000));
  /* Never "busy" from the release's reply. */
  ASSERT(acq.status == 0 || acq.status == LK_EUNKNOWN);
  if (acq.status == 0) {
    ASSERT_EQ(lk_lock_hold_count(b), 1);
    ASSERT_OK(sx_run(&x.fx, lk_lock_release, b, NULL));
  }
  ASSERT_EQ(lk_lock_hold_count(b), 0);
  ASSERT(fx_wait_key_gone(&x.fx, "ra-shift-b", 3000));
  ASSERT_EQ(stats(&x).unattributable_replies, 1);
  /* Both objects carry on, each answered by its own replies. */
  ASSERT_OK(sx_acquire(&x.fx, b, 0, 30000));
  ASSERT_OK(sx_run(&x.fx, lk_lock_release, b, NULL));
  fx_close_lock(&x.fx, b);
  ASSERT_EQ(rt_server_count_keys(x.fx.srv, "ra-shift-b"), 0);
  ra_finish(&x, "ra-shift");
}

/* A reply with no command waiting drops the connection too (counted), and
 * the client carries on. The proxy answers an EXISTS (not a script call:
 * untagged) with its true answer and one more reply after it. */
TEST(reply_with_nothing_in_flight_drops_the_connection) {
  ra_t x;
  ra_start(&x, "ra-idle");
  ASSERT_OK(sx_run(&x.fx, lk_lock_is_locked, x.l, NULL)); /* connected */
  ra_rule(&x, "EXISTS", RT_PROXY_REPLACE, ":0\r\n+OK\r\n");
  int64_t locked = -1;
  ASSERT_OK(sx_run(&x.fx, lk_lock_is_locked, x.l, &locked));
  ASSERT_EQ(locked, 0);
  FX_EVENTUALLY(&x.fx, stats(&x).unattributable_replies == 1, 3000);
  ASSERT_GE(stats(&x).reconnects, 1);
  ASSERT_OK(sx_acquire(&x.fx, x.l, rt_scaled_ms(3000), 30000));
  ASSERT_EQ(hold_on_server(&x, "ra-idle"), 1);
  ASSERT_OK(sx_run(&x.fx, lk_lock_release, x.l, NULL));
  ra_finish(&x, "ra-idle");
}
