lk_add_test_file(SOURCE leader/leader_basic.c LABEL leader)
