/* Layer 3 (services): may call layers 0-2 (docs/design.md, "Layers"). */
/* Lease watchdog: batched renewal and lost-lease detection (watchdog.h). */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/metrics.h"
#include "core/router.h"
#include "core/slot.h"
#include "core/topology.h"
#include "core/watchdog.h"

const lk__wd_class_t lk__wd_lock_class = {"lock/renew", 1, NULL, 0};

struct lk__wd_batch_s {
  lk_client_t *client;
  const lk__wd_class_t *cls;
  /* On a cluster: a time taken before any script of its tick was sent, which
   * its holds' renewals count from (earlier than their send: conservative).
   * The tick's replies come back from several nodes in any order, and with
   * one time for all of them each goes to the ring's tail (ring_insert).
   * 0: the script's own send time, as standalone. */
  uint64_t stamp;
  int n;
  /* A TRYAGAIN ends it and splits its entries (on_batch_reply). */
  unsigned split_on_tryagain : 1;
  /* Its script while in flight (NULL before it is sent): a map that gives
   * its slot to another master moves it there if it has not left yet
   * (verify_slots). */
  lk__op_t *op;
  /* LK__WD_CHUNK slots standalone, where a chunk fills as the ring is
   * walked; exactly n on a cluster, where a chunk's size is known before it
   * is made (most hold a few entries: one slot's share of a tick). */
  lk__wd_entry_t *entries[];
};

static lk__wd_batch_t *batch_new(lk_client_t *c, const lk__wd_class_t *cls, int cap) {
  lk__wd_batch_t *b = lk__calloc(1, sizeof(*b) + (size_t)cap * sizeof(b->entries[0]));
  if (b != NULL) {
    b->client = c;
    b->cls = cls;
  }
  return b;
}

/* The slot of the entry's first key, computed once per registration: on a
 * cluster only, so standalone never pays for it. */
static unsigned entry_slot(lk__wd_entry_t *e) {
  if (!e->slot_known) {
    e->slot = lk__key_slot(e->keys[0], e->key_lens[0]);
    e->slot_known = 1;
  }
  return e->slot;
}

static uint64_t ms_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

uint64_t lk__wd_drift_ns(int64_t lease_ms) {
  return ms_ns(lease_ms) / 100 + ms_ns(2);
}

uint64_t lk__wd_lease_deadline(uint64_t sent_ns, int64_t lease_ms) {
  return sent_ns + ms_ns(lease_ms) - lk__wd_drift_ns(lease_ms);
}

static uint64_t lease_ns(const lk_client_t *c) { return ms_ns(c->o.default_lease_ms); }
static uint64_t period_ns(const lk_client_t *c) { return lease_ns(c) / 3; }
static uint64_t tick_ns(const lk_client_t *c) { return lease_ns(c) / 6; }

uint64_t lk__wd_deadline(const lk_client_t *c, const lk__wd_entry_t *e) {
  return lk__wd_lease_deadline(e->confirmed_ns, c->o.default_lease_ms);
}

/* The risk point: a renewal is sent at about confirmed + lease/3 (within
 * half a tick); with none confirmed by half the lease, it failed or goes
 * unanswered, and the hold is at risk while lease/2 - drift is left. */
static uint64_t risk_point(const lk_client_t *c, const lk__wd_entry_t *e) {
  return e->confirmed_ns + lease_ns(c) / 2;
}

/* --- health (docs/objects.md, "Health"): the object is told from the loop
 * (the owner's hold_at_risk is lk__obj_side_at_risk, which defers its
 * callbacks), so these may run while the ring is walked. --- */

static void entry_at_risk(lk_client_t *c, lk__wd_entry_t *e) {
  if (e->at_risk || e->lost || e->paused || e->obj == NULL || !lk__wd_watching(e))
    return;
  e->at_risk = 1;
  c->owner->hold_at_risk(e->obj, lk__wd_deadline(c, e));
}

/* confirmed: a renewal (or grant) confirmed the hold; else it stopped being
 * watched. */
static void entry_ok(lk_client_t *c, lk__wd_entry_t *e, int confirmed) {
  if (!e->at_risk)
    return;
  e->at_risk = 0;
  c->owner->hold_ok(e->obj, confirmed, lk__wd_deadline(c, e));
}

