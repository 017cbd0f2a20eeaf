/* Handles shared by threads, and the per-thread slots behind them: each
 * thread that uses a handle gets an asynchronous object of its own whose
 * owner is that thread (Redisson's UUID:threadId), so threads of one process
 * exclude each other and each thread's re-entries count. A slot is made by
 * its thread (under the handle's mutex), its object by the loop thread on
 * the first call; what the thread reads without a round trip (hold counts,
 * lost, a fixed lease's end) are atomics the loop thread writes. */
#include <sched.h>
#include <string.h>

#include "blocking/blocking_internal.h"
#include "core/alloc.h"

lk__bl_handle_t *lk__bl_handle_alloc(lk_blocking_t *b, const lk__bl_kind_t *kind,
                                     const char *name, size_t size, const void *out, int *rc) {
  lk__bl_handle_t *h;
  *rc = out == NULL ? LK_EINVAL : lk__bl_check(b);
  if (*rc == 0 && (name == NULL || name[0] == '\0'))
    *rc = LK_EINVAL;
  if (*rc != 0)
    return NULL;
  *rc = LK_ENOMEM;
  h = lk__calloc(1, size);
  if (h == NULL)
    return NULL;
  h->b = b;
  h->kind = kind;
  atomic_init(&h->closing, 0);
  atomic_init(&h->active, 0);
  h->name = lk__strdup(name);
  if (h->name == NULL || uv_mutex_init(&h->mu) != 0) {
    lk__free(h->name);
    lk__free(h);
    return NULL;
  }
  *rc = 0;
  return h;
}

int lk__bl_handle_publish(lk__bl_handle_t *h) {
  int rc = lk__bl_register_handle(h->b, h);
  if (rc != 0)
    lk__bl_handle_free(h, 1);
  return rc;
}

int lk__bl_handle_new(lk_blocking_t *b, const lk__bl_kind_t *kind, const char *name,
                      size_t size, void *out) {
  int rc;
  lk__bl_handle_t *h = lk__bl_handle_alloc(b, kind, name, size, out, &rc);
  /* Copied as bytes: every pointer to a struct has one representation, and
   * the kind's struct begins with h. */
  if (h != NULL && (rc = lk__bl_handle_publish(h)) == 0)
    memcpy(out, &h, sizeof(h));
  return rc;
}

/* Thread tid's slot of h, or NULL. */
static lk__bl_slot_t *slot_of(lk__bl_handle_t *h, uint64_t tid) {
  lk__bl_slot_t *s;
  uv_mutex_lock(&h->mu);
  for (s = h->slots; s != NULL; s = s->next)
    if (s->tid == tid)
      break;
  uv_mutex_unlock(&h->mu);
  return s;
}

lk__bl_slot_t *lk__bl_slot_find(lk__bl_handle_t *h) { return slot_of(h, lk_blocking_thread_id()); }

lk__bl_slot_t *lk__bl_slot_get(lk__bl_handle_t *h, int *rc) {
  lk__bl_slot_t *s;
  if (h == NULL) {
    *rc = LK_EINVAL;
    return NULL;
  }
  /* Counted in before the closing check (both sequentially consistent): a
   * close that set closing after our check then sees us and waits. */
  atomic_fetch_add(&h->active, 1);
  *rc = lk__bl_check(h->b);
  if (*rc == 0 && atomic_load(&h->closing))
    *rc = LK_ECLOSED;
  if (*rc != 0)
    goto fail;
  s = lk__bl_slot_find(h);
  if (s != NULL)
    return s;
  /* Only this thread adds its own slot: no other can have added it since. */
  s = lk__calloc(1, sizeof(*s));
  if (s == NULL) {
    *rc = LK_ENOMEM;
    goto fail;
  }
  s->h = h;
  s->tid = lk_blocking_thread_id();
  uv_mutex_lock(&h->mu);
  s->next = h->slots;
  h->slots = s;
  uv_mutex_unlock(&h->mu);
  return s;
fail:
  atomic_fetch_sub(&h->active, 1);
  return NULL;
}

