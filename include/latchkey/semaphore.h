#ifndef LATCHKEY_SEMAPHORE_H
#define LATCHKEY_SEMAPHORE_H

#include "client.h"

/* Declared by its issue's work; see docs/semaphore.md once it lands. */

#endif /* LATCHKEY_SEMAPHORE_H */