static lk__wd_entry_t *ring_head(lk_client_t *c) {
  if (lk__queue_empty(&c->wd_ring))
    return NULL;
  return lk__container_of(lk__queue_head(&c->wd_ring), lk__wd_entry_t, node);
}

static uint64_t confirmed_of(const lk__queue_t *q) {
  return lk__container_of(q, lk__wd_entry_t, node)->confirmed_ns;
}

/* Keeps the ring ordered by confirmation time: e goes after the last entry
 * confirmed no later than it. Confirmations arrive in send order on one
 * connection, so this is almost always an append. On a cluster one node may
 * answer a tick late, after later ticks' confirmations from the others: the
 * place is looked for from both ends at once, so that costs no more than the
 * entries on its nearer side (old confirmations belong near the head). */
static void link_after(lk__queue_t *q, lk__wd_entry_t *e) {
  e->node.prev = q;
  e->node.next = q->next;
  q->next->prev = &e->node;
  q->next = &e->node;
  e->in_ring = 1;
}

static void ring_insert(lk_client_t *c, lk__wd_entry_t *e) {
  lk__queue_t *back = c->wd_ring.prev, *front = c->wd_ring.next, *q;
  for (;;) {
    if (back == &c->wd_ring || confirmed_of(back) <= e->confirmed_ns) {
      q = back;
      break;
    }
    if (confirmed_of(front) > e->confirmed_ns) {
      q = front->prev; /* front is not the sentinel: back has not met it */
      break;
    }
    back = back->prev;
    front = front->next;
  }
  link_after(q, e);
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
  /* Later entries' risk points are taken by the ticks (lease/6 apart). */
  if (!head->at_risk && !head->paused && head->obj != NULL && risk_point(c, head) > now &&
      risk_point(c, head) < at)
    at = risk_point(c, head);
  uv_update_time(c->loop); /* the delay below is from the real now */
  uv_timer_start(&c->wd_timer, on_wd_timer,
                 at > now ? (at - now + 999999) / 1000000 : 0, 0);
}

/* --- lost detection --- */

/* reason: LK__LOST_* (core/metrics.h), counted before the handler runs
 * (it counts leases_lost itself, and may start anything). */
static void declare_lost(lk_client_t *c, lk__wd_entry_t *e, int reason) {
  ring_remove(e);
  entry_ok(c, e, 0); /* the loss ends its episode (lk__obj_tell_lost) */
  e->lost = 1;
  lk__metrics_lost(c, reason);
  e->on_event(e, LK__WD_LOST);
}

/* Why a renewal's 0 or -1 (watchdog.h) lost the entry: a key gone after a
 * restart or a master switch seen since its last confirmation is the
 * restart's doing. */
static int renewal_loss(const lk_client_t *c, const lk__wd_entry_t *e, const redisReply *r) {
  if (r->type == REDIS_REPLY_INTEGER && r->integer < 0)
    return LK__LOST_TAKEN;
  return c->restarted_ns != 0 && c->restarted_ns > e->confirmed_ns ? LK__LOST_RESTART
                                                                   : LK__LOST_GONE;
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
    declare_lost(c, head, LK__LOST_DEADLINE);
  c->wd_checking = 0;
}

/* --- renewal --- */

/* A cluster's due entries with their sort keys: the class's index in the
 * tick's table of classes, shifted past the 14 bits of the slot (0 where
 * slots do not matter). The array starts on the stack and moves to the heap
 * when more entries are due: at most one allocation per such tick in steady
 * state, none for a tick of DUE_STACK or fewer. */
typedef struct {
  uint32_t key;
  lk__wd_entry_t *e;
} due_t;

/* MAX_CLASSES: renewal classes one tick handles (the lock, the read/write
 * lock's two sides, the fair lock, expirable permits... with room to spare,
 * so no class is left for the next tick). */
enum { MAX_CLASSES = 8, SLOT_BITS = 14, DUE_STACK = 128 };

typedef struct {
  due_t *v; /* 2 * cap: the entries, then room for the sort */
  size_t n, cap;
  const lk__wd_class_t *cls[MAX_CLASSES];
  due_t local[2 * DUE_STACK];
} due_list_t;

_Static_assert(DUE_STACK >= LK__WD_CHUNK, "a reply's owed entries fit on the stack");

