# src/core's layers (docs/design.md, "The core's layers"): no call or
# include by name from a lower layer to a higher one beyond the allow list
# (tools/check-layers.sh).
add_test(NAME layers.check
  COMMAND bash ${PROJECT_SOURCE_DIR}/tools/check-layers.sh)
set_tests_properties(layers.check PROPERTIES LABELS "docs;layers" TIMEOUT 60)
