# Scripts loaded when first needed (issue 27, docs/client.md): the commands a
# fresh client sends, NOSCRIPT with many calls in flight, a new connection's
# loads. Label scripts.
lk_add_test_file(SOURCE core/script_loading.c LABEL scripts)
