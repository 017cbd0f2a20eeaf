# B3 in spin mode (issue 17; bench/contend_spin.c): the reentrant lock's
# contention run with spinning waiters (no SUBSCRIBE), default back-off
# (1..128 ms) and a 16 ms cap, beside contend's "lock" row.
lk_add_bench(contend_spin SOURCES contend_spin.c)
lk_bench_suite(contend_spin SECONDS 8 REPS 3 ARGS --seconds 4)
lk_bench_suite(contend_spin SECONDS 8 REPS 3 ARGS --seconds 4 --spin-max-ms 16)
