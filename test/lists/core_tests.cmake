lk_add_test_file(SOURCE core/bad_inputs.c LABEL core)
lk_add_test_file(SOURCE core/client.c LABEL core)
lk_add_test_file(SOURCE core/unreachable.c LABEL core)
