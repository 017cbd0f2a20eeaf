# The inspection library (label inspect) and the latchkey tool (label cli):
# docs/inspect.md, docs/cli.md.
lk_add_test_file(SOURCE inspect/inspect_basic.c LABEL inspect)
