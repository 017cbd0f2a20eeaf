# Contention costs (issue 17): wake one waiter per process, no subscribe
# churn. Labels contention and core.
lk_add_test_file(SOURCE core/contention_wake.c LABEL contention)
foreach(_lk_case IN ITEMS handoffs_cost_a_few_commands processes_thin_their_tries watcher_is_not_a_queue
        eight_objects_subscribe_once
        busy_name_subscribed_once_then_unsubscribed linger_zero_unsubscribes_each_time
        linger_cap_unsubscribes_the_oldest canceled_woken_waiter_passes_the_wake)
  set_property(TEST "contention.${_lk_case}" APPEND PROPERTY LABELS core)
endforeach()
# The same on a cluster (sharded pub/sub): labels contention and cluster.
lk_add_test_file(SOURCE core/contention_cluster.c LABEL contention TIMEOUT 90)
set_property(TEST contention.sharded_busy_name_subscribed_once_then_unsubscribed
             APPEND PROPERTY LABELS cluster)
# The other waiting kinds (read/write lock writers, semaphore, permit
# semaphore): scripts per handoff in one process and across clients.
lk_add_test_file(SOURCE core/contention_kinds.c LABEL contention TIMEOUT 240)
foreach(_lk_case IN ITEMS lock_one_process lock_across_clients)
  set_property(TEST "contention.${_lk_case}" APPEND PROPERTY LABELS lock)
endforeach()
foreach(_lk_case IN ITEMS rwlock_writers_one_process rwlock_writers_across_clients)
  set_property(TEST "contention.${_lk_case}" APPEND PROPERTY LABELS rwlock)
endforeach()
foreach(_lk_case IN ITEMS semaphore_one_process semaphore_across_clients psem_one_process
        psem_across_clients semaphore_release_wakes_a_small_and_a_large_waiter)
  set_property(TEST "contention.${_lk_case}" APPEND PROPERTY LABELS semaphore)
endforeach()
# Busy polling (an opt-in client option that trades client CPU for latency
# and server wake-ups): labels contention and core.
lk_add_test_file(SOURCE core/busy_poll.c LABEL contention)
foreach(_lk_case IN ITEMS busy_poll_spins_while_a_reply_is_outstanding
        busy_poll_stops_when_its_window_closes busy_poll_bad_values_are_einval)
  set_property(TEST "contention.${_lk_case}" APPEND PROPERTY LABELS core)
endforeach()
