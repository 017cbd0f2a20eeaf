/* The blocking MultiLock (docs/multilock.md): a group of lock names taken
 * all together or none. Each thread gets its own lk_lock_t per name (owner
 * = the thread, handle.c) and an lk_multilock_t over them; slot->extra
 * holds the members, closed after the group. */
#include <string.h>

#include "blocking/blocking_internal.h"
#include "core/alloc.h"

struct lk_blocking_multilock_s {
  lk__bl_handle_t h; /* first: handle.c frees the whole, names included */
  size_t n;
  char *names[]; /* n pointers, then the strings: one allocation */
};

typedef struct {
  lk_lock_t **locks;
  size_t n, open;
} members_t;

enum { V_ACQUIRE, V_RELEASE };

typedef struct {
  lk__bl_call_t call;
  int verb;
  lk_multilock_opts_t opts;
  uint64_t until; /* a fixed lease's end, as in lock_like.h */
} ml_call_t;

static void on_lost(lk_multilock_t *ml, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)ml;
  (void)status;
  atomic_store(&slot->count[0], 0);
  atomic_store(&slot->lost, 1);
  lk__bl_notify_lost(slot);
}

static void free_members(members_t *m) {
  lk__free(m->locks);
  lk__free(m);
}

/* One member closed (or failed to start closing); the last one ends the
 * slot's close. */
static void member_done(lk__bl_slot_t *slot) {
  members_t *m = slot->extra;
  if (--m->open > 0)
    return;
  free_members(m);
  slot->extra = NULL;
  lk__bl_slot_closed(slot);
}

static void on_member_closed(lk_lock_t *l) { member_done(lk_lock_get_data(l)); }

static void on_group_closed(lk_multilock_t *ml) {
  lk__bl_slot_t *slot = lk_multilock_get_data(ml);
  members_t *m = slot->extra;
  m->open = m->n + 1; /* no member's callback ends the close before the loop does */
  for (size_t i = 0; i < m->n; i++)
    if (lk_lock_close(m->locks[i], on_member_closed) != 0)
      member_done(slot);
  member_done(slot);
}

static int open_obj(lk__bl_slot_t *slot) {
  lk_blocking_multilock_t *g = (lk_blocking_multilock_t *)slot->h;
  lk_client_t *c = lk__bl_client(g->h.b);
  lk_multilock_t *ml = NULL;
  members_t *m = lk__calloc(1, sizeof(*m));
  size_t i = 0;
  int rc = m == NULL ? LK_ENOMEM : 0;
  if (rc == 0) {
    m->locks = lk__calloc(g->n, sizeof(*m->locks));
    rc = m->locks == NULL ? LK_ENOMEM : 0;
  }
  for (; rc == 0 && i < g->n; i++) {
    rc = lk_lock_new(c, g->names[i], &m->locks[i]);
    if (rc == 0) {
      lk_lock_set_data(m->locks[i], slot);
      rc = lk_lock_set_owner(m->locks[i], NULL, slot->tid);
    } else {
      break; /* m->locks[i] was not made */
    }
  }
  if (rc == 0)
    rc = lk_multilock_new(m->locks, g->n, &ml);
  if (rc == 0 && (rc = lk_multilock_set_lost_cb(ml, on_lost, slot)) != 0)
    lk_multilock_close(ml, NULL);
  if (rc != 0) {
    /* Nothing was sent: the members made so far just go. */
    for (size_t j = 0; m != NULL && m->locks != NULL && j < i; j++)
      lk_lock_close(m->locks[j], NULL);
    if (m != NULL)
      free_members(m);
    return rc;
  }
  m->n = g->n;
  lk_multilock_set_data(ml, slot);
  slot->extra = m;
  slot->obj = ml;
  return 0;
}

static void close_obj(lk__bl_slot_t *slot) {
  if (lk_multilock_close(slot->obj, on_group_closed) != 0)
    on_group_closed(slot->obj);
}

static const lk__bl_kind_t ml_kind = {"multilock", open_obj, close_obj};

static void on_done(lk_multilock_t *ml, int status, void *arg) {
  ml_call_t *c = arg;
  if (c->verb == V_ACQUIRE && status == 0) {
    atomic_store(&c->call.slot->until_ns[0], c->until);
    atomic_store(&c->call.slot->lost, 0);
  }
  atomic_store(&c->call.slot->count[0], (int64_t)lk_multilock_hold_count(ml));
  lk__bl_finish(&c->call, status, 0);
}

