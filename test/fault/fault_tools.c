/* The fault tools themselves: the RESP scanner, the proxy's reply rules,
 * pause and request counts, the server-side helpers and the worker
 * processes. Every tool a fault test relies on is shown to do what it says,
 * with a plain client (hiredis, raw sockets), no latchkey. */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proxy.h"
#include "raw_sock.h"
#include "redis_server.h"
#include "resp_scan.h"
#include "server_faults.h"
#include "test.h"
#include "workers.h"

/* ---- helpers ------------------------------------------------------------------------ */

/* Reads until want bytes arrived (or EOF / timeout): the count, 0 at EOF
 * with nothing read, -errno otherwise. */
static ssize_t raw_recv_n(int fd, char *buf, size_t len, size_t want) {
  size_t got = 0;
  for (int i = 0; i < 1000 && got < want && got + 1 < len; i++) {
    ssize_t n = recv(fd, buf + got, len - 1 - got, 0);
    if (n < 0) {
      if (got > 0)
        break;
      return -errno;
    }
    if (n == 0)
      break;
    got += (size_t)n;
  }
  buf[got] = '\0';
  return (ssize_t)got;
}

static long long reply_int(redisReply *r) {
  ASSERT_NOT_NULL(r);
  if (r->type != REDIS_REPLY_INTEGER)
    FAIL("expected an integer reply, got type %d (%s)", r->type, r->str ? r->str : "");
  long long v = r->integer;
  freeReplyObject(r);
  return v;
}

/* ---- the RESP scanner ------------------------------------------------------------------ */

/* Feeds s one byte at a time (the worst split) and counts frames. */
static int frames_bytewise(rt_resp_scan_t *s, const char *p) {
  int frames = 0;
  for (size_t i = 0; p[i] != '\0'; i++) {
    int done = 0;
    long r = rt_resp_scan(s, p + i, 1, &done);
    if (r != 1)
      return -1;
    frames += done;
  }
  return frames;
}

TEST(resp_scanner_frames_and_captures) {
  rt_resp_scan_t s;
  int done = 0;
  rt_resp_scan_init(&s, 1);
  const char *req = "*3\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n0\r\n";
  ASSERT_EQ(rt_resp_scan(&s, req, strlen(req), &done), (long)strlen(req));
  ASSERT_EQ(done, 1);
  ASSERT(rt_resp_cap_is(&s, 0, "evalsha", 7));
  ASSERT(rt_resp_cap_is(&s, 1, "ABC", 3));
  ASSERT_EQ(s.top_count, 3);

  /* Two frames in one piece: the scan stops after the first. */
  const char *two = "*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
  long r = rt_resp_scan(&s, two, strlen(two), &done);
  ASSERT_EQ(r, 14);
  ASSERT_EQ(done, 1);
  ASSERT(rt_resp_cap_is(&s, 0, "ping", 4));
  r = rt_resp_scan(&s, two + 14, strlen(two) - 14, &done);
  ASSERT_EQ(done, 1);
  ASSERT(rt_resp_cap_is(&s, 0, "get", 3));

  /* Inline commands. */
  ASSERT_EQ(frames_bytewise(&s, "PING\r\nECHO  hello\r\n"), 2);
  ASSERT(rt_resp_cap_is(&s, 0, "echo", 4));
  ASSERT(rt_resp_cap_is(&s, 1, "hello", 5));

  /* Replies: nested arrays, nil, empty, errors, a push, byte by byte. */
  rt_resp_scan_init(&s, 0);
  ASSERT_EQ(frames_bytewise(&s, "*2\r\n*2\r\n:1\r\n$-1\r\n*0\r\n"), 1);
  ASSERT_EQ(frames_bytewise(&s, "$-1\r\n*-1\r\n+OK\r\n-ERR bad thing\r\n:42\r\n$0\r\n\r\n"), 6);
  ASSERT_EQ(frames_bytewise(&s, "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\n0\r\n"), 1);
  ASSERT(rt_resp_cap_is(&s, 0, "message", 7));
  ASSERT_EQ(s.top_count, 3);
  /* A hostile header is just a number. */
  rt_resp_scan_init(&s, 0);
  r = rt_resp_scan(&s, "*100000000\r\n", 12, &done);
  ASSERT_EQ(r, 12);
  ASSERT_EQ(done, 0);
  /* Not RESP. */
  rt_resp_scan_init(&s, 0);
  ASSERT_EQ(rt_resp_scan(&s, "hello\r\n", 7, &done), -1);
  ASSERT(s.broken);
}

