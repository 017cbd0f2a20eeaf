/* Plain connections for the tests of the harness's own tools, which talk
 * to a server or a proxy without latchkey (issue 29: harness_selftest.c and
 * fault_tools.c each had a copy): a blocking hiredis connection and a raw
 * loopback socket. Header-only. */
#ifndef LK_TEST_HARNESS_RAW_SOCK_H
#define LK_TEST_HARNESS_RAW_SOCK_H

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "redis_server.h"
#include "test.h"

/* Blocking hiredis connection to 127.0.0.1:port with connect and I/O
 * timeouts; the test fails when it cannot connect. */
static inline redisContext *rt_connect_port(int port, int64_t timeout_ms) {
  redisContext *c = redisConnectWithTimeout("127.0.0.1", port, rt_tv_ms(timeout_ms));
  ASSERT_NOT_NULL(c);
  if (c->err)
    FAIL("connect to port %d: %s", port, c->errstr);
  ASSERT_OK(redisSetTimeout(c, rt_tv_ms(timeout_ms)));
  return c;
}

/* Raw socket to a loopback port, with a receive timeout. */
static inline int rt_raw_connect(int port, int64_t rcv_timeout_ms) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_OK(connect(fd, (struct sockaddr *)&a, sizeof a));
  struct timeval tv = rt_tv_ms(rcv_timeout_ms);
  ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  return fd;
}

/* Sends all of s (one send; the test fails on a short one). */
static inline void rt_raw_send(int fd, const char *s) {
  ASSERT_EQ(send(fd, s, strlen(s), MSG_NOSIGNAL), (ssize_t)strlen(s));
}

#endif /* LK_TEST_HARNESS_RAW_SOCK_H */
