/* Critical-section histories and the overlap checker (see history.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "history.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char magic[8] = {'L', 'K', 'H', 'I', 'S', 'T', '0', '1'};

/* ---- writing ---- */

FILE *rt_history_create(const char *path) {
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    return NULL;
  if (fwrite(magic, sizeof magic, 1, f) != 1) {
    int e = errno;
    fclose(f);
    errno = e;
    return NULL;
  }
  return f;
}

int rt_history_append(FILE *f, uint32_t owner, uint64_t start_ns, uint64_t end_ns) {
  rt_interval_t rec;
  memset(&rec, 0, sizeof rec);
  rec.owner = owner;
  rec.start_ns = start_ns;
  rec.end_ns = end_ns;
  return fwrite(&rec, sizeof rec, 1, f) == 1 ? 0 : -1;
}

int rt_history_finish(FILE *f) {
  int rc = 0, e = 0;
  if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
    rc = -1;
    e = errno;
  }
  if (fclose(f) != 0 && rc == 0) {
    rc = -1;
    e = errno;
  }
  if (rc != 0)
    errno = e;
  return rc;
}

/* ---- loading ---- */

void rt_history_init(rt_history_t *h) { memset(h, 0, sizeof *h); }

void rt_history_free(rt_history_t *h) {
  free(h->v);
  memset(h, 0, sizeof *h);
}

static int reserve(rt_history_t *h, size_t more) {
  if (h->n + more <= h->cap)
    return 0;
  size_t cap = h->cap ? h->cap : 64;
  while (cap < h->n + more)
    cap *= 2;
  rt_interval_t *v = realloc(h->v, cap * sizeof *v);
  if (v == NULL)
    return -1;
  h->v = v;
  h->cap = cap;
  return 0;
}

int rt_history_add(rt_history_t *h, uint32_t owner, uint64_t start_ns, uint64_t end_ns) {
  if (reserve(h, 1) != 0)
    return -1;
  rt_interval_t *r = &h->v[h->n++];
  memset(r, 0, sizeof *r);
  r->owner = owner;
  r->start_ns = start_ns;
  r->end_ns = end_ns;
  return 0;
}

int rt_history_load(rt_history_t *h, const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "history: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char head[sizeof magic];
  if (fread(head, sizeof head, 1, f) != 1 || memcmp(head, magic, sizeof magic) != 0) {
    fprintf(stderr, "history: %s: missing or bad header\n", path);
    fclose(f);
    return -1;
  }
  rt_interval_t rec;
  size_t got;
  int rc = 0;
  while ((got = fread(&rec, 1, sizeof rec, f)) == sizeof rec) {
    if (rt_history_add(h, rec.owner, rec.start_ns, rec.end_ns) != 0) {
      fprintf(stderr, "history: %s: out of memory\n", path);
      rc = -1;
      break;
    }
  }
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "history: %s: read error\n", path);
    rc = -1;
  } else if (rc == 0 && got != 0) {
    fprintf(stderr, "history: %s: truncated record (%zu trailing bytes)\n", path, got);
    rc = -1;
  }
  fclose(f);
  return rc;
}

/* ---- checking ---- */

static int by_start(const void *pa, const void *pb) {
  const rt_interval_t *a = pa, *b = pb;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns)
    return a->end_ns < b->end_ns ? -1 : 1;
  if (a->owner != b->owner)
    return a->owner < b->owner ? -1 : 1;
  return 0;
}

static int by_owner_start(const void *pa, const void *pb) {
  const rt_interval_t *a = pa, *b = pb;
  if (a->owner != b->owner)
    return a->owner < b->owner ? -1 : 1;
  return by_start(pa, pb);
}

/* Sweep in start order keeping the interval that ends last (best) and the
 * one that ends last among the other owners (second): an interval overlaps
 * some earlier interval of another owner iff it starts before the end of
 * best (when best is another owner's) or of second (when best is its own). */
