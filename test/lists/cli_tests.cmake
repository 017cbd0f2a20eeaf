# The inspection library (label inspect) and the latchkey tool (label cli):
# docs/inspect.md, docs/cli.md.
lk_add_test_file(SOURCE inspect/inspect_basic.c LABEL inspect)
lk_add_test_file(SOURCE cli/cli_tool.c LABEL cli TIMEOUT 180)
if(TARGET cli_cli_tool)
  # The cases run the built tool; forkpty (watch under a terminal) is libutil's.
  target_compile_definitions(cli_cli_tool PRIVATE LK_CLI_PATH="$<TARGET_FILE:latchkey_cli>")
  target_link_libraries(cli_cli_tool PRIVATE util)
  add_dependencies(cli_cli_tool latchkey_cli)
endif()
# Listing on a cluster (every master): labels cli and cluster.
lk_add_test_file(SOURCE cli/cli_cluster.c LABEL cli TIMEOUT 120)
if(TARGET cli_cli_cluster)
  target_compile_definitions(cli_cli_cluster PRIVATE LK_CLI_PATH="$<TARGET_FILE:latchkey_cli>")
  add_dependencies(cli_cli_cluster latchkey_cli)
  set_property(TEST cli.list_visits_every_master APPEND PROPERTY LABELS cluster)
endif()
# `latchkey run`'s command: its process group, latchkey's death, statuses.
lk_add_test_file(SOURCE cli/cli_run_group.c LABEL cli TIMEOUT 120)
if(TARGET cli_cli_run_group)
  target_compile_definitions(cli_cli_run_group PRIVATE LK_CLI_PATH="$<TARGET_FILE:latchkey_cli>")
  target_link_libraries(cli_cli_run_group PRIVATE util) # forkpty
  add_dependencies(cli_cli_run_group latchkey_cli)
endif()
# What people see of others' names and notes is escaped.
lk_add_test_file(SOURCE cli/cli_escape.c LABEL cli TIMEOUT 120)
if(TARGET cli_cli_escape)
  target_compile_definitions(cli_cli_escape PRIVATE LK_CLI_PATH="$<TARGET_FILE:latchkey_cli>")
  add_dependencies(cli_cli_escape latchkey_cli)
endif()
# `latchkey run --permits N`: one of N permits, at most N runs at once.
lk_add_test_file(SOURCE cli/cli_run_permits.c LABEL cli TIMEOUT 120)
if(TARGET cli_cli_run_permits)
  target_compile_definitions(cli_cli_run_permits PRIVATE LK_CLI_PATH="$<TARGET_FILE:latchkey_cli>")
  add_dependencies(cli_cli_run_permits latchkey_cli)
endif()
