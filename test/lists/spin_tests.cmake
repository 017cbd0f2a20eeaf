# Spin mode (issue 17, docs/objects.md "Waiting"): waits by back-off with
# jitter, no pub/sub. Label spin, plus the kind's label per case.
lk_add_test_file(SOURCE spin/spin_lock.c LABEL spin)
foreach(_lk_case IN ITEMS lock_spin_wait_never_subscribes
        client_spin_applies_unless_the_acquire_says_otherwise
        lock_spin_wait_is_bounded_by_its_budget lock_spin_backoff_grows
        lock_spin_backoff_doubles_with_jitter lock_spin_cancel_and_close_mid_sleep_call_back_once
        lock_spin_bad_options_are_einval lock_spin_waiter_takes_a_lock_redisson_freed
        lock_spin_holder_release_wakes_listening_waiters
        lock_spin_and_listening_waiters_share_a_name)
  set_property(TEST "spin.${_lk_case}" APPEND PROPERTY LABELS lock)
endforeach()
# Exclusion among processes under the history checkers.
lk_add_test_file(SOURCE spin/spin_excl.c LABEL spin TIMEOUT 150)
set_property(TEST spin.lock_spin_exclusion_among_processes APPEND PROPERTY LABELS lock)
set_property(TEST spin.semaphore_spin_permits_never_exceeded_among_processes
             APPEND PROPERTY LABELS semaphore)
# The semaphores and the read/write lock.
lk_add_test_file(SOURCE spin/spin_kinds.c LABEL spin)
foreach(_lk_case IN ITEMS semaphore_spin_waits_without_subscribing
        semaphore_spin_cancel_and_close_mid_sleep_call_back_once
        semaphore_spin_bad_options_are_einval psem_spin_waits_without_subscribing)
  set_property(TEST "spin.${_lk_case}" APPEND PROPERTY LABELS semaphore)
endforeach()
set_property(TEST spin.rwlock_spin_writer_waits_for_a_reader_without_subscribing
             APPEND PROPERTY LABELS rwlock)
