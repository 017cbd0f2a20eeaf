/* The blocking RedLock (docs/multilock.md, "RedLock"): one name held by a
 * quorum of independent masters. The handle has one client per master on
 * the blocking client's loop: made by lk_blocking_redlock_new from options
 * (then owned: closed after every thread's object, before the handle
 * goes), or given by lk_blocking_redlock_new_on (borrowed). Each thread gets
 * its own lk_redlock_t over those clients, so two threads are two RedLock
 * owners and exclude each other, and a thread's re-entry counts on its own
 * object as RedLock's rules say. The node owners stay the RedLock's own
 * fresh ids (not the thread id): they are unshared, so every master keeps
 * the lock's exact lost-reply handling (lk_lock_set_owner would give it up). */
#include <string.h>

#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_redlock_s {
  lk__bl_handle_t h; /* first: handle.c frees the whole, clients array included */
  lk_redlock_config_t cfg;
  size_t n;
  int owns;           /* the clients were made here: closed with the handle */
  int clients_closed; /* loop thread: their close has begun */
  size_t closing;     /* loop thread: owned clients still closing */
  lk_client_t *clients[];
};

/* ---- each thread's object ---------------------------------------------------- */

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
  lk_blocking_redlock_t *r = (lk_blocking_redlock_t *)slot->h;
  lk_redlock_t *rl = NULL;
  int rc = lk_redlock_new(r->clients, r->n, r->h.name, &r->cfg, &rl);
  *out = lk_redlock_handle(rl);
  return rc;
}

static void sync_count(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_redlock_hold_count(lk_handle_as_redlock(obj)));
}

/* ---- verbs ---------------------------------------------------------------------- */

/* A fixed lease holds for the quorum's validity (lease less the time the
 * attempt took and the drift), read now and rounded down; a renewed one
 * has no end but a loss. */
static int64_t set_validity(lk_handle_t *obj, int status, lk__bl_op_t *op) {
  const lk_redlock_opts_t *opts = op->opts;
  if (status == 0) {
    int64_t v = lk_redlock_validity_ms(lk_handle_as_redlock(obj));
    atomic_store(&op->call.slot->until_ns[0],
                 opts->lease_ms > 0 ? uv_hrtime() + (uint64_t)v * 1000000u : 0);
  }
  return 0;
}

LK__BL_DONE(redlock)

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_redlock_acquire(lk_handle_as_redlock(h), op->opts, bl_done, op);
}

static int acquire(lk_blocking_redlock_t *r, const lk_redlock_opts_t *opts) {
  lk__bl_op_t op = {.start = start_acquire,
                    .flags = LK__BL_CANCELABLE | LK__BL_HOLDS,
                    .opts = opts,
                    .finish = set_validity};
  return lk__bl_op_run(LK__BL_H(r), &op, NULL);
}

#define BL_A(x) lk_redlock_##x
#define BL_B(x) lk_blocking_redlock_##x
#define BL_AS lk_handle_as_redlock
#include "blocking/lock_verbs.h"

static const lk__bl_kind_t rl_kind = {
    .what = "redlock", .kind = LK_KIND_REDLOCK, .tells_lost = 1, .has_token = 1, .sides = 1,
    .make = make, .sync = sync_count, .try_any = try_any, .release_any = release_any,
    .holds = 1};

/* ---- the owned clients: closed after the objects made on them -------------------- */

static void on_client_closed(lk_client_t *c) {
  lk_blocking_redlock_t *r = lk_client_get_data(c);
  if (--r->closing == 0)
    lk__bl_handle_objs_closed(&r->h);
}

static int close_clients(lk__bl_handle_t *h) {
  lk_blocking_redlock_t *r = (lk_blocking_redlock_t *)h;
  if (!r->owns || r->clients_closed)
    return 0;
  r->clients_closed = 1;
  r->closing = 1; /* no callback ends this before the loop does */
  for (size_t i = 0; i < r->n; i++) {
    lk_client_set_data(r->clients[i], r);
    /* close_all: also what a RedLock still closing has on it. */
    if (lk_client_close_all(r->clients[i], on_client_closed) == 0)
      r->closing++;
  }
  return --r->closing > 0;
}

/* In a forked child nothing closes: the clients' memory (and their
 * objects') is freed. The first client first: each thread's RedLock counts
 * as its object and frees its node locks on the others. */
static void free_clients(lk__bl_handle_t *h) {
  lk_blocking_redlock_t *r = (lk_blocking_redlock_t *)h;
  if (!r->owns || r->clients_closed)
    return;
  for (size_t i = 0; i < r->n; i++)
    if (r->clients[i] != NULL)
      lk_client_close_all(r->clients[i], NULL);
}

