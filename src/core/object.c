/* Layer 4 (objects): may call layers 0-3 (docs/design.md, "Layers"). */
/* The shared body of every primitive object (object.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/object.h"
#include "core/outcome.h"
#include "core/router.h"
#include "core/spin.h"
#include "core/sync.h"
#include "core/watchdog.h"

static void close_continue(lk__obj_t *o);

/* --- pending operation --- */

int lk__obj_check(const lk__obj_t *o) {
  int rc;
  if (o == NULL)
    return LK_EINVAL;
  rc = lk__check_client(o->client);
  if (rc != 0)
    return rc;
  return o->closing ? LK_ECLOSED : 0;
}

int lk__obj_check_idle(const lk__obj_t *o, int has_cb) {
  int rc = lk__obj_check(o);
  if (rc != 0)
    return rc;
  if (!has_cb)
    return LK_EINVAL;
  return o->kind != 0 ? LK_EBUSY : 0;
}

void lk__obj_begin(lk__obj_t *o, int kind, lk__fn_t cb, void *arg) {
  o->kind = kind;
  o->cb = cb;
  o->arg = arg;
  o->result = 0;
  lk__free(o->errtext);
  o->errtext = NULL;
  o->woken = 0;
  o->waited = 0;
  o->woken_ns = 0;
  o->wake_held = 0;
  o->resends = 0;
  o->outcome_open = 0;
  o->attempt_deferred = 0;
  o->command_deferred = 0;
  o->budgeted = 0;
}

/* The wait (if any) is over: no more timer, and no more listening unless
 * the object keeps its channel. */
/* A wake-one this waiter took and will not use goes to the next waiter. */
static void drop_wake(lk__obj_t *o) {
  if (!o->wake_held)
    return;
  o->wake_held = 0;
  if (o->w != NULL)
    lk__sub_pass(&o->w->sub);
}

static void stop_waiting(lk__obj_t *o) {
  o->waiting = 0;
  if (o->w == NULL)
    return;
  o->w->deferred = 0;
  o->w->counted = 0; /* an attempt abandoned or canceled tells nothing */
  drop_wake(o);
  uv_timer_stop(&o->w->timer);
  if (!o->keep_sub)
    lk__sub_stop(&o->w->sub);
}

void lk__obj_unsubscribe(lk__obj_t *o) {
  drop_wake(o);
  if (o->w == NULL)
    return;
  if (o->keep_sub)
    lk__sub_stop_now(&o->w->sub); /* its own channel: no linger */
  else
    lk__sub_stop(&o->w->sub);
}

/* The client's acquire and release statistics, for every primitive: the
 * one place an operation's end is counted (docs/metrics.md). */
static void count_end(lk__obj_t *o, int kind, int status) {
  lk_client_stats_t *st = &o->client->stats;
  uint64_t now;
  if (kind == 0)
    return;
  if (kind == o->ops->acquire_kind && status == LK_ETIMEDOUT)
    st->acquire_timeouts++;
  if (status != 0)
    return;
  if (kind == o->ops->acquire_kind) {
    st->acquires++;
    now = lk__now_ns();
    if (o->waited) {
      st->acquire_waits++;
      lk__metrics_wait(o->client, o->begun_ns != 0 && now > o->begun_ns ? now - o->begun_ns : 0);
    }
    if (o->woken_ns != 0)
      st->handoff_ns_total += now - o->woken_ns;
  } else if (kind == o->ops->release_kind) {
    st->releases++;
    /* The hold ended normally: so does its at-risk episode, untold. */
    if (lk_handle_is_held(LK__CH(o)) != 1)
      lk__obj_health_end(o);
  }
}

/* A try made on a wake has its answer: the channel's heat learns whether
 * this process won the release or lost it to another (pubsub.h). */
static void report_try(lk__obj_t *o, int won) {
  if (o->w == NULL || !o->w->counted)
    return;
  if (o->kind != o->ops->acquire_kind) {
    o->w->counted = 0;
    return;
  }
  o->w->counted = 0;
  lk__sub_tried(&o->w->sub, won, lk__now_ns() - o->w->try_ns);
}

