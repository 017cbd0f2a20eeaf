# Fair lock: N processes on one fair lock, latchkey against the raw protocol
# loop on the same connection layer (bench/fair_handoff.c).
lk_add_bench(fair_handoff SOURCES fair_handoff.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(fair_handoff SECONDS 10 ARGS --procs 8)
endif()
