# Double barrier (label barrier): one process (release, rounds, late member,
# budgets, bad inputs, cancel and close) and several (release spread, a
# member killed in the middle).
lk_add_test_file(SOURCE barrier/barrier_basic.c LABEL barrier)
lk_add_test_file(SOURCE barrier/barrier_procs.c LABEL barrier TIMEOUT 180)
