# Redis Cluster support (issue 14): slot function, slot-map parser, and the
# cluster fixture against a real 3-master + 3-replica cluster. Run on Valkey
# with LK_REDIS_SERVER=valkey-server ctest -L cluster.
lk_add_test_file(SOURCE cluster/slot_test.c LABEL cluster)
lk_add_test_file(SOURCE cluster/topology_test.c LABEL cluster)
lk_add_test_file(SOURCE cluster/fixture_test.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_lock.c LABEL cluster TIMEOUT 90)
# Every primitive on names spread over the three masters (issue 14).
lk_add_test_file(SOURCE cluster/cluster_primitives.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_watchdog.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_multilock.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_stress.c LABEL cluster TIMEOUT 90)
