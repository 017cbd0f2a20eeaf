/* Double barrier (docs/barrier.md): the object's lifecycle, the member's
 * lease and the accessors; the enter and leave waits are in enter_leave.c.
 * A member's presence is a lease of its own (a score in the members zset:
 * the server time it runs out), often shorter than the client's default
 * lease so that a crashed member is dropped sooner; the client's watchdog
 * renews every entry with the client's one lease, so the object renews its
 * own every lease/3, as leader election does (src/leader/leader.c), by the
 * watchdog's rules for such a lease (core/watchdog.h, lk__wd_own_t). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "barrier/barrier_internal.h"
#include "core/loglevel.h"

#define CLIENT(b) LK__BARRIER_CLIENT(b)

const lk__script_t *lk__barrier_script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

/* --- the lease: the member's own length, so renewed here every lease/3
 * on a repeating timer; its deadline, health and what a renewal's reply
 * means are the watchdog's (core/watchdog.h, lk__wd_own_t) --- */

static uint64_t ms_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

static void on_renew_reply(void *data, int status, redisReply *r) {
  lk_barrier_t *b = data;
  /* 0: dropped or its round is over; the enter's or leave's script tells
   * the member which, so nothing more is renewed here. Failed: the next
   * tick tries again. */
  if (lk__wd_own_reply(&b->lease, status, r) == 0)
    lk__wd_own_stop(&b->lease);
}

static void on_renew_timer(lk__wd_own_t *s) {
  lk_barrier_t *b = lk__container_of(s, lk_barrier_t, lease);
  char round[24], lease[24], keep[24];
  const char *argv[7] = {NULL, NULL, NULL, NULL, round, lease, keep};
  size_t lens[7] = {0};
  lk__op_t *op;
  int err = 0;
  if (!b->in && !b->entered)
    return;
  /* Half the lease without a confirmed renewal (one goes every third), or
   * the last one unanswered for a whole period: at risk. */
  if (s->op != NULL || lk__now_ns() >= lk__wd_own_risk_point(s))
    lk__wd_own_at_risk(s);
  if (s->op != NULL)
    return;
  for (int i = 0; i < 3; i++) {
    argv[i] = b->keys[i];
    lens[i] = b->key_lens[i];
  }
  argv[3] = lk__barrier_member_id(b, &lens[3]);
  lens[4] = lk__i64_to_str(round, b->round);
  lens[5] = lk__i64_to_str(lease, s->lease_ms);
  lens[6] = lk__i64_to_str(keep, LK__BARRIER_KEEP_MS);
  op = lk__script_call(CLIENT(b), lk__barrier_script("barrier/renew"), 3, 4, argv, lens,
                       on_renew_reply, b, &err);
  lk__wd_own_sent(s, op, err);
}

void lk__barrier_renew_start(lk_barrier_t *b) {
  uint64_t every = (uint64_t)(b->lease.lease_ms / 3 > 0 ? b->lease.lease_ms / 3 : 1);
  uint64_t now = lk__now_ns(), sent = CLIENT(b)->completing_sent_ns;
  if (b->lease.timer == NULL || lk__wd_own_armed(&b->lease))
    return;
  /* Registered by the reply being handled (sent then), or, called from
   * elsewhere, now at the latest. */
  lk__wd_own_keep(&b->lease,
                  sent != 0 && sent <= now && now - sent < ms_ns(b->lease.lease_ms) ? sent : now);
  lk__wd_own_arm(&b->lease, on_renew_timer, every, every);
}

/* --- the dropped list --- */

void lk__barrier_clear_dropped(lk_barrier_t *b) {
  b->drop_len = 0;
  b->drop_n = 0;
}

void lk__barrier_keep_dropped(lk_barrier_t *b, const redisReply *r) {
  lk__barrier_clear_dropped(b);
  for (size_t i = 0; i < r->elements; i++) {
    const redisReply *e = r->element[i];
    if (lk__grow((void **)&b->drop_buf, &b->drop_cap, b->drop_len + e->len + 1, 1, 8) != 0 ||
        lk__grow((void **)&b->drop_off, &b->drop_off_cap, b->drop_n + 1, sizeof(size_t), 8) != 0) {
      lk__log(CLIENT(b), LK_LOG_WARN, "out of memory: the dropped list is cut short");
      return;
    }
    memcpy(b->drop_buf + b->drop_len, e->str, e->len);
    b->drop_buf[b->drop_len + e->len] = '\0';
    b->drop_off[b->drop_n++] = b->drop_len;
    b->drop_len += e->len + 1;
  }
}

/* --- lifecycle --- */

static void on_close_take_out(void *data, int status, redisReply *r) {
  lk_barrier_t *b = data;
  (void)r;
  b->base.op = NULL;
  if (status != 0 && status != LK_ECANCELED)
    lk__log(CLIENT(b), lk__trouble_level(status),
            "barrier member not taken out on close (%s): dropped after its lease",
            lk_err_name(status));
  lk__obj_close_done(&b->base);
}

