/* The history checkers (test/harness/history.h) on synthetic histories: each
 * passes a good one and fails a bad one, so a clean report from a real run
 * means something. Also the LKHIST02 file round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "history.h"
#include "test.h"

static void add(rt_recs_t *h, uint32_t proc, uint16_t op, uint64_t s, uint64_t e, int64_t token,
                int64_t extra) {
  ASSERT_OK(rt_recs_add5(h, proc, op, s, e, token, extra));
}

TEST(exclusive_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_HOLD, 100, 200, 0, 0);
  add(&h, 1, RT_OP_HOLD, 200, 300, 0, 0); /* touching is not overlapping */
  add(&h, 0, RT_OP_HOLD, 301, 400, 0, 0);
  add(&h, 2, RT_OP_READ, 150, 350, 0, 0); /* another op: not looked at */
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 3);
  ASSERT_EQ(c.violations, 0);
  add(&h, 2, RT_OP_HOLD, 390, 500, 0, 0); /* enters while 0 holds */
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.proc, 0);
  ASSERT_EQ(c.first_b.proc, 2);
  ASSERT_EQ(c.first_b.start_ns, 390);
  /* Other objects are separate. */
  rt_check_exclusive(&h, 7, RT_OP_HOLD, &c);
  ASSERT_EQ(c.checked, 0);
  ASSERT_EQ(c.violations, 0);
  rt_recs_free(&h);
}

TEST(permits_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_PERMITS, 0, 100, 0, 2);
  add(&h, 1, RT_OP_PERMITS, 50, 150, 0, 1);  /* 3 of 3 */
  add(&h, 2, RT_OP_PERMITS, 100, 200, 0, 2); /* starts as 0 ends: 3 */
  rt_check_permits(&h, 0, 3, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.max_seen, 3);
  add(&h, 3, RT_OP_PERMITS, 120, 130, 0, 1); /* 4 of 3 */
  rt_check_permits(&h, 0, 3, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.max_seen, 4);
  ASSERT_EQ(c.first_b.proc, 3);
  rt_recs_free(&h);
}

TEST(rw_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_READ, 0, 100, 0, 0);
  add(&h, 1, RT_OP_READ, 10, 90, 0, 0); /* readers share */
  add(&h, 2, RT_OP_WRITE, 100, 200, 0, 0);
  add(&h, 3, RT_OP_READ, 200, 210, 0, 0);
  rt_check_rw(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.max_seen, 2);
  add(&h, 4, RT_OP_READ, 150, 160, 0, 0); /* a reader beside the writer */
  rt_check_rw(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.proc, 2);
  ASSERT_EQ(c.first_b.proc, 4);
  rt_recs_free(&h);

  /* Two writers at once, and a writer entering while a reader reads. */
  rt_recs_init(&h);
  add(&h, 0, RT_OP_WRITE, 0, 100, 0, 0);
  add(&h, 1, RT_OP_WRITE, 50, 60, 0, 0);
  rt_check_rw(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  rt_recs_free(&h);
  rt_recs_init(&h);
  add(&h, 0, RT_OP_READ, 0, 100, 0, 0);
  add(&h, 1, RT_OP_WRITE, 99, 120, 0, 0);
  rt_check_rw(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.proc, 1);
  rt_recs_free(&h);
}

TEST(token_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 1, RT_OP_HOLD, 300, 400, 7, 0);
  add(&h, 0, RT_OP_HOLD, 100, 200, 3, 0);
  add(&h, 2, RT_OP_HOLD, 500, 600, 0, 0); /* no token: skipped */
  add(&h, 2, RT_OP_HOLD, 700, 800, 8, 0);
  rt_check_tokens(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 3);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.max_seen, 8);
  add(&h, 3, RT_OP_HOLD, 900, 950, 8, 0); /* handed out twice */
  add(&h, 0, RT_OP_HOLD, 960, 990, 5, 0); /* went backwards */
  rt_check_tokens(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 2);
  ASSERT_EQ(c.first_b.proc, 3);
  rt_recs_free(&h);
}

