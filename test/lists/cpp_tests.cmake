# The C++17 layer (include/latchkey.hpp, docs/cpp.md), label cpp: built with
# -Wall -Wextra -Werror (and the sanitizers of the build). C++ is enabled for
# this test only; the library stays C.
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  lk_add_test_file(SOURCE cpp/cpp_lockables.cpp LABEL cpp)
  set_target_properties(cpp_cpp_lockables PROPERTIES
    CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
  target_compile_options(cpp_cpp_lockables PRIVATE -Wall -Wextra -Werror)
elseif(DEFINED ENV{CI})
  message(FATAL_ERROR "a C++ compiler is needed for the cpp tests (g++)")
endif()
