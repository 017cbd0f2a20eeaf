# Non-reentrant acquires of the lock and the fair lock (opts.reentrant = 0),
# wire compatible with Redisson 4.4's non-reentrant locks (issue 28, item 1).
lk_add_test_file(SOURCE nonreentrant/nonreentrant_lock.c LABEL nonreentrant)
lk_add_test_file(SOURCE nonreentrant/nonreentrant_fair.c LABEL nonreentrant)
# One case on a 3-master cluster: labels nonreentrant and cluster.
lk_add_test_file(SOURCE nonreentrant/nonreentrant_cluster.c LABEL nonreentrant TIMEOUT 90)
if(TEST nonreentrant.cluster_refusals_and_redisson_handover)
  set_property(TEST nonreentrant.cluster_refusals_and_redisson_handover APPEND PROPERTY LABELS cluster)
endif()
