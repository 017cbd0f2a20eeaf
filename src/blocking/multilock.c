/* The blocking MultiLock (docs/multilock.md): a group of lock names taken
 * all together or none. Each thread gets its own lk_lock_t per name (owner
 * = the thread) and an lk_multilock_t over them; slot->extra
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

/* The group is closed (or failed to start closing): its members next. */
static void group_closed(lk__bl_slot_t *slot) {
  members_t *m = slot->extra;
  m->open = m->n + 1; /* no member's callback ends the close before the loop does */
  for (size_t i = 0; i < m->n; i++)
    if (lk_lock_close(m->locks[i], on_member_closed) != 0)
      member_done(slot);
  member_done(slot);
}

/* Members made so far (n of them) and the group go: nothing was sent. */
static void discard(members_t *m, size_t n, lk_multilock_t *ml) {
  if (ml != NULL)
    lk_multilock_close(ml, NULL);
  for (size_t j = 0; m != NULL && m->locks != NULL && j < n; j++)
    lk_lock_close(m->locks[j], NULL);
  if (m != NULL)
    free_members(m);
}

static int make(lk__bl_slot_t *slot, lk_handle_t **out) {
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
  if (rc != 0) {
    discard(m, i, NULL);
    return rc;
  }
  m->n = g->n;
  slot->extra = m;
  *out = lk_multilock_handle(ml);
  return 0;
}

/* The lost callback could not be set. */
static void unmake(lk__bl_slot_t *slot, lk_handle_t *obj) {
  members_t *m = slot->extra;
  slot->extra = NULL;
  discard(m, m->n, lk_handle_as_multilock(obj));
}

static void sync_count(lk__bl_slot_t *slot, lk_handle_t *obj) {
  atomic_store(&slot->count[0], (int64_t)lk_multilock_hold_count(lk_handle_as_multilock(obj)));
}

LK__BL_DONE(multilock)

static int start_acquire(lk_handle_t *h, lk__bl_op_t *op) {
  return lk_multilock_acquire(lk_handle_as_multilock(h), op->opts, bl_done, op);
}

static int acquire(lk_blocking_multilock_t *g, const lk_multilock_opts_t *opts) {
  return lk__bl_hold_run(LK__BL_H(g), start_acquire, 0, opts, opts->lease_ms);
}

#define BL_A(x) lk_multilock_##x
#define BL_B(x) lk_blocking_multilock_##x
#define BL_AS lk_handle_as_multilock
#include "blocking/lock_verbs.h"

static const lk__bl_kind_t ml_kind = {
    .what = "multilock", .kind = LK_KIND_MULTILOCK, .tells_lost = 1, .sides = 1,
    .make = make, .unmake = unmake, .sync = sync_count, .closed = group_closed,
    .try_any = try_any, .release_any = release_any,
    .holds = 1};

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
  /* The handle's own name (lost callbacks say it) is the first member's. */
  g = (lk_blocking_multilock_t *)lk__bl_handle_alloc(
      b, &ml_kind, names[0], sizeof(*g) + n * sizeof(char *) + bytes, out, &rc);
  if (g == NULL)
    return rc;
  g->n = n;
  p = (char *)&g->names[n];
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(names[i]) + 1;
    memcpy(p, names[i], len);
    g->names[i] = p;
    p += len;
  }
  if ((rc = lk__bl_handle_publish(&g->h)) == 0)
    *out = g;
  return rc;
}
