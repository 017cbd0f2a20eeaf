# Fair lock (label fair): FIFO order, queue hygiene, faults, multi-process
# order and mutual exclusion, Redisson emulator interop.
lk_add_test_file(SOURCE fair/fair_basic.c LABEL fair)
lk_add_test_file(SOURCE fair/fair_faults.c LABEL fair)
lk_add_test_file(SOURCE fair/fair_order.c LABEL fair TIMEOUT 180)
lk_add_test_file(SOURCE fair/fair_stress.c LABEL fair TIMEOUT 300)
lk_add_test_file(SOURCE fair/fair_interop.c LABEL fair)
lk_add_test_file(SOURCE fair/fair_mixed.c LABEL fair TIMEOUT 180)
lk_add_test_file(SOURCE fair/fair_mixed_liveness.c LABEL fair)
# What a contended fair lock costs the server (issue 17): labels fair and
# contention.
lk_add_test_file(SOURCE fair/fair_contention.c LABEL fair)
set_property(TEST fair.handoffs_cost_a_few_server_commands APPEND PROPERTY LABELS contention)

# The cases run against the Redisson emulator also carry the label interop
# (ctest -L interop), besides fair.
foreach(_lk_fair_interop IN ITEMS fair/fair_interop.c fair/fair_mixed.c
                          fair/fair_mixed_liveness.c)
  if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${_lk_fair_interop}")
    file(STRINGS "${CMAKE_CURRENT_SOURCE_DIR}/${_lk_fair_interop}" _lk_lines REGEX "^TEST\\(")
    foreach(_lk_line IN LISTS _lk_lines)
      if(_lk_line MATCHES "^TEST\\(([A-Za-z_][A-Za-z0-9_]*)\\)")
        set_property(TEST "fair.${CMAKE_MATCH_1}" APPEND PROPERTY LABELS interop)
      endif()
    endforeach()
  endif()
endforeach()