/* ---- proxy reply rules --------------------------------------------------------------------- */

typedef struct {
  rt_server_t *s;
  rt_proxy_t *p;
} px_t;

static void px_start(px_t *x) {
  x->s = rt_server_start(NULL);
  ASSERT_NOT_NULL(x->s);
  x->p = rt_proxy_start(rt_server_port(x->s));
  ASSERT_NOT_NULL(x->p);
}

static void px_stop(px_t *x) {
  rt_proxy_stop(x->p);
  rt_server_stop(x->s);
}

/* The server ran the command whose reply was dropped; what came before was
 * delivered; then the connection closed. Counting starts when armed and
 * only matching requests count. */
TEST(proxy_drop_cut_kth_matching_reply) {
  px_t x;
  px_start(&x);
  redisContext *c = rt_connect_port(rt_proxy_port(x.p), rt_scaled_ms(3000));
  ASSERT_EQ(reply_int(redisCommand(c, "INCR a")), 1);
  rt_proxy_on_reply(x.p, "INCR", 2, RT_PROXY_DROP_CUT, NULL, 0);
  ASSERT_EQ(rt_proxy_rule_state(x.p), RT_PROXY_RULE_ARMED);
  ASSERT_EQ(reply_int(redisCommand(c, "INCR a")), 2); /* 1st match */
  ASSERT_EQ(reply_int(redisCommand(c, "INCRBY b 5")), 5); /* no match */
  /* Pipelined: the 2nd INCR's reply is dropped, the GET before it arrives. */
  ASSERT_EQ(redisAppendCommand(c, "GET b"), REDIS_OK);
  ASSERT_EQ(redisAppendCommand(c, "INCR a"), REDIS_OK);
  ASSERT_EQ(redisAppendCommand(c, "PING"), REDIS_OK);
  void *rv = NULL;
  ASSERT_EQ(redisGetReply(c, &rv), REDIS_OK);
  ASSERT_STREQ(((redisReply *)rv)->str, "5");
  freeReplyObject(rv);
  ASSERT_EQ(redisGetReply(c, &rv), REDIS_ERR); /* EOF instead of the reply */
  ASSERT_EQ(c->err, REDIS_ERR_EOF);
  redisFree(c);
  ASSERT_EQ(rt_proxy_rule_state(x.p), RT_PROXY_RULE_APPLIED);
  char *a = rt_cmd_str(x.s, "GET a");
  ASSERT_STREQ(a, "3"); /* it did run */
  free(a);
  ASSERT_EQ(rt_proxy_requests(x.p, "INCR"), 3);
  ASSERT_EQ(rt_proxy_requests(x.p, "incrby b"), 1);
  ASSERT_EQ(rt_proxy_requests(x.p, "INCRBY c"), 0);
  px_stop(&x);
}

TEST(proxy_drop_stall_keeps_connection_silent) {
  px_t x;
  px_start(&x);
  redisContext *c = rt_connect_port(rt_proxy_port(x.p), 300);
  rt_proxy_on_reply(x.p, NULL, 1, RT_PROXY_DROP_STALL, NULL, 0);
  int64_t t0 = rt_now_ms();
  ASSERT_NULL(redisCommand(c, "SET k v"));
  ASSERT_GE(rt_now_ms() - t0, 290); /* a timeout, not a close */
  ASSERT_EQ(c->err, REDIS_ERR_IO);
  redisFree(c);
  char *v = rt_cmd_str(x.s, "GET k");
  ASSERT_STREQ(v, "v");
  free(v);
  px_stop(&x);
}

