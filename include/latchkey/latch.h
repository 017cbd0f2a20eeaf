#ifndef LATCHKEY_LATCH_H
#define LATCHKEY_LATCH_H

#include "client.h"

/* Declared by its issue's work; see docs/latch.md once it lands. */

#endif /* LATCHKEY_LATCH_H */