void lk__obj_finish(lk__obj_t *o, int status) {
  int kind = o->kind;
  if (status == 0)
    report_try(o, 1);
  if (o->sync != NULL && lk__sync_intercept(o, &status)) {
    /* An acquire's grant waits for its replicas (core/sync.h): nothing of
     * the wait may try again meanwhile. The step finishes it. */
    o->wake_held = 0; /* granted: its release wakes the next */
    stop_waiting(o);
    return;
  }
  status = lk__outcome_settle(o, status);
  count_end(o, kind, status);
  lk__fn_t cb = o->cb;
  if (status == 0)
    o->wake_held = 0; /* granted: its release wakes the next */
  stop_waiting(o);
  o->kind = 0;
  o->op = NULL;
  o->cb = NULL;
  if (o->ops->complete != NULL)
    o->ops->complete(o, kind, status);
  if (cb != NULL)
    o->ops->call(o, cb, status, o->arg);
}

int lk__obj_set_lost_cb(lk__obj_t *o, lk__fn_t fn, void *arg) {
  int rc = lk__obj_check(o);
  if (rc != 0)
    return rc;
  o->on_lost = fn;
  o->lost_arg = arg;
  o->lost_generic = 0; /* lk_handle_set_lost_cb sets it after this */
  return 0;
}

/* --- health (object.h) --- */

static int64_t ms_left_of(uint64_t deadline_ns) {
  uint64_t now = lk__now_ns();
  return deadline_ns > now ? (int64_t)((deadline_ns - now) / 1000000u) : 0;
}

static void call_health(lk__obj_t *o, int state, uint64_t deadline_ns) {
  if (o->on_health != NULL)
    ((lk_handle_health_cb)o->on_health)((lk_handle_t *)o, (lk_health_t)state,
                                        ms_left_of(deadline_ns), o->health_arg);
}

/* Tells what is untold, in the order it happened: an episode's AT_RISK,
 * then its SAFE (an episode that began and ended within one turn of the
 * loop is told whole). A callback that closed the object ends it. */
static void tell_health(lk__obj_t *o) {
  if (o->closing) {
    o->risk_untold = o->safe_untold = 0;
    return;
  }
  if (o->risk_untold) {
    o->risk_untold = 0;
    call_health(o, LK_HEALTH_AT_RISK, o->risk_deadline_ns);
    if (o->closing)
      o->safe_untold = 0;
  }
  if (o->safe_untold) {
    o->safe_untold = 0;
    call_health(o, LK_HEALTH_SAFE, o->safe_deadline_ns);
  }
}

static void on_health_step(lk__defer_t *d) { tell_health(lk__container_of(d, lk__obj_t, health_step)); }

static void member_changed(lk__obj_t *o, int state) {
  lk__obj_t *g = o->parent;
  if (g->ops->member_health != NULL)
    g->ops->member_health(g, o, state);
}

/* An episode begins: counted, and told from the loop. */
static void begin_episode(lk__obj_t *o, uint64_t deadline_ns) {
  o->at_risk = 1;
  if (o->parent != NULL) {
    member_changed(o, LK_HEALTH_AT_RISK); /* the group's to judge and tell */
    return;
  }
  o->risk_deadline_ns = deadline_ns;
  if (o->safe_untold) {
    /* The last episode's SAFE was not told yet: for the holder nothing
     * changed, the episode it was told of goes on (one AT_RISK until the
     * next SAFE). */
    o->safe_untold = 0;
    o->client->stats.holds_safe_again--;
    return;
  }
  o->client->stats.holds_at_risk++;
  o->risk_untold = 1;
  lk__defer(o->client, &o->health_step);
}

void lk__obj_side_at_risk(lk__obj_t *o, uint64_t deadline_ns) {
  if (o->risky_sides < UINT8_MAX)
    o->risky_sides++;
  if (o->at_risk || o->lost || o->closing)
    return;
  begin_episode(o, deadline_ns);
}

void lk__obj_side_ok(lk__obj_t *o, int confirmed, uint64_t deadline_ns) {
  if (o->risky_sides > 0)
    o->risky_sides--;
  /* A side that merely stopped being renewed (released, lost) confirms
   * nothing: the episode goes on until a confirmation, the hold's end or
   * the loss. */
  if (!confirmed || o->risky_sides > 0 || !o->at_risk || o->lost || o->closing)
    return;
  o->at_risk = 0;
  if (o->parent != NULL) {
    member_changed(o, LK_HEALTH_SAFE);
    return;
  }
  o->client->stats.holds_safe_again++;
  o->safe_deadline_ns = deadline_ns;
  o->safe_untold = 1;
  lk__defer(o->client, &o->health_step);
}

void lk__obj_health_end(lk__obj_t *o) {
  int was = o->at_risk;
  o->at_risk = 0;
  o->risky_sides = 0; /* the hold's sides ended with it */
  o->risk_untold = o->safe_untold = 0;
  lk__defer_cancel(&o->health_step);
  if (was && o->parent != NULL)
    member_changed(o, 0);
}

