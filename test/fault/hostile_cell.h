/* One hostile-server case ("cell"): a server with every script cached, a
 * fault proxy in front of it, the client under test behind the proxy, a
 * second client straight to the server for contenders, and the checks every
 * cell ends with. Shared by hostile_matrix.c and hostile_findings.c.
 * Header-only, like the fixtures it sits on. */
#ifndef LK_TEST_FAULT_HOSTILE_CELL_H
#define LK_TEST_FAULT_HOSTILE_CELL_H

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/scripts.h"
#include "fair_fixture.h"
#include "fault_util.h"
#include "hostile.h"
#include "latch_fixture.h"
#include "rw_fixture.h"
#include "sem_fixture.h"

/* Every object of a cell uses this name; each cell has its own server. */
#define HC_NAME "hm"
/* A fixed lease long enough that a hold left behind is still there when the
 * cell looks (the cells take a few seconds at most). */
#define HC_LEASE 30000

typedef struct hc_s {
  fx_t fx;           /* loop, server, the client under test (through p) */
  rt_proxy_t *p;
  lk_client_t *direct; /* straight to the server: contenders, helpers */
  rt_hostile_fault_t fault;
  sx_t s;            /* the faulted call's outcome; lives until the cell ends,
                        so a second callback, however late, is caught */
  int64_t default_lease_ms;
  int64_t wait_ms;   /* an acquire cell's wait budget (0: try once) */
  fu_events_t ev;    /* the client's events, in order */
} hc_t;

/* The faults whose outcome the client cannot know: everything but an error
 * reply, which is the server's word that the command did not run. */
static inline int hc_unknown(const hc_t *c) { return c->fault != RT_HF_ERROR; }

/* Starts the cell. default_lease_ms: the client's watchdog lease (short for
 * the renewal cells, so renewals come every lease/3). */
static inline void hc_start(hc_t *c, rt_hostile_fault_t fault, int64_t default_lease_ms) {
  lk_client_opts_t o;
  memset(c, 0, sizeof *c);
  c->fault = fault;
  c->default_lease_ms = default_lease_ms;
  fx_start_server(&c->fx, NULL);
  rt_hostile_preload(c->fx.srv);
  c->p = rt_proxy_start(rt_server_port(c->fx.srv));
  ASSERT_NOT_NULL(c->p);
  lk_client_opts_init(&o);
  o.port = rt_proxy_port(c->p);
  o.connect_timeout_ms = rt_scaled_ms(1000);
  o.reply_timeout_ms = rt_scaled_ms(1000);
  o.reconnect_min_ms = 10;
  o.reconnect_max_ms = 50;
  o.default_lease_ms = default_lease_ms;
  o.on_event = fu_on_event;
  o.event_arg = &c->ev;
  fx_start_client(&c->fx, &o);
  /* Connected before the cell's first call: a stalled machine can outlast
   * the short connect timeout above, and the call queued behind that
   * attempt would end LK_ECONN before any fault was armed (the client
   * dials again within 50 ms). */
  FX_EVENTUALLY(&c->fx, lk_client_is_connected(c->fx.c) == 1, 10000);
  c->direct = fx_direct_client(&c->fx);
}

/* Arms the cell's fault for the k-th EVALSHA of script. wrong: the bytes of
 * a type this verb never sends (NULL: a bulk string); fake: for insert, a
 * reply that looks like this verb's success. */
static inline void hc_arm(hc_t *c, const char *script, int k, const char *wrong,
                          const char *fake) {
  const char *bytes = NULL;
  if (c->fault == RT_HF_WRONG_TYPE)
    bytes = wrong;
  else if (c->fault == RT_HF_INSERT)
    bytes = fake;
  rt_hostile_arm_script(c->p, c->fault, script, k, bytes);
}

/* Runs the loop until the faulted call's callback, then checks the fault
 * did act on its reply (else the cell tested nothing). */
static inline void hc_wait(hc_t *c) {
  uint64_t t0 = uv_hrtime();
  rt_run_until(&c->fx.loop, &c->s.done, 10000);
  if (!rt_hostile_applied(c->p))
    FAIL("the %s fault never acted: the cell tested nothing", rt_hostile_fault_name(c->fault));
  printf("%s fault: callback %s (result %lld) after %lld ms\n", rt_hostile_fault_name(c->fault),
         lk_err_name(c->s.status), (long long)c->s.result,
         (long long)((c->s.t_ns - t0) / 1000000));
}

/* The callback's status against the fault: an error reply must not become a
 * success (nor must an insert whose real answer was "no": refused = 1). An
 * unknown outcome is settled (0, verified by the caller) or reported as
 * LK_EUNKNOWN, never as a plain error such as LK_EPROTOCOL: every verb here
 * may change state, so its script may have run (docs/objects.md,
 * "Outcomes"). also: one more code the verb may legitimately report. */
static inline void hc_check_status(const hc_t *c, int refused, int also) {
  int st = c->s.status;
  if ((c->fault == RT_HF_ERROR || refused) && st == 0)
    FAIL("%s: success reported from a reply that was not the verb's own",
         rt_hostile_fault_name(c->fault));
  if (c->fault == RT_HF_ERROR || st == 0 || st == LK_EUNKNOWN || (also != 0 && st == also))
    return;
  if (refused && st == LK_ETIMEDOUT)
    return; /* the real answer, read correctly */
  FAIL("%s: callback status %s (%d); expected success or LK_EUNKNOWN%s%s",
       rt_hostile_fault_name(c->fault), lk_err_name(st), st, also != 0 ? " or " : "",
       also != 0 ? lk_err_name(also) : "");
}