static void due_init(due_list_t *d) {
  memset(d->cls, 0, sizeof(d->cls));
  d->v = d->local;
  d->n = 0;
  d->cap = DUE_STACK;
}

static void due_free(due_list_t *d) {
  if (d->v != d->local)
    lk__free(d->v);
}

/* Room for one more; 0 when none could be had (the caller sends what it
 * has, which empties the array). */
static int due_room(due_list_t *d) {
  size_t cap;
  due_t *v;
  if (d->n < d->cap)
    return 1;
  cap = d->cap * 4;
  if (cap > SIZE_MAX / (2 * sizeof(*v)))
    return 0;
  v = lk__malloc(2 * cap * sizeof(*v));
  if (v == NULL)
    return 0;
  memcpy(v, d->v, d->n * sizeof(*v));
  due_free(d);
  d->v = v;
  d->cap = cap;
  return 1;
}

/* The entry's sort key; -1 when the tick's table of classes is full (the
 * entry waits for the next tick). */
static int64_t due_key(lk_client_t *c, due_list_t *d, lk__wd_entry_t *e) {
  int i;
  for (i = 0; i < MAX_CLASSES && d->cls[i] != NULL && d->cls[i] != e->cls; i++)
    ;
  if (i == MAX_CLASSES)
    return -1;
  d->cls[i] = e->cls;
  return ((int64_t)i << SLOT_BITS) | (c->cluster_on ? entry_slot(e) : 0);
}

/* By key: insertion for a few, else two radix passes of 9 bits, which cover
 * the 17 bits of a key, through the array's second half. */
static void due_sort(due_list_t *d) {
  enum { DIGIT = 9, NB = 1 << DIGIT, SHORT = 16 };
  uint32_t count[NB];
  due_t *src = d->v, *dst = d->v + d->cap, *t;
  size_t i, j, n = d->n;
  int pass;
  if (n <= SHORT) {
    for (i = 1; i < n; i++) {
      due_t x = src[i];
      for (j = i; j > 0 && src[j - 1].key > x.key; j--)
        src[j] = src[j - 1];
      src[j] = x;
    }
    return;
  }
  for (pass = 0; pass < 2; pass++) {
    unsigned shift = (unsigned)pass * DIGIT;
    uint32_t sum = 0, k;
    memset(count, 0, sizeof(count));
    for (i = 0; i < n; i++)
      count[(src[i].key >> shift) & (NB - 1)]++;
    for (k = 0; k < NB; k++) {
      uint32_t here = count[k];
      count[k] = sum;
      sum += here;
    }
    for (i = 0; i < n; i++)
      dst[count[(src[i].key >> shift) & (NB - 1)]++] = src[i];
    t = src;
    src = dst;
    dst = t;
  }
  /* an even number of passes: the result is back in the first half */
}

static void send_batch(lk_client_t *c, lk__wd_batch_t *b);

/* Sends the gathered entries as one script per run of equal keys, at most
 * LK__WD_CHUNK entries each, and empties the array. An entry whose chunk
 * could not be allocated stays due: a later tick takes it. */
static void due_send(lk_client_t *c, due_list_t *d) {
  uint64_t stamp = lk__now_ns(); /* before any of them is sent */
  size_t i = 0, j;
  due_sort(d);
  while (i < d->n) {
    lk__wd_batch_t *b;
    size_t m = 1;
    /* An entry of a slot split by a migration goes in a chunk of its own. */
    while (i + m < d->n && m < LK__WD_CHUNK && d->v[i + m].key == d->v[i].key &&
           !d->v[i].e->split && !d->v[i + m].e->split)
      m++;
    b = batch_new(c, d->v[i].e->cls, (int)m);
    if (b != NULL) {
      b->stamp = stamp;
      for (j = 0; j < m; j++) {
        lk__wd_entry_t *e = d->v[i + j].e;
        e->batch = b;
        e->batch_idx = b->n;
        b->entries[b->n++] = e;
      }
      send_batch(c, b);
    }
    i += m;
  }
  d->n = 0;
}

/* Adds a due entry not in flight. */
static void due_add(lk_client_t *c, due_list_t *d, lk__wd_entry_t *e) {
  int64_t key = due_key(c, d, e);
  if (key < 0)
    return;
  if (!due_room(d))
    due_send(c, d);
  d->v[d->n].key = (uint32_t)key;
  d->v[d->n].e = e;
  d->n++;
}