TEST(grant_token_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  /* Calls 100..200 (token 10) and 150..400 (token 9) overlap: either INCR
   * may have run first. 300..350 came after 10 was confirmed: above it. */
  add(&h, 0, RT_OP_GRANT, 100, 200, 10, RT_OP_READ);
  add(&h, 1, RT_OP_GRANT, 150, 400, 9, RT_OP_READ);
  add(&h, 2, RT_OP_GRANT, 300, 350, 11, RT_OP_WRITE);
  add(&h, 3, RT_OP_GRANT, 360, 380, 0, RT_OP_HOLD); /* no token: skipped */
  add(&h, 3, RT_OP_HOLD, 500, 600, 1, 0);           /* not a grant record */
  rt_check_grant_tokens(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 3);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.max_seen, 11);
  /* After an empty restart: invoked after 11 was confirmed, yet 1. */
  add(&h, 3, RT_OP_GRANT, 700, 710, 1, RT_OP_HOLD);
  rt_check_grant_tokens(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.token, 11);
  ASSERT_EQ(c.first_b.token, 1);
  h.n--;
  /* Handed out twice, to calls that overlap (no order between them). */
  add(&h, 4, RT_OP_GRANT, 160, 420, 9, RT_OP_READ);
  rt_check_grant_tokens(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.token, 9);
  /* Other objects are separate. */
  rt_check_grant_tokens(&h, 1, &c);
  ASSERT_EQ(c.checked, 0);
  rt_recs_free(&h);
}

/* A cluster split brain (a wipe marked token 0: a replaced master woke up
 * stale and granted beside its successor, each INCRing its own copy of the
 * counter) may hand one token out twice: docs/client.md admits it, so
 * grants made while it ran are not judged (a loaded nemesis_cluster run:
 * two processes got one token from the two masters). Outside it, and in an
 * empty restart's wipe (token 1), a token handed out twice still fails. */
TEST(grant_tokens_twice_in_a_split_brain_are_not_judged) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, UINT32_MAX, RT_OP_WIPE, 500, 900, 0, 0);
  add(&h, 0, RT_OP_GRANT, 100, 200, 10, RT_OP_HOLD);
  add(&h, 1, RT_OP_GRANT, 600, 650, 20, RT_OP_HOLD); /* the stale master */
  add(&h, 2, RT_OP_GRANT, 700, 760, 20, RT_OP_HOLD); /* its successor */
  add(&h, 3, RT_OP_GRANT, 950, 960, 21, RT_OP_HOLD);
  rt_check_grant_tokens(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.checked, 2);
  /* After it, a token below one confirmed before is still a violation. */
  add(&h, 4, RT_OP_GRANT, 970, 980, 15, RT_OP_HOLD);
  rt_check_grant_tokens(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  h.n--;
  /* An empty restart's wipe excuses nothing. */
  h.v[0].token = 1;
  rt_check_grant_tokens(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 2); /* handed out twice, and not above 20 confirmed before */
  ASSERT_EQ(c.first_b.token, 20);
  rt_recs_free(&h);
}

/* A wipe (the server came back empty at once) ends the sections under way
 * when it began: a holder that still believed it held is no overlap with a
 * holder after the wipe; overlaps before the wipe still count. */
