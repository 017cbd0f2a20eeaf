# Fair lock: N processes on one fair lock, latchkey against the raw protocol
# loop on the same connection layer (bench/fair_handoff.c).
lk_add_bench(fair_handoff SOURCES fair_handoff.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(fair_handoff SECONDS 10 ARGS --procs 8)
endif()
# B3 for the fair lock (bench/contend_fair.c): bench/contend.h's harness, so
# its lines compare with the reentrant lock's (bench/contend.c) row by row;
# order violations are a goal.
lk_add_bench(contend_fair SOURCES contend_fair.c)
if(COMMAND lk_bench_suite)
  lk_bench_suite(contend_fair SECONDS 8 REPS 3 ARGS --seconds 4)
endif()
