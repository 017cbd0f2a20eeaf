# Semaphore benchmarks (bench/semaphore_bench.c): sequential pairs of both
# semaphores and 8 processes contending for 4 permits, each against a raw
# loop sending the same scripts. Starts its own pinned redis-server.
lk_add_bench(semaphore_bench SOURCES semaphore_bench.c)
