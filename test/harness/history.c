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

/* ---- both formats: an 8-byte header, then fixed-size records ---- */

static FILE *create_with(const char *path, const char head[8]) {
  FILE *f = fopen(path, "wb");
  if (f == NULL)
    return NULL;
  if (fwrite(head, 8, 1, f) != 1) {
    int e = errno;
    fclose(f);
    errno = e;
    return NULL;
  }
  return f;
}

/* path opened at its first record in *out: -1 when it cannot be opened or
 * its header is not want; 0 with *out NULL when allow_partial and the
 * header is missing (killed before it was flushed: no records). */
static int open_with(const char *path, const char want[8], int allow_partial, FILE **out) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "history: %s: %s\n", path, strerror(errno));
    return -1;
  }
  char head[8];
  if (fread(head, sizeof head, 1, f) != 1 || memcmp(head, want, sizeof head) != 0) {
    fclose(f);
    if (allow_partial)
      return 0;
    fprintf(stderr, "history: %s: missing or bad header\n", path);
    return -1;
  }
  *out = f;
  return 0;
}

/* Closes f after its records were read (rc: the reading's result so far;
 * got: the bytes of a last, incomplete record); a read error or, unless
 * allow_partial, a truncated record makes it -1. */
static int close_read(FILE *f, const char *path, int rc, size_t got, int allow_partial) {
  if (rc == 0 && ferror(f)) {
    fprintf(stderr, "history: %s: read error\n", path);
    rc = -1;
  } else if (rc == 0 && got != 0 && !allow_partial) {
    fprintf(stderr, "history: %s: truncated record (%zu trailing bytes)\n", path, got);
    rc = -1;
  }
  fclose(f);
  return rc;
}

/* ---- writing ---- */

FILE *rt_history_create(const char *path) { return create_with(path, magic); }

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
  FILE *f;
  if (open_with(path, magic, 0, &f) != 0)
    return -1;
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
  return close_read(f, path, rc, got, 0);
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

/* ==== event histories ("LKHIST02") ===================================================== */

static const char magic2[8] = {'L', 'K', 'H', 'I', 'S', 'T', '0', '2'};

FILE *rt_recs_create(const char *path) { return create_with(path, magic2); }

int rt_recs_append(FILE *f, const rt_rec_t *r) {
  return fwrite(r, sizeof *r, 1, f) == 1 ? 0 : -1;
}

int rt_recs_finish(FILE *f) { return rt_history_finish(f); }

void rt_recs_init(rt_recs_t *h) { memset(h, 0, sizeof *h); }

void rt_recs_free(rt_recs_t *h) {
  free(h->v);
  memset(h, 0, sizeof *h);
}

int rt_recs_add(rt_recs_t *h, const rt_rec_t *r) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 256;
    rt_rec_t *v = realloc(h->v, cap * sizeof *v);
    if (v == NULL)
      return -1;
    h->v = v;
    h->cap = cap;
  }
  h->v[h->n++] = *r;
  return 0;
}

int rt_recs_until_first_wipe(const rt_recs_t *h, rt_recs_t *out, uint64_t *first) {
  *first = 0;
  for (size_t i = 0; i < h->n; i++)
    if (h->v[i].op == RT_OP_WIPE && (*first == 0 || h->v[i].start_ns < *first))
      *first = h->v[i].start_ns;
  rt_recs_init(out);
  for (size_t i = 0; i < h->n; i++)
    if ((*first == 0 || h->v[i].op == RT_OP_WIPE || h->v[i].start_ns < *first) &&
        rt_recs_add(out, &h->v[i]) != 0)
      return -1;
  return 0;
}

int rt_recs_add5(rt_recs_t *h, uint32_t proc, uint16_t op, uint64_t start_ns, uint64_t end_ns,
                 int64_t token, int64_t extra) {
  rt_rec_t r;
  memset(&r, 0, sizeof r);
  r.proc = proc;
  r.op = op;
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.token = token;
  r.extra = extra;
  return rt_recs_add(h, &r);
}

int rt_recs_load(rt_recs_t *h, const char *path, int allow_partial) {
  FILE *f;
  if (open_with(path, magic2, allow_partial, &f) != 0)
    return -1;
  if (f == NULL)
    return 0; /* killed before the header was flushed: no records */
  rt_rec_t rec;
  size_t got;
  int rc = 0;
  while ((got = fread(&rec, 1, sizeof rec, f)) == sizeof rec) {
    if (rt_recs_add(h, &rec) != 0) {
      fprintf(stderr, "history: %s: out of memory\n", path);
      rc = -1;
      break;
    }
  }
  return close_read(f, path, rc, got, allow_partial);
}

