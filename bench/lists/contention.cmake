# B3L, contention inside one process (issue 17; bench/contend_local.c):
# server commands and (S)SUBSCRIBE per acquisition, 8 objects and 1000
# waiters on one name.
lk_add_bench(contend_local SOURCES contend_local.c)
lk_bench_suite(contend_local SECONDS 8 REPS 3 ARGS --seconds 4)
lk_bench_suite(contend_local SECONDS 8 REPS 1 ARGS --seconds 4 --waiters 1000)
