/* RedLock: one lock name on N independent masters, held while a quorum
 * (N/2 + 1) holds it within its validity (docs/multilock.md).
 *
 * Each master is driven through its own lock object (lock/acquire and
 * lock/release, Redisson's RLock layout; or the lean layout's scripts,
 * src/multilock/redlock_lean.c), so every master gets what a single lock
 * gets: re-entry counted by the owner's hold count, resends after a lost
 * reply that never count twice, a canceled attempt's late grant given back,
 * watchdog renewal. This file adds the quorum:
 *
 *   attempt   the acquire goes to every eligible master at once; the first
 *             send is t0. A master answering within the node timeout votes.
 *             Success once a quorum granted and validity = (quorum-th latest
 *             of t0 + lease - drift) - now is > 0 (with fencing, after the
 *             quorum token was written back to a quorum).
 *   rollback  otherwise every grant of the attempt is released, and the
 *             releases confirmed (bounded by the node timeout), on every
 *             master, including those that answered late.
 *   sleep     until a release message on a master that said "taken", the
 *             holders' ttl or the re-poll interval, plus a random jitter;
 *             then the next attempt, while the budget lasts.
 *
 * A master seen to restart (its run_id changed) abstains for the quarantine
 * time unless the masters are declared persistent. While held, each master's
 * watchdog renews its own lease; when fewer than a quorum still hold, on_lost
 * fires. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/loglevel.h"
#include "core/metrics.h"
#include "core/tokens.h"
#include "core/watchdog.h"
#include "lock/lock_internal.h"
#include "multilock/group.h"
#include "multilock/redlock_internal.h"

static uint64_t ms_ns(int64_t ms) { return (uint64_t)ms * 1000000u; }

static const lk__script_t *script(const char *name) {
  return lk__script_find(name); /* present: embedded at build time */
}

static int64_t node_lease_ms(const lk_redlock_t *rl, const lk__rnode_t *nd) {
  return rl->lease_ms > 0 ? rl->lease_ms : nd->client->o.default_lease_ms;
}

/* The longest lease in play: what a restarted master must sit out. */
static int64_t quarantine_ms(const lk_redlock_t *rl) {
  int64_t q = rl->cfg.quarantine_ms;
  size_t i;
  if (q > 0)
    return q;
  q = rl->lease_ms > 0 ? rl->lease_ms : 0;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].client->o.default_lease_ms > q)
      q = rl->node[i].client->o.default_lease_ms;
  return q;
}

int lk__rl_quarantined(const lk_redlock_t *rl, const lk__rnode_t *nd) {
  uint64_t at = nd->client->restarted_ns;
  return !rl->cfg.persistent && at != 0 && lk__now_ns() < at + ms_ns(quarantine_ms(rl));
}

static void wd_check_all(lk_redlock_t *rl) {
  size_t i;
  for (i = 0; i < rl->n; i++)
    lk__wd_check(rl->node[i].client);
}

/* The quorum-th largest of the given deadlines (0 when fewer). */
static uint64_t quorum_deadline(const lk_redlock_t *rl, uint64_t *d, size_t k) {
  size_t i, j;
  if (k < rl->quorum)
    return 0;
  for (i = 0; i < rl->quorum; i++) /* partial selection sort, descending */
    for (j = i + 1; j < k; j++)
      if (d[j] > d[i]) {
        uint64_t t = d[i];
        d[i] = d[j];
        d[j] = t;
      }
  return d[rl->quorum - 1];
}

/* Validity by the masters' own leases (renewals included). */
uint64_t lk__rl_held_deadline(const lk_redlock_t *rl) {
  uint64_t d[LK_REDLOCK_MAX_NODES];
  size_t i, k = 0;
  if (rl->holds == 0 || rl->lost)
    return 0;
  for (i = 0; i < rl->n; i++) {
    const lk__rnode_t *nd = &rl->node[i];
    uint64_t dl = nd->mine >= rl->holds ? lk__lock_deadline_ns(nd->lock) : 0;
    if (dl != 0)
      d[k++] = dl;
  }
  return quorum_deadline(rl, d, k);
}

/* Validity of the current attempt's votes, measured from its first send. */
static uint64_t attempt_deadline(const lk_redlock_t *rl) {
  uint64_t d[LK_REDLOCK_MAX_NODES];
  size_t i, k = 0;
  for (i = 0; i < rl->n; i++) {
    const lk__rnode_t *nd = &rl->node[i];
    int64_t lease = node_lease_ms(rl, nd);
    if (nd->vote)
      d[k++] = rl->t0 + ms_ns(lease) - lk__wd_drift_ns(lease);
  }
  return quorum_deadline(rl, d, k);
}

