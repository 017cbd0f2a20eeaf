/* Guarded writes on a 3-master cluster: the write goes to the master of
 * the lock's slot (a name the seed does not own) and applies there; a key
 * in another slot is refused before anything is sent (LK_ECROSSSLOT), as
 * the cluster would refuse the script (CROSSSLOT) or run it on the wrong
 * node. */
#include <string.h>

#include "../cluster/cluster_fixture.h"

static void cb(lk_lock_t *l, int status, void *arg) { sx_cb(l, status, arg); }

TEST(cluster_write_on_the_names_master_and_other_slot_refused) {
  cfx_t f;
  char lname[64], key[96], other[96];
  sx_t s;
  lk_client_opts_t o;
  lk_client_opts_init(&o);
  cfx_start(&f, 0, &o);
  cfx_name_on(&f, f.masters[2], "g-cl-", lname, sizeof lname);
  rt_server_t *lsrv = cfx_srv(&f, f.masters[2]);
  snprintf(key, sizeof key, "{%s}:data", lname);
  snprintf(other, sizeof other, "%s:data", lname); /* hashed whole: another slot */

  lk_lock_t *l = fx_lock(&f.fx, lname);
  const char *set[] = {"SET", key, "v1"};
  const char *bad[] = {"SET", other, "v1"};
  lk_guarded_op_t op = {.argc = 3, .argv = set};
  ASSERT_EQ(sx_guarded(&f.fx, l, &op, NULL), LK_EGUARD);

  ASSERT_OK(sx_acquire(&f.fx, l, 0, LK_LEASE_DEFAULT));
  ASSERT_OK(sx_guarded(&f.fx, l, &op, NULL));
  char *v = rt_cmd_str(lsrv, "GET %s", key);
  ASSERT_STREQ(v, "v1");
  free(v);
  /* A caller's script, routed by the lock's key too. */
  const char *keys[] = {key};
  op.script = "return redis.call('append', KEYS[1], 'x')";
  op.nkeys = 1;
  op.argc = 1;
  op.argv = keys;
  int64_t result;
  ASSERT_OK(sx_guarded(&f.fx, l, &op, &result));
  ASSERT_EQ(result, 3);

  memset(&op, 0, sizeof(op));
  op.argc = 3;
  op.argv = bad;
  memset(&s, 0, sizeof(s));
  ASSERT_EQ(lk_lock_guarded(l, &op, cb, &s), LK_ECROSSSLOT);
  ASSERT_NOT_NULL(strstr(lk_lock_error_text(l), "cluster slot"));
  fx_spin(&f.fx, 20);
  ASSERT_EQ(s.calls, 0);
  ASSERT_OK(sx_run(&f.fx, lk_lock_release, l, NULL));
  cfx_finish_locks(&f, (lk_lock_t *[]){l, NULL});
}