static void on_batch_reply(void *data, int status, redisReply *r) {
  lk__wd_batch_t *b = data;
  lk_client_t *c = b->client;
  uint64_t sent = b->stamp != 0 ? b->stamp : c->completing_sent_ns;
  /* The last entry this reply put back in the ring: the next one, confirmed
   * at the same time, goes right after it (the ring stays ordered), so a
   * batch costs one search, not one per entry. */
  lk__wd_entry_t *placed = NULL;
  int i, ok = status == 0 && r->type == REDIS_REPLY_ARRAY && (int)r->elements == b->n;
  /* Entries whose slot's master changed while this renewal was in flight:
   * this answer may be the old master's, so they are renewed once more. */
  due_list_t owed;
  size_t k, kept;
  /* A batch of a slot being migrated, or a hold whose class renews a split
   * hold by one key, met TRYAGAIN (op->tryagain_ends): its entries are
   * renewed now, each alone, and stay split until the slot's master
   * changes. */
  int split = status == LK_ECLUSTER && b->split_on_tryagain && r != NULL &&
              r->type == REDIS_REPLY_ERROR && r->len >= 8 && memcmp(r->str, "TRYAGAIN", 8) == 0;

  due_init(&owed);
  lk__wd_check(c);
  if (!ok && status != LK_ECANCELED)
    c->stats.renewal_failures++;
  /* Unconfirmed renewals are sent again; one that never gets through is a
   * loss, told through on_lost. An error reply (ACL, memory) needs a person. */
  if (status != 0 && status != LK_EUNKNOWN && status != LK_ECONN &&
      status != LK_ECANCELED && !split)
    lk__log(c, lk__trouble_level(status), "lease renewal failed: %s", lk_err_name(status));
  for (i = 0; i < b->n; i++) {
    lk__wd_entry_t *e = b->entries[i];
    int extended;
    if (e == NULL)
      continue; /* stopped watching meanwhile */
    e->batch = NULL;
    if (ok) {
      extended = r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 1;
      if (e->lost)
        continue; /* undone on the server by the loss's give-back (watchdog.h) */
      if (!extended) {
        declare_lost(c, e, renewal_loss(c, e, r->element[i]));
        continue;
      }
      ring_remove(e);
      e->confirmed_ns = sent;
      entry_ok(c, e, 1);
      /* (a lost handler above may have taken `placed` out: then search) */
      if (placed != NULL && placed->in_ring && placed->confirmed_ns == sent)
        link_after(&placed->node, e);
      else
        ring_insert(c, e);
      placed = e;
    } else if (status == LK_ECANCELED) {
      continue; /* closing */
    } else if (!split) {
      /* Failed or unanswered (a TRYAGAIN that splits it is renewed again
       * at once: no risk yet). */
      entry_at_risk(c, e);
    }
    /* No answer otherwise: the entry keeps its place and deadline and is
     * sent again by the next tick (never a second renewal in flight), or
     * now if it is owed a verification. Sending clears that, so an owed
     * entry is sent once more per lk__wd_verify_slots, never in a loop. */
    if (split)
      e->split = 1;
    if (e->verify_due || split) {
      owed.v[owed.n++].e = e; /* key set below */
    }
  }
  lk__free(b);
  /* A lost handler above may have stopped watching some of them (a user's
   * on_lost closing other objects): those are left out. None is freed yet:
   * an object's memory goes only when its close has finished, from the
   * loop. One class; on a cluster one slot, unless the batch left before the
   * client turned cluster mode on. */
  for (k = 0, kept = 0; k < owed.n; k++) {
    lk__wd_entry_t *e = owed.v[k].e;
    int64_t key;
    if (!(e->verify_due || split) || !e->in_ring || e->batch != NULL || e->paused || e->lost ||
        (key = due_key(c, &owed, e)) < 0)
      continue;
    owed.v[kept].key = (uint32_t)key;
    owed.v[kept++].e = e;
  }
  owed.n = kept;
  if (kept > 0)
    due_send(c, &owed);
  /* A reply only moves deadlines later or takes entries out (an entry added
   * or removed by a lost handler re-arms the timer itself), so a timer
   * already armed fires no later than needed: early at worst, and then it
   * re-arms. Re-arming after each of a tick's replies (16 000 on a cluster
   * at 100 000 holds) would cost a timer-heap update each. */
  if (!uv_is_active((uv_handle_t *)&c->wd_timer))
    rearm(c);
}

