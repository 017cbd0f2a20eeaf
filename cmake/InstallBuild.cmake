# Install step (cmake/Install.cmake): builds what the install copies, the
# libraries and the tool, in the build tree LATCHKEY_BUILD_DIR; a no-op when
# they are up to date. Without it an install after a partial build (only
# tools/run-demo.sh, which builds the demo and the static library) fails on
# the first file that was never built.
if(NOT LATCHKEY_BUILD_DIR)
  message(FATAL_ERROR "InstallBuild.cmake: LATCHKEY_BUILD_DIR is not set")
endif()
message(STATUS "Building what the install needs (target latchkey_installable)")
set(_lk_config_args)
if(CMAKE_INSTALL_CONFIG_NAME)
  set(_lk_config_args --config "${CMAKE_INSTALL_CONFIG_NAME}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${LATCHKEY_BUILD_DIR}"
  --target latchkey_installable ${_lk_config_args}
  RESULT_VARIABLE _lk_build_rc)
if(NOT _lk_build_rc EQUAL 0)
  message(FATAL_ERROR "latchkey: building the libraries and the tool for the install failed")
endif()