static int start(lk__bl_call_t *call) {
  ml_call_t *c = (ml_call_t *)call;
  int rc = lk__bl_slot_open(call->slot);
  lk_multilock_t *ml = call->slot->obj;
  if (rc != 0)
    return rc;
  if (c->verb == V_ACQUIRE)
    rc = lk_multilock_acquire(ml, &c->opts, on_done, c);
  else
    rc = lk_multilock_release(ml, on_done, c);
  if (rc == LK_ELEASELOST)
    atomic_store(&call->slot->count[0], 0);
  return rc == 0 ? 1 : rc;
}

static int cancel(lk__bl_call_t *call) { return lk_multilock_cancel(call->slot->obj); }

static int run(lk_blocking_multilock_t *g, int verb, const lk_multilock_opts_t *opts) {
  ml_call_t c;
  int rc;
  lk__bl_slot_t *slot = lk__bl_slot_get(g ? &g->h : NULL, &rc);
  if (slot == NULL)
    return rc;
  lk__bl_call_init(&c.call, g->h.b, slot, start, verb == V_ACQUIRE ? cancel : NULL);
  c.verb = verb;
  if (opts != NULL)
    c.opts = *opts;
  /* Taken before the request leaves: a fixed lease never outlives it here. */
  c.until = verb == V_ACQUIRE ? lk__bl_lease_until(c.opts.lease_ms) : 0;
  return lk__bl_run(&c.call);
}

int lk_blocking_multilock_new(lk_blocking_t *b, const char *const *names, size_t n,
                              lk_blocking_multilock_t **out) {
  lk_blocking_multilock_t *g;
  size_t bytes = 0;
  char *p;
  int rc;
  if (out == NULL || names == NULL || n == 0 || n > LK_MULTILOCK_MAX_MEMBERS)
    return LK_EINVAL;
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL)
      return LK_EINVAL;
    bytes += strlen(names[i]) + 1;
  }
  g = lk__calloc(1, sizeof(*g) + n * sizeof(char *) + bytes);
  if (g == NULL)
    return LK_ENOMEM;
  g->n = n;
  p = (char *)&g->names[n];
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]) + 1;
    memcpy(p, names[i], len);
    g->names[i] = p;
    p += len;
  }
  /* The handle's own name (lost callbacks say it) is the first member's. */
  rc = lk__bl_handle_init(&g->h, b, &ml_kind, names[0]);
  if (rc != 0) {
    lk__free(g);
    return rc;
  }
  rc = lk__bl_register_handle(b, &g->h);
  if (rc != 0) {
    lk__bl_handle_free(&g->h, 1);
    return rc;
  }
  *out = g;
  return 0;
}

int lk_blocking_multilock_acquire(lk_blocking_multilock_t *g, const lk_multilock_opts_t *opts) {
  lk_multilock_opts_t o;
  if (opts == NULL) {
    lk_multilock_opts_init(&o);
    o.wait_ms = LK_WAIT_FOREVER;
    opts = &o;
  }
  return run(g, V_ACQUIRE, opts);
}

int lk_blocking_multilock_try(lk_blocking_multilock_t *g, int64_t wait_ms) {
  lk_multilock_opts_t o;
  lk_multilock_opts_init(&o);
  o.wait_ms = wait_ms;
  return run(g, V_ACQUIRE, &o);
}

int lk_blocking_multilock_release(lk_blocking_multilock_t *g) { return run(g, V_RELEASE, NULL); }

int lk_blocking_multilock_is_held(lk_blocking_multilock_t *g) {
  return g != NULL && lk__bl_slot_held(lk__bl_slot_find(&g->h), 0);
}

uint32_t lk_blocking_multilock_hold_count(lk_blocking_multilock_t *g) {
  lk__bl_slot_t *s = g != NULL ? lk__bl_slot_find(&g->h) : NULL;
  return s != NULL && !atomic_load(&s->lost) ? (uint32_t)atomic_load(&s->count[0]) : 0;
}

int lk_blocking_multilock_close(lk_blocking_multilock_t *g) {
  return lk__bl_handle_close(g ? &g->h : NULL);
}
