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

enum { V_ACQUIRE, V_RELEASE };

typedef struct {
  lk__bl_call_t call;
  int verb;
  lk_redlock_opts_t opts;
} rl_call_t;

/* ---- each thread's object ---------------------------------------------------- */

static void on_lost(lk_redlock_t *rl, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)rl;
  (void)status;
  atomic_store(&slot->count[0], 0);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void on_closed(lk_redlock_t *rl) { lk__bl_slot_closed(lk_redlock_get_data(rl)); }

static int open_obj(lk__bl_slot_t *slot) {
  lk_blocking_redlock_t *r = (lk_blocking_redlock_t *)slot->h;
  lk_redlock_t *rl = NULL;
  int rc = lk_redlock_new(r->clients, r->n, r->h.name, &r->cfg, &rl);
  if (rc == 0 && (rc = lk_redlock_set_lost_cb(rl, on_lost, slot)) != 0)
    lk_redlock_close(rl, NULL);
  if (rc != 0)
    return rc;
  lk_redlock_set_data(rl, slot);
  slot->obj = rl;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_redlock_close(slot->obj, on_closed) != 0)
    lk__bl_slot_closed(slot);
}

static const lk__bl_kind_t rl_kind = {"redlock", open_obj, close_obj};

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

static int make(lk_blocking_t *b, const lk_client_opts_t *masters, lk_client_t *const *clients,
                size_t n, const char *name, const lk_redlock_config_t *cfg,
                lk_blocking_redlock_t **out) {
  lk_blocking_redlock_t *r;
  new_call_t nc;
  int rc;
  if (out == NULL || (masters == NULL && clients == NULL) || n == 0 ||
      n > LK_REDLOCK_MAX_NODES)
    return LK_EINVAL;
  r = lk__calloc(1, sizeof(*r) + n * sizeof(lk_client_t *));
  if (r == NULL)
    return LK_ENOMEM;
  rc = lk__bl_handle_init(&r->h, b, &rl_kind, name);
  if (rc != 0) {
    lk__free(r);
    return rc;
  }
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
  return make(b, masters, NULL, n, name, cfg, out);
}

int lk_blocking_redlock_new_on(lk_blocking_t *b, lk_client_t *const *clients, size_t n,
                               const char *name, const lk_redlock_config_t *cfg,
                               lk_blocking_redlock_t **out) {
  if (clients == NULL)
    return LK_EINVAL;
  return make(b, NULL, clients, n, name, cfg, out);
}

/* ---- verbs ---------------------------------------------------------------------- */

static void on_done(lk_redlock_t *rl, int status, void *arg) {
  rl_call_t *c = arg;
  lk__bl_slot_t *slot = c->call.slot;
  if (c->verb == V_ACQUIRE && status == 0) {
    /* A fixed lease holds for the quorum's validity (lease less the time
     * the attempt took and the drift), read now and rounded down; a
     * renewed one has no end but a loss. */
    int64_t v = lk_redlock_validity_ms(rl);
    atomic_store(&slot->until_ns[0],
                 c->opts.lease_ms > 0 ? uv_hrtime() + (uint64_t)v * 1000000u : 0);
    atomic_store(&slot->lost, 0);
  }
  atomic_store(&slot->count[0], (int64_t)lk_redlock_hold_count(rl));
  lk__bl_finish(&c->call, status, 0);
}

static int start(lk__bl_call_t *call) {
  rl_call_t *c = (rl_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_redlock_t *rl = call->slot->obj;
  if (rc != 0)
    return rc;
  if (c->verb == V_ACQUIRE)
    rc = lk_redlock_acquire(rl, &c->opts, on_done, c);
  else
    rc = lk_redlock_release(rl, on_done, c);
  if (rc == LK_ELEASELOST) /* told by on_lost; the object starts afresh */
    atomic_store(&call->slot->count[0], 0);
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_redlock_cancel(call->slot->obj); }

static int run(lk_blocking_redlock_t *r, int verb, const lk_redlock_opts_t *opts) {
  rl_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(r ? &r->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, r->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c.verb = verb;
  if (opts != NULL)
    c.opts = *opts;
  else
    lk_redlock_opts_init(&c.opts);
  return lk__bl_run(&c.call);
}

int lk_blocking_redlock_acquire(lk_blocking_redlock_t *r, const lk_redlock_opts_t *opts) {
  lk_redlock_opts_t o;
  if (opts == NULL) {
    lk_redlock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(r, V_ACQUIRE, opts);
}

int lk_blocking_redlock_try(lk_blocking_redlock_t *r, int64_t wait_ms) {
  lk_redlock_opts_t o;
  lk_redlock_opts_init(&o);
  o.wait_ms = wait_ms;
  return run(r, V_ACQUIRE, &o);
}

int lk_blocking_redlock_release(lk_blocking_redlock_t *r) { return run(r, V_RELEASE, NULL); }

int lk_blocking_redlock_is_held(lk_blocking_redlock_t *r) {
  return r != NULL && lk__bl_slot_held(lk__bl_slot_find(&r->h), 0);
}

uint32_t lk_blocking_redlock_hold_count(lk_blocking_redlock_t *r) {
  lk__bl_slot_t *s = r != NULL ? lk__bl_slot_find(&r->h) : NULL;
  return s != NULL && !atomic_load(&s->lost) ? (uint32_t)atomic_load(&s->count[0]) : 0;
}

int lk_blocking_redlock_close(lk_blocking_redlock_t *r) {
  return lk__bl_handle_close(r ? &r->h : NULL);
}
