/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* The name check every primitive's _new runs (docs/objects.md, "Names and
 * cluster slots"): the keys and channels an object derives from its name
 * must all hash to one cluster slot, or a script naming two of them is
 * refused with CROSSSLOT and a publish reaches no subscriber. Redisson's
 * naming wraps the name in braces in some keys and not in others, so a name
 * with a stray brace ("q{z", "a}b") gives its keys different hash tags.
 *
 * The rule is about the name only, applied on every server (a standalone
 * one too): a program that works standalone then works on a cluster. It is
 * decided on text, not on slot numbers: every key must hash the same bytes
 * (its tag, or the whole key without one), so a CRC coincidence never lets
 * a name through. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "core/slot.h"

/* Appends s to out (cap bytes, NUL kept), quoted, with what is not
 * printable ASCII escaped (names are arbitrary bytes), cut after about max
 * characters of output so the rest of the text still fits. */
void lk__put_quoted(char *out, size_t cap, const char *s, size_t len, size_t max) {
  size_t o = strlen(out), start, i;
  if (o + 1 >= cap)
    return;
  out[o++] = '"';
  start = o;
  for (i = 0; i < len && o - start < max && o + 5 < cap; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      o += (size_t)snprintf(out + o, cap - o, "\\%c", ch);
    else if (ch < 0x20 || ch > 0x7e)
      o += (size_t)snprintf(out + o, cap - o, "\\x%02x", ch);
    else
      out[o++] = (char)ch;
  }
  if (i < len && o + 4 < cap)
    memcpy(out + o, "...", 3), o += 3;
  if (o + 1 < cap)
    out[o++] = '"';
  out[o] = '\0';
}

/* Names shown in the error text are cut: the text is 256 bytes, and the
 * longest message, with both keys cut, must still end with the reference. */
#define LK__SHOWN 32

static int refuse(lk_client_t *c, const char *what, const char *name, size_t name_len,
                  const lk__derived_t *a, const lk__derived_t *b) {
  char *t = c->error_text;
  size_t cap = sizeof(c->error_text);
  snprintf(t, cap, "%s name ", what);
  lk__put_quoted(t, cap, name, name_len, LK__SHOWN);
  strncat(t, " refused: ", cap - strlen(t) - 1);
  lk__put_quoted(t, cap, a->text, a->len, LK__SHOWN);
  if (b != NULL) {
    strncat(t, " and ", cap - strlen(t) - 1);
    lk__put_quoted(t, cap, b->text, b->len, LK__SHOWN);
    strncat(t, " would be in different cluster slots", cap - strlen(t) - 1);
  } else {
    strncat(t, " has no hash tag to keep what follows it in the name's slot",
            cap - strlen(t) - 1);
  }
  strncat(t, " (docs/objects.md, \"Names and cluster slots\")", cap - strlen(t) - 1);
  return LK_EINVAL;
}

int lk__names_one_slot(lk_client_t *c, const char *what, const char *name, size_t name_len,
                       const lk__derived_t *d, int n) {
  size_t ref_off = 0, ref_len = 0;
  for (int i = 0; i < n; i++) {
    size_t off, len = lk__key_hashed(d[i].text, d[i].len, &off);
    /* An open key gets more bytes appended (an owner id, a number): only a
     * tag inside the part given here keeps them out of the hash. */
    if (d[i].open && off == 0)
      return refuse(c, what, name, name_len, &d[i], NULL);
    if (i == 0) {
      ref_off = off, ref_len = len;
      continue;
    }
    if (len != ref_len || memcmp(d[i].text + off, d[0].text + ref_off, len) != 0)
      return refuse(c, what, name, name_len, &d[0], &d[i]);
  }
  return 0;
}

int lk__names_one_slot_later(lk_client_t *c, const char *what, const char *name,
                             size_t name_len, lk__derived_t *d, int n, const char *later_prefix) {
  lk__derived_t *later = &d[n - 1];
  int rc = LK_ENOMEM;
  later->text = lk__prefix_name(later_prefix, name, name_len, &later->len);
  later->open = 0;
  if (later->text != NULL)
    rc = lk__names_one_slot(c, what, name, name_len, d, n);
  lk__free((char *)later->text);
  later->text = NULL;
  return rc;
}
