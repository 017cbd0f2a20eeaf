/* Leader election (docs/leader.md): campaign, lease keeping, resign and the
 * object's lifecycle. Built on the shared object body: a campaign is a
 * waiting acquire (core/object.h: busy → subscribe → re-poll), its grant
 * goes through the core's grant routine (core/hold.h: the term is checked
 * like a fencing token, a grant answered after its own lease is refused,
 * the local deadline is send time + lease - drift), and lost replies are
 * settled by the outcome policy (core/outcome.h). The leadership's lease is
 * the campaign's own (often shorter than the client's default lease, so a
 * dead leader is replaced sooner), so it is renewed here, every lease/3,
 * rather than in the client's watchdog ring, which renews every entry with
 * the client's one lease; its deadline, health and renewal replies follow
 * the watchdog's rules for such a lease (core/watchdog.h, lk__wd_own_t). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/outcome.h"
#include "core/router.h"
#include "core/tokens.h"
#include "leader/leader_internal.h"

enum { OP_NONE = 0, OP_CAMPAIGN, OP_RESIGN };

#define CLIENT(l) LK__LEADER_CLIENT(l)

static const lk__script_t *script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

static uint64_t ms_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

static int leading(const lk_leader_t *l) { return l->hold.count > 0 && !l->base.lost; }

/* --- giving back --- */

/* The resign script: gives back whatever this owner has for the role and
 * wakes the other candidates. Sent now, or prepared for later. */
static lk__op_t *resign_op(lk_leader_t *l, lk__op_cb cb, void *data, int send, int *err) {
  /* The channel is an argument: a one-key script gets through a slot
   * migration (scripts/leader/resign.lua). */
  const char *argv[4] = {l->holder, l->owner, NULL, l->channel};
  size_t lens[4] = {l->holder_len, l->owner_len, 0, l->channel_len};
  argv[2] = lk__publish_cmd(CLIENT(l), &lens[2]);
  return (send ? lk__script_call : lk__script_prepare)(CLIENT(l), script("leader/resign"), 1,
                                                       3, argv, lens, cb, data, err);
}

/* Best effort, nobody waits: what cannot be sent expires with its lease. */
static void give_back(lk_leader_t *l) {
  int err = 0;
  lk__outcome_give_back(&l->base, resign_op(l, lk__cleanup_cb, CLIENT(l), 0, &err));
}

static void give_back_hold(lk__obj_t *o, lk__hold_t *h, int64_t cond, uint32_t n) {
  (void)h, (void)cond, (void)n; /* one leadership per owner: give back what it has */
  give_back((lk_leader_t *)o);
}

/* --- the lease: the campaign's own length, so renewed here, every lease/3
 * on a timer armed for the next renewal, risk point or deadline; its
 * deadline, health and what a renewal's reply means are the watchdog's
 * (core/watchdog.h, lk__wd_own_t) --- */

/* Half the lease after the last confirmed renewal (one is sent at a
 * third): with none confirmed by then, the leadership is at risk. */
static uint64_t risk_point(const lk_leader_t *l) { return lk__wd_own_risk_point(&l->lease); }

/* The leadership is gone (or cannot be trusted any more): stop renewing,
 * give back what the server may still have, mark the object lost. The
 * holder is told by the caller. */
static void lose_quietly(lk_leader_t *l) {
  lk__wd_own_stop(&l->lease);
  l->hold.count = 0;
  l->base.lost = 1;
  CLIENT(l)->stats.leases_lost++;
  lk__log(CLIENT(l), lk__lost_level(&l->base), "leadership lost");
  give_back(l);
}

static void lose(lk__obj_t *o) {
  lose_quietly((lk_leader_t *)o);
  lk__obj_tell_lost(o);
}

static void on_lost_later(lk__defer_t *d) {
  lk__obj_tell_lost(&lk__container_of(d, lk_leader_t, lost_later)->base);
}

int lk__leader_check_deadline(lk_leader_t *l) {
  if (!leading(l) || lk__now_ns() < lk__wd_own_deadline(&l->lease))
    return 0;
  lose(&l->base);
  return 1;
}

/* Inside an lk_ call: a deadline passed while the loop had not run yet is
 * settled now, and the holder told from the loop. */
static void settle_in_call(lk_leader_t *l) {
  if (!leading(l) || lk__now_ns() < lk__wd_own_deadline(&l->lease))
    return;
  lose_quietly(l);
  lk__defer(CLIENT(l), &l->lost_later);
}

static void on_lease_timer(lk__wd_own_t *s);

/* Wakes at the next renewal or at the local deadline, whichever is first
 * (the deadline alone while a renewal is in flight). */