TEST(proxy_hold_and_release_keep_order) {
  px_t x;
  px_start(&x);
  int fd = rt_raw_connect(rt_proxy_port(x.p), rt_scaled_ms(2000));
  char buf[256];
  rt_proxy_on_reply(x.p, "ECHO", 1, RT_PROXY_HOLD, NULL, 0);
  rt_raw_send(fd, "PING\r\nECHO one\r\nECHO two\r\n");
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 7), 7);
  ASSERT_STREQ(buf, "+PONG\r\n");
  /* Held: nothing more comes while held. */
  struct timeval tv = rt_tv_ms(150);
  ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 1), -EAGAIN);
  ASSERT_EQ(rt_cmd_int(x.s, "EXISTS nothing"), 0); /* the server is not blocked */
  rt_proxy_release(x.p);
  tv = rt_tv_ms(rt_scaled_ms(2000));
  ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 18), 18);
  ASSERT_STREQ(buf, "$3\r\none\r\n$3\r\ntwo\r\n");
  rt_raw_send(fd, "ECHO three\r\n"); /* released: forwarded as usual */
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 11), 11);
  close(fd);
  px_stop(&x);
}

TEST(proxy_replace_sends_other_bytes) {
  px_t x;
  px_start(&x);
  redisContext *c = rt_connect_port(rt_proxy_port(x.p), rt_scaled_ms(3000));
  const char fake[] = "+NOTANINT\r\n";
  rt_proxy_on_reply(x.p, "INCR", 1, RT_PROXY_REPLACE, fake, strlen(fake));
  redisReply *r = redisCommand(c, "INCR n");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_STATUS);
  ASSERT_STREQ(r->str, "NOTANINT");
  freeReplyObject(r);
  ASSERT_EQ(reply_int(redisCommand(c, "INCR n")), 2); /* aligned again */
  redisFree(c);
  px_stop(&x);
}

/* INSERT puts an unsolicited reply before the real one: a FIFO client then
 * reads every later reply one request late. */
TEST(proxy_insert_adds_a_reply_before_the_real_one) {
  px_t x;
  px_start(&x);
  int fd = rt_raw_connect(rt_proxy_port(x.p), rt_scaled_ms(2000));
  char buf[256];
  const char extra[] = "+EXTRA\r\n";
  rt_proxy_on_reply(x.p, "ECHO", 2, RT_PROXY_INSERT, extra, strlen(extra));
  rt_raw_send(fd, "ECHO one\r\nECHO two\r\nECHO three\r\n");
  /* one, the extra reply, two, three: 9 + 8 + 9 + 11 bytes. */
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 37), 37);
  ASSERT_STREQ(buf, "$3\r\none\r\n+EXTRA\r\n$3\r\ntwo\r\n$5\r\nthree\r\n");
  ASSERT_EQ(rt_proxy_rule_state(x.p), RT_PROXY_RULE_APPLIED);
  close(fd);
  px_stop(&x);
}

/* TRUNCATE delivers the replies before, half of the k-th, then EOF; the
 * command itself ran on the server. */
TEST(proxy_truncate_sends_half_a_reply_then_cuts) {
  px_t x;
  px_start(&x);
  int fd = rt_raw_connect(rt_proxy_port(x.p), rt_scaled_ms(2000));
  char buf[256];
  rt_proxy_on_reply(x.p, "ECHO", 2, RT_PROXY_TRUNCATE, NULL, 0);
  rt_raw_send(fd, "ECHO one\r\nECHO three\r\nECHO four\r\n");
  /* one (9 bytes), then 5 of "$5\r\nthree\r\n" (11), then EOF. */
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 64), 14);
  ASSERT_STREQ(buf, "$3\r\none\r\n$5\r\nt");
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 1), 0); /* EOF, not a timeout */
  ASSERT_EQ(rt_proxy_rule_state(x.p), RT_PROXY_RULE_APPLIED);
  close(fd);
  px_stop(&x);
}

/* Subscribe confirmations are replies; messages are not: a rule on the
 * reply to the 2nd command of a subscribed connection skips the pushes. */
TEST(proxy_rules_skip_pubsub_pushes) {
  px_t x;
  px_start(&x);
  int fd = rt_raw_connect(rt_proxy_port(x.p), rt_scaled_ms(2000));
  char buf[512];
  const char fake[] = "*2\r\n$4\r\npong\r\n$4\r\nFAKE\r\n";
  rt_proxy_on_reply(x.p, "PING", 1, RT_PROXY_REPLACE, fake, strlen(fake));
  rt_raw_send(fd, "SUBSCRIBE c1 c2\r\n");
  ASSERT_GT(raw_recv_n(fd, buf, sizeof buf, 60), 0);
  ASSERT_NOT_NULL(strstr(buf, "c2"));
  ASSERT_EQ(rt_cmd_int(x.s, "PUBLISH c1 hello"), 1);
  ASSERT_GT(raw_recv_n(fd, buf, sizeof buf, 36), 0);
  ASSERT_NOT_NULL(strstr(buf, "hello"));
  rt_raw_send(fd, "PING\r\n");
  ASSERT_GT(raw_recv_n(fd, buf, sizeof buf, 22), 0);
  ASSERT_NOT_NULL(strstr(buf, "FAKE"));
  close(fd);
  px_stop(&x);
}

