/* Rate limiter, wire compatible with Redisson's RRateLimiter
 * (docs/ratelimiter.md): lifecycle, the configuration (trySetRate,
 * setRate, getConfig) and the availablePermits query. The acquire is in
 * acquire.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/outcome.h"
#include "ratelimiter/ratelimiter_internal.h"

const lk__script_t *lk__rl_script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

const char *lk__rl_i64(char buf[24], int64_t n) {
  snprintf(buf, 24, "%" PRId64, n);
  return buf;
}

void lk_ratelimiter_config_init(lk_ratelimiter_config_t *cfg) {
  if (cfg == NULL)
    return;
  cfg->type = LK_RATE_OVERALL;
  cfg->rate = 0;
  cfg->interval_ms = 0;
  cfg->keep_alive_ms = 0;
}

int lk__rl_valid_config(const lk_ratelimiter_config_t *cfg) {
  if (cfg == NULL || (cfg->type != LK_RATE_OVERALL && cfg->type != LK_RATE_PER_CLIENT))
    return 0;
  if (cfg->rate < 1 || cfg->rate > LK_RATELIMITER_MAX_RATE)
    return 0;
  if (cfg->interval_ms < 1 || cfg->interval_ms > LK_MAX_TIME_MS)
    return 0;
  /* Redisson's rule: a keep-alive, when there is one, spans an interval. */
  return cfg->keep_alive_ms == 0 ||
         (cfg->keep_alive_ms >= cfg->interval_ms && cfg->keep_alive_ms <= LK_MAX_TIME_MS);
}

/* --- configuration --- */

static int start_set(lk_ratelimiter_t *rl, enum lk__rl_op kind, const lk_ratelimiter_config_t *cfg,
                     lk_ratelimiter_cb cb, void *arg) {
  char rate[24], interval[24], type[24], keep[24];
  const char *argv[9];
  size_t lens[9];
  int i, nkeys, err = 0, rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  if (!lk__rl_valid_config(cfg))
    return LK_EINVAL;
  /* try_set_rate touches the hash only; set_rate also the windows. */
  nkeys = kind == RL_TRY_SET ? 1 : 5;
  for (i = 0; i < nkeys; i++)
    argv[i] = rl->keys[i], lens[i] = rl->key_lens[i];
  argv[i] = lk__rl_i64(rate, cfg->rate), lens[i] = strlen(rate), i++;
  argv[i] = lk__rl_i64(interval, cfg->interval_ms), lens[i] = strlen(interval), i++;
  argv[i] = lk__rl_i64(type, (int64_t)cfg->type), lens[i] = strlen(type), i++;
  argv[i] = lk__rl_i64(keep, cfg->keep_alive_ms), lens[i] = strlen(keep), i++;
  lk__obj_begin(&rl->base, kind, (lk__fn_t)cb, arg);
  rl->base.op = lk__script_call(rl->base.client,
                                lk__rl_script(kind == RL_TRY_SET ? "ratelimiter/try_set_rate"
                                                                 : "ratelimiter/set_rate"),
                                nkeys, 4, argv, lens, lk__obj_value_reply, &rl->base, &err);
  return lk__obj_value_sent(&rl->base, rl->base.op, LK__VALUE_CHANGES, err);
}

int lk_ratelimiter_try_set_rate(lk_ratelimiter_t *rl, const lk_ratelimiter_config_t *cfg,
                                lk_ratelimiter_cb cb, void *arg) {
  return start_set(rl, RL_TRY_SET, cfg, cb, arg);
}

int lk_ratelimiter_set_rate(lk_ratelimiter_t *rl, const lk_ratelimiter_config_t *cfg,
                            lk_ratelimiter_cb cb, void *arg) {
  return start_set(rl, RL_SET, cfg, cb, arg);
}

/* --- queries --- */