/* ---- each thread's object, as its generic handle ---------------------------- */

static void on_obj_lost(lk_handle_t *obj, int status, void *arg) {
  lk__bl_slot_t *slot = arg;
  (void)status;
  if (slot->h->kind->lost != NULL) {
    slot->h->kind->lost(slot, obj);
  } else {
    atomic_store(&slot->count[0], 0);
    atomic_store(&slot->count[1], 0);
    atomic_store(&slot->lost, 1);
  }
  lk__bl_notify_lost(slot);
}

static void on_obj_closed(lk_handle_t *obj) {
  lk__bl_slot_t *slot = lk_handle_get_data(obj);
  if (slot->h->kind->closed != NULL)
    slot->h->kind->closed(slot);
  else
    lk__bl_slot_closed(slot);
}

int lk__bl_slot_open(lk__bl_slot_t *slot) {
  const lk__bl_kind_t *kind = slot->h->kind;
  lk_handle_t *obj = NULL;
  int rc;
  if (slot->obj != NULL)
    return 0;
  if (slot->h->closer != NULL)
    return LK_ECLOSED;
  rc = kind->make(slot, &obj);
  if (rc != 0) {
    if (obj != NULL) /* nothing was sent: it just goes */
      lk_handle_close(obj, NULL);
    return rc;
  }
  if (kind->tells_lost && (rc = lk_handle_set_lost_cb(obj, on_obj_lost, slot)) != 0) {
    if (kind->unmake != NULL)
      kind->unmake(slot, obj);
    else
      lk_handle_close(obj, NULL);
    return rc;
  }
  lk_handle_set_data(obj, slot);
  slot->obj = obj;
  return 0;
}

/* Starts closing slot->obj; its close callback ends in lk__bl_slot_closed. */
static void close_obj(lk__bl_slot_t *slot) {
  if (lk_handle_close(slot->obj, on_obj_closed) != 0)
    on_obj_closed(slot->obj);
}

static void slot_unlink_free(lk__bl_slot_t *slot) {
  lk__bl_handle_t *h = slot->h;
  lk__bl_slot_t **pp;
  uv_mutex_lock(&h->mu);
  for (pp = &h->slots; *pp != NULL; pp = &(*pp)->next)
    if (*pp == slot) {
      *pp = slot->next;
      break;
    }
  uv_mutex_unlock(&h->mu);
  lk__free(slot);
}

/* Every object of a closing handle is closed: what the handle owns beside
 * them goes next. 1 while that is under way. */
static int close_rest(lk__bl_handle_t *h) { return h->close_rest != NULL && h->close_rest(h); }

void lk__bl_slot_closed(lk__bl_slot_t *slot) {
  lk__bl_handle_t *h = slot->h;
  lk__bl_forget_t *f = slot->forget;
  int counted = slot->h_counted;
  slot->obj = NULL;
  slot->closing = slot->h_counted = 0;
  if (f != NULL) { /* its thread is done with it: the slot goes too */
    slot_unlink_free(slot);
    lk__bl_forget_step(f);
  }
  if (counted && --h->closing_objs == 0 && !close_rest(h))
    lk__bl_handle_objs_closed(h);
}

void lk__bl_handle_forget(lk__bl_handle_t *h, uint64_t tid, lk__bl_forget_t *f) {
  lk__bl_slot_t *s = slot_of(h, tid);
  if (s == NULL)
    return;
  if (s->obj == NULL) {
    slot_unlink_free(s);
    return;
  }
  s->forget = f;
  /* Counted before the close starts: a close that ends at once calls
   * lk__bl_forget_step(f) from inside close_obj. */
  lk__bl_forget_count(f);
  if (!s->closing) {
    s->closing = 1;
    close_obj(s);
  }
}

