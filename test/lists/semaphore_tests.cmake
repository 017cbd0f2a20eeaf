# Semaphores: counting (Redisson RSemaphore) and permit-expirable
# (RPermitExpirableSemaphore); interop with the emulator, faults, stress.
lk_add_test_file(SOURCE semaphore/semaphore_basic.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/psem_basic.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/semaphore_faults.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/semaphore_stress.c LABEL semaphore TIMEOUT 300)
lk_add_test_file(SOURCE semaphore/semaphore_interop.c LABEL semaphore)
# Hostile replies to semaphore scripts (issue 15): both a semaphore and a
# fault test, so each case carries the fault label too.
lk_add_test_file(SOURCE semaphore/semaphore_garbled.c LABEL semaphore)
file(STRINGS semaphore/semaphore_garbled.c _lk_garbled REGEX "^TEST\\(")
foreach(_lk_line IN LISTS _lk_garbled)
  string(REGEX REPLACE "^TEST\\(([A-Za-z0-9_]+)\\).*" "\\1" _lk_case "${_lk_line}")
  set_property(TEST "semaphore.${_lk_case}" APPEND PROPERTY LABELS fault)
endforeach()
