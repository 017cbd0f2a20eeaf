# Redis Cluster support (issue 14): slot function, slot-map parser, and the
# cluster fixture against a real 3-master + 3-replica cluster. Run on Valkey
# with LK_REDIS_SERVER=valkey-server ctest -L cluster.
lk_add_test_file(SOURCE cluster/slot_test.c LABEL cluster)
lk_add_test_file(SOURCE cluster/topology_test.c LABEL cluster)
lk_add_test_file(SOURCE cluster/fixture_test.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_lock.c LABEL cluster TIMEOUT 90)
# Sharded pub/sub: shard-local messages, subscriptions that follow their
# slot, the PING heartbeat, the classic fallback, Redisson in sharded mode.
lk_add_test_file(SOURCE cluster/cluster_pubsub.c LABEL cluster TIMEOUT 120)
lk_add_test_file(SOURCE cluster/cluster_pubsub_mode.c LABEL cluster TIMEOUT 120)
# Every primitive on names spread over the three masters (issue 14).
lk_add_test_file(SOURCE cluster/cluster_primitives.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_watchdog.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_multilock.c LABEL cluster TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_stress.c LABEL cluster TIMEOUT 90)
# Faults on a real cluster (issue 14): slot migration, failover and kill -9,
# nodes added and removed, while locks are held and waited on. Labels
# cluster and fault.
# The leader, the barrier and the rate limiter through a graceful failover;
# the leader and the barrier through kill -9 of their master.
foreach(_lk_src IN ITEMS cluster_migration cluster_failover cluster_nodes cluster_failover_recipes
                        cluster_recipes_kill9)
  lk_add_test_file(SOURCE cluster/${_lk_src}.c LABEL cluster TIMEOUT 120)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/cluster/${_lk_src}.c)
    file(STRINGS cluster/${_lk_src}.c _lk_cases REGEX "^TEST\\(")
    foreach(_lk_line IN LISTS _lk_cases)
      string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" _lk_case "${_lk_line}")
      set_property(TEST "cluster.${_lk_case}" APPEND PROPERTY LABELS fault)
    endforeach()
  endif()
endforeach()
# Replica sync (WAIT) on each master of a cluster: labels cluster and replica.
lk_add_test_file(SOURCE cluster/cluster_replica_sync.c LABEL cluster TIMEOUT 90)
foreach(_lk_case IN ITEMS replica_sync_on_each_master_gets_its_own_replicas_ack
                          replica_sync_with_one_masters_replica_paused_refuses_there_only)
  set_property(TEST "cluster.${_lk_case}" APPEND PROPERTY LABELS replica)
endforeach()
