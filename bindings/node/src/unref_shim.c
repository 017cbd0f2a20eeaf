/* The definitions behind src/unref_shim.h; compiled WITHOUT that header, so
 * the calls below reach libuv (Node's). kind is the init's name after uv_. */
#include <uv.h>

#define LK_NODE_UNREF_INIT(kind, params, args)                                \
  int lk_node_uv_##kind params;                                               \
  int lk_node_uv_##kind params {                                              \
    int rc = uv_##kind args;                                                  \
    if (rc == 0)                                                              \
      uv_unref((uv_handle_t *)handle);                                        \
    return rc;                                                                \
  }

LK_NODE_UNREF_INIT(timer_init, (uv_loop_t *loop, uv_timer_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(idle_init, (uv_loop_t *loop, uv_idle_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(prepare_init, (uv_loop_t *loop, uv_prepare_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(check_init, (uv_loop_t *loop, uv_check_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(async_init, (uv_loop_t *loop, uv_async_t *handle, uv_async_cb cb), (loop, handle, cb))
LK_NODE_UNREF_INIT(tcp_init, (uv_loop_t *loop, uv_tcp_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(tcp_init_ex, (uv_loop_t *loop, uv_tcp_t *handle, unsigned int flags),
                   (loop, handle, flags))
LK_NODE_UNREF_INIT(pipe_init, (uv_loop_t *loop, uv_pipe_t *handle, int ipc), (loop, handle, ipc))
LK_NODE_UNREF_INIT(tty_init, (uv_loop_t *loop, uv_tty_t *handle, uv_file fd, int readable),
                   (loop, handle, fd, readable))
LK_NODE_UNREF_INIT(udp_init, (uv_loop_t *loop, uv_udp_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(udp_init_ex, (uv_loop_t *loop, uv_udp_t *handle, unsigned int flags),
                   (loop, handle, flags))
LK_NODE_UNREF_INIT(poll_init, (uv_loop_t *loop, uv_poll_t *handle, int fd), (loop, handle, fd))
LK_NODE_UNREF_INIT(poll_init_socket, (uv_loop_t *loop, uv_poll_t *handle, uv_os_sock_t socket),
                   (loop, handle, socket))
LK_NODE_UNREF_INIT(signal_init, (uv_loop_t *loop, uv_signal_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(fs_event_init, (uv_loop_t *loop, uv_fs_event_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(fs_poll_init, (uv_loop_t *loop, uv_fs_poll_t *handle), (loop, handle))