TEST(wipe_ends_sections_for_the_exclusion_checkers) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_HOLD, 100, 900, 0, 0);  /* believed held until 900 */
  add(&h, 1, RT_OP_HOLD, 600, 700, 0, 0);  /* after the wipe */
  add(&h, 0, RT_OP_LOST, 800, 800, 0, 100); /* told after 1 took it */
  add(&h, 2, RT_OP_WRITE, 100, 900, 0, 0);
  add(&h, 3, RT_OP_READ, 600, 700, 0, 0);
  add(&h, 6, RT_OP_PERMITS, 100, 900, 0, 1); /* a 1-permit semaphore: */
  add(&h, 7, RT_OP_PERMITS, 600, 700, 0, 1); /* its permit taken again */
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 1); /* without the wipe: overlaps */
  rt_check_permits(&h, 0, 1, &c);
  ASSERT_EQ(c.violations, 1);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 1);
  rt_check_rw(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  add(&h, UINT32_MAX, RT_OP_WIPE, 500, 550, 0, 0);
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  rt_check_rw(&h, 0, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  rt_check_permits(&h, 0, 1, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  /* A section that begins during the wipe is skipped; one that overlaps
   * another before the wipe is still a violation. */
  add(&h, 4, RT_OP_HOLD, 520, 800, 0, 0);
  add(&h, 5, RT_OP_HOLD, 300, 400, 0, 0);
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.proc, 5);
  /* Tokens take no excuse from it (rt_check_grant_tokens ignores wipes). */
  add(&h, 0, RT_OP_GRANT, 90, 100, 5, RT_OP_HOLD);
  add(&h, 1, RT_OP_GRANT, 560, 600, 1, RT_OP_HOLD);
  rt_check_grant_tokens(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  rt_recs_free(&h);
}

/* An acquire still unanswered while a wipe ran may have been granted by
 * the server that went, its answer delivered after the one that came back
 * granted another (seed 943399596908: a lower token answered after a
 * higher one): its section is skipped, by the exclusion checkers, by the
 * order of sections' tokens (the two grants overlap in time, so that order
 * says nothing) and by the lost-first checker. One asked after the wipe is
 * judged as any. The same whether the wipe proves nothing (token 0) or is
 * an empty restart whose clock (80) is above the old grant's token. */
static void unanswered_across_a_wipe(int64_t wipe_token, int64_t wipe_clock) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, UINT32_MAX, RT_OP_WIPE, 500, 550, wipe_token, wipe_clock);
  add(&h, 0, RT_OP_GRANT, 400, 600, 70, RT_OP_HOLD); /* asked before the wipe */
  add(&h, 0, RT_OP_HOLD, 600, 700, 70, 0);
  add(&h, 1, RT_OP_GRANT, 560, 580, 90, RT_OP_HOLD); /* asked after it */
  add(&h, 1, RT_OP_HOLD, 580, 690, 90, 0);
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  rt_check_tokens(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 1);
  ASSERT_EQ(c.violations, 0);
  rt_check_grant_tokens(&h, 0, &c);
  ASSERT_EQ(c.violations, 0);
  /* Two asked after the wipe still may not overlap. */
  add(&h, 2, RT_OP_GRANT, 560, 650, 100, RT_OP_HOLD);
  add(&h, 2, RT_OP_HOLD, 650, 680, 100, 0);
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  /* Nor may tokens go backwards: 85 asked for after 100 was answered. */
  add(&h, 3, RT_OP_GRANT, 705, 710, 85, RT_OP_HOLD);
  add(&h, 3, RT_OP_HOLD, 710, 720, 85, 0);
  rt_check_tokens(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.proc, 3);
  rt_check_grant_tokens(&h, 0, &c);
  ASSERT_EQ(c.violations, 1);
  /* The skipped section's loss, told after 2 began at 650, is late for
   * nobody; 1's is, and 0's skipped section is no other holder for it. */
  add(&h, 0, RT_OP_LOST, 700, 700, 0, 600);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  add(&h, 1, RT_OP_LOST, 695, 695, 0, 580);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.proc, 1);
  ASSERT_EQ(c.first_b.proc, 2);
  rt_recs_free(&h);
}

TEST(wipe_during_an_unanswered_acquire_skips_its_section) {
  unanswered_across_a_wipe(0, 0);
  unanswered_across_a_wipe(1, 80);
  unanswered_across_a_wipe(1, 0);
}

/* A grant asked for before an empty restart (wipe token 1) and answered
 * after it is the new server's when its token is above the clock recorded
 * at the kill, or no lower than one the new server gave an acquire asked
 * for after the wipe: then its section is judged as any. */
