/* The rate limiter's acquire (docs/ratelimiter.md): one script call per
 * attempt; when the window has too few permits the script answers how long
 * until its oldest grant leaves it, and the core's wait engine sleeps that
 * long (capped by max_repoll_ms and the budget) before the next attempt.
 * There is no channel: Redisson's limiter publishes nothing, so waits are
 * timed by the server's estimate alone.
 *
 * Grants are spent, never given back: an attempt left behind (a cancel, a
 * close, the budget) whose late reply is a grant only uses up part of the
 * rate, which is on the safe side. A resend after a lost reply carries the
 * same request id, so the script finds the grant an earlier attempt made
 * instead of granting twice. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/outcome.h"
#include "ratelimiter/ratelimiter_internal.h"

int lk__rl_attempt(lk__obj_t *o) {
  lk_ratelimiter_t *rl = (lk_ratelimiter_t *)o;
  char n[24];
  const char *argv[7];
  size_t lens[7];
  int i, err = 0;
  for (i = 0; i < 5; i++)
    argv[i] = rl->keys[i], lens[i] = rl->key_lens[i];
  argv[5] = lk__rl_i64(n, rl->permits), lens[5] = strlen(n);
  argv[6] = (const char *)rl->id, lens[6] = LK__RL_ID_LEN;
  o->op = lk__script_call(o->client, lk__rl_script("ratelimiter/acquire"), 5, 2, argv, lens,
                          lk__obj_attempt_reply, o, &err);
  return o->op != NULL ? 0 : err;
}

void lk__rl_not_set(lk__obj_t *o) {
  lk__obj_set_errtext(o, "no rate is set for this rate limiter (try_set_rate or set_rate first)");
}

static int elem(const redisReply *r, size_t i, long long *out) {
  if (r == NULL || r->type != REDIS_REPLY_ARRAY || i >= r->elements)
    return 0;
  return lk__reply_is_int(r->element[i], out);
}

/* The script's four answers: {1, grant time, permits left}, {0, ms until
 * enough permits leave the window}, {-1, the rate} (more permits asked than
 * the rate has), {-2} (no rate set). A failed attempt is resent when safe:
 * the request id tells an earlier grant. */
int lk__rl_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v) {
  lk_ratelimiter_t *rl = (lk_ratelimiter_t *)o;
  long long flag, a = 0, b = 0;
  if (!elem(r, 0, &flag))
    return LK__ANSWER_GARBLED;
  if (flag == 1 && r->elements == 3 && elem(r, 1, &a) && elem(r, 2, &b))
    return LK__ANSWER_GRANTED;
  if (flag == 0 && r->elements == 2 && elem(r, 1, &a)) {
    rl->last_wait_ms = a < 0 ? 0 : a;
    o->result = rl->last_wait_ms;
    *v = rl->last_wait_ms;
    return LK__ANSWER_BUSY;
  }
  if (flag == -1 && r->elements == 2 && elem(r, 1, &a)) {
    char text[160];
    snprintf(text, sizeof text, "%" PRId64 " permits requested, more than the rate (%lld)",
             rl->permits, a);
    lk__obj_set_errtext(o, text);
    *v = LK_EINVAL;
    return LK__ANSWER_REFUSED;
  }
  if (flag == -2 && r->elements == 1) {
    lk__rl_not_set(o);
    *v = LK_EINVAL;
    return LK__ANSWER_REFUSED;
  }
  return LK__ANSWER_GARBLED;
}

void lk__rl_granted(lk__obj_t *o, const redisReply *r) {
  lk_ratelimiter_t *rl = (lk_ratelimiter_t *)o;
  long long a = 0, b = 0;
  (void)elem(r, 1, &a); /* read_attempt saw both */
  (void)elem(r, 2, &b);
  rl->grant_time_ms = a;
  o->result = b;
  lk__obj_finish(o, 0);
}

void lk_ratelimiter_opts_init(lk_ratelimiter_opts_t *o) {
  if (o == NULL)
    return;
  o->permits = 1;
  o->wait_ms = 0;
}

int lk_ratelimiter_acquire(lk_ratelimiter_t *rl, const lk_ratelimiter_opts_t *opts,
                           lk_ratelimiter_cb cb, void *arg) {
  lk_ratelimiter_opts_t defaults;
  uint64_t k;
  int i, rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_ratelimiter_opts_init);
  if (opts->permits < 1 || opts->permits > LK_RATELIMITER_MAX_PERMITS ||
      !lk__valid_wait(opts->wait_ms))
    return LK_EINVAL;
  lk__obj_begin(&rl->base, RL_ACQUIRE, (lk__fn_t)cb, arg);
  rl->permits = opts->permits;
  rl->last_wait_ms = -1;
  rl->base.result = -1;
  /* A fresh id per acquire: the last 8 bytes count the object's acquires. */
  k = ++rl->acquires;
  for (i = 0; i < 8; i++)
    rl->id[LK__RL_ID_LEN - 1 - i] = (unsigned char)(k >> (8 * i));
  lk__obj_wait_begin(&rl->base, opts->wait_ms);
  return lk__obj_start(&rl->base);
}

int lk_ratelimiter_try_acquire(lk_ratelimiter_t *rl, int64_t permits, lk_ratelimiter_cb cb,
                               void *arg) {
  lk_ratelimiter_opts_t o;
  lk_ratelimiter_opts_init(&o);
  o.permits = permits;
  return lk_ratelimiter_acquire(rl, &o, cb, arg);
}

int lk_ratelimiter_cancel(lk_ratelimiter_t *rl) { return lk_handle_cancel(LK__H(rl)); }