int lk__bl_handle_close_objs(lk__bl_handle_t *h) {
  lk__bl_slot_t *s;
  uv_mutex_lock(&h->mu);
  s = h->slots;
  uv_mutex_unlock(&h->mu);
  /* Slots added after this point have no object and get none: the handle
   * refuses to open one once closing (lk__bl_slot_open). */
  h->closing_objs = 1;
  for (; s != NULL; s = s->next)
    if (s->obj != NULL) {
      h->closing_objs++;
      s->h_counted = 1;
      if (!s->closing) { /* else lk_blocking_thread_done closes it already */
        s->closing = 1;
        close_obj(s);
      }
    }
  h->closing_objs--;
  /* A close that failed at once was counted down already: what is left is
   * what the callers wait for. */
  return h->closing_objs > 0 || close_rest(h);
}

typedef struct {
  lk__bl_call_t call;
  lk__bl_handle_t *h;
} close_call_t;

static int start_handle_close(lk__bl_call_t *call) {
  lk__bl_handle_t *h = ((close_call_t *)call)->h;
  h->closer = call;
  if (lk__bl_handle_close_objs(h) == 0) {
    h->closer = NULL;
    lk__bl_unregister_handle(h->b, h);
    return 0;
  }
  return 1;
}

int lk__bl_handle_close(lk__bl_handle_t *h) {
  close_call_t cc;
  int rc;
  if (h == NULL)
    return LK_EINVAL;
  lk__bl_call_init(&cc.call, h->b, NULL, start_handle_close, NULL);
  cc.h = h;
  /* Refused (closing already, or the client is): the flag is left as it
   * was and the handle stays as it was. */
  rc = lk__bl_run_closing(&cc.call, &h->closing);
  if (rc != 0)
    return rc;
  /* Every call queued ahead of the close has ended, every later one is
   * refused; what is left are callers on their way out of lk__bl_slot_get
   * or lk__bl_run, which no longer block: wait for them to let go. */
  while (atomic_load(&h->active) != 0)
    sched_yield();
  lk__bl_handle_free(h, 1);
  return 0;
}

void lk__bl_handle_free(lk__bl_handle_t *h, int destroy_lock) {
  lk__bl_slot_t *s, *n;
  for (s = h->slots; s != NULL; s = n) {
    n = s->next;
    lk__free(s);
  }
  if (destroy_lock) /* not in a forked child: it may be held for ever */
    uv_mutex_destroy(&h->mu);
  else if (h->free_rest != NULL)
    h->free_rest(h);
  lk__free(h->name);
  lk__free(h);
}

uint64_t lk__bl_lease_until(int64_t lease_ms) {
  return lease_ms > 0 ? uv_hrtime() + (uint64_t)lease_ms * 1000000u : 0;
}

int lk__bl_slot_held(const lk__bl_slot_t *slot, int i) {
  uint64_t until;
  if (slot == NULL || atomic_load(&slot->lost) || atomic_load(&slot->count[i]) <= 0)
    return 0;
  until = atomic_load(&slot->until_ns[i]);
  return until == 0 || uv_hrtime() < until;
}

int lk__bl_held(lk__bl_handle_t *h, int i) {
  return h != NULL && lk__bl_slot_held(lk__bl_slot_find(h), i);
}

int64_t lk__bl_count(lk__bl_handle_t *h, int i, int unless_lost) {
  lk__bl_slot_t *s = h != NULL ? lk__bl_slot_find(h) : NULL;
  if (s == NULL || (unless_lost && atomic_load(&s->lost)))
    return 0;
  return atomic_load(&s->count[i]);
}

int64_t lk__bl_token(lk__bl_handle_t *h) {
  lk__bl_slot_t *s = h != NULL ? lk__bl_slot_find(h) : NULL;
  return s != NULL ? atomic_load(&s->token) : 0;
}
