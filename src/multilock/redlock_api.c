/* RedLock's public API and lifecycle (the quorum machinery is in
 * redlock.c; docs/multilock.md). */
#include <string.h>

#include "core/watchdog.h"
#include "lock/lock_internal.h"
#include "multilock/group.h"
#include "multilock/redlock_internal.h"

/* --- public API --- */

void lk_redlock_config_init(lk_redlock_config_t *cfg) {
  if (cfg == NULL)
    return;
  cfg->persistent = 0;
  cfg->quarantine_ms = 0;
  cfg->retry_jitter_ms = 5;
  cfg->layout = LK_REDLOCK_LAYOUT_REDISSON;
}

/* One attempt, the default lease, the default node timeout, not fenced. */
void lk_redlock_opts_init(lk_redlock_opts_t *o) {
  if (o != NULL)
    *o = (lk_redlock_opts_t){.lease_ms = LK_LEASE_DEFAULT};
}

static void begin(lk_redlock_t *rl, int kind, lk_redlock_cb cb, void *arg) {
  lk__obj_begin(&rl->base, kind, (lk__fn_t)cb, arg);
  rl->fail_status = 0;
  rl->attempts = 0;
}

/* Two clients that turned out to reach one server would let that server
 * vote twice. */
static int distinct_servers(const lk_redlock_t *rl) {
  size_t i, j;
  for (i = 0; i < rl->n; i++)
    for (j = i + 1; j < rl->n; j++)
      if (lk__group_same_server(rl->node[i].client, rl->node[j].client, 0))
        return 0;
  return 1;
}

int lk_redlock_acquire(lk_redlock_t *rl, const lk_redlock_opts_t *opts, lk_redlock_cb cb,
                       void *arg) {
  lk_redlock_opts_t defaults;
  int64_t lease;
  size_t i;
  int rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  opts = LK__OPTS_OR_DEFAULTS(opts, defaults, lk_redlock_opts_init);
  if (!lk__valid_wait(opts->wait_ms) || !lk__valid_lease(opts->lease_ms) ||
      opts->node_timeout_ms < 0 || opts->node_timeout_ms > LK_MAX_TIME_MS)
    return LK_EINVAL;
  /* The lean layout keeps one hold per owner on a master: no re-entry. */
  if (rl->holds == (rl->cfg.layout == LK_REDLOCK_LAYOUT_LEAN ? 1u : UINT32_MAX) ||
      !distinct_servers(rl))
    return LK_EINVAL;
  lk__group_afresh(&rl->holds, &rl->lost);
  /* Its timer (node timeouts, retries, renewal) is the wait part's: made
   * by the first acquire, kept until close. */
  if (lk__obj_want_timer(&rl->base) != 0)
    return LK_ENOMEM;
  begin(rl, OP_ACQUIRE, cb, arg);
  lk__obj_wait_begin(&rl->base, opts->wait_ms);
  rl->lease_ms = opts->lease_ms;
  rl->fenced = opts->fenced != 0;
  lease = opts->lease_ms;
  if (lease < 0)
    for (i = 0; i < rl->n; i++)
      if (lease < 0 || rl->node[i].client->o.default_lease_ms < lease)
        lease = rl->node[i].client->o.default_lease_ms;
  rl->node_timeout_ms = opts->node_timeout_ms > 0 ? opts->node_timeout_ms : lease / 20;
  if (rl->node_timeout_ms < 1)
    rl->node_timeout_ms = 1;
  lk__rl_start(rl);
  return 0;
}

int lk_redlock_release(lk_redlock_t *rl, lk_redlock_cb cb, void *arg) {
  int rc = lk__obj_check_idle(rl ? &rl->base : NULL, cb != NULL);
  if (rc != 0)
    return rc;
  rc = lk__group_release_check(&rl->holds, &rl->lost);
  if (rc != 0)
    return rc;
  begin(rl, OP_RELEASE, cb, arg);
  lk__rl_start(rl);
  return 0;
}

int lk_redlock_cancel(lk_redlock_t *rl) { return lk_handle_cancel(LK__H(rl)); }

static void on_node_closed(lk_lock_t *l) {
  lk__rnode_t *nd = lk_lock_get_data(l);
  lk_redlock_t *rl = nd->rl;
  if (--rl->nodes_closing == 0)
    lk__obj_close_done(&rl->base);
}

