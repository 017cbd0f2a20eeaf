/* A small JSON writer for `latchkey ... --json`: objects, arrays, strings,
 * integers, booleans and null, with RFC 8259 escaping. Names and owner ids
 * are arbitrary bytes: control characters (C0, DEL and C1) are \u-escaped,
 * and bytes that are not valid UTF-8 are written as U+FFFD so the output
 * always parses. */
#include <inttypes.h>

#include "cli/cli.h"

void cli_json_init(cli_json_t *j, FILE *f) {
  j->f = f;
  j->depth = 0;
  j->first[0] = 1;
}

void cli_json_escape(FILE *f, const char *str) {
  const unsigned char *s = (const unsigned char *)str;
  fputc('"', f);
  while (*s != '\0') {
    uint32_t cp;
    int n;
    switch (*s) {
    case '"': fputs("\\\"", f); s++; continue;
    case '\\': fputs("\\\\", f); s++; continue;
    case '\n': fputs("\\n", f); s++; continue;
    case '\r': fputs("\\r", f); s++; continue;
    case '\t': fputs("\\t", f); s++; continue;
    case '\b': fputs("\\b", f); s++; continue;
    case '\f': fputs("\\f", f); s++; continue;
    default: break;
    }
    if (*s < 0x20 || *s == 0x7F) {
      fprintf(f, "\\u%04x", *s);
      s++;
      continue;
    }
    n = cli_utf8_len(s, &cp);
    if (n == 0) {
      fputs("\\ufffd", f);
      s++;
      continue;
    }
    if (cp >= 0x80 && cp <= 0x9F) {
      /* C1 controls: valid JSON raw, but a terminal showing the output
       * may obey them (U+009B is CSI) */
      fprintf(f, "\\u%04x", (unsigned)cp);
      s += n;
      continue;
    }
    fwrite(s, 1, (size_t)n, f);
    s += n;
  }
  fputc('"', f);
}

static void sep(cli_json_t *j, const char *key) {
  if (!j->first[j->depth])
    fputc(',', j->f);
  j->first[j->depth] = 0;
  if (key != NULL) {
    cli_json_escape(j->f, key);
    fputc(':', j->f);
  }
}

static void open_(cli_json_t *j, const char *key, char c) {
  sep(j, key);
  fputc(c, j->f);
  if (j->depth < 15)
    j->depth++;
  j->first[j->depth] = 1;
}

void cli_json_obj_begin(cli_json_t *j, const char *key) { open_(j, key, '{'); }
void cli_json_arr_begin(cli_json_t *j, const char *key) { open_(j, key, '['); }
void cli_json_obj_end(cli_json_t *j) {
  fputc('}', j->f);
  if (j->depth > 0)
    j->depth--;
}
void cli_json_arr_end(cli_json_t *j) {
  fputc(']', j->f);
  if (j->depth > 0)
    j->depth--;
}
void cli_json_str(cli_json_t *j, const char *key, const char *v) {
  sep(j, key);
  cli_json_escape(j->f, v);
}
void cli_json_int(cli_json_t *j, const char *key, int64_t v) {
  sep(j, key);
  fprintf(j->f, "%" PRId64, v);
}
void cli_json_bool(cli_json_t *j, const char *key, int v) {
  sep(j, key);
  fputs(v ? "true" : "false", j->f);
}
void cli_json_null(cli_json_t *j, const char *key) {
  sep(j, key);
  fputs("null", j->f);
}
void cli_json_int_or_null(cli_json_t *j, const char *key, int has, int64_t v) {
  if (has)
    cli_json_int(j, key, v);
  else
    cli_json_null(j, key);
}
void cli_json_str_or_null(cli_json_t *j, const char *key, const char *v) {
  if (v != NULL)
    cli_json_str(j, key, v);
  else
    cli_json_null(j, key);
}