TEST(proxy_pause_holds_then_delivers) {
  px_t x;
  px_start(&x);
  int fd = rt_raw_connect(rt_proxy_port(x.p), 150);
  char buf[256];
  rt_proxy_pause(x.p, RT_PROXY_UP, 1);
  rt_raw_send(fd, "INCR p\r\n");
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 1), -EAGAIN);
  char *v = rt_cmd_str(x.s, "GET p");
  ASSERT_NULL(v); /* never reached the server */
  rt_proxy_pause(x.p, RT_PROXY_DOWN, 1);
  rt_proxy_pause(x.p, RT_PROXY_UP, 0);
  int64_t end = rt_now_ms() + rt_scaled_ms(2000);
  while ((v = rt_cmd_str(x.s, "GET p")) == NULL && rt_now_ms() < end)
    rt_sleep_ms(2);
  ASSERT_STREQ(v, "1"); /* ran; its reply is held on the way back */
  free(v);
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 1), -EAGAIN);
  rt_proxy_pause(x.p, RT_PROXY_BOTH, 0);
  struct timeval tv = rt_tv_ms(rt_scaled_ms(2000));
  ASSERT_OK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
  ASSERT_EQ(raw_recv_n(fd, buf, sizeof buf, 4), 4);
  ASSERT_STREQ(buf, ":1\r\n");
  close(fd);
  px_stop(&x);
}

/* ---- server-side helpers ------------------------------------------------------------------- */

TEST(server_fault_helpers) {
  rt_server_t *s = rt_server_start(NULL);
  ASSERT_NOT_NULL(s);
  redisContext *a = rt_connect_port(rt_server_port(s), rt_scaled_ms(3000));
  redisContext *b = rt_connect_port(rt_server_port(s), rt_scaled_ms(3000));
  freeReplyObject(redisCommand(a, "CLIENT SETNAME victim"));
  freeReplyObject(redisCommand(b, "SUBSCRIBE ch"));
  ASSERT_EQ(rt_server_numsub(s, "ch"), 1);
  long long ids[4];
  ASSERT_EQ(rt_server_client_ids_named(s, "victim", ids, 4), 1);
  ASSERT_EQ(rt_server_kill_clients_named(s, "victim"), 1);
  ASSERT_NULL(redisCommand(a, "PING"));
  ASSERT_EQ(rt_server_kill_clients_of_type(s, "pubsub"), 1);
  ASSERT_EQ(rt_server_numsub(s, "ch"), 0);
  redisFree(a);
  redisFree(b);

  /* Command statistics and SCRIPT FLUSH. */
  rt_server_reset_stats(s);
  char *sha = rt_cmd_str(s, "SCRIPT LOAD %s", "return 1");
  ASSERT_NOT_NULL(sha);
  ASSERT_EQ(rt_cmd_int(s, "EVALSHA %s 0", sha), 1);
  ASSERT_EQ(rt_server_cmd_calls(s, "evalsha"), 1);
  ASSERT_EQ(rt_server_cmd_calls(s, "script|load"), 1);
  rt_server_script_flush(s);
  redisReply *r = rt_cmd(s, "EVALSHA %s 0", sha);
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  ASSERT(strncmp(r->str, "NOSCRIPT", 8) == 0);
  freeReplyObject(r);
  free(sha);

  /* Memory limit: writes refused under noeviction. */
  rt_server_maxmemory(s, 1, "noeviction");
  r = rt_cmd(s, "SET k v");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  ASSERT(strncmp(r->str, "OOM", 3) == 0);
  freeReplyObject(r);
  rt_server_maxmemory(s, 0, "noeviction");
  ASSERT_GE(rt_server_info_int(s, "stats", "evicted_keys"), 0);

  /* A restricted user. */
  rt_server_acl_user(s, "noeval", "pw", "~* &* +@all -eval -evalsha");
  redisContext *u = rt_connect_port(rt_server_port(s), rt_scaled_ms(3000));
  freeReplyObject(redisCommand(u, "AUTH noeval pw"));
  r = redisCommand(u, "EVAL %s 0", "return 1");
  ASSERT_NOT_NULL(r);
  ASSERT_EQ(r->type, REDIS_REPLY_ERROR);
  ASSERT(strncmp(r->str, "NOPERM", 6) == 0);
  freeReplyObject(r);
  redisFree(u);

  /* CLIENT PAUSE blocks writes from others until unpaused. */
  rt_server_client_pause(s, 5000, "WRITE");
  redisContext *w = rt_connect_port(rt_server_port(s), 200);
  ASSERT_NULL(redisCommand(w, "SET x 1")); /* blocked: times out */
  ASSERT_EQ(rt_server_count_keys(s, "x"), 0); /* reads still served */
  rt_server_client_unpause(s);
  redisFree(w);
  rt_server_stop(s);
}

