#ifndef LK_RATELIMITER_INTERNAL_H
#define LK_RATELIMITER_INTERNAL_H

/* The rate limiter (docs/ratelimiter.md): lifecycle, configuration and
 * queries in ratelimiter.c, the acquire in acquire.c. */

#include "core/internal.h"
#include "core/object.h"
#include "latchkey/ratelimiter.h"

/* Redisson's request ids are 16 random bytes. */
#define LK__RL_ID_LEN 16

enum lk__rl_op { RL_NONE = 0, RL_ACQUIRE, RL_TRY_SET, RL_SET, RL_AVAILABLE, RL_CONFIG };

struct lk_ratelimiter_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name;
  size_t name_len;
  /* Redisson's keys, every one under the name's hash tag: NAME (the config
   * hash), then {NAME}:value, {NAME}:value:ID, {NAME}:permits,
   * {NAME}:permits:ID (ID: this client's id, for PER_CLIENT). */
  char *keys[5];
  size_t key_lens[5];
  /* The id of the pending acquire: 8 random bytes drawn at creation, then
   * a count of the object's acquires, so every grant's zset entry is its
   * own and a resend of the same acquire finds its entry. */
  unsigned char id[LK__RL_ID_LEN];
  uint64_t acquires;
  int64_t permits;       /* of the pending acquire */
  int64_t grant_time_ms; /* server time of the last grant */
  int64_t last_wait_ms;  /* the server's last estimate, -1 none */
  lk_ratelimiter_config_t cfg; /* read by lk_ratelimiter_get_config */
};

const lk__script_t *lk__rl_script(const char *name);
/* Validates cfg: 1 when every field is in range. */
int lk__rl_valid_config(const lk_ratelimiter_config_t *cfg);
/* Formats n into buf (24 bytes); returns buf. */
const char *lk__rl_i64(char buf[24], int64_t n);

/* The acquire's verbs for the ops table (acquire.c). */
int lk__rl_attempt(lk__obj_t *o);
int lk__rl_read_attempt(lk__obj_t *o, const redisReply *r, int64_t *v);
void lk__rl_granted(lk__obj_t *o, const redisReply *r);
/* Sets the error text for a "no rate set" reply. */
void lk__rl_not_set(lk__obj_t *o);

#endif /* LK_RATELIMITER_INTERNAL_H */