TEST(wipe_straddling_grant_the_restarted_server_made_is_judged) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, UINT32_MAX, RT_OP_WIPE, 500, 550, 1, 80);
  add(&h, 0, RT_OP_GRANT, 400, 600, 120, RT_OP_HOLD);
  add(&h, 0, RT_OP_HOLD, 600, 700, 120, 0);
  add(&h, 1, RT_OP_GRANT, 560, 580, 150, RT_OP_HOLD);
  add(&h, 1, RT_OP_HOLD, 580, 690, 150, 0);
  /* 120 > the clock at the kill: the new server's, so the two overlap. */
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  /* Clock unknown, 120 < 150: nothing proves it, skipped. */
  h.v[0].extra = 0;
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 0);
  /* 150 >= 150, the lowest granted to an acquire asked after the wipe. */
  h.v[1].token = h.v[2].token = 150;
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 1);
  /* 70 < 150: not proven, skipped; neither a grant asked during the wipe
   * (it may be either server's) nor one on another object lowers 150. */
  h.v[1].token = h.v[2].token = 70;
  add(&h, 4, RT_OP_GRANT, 520, 560, 5, RT_OP_HOLD);
  add(&h, 4, RT_OP_GRANT, 600, 610, 3, RT_OP_HOLD);
  h.v[h.n - 1].obj = 1;
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 0);
  /* Proven again, 0's loss told at 700 is late for 2, who began at 650. */
  h.v[1].token = h.v[2].token = 120;
  h.v[0].extra = 80;
  add(&h, 0, RT_OP_LOST, 700, 700, 0, 600);
  add(&h, 2, RT_OP_GRANT, 640, 650, 160, RT_OP_HOLD);
  add(&h, 2, RT_OP_HOLD, 650, 660, 160, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.proc, 0);
  /* A wipe that proves nothing (token 0) excuses 0's section again: only
   * 2 overlapping 1 is left, and 0's loss is late for nobody. */
  h.v[0].token = 0;
  rt_check_exclusive(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.proc, 2);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 0);
  rt_recs_free(&h);
}

/* A semaphore's counter has no lease: an acquire a stale cluster master
 * granted is lost with its writes, its holder's release then adds a permit
 * nobody took, and the count stays high after the wipe (4 of 3 held, as in
 * nemesis_cluster seed 27185819818). Its checks end at the first wipe; an
 * excess before it still counts. */
TEST(permits_judged_until_the_first_wipe) {
  rt_recs_t h, cut;
  rt_check_t c;
  uint64_t first = 1;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_PERMITS, 100, 200, 0, 3);
  ASSERT_EQ(rt_recs_until_first_wipe(&h, &cut, &first), 0);
  ASSERT_EQ(first, 0); /* no wipe: everything */
  ASSERT_EQ(cut.n, h.n);
  rt_recs_free(&cut);
  add(&h, UINT32_MAX, RT_OP_WIPE, 300, 400, 0, 0);
  add(&h, UINT32_MAX, RT_OP_WIPE, 700, 800, 0, 0);
  add(&h, 1, RT_OP_PERMITS, 500, 600, 0, 2); /* the inflated counter: */
  add(&h, 2, RT_OP_PERMITS, 550, 650, 0, 2); /* 4 of 3 after the wipe */
  rt_check_permits(&h, 0, 3, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(rt_recs_until_first_wipe(&h, &cut, &first), 0);
  ASSERT_EQ(first, 300);
  ASSERT_EQ(cut.n, 3); /* the first holding and both wipes */
  rt_check_permits(&cut, 0, 3, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 1);
  ASSERT_EQ(c.violations, 0);
  rt_recs_free(&cut);
  add(&h, 3, RT_OP_PERMITS, 150, 250, 0, 1); /* 4 of 3 before the wipe */
  ASSERT_EQ(rt_recs_until_first_wipe(&h, &cut, &first), 0);
  rt_check_permits(&cut, 0, 3, &c);
  ASSERT_EQ(c.violations, 1);
  rt_recs_free(&cut);
  rt_recs_free(&h);
}

TEST(fifo_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  /* Enqueue ranks 0..3; rank 2 died in the queue (no hold). */
  add(&h, 0, RT_OP_HOLD, 100, 200, 0, 0);
  add(&h, 1, RT_OP_HOLD, 210, 300, 0, 1);
  add(&h, 3, RT_OP_HOLD, 310, 400, 0, 3);
  rt_check_fifo(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 3);
  ASSERT_EQ(c.violations, 0);
  add(&h, 2, RT_OP_HOLD, 401, 500, 0, 2); /* overtaken by rank 3 */
  rt_check_fifo(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.extra, 3);
  ASSERT_EQ(c.first_b.extra, 2);
  rt_recs_free(&h);
}

