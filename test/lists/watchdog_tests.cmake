# Watchdog: lease renewal, lost-lease notification, fencing tokens.
lk_add_test_file(SOURCE watchdog/watchdog_basic.c LABEL watchdog)
lk_add_test_file(SOURCE watchdog/watchdog_faults.c LABEL watchdog)
lk_add_test_file(SOURCE watchdog/watchdog_scale.c LABEL watchdog TIMEOUT 300)
# The watchdog on a cluster (issue 14): renewal chunks of one class and one
# slot, verification of the slots whose master changed. Its cluster_* cases
# carry both labels.
lk_add_test_file(SOURCE watchdog/watchdog_cluster.c LABEL watchdog)
get_directory_property(_lk_wd_tests TESTS)
foreach(_lk_t IN LISTS _lk_wd_tests)
  if(_lk_t MATCHES "^watchdog\\.cluster_")
    set_tests_properties(${_lk_t} PROPERTIES LABELS "watchdog;cluster")
  endif()
endforeach()
