lk_add_test_file(SOURCE lock/lock_basic.c LABEL lock)
lk_add_test_file(SOURCE lock/lock_faults.c LABEL lock)
lk_add_test_file(SOURCE lock/lock_lean.c LABEL lock)