/* ---- checkers ---- */

static void check_begin(rt_check_t *out, const char *name) {
  memset(out, 0, sizeof *out);
  out->name = name;
}

static void violation(rt_check_t *out, const rt_rec_t *a, const rt_rec_t *b) {
  if (out->violations++ == 0) {
    if (a != NULL)
      out->first_a = *a;
    if (b != NULL)
      out->first_b = *b;
  }
}

/* Pointers to the records of (obj, op) sorted by start. */
static const rt_rec_t **select_sorted(const rt_recs_t *h, uint16_t obj, uint16_t op, size_t *n);

static int rec_by_start(const void *pa, const void *pb) {
  const rt_rec_t *a = *(const rt_rec_t *const *)pa, *b = *(const rt_rec_t *const *)pb;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns)
    return a->end_ns < b->end_ns ? -1 : 1;
  return a->proc < b->proc ? -1 : a->proc > b->proc;
}

static const rt_rec_t **select_sorted(const rt_recs_t *h, uint16_t obj, uint16_t op, size_t *n) {
  const rt_rec_t **v = malloc((h->n ? h->n : 1) * sizeof *v);
  *n = 0;
  if (v == NULL)
    return NULL;
  for (size_t i = 0; i < h->n; i++)
    if (h->v[i].obj == obj && h->v[i].op == op)
      v[(*n)++] = &h->v[i];
  qsort(v, *n, sizeof *v, rec_by_start);
  return v;
}

/* The wipes of h (RT_OP_WIPE), for cutting sections (history.h). */
typedef struct wipes_s {
  const rt_recs_t *h; /* for the grant behind a section (grant_of) */
  const rt_rec_t **v;
  size_t n;
  size_t cut, skipped; /* sections ended early / skipped because of a wipe */
} wipes_t;

static void wipes_collect(const rt_recs_t *h, wipes_t *w) {
  memset(w, 0, sizeof *w);
  w->h = h;
  for (size_t i = 0; i < h->n; i++)
    if (h->v[i].op == RT_OP_WIPE)
      w->n++;
  if (w->n == 0)
    return;
  w->v = malloc(w->n * sizeof *w->v);
  w->n = 0;
  for (size_t i = 0; w->v != NULL && i < h->n; i++)
    if (h->v[i].op == RT_OP_WIPE)
      w->v[w->n++] = &h->v[i];
}

/* The RT_OP_GRANT behind section rec (same process and object, confirmed
 * when the section began), or NULL. */
static const rt_rec_t *grant_of(const wipes_t *w, const rt_rec_t *rec) {
  if (rec == NULL || w->h == NULL)
    return NULL;
  for (size_t i = 0; i < w->h->n; i++) {
    const rt_rec_t *g = &w->h->v[i];
    if (g->op == RT_OP_GRANT && g->proc == rec->proc && g->obj == rec->obj &&
        g->end_ns == rec->start_ns)
      return g;
  }
  return NULL;
}

/* 1 when grant g is provably one of the server that came back after wipe
 * wp, not of the one that went. Only a wipe marked token 1 proves anything:
 * the server came back empty and seeds its token counters from its clock
 * (microseconds) above every earlier token. Then g is the new server's if
 * its token is above the clock read after the old server was gone and
 * before the new one started (wp->extra, when known: tokens of the gone
 * server were seeded from that clock earlier and INCRed far fewer times
 * than microseconds passed; the new one seeds from it later), or
 * no lower than a token granted on its object to an acquire asked for
 * after the wipe ended (all of those the new server's). Tokens going
 * backwards across the wipe would make this wrong; rt_check_grant_tokens
 * fails on that. */
static int granted_after(const wipes_t *w, const rt_rec_t *wp, const rt_rec_t *g) {
  if (g == NULL || g->token <= 0 || wp->token != 1)
    return 0;
  if (wp->extra > 0 && g->token > wp->extra)
    return 1;
  int64_t lowest = 0;
  for (size_t i = 0; i < w->h->n; i++) {
    const rt_rec_t *o = &w->h->v[i];
    if (o->op == RT_OP_GRANT && o->obj == g->obj && o->token > 0 && o->start_ns >= wp->end_ns &&
        (lowest == 0 || o->token < lowest))
      lowest = o->token;
  }
  return lowest > 0 && g->token >= lowest;
}

