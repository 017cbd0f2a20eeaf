# TLS (issue 16, docs/tls.md): redis-server with --tls-port and certificates
# the tests make with the openssl tool (test/harness/tls_certs.h). Label tls.
lk_add_test_file(SOURCE tls/tls_basic.c LABEL tls)
lk_add_test_file(SOURCE tls/tls_failures.c LABEL tls)
lk_add_test_file(SOURCE tls/tls_faults.c LABEL tls)
# A three-master cluster (with replicas) over TLS, formed as the cluster
# label's clusters are (test/harness/redis_cluster.h).
lk_add_test_file(SOURCE tls/tls_cluster.c LABEL tls TIMEOUT 180)
