/* Permit histories and the sweep-line checker (see permit_history.h). */
#include "permit_history.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int rt_permit_history_append(FILE *f, uint32_t owner, uint32_t permits, uint64_t start_ns,
                             uint64_t end_ns) {
  rt_interval_t rec;
  memset(&rec, 0, sizeof rec);
  rec.owner = owner;
  rec.reserved = permits;
  rec.start_ns = start_ns;
  rec.end_ns = end_ns;
  return fwrite(&rec, sizeof rec, 1, f) == 1 ? 0 : -1;
}

int rt_permit_history_add(rt_history_t *h, uint32_t owner, uint32_t permits,
                          uint64_t start_ns, uint64_t end_ns) {
  if (rt_history_add(h, owner, start_ns, end_ns) != 0)
    return -1;
  h->v[h->n - 1].reserved = permits;
  return 0;
}

typedef struct event_s {
  uint64_t t;
  int64_t delta; /* + permits at a start, - permits at an end */
  int start;
} event_t;

/* By time; at the same instant ends before starts (touching is fine). */
static int cmp_event(const void *x, const void *y) {
  const event_t *a = x, *b = y;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->start - b->start;
}

int rt_permit_sweep(const rt_history_t *h, uint64_t limit, rt_permit_report_t *rep) {
  event_t *ev;
  size_t i, n = 0;
  int64_t held = 0, holders = 0;
  uint64_t last_t = 0, first = UINT64_MAX, last = 0;
  memset(rep, 0, sizeof *rep);
  rep->intervals = h->n;
  ev = malloc((h->n * 2 + 1) * sizeof *ev);
  if (ev == NULL)
    return -1;
  for (i = 0; i < h->n; i++) {
    const rt_interval_t *iv = &h->v[i];
    int64_t w = iv->reserved ? (int64_t)iv->reserved : 1;
    if (iv->end_ns < iv->start_ns) {
      rep->malformed++;
      continue;
    }
    ev[n++] = (event_t){iv->start_ns, w, 1};
    ev[n++] = (event_t){iv->end_ns, -w, 0};
    if (iv->start_ns < first)
      first = iv->start_ns;
    if (iv->end_ns > last)
      last = iv->end_ns;
  }
  qsort(ev, n, sizeof *ev, cmp_event);
  for (i = 0; i < n; i++) {
    /* Time since the last event was spent at the level `held`. */
    if (i > 0) {
      if (held > 0)
        rep->busy_ns += ev[i].t - last_t;
      if ((uint64_t)held > limit)
        rep->over_ns += ev[i].t - last_t;
    }
    held += ev[i].delta;
    holders += ev[i].start ? 1 : -1;
    last_t = ev[i].t;
    if (held > 0 && (uint64_t)held > rep->max_permits)
      rep->max_permits = (uint64_t)held;
    if (holders > 0 && (uint64_t)holders > rep->max_holders)
      rep->max_holders = (uint64_t)holders;
    if (ev[i].start && (uint64_t)held > limit) {
      rep->over_events++;
      if (rep->first_over_ns == 0)
        rep->first_over_ns = ev[i].t;
    }
  }
  rep->span_ns = n > 0 ? last - first : 0;
  free(ev);
  return 0;
}

void rt_permit_print(FILE *out, uint64_t limit, const rt_permit_report_t *rep) {
  fprintf(out,
          "permit history: %zu holds, at most %" PRIu64 " permits (limit %" PRIu64
          ") and %" PRIu64 " holders at once; %zu starts above the limit (%.3f ms "
          "above it in all); permits held %.1f%% of %.1f ms; %zu malformed\n",
          rep->intervals, rep->max_permits, limit, rep->max_holders, rep->over_events,
          (double)rep->over_ns / 1e6,
          rep->span_ns ? 100.0 * (double)rep->busy_ns / (double)rep->span_ns : 0.0,
          (double)rep->span_ns / 1e6, rep->malformed);
}