/* --- completion --- */

void lk__rl_stop_subs(lk_redlock_t *rl) {
  size_t i;
  for (i = 0; i < rl->n; i++)
    lk__sub_stop(&rl->node[i].sub);
}

static void finish(lk_redlock_t *rl, int status) {
  rl->phase = PH_IDLE;
  lk__rl_stop_subs(rl);
  lk__group_finish(&rl->base, rl->holds, rl->lost, rl->in_api, status);
}

/* --- holds --- */

/* Gives back n holds on a master without waiting (nothing of ours pending
 * on it). */
static void give_back(lk__rnode_t *nd, uint32_t n) { lk__group_give_back(nd->lock, &nd->mine, n); }

static void group_lost(lk_redlock_t *rl) {
  size_t i;
  rl->lost = 1;
  rl->base.client->stats.leases_lost++;
  lk__metrics_lost(rl->base.client, LK__LOST_QUORUM);
  lk__log(rl->base.client, lk__lost_level(&rl->base), "RedLock lost its quorum");
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].busy == N_IDLE)
      give_back(&rl->node[i], rl->node[i].mine);
  lk__obj_tell_lost(&rl->base);
}

/* Fewer than a quorum of masters still hold it: it is lost. */
static void check_quorum(lk_redlock_t *rl) {
  size_t i, k = 0;
  if (rl->holds == 0 || rl->lost)
    return;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].mine >= rl->holds && lk__lock_deadline_ns(rl->node[i].lock) != 0)
      k++;
  if (k < rl->quorum)
    group_lost(rl);
}

static void advance(lk_redlock_t *rl);

/* --- health (docs/objects.md, "Health") --- */

/* The RedLock is at risk while fewer than its quorum of masters hold it
 * without renewal trouble (each node's lock tells its own health); its
 * ms_left is the quorum's validity (lk__rl_held_deadline). It is safe again
 * when a node's confirmed renewal brings the quorum back. One side: the
 * object's risky_sides is 0 or 1. */
void lk__rl_health(lk__obj_t *g, lk__obj_t *member, int state) {
  lk_redlock_t *rl = (lk_redlock_t *)g;
  size_t i, k = 0;
  int risky;
  (void)member;
  /* A release under way lets go of masters one by one: no risk in that. */
  if (rl->holds == 0 || rl->lost || g->kind == OP_RELEASE)
    return;
  for (i = 0; i < rl->n; i++) {
    const lk__rnode_t *nd = &rl->node[i];
    const lk__obj_t *mo = (const lk__obj_t *)(const void *)nd->lock;
    if (nd->mine >= rl->holds && lk__lock_deadline_ns(nd->lock) != 0 && !mo->at_risk)
      k++;
  }
  risky = k < rl->quorum;
  if (risky && g->risky_sides == 0)
    lk__obj_side_at_risk(g, lk__rl_held_deadline(rl));
  else if (!risky && g->risky_sides > 0)
    lk__obj_side_ok(g, state == LK_HEALTH_SAFE, lk__rl_held_deadline(rl));
}

void lk__rl_node_lost(lk_lock_t *l, void *data) {
  lk__rnode_t *nd = data;
  (void)l;
  nd->mine = 0; /* the lock gave them back itself */
  /* A master that granted the attempt under way and lost its hold since no
   * longer votes (nor counts for the fencing token's quorum): its grant is
   * gone. Kept, it would count towards a quorum with the next answer and
   * report success while fewer than a quorum hold the new hold count
   * (check_quorum sees only the holds before it), say a re-entry won with
   * two masters of five holding it, not held by lk_redlock_is_held even in
   * its own callback, until a later loss runs check_quorum. */
  if (nd->vote) {
    nd->vote = 0;
    if (nd->tok == TOK_OK || nd->tok == TOK_PENDING)
      nd->tok = TOK_FAILED;
  }
  check_quorum(nd->rl);
  /* Kept its quorum: one master fewer may leave it at risk. */
  lk__rl_health(&nd->rl->base, NULL, 0);
  /* An operation waiting on nothing else ends now; one that waits for this
   * node's answer ends when it comes. */
  if (nd->busy == N_IDLE)
    advance(nd->rl);
}

/* --- answers due --- */