/* available answers -2 when no rate is set: LK_EINVAL, as for an acquire. */
static void on_available_reply(void *data, int status, redisReply *r) {
  lk__obj_t *o = data;
  long long n;
  o->op = NULL;
  if (status != 0) {
    lk__obj_error(o, r);
    lk__obj_finish(o, status);
  } else if (!lk__reply_is_int(r, &n) || n < -2 || n == -1) {
    lk__obj_finish(o, LK_EPROTOCOL);
  } else if (n == -2) {
    lk__rl_not_set(o);
    lk__obj_finish(o, LK_EINVAL);
  } else {
    o->result = n;
    lk__obj_finish(o, 0);
  }
}

int lk_ratelimiter_available(lk_ratelimiter_t *rl, lk_ratelimiter_cb cb, void *arg) {
  const char **argv;
  int err = 0, rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  argv = (const char **)rl->keys;
  lk__obj_begin(&rl->base, RL_AVAILABLE, (lk__fn_t)cb, arg);
  rl->base.op = lk__script_call(rl->base.client, lk__rl_script("ratelimiter/available"), 5, 0,
                                argv, rl->key_lens, on_available_reply, &rl->base, &err);
  /* It may write (the count, grants leaving the window), but only what any
   * later call would write the same way: a query for the outcome rules. */
  return lk__obj_value_sent(&rl->base, rl->base.op, 0, err);
}

int lk_ratelimiter_get_config(lk_ratelimiter_t *rl, lk_ratelimiter_cb cb, void *arg) {
  const char *argv[6] = {"HMGET", NULL, "rate", "interval", "type", "keepAliveTime"};
  size_t lens[6] = {5, 0, 4, 8, 4, 13};
  int err = 0, rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  argv[1] = rl->keys[0], lens[1] = rl->key_lens[0];
  lk__obj_begin(&rl->base, RL_CONFIG, (lk__fn_t)cb, arg);
  rl->base.op = lk__cmd_argv(rl->base.client, 6, argv, lens, lk__obj_value_reply, &rl->base, &err);
  return lk__obj_value_sent(&rl->base, rl->base.op, 0, err);
}

static int text_int(const redisReply *r, int64_t *out) {
  char buf[24], *end;
  long long v;
  if (r->type != REDIS_REPLY_STRING || r->len == 0 || r->len >= sizeof(buf))
    return 0;
  memcpy(buf, r->str, r->len);
  buf[r->len] = '\0';
  v = strtoll(buf, &end, 10);
  if (*end != '\0')
    return 0;
  *out = v;
  return 1;
}

/* HMGET's four fields: all nil = no configuration (0); rate, interval and
 * type present and numeric = one (1); anything else is not a limiter's. */
static int read_config(lk_ratelimiter_t *rl, const redisReply *r, int64_t *v) {
  int64_t f[4] = {0, 0, 0, 0};
  size_t i, nil = 0;
  if (r->type != REDIS_REPLY_ARRAY || r->elements != 4)
    return 0;
  for (i = 0; i < 4; i++) {
    if (r->element[i]->type == REDIS_REPLY_NIL)
      nil++;
    else if (!text_int(r->element[i], &f[i]))
      return 0;
  }
  if (nil == 4) {
    *v = 0;
    return 1;
  }
  for (i = 0; i < 3; i++)
    if (r->element[i]->type == REDIS_REPLY_NIL)
      return 0;
  if (f[2] != LK_RATE_OVERALL && f[2] != LK_RATE_PER_CLIENT)
    return 0;
  rl->cfg.rate = f[0];
  rl->cfg.interval_ms = f[1];
  rl->cfg.type = (lk_rate_type_t)f[2];
  rl->cfg.keep_alive_ms = f[3];
  *v = 1;
  return 1;
}

static int read_value(lk__obj_t *o, const redisReply *r, int64_t *v) {
  lk_ratelimiter_t *rl = (lk_ratelimiter_t *)o;
  return o->kind == RL_CONFIG ? read_config(rl, r, v) : -1;
}

/* --- lifecycle --- */

