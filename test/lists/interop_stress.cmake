# Redisson interop (emulator) and mutual-exclusion stress tests.
# Needs test/harness/redisson_emu.c and test/harness/history.c in rt_harness.
lk_add_test_file(SOURCE lock/redisson_interop.c LABEL lock)
lk_add_test_file(SOURCE lock/lock_stress.c LABEL lock TIMEOUT 300)
