# Fencing tokens across restarts without persistence (issue 15): one entry
# per case, label fault plus the primitive its name starts with (lock_,
# fair_, rwlock_, redlock_ -> multilock).
lk_add_test_file(SOURCE fault/token_restart.c LABEL fault TIMEOUT 120)
file(STRINGS ${CMAKE_CURRENT_SOURCE_DIR}/fault/token_restart.c _lk_tr_cases REGEX "^TEST\\(")
foreach(_line IN LISTS _lk_tr_cases)
  if(_line MATCHES "^TEST\\((([a-z]+)_[A-Za-z0-9_]*)\\)")
    set(_label ${CMAKE_MATCH_2})
    if(_label STREQUAL "redlock")
      set(_label multilock)
    endif()
    set_property(TEST "fault.${CMAKE_MATCH_1}" APPEND PROPERTY LABELS ${_label})
  endif()
endforeach()
