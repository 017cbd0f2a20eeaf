#ifndef LATCHKEY_VERSION_H
#define LATCHKEY_VERSION_H

/* Same major version means ABI compatible. CMake parses these lines. */
#define LK_VERSION_MAJOR 0
#define LK_VERSION_MINOR 1
#define LK_VERSION_PATCH 0
#define LK_VERSION_IS_RELEASE 0
#define LK_VERSION_SUFFIX "dev"

#define LK_VERSION_HEX                                                        \
  ((LK_VERSION_MAJOR << 16) | (LK_VERSION_MINOR << 8) | (LK_VERSION_PATCH))

#endif /* LATCHKEY_VERSION_H */
