# Connection URLs (docs/client.md, "Connection URL"): the parser's table of
# forms and malformed URLs, and clients made from URLs against real servers.
lk_add_test_file(SOURCE core/url_parse.c LABEL url)
lk_add_test_file(SOURCE core/url_connect.c LABEL url)
# They are core tests too: ctest -L core runs them with the rest of the core.
get_property(_lk_url_tests DIRECTORY PROPERTY TESTS)
list(FILTER _lk_url_tests INCLUDE REGEX "^url\\.")
if(_lk_url_tests)
  set_property(TEST ${_lk_url_tests} APPEND PROPERTY LABELS core)
endif()