/* Answers of one fan-out come one after another (masters sharing a CPU run
 * the commands in turn). A loop that sleeps between them is woken once per
 * answer, and each wake-up costs a sleeping process's wake (on a virtual
 * machine an inter-processor interrupt, on loopback paid on the masters'
 * CPU): several times the work of reading the answer. So once one answer
 * came and others are due, the loop polls without sleeping until they came
 * or for a few usual gaps between answers (measured here), whichever is
 * first; answers further apart than SPIN_MAX_GAP_NS are slept for, since a
 * wake-up is then a small part of the wait. Nothing spins while nothing is
 * outstanding (lk__client_spin_until), and the first answer of a fan-out is
 * slept for as before (busy_poll_us covers that part when asked). */
#define SPIN_MAX_GAP_NS 100000u /* 100 us */
#define SPIN_GAPS 3

static void answer_came(lk_redlock_t *rl) {
  uint64_t now = lk__now_ns(), window;
  size_t i, due = 0;
  for (i = 0; i < rl->n; i++)
    due += rl->node[i].busy != N_IDLE;
  if (rl->last_answer_ns != 0) {
    uint64_t gap = now - rl->last_answer_ns;
    rl->answer_gap_ns = rl->answer_gap_ns == 0 ? gap : (3 * rl->answer_gap_ns + gap) / 4;
  }
  rl->last_answer_ns = due > 0 ? now : 0;
  if (due == 0 || rl->answer_gap_ns > SPIN_MAX_GAP_NS)
    return;
  /* Before any gap was measured, one the size of the longest spun for. */
  window = SPIN_GAPS * (rl->answer_gap_ns != 0 ? rl->answer_gap_ns : SPIN_MAX_GAP_NS);
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].busy != N_IDLE)
      lk__client_spin_until(rl->node[i].client, now + window);
}

/* --- node operations --- */

static void join_attempt(lk_redlock_t *rl, lk__rnode_t *nd);

/* A release that answered after its operation ended (a straggler of a
 * release that answered at its quorum, or timed out) may leave the master
 * with more holds than the RedLock has: say two holds, the first release's
 * answer still due on this master when the second release began, which
 * could not ask it. The surplus is given back as soon as the master is
 * free, unless the operation under way asked this master and counts its
 * holds itself (an attempt, its fencing or roll-back, a release). */
static void drop_excess(lk_redlock_t *rl, lk__rnode_t *nd) {
  int counting = rl->phase == PH_ATTEMPT || rl->phase == PH_FENCE ||
                 rl->phase == PH_ROLLBACK || rl->phase == PH_RELEASE;
  if (nd->busy != N_IDLE || nd->mine <= rl->holds || (nd->cur && counting))
    return;
  give_back(nd, nd->mine - rl->holds);
}

static void on_node_released(lk_lock_t *l, int status, void *arg) {
  lk__rnode_t *nd = arg;
  lk_redlock_t *rl = nd->rl;
  nd->busy = N_IDLE;
  if (rl->nodes_closing > 0)
    return;
  answer_came(rl);
  if ((nd->cur && rl->phase == PH_RELEASE) || nd->settling)
    nd->status = status;
  nd->settling = 0;
  lk__group_released(l, &nd->mine, status);
  /* A rollback that found this master's earlier holds gone counts it out
   * (a release settles that itself in release_done). */
  if (rl->phase != PH_RELEASE)
    check_quorum(rl);
  if (rl->lost)
    give_back(nd, nd->mine);
  else
    drop_excess(rl, nd);
  join_attempt(rl, nd);
  advance(rl);
}

static int node_release(lk__rnode_t *nd) {
  int rc = lk_lock_release(nd->lock, on_node_released, nd);
  if (rc == 0) {
    nd->busy = N_RELEASING;
    return 0;
  }
  if (rc == LK_ENOTHELD || rc == LK_ELEASELOST)
    nd->mine = 0;
  else
    give_back(nd, 1);
  return rc;
}

/* A late grant is kept when it matches what the RedLock holds (one more
 * master holding it); anything else is given back. */
static void late_grant(lk_redlock_t *rl, lk__rnode_t *nd) {
  if (!rl->cut && !rl->lost && rl->holds > 0 && nd->mine == rl->holds)
    return;
  give_back(nd, 1);
}

/* A master's answer as a vote: "taken" is LK_ENOTOWNER; the lock's
 * LK_ETIMEDOUT without a "taken" reply is no answer in time. */
static int vote_status(const lk_lock_t *l, int status) {
  if (status == LK_ETIMEDOUT && lk__lock_busy_ttl(l) != LK__LOCK_NOT_BUSY)
    return LK_ENOTOWNER;
  return status;
}

