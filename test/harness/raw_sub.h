/* A raw subscriber on a test server's channel, to see exactly what gets
 * published, and its checks. Macros, so a failure names the caller's line. */
#ifndef RT_RAW_SUB_H
#define RT_RAW_SUB_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#include "redisson_emu.h"
#include "test.h"

static inline redisContext *rs_subscribe_at(const char *file, int line, int port,
                                            const char *channel) {
  redisContext *sub = rt_rlock_connect(port);
  redisReply *r = redisCommand(sub, "SUBSCRIBE %s", channel);
  if (r == NULL)
    rt_fail_at(file, line, "ASSERT_NOT_NULL(%s): got NULL", "r");
  if (r->type != REDIS_REPLY_ARRAY)
    rt_fail_cmp_(file, line, "r->type", "==", "REDIS_REPLY_ARRAY", r->type, REDIS_REPLY_ARRAY);
  freeReplyObject(r);
  return sub;
}

/* The next message on sub (within 2 s, scaled) carries payload, and came on
 * channel unless channel is NULL. */
static inline void rs_expect_message_at(const char *file, int line, redisContext *sub,
                                        const char *channel, const char *payload) {
  redisReply *m = rt_sub_next_message(sub, rt_scaled_ms(2000));
  if (m == NULL) {
    if (channel != NULL)
      rt_fail_at(file, line, "no message on %s", channel);
    rt_fail_at(file, line, "no message (wanted \"%s\")", payload);
  }
  if (channel != NULL && !rt_streq_(m->element[1]->str, channel))
    rt_fail_streq_(file, line, "m->element[1]->str", "channel", m->element[1]->str, channel);
  if (!rt_streq_(m->element[2]->str, payload))
    rt_fail_streq_(file, line, "m->element[2]->str", "payload", m->element[2]->str, payload);
  freeReplyObject(m);
}

/* Nothing is published on sub for ms (unscaled). */
static inline void rs_expect_no_message_at(const char *file, int line, redisContext *sub,
                                           int64_t ms) {
  redisReply *m = rt_sub_next_message(sub, ms);
  if (m != NULL)
    rt_fail_at(file, line, "unexpected message \"%s\" on %s", m->element[2]->str,
               m->element[1]->str);
}

/* fx: any fixture whose server is fx->srv. */
#define rs_subscribe(fx, channel)                                              \
  rs_subscribe_at(__FILE__, __LINE__, rt_server_port((fx)->srv), (channel))
#define rs_expect_message(sub, payload)                                        \
  rs_expect_message_at(__FILE__, __LINE__, (sub), NULL, (payload))
#define rs_expect_message_on(sub, channel, payload)                            \
  rs_expect_message_at(__FILE__, __LINE__, (sub), (channel), (payload))
#define rs_expect_no_message(sub, ms) rs_expect_no_message_at(__FILE__, __LINE__, (sub), (ms))

#endif
