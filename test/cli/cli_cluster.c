/* Listing on a Redis Cluster visits every master (docs/inspect.md,
 * "Listing"): locks in slots the three masters own, listed by lk_list's
 * cursor walk (from a client that already knows the cluster, and from a
 * fresh one whose first step finds out), and by `latchkey list`. Labels
 * cli and cluster. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cluster/cluster_fixture.h"

#ifndef LK_CLI_PATH
#error "LK_CLI_PATH: the latchkey binary (test/lists/cli_tests.cmake)"
#endif

#define PER_MASTER 4

typedef struct walk_s {
  int done, status, steps, node_cursors, count;
  char cursor[64];
  char names[64][64];
} walk_t;

static void on_page(lk_client_t *c, int status, const lk_list_entry_t *e, size_t n,
                    const char *next, void *arg) {
  walk_t *w = arg;
  size_t i;
  (void)c;
  w->done = 1;
  w->status = status;
  if (status != 0)
    return;
  for (i = 0; i < n; i++) {
    ASSERT_EQ(e[i].kind, LK_INSPECT_LOCK);
    ASSERT_LT(w->count, 64);
    snprintf(w->names[w->count++], 64, "%s", e[i].name);
  }
  snprintf(w->cursor, sizeof(w->cursor), "%s", next);
  if (strchr(next, ':') != NULL)
    w->node_cursors++;
}

/* The whole walk from "0" on client c, COUNT 2 (several steps a master). */
static void walk(cfx_t *f, lk_client_t *c, walk_t *w) {
  memset(w, 0, sizeof(*w));
  snprintf(w->cursor, sizeof(w->cursor), "0");
  do {
    char cur[64];
    snprintf(cur, sizeof(cur), "%s", w->cursor);
    w->done = 0;
    ASSERT_OK(lk_list(c, "lst:*", cur, 2, on_page, w));
    rt_run_until(&f->fx.loop, &w->done, 10000);
    ASSERT_OK(w->status);
    ASSERT_LT(++w->steps, 10000);
  } while (strcmp(w->cursor, "0") != 0);
}

static int listed(const walk_t *w, const char *name) {
  int i, n = 0;
  for (i = 0; i < w->count; i++)
    n += strcmp(w->names[i], name) == 0;
  return n;
}

static void on_inspected(lk_client_t *c, int status, const lk_inspect_t *in, void *arg) {
  walk_t *w = arg;
  (void)c;
  w->done = 1;
  w->status = status;
  if (status == 0) {
    ASSERT_EQ(in->kind, LK_INSPECT_LOCK);
    ASSERT_STREQ(in->holders[0].owner, "11111111-2222-4333-8444-555555555555:1");
  }
}

static void on_closed(lk_client_t *c) { *(int *)lk_client_get_data(c) = 1; }

TEST(list_visits_every_master) {
  cfx_t f;
  char names[RT_CLUSTER_MAX_NODES * PER_MASTER][64], cmd[512], line[256], out[8192];
  int i, k, n = 0, closed = 0;
  walk_t w;
  lk_client_t *fresh;
  FILE *p;
  size_t len = 0;
  cfx_start(&f, 0, NULL);
  /* PER_MASTER locks on each master (a Redisson-layout hash each). */
  for (i = 0; i < f.n_masters; i++)
    for (k = 0; k < PER_MASTER; k++) {
      char prefix[32];
      snprintf(prefix, sizeof(prefix), "lst:%d:%d:", i, k);
      cfx_name_on(&f, f.masters[i], prefix, names[n], 64);
      freeReplyObject(rt_cmd(cfx_srv(&f, f.masters[i]), "HSET %s %s 1", names[n],
                             "11111111-2222-4333-8444-555555555555:1"));
      n++;
    }
  /* Something that is not a lock, and a name outside the pattern. */
  freeReplyObject(rt_cmd(cfx_srv(&f, f.masters[0]), "SET other 1"));

  /* A fresh client: its first step finds the cluster and walks it all. */
  fresh = cfx_client(&f, f.masters[1], NULL);
  walk(&f, fresh, &w);
  ASSERT_EQ(w.count, n);
  for (i = 0; i < n; i++)
    if (listed(&w, names[i]) != 1)
      FAIL("%s listed %d times", names[i], listed(&w, names[i]));
  ASSERT_GT(w.node_cursors, 0); /* "S:N" cursors along the way */
  lk_client_set_data(fresh, &closed);
  ASSERT_OK(lk_client_close(fresh, on_closed));
  rt_run_until(&f.fx.loop, &closed, 10000);

  /* The fixture's client, which knows the map by now, the same. */
  walk(&f, f.fx.c, &w);
  ASSERT_EQ(w.count, n);
  for (i = 0; i < n; i++)
    ASSERT_EQ(listed(&w, names[i]), 1);
  /* Inspection goes to each name's master too. */
  for (i = 0; i < n; i += PER_MASTER) {
    w.done = 0;
    ASSERT_OK(lk_inspect(f.fx.c, names[i], on_inspected, &w));
    rt_run_until(&f.fx.loop, &w.done, 10000);
    ASSERT_OK(w.status);
  }
  /* Bad cursors: a slot out of range, a plain one other than 0. */
  ASSERT_EQ(lk_list(f.fx.c, "*", "16384:0", 10, on_page, &w), LK_EINVAL);
  ASSERT_EQ(lk_list(f.fx.c, "*", "17", 10, on_page, &w), LK_EINVAL);
  ASSERT_EQ(lk_list(f.fx.c, "*", ":5", 10, on_page, &w), LK_EINVAL);

  /* latchkey list, seeded at a replica. */
  snprintf(cmd, sizeof(cmd), "%s list --count 3 --redis 127.0.0.1:%d 'lst:*' 2>&1", LK_CLI_PATH,
           rt_cluster_port(f.cl, rt_cluster_replica_of(f.cl, f.masters[2])));
  p = popen(cmd, "r");
  ASSERT_NOT_NULL(p);
  while (fgets(line, sizeof(line), p) != NULL && len + strlen(line) < sizeof(out)) {
    memcpy(out + len, line, strlen(line) + 1);
    len += strlen(line);
  }
  if (pclose(p) != 0)
    FAIL("latchkey list failed:\n%s", out);
  for (i = 0; i < n; i++) {
    char want[96];
    snprintf(want, sizeof(want), "lock    %.63s\n", names[i]);
    if (strstr(out, want) == NULL)
      FAIL("latchkey list did not show %s:\n%s", names[i], out);
  }
  cfx_finish(&f);
}
