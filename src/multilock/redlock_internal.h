#ifndef LK_MULTILOCK_REDLOCK_INTERNAL_H
#define LK_MULTILOCK_REDLOCK_INTERNAL_H

/* RedLock's state, shared by the quorum machinery (redlock.c) and the
 * public API and lifecycle (redlock_api.c). */

#include "core/object.h"

#define LK__RL_CHANNEL_PREFIX "redisson_lock__channel"
#define LK__RL_TOKEN_PREFIX "redisson_lock_token"

enum { OP_NONE = 0, OP_ACQUIRE, OP_RELEASE };

enum lk__rl_phase {
  PH_IDLE = 0,
  PH_SETTLE,   /* a re-entry waits for stragglers of the last attempt */
  PH_ATTEMPT,  /* acquires in flight on the masters */
  PH_FENCE,    /* writing the quorum token back */
  PH_ROLLBACK, /* releasing what a failed attempt got */
  PH_SLEEP,    /* until a release message or a timer */
  PH_RELEASE   /* dropping one hold on every master */
};

enum { N_IDLE = 0, N_ACQUIRING, N_RELEASING };
enum { TOK_NONE = 0, TOK_PENDING, TOK_OK, TOK_FAILED };

typedef struct lk__rnode_s {
  lk_redlock_t *rl;
  lk_lock_t *lock;
  lk_client_t *client;
  lk__sub_t sub;
  uint32_t mine;   /* holds this RedLock has on the master */
  int busy;        /* N_ACQUIRING / N_RELEASING */
  int cur;         /* takes part in the current attempt or release */
  int timed_out;   /* no answer within the node timeout */
  int vote;        /* granted and counted in the current attempt */
  int status;      /* outcome in the last attempt or release */
  int join;        /* busy when the attempt began: asked once its answer came */
  int settling;    /* a release that answered after its quorum: its status
                      comes with its answer */
  int64_t token;   /* the master's own token from this attempt */
  lk__op_t *tok_op;
  int tok;         /* TOK_* */
} lk__rnode_t;

struct lk_redlock_s {
  lk__obj_t base; /* first: the shared object body (core/object.h) */
  char *name, *channel, *token_key;
  size_t name_len, channel_len, token_key_len;
  lk__rnode_t *node;
  size_t n, quorum;
  lk_redlock_config_t cfg;
  uint32_t holds;
  int lost;
  int64_t token;
  size_t nodes_closing;

  /* the pending operation */
  int phase;
  int cut;    /* the operation was cut short: give back what comes */
  int in_api; /* inside an lk_ call: completions must be deferred */
  int64_t lease_ms; /* as asked: -1 = the node clients' default lease */
  int64_t node_timeout_ms;
  int fenced;
  int attempts;
  uint64_t t0;     /* first send of the current attempt */
  int64_t min_ttl; /* smallest holder ttl seen by the attempt, -1 none */
  int woken;       /* a release message came during the attempt */
  int wake_armed;  /* a message already cut this sleep short */
  int sleep_ends_wait; /* this sleep lasts until the wait budget's end */
  int fail_status;
  int64_t pending_token;
  uint64_t rng;
  /* Answers due (redlock.c, answer_came): when the last answer came while
   * others were still due (0: none were), and the usual gap between two
   * answers of one fan-out (0: not measured yet). */
  uint64_t last_answer_ns, answer_gap_ns;
};

/* --- redlock.c, for redlock_api.c --- */

/* Starts the operation begun on rl (from inside the API call). */
void lk__rl_start(lk_redlock_t *rl);
/* lk__obj_ops_t hooks. */
void lk__rl_abandon(lk__obj_t *o);
/* The lost observer of every node lock. */
void lk__rl_node_lost(lk_lock_t *l, void *data);
/* ops->member_health (core/object.h): a node's lock began or ended an
 * at-risk episode. */
void lk__rl_health(lk__obj_t *g, lk__obj_t *member, int state);
void lk__rl_forget_token_ops(lk_redlock_t *rl);
void lk__rl_stop_subs(lk_redlock_t *rl);
/* Master nd abstains: it restarted less than the quarantine ago. */
int lk__rl_quarantined(const lk_redlock_t *rl, const lk__rnode_t *nd);
/* The quorum's validity deadline by the masters' own leases, 0 if none. */
uint64_t lk__rl_held_deadline(const lk_redlock_t *rl);

#endif /* LK_MULTILOCK_REDLOCK_INTERNAL_H */
