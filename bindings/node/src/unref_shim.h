/* Force-included into every library source the addon compiles (never into
 * the library's own CMake build). Each handle init the library makes goes
 * through lk_node_* (src/unref_shim.c): the real init, then uv_unref, so no
 * handle of latchkey's keeps Node's loop alive by itself; src/addon.cc keeps
 * one referenced handle of its own while something is held or waited on.
 * Covered: every uv_*_init of a handle in libuv 1.x's uv.h (timer, idle,
 * prepare, check, async, tcp and tcp_init_ex, pipe, tty, udp and
 * udp_init_ex, poll and poll_init_socket, signal, fs_event, fs_poll), so a
 * new use in the library is covered without touching this file; test/
 * unref_shim.test.js checks the list against the uv.h the addon is built
 * with. Not covered: uv_spawn's process handle (the addon compiles no code
 * that spawns) and requests (uv_getaddrinfo, uv_fs_*, uv_write...), which
 * keep the loop alive only while they are in flight. */
#ifndef LATCHKEY_NODE_UNREF_SHIM_H
#define LATCHKEY_NODE_UNREF_SHIM_H

#define uv_timer_init lk_node_uv_timer_init
#define uv_idle_init lk_node_uv_idle_init
#define uv_prepare_init lk_node_uv_prepare_init
#define uv_check_init lk_node_uv_check_init
#define uv_async_init lk_node_uv_async_init
#define uv_tcp_init lk_node_uv_tcp_init
#define uv_tcp_init_ex lk_node_uv_tcp_init_ex
#define uv_pipe_init lk_node_uv_pipe_init
#define uv_tty_init lk_node_uv_tty_init
#define uv_udp_init lk_node_uv_udp_init
#define uv_udp_init_ex lk_node_uv_udp_init_ex
#define uv_poll_init lk_node_uv_poll_init
#define uv_poll_init_socket lk_node_uv_poll_init_socket
#define uv_signal_init lk_node_uv_signal_init
#define uv_fs_event_init lk_node_uv_fs_event_init
#define uv_fs_poll_init lk_node_uv_fs_poll_init
/* uv.h, included after this, declares the renamed functions with the real
 * signatures; src/unref_shim.c defines them. */

#endif
