#ifndef LATCHKEY_H
#define LATCHKEY_H

/* The one header users include. docs/ has a page per primitive. */
#include "latchkey/version.h"
#include "latchkey/common.h"
#include "latchkey/errno.h"
#include "latchkey/client.h"
#include "latchkey/lock.h"

#endif /* LATCHKEY_H */