/* The end of section [start, end] as the server knew it: the start of the
 * earliest wipe that was under way at some time in it. At or before start
 * (the section began during a wipe): skip it. Also skipped: a section
 * whose acquire (rec's grant, when known) was still unanswered while a
 * wipe ran, since its grant may have been made by the server that went
 * and delivered only after the one that came back granted another, unless
 * its token proves it the new server's (granted_after): then it is judged
 * as any. */
static uint64_t wipe_end(const wipes_t *w, const rt_rec_t *rec, uint64_t start, uint64_t end) {
  if (w->n == 0)
    return end;
  const rt_rec_t *g = grant_of(w, rec);
  uint64_t cut = end, asked = g != NULL ? g->start_ns : rec != NULL ? rec->start_ns : 0;
  for (size_t k = 0; k < w->n; k++) {
    if (w->v[k]->start_ns < cut && w->v[k]->end_ns > start)
      cut = w->v[k]->start_ns;
    else if (rec != NULL && w->v[k]->start_ns < start && w->v[k]->end_ns > asked &&
             !granted_after(w, w->v[k], g))
      cut = start;
  }
  return cut;
}

/* wipe_end, counting what it changed (for wipes_note). */
static uint64_t wipe_cut(wipes_t *w, const rt_rec_t *rec, uint64_t start, uint64_t end) {
  uint64_t cut = wipe_end(w, rec, start, end);
  if (cut <= start)
    w->skipped++;
  else if (cut < end)
    w->cut++;
  return cut;
}

static void wipes_note(const wipes_t *w, rt_check_t *out) {
  size_t len = strlen(out->detail);
  if (w->n > 0 && len < sizeof out->detail)
    snprintf(out->detail + len, sizeof out->detail - len,
             "; %zu wipes: %zu sections cut, %zu skipped", w->n, w->cut,
             w->skipped);
}

void rt_check_exclusive(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out) {
  check_begin(out, "exclusive");
  wipes_t w;
  wipes_collect(h, &w);
  rt_history_t iv;
  rt_history_init(&iv);
  for (size_t i = 0; i < h->n; i++) {
    const rt_rec_t *r = &h->v[i];
    if (r->obj != obj || r->op != op)
      continue;
    uint64_t end = wipe_cut(&w, r, r->start_ns, r->end_ns);
    if (end <= r->start_ns)
      continue;
    if (rt_history_add(&iv, r->proc, r->start_ns, end) != 0) {
      snprintf(out->detail, sizeof out->detail, "out of memory");
      out->violations = 1;
      rt_history_free(&iv);
      free(w.v);
      return;
    }
  }
  rt_history_report_t rep;
  rt_history_check(&iv, &rep);
  out->checked = rep.intervals;
  out->violations = rep.overlaps + rep.malformed;
  out->max_seen = rep.intervals > 0;
  if (rep.overlaps > 0) {
    out->first_a.proc = rep.first_a.owner;
    out->first_a.start_ns = rep.first_a.start_ns;
    out->first_a.end_ns = rep.first_a.end_ns;
    out->first_b.proc = rep.first_b.owner;
    out->first_b.start_ns = rep.first_b.start_ns;
    out->first_b.end_ns = rep.first_b.end_ns;
    out->first_a.op = out->first_b.op = op;
    out->first_a.obj = out->first_b.obj = obj;
  }
  snprintf(out->detail, sizeof out->detail,
           "%zu overlaps between processes, %zu within one, %zu malformed", rep.overlaps,
           rep.self_overlaps, rep.malformed);
  wipes_note(&w, out);
  rt_history_free(&iv);
  free(w.v);
}

typedef struct sweep_ev_s {
  uint64_t t;
  int end;      /* ends sort before starts at one instant */
  int64_t delta;
  const rt_rec_t *rec;
} sweep_ev_t;

static int ev_cmp(const void *pa, const void *pb) {
  const sweep_ev_t *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  if (a->end != b->end)
    return a->end ? -1 : 1;
  return 0;
}

/* Start and end events of the records of obj with op a or op b; with w,
 * sections end where a wipe cut them (wipe_cut). */