static void on_node_acquired(lk_lock_t *l, int status, void *arg) {
  lk__rnode_t *nd = arg;
  lk_redlock_t *rl = nd->rl;
  nd->busy = N_IDLE;
  if (rl->nodes_closing > 0)
    return; /* the node lock gives back everything on its close */
  answer_came(rl);
  if (status == 0)
    nd->mine++;
  if (nd->cur && !nd->timed_out && !rl->cut &&
      (rl->phase == PH_ATTEMPT || rl->phase == PH_FENCE)) {
    if (status == 0 && lk__rl_quarantined(rl, nd)) {
      /* The master restarted while the attempt was in flight. */
      nd->status = LK_ENOQUORUM;
      give_back(nd, 1);
    } else if (status == 0) {
      nd->status = 0;
      nd->vote = 1;
      nd->token = lk_lock_token(l);
    } else {
      int64_t ttl = lk__lock_busy_ttl(l);
      nd->status = vote_status(l, status); /* LK_ENOTOWNER: someone else has it */
      if (nd->status == LK_ENOTOWNER && ttl >= 0 && (rl->min_ttl < 0 || ttl < rl->min_ttl))
        rl->min_ttl = ttl;
    }
  } else {
    /* After the attempt was decided: a straggler's answer is still its
     * vote (0: it granted, whether kept or given back). */
    if (nd->cur && !nd->timed_out && !rl->cut)
      nd->status = vote_status(l, status);
    if (status == 0 && nd->cur && rl->phase == PH_ROLLBACK && !rl->cut)
      node_release(nd); /* the attempt failed: release, and wait for it */
    else if (status == 0)
      late_grant(rl, nd);
    /* Releases that ended while this answer was due could not ask this
     * master: say a re-entry's grant that comes after both releases. What
     * it still has beyond the RedLock's holds is given back now. After
     * on_lost everything goes, as for a late release: group_lost could not
     * give back this busy master's holds, and rl->holds still counts the
     * lost ones until the next acquire or release, so drop_excess would let
     * the master keep (and its watchdog renew) its earlier holds. */
    if (rl->lost && nd->busy == N_IDLE)
      give_back(nd, nd->mine);
    else
      drop_excess(rl, nd);
  }
  join_attempt(rl, nd);
  advance(rl);
}

static int node_acquire(lk_redlock_t *rl, lk__rnode_t *nd) {
  lk_lock_opts_t o;
  int rc;
  lk_lock_opts_init(&o);
  o.wait_ms = 0;
  o.lease_ms = rl->lease_ms;
  o.fenced = rl->fenced;
  rc = lk_lock_acquire(nd->lock, &o, on_node_acquired, nd);
  nd->status = rc == 0 ? LK_EUNKNOWN : rc; /* no answer yet */
  if (rc == 0)
    nd->busy = N_ACQUIRING;
  return rc;
}

/* A master still busy with the last operation when an attempt began (the
 * straggler of a release answered at its quorum, or of an acquire) is
 * asked as soon as its answer comes, while the attempt is undecided: it
 * votes like the others, so an attempt that starts right after a release
 * still has every master, not only those that had answered. Its lease
 * starts after t0, so the validity counted from t0 stays on the safe side. */
static void join_attempt(lk_redlock_t *rl, lk__rnode_t *nd) {
  if (!nd->join || nd->busy != N_IDLE)
    return;
  nd->join = 0;
  if (rl->phase != PH_ATTEMPT || rl->cut || rl->lost || rl->nodes_closing > 0)
    return;
  if (lk__rl_quarantined(rl, nd))
    nd->status = LK_ENOQUORUM;
  else if (node_acquire(rl, nd) == 0)
    nd->cur = 1;
}

/* --- fencing: the quorum token written back --- */

static void on_token_reply(void *data, int status, redisReply *r) {
  lk__rnode_t *nd = data;
  lk_redlock_t *rl = nd->rl;
  long long v;
  nd->tok_op = NULL;
  if (rl->phase != PH_FENCE || nd->tok != TOK_PENDING)
    return;
  if (status == 0 && lk__reply_is_int(r, &v) && v >= rl->pending_token) {
    nd->tok = TOK_OK;
    lk__token_seen(nd->client, rl->name, rl->name_len, rl->pending_token);
  } else {
    nd->tok = TOK_FAILED;
    if (status != 0)
      nd->status = status;
  }
  advance(rl);
}

