#ifndef LATCHKEY_H
#define LATCHKEY_H

/* The one header users include. docs/ has a page per primitive. */
#include "latchkey/version.h"
#include "latchkey/common.h"
#include "latchkey/errno.h"
#include "latchkey/client.h"
#include "latchkey/handle.h"
#include "latchkey/lock.h"
#include "latchkey/guarded.h"
#include "latchkey/fair.h"
#include "latchkey/rwlock.h"
#include "latchkey/semaphore.h"
#include "latchkey/latch.h"
#include "latchkey/multilock.h"
#include "latchkey/leader.h"
#include "latchkey/barrier.h"
#include "latchkey/ratelimiter.h"
#include "latchkey/inspect.h"
#include "latchkey/metrics.h"
#include "latchkey/owners.h"
#include "latchkey/blocking.h"

#endif /* LATCHKEY_H */
