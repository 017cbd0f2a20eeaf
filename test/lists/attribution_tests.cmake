# Replies are attributable (issue 15, docs/design.md): an unsolicited or
# shifted reply is never taken as a command's answer. Label fault, plus core:
# the check lives in src/core.
lk_add_test_file(SOURCE fault/reply_attribution.c LABEL fault TIMEOUT 120)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/fault/reply_attribution.c _lk_ra_cases REGEX "^TEST\\(")
foreach(_line IN LISTS _lk_ra_cases)
  if(_line MATCHES "^TEST\\(([A-Za-z0-9_]+)\\)")
    set_property(TEST "fault.${CMAKE_MATCH_1}" APPEND PROPERTY LABELS core)
  endif()
endforeach()