static void arm_lease(lk_leader_t *l) {
  uint64_t now = lk__now_ns(), at = l->next_renew_ns, dl = lk__wd_own_deadline(&l->lease);
  if (l->lease.op != NULL || at > dl)
    at = dl;
  if (!l->lease.at_risk && risk_point(l) > now && risk_point(l) < at)
    at = risk_point(l);
  lk__wd_own_arm(&l->lease, on_lease_timer, at > now ? (at - now + 999999u) / 1000000u : 0, 0);
}

static void on_renew_reply(void *data, int status, redisReply *r) {
  lk_leader_t *l = data;
  l->lease.op = NULL;
  if (lk__leader_check_deadline(l))
    return;
  if (lk__wd_own_reply(&l->lease, status, r) == 0) {
    /* Expired, deleted or taken (a server restart without persistence). */
    lose(&l->base);
    return;
  }
  arm_lease(l);
}

static void send_renew(lk_leader_t *l) {
  char lease[24], term[24];
  const char *argv[4] = {l->holder, lease, l->owner, term};
  size_t lens[4] = {l->holder_len, 0, l->owner_len, 0};
  lk__op_t *op;
  int err = 0;
  lens[1] = lk__i64_to_str(lease, l->lease.lease_ms);
  lens[3] = lk__i64_to_str(term, l->term);
  l->next_renew_ns = lk__now_ns() + ms_ns(l->lease.lease_ms) / 3;
  op = lk__script_call(CLIENT(l), script("leader/renew"), 1, 3, argv, lens, on_renew_reply, l,
                       &err);
  lk__wd_own_sent(&l->lease, op, err);
}

static void on_lease_timer(lk__wd_own_t *s) {
  lk_leader_t *l = lk__container_of(s, lk_leader_t, lease);
  if (!leading(l) || lk__leader_check_deadline(l))
    return;
  if (s->op == NULL && lk__now_ns() >= l->next_renew_ns)
    send_renew(l);
  if (leading(l) && lk__now_ns() >= risk_point(l))
    lk__wd_own_at_risk(s);
  arm_lease(l);
}

/* --- the outcome policy's verbs (core/outcome.h) --- */

static lk__op_t *undo_attempt(lk__obj_t *o, int known_grant) {
  int err = 0;
  (void)known_grant; /* by owner: only this object's leadership goes */
  return resign_op((lk_leader_t *)o, lk__cleanup_cb, o->client, 0, &err);
}

static int is_grant(const redisReply *r) {
  return r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
         r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer > 0 &&
         r->element[1]->type == REDIS_REPLY_INTEGER;
}

/* --- campaign: a grant is an election, an integer the leader's TTL --- */

static int attempt_campaign(lk__obj_t *o) {
  lk_leader_t *l = (lk_leader_t *)o;
  char lease[24], floor[24];
  const char *argv[8] = {l->holder, l->counter, l->channel, lease, l->owner, l->value, floor, NULL};
  size_t lens[8] = {l->holder_len, l->counter_len, l->channel_len, 0, l->owner_len, l->value_len,
                    0, 0};
  int err = 0;
  if (lk__outcome_defer_attempt(o))
    return 0;
  lens[3] = lk__i64_to_str(lease, l->req_lease_ms);
  lens[6] = lk__i64_to_str(
      floor, lk__token_highest(CLIENT(l), l->counter, l->counter_len) + 1);
  argv[7] = lk__publish_cmd(CLIENT(l), &lens[7]);
  o->op = lk__script_call(CLIENT(l), script("leader/campaign"), 3, 5, argv, lens,
                          lk__obj_attempt_reply, o, &err);
  return o->op != NULL ? 0 : err;
}

static void elected(lk__obj_t *o, const redisReply *r) {
  lk_leader_t *l = (lk_leader_t *)o;
  lk__grant_t g = {0};
  g.hold = &l->hold;
  g.count = 1;
  g.lease_ms = l->req_lease_ms;
  /* The lease is kept from the campaign's send time, as the grant's local
   * deadline is (before the grant: its campaign's end starts the
   * renewals). */
  l->lease.lease_ms = l->req_lease_ms;
  lk__wd_own_keep(&l->lease, CLIENT(l)->completing_sent_ns);
  /* Terms are tracked under the counter's key name: a lock named like the
   * role keeps tokens of its own. */
  lk__grant_token(&g, r, 0, &l->term, l->counter, l->counter_len);
  lk__hold_grant(&l->base, &g);
}

/* A campaign only wakes for a leadership given back ("R<term>"); an
 * election ("E<term>:<value>") leaves nothing to take. */
static int campaign_message(lk__obj_t *o, const char *msg, size_t len) {
  (void)o;
  return len > 0 && msg[0] == 'R';
}

