# Fault injection (issue 10): the shared fault tools and history checkers,
# the fault and bad-input catalogues (docs/reliability.md) run
# against every primitive that exists, and the seeded nemesis. Label fault.
lk_add_test_file(SOURCE fault/checkers.c LABEL fault NO_LATCHKEY)
lk_add_test_file(SOURCE fault/fault_tools.c LABEL fault NO_LATCHKEY)

# The nemesis: every file under fault/workloads/ is one primitive's workload
# (it registers itself; see fault/nemesis.h). About 55 s of faults and
# checks; its own alarm is TIMEOUT - 10 s.
file(GLOB _lk_nemesis_workloads CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fault/workloads/*.c)
add_library(lk_nemesis_workloads OBJECT ${_lk_nemesis_workloads})
target_compile_definitions(lk_nemesis_workloads PRIVATE _GNU_SOURCE)
target_link_libraries(lk_nemesis_workloads PRIVATE rt_harness latchkey_testing)
lk_add_test_file(SOURCE fault/nemesis.c LABEL fault LIBS lk_nemesis_workloads TIMEOUT 240)
# Its Redis Cluster run (about 30 s) is a cluster test too.
set_property(TEST fault.nemesis_cluster APPEND PROPERTY LABELS cluster)
lk_add_test_file(SOURCE fault/lock_contract.c LABEL fault TIMEOUT 120)
lk_add_test_file(SOURCE fault/server_errors.c LABEL fault TIMEOUT 120)
lk_add_test_file(SOURCE fault/hygiene.c LABEL fault)
