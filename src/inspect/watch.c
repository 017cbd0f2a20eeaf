/* lk_inspect_watch: the pub/sub channels a name's structures announce
 * changes on, subscribed through the client's own pub/sub (core/pubsub.h:
 * shared and reference counted, re-subscribed after a reconnect, on a
 * cluster SSUBSCRIBE on the master of each channel's slot), so a viewer
 * such as `latchkey watch` reads again when something changed instead of
 * only on its timer (docs/inspect.md, "Watching"). */
#include <string.h>

#include "core/internal.h"
#include "core/pubsub.h"

/* The channels every structure kind uses, subscribed for any name: which
 * kind a name holds may change while it is watched. */
enum { W_LOCK, W_RWLOCK, W_SEM, W_LATCH, W_FIXED };

typedef struct wsub_s {
  lk__sub_t sub;
  struct lk_inspect_watch_s *w;
  char *chan;  /* the channel's name (owned) */
  size_t len;
  char *owner; /* follow slots: the waiter it is for; NULL: slot unused */
} wsub_t;

struct lk_inspect_watch_s {
  lk_client_t *c;
  lk_inspect_watch_cb cb;
  void *arg;
  wsub_t subs[W_FIXED + LK_INSPECT_WATCH_FOLLOW];
  size_t name_len;
  char name[];
};

static void on_sub(lk__sub_t *s, int event, int status, const char *msg, size_t len) {
  wsub_t *ws = lk__container_of(s, wsub_t, sub);
  lk_inspect_watch_t *w = ws->w;
  (void)msg, (void)len;
  /* A confirmation (status 0) means messages may have been missed while
   * the subscription was being made: the caller reads again, as for a
   * message. */
  w->cb(w, status, event == LK__SUB_MESSAGE ? ws->chan : NULL, w->arg);
}

static int sub_open(lk_inspect_watch_t *w, wsub_t *ws, char *chan, size_t len) {
  int rc;
  if (chan == NULL)
    return LK_ENOMEM;
  ws->w = w;
  ws->chan = chan;
  ws->len = len;
  if ((rc = lk__sub_start(w->c, &ws->sub, chan, len, on_sub)) != 0) {
    lk__free(chan);
    ws->chan = NULL;
  }
  return rc;
}

static void sub_close(wsub_t *ws) {
  lk__sub_stop(&ws->sub); /* a no-op once the client closed */
  lk__free(ws->chan);
  lk__free(ws->owner);
  ws->chan = NULL;
  ws->owner = NULL;
}

int lk_inspect_watch(lk_client_t *c, const char *name, lk_inspect_watch_cb cb, void *arg,
                     lk_inspect_watch_t **out) {
  lk_inspect_watch_t *w;
  size_t len, cl = 0;
  int rc, i;
  if (out != NULL)
    *out = NULL;
  if ((rc = lk__check_client(c)) != 0)
    return rc;
  if (cb == NULL || out == NULL)
    return LK_EINVAL;
  if ((rc = lk__check_name(c, name, &len)) != 0)
    return rc;
  if ((w = lk__calloc(1, sizeof(*w) + len + 1)) == NULL)
    return LK_ENOMEM;
  w->c = c, w->cb = cb, w->arg = arg;
  memcpy(w->name, name, len);
  w->name_len = len;
  /* The lock's (and fair lock's force release), the read/write lock's, the
   * semaphores' and the latch's channel (docs/lock.md, rwlock.md,
   * semaphore.md, latch.md). */
  for (i = 0; i < W_FIXED && rc == 0; i++) {
    char *chan;
    switch (i) {
    case W_LOCK: chan = lk__prefix_name("redisson_lock__channel", name, len, &cl); break;
    case W_RWLOCK: chan = lk__prefix_name("redisson_rwlock", name, len, &cl); break;
    case W_SEM: chan = lk__prefix_name("redisson_sc", name, len, &cl); break;
    /* braces whatever NAME holds, as Redisson (docs/latch.md) */
    default:
      chan = lk__braced_name("redisson_countdownlatch__channel__", name, len, &cl);
      break;
    }
    rc = sub_open(w, &w->subs[i], chan, cl);
  }
  if (rc != 0) {
    for (i = 0; i < W_FIXED; i++)
      sub_close(&w->subs[i]);
    lk__free(w);
    return rc;
  }
  *out = w;
  return 0;
}

static int wanted(const lk_inspect_t *in, const char *owner) {
  size_t i, n = in->kind == LK_INSPECT_FAIR ? in->n_waiters : 0;
  if (n > LK_INSPECT_WATCH_FOLLOW)
    n = LK_INSPECT_WATCH_FOLLOW;
  for (i = 0; i < n; i++)
    if (strcmp(in->waiters[i].owner, owner) == 0)
      return 1;
  return 0;
}

int lk_inspect_watch_follow(lk_inspect_watch_t *w, const lk_inspect_t *in) {
  size_t i, n, cl, ol;
  int k, rc = 0;
  if (w == NULL || in == NULL)
    return LK_EINVAL;
  if ((rc = lk__check_client(w->c)) != 0)
    return rc;
  /* A fair lock's release wakes only the next waiter, on its own channel
   * (docs/fair.md): the first waiters' channels carry that change. */
  for (k = W_FIXED; k < W_FIXED + LK_INSPECT_WATCH_FOLLOW; k++)
    if (w->subs[k].owner != NULL && !wanted(in, w->subs[k].owner))
      sub_close(&w->subs[k]);
  n = in->kind == LK_INSPECT_FAIR ? in->n_waiters : 0;
  if (n > LK_INSPECT_WATCH_FOLLOW)
    n = LK_INSPECT_WATCH_FOLLOW;
  for (i = 0; i < n && rc == 0; i++) {
    const char *owner = in->waiters[i].owner;
    char *base, *chan;
    int free_slot = -1, have = 0;
    for (k = W_FIXED; k < W_FIXED + LK_INSPECT_WATCH_FOLLOW; k++) {
      if (w->subs[k].owner == NULL) {
        if (free_slot < 0)
          free_slot = k;
      } else if (strcmp(w->subs[k].owner, owner) == 0) {
        have = 1;
      }
    }
    if (have || free_slot < 0)
      continue;
    /* "redisson_lock__channel:{NAME}:OWNER" (docs/fair.md, "Contract"). */
    base = lk__prefix_name("redisson_lock__channel", w->name, w->name_len, &cl);
    ol = strlen(owner);
    chan = base != NULL ? lk__malloc(cl + 1 + ol + 1) : NULL;
    if (chan != NULL) {
      memcpy(chan, base, cl);
      chan[cl] = ':';
      memcpy(chan + cl + 1, owner, ol + 1);
    }
    lk__free(base);
    if ((w->subs[free_slot].owner = lk__memdup0(owner, ol)) == NULL) {
      lk__free(chan);
      return LK_ENOMEM;
    }
    if ((rc = sub_open(w, &w->subs[free_slot], chan, cl + 1 + ol)) != 0) {
      lk__free(w->subs[free_slot].owner);
      w->subs[free_slot].owner = NULL;
    }
  }
  return rc;
}

void lk_inspect_watch_stop(lk_inspect_watch_t *w) {
  int k;
  if (w == NULL)
    return;
  for (k = 0; k < W_FIXED + LK_INSPECT_WATCH_FOLLOW; k++)
    sub_close(&w->subs[k]);
  lk__free(w);
}
