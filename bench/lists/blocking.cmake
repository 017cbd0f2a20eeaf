# The blocking API's hand-off against the async API in the same run: one
# thread's sequential pairs, 64 threads on 64 names vs 64 in flight, and the
# wake-up from a release in another process (bench/blocking_handoff.c).
lk_add_bench(blocking_handoff SOURCES blocking_handoff.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(blocking_handoff SECONDS 60 REPS 1 ARGS --rounds 3)
endif()
