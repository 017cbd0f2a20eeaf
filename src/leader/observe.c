/* Leader election: following the role's current leader (docs/leader.md,
 * "The contract", lk_leader_observe). An observer listens on the role's channel, where every
 * election publishes "E<term>:<value>" and every give-back "R<term>", and
 * polls the role's state (scripts/leader/state.lua) when its subscription
 * is confirmed, at least every max_repoll_ms, and when the leader's lease
 * runs out (an expiry publishes nothing). Messages and poll replies come
 * on different connections, so either may be older than what was already
 * seen: terms order them. A state is (term, leading): a larger term is
 * news, and so is the same term ending; anything else is stale. */
#include <stdlib.h>
#include <string.h>

#include "core/loglevel.h"
#include "leader/leader_internal.h"

#define CLIENT(l) LK__LEADER_CLIENT(l)

static const lk__script_t *state_script(void) { return lk__script_find("leader/state"); }

static void poll_state(lk_leader_t *l);

static void on_timer(void *owner) {
  lk_leader_t *l = owner;
  if (l->observing)
    poll_state(l);
}

static void arm(lk_leader_t *l, int64_t delay_ms) {
  lk__otimer_start(l->obs_timer, on_timer, (uint64_t)(delay_ms > 0 ? delay_ms : 0), 0);
}

/* Applies what was seen; 1 when it is a change the user is told of. */
static int apply(lk_leader_t *l, int64_t term, int present, const char *value, size_t len) {
  int news = !l->obs_reported || term > l->obs_term ||
             (term == l->obs_term && l->obs_present && !present);
  char *v = NULL;
  if (!news)
    return 0;
  if (present) {
    v = lk__malloc(len + 1);
    if (v == NULL)
      return 0; /* the next poll tells it again */
    memcpy(v, value, len);
    v[len] = '\0';
  }
  lk__free(l->obs_value);
  l->obs_value = v;
  l->obs_term = term;
  l->obs_present = present;
  l->obs_reported = 1;
  return 1;
}

static void tell(lk_leader_t *l) {
  /* A loss by the local deadline goes before any other callback. */
  lk__leader_check_deadline(l);
  if (l->observing && !l->base.closing)
    l->obs_cb(l, 0, l->obs_arg);
}