static sweep_ev_t *events(const rt_recs_t *h, uint16_t obj, uint16_t op_a, uint16_t op_b,
                          wipes_t *w, size_t *n) {
  sweep_ev_t *ev = malloc((2 * h->n + 1) * sizeof *ev);
  *n = 0;
  if (ev == NULL)
    return NULL;
  for (size_t i = 0; i < h->n; i++) {
    const rt_rec_t *r = &h->v[i];
    if (r->obj != obj || (r->op != op_a && r->op != op_b))
      continue;
    uint64_t end = w != NULL ? wipe_cut(w, r, r->start_ns, r->end_ns) : r->end_ns;
    if (w != NULL && end <= r->start_ns)
      continue;
    ev[(*n)++] = (sweep_ev_t){r->start_ns, 0, 1, r};
    ev[(*n)++] = (sweep_ev_t){end, 1, -1, r};
  }
  qsort(ev, *n, sizeof *ev, ev_cmp);
  return ev;
}

void rt_check_permits(const rt_recs_t *h, uint16_t obj, int64_t max_permits, rt_check_t *out) {
  check_begin(out, "permits");
  size_t n = 0;
  wipes_t w;
  wipes_collect(h, &w);
  sweep_ev_t *ev = events(h, obj, RT_OP_PERMITS, RT_OP_PERMITS, &w, &n);
  int64_t held = 0;
  for (size_t i = 0; ev != NULL && i < n; i++) {
    int64_t p = ev[i].rec->extra;
    if (ev[i].end) {
      held -= p;
      continue;
    }
    out->checked++;
    held += p;
    if (held > out->max_seen)
      out->max_seen = held;
    if (held > max_permits || p <= 0)
      violation(out, NULL, ev[i].rec);
  }
  snprintf(out->detail, sizeof out->detail, "at most %" PRId64 " of %" PRId64 " permits held",
           out->max_seen, max_permits);
  wipes_note(&w, out);
  free(w.v);
  free(ev);
}

void rt_check_rw(const rt_recs_t *h, uint16_t obj, rt_check_t *out) {
  check_begin(out, "read/write");
  size_t n = 0;
  wipes_t w;
  wipes_collect(h, &w);
  sweep_ev_t *ev = events(h, obj, RT_OP_READ, RT_OP_WRITE, &w, &n);
  int64_t readers = 0, writers = 0;
  const rt_rec_t *writer = NULL; /* the last writer that started */
  for (size_t i = 0; ev != NULL && i < n; i++) {
    const rt_rec_t *r = ev[i].rec;
    int is_write = r->op == RT_OP_WRITE;
    if (ev[i].end) {
      if (is_write)
        writers--;
      else
        readers--;
      continue;
    }
    out->checked++;
    if (is_write) {
      if (writers > 0 || readers > 0)
        violation(out, writers > 0 ? writer : NULL, r);
      writers++;
      writer = r;
    } else {
      if (writers > 0)
        violation(out, writer, r);
      readers++;
      if (readers > out->max_seen)
        out->max_seen = readers;
    }
  }
  snprintf(out->detail, sizeof out->detail, "at most %" PRId64 " readers at once",
           out->max_seen);
  wipes_note(&w, out);
  free(w.v);
  free(ev);
}

void rt_check_tokens(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out) {
  check_begin(out, "fencing tokens");
  wipes_t w;
  wipes_collect(h, &w);
  size_t n = 0, skipped = 0;
  const rt_rec_t **v = select_sorted(h, obj, op, &n);
  const rt_rec_t *best = NULL;
  for (size_t i = 0; v != NULL && i < n; i++) {
    if (v[i]->token <= 0)
      continue;
    /* A section the exclusion checkers skip for a wipe may hold a grant of
     * the server that went, answered after the one that came back granted
     * another: the two grants overlap in time, so the order their sections
     * began in says nothing of the order the tokens were issued in. Its
     * grant is still judged by rt_check_grant_tokens. */
    if (w.n > 0 && wipe_end(&w, v[i], v[i]->start_ns, v[i]->end_ns) <= v[i]->start_ns) {
      skipped++;
      continue;
    }
    out->checked++;
    if (best != NULL && v[i]->token <= best->token)
      violation(out, best, v[i]);
    if (best == NULL || v[i]->token > best->token)
      best = v[i];
  }
  out->max_seen = best != NULL ? best->token : 0;
  snprintf(out->detail, sizeof out->detail,
           "highest token %" PRId64 "; %zu sections skipped for %zu wipes", out->max_seen,
           skipped, w.n);
  free(v);
  free(w.v);
}

