# RedLock acquire latency over 5 masters beside a raw parallel fan-out of the
# same scripts (the limit) and a single-master lock (bench/multilock_redlock.c).
lk_add_bench(multilock_redlock SOURCES multilock_redlock.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(multilock_redlock SERVERS 5 SECONDS 20 REPS 3 ARGS --pairs 2000 --rounds 3)
endif()