int lk__obj_set_health_cb(lk__obj_t *o, lk__fn_t fn, void *arg) {
  int rc = lk__obj_check(o);
  if (rc != 0)
    return rc;
  o->on_health = fn;
  o->health_arg = arg;
  return 0;
}

/* Before a loss is told: the holder hears AT_RISK first, now. */
static void risk_before_loss(lk__obj_t *o) {
  if (o->parent != NULL) {
    lk__obj_health_end(o); /* the group hears of the loss itself */
    return;
  }
  lk__defer_cancel(&o->health_step);
  if (!o->at_risk && !o->closing) {
    /* No warning came (a renewal found the key gone or taken, a grant
     * found earlier holds gone): the episode is told with no time left.
     * An untold SAFE of the last one goes first. */
    tell_health(o);
    o->client->stats.holds_at_risk++;
    o->risk_deadline_ns = 0;
    o->risk_untold = 1;
  }
  tell_health(o);
  o->at_risk = 0;
  o->risky_sides = 0;
  o->risk_untold = o->safe_untold = 0;
}

void lk__obj_tell_lost(lk__obj_t *o) {
  if (!o->closing)
    risk_before_loss(o);
  if (o->on_lost == NULL || o->closing)
    return;
  if (o->lost_generic)
    ((lk_handle_cb)o->on_lost)((lk_handle_t *)o, LK_ELEASELOST, o->lost_arg);
  else
    o->ops->call(o, o->on_lost, LK_ELEASELOST, o->lost_arg);
}

static void on_done_defer(lk__defer_t *d) {
  lk__obj_t *o = lk__container_of(d, lk__obj_t, done);
  /* Only a close that was already under way continues here. One started
   * inside the callback found nothing pending and queued its own step. */
  int was_closing = o->closing;
  lk__obj_finish(o, o->done_status);
  if (was_closing)
    close_continue(o);
}

void lk__obj_finish_later(lk__obj_t *o, int status) {
  o->done_status = status;
  lk__defer(o->client, &o->done);
}

#define LK__ERRTEXT_MAX 159

/* The text is allocated when an error comes (errors are rare; most objects
 * never keep one). Without memory the getter says "". */
static void keep_errtext(lk__obj_t *o, const char *text, size_t len) {
  if (len > LK__ERRTEXT_MAX)
    len = LK__ERRTEXT_MAX;
  lk__free(o->errtext);
  o->errtext = lk__malloc(len + 1);
  if (o->errtext == NULL)
    return;
  memcpy(o->errtext, text, len);
  o->errtext[len] = '\0';
}

void lk__obj_error(lk__obj_t *o, const redisReply *r) {
  if (r != NULL && r->type == REDIS_REPLY_ERROR) {
    keep_errtext(o, r->str, r->len);
    o->cluster_later = (unsigned)lk__router_try_later(o->client, r);
  }
}

void lk__obj_set_errtext(lk__obj_t *o, const char *text) {
  keep_errtext(o, text, strlen(text));
}

static void abandon(lk__obj_t *o) {
  if (o->sync != NULL)
    lk__sync_abandon(o); /* a grant waiting for its replicas goes back */
  if (o->op == NULL && !o->composite)
    return;
  if (o->ops->abandon != NULL)
    o->ops->abandon(o);
  else if (o->op != NULL)
    lk__outcome_abandon(o);
  o->op = NULL;
}

/* Stops everything the pending operation has going, and queues its
 * callback with status. */
static void cut_short(lk__obj_t *o, int status) {
  abandon(o);
  stop_waiting(o);
  lk__obj_finish_later(o, status);
}

int lk__obj_cancel(lk__obj_t *o, int kind) {
  int rc = lk__obj_check(o);
  if (rc != 0)
    return rc;
  if (o->kind != kind || lk__queue_linked(&o->done.node))
    return LK_EINVAL;
  cut_short(o, LK_ECANCELED);
  return 0;
}

/* --- close --- */

/* What the core allocated for the object; its timer is closed (or was
 * never seen by this process's loop, after fork). */
static void free_parts(lk__obj_t *o) {
  lk__outcome_free(o);
  lk__sync_free(o);
  lk__free(o->w);
  o->w = NULL;
  lk__free(o->errtext);
  o->errtext = NULL;
}

/* The object leaves its client's count and list (in a forked child too, so
 * the list never holds freed memory). */
static void forget(lk__obj_t *o) {
  lk__queue_remove(&o->client_node);
  lk__object_died(o->client);
}

