# Rate limiter: grants per second, one at a time and 64 in flight, against a
# raw hiredis loop sending the same script (bench/ratelimiter_bench.c).
lk_add_bench(ratelimiter_bench SOURCES ratelimiter_bench.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(ratelimiter_bench SECONDS 20 REPS 3 ARGS --grants 30000 --rounds 3)
endif()
