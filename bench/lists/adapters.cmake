# Host-loop adapters (bench/adapters_host.c, docs/embedding.md): latchkey
# through libevent, libev and GLib against its own libuv loop in the same
# run (T1), the host's 10 ms timer idle and under contention, and a host busy
# 8 of every 10 ms (lease kept, wake-up latency, loss reported). One program
# per host, as in the tests (libev and libevent never share an executable).
if(LATCHKEY_HAVE_ADAPTER_DEPS)
  foreach(_host libevent libev glib)
    string(TOUPPER ${_host} _HOST)
    if(_host STREQUAL "libevent")
      set(_libs PkgConfig::LIBEVENT)
    elseif(_host STREQUAL "libev")
      set(_libs ${LATCHKEY_LIBEV_LIB})
    else()
      set(_libs PkgConfig::GLIB)
    endif()
    lk_add_bench(adapters_${_host} SOURCES adapters_host.c LIBS ${_libs})
    target_compile_definitions(adapters_${_host} PRIVATE HOST_USE_${_HOST})
    lk_bench_suite(adapters_${_host} SECONDS 20 REPS 1 ARGS --seconds 2)
  endforeach()
  # libevent again with a host that set up priority levels (the adapter's
  # events then take the highest: docs/embedding.md).
  lk_bench_suite(adapters_libevent SECONDS 20 REPS 1 ARGS --seconds 2 --priorities)
endif()
