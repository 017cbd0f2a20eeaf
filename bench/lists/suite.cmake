# The suite's own programs (issue 9; bench/README.md). tools/bench.sh runs
# raw, lock_seq and raw_seq itself, interleaved in every round (L, B1, B2);
# the programs registered with lk_bench_suite run through the manifest like
# every other area's.
lk_add_bench(raw SOURCES raw.c)
lk_add_bench(contend SOURCES contend.c)
lk_add_bench(cost SOURCES cost.c)

# B3, the reentrant lock under contention (bench/contend.h), then its
# same-run yardstick, the minimal poll loop (bench/contend_poll.c): right
# after it in every round, so the two run interleaved under the same load.
lk_add_bench(contend_poll SOURCES contend_poll.c)
lk_bench_suite(contend SECONDS 8 REPS 3 ARGS --seconds 4)
lk_bench_suite(contend_poll SECONDS 8 REPS 3 ARGS --seconds 4)
# B6, allocations per pair and bytes per object and waiter.
lk_bench_suite(cost SECONDS 15 REPS 1)
# B5, the watchdog with 100 000 held locks (its target: lists/watchdog.cmake).
lk_bench_suite(watchdog_scale SECONDS 20 REPS 1 ARGS --locks 100000)
# B10, what issue 28's features cost the server per acquisition (commands,
# commandstats usec and CPU per pair) beside a plain SET, in one run.
lk_add_bench(feature_cost SOURCES feature_cost.c)
lk_bench_suite(feature_cost SECONDS 30 REPS 1)
