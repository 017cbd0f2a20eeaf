/* Layer 0 (base): calls no other layer (docs/design.md, "Layers"). */
#include <string.h>

#include "latchkey.h"

#define LK__STR(x) #x
#define LK__XSTR(x) LK__STR(x)

unsigned int lk_version(void) { return LK_VERSION_HEX; }

const char *lk_version_string(void) {
  return LK__XSTR(LK_VERSION_MAJOR) "." LK__XSTR(LK_VERSION_MINOR) "." LK__XSTR(
      LK_VERSION_PATCH) "-" LK_VERSION_SUFFIX;
}

/* lk_strerror's message (name 0) or lk_err_name's name (name 1) of err.
 * Static strings only: strerror must never allocate (libuv's uv_strerror
 * leaks for unknown codes). OS errors use the _r forms into a per-thread
 * buffer (libuv's _r forms never allocate). */
static const char *err_text(int err, int name) {
  static _Thread_local char msg_buf[96], name_buf[64];
  switch (err) {
  case 0:
    return name ? "OK" : "success";
#define LK__ERR_TEXT(code, off, msg)                                          \
  case LK_##code:                                                             \
    return name ? "LK_" #code : msg;
    LK_ERRNO_MAP(LK__ERR_TEXT)
#undef LK__ERR_TEXT
  default:
    break;
  }
  if (err < 0 && err > -4096)
    return name ? uv_err_name_r(err, name_buf, sizeof(name_buf))
                : uv_strerror_r(err, msg_buf, sizeof(msg_buf));
  return name ? "LK_UNKNOWN_CODE" : "unknown error";
}

const char *lk_strerror(int err) { return err_text(err, 0); }

const char *lk_err_name(int err) { return err_text(err, 1); }