/* Closing a member that is in (waiting to enter, entered, or a leave that
 * never got through) takes it out, so the others are not held up until its
 * lease runs out; the close waits for the reply (best effort). */
static int close_release(lk__obj_t *o) {
  lk_barrier_t *b = (lk_barrier_t *)o;
  int was_in = b->in || b->entered;
  lk__wd_own_stop(&b->lease);
  lk__wd_own_close(&b->lease);
  if (!was_in)
    return 0;
  o->op = lk__barrier_take_out(b, on_close_take_out, b);
  return o->op != NULL;
}

LK__OBJ_CALLS(lk_barrier_t, lk_barrier_cb, lk_barrier_close_cb)

static void free_barrier(lk__obj_t *o) {
  lk_barrier_t *b = (lk_barrier_t *)o;
  lk__wd_own_free(&b->lease);
  for (int i = 0; i < 4; i++)
    lk__free(b->keys[i]);
  lk__free(b->member);
  lk__free(b->drop_buf);
  lk__free(b->drop_off);
  lk__free(b);
}

/* The handle's answers (core/handle.c): a member holds nothing, and cancel
 * ends the enter or leave that is pending. */
static const lk__obj_ops_t lk__barrier_ops = {
    .attempt = lk__barrier_attempt,
    .read_attempt = lk__barrier_read_attempt,
    .own_answer = lk__barrier_answer,
    .close_release = close_release,
    LK__OBJ_CALLED,
    .complete = lk__barrier_complete,
    .free = free_barrier,
    .message = lk__barrier_message,
    /* Both scripts apply a resend at most once (the same member's ZADD or
     * ZREM), so a lost reply is resent. */
    .counted = lk__obj_counted_always,
    .handle_kind = LK_KIND_BARRIER,
    .cancel_kind = LK__CANCEL_PENDING,
    .tells_health = 1,
};

static const char *const prefixes[4] = {LK__BARRIER_PREFIX, LK__BARRIER_MEMBERS_PREFIX,
                                        LK__BARRIER_DROPPED_PREFIX,
                                        LK__BARRIER_CHANNEL_PREFIX};

int lk_barrier_new(lk_client_t *c, const char *name, int members, lk_barrier_t **out) {
  lk_barrier_t *b;
  size_t len;
  int n, ok, rc = lk__obj_new_check(c, out, name, &len);
  if (rc != 0)
    return rc;
  if (members < 1 || members > LK_BARRIER_MAX_MEMBERS)
    return LK_EINVAL;
  b = lk__calloc(1, sizeof(*b) + len + 1);
  if (b == NULL)
    return LK_ENOMEM;
  b->name = (char *)(b + 1);
  memcpy(b->name, name, len);
  b->name_len = len;
  b->n = members;
  ok = 1;
  for (int i = 0; i < 4; i++) {
    b->keys[i] = lk__prefix_name(prefixes[i], name, len, &b->key_lens[i]);
    ok = ok && b->keys[i] != NULL;
  }
  n = snprintf(b->owner, sizeof(b->owner), "%s:%" PRIu64, c->id, c->next_tid + 1);
  if (!ok || n <= 0 || (size_t)n >= sizeof(b->owner)) {
    rc = LK_ENOMEM;
  } else {
    /* One slot for all (core/names.c). */
    lk__derived_t d[4];
    for (int i = 0; i < 4; i++)
      d[i].text = b->keys[i], d[i].len = b->key_lens[i], d[i].open = 0;
    rc = lk__names_one_slot(c, "barrier", name, len, d, 4);
  }
  if (rc != 0) {
    for (int i = 0; i < 4; i++)
      lk__free(b->keys[i]);
    lk__free(b);
    return rc;
  }
  c->next_tid++;
  b->owner_len = (size_t)n;
  lk__wd_own_init(&b->lease, c, &b->base, "barrier lease");
  b->lease.lease_ms = c->o.default_lease_ms;
  lk__obj_init_channel(&b->base, c, &lk__barrier_ops, b->name, b->keys[3], b->key_lens[3]);
  *out = b;
  return 0;
}

LK__KIND_CLOSE(lk_barrier)

/* --- accessors --- */

size_t lk_barrier_dropped_count(const lk_barrier_t *b) { return b ? b->drop_n : 0; }
const char *lk_barrier_dropped(const lk_barrier_t *b, size_t i) {
  return b != NULL && i < b->drop_n ? b->drop_buf + b->drop_off[i] : NULL;
}
int64_t lk_barrier_round(const lk_barrier_t *b) { return b ? b->round : 0; }
const char *lk_barrier_member(const lk_barrier_t *b) {
  size_t len;
  return b ? lk__barrier_member_id(b, &len) : NULL;
}
int lk_barrier_members(const lk_barrier_t *b) { return b ? b->n : 0; }
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_ALIASES(lk_barrier, lk_barrier_name)