/* The kind's memory: its own free, or the named body the core made. */
static void free_body(lk__obj_t *o) {
  if (o->ops->free != NULL)
    o->ops->free(o);
  else
    lk__obj_free(o);
}

static void closed_and_free(lk__obj_t *o) {
  forget(o);
  free_parts(o);
  /* The library is done with the object: the user may close the client
   * inside the close callback. */
  if (o->close_cb != NULL && o->close_generic)
    ((lk_handle_close_cb)o->close_cb)((lk_handle_t *)o);
  else if (o->close_cb != NULL)
    o->ops->call_closed(o, o->close_cb);
  free_body(o);
}

static void on_timer_closed(uv_handle_t *h) { closed_and_free(h->data); }

static void on_final_step(lk__defer_t *d) {
  closed_and_free(lk__container_of(d, lk__obj_t, close_step));
}

void lk__obj_close_done(lk__obj_t *o) {
  /* A grant that raced the close (an abandoned attempt's) or a give-back
   * still on its way: close_cb comes after its answer, so once it ran the
   * name is free unless a give-back failed. */
  if (!lk__client_forked(o->client) && lk__outcome_defer_close(o))
    return;
  if (o->w != NULL) {
    uv_close((uv_handle_t *)&o->w->timer, on_timer_closed);
    return;
  }
  /* No timer to close: the end still comes from the loop, after whatever
   * the caller does next with the object. close_step ran already. */
  lk__defer_init(&o->close_step, on_final_step);
  lk__defer(o->client, &o->close_step);
}

/* Runs from the loop after the canceled operation's callback, so the user
 * sees that callback, then the close callback. */
static void close_continue(lk__obj_t *o) {
  if (o->kind != 0)
    return; /* its deferred completion comes first, then calls back here */
  if (o->closing > 1)
    return; /* the release and the final steps run once */
  o->closing = 2;
  if (!lk__client_forked(o->client) && o->ops->close_release != NULL &&
      o->ops->close_release(o))
    return;
  lk__obj_close_done(o);
}

static void on_close_step(lk__defer_t *d) {
  close_continue(lk__container_of(d, lk__obj_t, close_step));
}

int lk__obj_close(lk__obj_t *o, lk__fn_t close_cb) {
  int rc;
  if (o == NULL)
    return LK_EINVAL;
  if (lk__client_forked(o->client)) {
    lk__defer_cancel(&o->health_step);
    forget(o);
    free_parts(o);
    free_body(o);
    return LK_EFORKED;
  }
  if (o->closing)
    return LK_ECLOSED;
  rc = lk__check_client(o->client);
  if (rc != 0)
    return rc;
  /* A MultiLock or RedLock still counts on it: the group closes it. */
  if (o->parent != NULL)
    return LK_EBUSY;
  o->closing = 1;
  /* Nothing of the hold's health is told after close (object.h). */
  lk__obj_health_end(o);
  o->close_cb = close_cb;
  o->close_generic = 0; /* lk_handle_close sets it after this */
  lk__obj_unsubscribe(o); /* a kept channel goes with the object */
  if (o->kind != 0 && !lk__queue_linked(&o->done.node)) {
    cut_short(o, LK_ECANCELED); /* on_done_defer continues the close */
    return 0;
  }
  if (o->kind != 0)
    return 0; /* a completion is already queued; it continues the close */
  lk__defer(o->client, &o->close_step);
  return 0;
}

/* --- the wait engine --- */

static uint64_t ms_to_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

int64_t lk__obj_remaining_ms(const lk__obj_t *o) {
  uint64_t now = lk__now_ns();
  if (o->wait_ms < 0)
    return INT64_MAX;
  /* Rounded up: 0 only once the deadline has really passed, so a wait never
   * ends early by the part of a millisecond that truncation would drop. */
  return now >= o->deadline_ns ? 0 : (int64_t)((o->deadline_ns - now + 999999u) / 1000000u);
}

int lk__obj_transient(int status) {
  return status == LK_ECONN || status == LK_ELOADING || status == LK_ESERVERBUSY;
}

int lk__obj_retryable(const lk__obj_t *o, int status) {
  return lk__obj_transient(status) || (status == LK_ECLUSTER && o->cluster_later);
}

void lk__obj_wait_begin(lk__obj_t *o, int64_t wait_ms) {
  o->waiting = 1;
  o->wait_ms = wait_ms;
  o->budgeted = wait_ms != 0;
  o->begun_ns = lk__now_ns();
  o->deadline_ns = o->begun_ns + ms_to_ns(wait_ms < 0 ? 0 : wait_ms);
}

