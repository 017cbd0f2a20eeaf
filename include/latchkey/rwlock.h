#ifndef LATCHKEY_RWLOCK_H
#define LATCHKEY_RWLOCK_H

#include "client.h"

/* Declared by its issue's work; see docs/rwlock.md once it lands. */

#endif /* LATCHKEY_RWLOCK_H */