static void send_batch(lk_client_t *c, lk__wd_batch_t *b) {
  /* Keys (at most 2 per entry), the lease, an owner per entry, the publish
   * command. A class with more keys per entry must grow this. */
  enum { MAXV = LK__WD_CHUNK * 3 + 2 };
  const char *argv[MAXV];
  size_t lens[MAXV];
  char lease[24];
  const lk__wd_class_t *cls = b->cls;
  /* An entry split by a migration, of a class that can renew it by one key
   * (its split_script), is renewed so; one that is not split yet comes
   * back at a TRYAGAIN to be split, as a batch of several does. */
  int one = b->n == 1 && cls->split_script != NULL && b->entries[0]->split;
  const char *script = one ? cls->split_script : cls->script;
  int kpe = one ? 1 : cls->keys_per_entry, first = one ? cls->split_key : 0;
  int nkeys = b->n * kpe, k = 0, i, j, err = 0;
  lk__op_t *op;
  assert(kpe >= 1 && kpe <= 2 && b->n <= LK__WD_CHUNK);
  snprintf(lease, sizeof(lease), "%" PRId64, c->o.default_lease_ms);
  for (i = 0; i < b->n; i++)
    for (j = first; j < first + kpe; j++) {
      argv[k] = b->entries[i]->keys[j];
      lens[k++] = b->entries[i]->key_lens[j];
    }
  argv[k] = lease;
  lens[k++] = strlen(lease);
  for (i = 0; i < b->n; i++) {
    argv[k] = b->entries[i]->owner;
    lens[k++] = b->entries[i]->owner_len;
  }
  /* Last, the client's publish command: a script that reclaims expired
   * holds publishes them the way this client's waiters listen
   * (psem_renew.lua); the others ignore it. */
  argv[k] = lk__publish_cmd(c, &lens[k]);
  k++;
  /* Several holds of a slot being migrated (or the two keys of one) may sit
   * on both nodes: the script then meets TRYAGAIN until the migration ends,
   * possibly past their leases. It comes back at the first one, and its
   * holds are renewed one by one (on_batch_reply), by one key where the
   * class can. */
  b->split_on_tryagain =
      c->cluster_on && (b->n > 1 || (cls->split_script != NULL && !b->entries[0]->split));
  op = lk__script_call(c, lk__script_find(script), nkeys, k - nkeys, argv, lens, on_batch_reply,
                       b, &err);
  if (op != NULL) {
    b->op = op;
    op->tryagain_ends = b->split_on_tryagain;
    c->stats.renewals += (uint64_t)b->n;
    c->stats.renewal_commands++;
    for (i = 0; i < b->n; i++)
      b->entries[i]->verify_due = 0; /* this renewal settles a verification */
    return;
  }
  /* Not sent (in-flight cap, memory): the entries stay due. */
  for (i = 0; i < b->n; i++)
    b->entries[i]->batch = NULL;
  lk__free(b);
}

/* Renews every entry whose renewal is due (confirmed + lease/3) by horizon
 * and not already in flight: one open chunk per class, filled in ring
 * order. */
static void tick_standalone(lk_client_t *c, uint64_t horizon) {
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
      b = batch_new(c, e->cls, LK__WD_CHUNK);
      if (b == NULL)
        break;
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

/* The same entries on a cluster, in chunks of one class and one slot. The
 * walk goes on while entries are sent (sending leaves the ring as it is). */
static void tick_cluster(lk_client_t *c, uint64_t horizon) {
  due_list_t d;
  lk__queue_t *q;
  due_init(&d);
  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next) {
    lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    if (e->confirmed_ns + period_ns(c) > horizon)
      break; /* ordered: everything after is due later */
    if (e->batch == NULL && !e->paused)
      due_add(c, &d, e);
  }
  due_send(c, &d);
  due_free(&d);
}

static void tick(lk_client_t *c, uint64_t horizon) {
  if (c->cluster_on)
    tick_cluster(c, horizon);
  else
    tick_standalone(c, horizon);
}