void rt_history_check(rt_history_t *h, rt_history_report_t *rep) {
  memset(rep, 0, sizeof *rep);
  rep->intervals = h->n;
  if (h->n == 0)
    return;
  for (size_t i = 0; i < h->n; i++)
    if (h->v[i].end_ns < h->v[i].start_ns)
      rep->malformed++;

  /* Same-owner overlaps, on a copy sorted by owner. */
  rt_interval_t *copy = malloc(h->n * sizeof *copy);
  if (copy != NULL) {
    memcpy(copy, h->v, h->n * sizeof *copy);
    qsort(copy, h->n, sizeof *copy, by_owner_start);
    uint64_t run_end = copy[0].end_ns; /* latest end so far in this owner's run */
    for (size_t i = 1; i < h->n; i++) {
      if (copy[i].owner != copy[i - 1].owner) {
        run_end = copy[i].end_ns;
        continue;
      }
      if (copy[i].start_ns < run_end)
        rep->self_overlaps++;
      if (copy[i].end_ns > run_end)
        run_end = copy[i].end_ns;
    }
    free(copy);
  } else {
    rep->self_overlaps = (size_t)-1; /* unknown */
  }

  qsort(h->v, h->n, sizeof *h->v, by_start);
  const rt_interval_t *best = NULL, *second = NULL;
  const rt_interval_t *prev = NULL;
  for (size_t i = 0; i < h->n; i++) {
    const rt_interval_t *cur = &h->v[i];
    const rt_interval_t *other = NULL; /* latest-ending earlier interval of another owner */
    if (best != NULL)
      other = best->owner != cur->owner ? best : second;
    if (other != NULL && cur->start_ns < other->end_ns) {
      if (rep->overlaps == 0) {
        rep->first_a = *other;
        rep->first_b = *cur;
      }
      rep->overlaps++;
    } else if (prev != NULL && prev->owner != cur->owner && cur->start_ns >= prev->end_ns) {
      uint64_t gap = cur->start_ns - prev->end_ns;
      if (rep->gaps == 0 || gap < rep->gap_min_ns)
        rep->gap_min_ns = gap;
      if (gap > rep->gap_max_ns)
        rep->gap_max_ns = gap;
      rep->gap_sum_ns += gap;
      rep->gaps++;
    }
    prev = cur;
    /* Insert cur into (best, second). */
    if (best == NULL) {
      best = cur;
    } else if (cur->owner == best->owner) {
      if (cur->end_ns > best->end_ns)
        best = cur;
    } else if (cur->end_ns > best->end_ns) {
      second = best;
      best = cur;
    } else if (second == NULL || cur->end_ns > second->end_ns) {
      second = cur;
    }
  }
}

void rt_history_print(FILE *out, const rt_history_report_t *rep) {
  fprintf(out,
          "history: %zu intervals, %zu overlaps between owners, %zu same-owner overlaps, "
          "%zu malformed\n",
          rep->intervals, rep->overlaps, rep->self_overlaps, rep->malformed);
  if (rep->gaps > 0)
    fprintf(out, "history: handoff gap min %.1f us, mean %.1f us, max %.1f us (%zu gaps)\n",
            (double)rep->gap_min_ns / 1e3, (double)rep->gap_sum_ns / (double)rep->gaps / 1e3,
            (double)rep->gap_max_ns / 1e3, rep->gaps);
  if (rep->overlaps > 0)
    fprintf(out,
            "history: first overlap: owner %" PRIu32 " [%" PRIu64 ", %" PRIu64 "] and owner %" PRIu32
            " [%" PRIu64 ", %" PRIu64 "] share %" PRIu64 " ns\n",
            rep->first_a.owner, rep->first_a.start_ns, rep->first_a.end_ns, rep->first_b.owner,
            rep->first_b.start_ns, rep->first_b.end_ns,
            (rep->first_a.end_ns < rep->first_b.end_ns ? rep->first_a.end_ns : rep->first_b.end_ns) -
                rep->first_b.start_ns);
}