static int64_t read_int(const redisReply *r, int *ok) {
  if (r->type != REDIS_REPLY_INTEGER)
    *ok = 0;
  return r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

static void on_state(void *data, int status, redisReply *r) {
  lk_leader_t *l = data;
  int64_t delay = CLIENT(l)->o.max_repoll_ms;
  l->obs_op = NULL;
  if (!l->observing)
    return;
  if (status == 0 && r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
      r->element[3]->type == REDIS_REPLY_STRING) {
    int ok = 1;
    int64_t last = read_int(r->element[0], &ok), term = read_int(r->element[1], &ok),
            ttl = read_int(r->element[2], &ok);
    if (ok) {
      int changed = term > 0 ? apply(l, term, 1, r->element[3]->str, r->element[3]->len)
                             : apply(l, last, 0, NULL, 0);
      /* The lease's end publishes nothing: look again when it is due. */
      if (term > 0 && ttl >= 0 && ttl + 1 < delay)
        delay = ttl + 1;
      if (changed)
        tell(l);
      if (!l->observing)
        return;
    } else {
      lk__log(CLIENT(l), LK_LOG_INFO, "leader state: a reply of an unexpected shape");
    }
  } else if (status != 0) {
    lk__log(CLIENT(l), lk__trouble_level(status), "leader state not read: %s",
            lk_err_name(status));
  } else {
    lk__log(CLIENT(l), LK_LOG_INFO, "leader state: a reply of an unexpected shape");
  }
  if (l->obs_again) {
    poll_state(l);
    return;
  }
  arm(l, delay);
}

static void poll_state(lk_leader_t *l) {
  const char *argv[2] = {l->holder, l->counter};
  size_t lens[2] = {l->holder_len, l->counter_len};
  int err = 0;
  l->obs_again = 0;
  if (l->obs_op != NULL) {
    l->obs_again = 1; /* the one in flight may predate what woke us */
    return;
  }
  lk__otimer_stop(l->obs_timer);
  l->obs_op = lk__script_call(CLIENT(l), state_script(), 2, 0, argv, lens, on_state, l, &err);
  if (l->obs_op == NULL) {
    lk__log(CLIENT(l), lk__trouble_level(err), "leader state not sent: %s", lk_err_name(err));
    arm(l, CLIENT(l)->o.max_repoll_ms);
  }
}

/* "E<term>:<value>" or "R<term>". */
static void on_message(lk_leader_t *l, const char *msg, size_t len) {
  const char *p = msg + 1, *end = msg + len;
  int64_t term = 0;
  if (len < 2 || (msg[0] != 'E' && msg[0] != 'R'))
    return;
  while (p < end && *p >= '0' && *p <= '9' && term < INT64_MAX / 10)
    term = term * 10 + (*p++ - '0');
  if (term <= 0)
    return;
  if (msg[0] == 'E') {
    if (p >= end || *p != ':')
      return;
    p++;
    if (apply(l, term, 1, p, (size_t)(end - p)))
      tell(l);
    return;
  }
  if (p != end)
    return;
  if (apply(l, term, 0, NULL, 0))
    tell(l);
}

static void on_sub(lk__sub_t *s, int event, int status, const char *msg, size_t len) {
  lk_leader_t *l = lk__container_of(s, lk_leader_t, obs_sub);
  if (!l->observing)
    return;
  if (event == LK__SUB_MESSAGE) {
    on_message(l, msg, len);
    return;
  }
  /* Confirmed (again): messages may have been missed meanwhile. An error
   * leaves it to the re-poll timer. */
  if (status == 0)
    poll_state(l);
}

static void on_end(lk__defer_t *d) {
  lk_leader_t *l = lk__container_of(d, lk_leader_t, obs_end);
  lk_leader_cb cb = l->obs_cb;
  void *arg = l->obs_arg;
  l->obs_cb = NULL;
  l->obs_arg = NULL;
  if (cb != NULL)
    cb(l, LK_ECANCELED, arg);
}

int lk_leader_observe(lk_leader_t *l, lk_leader_cb change_cb, void *arg) {
  int rc = lk__obj_check(l ? &l->base : NULL);
  if (rc != 0)
    return rc;
  if (change_cb == NULL)
    return LK_EINVAL;
  if (l->observing || lk__queue_linked(&l->obs_end.node))
    return LK_EBUSY;
  if (lk__otimer_want(&l->obs_timer, CLIENT(l)->loop, l) != 0)
    return LK_ENOMEM;
  rc = lk__sub_start(CLIENT(l), &l->obs_sub, l->channel, l->channel_len, on_sub);
  if (rc != 0)
    return rc; /* LK_ENOMEM, LK_ECLOSED */
  l->obs_cb = change_cb;
  l->obs_arg = arg;
  l->observing = 1;
  l->obs_reported = 0;
  l->obs_again = 0;
  /* The first state is read at once (the subscription's confirmation asks
   * again: a change in between is not missed). */
  arm(l, 0);
  return 0;
}

static void stop(lk_leader_t *l) {
  l->observing = 0;
  lk__sub_stop(&l->obs_sub);
  lk__op_forget(&l->obs_op);
  lk__otimer_stop(l->obs_timer);
}

void lk__leader_obs_stop(lk_leader_t *l) {
  if (!l->observing)
    return;
  stop(l);
  lk__defer(CLIENT(l), &l->obs_end);
}

void lk__leader_obs_close(lk_leader_t *l) {
  lk__otimer_close(&l->obs_timer); /* it may outlive the object (core/otimer.h) */
  if (l->observing)
    stop(l);
  else if (!lk__queue_linked(&l->obs_end.node))
    return; /* not observing, and the last call was made */
  lk__defer_cancel(&l->obs_end);
  on_end(&l->obs_end);
}

int lk_leader_observe_stop(lk_leader_t *l) {
  int rc = lk__obj_check(l ? &l->base : NULL);
  if (rc != 0)
    return rc;
  if (!l->observing)
    return LK_EINVAL;
  lk__leader_obs_stop(l);
  return 0;
}

void lk__leader_obs_init(lk_leader_t *l) { lk__defer_init(&l->obs_end, on_end); }

void lk__leader_obs_free(lk_leader_t *l) {
  lk__defer_cancel(&l->obs_end);
  lk__otimer_free(&l->obs_timer); /* a forked child: never closed on this loop */
  lk__free(l->obs_value);
  l->obs_value = NULL;
}

int64_t lk_leader_observed_term(const lk_leader_t *l) { return l ? l->obs_term : 0; }

const char *lk_leader_observed_value(const lk_leader_t *l) {
  return l != NULL && l->obs_present ? l->obs_value : NULL;
}