static void on_timer(uv_timer_t *t);
static void on_sub_event(lk__sub_t *s, int event, int status, const char *msg,
                         size_t len);

int lk__obj_want_timer(lk__obj_t *o) {
  if (o->w != NULL)
    return 0;
  o->w = lk__calloc(1, sizeof(*o->w));
  if (o->w == NULL)
    return LK_ENOMEM;
  uv_timer_init(o->client->loop, &o->w->timer);
  o->w->timer.data = o;
  o->w->obj = o;
  return 0;
}

/* An attempt in flight when the budget ends may still answer within the
 * reply timeout (past it the connection itself gives up on the command), so
 * the wait lasts that long at most before abandoning it. */
static void arm_guard(lk__obj_t *o) {
  /* Forever has no budget; a single try (wait 0) is bounded by the reply
   * timeout itself, and a timer per try would cost every uncontended call. */
  if (o->wait_ms <= 0 || o->w == NULL)
    return;
  /* From the real now, not the loop's cached time (stale after the loop sat
   * idle or a callback ran long): else the guard fires at once. */
  uv_update_time(o->client->loop);
  uv_timer_start(&o->w->timer, on_timer,
                 (uint64_t)(lk__obj_remaining_ms(o) + o->client->o.reply_timeout_ms + 10),
                 0);
}

int lk__obj_try(lk__obj_t *o) {
  int rc;
  if (o->wait_ms != 0 && lk__obj_want_timer(o) != 0)
    return LK_ENOMEM;
  o->woken = 0;
  if (o->w != NULL) {
    o->w->counted = o->wake_held == 1 || o->w->deferred;
    o->w->deferred = 0;
    o->w->try_ns = lk__now_ns();
  }
  if (o->wake_held == 1)
    o->wake_held = 2;
  rc = o->ops->attempt(o);
  if (rc == 0)
    arm_guard(o);
  return rc;
}

int lk__obj_start(lk__obj_t *o) {
  int rc = lk__obj_try(o);
  if (rc != 0)
    o->kind = 0;
  return rc;
}

int lk__obj_counted_always(lk__obj_t *o) {
  (void)o;
  return 1;
}

static void retry_now(lk__obj_t *o) {
  int rc;
  if (o->w != NULL)
    uv_timer_stop(&o->w->timer);
  rc = lk__obj_try(o);
  if (rc != 0)
    lk__obj_finish(o, rc);
}

/* --- thinning ---
 * Across processes a release wakes one waiter in each, and all but one of
 * their tries lose: with many processes that is most of the server's work
 * for a busy name. So a process that sees its tries lose thins them, as a
 * shared medium's stations do (p-persistence): on a release its woken
 * waiter tries at once with probability 2/d, else it puts the try off to a
 * fallback about d round trips away (jittered x1..2), which the next
 * release replaces with a fresh draw. Tries then go out right after
 * releases, where they can win, about two per release whatever the number
 * of processes, and the fallback bounds how long a release nobody tried
 * for leaves the name free.
 * d grows with the channel's heat h, this process's woken tries lost minus
 * won (pubsub.h): d = 2^(h+1), capped by n, the other processes that heard
 * this process's own last release of the name (its script's PUBLISH count,
 * lk__sub_note_others), when known. With h = 0 (no try of this process
 * lost lately: one waiting process, or a name many processes listen on but
 * few contend for) every release is tried at once, as before. */
#define LK__THIN_RTT_DEFAULT_NS 200000u /* before any try was timed */

/* The thinning divisor d (see above); at most 2: no thinning. */
static unsigned thin_divisor(unsigned heat, unsigned others) {
  unsigned d;
  if (heat == 0)
    return 0;
  d = 2u << heat;
  if (others > 0 && others < d)
    d = others; /* 1 or 2 others: no thinning, two tries at most anyway */
  return d;
}

/* How many round trips the fallback lies away; 0 = try at once. */
static unsigned thin_span(lk__obj_t *o, unsigned heat, unsigned others) {
  unsigned d = thin_divisor(heat, others);
  if (d <= 2 || lk__jitter(o->client, d) < 2)
    return 0;
  return d;
}

/* Arms the deferred try span round trips (x1..2) away; the budget bounds
 * it as any re-poll. */
