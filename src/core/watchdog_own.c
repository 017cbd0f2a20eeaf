/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* A lease its object renews itself: the watchdog's rules for a lease of its
 * own length (watchdog.h, "a lease its object renews itself"). */
#include "core/loglevel.h"
#include "core/watchdog.h"

void lk__wd_own_init(lk__wd_own_t *s, lk_client_t *c, struct lk__obj_s *obj, const char *what) {
  s->client = c;
  s->obj = obj;
  s->what = what;
}

int lk__wd_own_want_timer(lk__wd_own_t *s) {
  return lk__otimer_want(&s->timer, s->client->loop, s);
}

void lk__wd_own_keep(lk__wd_own_t *s, uint64_t confirmed_ns) { s->confirmed_ns = confirmed_ns; }

static void on_timer(void *owner) {
  lk__wd_own_t *s = owner;
  s->on_timer(s);
}

void lk__wd_own_arm(lk__wd_own_t *s, lk__wd_own_fn fn, uint64_t ms, uint64_t repeat_ms) {
  s->on_timer = fn;
  lk__otimer_start(s->timer, on_timer, ms, repeat_ms);
}

/* --- health (docs/objects.md, "Health"): the lease is one side of its
 * object, told as a ring entry's is. --- */

void lk__wd_own_at_risk(lk__wd_own_t *s) {
  if (s->at_risk || !lk__wd_own_kept(s))
    return;
  s->at_risk = 1;
  s->client->owner->hold_at_risk(s->obj, lk__wd_own_deadline(s));
}

/* confirmed: a renewal confirmed the lease; else it stopped being kept. */
static void own_ok(lk__wd_own_t *s, int confirmed) {
  if (!s->at_risk)
    return;
  s->at_risk = 0;
  s->client->owner->hold_ok(s->obj, confirmed, lk__wd_own_deadline(s));
}

void lk__wd_own_sent(lk__wd_own_t *s, lk__op_t *op, int err) {
  s->op = op;
  if (op != NULL)
    return;
  lk__log(s->client, lk__trouble_level(err), "%s renewal not sent: %s", s->what,
          lk_err_name(err));
  lk__wd_own_at_risk(s);
}

int lk__wd_own_reply(lk__wd_own_t *s, int status, const redisReply *r) {
  lk_client_t *c = s->client;
  long long v;
  s->op = NULL;
  if (status == 0 && lk__reply_is_int(r, &v) && (v == 0 || v == 1)) {
    if (v == 0)
      return 0; /* expired, deleted or taken: the object says what that means */
    if (c->completing_sent_ns > s->confirmed_ns)
      s->confirmed_ns = c->completing_sent_ns;
    own_ok(s, 1);
    return 1;
  }
  lk__wd_own_at_risk(s);
  /* The local deadline decides; the next renewal tries again. */
  lk__log(c, lk__trouble_level(status != 0 ? status : LK_EPROTOCOL), "%s renewal failed: %s",
          s->what, lk_err_name(status != 0 ? status : LK_EPROTOCOL));
  return -1;
}

void lk__wd_own_stop(lk__wd_own_t *s) {
  own_ok(s, 0);
  lk__op_forget(&s->op);
  lk__otimer_stop(s->timer);
  s->confirmed_ns = 0;
}
