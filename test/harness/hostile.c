/* The hostile-server fault catalogue over the proxy's reply rules (hostile.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "hostile.h"

#include <stdio.h>
#include <string.h>

#include "test.h"

static const struct {
  const char *name;
  rt_proxy_action_t action;
  const char *bytes; /* default bytes, NULL: the fault sends none */
} faults[RT_HF_COUNT] = {
    [RT_HF_WRONG_TYPE] = {"wrong_type", RT_PROXY_REPLACE, "$5\r\nwrong\r\n"},
    [RT_HF_GARBLED] = {"garbled", RT_PROXY_REPLACE, "?garbage\r\n"},
    [RT_HF_ERROR] = {"error", RT_PROXY_REPLACE, "-ERR injected\r\n"},
    [RT_HF_TRUNCATED] = {"truncated", RT_PROXY_TRUNCATE, NULL},
    [RT_HF_INSERT] = {"insert", RT_PROXY_INSERT, ":1\r\n"},
    [RT_HF_CUT] = {"cut", RT_PROXY_DROP_CUT, NULL},
};

static void check(rt_hostile_fault_t f) {
  if ((int)f < 0 || f >= RT_HF_COUNT)
    FAIL("no hostile fault %d", (int)f);
}

const char *rt_hostile_fault_name(rt_hostile_fault_t f) {
  check(f);
  return faults[f].name;
}

int rt_hostile_fault_parse(const char *name) {
  for (int i = 0; name != NULL && i < RT_HF_COUNT; i++)
    if (strcmp(name, faults[i].name) == 0)
      return i;
  return -1;
}

const char *rt_hostile_default_bytes(rt_hostile_fault_t f) {
  check(f);
  return faults[f].bytes;
}

rt_proxy_action_t rt_hostile_action(rt_hostile_fault_t f) {
  check(f);
  return faults[f].action;
}

void rt_hostile_arm_sha(rt_proxy_t *p, rt_hostile_fault_t f, const char *sha1, int k,
                        const char *bytes) {
  char match[128];
  check(f);
  if (sha1 == NULL || strlen(sha1) != 40)
    FAIL("rt_hostile_arm_sha: not a script SHA1: %s", sha1 ? sha1 : "(null)");
  if (k < 1)
    FAIL("rt_hostile_arm_sha: k must be 1 or more, got %d", k);
  snprintf(match, sizeof match, "EVALSHA %s", sha1);
  if (bytes == NULL)
    bytes = faults[f].bytes;
  if (faults[f].bytes == NULL && bytes != NULL)
    FAIL("rt_hostile_arm_sha: %s sends no bytes of its own", faults[f].name);
  rt_proxy_on_reply(p, match, k, faults[f].action, bytes, bytes ? strlen(bytes) : 0);
}

int rt_hostile_applied(rt_proxy_t *p) { return rt_proxy_rule_state(p) == RT_PROXY_RULE_APPLIED; }
