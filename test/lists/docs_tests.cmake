# Docs that run as written (label docs): one ctest entry per page, docs.<page>
# for docs/<page>.md and docs.readme for README.md, each running
# tools/check-docs.sh on it (what it checks: that script's header). New pages
# are picked up at the next configure.
#
# acl_check proves docs/client.md's ACL recipe: check-docs.sh runs it as the
# user the recipe made, against the page's private server.
add_executable(docs_acl_check docs/acl_check.c)
set_target_properties(docs_acl_check PROPERTIES OUTPUT_NAME acl_check
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/docs)
target_compile_definitions(docs_acl_check PRIVATE _GNU_SOURCE)
target_link_libraries(docs_acl_check PRIVATE latchkey_testing PkgConfig::HIREDIS)

# C blocks are compiled like a user's program against the library's public
# headers; under sanitizers the library needs their runtime at link time.
set(_lk_docs_flags "")
if(LATCHKEY_ASAN)
  list(APPEND _lk_docs_flags -fsanitize=address)
endif()
if(LATCHKEY_UBSAN)
  list(APPEND _lk_docs_flags -fsanitize=undefined)
endif()
if(LATCHKEY_TSAN)
  list(APPEND _lk_docs_flags -fsanitize=thread)
endif()
list(JOIN _lk_docs_flags " " _lk_docs_flags)

# The shared library when built (a user's link line: -llatchkey -luv), else
# the static one.
if(TARGET latchkey_shared)
  set(_lk_docs_lib $<TARGET_FILE:latchkey_shared>)
else()
  set(_lk_docs_lib $<TARGET_FILE:latchkey_testing>)
endif()

file(GLOB _lk_doc_pages CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
list(SORT _lk_doc_pages)
list(APPEND _lk_doc_pages ${PROJECT_SOURCE_DIR}/README.md)
foreach(_page IN LISTS _lk_doc_pages)
  get_filename_component(_stem ${_page} NAME_WE)
  string(TOLOWER "${_stem}" _stem)
  add_test(NAME docs.${_stem}
    COMMAND bash ${PROJECT_SOURCE_DIR}/tools/check-docs.sh
      --build ${PROJECT_BINARY_DIR}
      --lib ${_lk_docs_lib}
      --bin $<TARGET_FILE_DIR:docs_acl_check>
      --ldflags "${_lk_docs_flags}"
      ${_page})
  set_tests_properties(docs.${_stem} PROPERTIES LABELS docs TIMEOUT 120
    SKIP_RETURN_CODE 77 ENVIRONMENT "CC=${CMAKE_C_COMPILER}")
endforeach()
