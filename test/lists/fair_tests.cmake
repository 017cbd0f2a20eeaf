# Fair lock (label fair): FIFO order, queue hygiene, faults, multi-process
# order and mutual exclusion, Redisson emulator interop.
lk_add_test_file(SOURCE fair/fair_basic.c LABEL fair)
lk_add_test_file(SOURCE fair/fair_faults.c LABEL fair)
lk_add_test_file(SOURCE fair/fair_order.c LABEL fair TIMEOUT 180)
lk_add_test_file(SOURCE fair/fair_stress.c LABEL fair TIMEOUT 300)
lk_add_test_file(SOURCE fair/fair_interop.c LABEL fair)