/* Before the campaign's callback: an election starts the lease keeping. */
static void complete(lk__obj_t *o, int kind, int status) {
  lk_leader_t *l = (lk_leader_t *)o;
  if (kind != OP_CAMPAIGN || status != 0 || !leading(l))
    return;
  l->next_renew_ns = lk__now_ns() + ms_ns(l->lease.lease_ms) / 3;
  arm_lease(l);
}

void lk_leader_opts_init(lk_leader_opts_t *o) {
  if (o == NULL)
    return;
  o->lease_ms = LK_LEASE_DEFAULT;
  o->value = NULL;
  o->wait_ms = LK_WAIT_FOREVER;
}

static int keep_value(lk_leader_t *l, const char *v, size_t len) {
  if (l->value == NULL || len > l->value_len) {
    char *p = lk__realloc(l->value, len + 1);
    if (p == NULL)
      return LK_ENOMEM;
    l->value = p;
  }
  memcpy(l->value, v, len);
  l->value[len] = '\0';
  l->value_len = len;
  return 0;
}

int lk_leader_campaign(lk_leader_t *l, const lk_leader_opts_t *opts, lk_leader_cb cb,
                       void *arg) {
  lk_leader_opts_t defaults;
  const char *value;
  size_t vlen;
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_leader_opts_init);
  value = opts->value != NULL ? opts->value : "";
  vlen = strnlen(value, LK_LEADER_VALUE_MAX + 1);
  if (!lk__valid_lease_from(opts->lease_ms, LK_LEADER_LEASE_MIN_MS) ||
      !lk__valid_wait(opts->wait_ms) || vlen > LK_LEADER_VALUE_MAX)
    return LK_EINVAL;
  settle_in_call(l);
  if (leading(l))
    return LK_EBUSY;
  if (lk__wd_own_want_timer(&l->lease) != 0 || keep_value(l, value, vlen) != 0)
    return LK_ENOMEM;
  /* Told of a loss already (what the server kept was given back): start
   * afresh. */
  l->base.lost = 0;
  l->hold.count = 0;
  lk__obj_begin(&l->base, OP_CAMPAIGN, (lk__fn_t)cb, arg);
  lk__obj_wait_begin(&l->base, opts->wait_ms);
  l->req_lease_ms =
      opts->lease_ms == LK_LEASE_DEFAULT ? CLIENT(l)->o.default_lease_ms : opts->lease_ms;
  return lk__obj_start(&l->base);
}

int lk_leader_cancel(lk_leader_t *l) { return lk_handle_cancel(LK__H(l)); }

/* --- resign --- */

static int resign_attempt(lk_leader_t *l) {
  int err = 0;
  l->base.op = resign_op(l, lk__obj_release_reply, &l->base, 1, &err);
  return l->base.op != NULL ? 0 : err;
}

static int send_resign(lk__obj_t *o) { return resign_attempt((lk_leader_t *)o); }

/* The resign script's answer: 1 given back, 0 not this owner's (any more). */
static int read_resign(lk__obj_t *o, const redisReply *r, int *status) {
  long long v;
  if (!lk__reply_is_int(r, &v) || (v != 0 && v != 1))
    return 0;
  o->result = v;
  /* 0 after a resend: the attempt whose reply was lost gave it back. */
  *status = v == 1 || o->resends > 0 ? 0 : LK_ENOTOWNER;
  return 1;
}