static int rec_by_end(const void *pa, const void *pb) {
  const rt_rec_t *a = *(const rt_rec_t *const *)pa, *b = *(const rt_rec_t *const *)pb;
  return a->end_ns < b->end_ns ? -1 : a->end_ns > b->end_ns;
}

static int rec_by_token(const void *pa, const void *pb) {
  const rt_rec_t *a = *(const rt_rec_t *const *)pa, *b = *(const rt_rec_t *const *)pb;
  return a->token < b->token ? -1 : a->token > b->token;
}

void rt_check_grant_tokens(const rt_recs_t *h, uint16_t obj, rt_check_t *out) {
  check_begin(out, "fencing tokens (every grant, every process)");
  size_t n = 0, twice = 0, backwards = 0;
  const rt_rec_t **by_start = select_sorted(h, obj, RT_OP_GRANT, &n);
  const rt_rec_t **other = malloc((n ? n : 1) * sizeof *other);
  if (by_start == NULL || other == NULL) {
    snprintf(out->detail, sizeof out->detail, "out of memory");
    out->violations = 1;
    free(by_start);
    free(other);
    return;
  }
  /* A grant whose call ran while a wipe marked token 0 was under way (a
   * replaced cluster master that woke up stale and granted beside its
   * successor: two masters INCR copies of one counter) may carry a token
   * the other master hands out again: docs/client.md, "Failover and holds",
   * admits that window. Not judged; a wipe of an empty restart (token 1:
   * counters seeded above every earlier token) excuses nothing. */
  wipes_t w;
  wipes_collect(h, &w);
  size_t m = 0, split = 0;
  for (size_t i = 0; i < n; i++) {
    const rt_rec_t *g = by_start[i];
    if (g->token <= 0)
      continue;
    int in_split = 0;
    for (size_t k = 0; k < w.n && !in_split; k++)
      in_split = w.v[k]->token == 0 && w.v[k]->start_ns < g->end_ns && w.v[k]->end_ns > g->start_ns;
    if (in_split) {
      split++;
      continue;
    }
    by_start[m++] = g;
  }
  free(w.v);
  n = m;
  out->checked = n;
  /* Real-time order: sweep the grants by invocation, keeping the largest
   * token among those confirmed before it. */
  memcpy(other, by_start, n * sizeof *other);
  qsort(other, n, sizeof *other, rec_by_end);
  const rt_rec_t *best = NULL;
  for (size_t i = 0, j = 0; i < n; i++) {
    const rt_rec_t *b = by_start[i];
    for (; j < n && other[j]->end_ns < b->start_ns; j++)
      if (best == NULL || other[j]->token > best->token)
        best = other[j];
    if (best != NULL && b->token <= best->token) {
      backwards++;
      violation(out, best, b);
    }
  }
  /* Handed out twice, whenever. */
  qsort(other, n, sizeof *other, rec_by_token);
  for (size_t i = 1; i < n; i++)
    if (other[i]->token == other[i - 1]->token) {
      twice++;
      violation(out, other[i - 1], other[i]);
    }
  out->max_seen = n > 0 ? other[n - 1]->token : 0;
  snprintf(out->detail, sizeof out->detail,
           "%zu handed out twice, %zu not above a token confirmed before the call; highest %" PRId64
           "; %zu made during a split brain, not judged",
           twice, backwards, out->max_seen, split);
  free(by_start);
  free(other);
}

void rt_check_fifo(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out) {
  check_begin(out, "fifo");
  size_t n = 0;
  const rt_rec_t **v = select_sorted(h, obj, op, &n);
  const rt_rec_t *best = NULL;
  for (size_t i = 0; v != NULL && i < n; i++) {
    out->checked++;
    if (best != NULL && v[i]->extra <= best->extra)
      violation(out, best, v[i]);
    if (best == NULL || v[i]->extra > best->extra)
      best = v[i];
  }
  snprintf(out->detail, sizeof out->detail, "%zu acquisitions in enqueue order", n);
  free(v);
}

static int u64_cmp(const void *pa, const void *pb) {
  uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
  return a < b ? -1 : a > b;
}

