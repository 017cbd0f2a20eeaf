/* `latchkey run --permits N NAME -- CMD` (docs/cli.md, "At most N at
 * once"): each run holds one of N permits of a permit-expirable semaphore
 * the first run creates, with the lock mode's statuses, and a lost permit
 * ends the command as a lost lease does. */
#include "tool_util.h"

/* GET key as a number (the semaphore's available permits); -1 when absent. */
static long long get_ll(rt_server_t *srv, const char *key) {
  char *v = rt_cmd_str(srv, "GET %s", key);
  long long n = v != NULL ? atoll(v) : -1;
  free(v);
  return n;
}

/* No moment with more than N commands running: each appends "start", then
 * "end" when done, and the depth is read back from the log. */
TEST(run_permits_admits_at_most_n_at_once) {
  rt_server_t *srv;
  tool_t t[5];
  char log[256], script[1024], *text, *p;
  int i, depth = 0, deepest = 0, starts = 0;
  srv = tool_server();
  path_of(log, sizeof(log), "log");
  snprintf(script, sizeof(script), "echo start >> %s; sleep 0.3; echo end >> %s", log, log);
  for (i = 0; i < 5; i++) {
    char tag[16];
    const char *args[] = {"run", "--permits", "2", "--wait", "60s", "cli:pn", "--",
                          "sh",  "-c",        script, NULL};
    snprintf(tag, sizeof(tag), "run%d", i);
    tool_start(&t[i], rt_server_port(srv), tag, args);
  }
  for (i = 0; i < 5; i++)
    ASSERT_EQ(tool_wait(&t[i]), 0);
  text = slurp(log);
  for (p = strtok(text, "\n"); p != NULL; p = strtok(NULL, "\n")) {
    if (strcmp(p, "start") == 0) {
      depth++, starts++;
      ASSERT_LE(depth, 2);
      if (depth > deepest)
        deepest = depth;
    } else {
      ASSERT_STREQ(p, "end");
      ASSERT_GT(depth, 0);
      depth--;
    }
  }
  free(text);
  ASSERT_EQ(starts, 5);
  /* Every permit is back; none is left in the lease set. */
  ASSERT_EQ(get_ll(srv, "cli:pn"), 2);
  ASSERT_EQ(rt_cmd_int(srv, "ZCARD {cli:pn}:timeout"), 0);
  printf("at most %d commands ran at once\n", deepest);
  rt_server_stop(srv);
}

/* Two runs hold both permits: a third that may not wait gets the timeout
 * status; inspect lists the two permits, the ids the commands were given;
 * a later run asking for 5 keeps the existing 2. */
TEST(run_permits_full_semaphore_times_out_and_inspect_shows_the_holders) {
  rt_server_t *srv;
  tool_t t[2];
  char stop[256], id[2][256], script[2][1024], want[128];
  int i, port;
  srv = tool_server();
  port = rt_server_port(srv);
  path_of(stop, sizeof(stop), "stop");
  for (i = 0; i < 2; i++) {
    char tag[16];
    snprintf(tag, sizeof(tag), "id%d", i);
    path_of(id[i], sizeof(id[i]), tag);
    snprintf(script[i], sizeof(script[i]),
             "echo $LATCHKEY_OWNER > %s; while [ ! -e %s ]; do sleep 0.05; done", id[i], stop);
    const char *args[] = {"run", "--permits", "2", "cli:pw", "--", "sh", "-c", script[i], NULL};
    snprintf(tag, sizeof(tag), "hold%d", i);
    tool_start(&t[i], port, tag, args);
  }
  wait_file(id[0], 10000);
  wait_file(id[1], 10000);
  ASSERT_EQ(get_ll(srv, "cli:pw"), 0);
  ASSERT_EQ(rt_cmd_int(srv, "ZCARD {cli:pw}:timeout"), 2);
  {
    const char *a[] = {"run", "--permits", "2", "--wait", "0", "cli:pw", "--", "true", NULL};
    ASSERT_EQ(tool_run(port, "third", a), 75);
  }
  {
    const char *a[] = {"inspect", "--json", "cli:pw", NULL};
    char out[256];
    ASSERT_EQ(tool_run(port, "inspect", a), 0);
    path_of(out, sizeof(out), "inspect.out");
    ASSERT(file_has(out, "\"kind\":\"psem\""));
    for (i = 0; i < 2; i++) {
      char *owner = slurp(id[i]);
      owner[strcspn(owner, "\n")] = '\0';
      ASSERT_EQ(strlen(owner), 32);
      snprintf(want, sizeof(want), "{\"id\":\"%s\",\"lease_ms\":", owner);
      ASSERT(file_has(out, want));
      free(owner);
    }
  }
  {
    FILE *f = fopen(stop, "w");
    ASSERT_NOT_NULL(f);
    fclose(f);
  }
  ASSERT_EQ(tool_wait(&t[0]), 0);
  ASSERT_EQ(tool_wait(&t[1]), 0);
  ASSERT_EQ(get_ll(srv, "cli:pw"), 2);
  {
    const char *a[] = {"run", "--permits", "5", "cli:pw", "--", "true", NULL};
    ASSERT_EQ(tool_run(port, "five", a), 0);
  }
  ASSERT_EQ(get_ll(srv, "cli:pw"), 2);
  rt_server_stop(srv);
}

/* The permit is removed while the command runs: the next renewal finds it
 * gone, the command's group is terminated and latchkey exits 79, as for a
 * lost lock. */
TEST(run_permits_lost_permit_ends_the_command_with_the_lost_status) {
  rt_server_t *srv;
  tool_t t;
  char pidf[256], script[1024];
  srv = tool_server();
  stubborn_script(script, sizeof(script), pidf, sizeof(pidf));
  {
    const char *a[] = {"run", "--permits", "1", "--lease", "1s", "--kill-after", "300ms",
                       "cli:pl", "--", "sh", "-c", script, NULL};
    tool_start(&t, rt_server_port(srv), "lost", a);
  }
  wait_file(pidf, 10000);
  ASSERT_EQ(rt_cmd_int(srv, "ZCARD {cli:pl}:timeout"), 1);
  ASSERT_EQ(rt_cmd_int(srv, "DEL {cli:pl}:timeout"), 1);
  /* The next renewal (every lease/3) finds the permit gone. */
  tool_expect_lost(&t, pidf, 10000);
  rt_server_stop(srv);
}
