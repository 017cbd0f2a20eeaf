# Install rules: the libraries, the public headers, a CMake package
# (find_package(latchkey) -> latchkey::latchkey) and a pkg-config file.
# Included by the top-level CMakeLists.txt after latchkey_shared and/or
# latchkey_static exist; either may be missing, depending on the options.
#
#   cmake --install build --prefix /tmp/x
#
# Components: "Runtime" (the shared library) and "Development" (headers,
# static library, namelink, CMake package, pkg-config file).

include(CMakePackageConfigHelpers)

if(NOT DEFINED _lk_top)
  set(_lk_top ON)
endif()
option(LATCHKEY_INSTALL "Generate the install rules" ${_lk_top})
if(NOT LATCHKEY_INSTALL)
  return()
endif()

set(LATCHKEY_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/latchkey"
  CACHE STRING "Where latchkeyConfig.cmake is installed (relative to the prefix)")
set(LATCHKEY_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
  CACHE STRING "Where latchkey.pc is installed (relative to the prefix)")

set(_lk_inst_targets)
foreach(_t IN ITEMS latchkey_shared latchkey_static)
  if(TARGET ${_t})
    list(APPEND _lk_inst_targets ${_t})
  endif()
endforeach()
if(NOT _lk_inst_targets)
  message(WARNING "latchkey: neither latchkey_shared nor latchkey_static exists; nothing to install")
  return()
endif()

# `cmake --install` copies what a build made. tools/run-demo.sh builds only
# the demo (and the static library it links), so the first install step
# builds everything the steps below copy: a no-op when it is up to date, and
# an install right after the demo just works.
add_custom_target(latchkey_installable)
add_dependencies(latchkey_installable ${_lk_inst_targets})
if(TARGET latchkey_cli)
  add_dependencies(latchkey_installable latchkey_cli)
endif()
install(CODE "set(LATCHKEY_BUILD_DIR \"${PROJECT_BINARY_DIR}\")")
install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/InstallBuild.cmake)

install(TARGETS ${_lk_inst_targets}
  EXPORT latchkeyTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
    NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)

# The latchkey tool (docs/cli.md), when built.
if(TARGET latchkey_cli)
  install(TARGETS latchkey_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/include/latchkey.h ${PROJECT_SOURCE_DIR}/include/latchkey.hpp
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/latchkey
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT Development
  FILES_MATCHING PATTERN "*.h")

install(EXPORT latchkeyTargets
  NAMESPACE latchkey::
  FILE latchkeyTargets.cmake
  DESTINATION ${LATCHKEY_INSTALL_CMAKEDIR}
  COMPONENT Development)

# The config file needs hiredis only when the static library is installed
# (the shared library links it privately).
if(TARGET latchkey_static)
  set(LATCHKEY_CONFIG_NEEDS_HIREDIS ON)
else()
  set(LATCHKEY_CONFIG_NEEDS_HIREDIS OFF)
endif()

set(_lk_cfg_dir ${PROJECT_BINARY_DIR}/latchkey-package)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/latchkeyConfig.cmake.in
  ${_lk_cfg_dir}/latchkeyConfig.cmake
  INSTALL_DESTINATION ${LATCHKEY_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${_lk_cfg_dir}/latchkeyConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${_lk_cfg_dir}/latchkeyConfig.cmake
  ${_lk_cfg_dir}/latchkeyConfigVersion.cmake
  DESTINATION ${LATCHKEY_INSTALL_CMAKEDIR}
  COMPONENT Development)

# pkg-config: the prefix is computed from the .pc file's own place
# (${pcfiledir}), so `cmake --install --prefix X` yields a correct file
# whatever CMAKE_INSTALL_PREFIX was at configure time.
if(IS_ABSOLUTE "${LATCHKEY_INSTALL_PKGCONFIGDIR}")
  set(LATCHKEY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _lk_up "/_lk_root/${LATCHKEY_INSTALL_PKGCONFIGDIR}" "/_lk_root")
  string(REGEX REPLACE "/$" "" _lk_up "${_lk_up}")
  set(LATCHKEY_PC_PREFIX "\${pcfiledir}/${_lk_up}")
endif()
foreach(_d IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_d}}")
    set(LATCHKEY_PC_${_d} "${CMAKE_INSTALL_${_d}}")
  else()
    set(LATCHKEY_PC_${_d} "\${prefix}/${CMAKE_INSTALL_${_d}}")
  endif()
endforeach()
set(LATCHKEY_PC_LIBS_PRIVATE "${CMAKE_THREAD_LIBS_INIT}")
configure_file(${PROJECT_SOURCE_DIR}/latchkey.pc.in ${_lk_cfg_dir}/latchkey.pc @ONLY)
install(FILES ${_lk_cfg_dir}/latchkey.pc
  DESTINATION ${LATCHKEY_INSTALL_PKGCONFIGDIR}
  COMPONENT Development)
# latchkey-static.pc names the archive itself: with both libraries installed
# -llatchkey is the shared one whatever --static says (pkg-config's --static
# adds private dependencies, it does not pick archives), so a static link
# asks for latchkey-static, as libuv's libuv-static.pc does.
if(TARGET latchkey_static)
  set(LATCHKEY_PC_STATIC_ARCHIVE
    "${CMAKE_STATIC_LIBRARY_PREFIX}latchkey${CMAKE_STATIC_LIBRARY_SUFFIX}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/latchkey-static.pc.in
    ${_lk_cfg_dir}/latchkey-static.pc @ONLY)
  install(FILES ${_lk_cfg_dir}/latchkey-static.pc
    DESTINATION ${LATCHKEY_INSTALL_PKGCONFIGDIR}
    COMPONENT Development)
endif()

# The dynamic linker finds a new shared library in a system directory only
# once its cache is rebuilt. Installing as root into a directory it searches
# (/usr/local/lib on Debian) runs ldconfig, as packages do; otherwise the
# install says what to do. Not with DESTDIR (a staging tree).
if(TARGET latchkey_shared AND CMAKE_HOST_SYSTEM_NAME STREQUAL "Linux")
  install(CODE "set(LATCHKEY_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")" COMPONENT Runtime)
  install(SCRIPT ${PROJECT_SOURCE_DIR}/cmake/InstallLdconfig.cmake COMPONENT Runtime)
endif()

unset(_lk_ill)
unset(_lk_new)
unset(_lk_up)