static void on_timer(uv_timer_t *t);

static void arm(lk_redlock_t *rl, int64_t ms) {
  uv_timer_start(&rl->base.w->timer, on_timer, (uint64_t)(ms > 0 ? ms : 0), 0);
}

static void start_fence(lk_redlock_t *rl) {
  char tok[24];
  const char *argv[2];
  size_t lens[2], i;
  int64_t t = 0;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].vote && rl->node[i].token > t)
      t = rl->node[i].token;
  t = t + 1 > rl->token + 1 ? t + 1 : rl->token + 1;
  rl->pending_token = t;
  rl->phase = PH_FENCE;
  snprintf(tok, sizeof(tok), "%" PRId64, t);
  argv[0] = rl->token_key, lens[0] = rl->token_key_len;
  argv[1] = tok, lens[1] = strlen(tok);
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    int err = 0;
    nd->tok = TOK_NONE;
    if (!nd->vote)
      continue;
    nd->tok_op = lk__script_call(nd->client, script("multilock/token_raise"), 1, 1, argv,
                                 lens, on_token_reply, nd, &err);
    nd->tok = nd->tok_op != NULL ? TOK_PENDING : TOK_FAILED;
  }
  arm(rl, rl->node_timeout_ms);
  advance(rl);
}

void lk__rl_forget_token_ops(lk_redlock_t *rl) {
  size_t i;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    lk__op_forget(&nd->tok_op);
    if (nd->tok == TOK_PENDING)
      nd->tok = TOK_FAILED;
  }
}

/* --- attempts --- */

static void succeed(lk_redlock_t *rl) {
  size_t i;
  lk__rl_forget_token_ops(rl);
  rl->holds++;
  if (rl->fenced)
    rl->token = rl->pending_token;
  /* A master whose re-entry failed holds fewer than the others: it no
   * longer counts, so what it has is given back. */
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    if (nd->busy == N_IDLE && nd->mine > 0 && nd->mine < rl->holds)
      give_back(nd, nd->mine);
  }
  finish(rl, 0);
}

static void start_rollback(lk_redlock_t *rl, int status) {
  size_t i;
  lk__rl_forget_token_ops(rl);
  rl->fail_status = status;
  rl->phase = PH_ROLLBACK;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    nd->vote = 0;
    if (nd->cur && nd->busy == N_IDLE && nd->mine > rl->holds)
      node_release(nd);
  }
  arm(rl, rl->node_timeout_ms);
  advance(rl);
}

/* Why an attempt failed: a master whose key is of another type (the other
 * layout on this name, or no lock at all) is LK_EWRONGTYPE, which no retry
 * mends; too few masters answered at all (or the validity was spent) is
 * LK_ENOQUORUM; enough answered but others hold it is the plain "taken"
 * outcome, LK_ETIMEDOUT once the budget is spent. */
static int attempt_failure(const lk_redlock_t *rl) {
  size_t i, answered = 0;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].cur && rl->node[i].status == LK_EWRONGTYPE)
      return LK_EWRONGTYPE;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].cur && (rl->node[i].status == 0 || rl->node[i].status == LK_ENOTOWNER))
      answered++;
  return answered >= rl->quorum ? LK_ETIMEDOUT : LK_ENOQUORUM;
}

/* The quorum lost while a re-entry runs decides nothing: the votes of
 * masters whose holds went (lost, or given back by group_lost) still count
 * here, so a later answer could make a quorum of them and report success
 * after on_lost, leaving the voters' holds kept and renewed. advance ends
 * the operation with LK_ELEASELOST once the masters asked answered (or the
 * node timeout gave up on them), giving everything back. */
static void decide_attempt(lk_redlock_t *rl) {
  size_t i, votes = 0, pending = 0;
  if (rl->lost)
    return;
  for (i = 0; i < rl->n; i++) {
    const lk__rnode_t *nd = &rl->node[i];
    if (nd->vote)
      votes++;
    else if ((nd->cur && nd->busy == N_ACQUIRING && !nd->timed_out) || nd->join)
      pending++;
  }
  if (votes >= rl->quorum) {
    if (attempt_deadline(rl) <= lk__now_ns()) {
      start_rollback(rl, LK_ENOQUORUM); /* the validity was spent */
      return;
    }
    if (rl->fenced)
      start_fence(rl);
    else
      succeed(rl);
    return;
  }
  if (votes + pending < rl->quorum)
    start_rollback(rl, 0); /* classified once the stragglers answered */
}