/* ---- creation, on the loop thread ------------------------------------------------ */

typedef struct {
  lk__bl_call_t call;
  lk_blocking_redlock_t *r;
  const lk_client_opts_t *masters; /* NULL: r->clients were given */
} new_call_t;

static void on_probe_closed(lk_redlock_t *rl) {
  new_call_t *c = lk_redlock_get_data(rl);
  lk__bl_finish(&c->call, 0, 0);
}

/* Makes the clients (when asked), then a RedLock over them that is closed
 * at once: the checks of lk_redlock_new (the same server twice, a name the
 * clients refuse...) come from new rather than from each thread's first
 * call. The handle is registered here, on the loop thread, so a blocking
 * close queued behind this call finds it and closes its clients. */
static int start_new(lk__bl_call_t *call) {
  new_call_t *c = (new_call_t *)call;
  lk_blocking_redlock_t *r = c->r;
  uv_loop_t *loop = lk_client_loop(lk__bl_client(call->b));
  lk_redlock_t *probe = NULL;
  size_t made = 0;
  /* Registered first: LK_ECLOSED when the blocking client began closing
   * before this call ran (its close would not know the handle), with
   * nothing made yet. */
  int rc = lk__bl_register_handle(call->b, &r->h);
  if (rc != 0)
    return rc;
  if (c->masters != NULL)
    for (; made < r->n && rc == 0; made++)
      if ((rc = lk_client_new(loop, &c->masters[made], &r->clients[made])) != 0)
        break;
  for (size_t i = 0; rc == 0 && i < r->n; i++)
    if (r->clients[i] != NULL && lk_client_loop(r->clients[i]) != loop)
      rc = LK_EINVAL; /* a given client on another loop */
  if (rc == 0)
    rc = lk_redlock_new(r->clients, r->n, r->h.name, &r->cfg, &probe);
  if (rc != 0) {
    while (c->masters != NULL && made-- > 0) {
      lk_client_close(r->clients[made], NULL);
      r->clients[made] = NULL;
    }
    lk__bl_unregister_handle(call->b, &r->h);
    return rc;
  }
  lk_redlock_set_data(probe, c);
  if (lk_redlock_close(probe, on_probe_closed) != 0)
    return 0; /* cannot happen: it was just made */
  return 1;
}

static int new_handle(lk_blocking_t *b, const lk_client_opts_t *masters,
                      lk_client_t *const *clients, size_t n, const char *name,
                      const lk_redlock_config_t *cfg, lk_blocking_redlock_t **out) {
  lk_blocking_redlock_t *r;
  new_call_t nc;
  int rc;
  if (out == NULL || (masters == NULL && clients == NULL) || n == 0 ||
      n > LK_REDLOCK_MAX_NODES)
    return LK_EINVAL;
  r = (lk_blocking_redlock_t *)lk__bl_handle_alloc(
      b, &rl_kind, name, sizeof(*r) + n * sizeof(lk_client_t *), out, &rc);
  if (r == NULL)
    return rc;
  r->h.close_rest = close_clients;
  r->h.free_rest = free_clients;
  r->n = n;
  r->owns = masters != NULL;
  if (clients != NULL)
    memcpy(r->clients, clients, n * sizeof(*clients));
  if (cfg != NULL)
    r->cfg = *cfg;
  else
    lk_redlock_config_init(&r->cfg);
  lk__bl_call_init(&nc.call, b, NULL, start_new, NULL);
  nc.r = r;
  nc.masters = masters;
  rc = lk__bl_run(&nc.call);
  if (rc != 0) {
    lk__bl_handle_free(&r->h, 1);
    return rc;
  }
  *out = r;
  return 0;
}

int lk_blocking_redlock_new(lk_blocking_t *b, const lk_client_opts_t *masters, size_t n,
                            const char *name, const lk_redlock_config_t *cfg,
                            lk_blocking_redlock_t **out) {
  if (masters == NULL)
    return LK_EINVAL;
  return new_handle(b, masters, NULL, n, name, cfg, out);
}

int lk_blocking_redlock_new_on(lk_blocking_t *b, lk_client_t *const *clients, size_t n,
                               const char *name, const lk_redlock_config_t *cfg,
                               lk_blocking_redlock_t **out) {
  if (clients == NULL)
    return LK_EINVAL;
  return new_handle(b, NULL, clients, n, name, cfg, out);
}
