# Rate limiter (Redisson RRateLimiter, docs/ratelimiter.md): the window and
# its bad inputs, interop with the emulator both ways, and 4 processes
# checked by a sliding-window checker over every grant.
lk_add_test_file(SOURCE ratelimiter/ratelimiter_basic.c LABEL ratelimit)
lk_add_test_file(SOURCE ratelimiter/ratelimiter_interop.c LABEL ratelimit)
lk_add_test_file(SOURCE ratelimiter/ratelimiter_stress.c LABEL ratelimit TIMEOUT 180)
