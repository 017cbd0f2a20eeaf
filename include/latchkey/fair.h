#ifndef LATCHKEY_FAIR_H
#define LATCHKEY_FAIR_H

#include "client.h"

/* Declared by its issue's work; see docs/fair.md once it lands. */

#endif /* LATCHKEY_FAIR_H */
