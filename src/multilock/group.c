/* Helpers shared by MultiLock and RedLock (group.h). */
#include <string.h>

#include "lock/lock_internal.h"
#include "multilock/group.h"

static int same_str(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a == b;
  return strcmp(a, b) == 0;
}

int lk__group_same_server(const lk_client_t *a, const lk_client_t *b, int match_db) {
  if (a == b)
    return 1;
  if (match_db && a->o.db != b->o.db)
    return 0;
  if (a->run_id[0] != '\0' && strcmp(a->run_id, b->run_id) == 0)
    return 1;
  if (a->o.unix_path != NULL || b->o.unix_path != NULL)
    return same_str(a->o.unix_path, b->o.unix_path);
  return a->o.port == b->o.port && same_str(a->o.host, b->o.host);
}

int lk__group_same_loop(lk_client_t *const *clients, size_t n) {
  size_t i;
  for (i = 1; i < n; i++)
    if (clients[i]->loop != clients[0]->loop)
      return 0;
  return 1;
}

uint64_t lk__group_seed(const void *obj) {
  uint64_t s = uv_hrtime() ^ ((uint64_t)(uintptr_t)obj * 0x9e3779b97f4a7c15ULL);
  return s != 0 ? s : 0x2545f4914f6cdd1dULL;
}

uint64_t lk__group_rand(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545f4914f6cdd1dULL;
}

int64_t lk__group_jitter_ms(uint64_t *state, int64_t max_ms) {
  if (max_ms <= 0)
    return 0;
  return (int64_t)(lk__group_rand(state) % (uint64_t)(max_ms + 1));
}

void lk__group_give_back(lk_lock_t *lock, uint32_t *mine, uint32_t n) {
  if (n > *mine)
    n = *mine;
  if (n == 0)
    return;
  lk__lock_drop_holds(lock, n);
  *mine -= n;
}

void lk__group_finish(lk__obj_t *o, uint32_t holds, int lost, int in_api, int status) {
  if (holds == 0 && !lost)
    lk__obj_health_end(o);
  if (in_api)
    lk__obj_finish_later(o, status);
  else
    lk__obj_finish(o, status);
}

void lk__group_released(lk_lock_t *lock, uint32_t *mine, int status) {
  if (status == LK_ENOTOWNER || status == LK_ELEASELOST)
    *mine = 0;
  else if (status != 0 && lk_lock_hold_count(lock) > 0)
    lk__group_give_back(lock, mine, 1);
  else if (*mine > 0)
    (*mine)--;
}

void lk__group_afresh(uint32_t *holds, int *lost) {
  if (*lost) {
    *lost = 0;
    *holds = 0;
  }
}

int lk__group_release_check(uint32_t *holds, int *lost) {
  if (*holds == 0)
    return LK_ENOTHELD;
  if (*lost) {
    lk__group_afresh(holds, lost);
    return LK_ELEASELOST;
  }
  return 0;
}