TEST(server_restart_with_and_without_persistence) {
  rt_server_opts_t o;
  rt_server_opts_init(&o);
  o.appendonly = 1;
  rt_server_t *s = rt_server_start(&o);
  ASSERT_NOT_NULL(s);
  free(rt_cmd_str(s, "SET kept 1"));
  ASSERT_OK(rt_server_restart(s));
  ASSERT_EQ(rt_server_count_keys(s, "kept"), 1);
  rt_server_set_appendonly(s, 0);
  ASSERT_OK(rt_server_restart(s));
  ASSERT_EQ(rt_server_count_keys(s, "kept"), 0);
  rt_server_stop(s);
}

/* ---- workers ------------------------------------------------------------------------------- */

static void worker_exit_code(int index, void *arg) {
  (void)arg;
  exit(10 + index);
}

static void worker_spin(int index, void *arg) {
  (void)index;
  int fd = *(int *)arg;
  /* Writes a byte every 2 ms until killed (bounded: 60 s). */
  for (int i = 0; i < 30000; i++) {
    if (write(fd, "x", 1) != 1)
      _exit(3);
    rt_sleep_ms(2);
  }
  _exit(4);
}

TEST(workers_exit_stop_continue_kill) {
  rt_worker_t w[2];
  ASSERT_OK(rt_worker_start(&w[0], 0, worker_exit_code, NULL));
  ASSERT_OK(rt_worker_start(&w[1], 1, worker_exit_code, NULL));
  ASSERT_EQ(rt_workers_wait(w, 2, rt_scaled_ms(5000)), 0);
  ASSERT_EQ(rt_worker_exit_code(&w[0]), 10);
  ASSERT_EQ(rt_worker_exit_code(&w[1]), 11);
  ASSERT_NE(w[0].cpu, -2);

  int pfd[2];
  ASSERT_OK(pipe(pfd));
  rt_worker_t sp;
  ASSERT_OK(rt_worker_start(&sp, 0, worker_spin, &pfd[1]));
  char buf[64];
  ASSERT_EQ(read(pfd[0], buf, 1), 1);
  rt_worker_stop(&sp);
  ASSERT(sp.stopped);
  /* Drain what was written before the stop; then nothing more comes. */
  for (int i = 0; i < 100000; i++) {
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(pfd[0], &rs);
    struct timeval z = {0, 0};
    if (select(pfd[0] + 1, &rs, NULL, NULL, &z) <= 0)
      break;
    ASSERT_GT(read(pfd[0], buf, sizeof buf), 0);
  }
  fd_set rs;
  FD_ZERO(&rs);
  FD_SET(pfd[0], &rs);
  struct timeval wait = {0, 100000};
  ASSERT_EQ(select(pfd[0] + 1, &rs, NULL, NULL, &wait), 0); /* stopped: silent */
  rt_worker_cont(&sp);
  ASSERT_EQ(read(pfd[0], buf, 1), 1); /* writing again */
  rt_worker_kill(&sp);
  ASSERT_EQ(rt_worker_exit_code(&sp), 128 + SIGKILL);
  close(pfd[0]);
  close(pfd[1]);
}
