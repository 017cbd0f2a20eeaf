# The blocking API for threaded programs (include/latchkey/blocking.h,
# docs/blocking.md).
lk_add_test_file(SOURCE blocking/blocking_basic.c LABEL blocking)
lk_add_test_file(SOURCE blocking/blocking_kinds.c LABEL blocking)
lk_add_test_file(SOURCE blocking/blocking_races.c LABEL blocking)
lk_add_test_file(SOURCE blocking/blocking_redlock.c LABEL blocking)
lk_add_test_file(SOURCE blocking/blocking_handle.c LABEL blocking)
