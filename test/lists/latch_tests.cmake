# Countdown latch (label latch): basics, strict mode, faults, bad inputs,
# Redisson interop (emulator) and multi-process stress.
lk_add_test_file(SOURCE latch/latch_basic.c LABEL latch)
lk_add_test_file(SOURCE latch/latch_strict.c LABEL latch)
lk_add_test_file(SOURCE latch/latch_faults.c LABEL latch)
lk_add_test_file(SOURCE latch/latch_bad_inputs.c LABEL latch)
lk_add_test_file(SOURCE latch/latch_interop.c LABEL latch)
lk_add_test_file(SOURCE latch/latch_stress.c LABEL latch TIMEOUT 180)