void rt_check_latch(const rt_recs_t *h, uint16_t obj, int64_t count, rt_check_t *out) {
  check_begin(out, "latch");
  size_t nc = 0;
  uint64_t *starts = malloc((h->n + 1) * sizeof *starts);
  for (size_t i = 0; starts != NULL && i < h->n; i++)
    if (h->v[i].obj == obj && h->v[i].op == RT_OP_COUNTDOWN)
      starts[nc++] = h->v[i].start_ns;
  if (starts != NULL)
    qsort(starts, nc, sizeof *starts, u64_cmp);
  int reached = count >= 1 && (int64_t)nc >= count;
  uint64_t zero_at = reached ? starts[count - 1] : 0;
  for (size_t i = 0; i < h->n; i++) {
    const rt_rec_t *r = &h->v[i];
    if (r->obj != obj || r->op != RT_OP_AWAIT)
      continue;
    out->checked++;
    if (r->extra == 1 && (!reached || r->end_ns < zero_at))
      violation(out, NULL, r);
  }
  out->max_seen = (int64_t)nc;
  snprintf(out->detail, sizeof out->detail, "%zu count-downs for a count of %" PRId64, nc,
           count);
  free(starts);
}

int rt_proc_paused(const rt_recs_t *h, uint32_t proc, uint64_t from, uint64_t to) {
  for (size_t k = 0; k < h->n; k++) {
    const rt_rec_t *s = &h->v[k];
    if ((s->op == RT_OP_STOPPED || s->op == RT_OP_STALLED) && s->proc == proc &&
        s->start_ns < to && s->end_ns > from)
      return 1;
  }
  return 0;
}

void rt_check_lost_first(const rt_recs_t *h, uint16_t obj, uint16_t op, rt_check_t *out) {
  check_begin(out, "lost first");
  size_t n = 0, after_section = 0, paused = 0;
  wipes_t w;
  wipes_collect(h, &w);
  const rt_rec_t **sec = select_sorted(h, obj, op, &n);
  for (size_t i = 0; sec != NULL && i < h->n; i++) {
    const rt_rec_t *lost = &h->v[i];
    if (lost->obj != obj || lost->op != RT_OP_LOST)
      continue;
    if (lost->extra < 0) {
      after_section++; /* no section was open: nothing to be late for */
      continue;
    }
    uint64_t began = (uint64_t)lost->extra, told = lost->start_ns;
    /* A wipe during the section ended it on the server when it began:
     * sections that start after that are not this notification's to precede.
     * A section the exclusion checkers skip (its acquire was unanswered
     * while a wipe ran, so its grant may be the gone server's) is skipped
     * here too, as a lost one and as another's. */
    rt_rec_t mine = *lost; /* the section it ended, as grant_of finds it: proc, obj, start */
    mine.start_ns = began;
    told = wipe_cut(&w, &mine, began, told);
    if (told <= began)
      continue;
    out->checked++;
    if (rt_proc_paused(h, lost->proc, began, told)) {
      paused++; /* a process that does not run cannot be told in time */
      continue;
    }
    for (size_t k = 0; k < n; k++) {
      const rt_rec_t *s = sec[k];
      if (s->start_ns >= told)
        break;
      if (s->proc != lost->proc && s->start_ns > began &&
          wipe_end(&w, s, s->start_ns, s->end_ns) > s->start_ns) {
        violation(out, lost, s);
        break;
      }
    }
  }
  snprintf(out->detail, sizeof out->detail,
           "%zu lost-lease notifications during a section (%zu of them while the process "
           "was stopped or stalled, not judged), %zu after it",
           out->checked, paused, after_section);
  wipes_note(&w, out);
  free(w.v);
  free(sec);
}

void rt_check_print(FILE *out, const rt_check_t *c) {
  fprintf(out, "check %s: %zu checked, %zu violations; %s\n", c->name, c->checked,
          c->violations, c->detail);
  if (c->violations > 0)
    fprintf(out,
            "check %s: first: [proc %" PRIu32 " op %u %" PRIu64 "..%" PRIu64 " token %" PRId64
            " extra %" PRId64 "] vs [proc %" PRIu32 " op %u %" PRIu64 "..%" PRIu64
            " token %" PRId64 " extra %" PRId64 "]\n",
            c->name, c->first_a.proc, c->first_a.op, c->first_a.start_ns, c->first_a.end_ns,
            c->first_a.token, c->first_a.extra, c->first_b.proc, c->first_b.op,
            c->first_b.start_ns, c->first_b.end_ns, c->first_b.token, c->first_b.extra);
}
