#ifndef LATCHKEY_MULTILOCK_H
#define LATCHKEY_MULTILOCK_H

#include "client.h"

/* Declared by its issue's work; see docs/multilock.md once it lands. */

#endif /* LATCHKEY_MULTILOCK_H */
