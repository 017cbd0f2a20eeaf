# Install step (cmake/Install.cmake), last: the dynamic linker finds a new
# shared library in a system directory only once its cache is rebuilt.
# Installed as root into a directory ldconfig searches (/usr/local/lib on
# Debian), it runs ldconfig, as a package's trigger would; otherwise it says
# what a program linked with the shared library needs. Nothing with DESTDIR
# (a staging tree, not the running system). LATCHKEY_LIBDIR: the library
# directory, relative to the prefix or absolute.
if(NOT "$ENV{DESTDIR}" STREQUAL "")
  return()
endif()
set(_lk_libdir "${LATCHKEY_LIBDIR}")
if(NOT IS_ABSOLUTE "${_lk_libdir}")
  set(_lk_libdir "${CMAKE_INSTALL_PREFIX}/${_lk_libdir}")
endif()
get_filename_component(_lk_libdir "${_lk_libdir}" REALPATH)

# The directories ldconfig searches: `ldconfig -v -N` prints each as "DIR:"
# (followed by " (from ...)" on newer glibc) at the start of a line.
find_program(_lk_ldconfig ldconfig PATHS /sbin /usr/sbin)
set(_lk_searched FALSE)
if(_lk_ldconfig)
  execute_process(COMMAND "${_lk_ldconfig}" -v -N OUTPUT_VARIABLE _lk_out ERROR_QUIET)
  string(REPLACE "\n" ";" _lk_lines "${_lk_out}")
  foreach(_lk_line IN LISTS _lk_lines)
    if(_lk_line MATCHES "^([^\t ][^:]*):")
      get_filename_component(_lk_dir "${CMAKE_MATCH_1}" REALPATH)
      if(_lk_dir STREQUAL _lk_libdir)
        set(_lk_searched TRUE)
      endif()
    endif()
  endforeach()
endif()

execute_process(COMMAND id -u OUTPUT_VARIABLE _lk_uid OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(_lk_searched AND _lk_uid STREQUAL "0")
  message(STATUS "Running ldconfig: ${_lk_libdir} is in the dynamic linker's path")
  execute_process(COMMAND "${_lk_ldconfig}" RESULT_VARIABLE _lk_rc)
  if(NOT _lk_rc EQUAL 0)
    message(WARNING "ldconfig failed; run it as root before starting programs "
      "linked with the shared liblatchkey")
  endif()
elseif(_lk_searched)
  message(STATUS "Run ldconfig as root so that programs find liblatchkey in ${_lk_libdir}")
else()
  message(STATUS "${_lk_libdir} is not in the dynamic linker's path: a program linked "
    "with the shared liblatchkey needs LD_LIBRARY_PATH=${_lk_libdir} or an rpath "
    "(or link the static library: pkg-config latchkey-static)")
endif()
