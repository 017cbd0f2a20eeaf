/* Text from the server (key names, owner ids, owner notes, hosts, server
 * error text) and from the command line is shown to a person on a
 * terminal. Any of it may hold bytes a terminal obeys: ESC starts a
 * control sequence that can clear the screen or rewrite what was shown, CR
 * and LF can forge whole lines. Every human-readable output of the tool
 * goes through cli_escape, which writes such bytes as visible escapes
 * (docs/cli.md, "Escaping"), so what is shown is unambiguous. --json
 * output has its own escaping (json.c). */
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Length of a valid UTF-8 sequence at s (1..4) and its code point, or 0. */
int cli_utf8_len(const unsigned char *s, uint32_t *out_cp) {
  int n, i;
  uint32_t cp;
  if (s[0] < 0x80) {
    *out_cp = s[0];
    return 1;
  }
  if ((s[0] & 0xE0) == 0xC0)
    n = 2, cp = s[0] & 0x1F;
  else if ((s[0] & 0xF0) == 0xE0)
    n = 3, cp = s[0] & 0x0F;
  else if ((s[0] & 0xF8) == 0xF0)
    n = 4, cp = s[0] & 0x07;
  else
    return 0;
  for (i = 1; i < n; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (s[i] & 0x3F);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  *out_cp = cp;
  return n;
}

/* Code points shown as \uXXXX although valid: the C1 controls (a terminal
 * may take U+009B as CSI), and the line separators and bidirectional
 * overrides that reorder or break what surrounds them. */
static int hidden_code_point(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

/* Writes s escaped into out (at least 6 * strlen(s) + 1 bytes: the
 * longest escape, \u202e, is 6 characters for 3 bytes, \xHH 4 for 1);
 * returns the length written. */
static size_t escape_into(char *out, const char *str) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t k = 0;
  while (*s != '\0') {
    uint32_t cp = 0;
    int n;
    switch (*s) {
    case '\\': out[k++] = '\\', out[k++] = '\\', s++; continue;
    case '\n': out[k++] = '\\', out[k++] = 'n', s++; continue;
    case '\r': out[k++] = '\\', out[k++] = 'r', s++; continue;
    case '\t': out[k++] = '\\', out[k++] = 't', s++; continue;
    default: break;
    }
    n = cli_utf8_len(s, &cp);
    if (n == 0 || cp < 0x20 || cp == 0x7F) {
      /* a control byte, or a byte that starts no valid UTF-8 sequence */
      out[k++] = '\\', out[k++] = 'x', out[k++] = hex[*s >> 4], out[k++] = hex[*s & 15];
      s++;
      continue;
    }
    if (hidden_code_point(cp)) {
      out[k++] = '\\', out[k++] = 'u';
      out[k++] = hex[(cp >> 12) & 15], out[k++] = hex[(cp >> 8) & 15];
      out[k++] = hex[(cp >> 4) & 15], out[k++] = hex[cp & 15];
      s += n;
      continue;
    }
    memcpy(out + k, s, (size_t)n);
    k += (size_t)n;
    s += n;
  }
  out[k] = '\0';
  return k;
}

void cli_escape(FILE *f, const char *s) {
  char small[256], *buf = small;
  size_t len = strlen(s);
  if (len > (sizeof(small) - 1) / 6 && (buf = malloc(6 * len + 1)) == NULL) {
    fputs("(out of memory)", f);
    return;
  }
  fwrite(buf, 1, escape_into(buf, s), f);
  if (buf != small)
    free(buf);
}

/* The last results stay valid for a few more calls: enough for every
 * argument of one printf. They are freed as the ring turns (the last
 * ones stay reachable at exit). */
#define SAFE_RING 16

const char *cli_safe(const char *s) {
  static char *ring[SAFE_RING];
  static unsigned next;
  char **slot = &ring[next++ % SAFE_RING];
  if (s == NULL)
    return "(null)";
  free(*slot);
  if ((*slot = malloc(6 * strlen(s) + 1)) == NULL)
    return "(out of memory)";
  escape_into(*slot, s);
  return *slot;
}
