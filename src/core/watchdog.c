/* Lease watchdog: batched renewal and lost-lease detection (watchdog.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/watchdog.h"

const lk__wd_class_t lk__wd_lock_class = {"lock/renew", 1};

struct lk__wd_batch_s {
  lk_client_t *client;
  const lk__wd_class_t *cls;
  int n;
  lk__wd_entry_t *entries[LK__WD_CHUNK];
};

static uint64_t ms_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

uint64_t lk__wd_drift_ns(int64_t lease_ms) {
  return ms_ns(lease_ms) / 100 + ms_ns(2);
}

static uint64_t lease_ns(const lk_client_t *c) { return ms_ns(c->o.default_lease_ms); }
static uint64_t period_ns(const lk_client_t *c) { return lease_ns(c) / 3; }
static uint64_t tick_ns(const lk_client_t *c) { return lease_ns(c) / 6; }

uint64_t lk__wd_deadline(const lk_client_t *c, const lk__wd_entry_t *e) {
  return e->confirmed_ns + lease_ns(c) - lk__wd_drift_ns(c->o.default_lease_ms);
}

static lk__wd_entry_t *ring_head(lk_client_t *c) {
  if (lk__queue_empty(&c->wd_ring))
    return NULL;
  return lk__container_of(lk__queue_head(&c->wd_ring), lk__wd_entry_t, node);
}

/* Keeps the ring ordered by confirmation time. Confirmations arrive in send
 * order on one connection, so this is almost always an append. */
static void ring_insert(lk_client_t *c, lk__wd_entry_t *e) {
  lk__queue_t *q = c->wd_ring.prev;
  while (q != &c->wd_ring &&
         lk__container_of(q, lk__wd_entry_t, node)->confirmed_ns > e->confirmed_ns)
    q = q->prev;
  /* insert after q */
  e->node.prev = q;
  e->node.next = q->next;
  q->next->prev = &e->node;
  q->next = &e->node;
  e->in_ring = 1;
}

static void ring_remove(lk__wd_entry_t *e) {
  if (e->in_ring) {
    lk__queue_remove(&e->node);
    e->in_ring = 0;
  }
}

static void on_wd_timer(uv_timer_t *t);

/* Next wake-up: the next tick or the earliest deadline, whichever is first;
 * nothing while the ring is empty (no ticking while idle). */
static void rearm(lk_client_t *c) {
  lk__wd_entry_t *head = ring_head(c);
  uint64_t now, at;
  if (head == NULL || c->closing >= 2) {
    uv_timer_stop(&c->wd_timer);
    return;
  }
  now = lk__now_ns();
  at = c->wd_next_tick_ns;
  if (lk__wd_deadline(c, head) < at)
    at = lk__wd_deadline(c, head);
  uv_update_time(c->loop); /* the delay below is from the real now */
  uv_timer_start(&c->wd_timer, on_wd_timer,
                 at > now ? (at - now + 999999) / 1000000 : 0, 0);
}

/* --- lost detection --- */

static void declare_lost(lk__wd_entry_t *e) {
  ring_remove(e);
  e->lost = 1;
  e->on_event(e, LK__WD_LOST);
}

void lk__wd_check(lk_client_t *c) {
  lk__wd_entry_t *head;
  uint64_t now;
  if (c->wd_checking || lk__queue_empty(&c->wd_ring))
    return;
  c->wd_checking = 1;
  now = lk__now_ns();
  /* The head is re-read each time: a lost handler may add or remove
   * entries. */
  while ((head = ring_head(c)) != NULL && lk__wd_deadline(c, head) <= now)
    declare_lost(head);
  c->wd_checking = 0;
}

/* --- renewal --- */

static void on_batch_reply(void *data, int status, redisReply *r) {
  lk__wd_batch_t *b = data;
  lk_client_t *c = b->client;
  uint64_t sent = c->completing_sent_ns;
  int i, ok = status == 0 && r->type == REDIS_REPLY_ARRAY && (int)r->elements == b->n;

  lk__wd_check(c);
  if (status != 0 && status != LK_EUNKNOWN && status != LK_ECONN &&
      status != LK_ECANCELED)
    lk__log(c, LK_LOG_WARN, "lease renewal failed: %s", lk_err_name(status));
  for (i = 0; i < b->n; i++) {
    lk__wd_entry_t *e = b->entries[i];
    int extended;
    if (e == NULL)
      continue; /* stopped watching meanwhile */
    e->batch = NULL;
    if (!ok) {
      /* No answer: the entry keeps its place and deadline and is sent
       * again by the next tick (never a second renewal in flight). */
      continue;
    }
    extended = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 1;
    if (e->lost)
      continue; /* undone on the server by the loss's give-back (watchdog.h) */
    if (!extended) {
      declare_lost(e);
      continue;
    }
    ring_remove(e);
    e->confirmed_ns = sent;
    ring_insert(c, e);
  }
  lk__free(b);
  rearm(c);
}

