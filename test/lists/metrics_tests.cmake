# Metrics (label metrics; docs/metrics.md): the Prometheus exposition after
# known work, short buffers, labels for several clients, each reason a lease
# is lost.
lk_add_test_file(SOURCE metrics/metrics_text.c LABEL metrics)
