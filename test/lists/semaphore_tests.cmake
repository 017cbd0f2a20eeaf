# Semaphores: counting (Redisson RSemaphore) and permit-expirable
# (RPermitExpirableSemaphore); interop with the emulator, faults, stress.
lk_add_test_file(SOURCE semaphore/semaphore_basic.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/psem_basic.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/semaphore_faults.c LABEL semaphore)
lk_add_test_file(SOURCE semaphore/semaphore_stress.c LABEL semaphore TIMEOUT 300)
lk_add_test_file(SOURCE semaphore/semaphore_interop.c LABEL semaphore)
