# Host-loop adapters (include/latchkey/adapters/, docs/embedding.md): latchkey
# driven from libevent, libev and GLib, one program per host (libev exports
# libevent-compatible symbols, so the two never share an executable). Built
# when the three are found (the top level sets LATCHKEY_HAVE_ADAPTER_DEPS).
if(LATCHKEY_HAVE_ADAPTER_DEPS)
  lk_add_test_file(SOURCE adapters/adapters_libevent.c LABEL adapters LIBS PkgConfig::LIBEVENT)
  lk_add_test_file(SOURCE adapters/adapters_libev.c LABEL adapters LIBS ${LATCHKEY_LIBEV_LIB})
  lk_add_test_file(SOURCE adapters/adapters_glib.c LABEL adapters LIBS PkgConfig::GLIB)
endif()