static void decide_fence(lk_redlock_t *rl) {
  size_t i, ok = 0, pending = 0;
  if (rl->lost)
    return; /* as in decide_attempt */
  for (i = 0; i < rl->n; i++) {
    if (rl->node[i].tok == TOK_OK)
      ok++;
    else if (rl->node[i].tok == TOK_PENDING)
      pending++;
  }
  if (ok >= rl->quorum) {
    if (attempt_deadline(rl) > lk__now_ns())
      succeed(rl);
    else
      start_rollback(rl, LK_ENOQUORUM);
    return;
  }
  if (ok + pending < rl->quorum)
    start_rollback(rl, LK_ENOQUORUM);
}

static void start_attempt(lk_redlock_t *rl) {
  int64_t timeout = rl->node_timeout_ms, left = lk__obj_remaining_ms(&rl->base);
  size_t i;
  rl->phase = PH_ATTEMPT;
  rl->t0 = lk__now_ns();
  rl->min_ttl = -1;
  rl->woken = 0;
  rl->attempts++;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    nd->cur = 0;
    nd->vote = 0;
    nd->timed_out = 0;
    nd->tok = TOK_NONE;
    nd->settling = 0;
    nd->join = 0;
    if (rl->holds > 0 && nd->mine < rl->holds)
      nd->status = LK_ENOTHELD; /* a re-entry asks the masters that hold it */
    else if (nd->busy != N_IDLE)
      nd->status = LK_EBUSY, nd->join = rl->holds == 0;
    else if (lk__rl_quarantined(rl, nd))
      nd->status = LK_ENOQUORUM;
    else if (node_acquire(rl, nd) == 0)
      nd->cur = 1;
  }
  /* Later attempts stay inside the budget; the first gets its full time. */
  if (rl->attempts > 1 && rl->base.wait_ms > 0 && left < timeout)
    timeout = left > 0 ? left : 1;
  arm(rl, timeout);
  advance(rl);
}

static void on_sub_event(lk__sub_t *s, int event, int status, const char *msg,
                         size_t len) {
  lk__rnode_t *nd = lk__container_of(s, lk__rnode_t, sub);
  lk_redlock_t *rl = nd->rl;
  (void)msg;
  (void)len;
  wd_check_all(rl);
  if (event == LK__SUB_POKE && status != 0)
    return; /* pub/sub unusable: the timer bounds the wait */
  if (rl->phase == PH_SLEEP && !rl->wake_armed) {
    rl->wake_armed = 1;
    rl->sleep_ends_wait = 0; /* a release message: one more attempt */
    arm(rl, lk__group_jitter_ms(&rl->rng, rl->cfg.retry_jitter_ms));
  }
  else if (rl->phase == PH_ATTEMPT || rl->phase == PH_FENCE || rl->phase == PH_ROLLBACK)
    rl->woken = 1;
}

/* Sleeps until a master that said "taken" publishes a release, the holders'
 * ttl runs out or the re-poll interval passes; then a random jitter. Only
 * the masters held by others are listened to: our own give-backs publish
 * too, and must not wake us. */
static void sleep_then_retry(lk_redlock_t *rl) {
  int64_t left = lk__obj_remaining_ms(&rl->base);
  int64_t delay = rl->base.client->o.max_repoll_ms;
  size_t i;
  rl->phase = PH_SLEEP;
  rl->wake_armed = 0;
  rl->base.waited = 1;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    if (nd->cur && nd->status == LK_ENOTOWNER) {
      if (!lk__sub_active(&nd->sub) &&
          lk__sub_start(nd->client, &nd->sub, rl->channel, rl->channel_len,
                        on_sub_event) != 0)
        lk__log(nd->client, LK_LOG_INFO, "cannot subscribe: polling");
    } else {
      lk__sub_stop(&nd->sub);
    }
  }
  if (rl->woken)
    delay = 0;
  else if (rl->min_ttl >= 0 && rl->min_ttl < delay)
    delay = rl->min_ttl;
  delay += lk__group_jitter_ms(&rl->rng, rl->cfg.retry_jitter_ms);
  /* A sleep cut to the budget's end ends the wait: its timer counts from
   * the loop's time, which lags the clock the budget is kept by (by up to a
   * pass of the loop, and libuv reads a coarse clock), so it may fire with
   * a millisecond of budget left, not enough for an attempt, whose masters
   * may also still owe the last one's answers. */
  rl->sleep_ends_wait = rl->base.wait_ms > 0 && delay >= left;
  if (rl->sleep_ends_wait)
    delay = left;
  arm(rl, delay);
}