/* Close: each master's lock object is closed, which cancels what it has
 * pending and gives back its holds; then the RedLock goes. */
static int on_close_release(lk__obj_t *o) {
  lk_redlock_t *rl = (lk_redlock_t *)o;
  size_t i;
  lk__rl_forget_token_ops(rl);
  lk__rl_stop_subs(rl);
  rl->nodes_closing = rl->n;
  for (i = 0; i < rl->n; i++) {
    lk__lock_unbind(rl->node[i].lock);
    if (lk_lock_close(rl->node[i].lock, on_node_closed) != 0)
      rl->nodes_closing--; /* cannot happen: the RedLock owns it */
  }
  if (rl->nodes_closing == 0)
    lk__obj_close_done(&rl->base);
  return 1;
}

LK__OBJ_CALLS(lk_redlock_t, lk_redlock_cb, lk_redlock_close_cb)

/* The RedLock's own memory, once its node locks are closed (or, in a
 * forked child, freed). */
static void free_memory(lk_redlock_t *rl) {
  lk__free(rl->node);
  lk__free(rl->name);
  lk__free(rl->channel);
  lk__free(rl->token_key);
  lk__free(rl);
}

static void free_rl(lk__obj_t *o) {
  lk_redlock_t *rl = (lk_redlock_t *)o;
  size_t i;
  /* In a forked child the node locks are freed the same way (memory only);
   * otherwise they closed before this. */
  if (lk__client_forked(rl->base.client))
    for (i = 0; i < rl->n; i++)
      if (rl->node[i].lock != NULL)
        lk_lock_close(rl->node[i].lock, NULL);
  free_memory(rl);
}

/* The handle's answers (core/handle.c): held is a quorum's validity left. */
LK__HANDLE_FIELD(lk_redlock_t, token, int64_t)
static int handle_is_held(const lk__obj_t *o) {
  return lk__rl_held_deadline((const lk_redlock_t *)o) > lk__now_ns();
}

static const lk__obj_ops_t lk__redlock_ops = {
    LK__GROUP_OPS,
    .abandon = lk__rl_abandon,
    .free = free_rl,
    .handle_kind = LK_KIND_REDLOCK,
    .member_health = lk__rl_health,
    .token = handle_token,
};

static int check_clients(lk_client_t *const *clients, size_t n) {
  size_t i, j;
  int rc;
  for (i = 0; i < n; i++) {
    if (clients[i] == NULL)
      return LK_EINVAL;
    rc = lk__check_client_new(clients[i]);
    if (rc != 0)
      return rc;
  }
  if (!lk__group_same_loop(clients, n))
    return LK_EINVAL;
  for (i = 0; i < n; i++)
    for (j = i + 1; j < n; j++)
      if (lk__group_same_server(clients[i], clients[j], 0))
        return LK_EINVAL; /* one server voting twice */
  return 0;
}

static void free_partial(lk_redlock_t *rl, size_t made) {
  while (made-- > 0) {
    lk__lock_unbind(rl->node[made].lock);
    lk_lock_close(rl->node[made].lock, NULL);
  }
  free_memory(rl);
}