static void send_batch(lk_client_t *c, lk__wd_batch_t *b) {
  enum { MAXV = LK__WD_CHUNK * 3 + 1 };
  const char *argv[MAXV];
  size_t lens[MAXV];
  char lease[24];
  int nkeys = b->n * b->cls->keys_per_entry, k = 0, i, j, err = 0;
  snprintf(lease, sizeof(lease), "%" PRId64, c->o.default_lease_ms);
  for (i = 0; i < b->n; i++)
    for (j = 0; j < b->cls->keys_per_entry; j++) {
      argv[k] = b->entries[i]->keys[j];
      lens[k++] = b->entries[i]->key_lens[j];
    }
  argv[k] = lease;
  lens[k++] = strlen(lease);
  for (i = 0; i < b->n; i++) {
    argv[k] = b->entries[i]->owner;
    lens[k++] = b->entries[i]->owner_len;
  }
  if (lk__script_call(c, lk__script_find(b->cls->script), nkeys, k - nkeys, argv,
                      lens, on_batch_reply, b, &err) != NULL) {
    c->stats.renewals += (uint64_t)b->n;
    c->stats.renewal_commands++;
    return;
  }
  /* Not sent (in-flight cap, memory): the entries stay due. */
  for (i = 0; i < b->n; i++)
    b->entries[i]->batch = NULL;
  lk__free(b);
}

/* Renews every entry whose renewal is due (confirmed + lease/3) by horizon
 * and not already in flight. */
static void tick(lk_client_t *c, uint64_t horizon) {
  /* One open chunk per class at a time: the lock, the read/write lock's two
   * sides, the fair lock, expirable permits... with room to spare, so no
   * class is left for the next tick. */
  enum { MAX_CLASSES = 8 };
  lk__wd_batch_t *open[MAX_CLASSES] = {0};
  const lk__wd_class_t *cls[MAX_CLASSES] = {0};
  lk__queue_t *q;
  int i;

  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next) {
    lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    lk__wd_batch_t *b;
    if (e->confirmed_ns + period_ns(c) > horizon)
      break; /* ordered: everything after is due later */
    if (e->batch != NULL || e->paused)
      continue;
    for (i = 0; i < MAX_CLASSES && cls[i] != NULL && cls[i] != e->cls; i++)
      ;
    if (i == MAX_CLASSES)
      continue; /* more classes than slots: next tick */
    cls[i] = e->cls;
    b = open[i];
    if (b == NULL) {
      b = lk__calloc(1, sizeof(*b));
      if (b == NULL)
        break;
      b->client = c;
      b->cls = e->cls;
      open[i] = b;
    }
    e->batch = b;
    e->batch_idx = b->n;
    b->entries[b->n++] = e;
    if (b->n == LK__WD_CHUNK) {
      send_batch(c, b);
      open[i] = NULL;
    }
  }
  for (i = 0; i < MAX_CLASSES; i++)
    if (open[i] != NULL)
      send_batch(c, open[i]);
}

static void on_wd_timer(uv_timer_t *t) {
  lk_client_t *c = t->data;
  uint64_t now;
  lk__wd_check(c);
  now = lk__now_ns();
  if (now >= c->wd_next_tick_ns) {
    /* Half a tick ahead: an entry confirmed just after this tick is taken
     * two ticks later, i.e. renewed once per period, and a stalled loop
     * catches up on everything overdue at once. */
    c->wd_next_tick_ns = now + tick_ns(c);
    lk__client_cork(c);
    tick(c, now + tick_ns(c) / 2);
    lk__client_uncork(c);
  }
  rearm(c);
}

void lk__wd_verify_all(lk_client_t *c) {
  /* Everything not in flight is renewed now: entries keep their deadlines,
   * only the renewal comes early. */
  tick(c, UINT64_MAX);
  rearm(c);
}

/* --- registration --- */

void lk__wd_add(lk_client_t *c, lk__wd_entry_t *e, uint64_t sent_ns) {
  int was_empty = lk__queue_empty(&c->wd_ring);
  e->confirmed_ns = sent_ns;
  e->lost = 0;
  e->paused = 0;
  e->batch = NULL;
  ring_insert(c, e);
  if (was_empty)
    c->wd_next_tick_ns = lk__now_ns() + tick_ns(c);
  rearm(c);
}

void lk__wd_remove(lk_client_t *c, lk__wd_entry_t *e) {
  ring_remove(e);
  if (e->batch != NULL) {
    e->batch->entries[e->batch_idx] = NULL;
    e->batch = NULL;
  }
  e->paused = 0;
  rearm(c);
}

void lk__wd_init(lk_client_t *c) {
  lk__queue_init(&c->wd_ring);
  uv_timer_init(c->loop, &c->wd_timer);
  c->wd_timer.data = c;
}

void lk__wd_close(lk_client_t *c) {
  uv_timer_stop(&c->wd_timer);
}