/* Spins the loop until cond holds (bounded: ms scaled); on timeout fails
 * with the message (printf arguments evaluated then: the state seen). */
#define HC_EVENTUALLY(c, cond, ms, ...)                                                 \
  do {                                                                                  \
    int64_t hc_mark_ = rt_stall_mark(); /* the bound grows by measured stalls */        \
    while (!(cond) && !rt_stall_expired(hc_mark_, (ms)))                                \
      fx_spin(&(c)->fx, 2);                                                             \
    if (!(cond)) {                                                                      \
      rt_stall_print("HC_EVENTUALLY", hc_mark_);                                        \
      printf("not within %lld ms: %s\n", (long long)(rt_now_ms() - hc_mark_), #cond);   \
      FAIL(__VA_ARGS__);                                                                \
    }                                                                                   \
  } while (0)

/* ---- side-channel readers ---------------------------------------------------- */

/* HGET key field as a number, 0 when absent. */
static inline long long hc_hget(hc_t *c, const char *key, const char *field) {
  const char *argv[3] = {"HGET", key, field};
  return rt_cmd_argv_num(c->fx.srv, 3, argv, NULL, 0);
}

static inline long long hc_exists(hc_t *c, const char *key) {
  return rt_cmd_int(c->fx.srv, "EXISTS %s", key);
}

/* 16 raw bytes from a permit id's 32 hex characters. */
static inline void hc_id_raw(const char *hex, char raw[16]) {
  ASSERT_EQ(strlen(hex), 32);
  for (int i = 0; i < 16; i++) {
    unsigned v = 0;
    ASSERT_EQ(sscanf(hex + 2 * i, "%2x", &v), 1);
    raw[i] = (char)v;
  }
}

/* The expirable semaphore's lease score of permit id (epoch ms), -1 when
 * the server does not hold it. */
static inline long long hc_psem_score(hc_t *c, const char *id_hex) {
  char raw[16];
  const char *argv[3] = {"ZSCORE", "{" HC_NAME "}:timeout", raw};
  size_t lens[3] = {6, strlen(argv[1]), 16};
  hc_id_raw(id_hex, raw);
  return rt_cmd_argv_num(c->fx.srv, 3, argv, lens, -1);
}

/* Takes permit id away as the scripts' reclaim of an ended lease does: out
 * of the zset, its permit back into the count. */
static inline void hc_psem_reclaim(hc_t *c, const char *id_hex) {
  char raw[16];
  const char *argv[3] = {"ZREM", "{" HC_NAME "}:timeout", raw};
  size_t lens[3] = {4, strlen(argv[1]), 16};
  hc_id_raw(id_hex, raw);
  ASSERT_EQ(rt_cmd_argv_int(c->fx.srv, 3, argv, lens), 1);
  ASSERT_GE(rt_cmd_int(c->fx.srv, "INCR %s", HC_NAME), 1);
}

/* ---- the end of a cell ---------------------------------------------------------- */

/* A key that may outlive every object: a glob, and whether it must carry a
 * TTL (a record that expires) or never expires by design (state such as a
 * semaphore's count or a fencing counter). */
typedef struct hc_allow_s {
  const char *glob;
  int needs_ttl;
} hc_allow_t;

/* Keys on the server that no allow entry covers, each printed. */
static inline int hc_leftovers(hc_t *c, const hc_allow_t *allow, size_t n_allow) {
  redisReply *r = rt_cmd(c->fx.srv, "KEYS *");
  int bad = 0;
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ARRAY);
  for (size_t i = 0; i < r->elements; i++) {
    const char *k = r->element[i]->str;
    const char *argv[2] = {"PTTL", k};
    redisReply *t = rt_cmd_argv(c->fx.srv, 2, argv, NULL);
    long long pttl = t != NULL && t->type == REDIS_REPLY_INTEGER ? t->integer : -3;
    freeReplyObject(t);
    if (pttl == -2)
      continue; /* gone meanwhile */
    size_t j = 0;
    while (j < n_allow && fnmatch(allow[j].glob, k, 0) != 0)
      j++;
    if (j < n_allow && (!allow[j].needs_ttl || pttl >= 0))
      continue;
    printf("left on the server: %s (pttl %lld)%s\n", k, pttl,
           j < n_allow ? ": allowed only with a TTL" : "");
    bad++;
  }
  freeReplyObject(r);
  return bad;
}

/* Closes both clients (every object must be closed: close waits for the
 * objects' clean-up), checks the loop closes, then checks what is left on
 * the server against allow (the client under test gave back everything it
 * had to). The server and the proxy stay up for further checks until
 * hc_stop. */
static inline void hc_close_clients(hc_t *c) {
  fx_close_direct_client(&c->fx, c->direct);
  c->direct = NULL;
  lk_client_set_data(c->fx.c, &c->fx);
  ASSERT_OK(lk_client_close(c->fx.c, fx_on_client_closed));
  rt_run_until(&c->fx.loop, &c->fx.client_closed, 15000);
  c->fx.c = NULL;
  rt_loop_close_clean(&c->fx.loop);
  ASSERT_EQ(c->s.calls, 1); /* exactly one callback, through every close */
}

static inline void hc_stop(hc_t *c) {
  rt_server_stop(c->fx.srv);
  c->fx.srv = NULL;
  rt_proxy_stop(c->p);
  c->p = NULL;
}

static inline void hc_finish(hc_t *c, const hc_allow_t *allow, size_t n_allow) {
  hc_close_clients(c);
  ASSERT_EQ(hc_leftovers(c, allow, n_allow), 0);
  hc_stop(c);
}

#endif /* LK_TEST_FAULT_HOSTILE_CELL_H */