int lk_leader_resign(lk_leader_t *l, lk_leader_cb cb, void *arg) {
  int rc = lk__obj_check_idle(l ? &l->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  settle_in_call(l);
  if (l->base.lost) {
    l->base.lost = 0;
    return LK_ELEASELOST;
  }
  if (l->hold.count == 0)
    return LK_ENOTHELD;
  /* Not the leader any more from here on, whatever the reply says. */
  lk__wd_own_stop(&l->lease);
  l->hold.count = 0;
  /* An abandoned campaign attempt's give-back goes first (core/outcome.h);
   * a resign that cannot be sent leaves the leadership to its lease. */
  return lk__obj_release_begin(&l->base, OP_RESIGN, (lk__fn_t)cb, arg);
}

/* --- lifecycle --- */

static void on_close_release(void *data, int status, redisReply *r) {
  lk_leader_t *l = data;
  (void)r;
  lk__obj_close_release_reply(&l->base, status, "resign", "the leadership");
}

static int close_release(lk__obj_t *o) {
  lk_leader_t *l = (lk_leader_t *)o;
  int was_leading = leading(l), err = 0;
  lk__leader_obs_close(l);
  lk__wd_own_stop(&l->lease);
  lk__defer_cancel(&l->lost_later);
  lk__wd_own_close(&l->lease);
  l->hold.count = 0;
  if (!was_leading)
    return 0;
  o->op = resign_op(l, on_close_release, l, 1, &err);
  return o->op != NULL;
}

LK__OBJ_CALLS(lk_leader_t, lk_leader_cb, lk_leader_close_cb)

static void free_leader(lk__obj_t *o) {
  lk_leader_t *l = (lk_leader_t *)o;
  lk__defer_cancel(&l->lost_later);
  lk__wd_own_free(&l->lease); /* a forked child: never closed on this loop */
  lk__leader_obs_free(l);
  lk__free(l->holder);
  lk__free(l->counter);
  lk__free(l->channel);
  lk__free(l->value);
  lk__free(l);
}

/* The handle's answers (core/handle.c): the name is the role, held is
 * leading, the token is the term. */
LK__HANDLE_FIELD(lk_leader_t, term, int64_t)
static int handle_is_held(const lk__obj_t *o) {
  const lk_leader_t *l = (const lk_leader_t *)o;
  return leading(l) && lk__now_ns() < lk__wd_own_deadline(&l->lease);
}

static const lk__obj_ops_t lk__leader_ops = {
    .attempt = attempt_campaign,
    .close_release = close_release,
    LK__OBJ_CALLED,
    .complete = complete,
    .free = free_leader,
    .message = campaign_message,
    .acquire_kind = OP_CAMPAIGN,
    .release_kind = OP_RESIGN,
    /* A resend is applied at most once: the script reports a leadership this
     * owner already has instead of taking another. */
    .counted = lk__obj_counted_always,
    .undo = undo_attempt,
    .is_grant = is_grant,
    .granted = elected,
    .read_release = read_resign,
    .send_release = send_resign,
    .resend_release = send_resign,
    .give_back = give_back_hold,
    .lose = lose,
    .handle_kind = LK_KIND_LEADER,
    .tells_lost = 1,
    .is_held = handle_is_held,
    .token = handle_term,
};

int lk_leader_new(lk_client_t *c, const char *role, lk_leader_t **out) {
  lk_leader_t *l;
  size_t len;
  int n, rc = lk__obj_new_check(c, out, role, &len);
  if (rc != 0)
    return rc;
  l = lk__calloc(1, sizeof(*l) + len + 1);
  if (l == NULL)
    return LK_ENOMEM;
  l->role = (char *)(l + 1);
  memcpy(l->role, role, len);
  l->role_len = len;
  l->holder = lk__prefix_name(LK__LEADER_PREFIX, role, len, &l->holder_len);
  l->counter = lk__prefix_name(LK__LEADER_TERM_PREFIX, role, len, &l->counter_len);
  l->channel = lk__prefix_name(LK__LEADER_CHANNEL_PREFIX, role, len, &l->channel_len);
  n = snprintf(l->owner, sizeof(l->owner), "%s:%" PRIu64, c->id, c->next_tid + 1);
  if (l->holder == NULL || l->counter == NULL || l->channel == NULL || n <= 0 ||
      (size_t)n >= sizeof(l->owner)) {
    rc = LK_ENOMEM;
  } else {
    /* One slot for all (core/names.c). */
    const lk__derived_t d[3] = {{l->holder, l->holder_len, 0},
                                {l->counter, l->counter_len, 0},
                                {l->channel, l->channel_len, 0}};
    rc = lk__names_one_slot(c, "leader role", role, len, d, 3);
  }
  if (rc != 0) {
    lk__free(l->holder);
    lk__free(l->counter);
    lk__free(l->channel);
    lk__free(l);
    return rc;
  }
  c->next_tid++;
  l->owner_len = (size_t)n;
  l->hold.lease_ms = c->o.default_lease_ms;
  lk__wd_own_init(&l->lease, c, &l->base, "leadership");
  lk__defer_init(&l->lost_later, on_lost_later);
  lk__leader_obs_init(l);
  lk__obj_init_channel(&l->base, c, &lk__leader_ops, l->role, l->channel, l->channel_len);
  *out = l;
  return 0;
}

/* Observing ends in close_release (change callbacks stop at once: tell()
 * checks closing), so lk_client_close_all ends it too. */
LK__KIND_CLOSE(lk_leader)

/* --- accessors --- */

LK__KIND_SET_LOST_CB(lk_leader)

int lk_leader_is_leader(const lk_leader_t *l) { return lk_handle_is_held(LK__CH(l)) == 1; }

int64_t lk_leader_term(const lk_leader_t *l) { return l ? l->term : 0; }
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_ALIASES(lk_leader, lk_leader_role)
