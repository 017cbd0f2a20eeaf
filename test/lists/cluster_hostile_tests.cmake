# Hostile and garbled cluster replies (issue 25): redirections, slot maps.
lk_add_test_file(SOURCE cluster/hostile_replies.c LABEL cluster TIMEOUT 120)
lk_add_test_file(SOURCE cluster/cluster_promotion.c LABEL cluster TIMEOUT 120)
