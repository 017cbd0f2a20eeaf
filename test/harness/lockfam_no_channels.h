/* A fixture whose client logs in as an ACL user without channel access
 * (Redis 7's default for new ACL users: no channels), for the cases that
 * check a waiter is still served, by re-polling (issue 29: the lock's and
 * the fair lock's fault tests each set this up themselves). Header-only. */
#ifndef LK_TEST_HARNESS_LOCKFAM_NO_CHANNELS_H
#define LK_TEST_HARNESS_LOCKFAM_NO_CHANNELS_H

#include "lk_fixture.h"

/* Loop, server, the user "nochan" (password "pw", every key and command,
 * no channel), and the fixture's client logged in as that user, re-polling
 * every max_repoll_ms, logging to log (with log_arg) when it is not NULL. */
static inline void lf_start_without_channels(fx_t *fx, int64_t max_repoll_ms, lk_log_cb log,
                                             void *log_arg) {
  lk_client_opts_t o;
  fx_start_server(fx, NULL);
  freeReplyObject(rt_cmd(fx->srv, "ACL SETUSER nochan on >pw ~* +@all resetchannels"));
  fx_client_opts(fx, &o);
  o.username = "nochan";
  o.password = "pw";
  o.max_repoll_ms = max_repoll_ms;
  if (log != NULL) {
    o.log = log;
    o.log_arg = log_arg;
  }
  fx_start_client(fx, &o);
}

#endif /* LK_TEST_HARNESS_LOCKFAM_NO_CHANNELS_H */
