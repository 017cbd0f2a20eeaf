/* Reading and checking a Prometheus text exposition (format 0.0.4) the way
 * a scraper would, for the metrics tests (docs/metrics.md). */
#ifndef LK_TEST_METRICS_CHECK_H
#define LK_TEST_METRICS_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latchkey.h"
#include "test.h"

/* The client's exposition, malloc'd (the caller frees). */
static inline char *mc_text(const lk_client_t *c, const char *labels) {
  int n = lk_client_write_metrics(c, NULL, 0, labels);
  char *buf;
  ASSERT_GT(n, 0);
  buf = malloc((size_t)n + 1);
  ASSERT_NOT_NULL(buf);
  ASSERT_EQ(lk_client_write_metrics(c, buf, (size_t)n + 1, labels), n);
  ASSERT_EQ(strlen(buf), n);
  return buf;
}

/* The value of the one sample whose name and labels are exactly series
 * ("name{a=\"b\"}" or "name"); fails when it is missing or repeated. */
static inline double mc_value(const char *text, const char *series) {
  size_t k = strlen(series);
  const char *p = text, *found = NULL;
  while (*p != '\0') {
    if (strncmp(p, series, k) == 0 && p[k] == ' ') {
      if (found != NULL)
        FAIL("sample %s appears twice", series);
      found = p + k + 1;
    }
    p = strchr(p, '\n');
    if (p == NULL)
      break;
    p++;
  }
  if (found == NULL)
    FAIL("no sample %s in:\n%s", series, text);
  return strtod(found, NULL);
}

static inline int mc_name_char(char ch, int first) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
         (!first && ch >= '0' && ch <= '9');
}

/* Reads a metric or label name at *p; returns its length (0: none). */
static inline size_t mc_name(const char **p) {
  const char *s = *p;
  if (!mc_name_char(*s, 1))
    return 0;
  while (mc_name_char(*s, 0))
    s++;
  size_t n = (size_t)(s - *p);
  *p = s;
  return n;
}

#define MC_MAX_FAMILIES 128

typedef struct {
  char name[96];
  char type[16];
  int helped, typed, samples;
} mc_family_t;

typedef struct {
  mc_family_t f[MC_MAX_FAMILIES];
  int n;
  /* The histogram being read: its last bucket per label set. */
  char hist_labels[512];
  double hist_last_le, hist_last_cum, hist_inf;
  int hist_buckets;
} mc_check_t;

static inline mc_family_t *mc_family(mc_check_t *m, const char *name, size_t len) {
  int i;
  for (i = 0; i < m->n; i++)
    if (strlen(m->f[i].name) == len && memcmp(m->f[i].name, name, len) == 0)
      return &m->f[i];
  ASSERT_LT(m->n, MC_MAX_FAMILIES);
  ASSERT_LT(len, sizeof(m->f[0].name));
  memcpy(m->f[m->n].name, name, len);
  m->f[m->n].name[len] = '\0';
  return &m->f[m->n++];
}

/* Checks the whole text: every line is HELP, TYPE or a sample; each
 * family's HELP and TYPE come once, before its samples, which are together;
 * counters end in _total; sample values are numbers; label values are
 * escaped; each histogram's buckets rise in le and in count, end with
 * le="+Inf", and +Inf equals its _count. Returns the number of samples. */
