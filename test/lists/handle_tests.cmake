lk_add_test_file(SOURCE handle/handle_kinds.c LABEL handle)