static void rollback_done(lk_redlock_t *rl) {
  if (rl->fail_status == 0)
    rl->fail_status = attempt_failure(rl);
  if (rl->base.wait_ms == 0 || rl->fail_status == LK_EWRONGTYPE ||
      (rl->base.wait_ms > 0 && lk__obj_remaining_ms(&rl->base) == 0)) {
    finish(rl, rl->fail_status);
    return;
  }
  sleep_then_retry(rl);
}

/* --- releasing --- */

/* Masters that confirmed the release so far. */
static size_t released(const lk_redlock_t *rl) {
  size_t i, k = 0;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].cur && rl->node[i].busy == N_IDLE && rl->node[i].status == 0)
      k++;
  return k;
}

/* A release answers once a quorum of masters confirmed it, as the acquire
 * does once a quorum granted: fewer than a quorum then hold it, so no one
 * can count on it any more and anyone may take it. The other masters'
 * releases settle in the background (a master that fails keeps its key
 * until its lease ends) and show in lk_redlock_node_status when they come.
 * Short of a quorum, it waits for every master asked (or the node timeout)
 * and reports the first failure. */
static void release_done(lk_redlock_t *rl) {
  int status = 0, quorum = released(rl) >= rl->quorum;
  size_t i;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    if (!nd->cur)
      continue;
    if (nd->busy == N_RELEASING && quorum) {
      nd->status = LK_EUNKNOWN; /* its answer sets it */
      nd->settling = 1;
    } else if (nd->busy == N_RELEASING) {
      nd->status = LK_ETIMEDOUT; /* settles in the background */
    }
    if (!quorum && status == 0 && nd->status != 0)
      status = nd->status;
  }
  if (rl->holds > 0)
    rl->holds--;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    if (nd->busy == N_IDLE && nd->mine > rl->holds)
      give_back(nd, nd->mine - rl->holds);
    if (nd->busy == N_IDLE && nd->mine < rl->holds)
      give_back(nd, nd->mine); /* no longer in step with the others */
  }
  finish(rl, status);
}

static void start_release(lk_redlock_t *rl) {
  size_t i;
  rl->phase = PH_RELEASE;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    nd->cur = 0;
    nd->status = 0;
    nd->settling = 0;
    nd->join = 0;
    /* A straggler of the acquire (still to answer) is given back when it
     * does: the hold count will not match any more. */
    if (nd->busy != N_IDLE || nd->mine < rl->holds || nd->mine == 0)
      continue;
    nd->status = node_release(nd);
    nd->cur = nd->status != LK_ENOTHELD;
  }
  arm(rl, rl->node_timeout_ms);
  advance(rl);
}

/* --- the phase machine --- */

/* A master with an operation of ours in flight; cur_only: one the current
 * phase waits for (asked by it, and not given up on). */
static int any_busy(const lk_redlock_t *rl, int cur_only) {
  size_t i;
  for (i = 0; i < rl->n; i++) {
    const lk__rnode_t *nd = &rl->node[i];
    if (nd->busy != N_IDLE && (!cur_only || (nd->cur && !nd->timed_out)))
      return 1;
  }
  return 0;
}

static void start_op(lk_redlock_t *rl) {
  rl->cut = 0;
  if (rl->base.kind == OP_ACQUIRE)
    start_attempt(rl);
  else
    start_release(rl);
}

static void advance(lk_redlock_t *rl) {
  if (rl->lost && rl->base.kind != OP_NONE && rl->phase != PH_SETTLE &&
      rl->phase != PH_IDLE && !any_busy(rl, 1)) {
    /* The quorum was lost while this operation ran. */
    size_t i;
    lk__rl_forget_token_ops(rl);
    for (i = 0; i < rl->n; i++)
      if (rl->node[i].busy == N_IDLE)
        give_back(&rl->node[i], rl->node[i].mine);
    rl->lost = 0;
    rl->holds = 0;
    finish(rl, LK_ELEASELOST);
    return;
  }
  switch (rl->phase) {
  case PH_SETTLE:
    if (!any_busy(rl, 0))
      start_op(rl);
    return;
  case PH_ATTEMPT:
    decide_attempt(rl);
    return;
  case PH_FENCE:
    decide_fence(rl);
    return;
  case PH_ROLLBACK:
    if (!any_busy(rl, 1))
      rollback_done(rl);
    return;
  case PH_RELEASE:
    if (!any_busy(rl, 1) || released(rl) >= rl->quorum)
      release_done(rl);
    return;
  default:
    return;
  }
}