static inline int mc_check(const char *text) {
  mc_check_t *m = calloc(1, sizeof(*m));
  mc_family_t *cur = NULL;
  const char *p = text;
  int samples = 0;
  ASSERT_NOT_NULL(m);
  ASSERT(*text != '\0');
  ASSERT_EQ(text[strlen(text) - 1], '\n');
  while (*p != '\0') {
    const char *eol = strchr(p, '\n'), *name;
    size_t len;
    ASSERT_NOT_NULL(eol);
    if (strncmp(p, "# HELP ", 7) == 0 || strncmp(p, "# TYPE ", 7) == 0) {
      int help = p[2] == 'H';
      mc_family_t *f;
      p += 7;
      name = p;
      len = mc_name(&p);
      ASSERT_GT(len, 0);
      ASSERT_EQ(*p, ' ');
      f = mc_family(m, name, len);
      if (f->samples > 0)
        FAIL("HELP/TYPE of %s after its samples", f->name);
      if (help) {
        ASSERT_EQ(f->helped, 0);
        f->helped = 1;
      } else {
        ASSERT_EQ(f->typed, 0);
        f->typed = 1;
        len = (size_t)(eol - (p + 1));
        ASSERT_LT(len, sizeof(f->type));
        memcpy(f->type, p + 1, len);
        f->type[len] = '\0';
        if (strcmp(f->type, "counter") != 0 && strcmp(f->type, "gauge") != 0 &&
            strcmp(f->type, "histogram") != 0)
          FAIL("type %s of %s", f->type, f->name);
        if (strcmp(f->type, "counter") == 0 &&
            (strlen(f->name) < 6 || strcmp(f->name + strlen(f->name) - 6, "_total") != 0))
          FAIL("counter %s does not end in _total", f->name);
        if (cur != NULL && cur != f)
          cur->samples = -1; /* closed: a later sample of it is out of place */
        cur = f;
      }
    } else {
      const char *labels = NULL, *v;
      char *end;
      double val;
      size_t base;
      int is_bucket = 0, is_count = 0;
      double le = 0;
      name = p;
      len = mc_name(&p);
      ASSERT_GT(len, 0);
      ASSERT_NOT_NULL(cur);
      ASSERT(cur->samples >= 0);
      base = strlen(cur->name);
      if (len == base && memcmp(name, cur->name, len) == 0) {
      } else if (strcmp(cur->type, "histogram") == 0 && len > base &&
                 memcmp(name, cur->name, base) == 0 &&
                 (strncmp(name + base, "_bucket", len - base) == 0 ||
                  strncmp(name + base, "_sum", len - base) == 0 ||
                  strncmp(name + base, "_count", len - base) == 0)) {
        is_bucket = name[base + 1] == 'b';
        is_count = name[base + 1] == 'c';
      } else {
        FAIL("sample %.*s outside its family (%s)", (int)len, name, cur->name);
      }
      if (*p == '{') {
        labels = ++p;
        while (*p != '}') {
          const char *ln = p;
          size_t ll = mc_name(&p);
          ASSERT_GT(ll, 0);
          ASSERT_EQ(p[0], '=');
          ASSERT_EQ(p[1], '"');
          p += 2;
          if (ll == 2 && memcmp(ln, "le", 2) == 0)
            le = strncmp(p, "+Inf\"", 5) == 0 ? 1e300 : strtod(p, NULL);
          while (*p != '"') {
            ASSERT(*p != '\n' && *p != '\0');
            if (*p == '\\') {
              p++;
              ASSERT(*p == '\\' || *p == '"' || *p == 'n');
            }
            p++;
          }
          p++;
          if (*p == ',')
            p++;
          else
            ASSERT_EQ(*p, '}');
        }
        p++;
      }
      ASSERT_EQ(*p, ' ');
      v = p + 1;
      val = strtod(v, &end);
      ASSERT(end == eol && end > v);
      cur->samples++;
      samples++;
      if (is_bucket) {
        /* The labels but le: which histogram series this bucket is of. */
        char key[512];
        const char *lep = strstr(labels, "le=\"");
        ASSERT_NOT_NULL(lep);
        snprintf(key, sizeof(key), "%.*s", (int)(lep - labels), labels);
        if (m->hist_buckets == 0 || strcmp(key, m->hist_labels) != 0) {
          ASSERT(m->hist_buckets == 0); /* the previous series ended with +Inf */
          snprintf(m->hist_labels, sizeof(m->hist_labels), "%s", key);
          m->hist_last_le = -1;
          m->hist_last_cum = 0;
        }
        ASSERT(le > m->hist_last_le);
        ASSERT(val >= m->hist_last_cum);
        m->hist_last_le = le;
        m->hist_last_cum = val;
        m->hist_buckets++;
        if (le == 1e300) {
          m->hist_inf = val;
          m->hist_buckets = 0;
        }
      } else if (is_count) {
        ASSERT(m->hist_buckets == 0);
        if (val != m->hist_inf)
          FAIL("histogram %s: +Inf bucket %.0f, _count %.0f", cur->name, m->hist_inf, val);
      }
    }
    p = eol + 1;
  }
  for (int i = 0; i < m->n; i++)
    if (!m->f[i].helped || !m->f[i].typed)
      FAIL("family %s lacks HELP or TYPE", m->f[i].name);
  free(m);
  return samples;
}

#endif /* LK_TEST_METRICS_CHECK_H */
