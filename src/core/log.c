/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
/* Logging, the client's error text and its events: what every file of the
 * core tells the application. Only the client's log and event callbacks are
 * read here, so any layer may call it. */
#include <stdarg.h>
#include <stdio.h>

#include "core/internal.h"

void lk__log(lk_client_t *c, lk_log_level_t level, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  if (c->log == NULL && level < LK_LOG_WARN)
    return;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (c->log != NULL) {
    c->log(level, buf, c->log_arg);
    return;
  }
  fprintf(stderr, "latchkey %s: %s\n", level == LK_LOG_WARN ? "warning" : "error",
          buf);
}

void lk__client_set_error(lk_client_t *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->error_text, sizeof(c->error_text), fmt, ap);
  va_end(ap);
}

const char *lk_client_error_text(const lk_client_t *c) {
  return c == NULL ? "" : c->error_text;
}

void lk__emit(lk_client_t *c, lk_event_t ev) {
  if (c->on_event != NULL && !c->closing)
    c->on_event(c, ev, c->event_arg);
}