LK__OBJ_CALLS(lk_ratelimiter_t, lk_ratelimiter_cb, lk_ratelimiter_close_cb)

/* The handle's answers (core/handle.c): granted permits are spent, so the
 * rate limiter holds nothing. */
static const lk__obj_ops_t lk__ratelimiter_ops = {
    LK__OBJ_CALLED,
    .attempt = lk__rl_attempt,
    .read_attempt = lk__rl_read_attempt,
    .granted = lk__rl_granted,
    LK__NAMED_BODY(lk_ratelimiter_t),
    .strings = {offsetof(lk_ratelimiter_t, keys[0]), offsetof(lk_ratelimiter_t, keys[1]),
                offsetof(lk_ratelimiter_t, keys[2]), offsetof(lk_ratelimiter_t, keys[3]),
                offsetof(lk_ratelimiter_t, keys[4])},
    .acquire_kind = RL_ACQUIRE,
    /* Every attempt carries the acquire's id: a resend is applied at most once. */
    .counted = lk__obj_counted_always,
    .read_value = read_value,
    .handle_kind = LK_KIND_RATELIMITER,
};

int lk_ratelimiter_new(lk_client_t *c, const char *name, lk_ratelimiter_t **out) {
  size_t len;
  char suffix[64];
  int i, rc;
  lk_ratelimiter_t *rl = lk__obj_open(c, out, name, &lk__ratelimiter_ops, &rc);
  if (rl == NULL)
    return rc;
  len = rl->name_len;
  rc = uv_random(NULL, NULL, rl->id, 8, 0, NULL);
  if (rc != 0) {
    lk__obj_free(&rl->base);
    return rc;
  }
  rl->keys[0] = lk__memdup0(name, len);
  rl->key_lens[0] = len;
  rl->keys[1] = lk__suffix_name(name, len, "value", &rl->key_lens[1]);
  snprintf(suffix, sizeof suffix, "value:%s", c->id);
  rl->keys[2] = lk__suffix_name(name, len, suffix, &rl->key_lens[2]);
  rl->keys[3] = lk__suffix_name(name, len, "permits", &rl->key_lens[3]);
  snprintf(suffix, sizeof suffix, "permits:%s", c->id);
  rl->keys[4] = lk__suffix_name(name, len, suffix, &rl->key_lens[4]);
  for (i = 0; i < 5; i++)
    if (rl->keys[i] == NULL)
      rc = LK_ENOMEM;
  if (rc != 0) {
    lk__obj_free(&rl->base);
    return LK_ENOMEM;
  }
  {
    /* One slot for all (core/names.c). */
    lk__derived_t d[5];
    for (i = 0; i < 5; i++)
      d[i].text = rl->keys[i], d[i].len = rl->key_lens[i], d[i].open = 0;
    rc = lk__names_one_slot(c, "rate limiter", rl->name, rl->name_len, d, 5);
    if (rc != 0) {
      lk__obj_free(&rl->base);
      return rc;
    }
  }
  lk__obj_init(&rl->base, c, &lk__ratelimiter_ops, rl->name);
  *out = rl;
  return 0;
}

/* Nothing to give back: granted permits are spent (no close_release). */
LK__KIND_CLOSE(lk_ratelimiter)

/* --- accessors --- */

void lk_ratelimiter_config(const lk_ratelimiter_t *rl, lk_ratelimiter_config_t *out) {
  if (out == NULL)
    return;
  if (rl == NULL)
    lk_ratelimiter_config_init(out);
  else
    *out = rl->cfg;
}
int64_t lk_ratelimiter_result(const lk_ratelimiter_t *rl) {
  return lk__handle_result(LK__CH(rl));
}
int64_t lk_ratelimiter_grant_time_ms(const lk_ratelimiter_t *rl) {
  return rl ? rl->grant_time_ms : 0;
}
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
LK__KIND_ALIASES(lk_ratelimiter, lk_ratelimiter_name)
