# MultiLock and RedLock (label multilock): several real redis-servers per case.
lk_add_test_file(SOURCE multilock/multilock_basic.c LABEL multilock)
lk_add_test_file(SOURCE multilock/multilock_stress.c LABEL multilock TIMEOUT 180)
lk_add_test_file(SOURCE multilock/redlock_basic.c LABEL multilock)
lk_add_test_file(SOURCE multilock/redlock_faults.c LABEL multilock)
lk_add_test_file(SOURCE multilock/redlock_lean.c LABEL multilock)
# RedLock polls only while a fan-out's answers are due (issue 27).
lk_add_test_file(SOURCE multilock/redlock_spin.c LABEL multilock)
lk_add_test_file(SOURCE multilock/member_reuse.c LABEL multilock)
lk_add_test_file(SOURCE multilock/redlock_stress.c LABEL multilock TIMEOUT 300)
