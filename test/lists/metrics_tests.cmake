# Metrics and owner descriptions (label metrics; docs/metrics.md,
# docs/owners.md): the Prometheus exposition after known work, short
# buffers, labels for several clients, each reason a lease is lost; the
# owner description's key, its renewal, its deletion on close, reading it.
lk_add_test_file(SOURCE metrics/metrics_text.c LABEL metrics)
lk_add_test_file(SOURCE metrics/owner_registry.c LABEL metrics)
# examples/metrics_http served and fetched with a raw socket: only where the
# examples are built.
if(LATCHKEY_BUILD_EXAMPLES)
  lk_add_test_file(SOURCE metrics/metrics_example.c LABEL metrics)
  if(TARGET metrics_metrics_example)
    target_compile_definitions(metrics_metrics_example PRIVATE
      LK_METRICS_HTTP="$<TARGET_FILE:metrics_http>")
    add_dependencies(metrics_metrics_example metrics_http)
  endif()
endif()
