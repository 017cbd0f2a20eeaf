# Odd names against every primitive (issue 25): one entry per primitive,
# standalone here, on a cluster in cluster_tests.cmake's neighbour below.
lk_add_test_file(SOURCE names/names_standalone.c LABEL names TIMEOUT 90)
lk_add_test_file(SOURCE cluster/cluster_names.c LABEL cluster TIMEOUT 120)