int lk_redlock_new(lk_client_t *const *clients, size_t n, const char *name,
                   const lk_redlock_config_t *cfg, lk_redlock_t **out) {
  lk_redlock_t *rl;
  size_t len, i;
  int rc;
  if (clients == NULL || out == NULL || n == 0 || n > LK_REDLOCK_MAX_NODES)
    return LK_EINVAL;
  rc = check_clients(clients, n);
  if (rc != 0)
    return rc;
  for (i = 0; i < n; i++) {
    rc = lk__check_name(clients[i], name, &len);
    if (rc != 0)
      return rc;
  }
  if (cfg != NULL && (cfg->quarantine_ms < 0 || cfg->quarantine_ms > LK_MAX_TIME_MS ||
                      cfg->retry_jitter_ms < 0 || cfg->retry_jitter_ms > 60000 ||
                      (cfg->layout != LK_REDLOCK_LAYOUT_REDISSON &&
                       cfg->layout != LK_REDLOCK_LAYOUT_LEAN)))
    return LK_EINVAL;
  rl = lk__calloc(1, sizeof(*rl));
  if (rl == NULL)
    return LK_ENOMEM;
  if (cfg != NULL)
    rl->cfg = *cfg;
  else
    lk_redlock_config_init(&rl->cfg);
  rl->name = lk__memdup0(name, len);
  rl->name_len = len;
  rl->channel = lk__prefix_name(LK__RL_CHANNEL_PREFIX, name, len, &rl->channel_len);
  rl->token_key = lk__prefix_name(LK__RL_TOKEN_PREFIX, name, len, &rl->token_key_len);
  rl->node = lk__calloc(n, sizeof(*rl->node));
  if (rl->name == NULL || rl->channel == NULL || rl->token_key == NULL || rl->node == NULL) {
    free_partial(rl, 0);
    return LK_ENOMEM;
  }
  /* One slot for the name, the channel and the token key on a cluster node
   * (core/names.c); each client's error text says why when not. */
  for (i = 0; i < n; i++) {
    const lk__derived_t d[3] = {{rl->name, len, 0},
                                {rl->channel, rl->channel_len, 0},
                                {rl->token_key, rl->token_key_len, 0}};
    rc = lk__names_one_slot(clients[i], "redlock", name, len, d, 3);
    if (rc != 0) {
      free_partial(rl, 0);
      return rc;
    }
  }
  for (i = 0; i < n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    rc = lk_lock_new(clients[i], name, &nd->lock);
    if (rc != 0) {
      free_partial(rl, i);
      return rc;
    }
    nd->rl = rl;
    nd->client = clients[i];
    lk__lock_bind(nd->lock, rl); /* never closed but by the RedLock */
    lk__lock_set_lean(nd->lock, rl->cfg.layout == LK_REDLOCK_LAYOUT_LEAN);
    lk__lock_set_lost_observer(nd->lock, lk__rl_node_lost, nd);
    lk_lock_set_data(nd->lock, nd);
  }
  rl->n = n;
  rl->quorum = n / 2 + 1;
  rl->token = 0;
  rl->rng = lk__group_seed(rl);
  lk__obj_init(&rl->base, clients[0], &lk__redlock_ops, rl->name);
  rl->base.composite = 1;
  if (n % 2 == 0)
    lk__log(clients[0], LK_LOG_WARN,
            "RedLock over an even number of masters (%zu) tolerates no more "
            "failures than %zu",
            n, n - 1);
  *out = rl;
  return 0;
}

LK__KIND_CLOSE(lk_redlock)

LK__KIND_SET_LOST_CB(lk_redlock)

int lk_redlock_is_held(const lk_redlock_t *rl) { return lk_handle_is_held(LK__CH(rl)) == 1; }

int64_t lk_redlock_validity_ms(const lk_redlock_t *rl) {
  uint64_t d, now = lk__now_ns();
  if (rl == NULL)
    return 0;
  d = lk__rl_held_deadline(rl);
  return d > now ? (int64_t)((d - now) / 1000000u) : 0;
}

int64_t lk_redlock_token(const lk_redlock_t *rl) { return rl ? lk_handle_token(LK__CH(rl)) : 0; }
uint32_t lk_redlock_hold_count(const lk_redlock_t *rl) { return rl ? rl->holds : 0; }
size_t lk_redlock_size(const lk_redlock_t *rl) { return rl ? rl->n : 0; }
size_t lk_redlock_quorum(const lk_redlock_t *rl) { return rl ? rl->quorum : 0; }

size_t lk_redlock_votes(const lk_redlock_t *rl) {
  size_t i, v = 0;
  if (rl == NULL)
    return 0;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].cur && rl->node[i].status == 0 && rl->node[i].mine > 0)
      v++;
  return v;
}

int lk_redlock_node_status(const lk_redlock_t *rl, size_t i) {
  return rl != NULL && i < rl->n ? rl->node[i].status : LK_EINVAL;
}
int lk_redlock_node_quarantined(const lk_redlock_t *rl, size_t i) {
  return rl != NULL && i < rl->n && lk__rl_quarantined(rl, &rl->node[i]);
}
lk_lock_t *lk_redlock_node_lock(const lk_redlock_t *rl, size_t i) {
  return rl != NULL && i < rl->n ? rl->node[i].lock : NULL;
}
/* The generic ones: aliases of lk_handle_ (latchkey/handle.h). */
const char *lk_redlock_name(const lk_redlock_t *rl) { return lk_handle_name(LK__CH(rl)); }
LK__KIND_DATA(lk_redlock)
