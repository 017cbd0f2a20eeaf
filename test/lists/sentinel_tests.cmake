# Sentinel (issue 16): discovery of the master through redis-sentinel, failover
# following, and the harness that starts sentinels and replicas.
lk_add_test_file(SOURCE sentinel/replica_harness.c LABEL sentinel NO_LATCHKEY)
lk_add_test_file(SOURCE sentinel/sentinel_harness.c LABEL sentinel NO_LATCHKEY)
lk_add_test_file(SOURCE sentinel/sentinel_discovery.c LABEL sentinel)
lk_add_test_file(SOURCE sentinel/sentinel_failover.c LABEL sentinel)
lk_add_test_file(SOURCE sentinel/sentinel_demoted.c LABEL sentinel)
