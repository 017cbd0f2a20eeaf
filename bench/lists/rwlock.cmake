# The read/write lock under read-heavy (95/5) and write-heavy (50/50) mixes
# over 8 processes, beside the plain lock under the same load, and the read
# release's cost with idle readers; each against a raw loop sending the same
# scripts (bench/rwlock_mix.c).
lk_add_bench(rwlock_mix SOURCES rwlock_mix.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(rwlock_mix SECONDS 45 REPS 3 ARGS --seconds 2)
endif()