TEST(latch_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  add(&h, 0, RT_OP_COUNTDOWN, 100, 110, 0, 0);
  add(&h, 1, RT_OP_COUNTDOWN, 300, 320, 0, 0);
  add(&h, 2, RT_OP_COUNTDOWN, 200, 220, 0, 0);
  add(&h, 3, RT_OP_AWAIT, 0, 305, 0, 1);  /* after the 3rd count-down began */
  add(&h, 4, RT_OP_AWAIT, 0, 250, 0, 0);  /* timed out: not an observation */
  rt_check_latch(&h, 0, 3, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 2);
  ASSERT_EQ(c.violations, 0);
  add(&h, 5, RT_OP_AWAIT, 0, 299, 0, 1); /* open before the 3rd */
  rt_check_latch(&h, 0, 3, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_b.proc, 5);
  /* With a count of 4 the latch never reached zero: any open is early. */
  rt_check_latch(&h, 0, 4, &c);
  ASSERT_EQ(c.violations, 2);
  rt_recs_free(&h);
}

TEST(lost_first_checker_passes_and_fails) {
  rt_recs_t h;
  rt_check_t c;
  rt_recs_init(&h);
  /* 0 held from 100, lost at 500 (told), 1 took it at 600: fine. */
  add(&h, 0, RT_OP_HOLD, 100, 400, 0, 0);
  add(&h, 0, RT_OP_LOST, 500, 500, 0, 100);
  add(&h, 1, RT_OP_HOLD, 600, 700, 0, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.checked, 1);
  ASSERT_EQ(c.violations, 0);
  /* 2 held from 1000, 3 took it at 1200, 2 told only at 1300: late. */
  add(&h, 2, RT_OP_HOLD, 1000, 1100, 0, 0);
  add(&h, 3, RT_OP_HOLD, 1200, 1250, 0, 0);
  add(&h, 2, RT_OP_LOST, 1300, 1300, 0, 1000);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  rt_check_print(stdout, &c);
  ASSERT_EQ(c.violations, 1);
  ASSERT_EQ(c.first_a.proc, 2);
  ASSERT_EQ(c.first_b.proc, 3);
  /* A stall of another process, or one of this process outside the
   * section, excuses nothing. */
  add(&h, 3, RT_OP_STALLED, 1050, 1280, 0, 0);
  add(&h, 2, RT_OP_STALLED, 900, 990, 0, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 1);
  /* ... unless 2 was stopped meanwhile, or its loop stalled: it could not
   * be told. */
  add(&h, 2, RT_OP_STALLED, 1150, 1290, 0, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 0);
  h.n--;
  add(&h, 2, RT_OP_STOPPED, 1050, 1280, 0, 0);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 0);
  /* A loss found after the holder had left its section (extra -1) is late
   * for nobody. */
  add(&h, 4, RT_OP_HOLD, 2000, 2100, 0, 0);
  add(&h, 5, RT_OP_HOLD, 2200, 2300, 0, 0);
  add(&h, 4, RT_OP_LOST, 2400, 2400, 0, -1);
  rt_check_lost_first(&h, 0, RT_OP_HOLD, &c);
  ASSERT_EQ(c.violations, 0);
  ASSERT_EQ(c.checked, 2);
  rt_recs_free(&h);
}

TEST(history_file_round_trip) {
  char dir[] = "/tmp/lk-recs-XXXXXX";
  ASSERT_NOT_NULL(mkdtemp(dir));
  char path[64];
  snprintf(path, sizeof path, "%s/h.bin", dir);
  FILE *f = rt_recs_create(path);
  ASSERT_NOT_NULL(f);
  rt_rec_t r;
  memset(&r, 0, sizeof r);
  r.proc = 4;
  r.op = RT_OP_PERMITS;
  r.obj = 2;
  r.start_ns = 10;
  r.end_ns = 20;
  r.token = -3;
  r.extra = 99;
  ASSERT_OK(rt_recs_append(f, &r));
  ASSERT_EQ(fwrite("xyz", 3, 1, f), 1); /* a record cut short by a crash */
  ASSERT_OK(rt_recs_finish(f));
  rt_recs_t h;
  rt_recs_init(&h);
  ASSERT_EQ(rt_recs_load(&h, path, 0), -1); /* strict: refused */
  rt_recs_free(&h);
  rt_recs_init(&h);
  ASSERT_OK(rt_recs_load(&h, path, 1)); /* tolerant: whole records kept */
  ASSERT_EQ(h.n, 1);
  ASSERT(memcmp(&h.v[0], &r, sizeof r) == 0);
  rt_recs_free(&h);
  ASSERT_OK(unlink(path));
  ASSERT_OK(rmdir(dir));
}
