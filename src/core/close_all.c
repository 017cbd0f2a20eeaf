/* Layer 5 (owner): may call every layer (docs/design.md, "Layers"). */
/* lk_client_close_all: every object still open on a client is closed as
 * its own close would close it, then the client, then one callback
 * (docs/client.md, "Closing").
 *
 * The client keeps its open objects in a list (core/object.c links them).
 * A MultiLock or RedLock must close before its members: its close gives
 * back the group's holds through them, then lets them go
 * (lk__obj_set_parent(member, NULL)), and only then may they close. So each
 * step closes the groups first, then every object no group holds; a member
 * waits for its group, and the step runs again whenever an object of the
 * client closed or was let go. When the list is empty the client closes
 * with the caller's callback. */
#include "core/object.h"

static int forked_close_all(lk_client_t *c);

/* The group object is of another client and nobody closes it: this client
 * cannot close its member. */
static int held_by_other_client(const lk_client_t *c, const lk__obj_t *o) {
  return o->parent != NULL && o->parent->client != c && !o->parent->closing;
}

static void step(lk_client_t *c) {
  lk__queue_t *q;
  int pass;
  /* Nothing below frees or unlinks an object at once (closes finish from
   * the loop), so the walks stay valid. Pass 0: the groups made from this
   * client (their close cancels what they have pending, gives back their
   * holds and lets their members go); pass 1: every other object that is
   * free to close. Objects already closing keep their own close. */
  for (pass = 0; pass < 2; pass++)
    for (q = lk__queue_head(&c->obj_list); q != &c->obj_list; q = q->next) {
      lk__obj_t *o = lk__container_of(q, lk__obj_t, client_node);
      if (o->closing || o->parent != NULL || (pass == 0 && !o->composite))
        continue;
      /* Cannot fail: the object is open, and its client (this one) is
       * neither closing nor on another thread. */
      (void)lk__obj_close(o, NULL);
    }
  if (lk__queue_empty(&c->obj_list))
    lk__client_begin_close(c, c->close_all_cb);
}

static void on_step(lk__defer_t *d) {
  step(lk__container_of(d, lk_client_t, close_all_step));
}

void lk__obj_set_parent(lk__obj_t *o, lk__obj_t *parent) {
  o->parent = parent;
  if (parent == NULL)
    lk__close_all_kick(o->client);
}

int lk_client_close_all(lk_client_t *c, lk_client_close_cb close_cb) {
  lk__queue_t *q;
  int rc;
  if (c == NULL)
    return LK_EINVAL;
  if (lk__client_forked(c))
    return forked_close_all(c);
  rc = lk__check_client(c);
  if (rc != 0)
    return rc;
  if (c->closing_all)
    return LK_ECLOSED;
  /* A member of a group made from another client closes only with that
   * group, which this call may not close: the caller closes it first (or
   * that client's objects, with lk_client_close_all). Checked before
   * anything is done, so LK_EBUSY leaves everything as it was. */
  for (q = lk__queue_head(&c->obj_list); q != &c->obj_list; q = q->next)
    if (held_by_other_client(c, lk__container_of(q, lk__obj_t, client_node)))
      return LK_EBUSY;
  c->closing_all = 1;
  c->close_all_cb = close_cb;
  lk__defer_init(&c->close_all_step, on_step);
  /* Every object that can close now starts closing inside this call, so
   * from its return each of them answers LK_ECLOSED, as after its own
   * close; their callbacks, and close_cb, come from the loop. */
  step(c);
  return 0;
}

/* In a forked child: the memory of every object of this client, then of the
 * client; nothing is sent, no handle closed, no callback run (the objects'
 * and the client's own closes do the same there). A RedLock frees its
 * masters' lock objects with it, so groups go first. */
static int forked_close_all(lk_client_t *c) {
  while (!lk__queue_empty(&c->obj_list)) {
    lk__queue_t *q = lk__queue_head(&c->obj_list), *g;
    for (g = q; g != &c->obj_list; g = g->next)
      if (lk__container_of(g, lk__obj_t, client_node)->composite) {
        q = g;
        break;
      }
    (void)lk__obj_close(lk__container_of(q, lk__obj_t, client_node), NULL);
  }
  return lk_client_close(c, NULL); /* frees the client: LK_EFORKED */
}
