/* The definitions behind src/unref_shim.h; compiled WITHOUT that header, so
 * the calls below reach libuv (Node's). */
#include <uv.h>

#define LK_NODE_UNREF_INIT(kind, params, args)                                \
  int lk_node_uv_##kind##_init params;                                        \
  int lk_node_uv_##kind##_init params {                                       \
    int rc = uv_##kind##_init args;                                           \
    if (rc == 0)                                                              \
      uv_unref((uv_handle_t *)handle);                                        \
    return rc;                                                                \
  }

LK_NODE_UNREF_INIT(timer, (uv_loop_t *loop, uv_timer_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(idle, (uv_loop_t *loop, uv_idle_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(prepare, (uv_loop_t *loop, uv_prepare_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(check, (uv_loop_t *loop, uv_check_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(async, (uv_loop_t *loop, uv_async_t *handle, uv_async_cb cb), (loop, handle, cb))
LK_NODE_UNREF_INIT(tcp, (uv_loop_t *loop, uv_tcp_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(pipe, (uv_loop_t *loop, uv_pipe_t *handle, int ipc), (loop, handle, ipc))
LK_NODE_UNREF_INIT(udp, (uv_loop_t *loop, uv_udp_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(poll, (uv_loop_t *loop, uv_poll_t *handle, int fd), (loop, handle, fd))
LK_NODE_UNREF_INIT(signal, (uv_loop_t *loop, uv_signal_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(fs_event, (uv_loop_t *loop, uv_fs_event_t *handle), (loop, handle))
LK_NODE_UNREF_INIT(fs_poll, (uv_loop_t *loop, uv_fs_poll_t *handle), (loop, handle))