static void defer_try(lk__obj_t *o, unsigned span) {
  uint64_t rtt = lk__sub_try_rtt_ns(&o->w->sub), ns;
  int64_t left = lk__obj_remaining_ms(o), delay;
  if (rtt == 0)
    rtt = LK__THIN_RTT_DEFAULT_NS;
  ns = rtt * span;
  ns += lk__jitter(o->client, (uint32_t)(ns > UINT32_MAX ? UINT32_MAX : ns));
  delay = (int64_t)((ns + 999999u) / 1000000u); /* at least 1 ms: uv timers count ms */
  /* Never longer than a waiter's re-poll: an expiry or a holder that
   * publishes nothing must not leave it sleeping longer than without
   * thinning. */
  if (delay > o->client->o.max_repoll_ms)
    delay = o->client->o.max_repoll_ms;
  if (left < delay)
    delay = left;
  o->w->deferred = 1;
  uv_update_time(o->client->loop);
  uv_timer_start(&o->w->timer, on_timer, (uint64_t)delay, 0);
}

/* 1 when this woken waiter's try is put off (see above). */
static int put_off(lk__obj_t *o) {
  unsigned span;
  if (lk__obj_remaining_ms(o) == 0)
    return 0;
  span = thin_span(o, lk__sub_heat(&o->w->sub), lk__sub_others(&o->w->sub));
  if (span == 0)
    return 0;
  defer_try(o, span);
  return 1;
}

static void on_sub_event(lk__sub_t *s, int event, int status, const char *msg,
                         size_t len) {
  lk__obj_t *o = lk__container_of(s, lk__obj_wait_t, sub)->obj;
  if (o->kind == 0 || !o->waiting)
    return;
  if (event == LK__SUB_UNTAKEN) {
    /* This waiter skipped a wake for one while its try on an earlier wake
     * was out, and no other local waiter took it: that try may predate the
     * release, so its "busy" must not end in a re-poll sleep (a second of
     * stall with no other waiter in this process to cover it). */
    if (o->op != NULL)
      o->woken = 1;
    else
      retry_now(o);
    return;
  }
  if (event == LK__SUB_MESSAGE) {
    int how = o->ops->message != NULL ? o->ops->message(o, msg, len) : LK__WAKE_ALL;
    if (how == LK__WAKE_NONE)
      return;
    /* One waiter per message: the first in line that is not already
     * trying on an earlier wake. That one's try may predate this release:
     * the next in line covers it, or, when no one does, it tries again
     * itself (LK__SUB_UNTAKEN). */
    if (how == LK__WAKE_ONE && o->wake_held && !o->w->deferred) {
      lk__sub_skip(s);
      return;
    }
    if (how == LK__WAKE_ONE && o->w->deferred) {
      /* Its try is put off (thinning): this release is its to decide on
       * again, as its process's one waiter awake. */
      lk__sub_take(s);
    } else if (how == LK__WAKE_ONE && lk__sub_take(s) != 0) {
      return;
    }
    if (how == LK__WAKE_ONE)
      o->wake_held = 1;
  }
  if (event == LK__SUB_MESSAGE && o->woken_ns == 0)
    o->woken_ns = lk__now_ns();
  /* A poke with an error means "rely on polling"; the timer already bounds
   * the wait, so only a confirmation or a message is worth a try now. */
  if (event == LK__SUB_POKE && status != 0)
    return;
  if (o->op != NULL) {
    o->woken = 1; /* the attempt in flight may predate the release */
    return;
  }
  if (event == LK__SUB_MESSAGE && o->wake_held && put_off(o))
    return;
  retry_now(o);
}

static void sleep_then_retry(lk__obj_t *o, int64_t ttl_ms, int status) {
  int64_t delay = o->client->o.max_repoll_ms, left = lk__obj_remaining_ms(o);
  if (o->w == NULL) {
    /* Only a wait sleeps, and lk__obj_try made its part: not reached. */
    lk__obj_finish(o, status);
    return;
  }
  o->waited = 1;
  if (o->spin) {
    /* Spin mode: no subscription, no message to wake it; the back-off,
     * the holder's TTL and the budget bound the sleep. */
    delay = lk__spin_next(o);
  } else if ((o->channel != NULL || o->ops->channel != NULL) &&
             !lk__sub_active(&o->w->sub)) {
    /* Subscribe, then try once more when the subscription is confirmed:
     * a release published before we subscribed is not missed. A channel
     * already subscribed (other waiters, or lingering) before the try went
     * out, with no message since, needs no second try. */
    size_t len = o->channel_len;
    const char *ch = o->channel != NULL ? o->channel : o->ops->channel(o, &len);
    int rc = ch != NULL ? lk__sub_start_since(o->client, &o->w->sub, ch, len, on_sub_event,
                                              o->w->try_ns)
                        : LK_ENOMEM;
    if (rc != 0)
      lk__log(o->client, LK_LOG_INFO, "cannot subscribe (%s): polling",
              lk_err_name(rc));
  }
  if (o->woken) {
    retry_now(o);
    return;
  }
  if (ttl_ms >= 0 && ttl_ms < delay)
    delay = ttl_ms;
  if (left < delay)
    delay = left;
  uv_update_time(o->client->loop);
  uv_timer_start(&o->w->timer, on_timer, (uint64_t)(delay > 0 ? delay : 0), 0);
}

