/* The reader/writer history checker (see rw_history.h). */
#include "rw_history.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int by_start(const void *x, const void *y) {
  const rt_interval_t *a = x, *b = y;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns)
    return a->end_ns < b->end_ns ? -1 : 1;
  return a->owner < b->owner ? -1 : a->owner > b->owner;
}

void rt_rw_history_check(rt_history_t *h, rt_rw_report_t *rep) {
  /* A sweep in start order over an "open" set: intervals whose end lies
   * after the current start. The set is small (about one interval per
   * worker), so it is a plain array pruned at each step. */
  size_t *open = NULL, nopen = 0, i, j;
  memset(rep, 0, sizeof(*rep));
  rep->intervals = h->n;
  if (h->n == 0)
    return;
  qsort(h->v, h->n, sizeof(h->v[0]), by_start);
  open = malloc(h->n * sizeof(*open));
  if (open == NULL) {
    fprintf(stderr, "rw_history: out of memory\n");
    abort();
  }
  for (i = 0; i < h->n; i++) {
    const rt_interval_t *b = &h->v[i];
    int violated = 0, read_overlap = 0;
    size_t readers = 0, k = 0;
    uint32_t wb = RT_RW_WORKER(b->owner);
    if (b->end_ns < b->start_ns)
      rep->malformed++;
    if (RT_RW_IS_WRITE(b->owner))
      rep->writes++;
    else
      rep->reads++;
    for (j = 0; j < nopen; j++) {
      const rt_interval_t *a = &h->v[open[j]];
      if (a->end_ns <= b->start_ns)
        continue; /* closed: touching is not overlapping */
      open[k++] = open[j];
      if (RT_RW_WORKER(a->owner) == wb)
        continue;
      if (RT_RW_IS_WRITE(a->owner) || RT_RW_IS_WRITE(b->owner)) {
        if (!violated && rep->violations == 0) {
          rep->first_a = *a;
          rep->first_b = *b;
        }
        violated = 1;
      } else {
        read_overlap = 1;
      }
    }
    nopen = k;
    open[nopen++] = i;
    rep->violations += (size_t)violated;
    rep->read_overlaps += (size_t)read_overlap;
    /* Readers inside at b's start: distinct workers with an open read. */
    if (!RT_RW_IS_WRITE(b->owner)) {
      uint32_t seen[64];
      size_t nseen = 0, m;
      for (j = 0; j < nopen; j++) {
        const rt_interval_t *a = &h->v[open[j]];
        uint32_t w = RT_RW_WORKER(a->owner);
        if (RT_RW_IS_WRITE(a->owner))
          continue;
        for (m = 0; m < nseen && seen[m] != w; m++)
          ;
        if (m == nseen && nseen < 64)
          seen[nseen++] = w;
      }
      readers = nseen;
      if (readers > rep->max_readers)
        rep->max_readers = readers;
    }
  }
  free(open);
}

void rt_rw_history_print(FILE *out, const rt_rw_report_t *rep) {
  fprintf(out,
          "rw history: %zu intervals (%zu reads, %zu writes), %zu violations, %zu reads "
          "overlapping another reader, at most %zu readers at once, %zu malformed\n",
          rep->intervals, rep->reads, rep->writes, rep->violations, rep->read_overlaps,
          rep->max_readers, rep->malformed);
  if (rep->violations > 0)
    fprintf(out,
            "first violation: worker %" PRIu32 " (%s) [%" PRIu64 ", %" PRIu64
            "] still inside when worker %" PRIu32 " (%s) entered at %" PRIu64 "\n",
            RT_RW_WORKER(rep->first_a.owner),
            RT_RW_IS_WRITE(rep->first_a.owner) ? "write" : "read", rep->first_a.start_ns,
            rep->first_a.end_ns, RT_RW_WORKER(rep->first_b.owner),
            RT_RW_IS_WRITE(rep->first_b.owner) ? "write" : "read", rep->first_b.start_ns);
}
