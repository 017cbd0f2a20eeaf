# Sentinel (issue 16): discovery of the master through redis-sentinel, failover
# following, and the harness that starts sentinels and replicas.
lk_add_test_file(SOURCE sentinel/replica_harness.c LABEL sentinel NO_LATCHKEY)
lk_add_test_file(SOURCE sentinel/sentinel_harness.c LABEL sentinel NO_LATCHKEY)
lk_add_test_file(SOURCE sentinel/sentinel_discovery.c LABEL sentinel)
lk_add_test_file(SOURCE sentinel/sentinel_failover.c LABEL sentinel)
lk_add_test_file(SOURCE sentinel/sentinel_demoted.c LABEL sentinel)
# Sentinels, master and replica all on TLS: labels sentinel and tls.
lk_add_test_file(SOURCE sentinel/sentinel_tls.c LABEL sentinel)
set_property(TEST sentinel.tls_sentinels_lead_to_the_tls_master_and_a_failover_is_followed_over_tls
             APPEND PROPERTY LABELS tls)
