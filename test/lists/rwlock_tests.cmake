# Read/write lock (label rwlock): basics, leases and losses, bad inputs,
# Redisson interop (emulator) and the 8-process reader/writer stress.
lk_add_test_file(SOURCE rwlock/rwlock_basic.c LABEL rwlock)
lk_add_test_file(SOURCE rwlock/rwlock_lease.c LABEL rwlock)
lk_add_test_file(SOURCE rwlock/rwlock_bad_inputs.c LABEL rwlock)
lk_add_test_file(SOURCE rwlock/rwlock_outcome.c LABEL rwlock)
lk_add_test_file(SOURCE rwlock/rwlock_interop.c LABEL rwlock)
lk_add_test_file(SOURCE rwlock/rwlock_stress.c LABEL rwlock TIMEOUT 300)
