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

/* Static strings only: strerror must never allocate (libuv's uv_strerror
 * leaks for unknown codes). OS errors use the _r forms into a per-thread
 * buffer. */
const char *lk_strerror(int err) {
  switch (err) {
  case 0:
    return "success";
#define LK__ERR_MSG(name, off, msg)                                           \
  case LK_##name:                                                             \
    return msg;
    LK_ERRNO_MAP(LK__ERR_MSG)
#undef LK__ERR_MSG
  default:
    break;
  }
  if (err < 0 && err > -4096) {
    static _Thread_local char buf[96]; /* libuv's _r form never allocates */
    return uv_strerror_r(err, buf, sizeof(buf));
  }
  return "unknown error";
}

const char *lk_err_name(int err) {
  switch (err) {
  case 0:
    return "OK";
#define LK__ERR_NAME(name, off, msg)                                          \
  case LK_##name:                                                             \
    return "LK_" #name;
    LK_ERRNO_MAP(LK__ERR_NAME)
#undef LK__ERR_NAME
  default:
    break;
  }
  if (err < 0 && err > -4096) {
    static _Thread_local char buf[64];
    return uv_err_name_r(err, buf, sizeof(buf));
  }
  return "LK_UNKNOWN_CODE";
}