int lk__obj_try_after(lk__obj_t *o, int64_t delay_ms) {
  int64_t left = lk__obj_remaining_ms(o);
  if (lk__obj_want_timer(o) != 0)
    return LK_ENOMEM;
  if (left < delay_ms)
    delay_ms = left;
  uv_update_time(o->client->loop);
  uv_timer_start(&o->w->timer, on_timer, (uint64_t)(delay_ms > 0 ? delay_ms : 0), 0);
  return 0;
}

int lk__obj_wait_first(lk__obj_t *o, int just_released) {
  lk__sub_peek_t peek;
  size_t len = o->channel_len;
  const char *ch;
  int rc, queue;
  if (o->wait_ms == 0 || o->spin || (o->channel == NULL && o->ops->channel == NULL))
    return 1; /* a spinning wait never listens */
  ch = o->channel != NULL ? o->channel : o->ops->channel(o, &len);
  if (ch == NULL || !lk__sub_peek(o->client, ch, len, on_sub_event, &peek) || !peek.subscribed)
    return 1;
  /* Waiters of this process ahead of it: a try would lose to the holder or
   * barge past the one a release just woke. It queues behind them. */
  queue = peek.listeners;
  if (!queue && !(just_released && thin_divisor(peek.heat, peek.others) > 2))
    return 1;
  if (lk__obj_want_timer(o) != 0)
    return LK_ENOMEM;
  /* Listening since now: only a later release wakes it (the queue ahead
   * covers earlier ones). The scratch name may be rebuilt by the call: it
   * copies it first. */
  rc = lk__sub_start_since(o->client, &o->w->sub, ch, len, on_sub_event, lk__now_ns());
  if (rc != 0)
    return 1; /* cannot listen: an ordinary first try */
  o->waited = 1;
  o->w->try_ns = lk__now_ns();
  if (queue) {
    int64_t delay = o->client->o.max_repoll_ms, left = lk__obj_remaining_ms(o);
    if (left < delay)
      delay = left;
    uv_update_time(o->client->loop);
    uv_timer_start(&o->w->timer, on_timer, (uint64_t)delay, 0);
  } else {
    /* It released to the others a moment ago: it waits as one of them,
     * for the next release or its fallback, and lets them have this one. */
    defer_try(o, thin_divisor(peek.heat, peek.others));
  }
  return 0;
}

void lk__obj_busy(lk__obj_t *o, int64_t ttl_ms) {
  /* The try made on a wake lost to another process, whose release wakes
   * again: this waiter keeps its place and waits for that. */
  if (o->wake_held == 2)
    o->wake_held = 0;
  report_try(o, 0);
  if (o->wait_ms == 0 || lk__obj_remaining_ms(o) == 0) {
    lk__obj_finish(o, LK_ETIMEDOUT);
    return;
  }
  sleep_then_retry(o, ttl_ms, LK_ETIMEDOUT);
}

void lk__obj_retry_or_finish(lk__obj_t *o, int status) {
  /* The try failed on its way (not busy): the wait goes on, and this
   * waiter may take the next message again. */
  o->wake_held = 0;
  if (o->w != NULL)
    o->w->counted = 0; /* it neither won nor lost a release */
  if (lk__obj_remaining_ms(o) > 0 && o->wait_ms != 0) {
    sleep_then_retry(o, -1, status);
    return;
  }
  /* A wait whose budget ran out without acquiring ends with LK_ETIMEDOUT,
   * whatever kept it from the server (unreachable, loading, busy, a
   * cluster slot mid-migration or an election: LK_ECLUSTER comes here only
   * as TRYAGAIN or CLUSTERDOWN, core/outcome.c): the last such reason stays
   * readable through the error getter. A single try (wait 0) reports the
   * reason itself. */
  if (o->budgeted && lk__obj_retryable(o, status)) {
    if (o->errtext == NULL)
      lk__obj_set_errtext(o, lk_strerror(status));
    status = LK_ETIMEDOUT;
  }
  lk__obj_finish(o, status);
}