/* Marks at risk the entries past their risk point (oldest first: the ring's
 * order), which no confirmation has moved on. */
static void mark_overdue(lk_client_t *c, uint64_t now) {
  lk__queue_t *q;
  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next) {
    lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    if (risk_point(c, e) > now)
      break;
    entry_at_risk(c, e);
  }
}

static void on_wd_timer(uv_timer_t *t) {
  lk_client_t *c = t->data;
  uint64_t now;
  lk__wd_check(c);
  now = lk__now_ns();
  mark_overdue(c, now);
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

static void verify_slots(lk_client_t *c, const uint8_t *changed, int in_flight_too) {
  due_list_t d;
  lk__queue_t *q;
  if (changed == NULL)
    return;
  due_init(&d);
  lk__client_cork(c);
  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next) {
    lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    if (!lk__topo_bit(changed, entry_slot(e)) || (!in_flight_too && e->batch != NULL))
      continue;
    e->split = 0; /* the migration (if any) ended: batched again */
    /* A renewal that has not left yet, waiting for a node the map no longer
     * names (a dead master's reconnect backoff, up to the reply timeout), is
     * sent to the new master now, and settles it. */
    if (e->batch != NULL && e->batch->op != NULL && lk__router_reroute_unsent(c, e->batch->op))
      continue;
    /* Owed until a renewal sent from now on settles it: one in flight was
     * sent to the old master, and is followed by another when it answers
     * (on_batch_reply). A paused entry's release settles it instead. */
    e->verify_due = 1;
    if (e->batch == NULL && !e->paused)
      due_add(c, &d, e);
  }
  due_send(c, &d);
  lk__client_uncork(c);
  due_free(&d);
  rearm(c);
}

void lk__wd_verify_slots(lk_client_t *c, const uint8_t *changed) { verify_slots(c, changed, 1); }

void lk__wd_verify_redirected(lk_client_t *c, const uint8_t *changed) {
  verify_slots(c, changed, 0);
}

void lk__wd_grant_confirms(lk_client_t *c, lk__wd_entry_t *e, uint64_t sent_ns) {
  if (!e->at_risk)
    return;
  e->at_risk = 0;
  c->owner->hold_ok(e->obj, 1, lk__wd_lease_deadline(sent_ns, c->o.default_lease_ms));
}

void lk__wd_mark_at_risk(lk_client_t *c, lk__wd_entry_t *e) { entry_at_risk(c, e); }

void lk__wd_conn_down(lk_client_t *c, const lk__conn_t *conn) {
  lk__queue_t *q;
  for (q = c->wd_ring.next; q != &c->wd_ring; q = q->next) {
    lk__wd_entry_t *e = lk__container_of(q, lk__wd_entry_t, node);
    if (!c->cluster_on || lk__router_cmd_conn(c, (int)entry_slot(e)) == conn)
      entry_at_risk(c, e);
  }
}

/* --- registration --- */

void lk__wd_add(lk_client_t *c, lk__wd_entry_t *e, uint64_t sent_ns) {
  int was_empty = lk__queue_empty(&c->wd_ring);
  entry_ok(c, e, 0); /* (an entry re-added unremoved) */
  e->confirmed_ns = sent_ns;
  e->lost = 0;
  e->paused = 0;
  e->batch = NULL;
  e->verify_due = 0;
  /* A split seen by an earlier hold (a migration that ended while nothing
   * was held, or one aborted) says nothing about this one: batched again
   * until a TRYAGAIN splits it. */
  e->split = 0;
  /* Its keys may be new: the slot is computed again, now on a cluster, or
   * at its first cluster tick if the client turns cluster mode on later. */
  e->slot_known = 0;
  if (c->cluster_on)
    entry_slot(e);
  ring_insert(c, e);
  if (was_empty)
    c->wd_next_tick_ns = lk__now_ns() + tick_ns(c);
  rearm(c);
}

void lk__wd_remove(lk_client_t *c, lk__wd_entry_t *e) {
  ring_remove(e);
  entry_ok(c, e, 0);
  if (e->batch != NULL) {
    e->batch->entries[e->batch_idx] = NULL;
    e->batch = NULL;
  }
  e->paused = 0;
  e->verify_due = 0;
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
