# Replica sync (docs/replica-sync.md): WAIT / WAITAOF after a grant, on a
# master with one replica; the failover demonstration is here too.
lk_add_test_file(SOURCE replica/replica_sync.c LABEL replica)
# A WAIT that meets the granting master already demoted (a failover race).
lk_add_test_file(SOURCE replica/replica_sync_demoted.c LABEL replica)
