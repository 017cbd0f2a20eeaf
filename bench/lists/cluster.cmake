# The cluster benchmarks (bench/cluster.sh, run by tools/bench.sh --cluster):
# B1, B2 and B3 on a private 3-master cluster and on one standalone master,
# interleaved, and the watchdog at 100 000 holds on both. They reuse the
# suite's programs (a client pointed at a cluster node finds the cluster);
# this target builds every one of them.
add_custom_target(cluster_bench)
add_dependencies(cluster_bench raw lock_seq contend watchdog_scale)
