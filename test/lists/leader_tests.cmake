lk_add_test_file(SOURCE leader/leader_basic.c LABEL leader)
lk_add_test_file(SOURCE leader/leader_chaos.c LABEL leader TIMEOUT 180)
