# Countdown latch: wake-up latency from the final count_down to each of N
# awaiters, against a raw hiredis loop sending the same scripts (the limit,
# measured in the same run; bench/latch_wake.c).
lk_add_bench(latch_wake SOURCES latch_wake.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(latch_wake SECONDS 30 ARGS --awaiters 50 --rounds 200)
endif()
