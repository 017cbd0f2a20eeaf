# A hold's health (issue 28): held → at risk → safe again or lost, through
# the cutting proxy, a paused server, a failover and a slot migration.
lk_add_test_file(SOURCE health/health_basic.c LABEL health)
lk_add_test_file(SOURCE health/health_failover.c LABEL health TIMEOUT 120)
lk_add_test_file(SOURCE health/health_cluster.c LABEL health TIMEOUT 120)
