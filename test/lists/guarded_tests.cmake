# Writes guarded by the lock (issue 28, item 3; docs/guarded.md).
lk_add_test_file(SOURCE guarded/guarded_lock.c LABEL guarded)
lk_add_test_file(SOURCE guarded/guarded_pause.c LABEL guarded TIMEOUT 90)
# One case on a 3-master cluster: labels guarded and cluster.
lk_add_test_file(SOURCE guarded/guarded_cluster.c LABEL guarded TIMEOUT 90)
if(TEST guarded.cluster_write_on_the_names_master_and_other_slot_refused)
  set_property(TEST guarded.cluster_write_on_the_names_master_and_other_slot_refused APPEND PROPERTY LABELS cluster)
endif()