/* Masters still owing the attempt's answer are not waited for any more
 * (advance skips them); their grants are given back as they come. Their
 * status says so, as the attempt's own timer does: a timed-out master's
 * status is not updated by its late answer, so LK_EUNKNOWN ("updated when
 * it answers", include/latchkey/multilock.h) would stay forever. */
static void stop_waiting_for_stragglers(lk_redlock_t *rl) {
  size_t i;
  for (i = 0; i < rl->n; i++)
    if (rl->node[i].cur && rl->node[i].busy == N_ACQUIRING && !rl->node[i].timed_out) {
      rl->node[i].timed_out = 1;
      rl->node[i].status = LK_ETIMEDOUT;
    }
}

static void on_timer(uv_timer_t *t) {
  lk_redlock_t *rl = t->data;
  size_t i;
  wd_check_all(rl);
  if (rl->base.kind == OP_NONE || lk__queue_linked(&rl->base.done.node))
    return;
  switch (rl->phase) {
  case PH_SETTLE:
    start_op(rl);
    return;
  case PH_ATTEMPT:
    /* Masters that did not answer in time count as "no"; one still busy
     * with the last operation is not asked any more. */
    for (i = 0; i < rl->n; i++) {
      lk__rnode_t *nd = &rl->node[i];
      nd->join = 0;
      if (nd->cur && nd->busy == N_ACQUIRING && !nd->timed_out) {
        /* Left to answer in its own time (its client's reply timeout
         * bounds it); a grant then is given back. Not canceled: a cancel's
         * give-back would only go out once the answer came anyway. */
        nd->timed_out = 1;
        nd->status = LK_ETIMEDOUT;
      }
    }
    advance(rl); /* decide_attempt, or the loss reported */
    return;
  case PH_FENCE:
    lk__rl_forget_token_ops(rl);
    /* After on_lost the loss is reported once the masters asked answered:
     * those still owing the attempt's answer (start_fence took the timer
     * that would have timed them out) are not waited for beyond this node
     * timeout either, or the acquire would last their clients' reply
     * timeout. Their grants are given back as they come. */
    if (rl->lost)
      stop_waiting_for_stragglers(rl);
    advance(rl); /* decide_fence, or the loss reported */
    return;
  case PH_ROLLBACK:
    stop_waiting_for_stragglers(rl); /* they settle in the background */
    rollback_done(rl);
    return;
  case PH_SLEEP:
    /* Also a wake (a release message, a woken attempt) with under 2 ms of
     * budget left: too little for an attempt whose masters may still owe
     * the last one's answers, and the wait ends as a timeout, not with the
     * attempt's own failure. */
    if (rl->base.wait_ms > 0 && (rl->sleep_ends_wait || lk__obj_remaining_ms(&rl->base) < 2))
      finish(rl, rl->fail_status);
    else
      start_attempt(rl);
    return;
  case PH_RELEASE:
    release_done(rl);
    return;
  default:
    return;
  }
}

/* --- entry points for redlock_api.c --- */

void lk__rl_start(lk_redlock_t *rl) {
  if (any_busy(rl, 0) && rl->base.kind == OP_ACQUIRE && rl->holds > 0) {
    /* A re-entry waits for stragglers so the masters' counts agree, for a
     * node timeout at most (then it asks the others). */
    rl->phase = PH_SETTLE;
    arm(rl, rl->node_timeout_ms);
    return;
  }
  rl->in_api = 1;
  start_op(rl);
  rl->in_api = 0;
}

void lk__rl_abandon(lk__obj_t *o) {
  lk_redlock_t *rl = (lk_redlock_t *)o;
  size_t i;
  rl->cut = 1;
  lk__rl_forget_token_ops(rl);
  lk__rl_stop_subs(rl);
  /* After on_lost nothing is kept: rl->holds still counts the lost holds
   * (until the next acquire or release), so keeping that many would leave a
   * master that granted the attempt after the loss holding (and renewing)
   * its earlier holds, as in advance's loss path. */
  const uint32_t keep = rl->lost ? 0 : rl->holds;
  for (i = 0; i < rl->n; i++) {
    lk__rnode_t *nd = &rl->node[i];
    nd->vote = 0;
    /* An acquire in flight answers within a round trip (or its client's
     * reply timeout) and is given back then. */
    if (nd->busy == N_IDLE && nd->mine > keep)
      give_back(nd, nd->mine - keep);
  }
  rl->phase = PH_IDLE;
}
