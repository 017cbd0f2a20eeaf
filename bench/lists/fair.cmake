# Fair lock: N processes on one fair lock, latchkey against the raw protocol
# loop on the same connection layer (bench/fair_handoff.c).
lk_add_bench(fair_handoff SOURCES fair_handoff.c)