static void on_timer(uv_timer_t *t) {
  lk__obj_t *o = t->data;
  lk__wd_check(o->client);
  if (o->kind == 0 || lk__queue_linked(&o->done.node))
    return;
  if (o->op != NULL) {
    /* The budget and its grace are spent with an attempt unanswered. */
    abandon(o);
    lk__obj_finish(o, LK_ETIMEDOUT);
    return;
  }
  if (o->wait_ms > 0 && lk__obj_remaining_ms(o) == 0) {
    /* One last try at the deadline: the holder may have just left. */
    o->wait_ms = 0;
  }
  retry_now(o);
}

/* --- one-value commands --- */

int lk__obj_value_sent(lk__obj_t *o, lk__op_t *op, int flags, int err) {
  if (op == NULL) {
    o->kind = 0;
    o->waiting = 0;
    return err != 0 ? err : LK_ENOMEM;
  }
  o->op = op;
  o->value_flags = (uint8_t)flags;
  return 0;
}

static int read_default(int flags, const redisReply *r, int64_t *v) {
  long long n;
  char *end;
  if (lk__reply_is_int(r, &n)) {
    *v = n;
    return 1;
  }
  if (!(flags & LK__VALUE_TEXT))
    return 0;
  if (r->type == REDIS_REPLY_NIL) {
    *v = 0;
    return 1;
  }
  if (r->type != REDIS_REPLY_STRING || r->len == 0)
    return 0;
  n = strtoll(r->str, &end, 10);
  if (end != r->str + r->len)
    return 0;
  *v = n;
  return 1;
}

void lk__obj_value_reply(void *data, int status, redisReply *r) {
  lk__obj_t *o = data;
  int64_t v = 0;
  int ok = -1;
  o->op = NULL;
  if (status != 0) {
    lk__obj_error(o, r);
    lk__obj_finish(o, o->ops->map_error != NULL ? o->ops->map_error(status, r) : status);
    return;
  }
  if (o->ops->read_value != NULL)
    ok = o->ops->read_value(o, r, &v);
  if (ok < 0)
    ok = read_default(o->value_flags, r, &v);
  if (!ok) {
    lk__obj_finish(o, (o->value_flags & LK__VALUE_CHANGES) ? LK_EUNKNOWN : LK_EPROTOCOL);
    return;
  }
  o->result = v;
  if (o->ops->value_done != NULL)
    o->ops->value_done(o, o->kind);
  lk__obj_finish(o, 0);
}

/* --- init --- */

int lk__obj_new_check(const lk_client_t *c, const void *out, const char *name,
                      size_t *len) {
  int rc = lk__check_client_new(c);
  if (rc != 0)
    return rc;
  if (out == NULL)
    return LK_EINVAL;
  return lk__check_name(c, name, len);
}

/* A char * field of a named body, by offset. */
static char **body_string(lk__obj_t *o, size_t at) { return (char **)(void *)((char *)o + at); }

void *lk__obj_open(lk_client_t *c, const void *out, const char *name, const lk__obj_ops_t *ops,
                   int *rc) {
  lk__obj_t *o;
  size_t len;
  *rc = lk__obj_new_check(c, out, name, &len);
  if (*rc != 0)
    return NULL;
  o = lk__calloc(1, ops->body_size);
  if (o != NULL) {
    o->ops = ops;
    *body_string(o, ops->name_at) = lk__memdup0(name, len);
    *(size_t *)(void *)((char *)o + ops->name_len_at) = len;
    if (*body_string(o, ops->name_at) != NULL)
      return o;
    lk__free(o);
  }
  *rc = LK_ENOMEM;
  return NULL;
}

void lk__obj_free(lk__obj_t *o) {
  size_t i;
  lk__free(*body_string(o, o->ops->name_at));
  for (i = 0; i < LK__OBJ_STRINGS_MAX && o->ops->strings[i] != 0; i++)
    lk__free(*body_string(o, o->ops->strings[i]));
  lk__free(o);
}

void lk__obj_init(lk__obj_t *o, lk_client_t *c, const lk__obj_ops_t *ops, const char *name) {
  o->client = c;
  o->ops = ops;
  o->name = name;
  lk__defer_init(&o->done, on_done_defer);
  lk__defer_init(&o->close_step, on_close_step);
  lk__defer_init(&o->health_step, on_health_step);
  lk__queue_insert_tail(&c->obj_list, &o->client_node);
  lk__object_born(c);
}

void lk__obj_init_channel(lk__obj_t *o, lk_client_t *c, const lk__obj_ops_t *ops,
                          const char *name, const char *channel, size_t channel_len) {
  lk__obj_init(o, c, ops, name);
  o->channel = channel;
  o->channel_len = channel_len;
}
